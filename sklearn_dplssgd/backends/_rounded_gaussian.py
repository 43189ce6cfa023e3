"""The rounded Gaussian ``round(s G)``, sampled exactly from secure random words (Numba).

``G`` is a standard normal, ``s`` a public positive integer and the rounding
to the nearest integer; ``P(round(s G) = j) = Phi((j + 1/2) / s) - Phi((j -
1/2) / s)``. Added to an integer vector ``S``, ``S + round(s G) = round(S + s
G)``: a post-processing of the continuous Gaussian mechanism, accounted as
that mechanism is.

The normal is drawn by the exact algorithm of Karney, "Sampling exactly from
the normal distribution" (ACM Transactions on Mathematical Software 42(1),
2016), written here anew with integer arithmetic only:

* (N1) ``k >= 0`` with probability ``exp(-k/2) (1 - exp(-1/2))``, counting
  successes of Bernoulli(``exp(-1/2)``) trials;
* (N2) ``k`` is kept with probability ``exp(-k (k - 1) / 2)`` (``k (k - 1)``
  such trials all successful), else the draw restarts;
* (N3) ``x`` uniform in [0, 1) is kept with probability ``exp(-x (2k + x) /
  2)``, the product of ``k + 1`` Bernoulli(``exp(-p)``) trials with ``p = x (2k
  + x) / (2k + 2)``, else the draw restarts;
* (N4) a random sign.

``k + x`` then has the density of ``|G|``. Each Bernoulli(``exp(-p)``) is von
Neumann's decreasing chain: uniforms ``z_1 > z_2 > ...`` each below ``p``,
the trial succeeding when the chain's length is even (``P(length >= n) = p^n
/ n!``). A link ``z_n < p`` is drawn as ``z_n < z_{n-1}`` (``z_0 = x``) and an
independent uniform below ``(2k + x) / (2k + 2)``: an integer ``f`` uniform
in [0, 2k + 2) with ``f < 2k``, or ``f = 2k`` and a fresh uniform below ``x``.
Bernoulli(``exp(-1/2)``) is the same chain with the first link ``z_1 < 1/2``.

Every uniform in [0, 1) is a *u-rand*: its base-``2**32`` digits are made
(one per word of the source) only when a comparison needs them, so every
comparison is exact and ends after finitely many digits with probability
one. When ``x`` is accepted, its digits not yet made are uniform given
everything drawn so far: the output ``floor(s (k + x) + 1/2)`` is fixed by
making more of them until the integer is the same at both ends of the
interval ``x`` is known to lie in. A u-rand holds at most
:data:`DIGIT_CAPACITY` digits (1,024 bits), and N1's ``k`` is at most
:data:`LARGEST_INTEGER_PART`: a draw that needs more, with probability
below ``2**-900``, raises :class:`~._discrete_gaussian.SamplerCapacityError`
rather than truncate (which would bias the law). No floating-point value
takes part in a draw.

``s <= MAX_ROUNDED_SCALE = 2**30`` keeps every product of ``s`` and a digit
below ``2**62``: the arithmetic is exact in int64. Words come from a word
source as for :func:`~._discrete_gaussian.sample_discrete_gaussian` (by
default the operating system's CSPRNG), through the same restart of a draw
whose words ran out (:func:`~._discrete_gaussian.draw_from_word_stream`).
"""

import numpy as np
from numba import njit

from ._discrete_gaussian import (
    CAPACITY_EXCEEDED, WORDS_EXHAUSTED, draw_from_word_stream, uniform_below,
)

__all__ = [
    "DIGIT_CAPACITY",
    "LARGEST_INTEGER_PART",
    "MAX_ROUNDED_SCALE",
    "RoundedGaussianScale",
    "sample_rounded_gaussian",
]

# The largest s: s times a 32-bit digit stays below 2**62.
MAX_ROUNDED_SCALE = 2 ** 30
# Digits a u-rand may hold (32 bits each): a draw needing more fails closed.
DIGIT_CAPACITY = 32
# N1's k beyond this fails closed as well (probability exp(-1024)): then
# |round(s G)| < s (k + 1) < 2**42, far inside int64 with any grid sum.
LARGEST_INTEGER_PART = 2048
# Words requested per missing draw: a draw uses 17.5 on average (a short
# buffer only costs another request, an oversized one the words' making).
_WORDS_PER_SAMPLE = 20

_DIGIT_BITS = np.int64(32)
_DIGIT_BASE = np.int64(2 ** 32)
_DIGIT_MASK = np.int64(2 ** 32 - 1)
_HALF_DIGIT = np.int64(2 ** 31)
# The u-rand slots of a draw: x, the chain's two alternating links, and the
# fresh uniform of a link's last test.
_X, _LINK_A, _LINK_B, _FRESH = 0, 1, 2, 3
# The kernel's state is one int64 array: the next word and the stop flag (as
# the discrete Gaussian's ``cursor``), the capacity in use, each slot's count
# of digits made, the rounding's total (integer part, then fraction digits),
# then each slot's digits. With the words, the helpers then pass two arrays,
# whose reference counts Numba removes; with more, or with a loop left by
# ``break`` or ``return``, it counted them at every call (ten times slower).
_POSITION, _FLAG, _CAPACITY, _COUNTS = 0, 1, 2, 3
_TOTAL = _COUNTS + 4
_DIGITS = _TOTAL + DIGIT_CAPACITY + 1
_STATE_SIZE = _DIGITS + 4 * DIGIT_CAPACITY
# Deliberate faults, for the tests that show a broken sampler fails them
# (bits of the kernel's ``faults``; always 0 outside those tests).
_FAULT_SKIP_N2 = 1
_FAULT_SKIP_SIGN = 2


class RoundedGaussianScale:
    """The public integer scale ``s`` of the rounded Gaussian ``round(s G)`` (grid units).

    Parameters
    ----------
    scale : int
        ``s``, in ``[1, MAX_ROUNDED_SCALE]``.
    """

    def __init__(self, scale):
        if isinstance(scale, bool) or not isinstance(scale, (int, np.integer)) or not (
                1 <= scale <= MAX_ROUNDED_SCALE):
            raise ValueError(
                f"RoundedGaussianScale: scale must be an integer in [1, 2**30]; the exact "
                f"sampler's arithmetic holds up to {MAX_ROUNDED_SCALE}.")
        self.scale = int(scale)

    def sample(self, count, source=None):
        """``count`` exact draws of ``round(s G)`` (:func:`sample_rounded_gaussian`)."""
        return sample_rounded_gaussian(count, self, source)

    @property
    def std(self):
        """``s`` as a float: the standard deviation of the Gaussian before rounding."""
        return float(self.scale)

    def __repr__(self):
        return f"RoundedGaussianScale({self.scale})"

    def __eq__(self, other):
        return isinstance(other, RoundedGaussianScale) and self.scale == other.scale

    def __hash__(self):
        return hash(("rounded", self.scale))


def sample_rounded_gaussian(size, scale, source=None, *, capacity=DIGIT_CAPACITY):
    """``size`` independent draws of ``round(s G)``, ``G`` standard normal, exactly.

    Parameters
    ----------
    size : int
        How many draws.
    scale : RoundedGaussianScale
        The public ``s``.
    source : object with ``words(count)``, optional
        Where the random words come from; ``SecureWords`` when None.
    capacity : int, default=DIGIT_CAPACITY
        The digits a u-rand may hold (a smaller one only makes the failure
        below likelier; the tests force it).

    Returns
    -------
    ndarray of int64, shape (size,)

    Raises
    ------
    SamplerCapacityError
        If a draw needs more than ``capacity`` digits of one uniform.
    """
    if not isinstance(scale, RoundedGaussianScale):
        raise TypeError("sample_rounded_gaussian: scale must be a RoundedGaussianScale.")
    size = int(size)
    if size < 0:
        raise ValueError("sample_rounded_gaussian: size must be non-negative.")
    if not 1 <= int(capacity) <= DIGIT_CAPACITY:
        raise ValueError(f"sample_rounded_gaussian: capacity must be in [1, {DIGIT_CAPACITY}].")
    return draw_from_word_stream(size, source, _WORDS_PER_SAMPLE, _fill_rounded_gaussian,
                                 np.int64(scale.scale), np.int64(capacity), np.int64(0))


# ---------------------------------------------------------------------------
# Compiled kernel. ``state[_FLAG]`` is set when the words run out or a limit
# is passed, and every loop checks it so that the kernel stops; the loops end
# on their conditions (see above). Digit i of u-rand u is
# ``state[_DIGITS + DIGIT_CAPACITY u + i]``, made while ``i < state[_COUNTS + u]``.
# ---------------------------------------------------------------------------

@njit(cache=True, nogil=True, inline="always")
def _digit(words, state, u, i):
    """Digit ``i`` of u-rand ``u``, made from the next word when first needed."""
    value = np.int64(0)
    if i < state[_COUNTS + u]:
        value = state[_DIGITS + DIGIT_CAPACITY * u + i]
    elif i >= state[_CAPACITY]:
        state[_FLAG] = CAPACITY_EXCEEDED
    elif state[_POSITION] >= words.shape[0]:
        state[_FLAG] = WORDS_EXHAUSTED
    else:
        value = np.int64(words[state[_POSITION]] >> np.uint64(32))
        state[_POSITION] += 1
        state[_DIGITS + DIGIT_CAPACITY * u + i] = value
        state[_COUNTS + u] = i + 1
    return value


@njit(cache=True, nogil=True, inline="always")
def _less(words, state, a, b):
    """Whether u-rand ``a`` is below u-rand ``b`` (digits made until they differ)."""
    i = 0
    undecided = True
    result = False
    while undecided and state[_FLAG] == 0:
        first = _digit(words, state, a, i)
        second = _digit(words, state, b, i)
        if first != second and state[_FLAG] == 0:
            result = first < second
            undecided = False
        i += 1
    return result


@njit(cache=True, nogil=True, inline="always")
def _bernoulli_exp_half(words, state):
    """Bernoulli(exp(-1/2)): the decreasing chain whose first link is ``z_1 < 1/2``."""
    state[_COUNTS + _LINK_A] = 0
    length = 0
    if _digit(words, state, _LINK_A, 0) < _HALF_DIGIT:
        length = 1
        previous, current = _LINK_A, _LINK_B
        growing = True
        while growing and state[_FLAG] == 0:
            state[_COUNTS + current] = 0
            growing = _less(words, state, current, previous)
            if growing:
                length += 1
                previous, current = current, previous
    return length % 2 == 0


@njit(cache=True, nogil=True, inline="always")
def _bernoulli_exp_link(words, state, k):
    """Bernoulli(exp(-x (2k + x) / (2k + 2))) for the u-rand x in slot ``_X``."""
    previous, current = _X, _LINK_A
    length = 0
    growing = True
    while growing and state[_FLAG] == 0:
        state[_COUNTS + current] = 0
        growing = _less(words, state, current, previous)
        if growing:
            # An independent uniform below (2k + x) / (2k + 2).
            f = uniform_below(words, state, 2 * k + 2)
            if f > 2 * k:
                growing = False
            elif f == 2 * k:
                state[_COUNTS + _FRESH] = 0
                growing = _less(words, state, _FRESH, _X)
        if growing:
            length += 1
            if previous == _X:
                previous, current = _LINK_A, _LINK_B
            else:
                previous, current = current, previous
    return length % 2 == 0


@njit(cache=True, nogil=True, inline="always")
def _add_at(state, position, value):
    """Add ``value < 2**32`` at base-2**32 position ``position`` of the total, carrying up.

    ``state[_TOTAL]`` is the integer part (it takes any carry);
    ``state[_TOTAL + i]`` for ``i >= 1`` is the fraction's digit of weight
    ``2**(-32 i)``.
    """
    state[_TOTAL + position] += value
    while position > 0 and state[_TOTAL + position] >= _DIGIT_BASE:
        state[_TOTAL + position] -= _DIGIT_BASE
        position -= 1
        state[_TOTAL + position] += 1


@njit(cache=True, nogil=True, inline="always")
def _rounded(words, state, k, s):
    """``floor(s (k + x) + 1/2)`` for the u-rand x, making its digits until it is fixed.

    After ``m`` digits, ``x`` lies in ``[A, A + 2**(-32 m))`` and the total
    holds ``s (k + A) + 1/2`` exactly; the floor is the same over the whole
    interval when the total's fraction ``E 2**(-32 m)`` has ``E + s - 1 <
    2**(32 m)`` (no carry out of its digits).
    """
    for position in range(DIGIT_CAPACITY + 1):
        state[_TOTAL + position] = 0
    state[_TOTAL] = s * k
    state[_TOTAL + 1] = _HALF_DIGIT
    m = 0
    result = np.int64(0)
    undecided = True
    while undecided and state[_FLAG] == 0:
        digit = _digit(words, state, _X, m)
        if state[_FLAG] == 0:
            m += 1
            product = s * digit
            _add_at(state, m, product & _DIGIT_MASK)
            _add_at(state, m - 1, product >> _DIGIT_BITS)
            carry = (state[_TOTAL + m] + s - 1) >> _DIGIT_BITS
            position = m - 1
            while carry != 0 and position >= 1:
                carry = (state[_TOTAL + position] + carry) >> _DIGIT_BITS
                position -= 1
            if carry == 0:
                result = state[_TOTAL]
                undecided = False
    return result


@njit(cache=True, nogil=True, inline="always")
def _rounded_gaussian(words, state, s, faults):
    """One draw of ``round(s G)`` (Karney's algorithm N, then the exact rounding)."""
    result = np.int64(0)
    drawing = True
    while drawing and state[_FLAG] == 0:
        k = np.int64(0)  # N1
        while state[_FLAG] == 0 and _bernoulli_exp_half(words, state):
            k += 1
            if k > LARGEST_INTEGER_PART:
                state[_FLAG] = CAPACITY_EXCEEDED
        trials = 0 if faults & _FAULT_SKIP_N2 else k * (k - 1)  # N2
        kept = True
        i = np.int64(0)
        while kept and i < trials and state[_FLAG] == 0:
            kept = _bernoulli_exp_half(words, state)
            i += 1
        # N3: a fresh x, kept with probability exp(-p)**(k + 1); a rejection
        # in N2 or N3 restarts the draw.
        state[_COUNTS + _X] = 0
        i = np.int64(0)
        while kept and i <= k and state[_FLAG] == 0:
            kept = _bernoulli_exp_link(words, state, k)
            i += 1
        if kept and state[_FLAG] == 0:
            negative = uniform_below(words, state, np.int64(2)) == 1  # N4
            value = _rounded(words, state, k, s)
            if state[_FLAG] == 0:
                result = -value if negative and not faults & _FAULT_SKIP_SIGN else value
                drawing = False
    return result


@njit(cache=True, nogil=True)
def _fill_rounded_gaussian(out, start, words, s, capacity, faults, cursor):
    """Fill ``out[start:]`` until the words run out; return how many entries are filled.

    On return ``cursor[0]`` is the first word of the unfinished draw (or the
    end of the words used when all are filled), ``cursor[1]`` why it stopped.
    """
    state = np.zeros(_STATE_SIZE, dtype=np.int64)
    state[_POSITION] = cursor[0]
    state[_CAPACITY] = capacity
    filled = start
    first_word = state[_POSITION]
    while filled < out.shape[0] and state[_FLAG] == 0:
        first_word = state[_POSITION]
        value = _rounded_gaussian(words, state, s, faults)
        if state[_FLAG] == 0:
            out[filled] = value
            filled += 1
    cursor[0] = first_word if state[_FLAG] != 0 else state[_POSITION]
    cursor[1] = state[_FLAG]
    return filled
