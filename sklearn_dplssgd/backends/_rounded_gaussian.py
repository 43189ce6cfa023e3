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
# Words requested per missing draw (a draw uses about 20 to 30).
_WORDS_PER_SAMPLE = 40

_DIGIT_BITS = np.int64(32)
_DIGIT_BASE = np.int64(2 ** 32)
_DIGIT_MASK = np.int64(2 ** 32 - 1)
_HALF_DIGIT = np.int64(2 ** 31)
# The u-rand slots of a draw: x, the chain's two alternating links, and the
# fresh uniform of a link's last test.
_X, _LINK_A, _LINK_B, _FRESH = 0, 1, 2, 3
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
# Compiled kernel. ``cursor[1]`` is set when the words run out or a u-rand's
# capacity is passed, and every loop checks it so that the kernel stops.
# ``digits[u, i]`` is digit i of u-rand u (made while ``i < counts[u]``).
# ---------------------------------------------------------------------------

@njit(cache=True, nogil=True, inline="always")
def _digit(words, cursor, digits, counts, u, i):
    """Digit ``i`` of u-rand ``u``, made from the next word when first needed."""
    if i < counts[u]:
        return digits[u, i]
    if i >= digits.shape[1]:
        cursor[1] = CAPACITY_EXCEEDED
        return np.int64(0)
    if cursor[0] >= words.shape[0]:
        cursor[1] = WORDS_EXHAUSTED
        return np.int64(0)
    value = np.int64(words[cursor[0]] >> np.uint64(32))
    cursor[0] += 1
    digits[u, i] = value
    counts[u] = i + 1
    return value


@njit(cache=True, nogil=True, inline="always")
def _less(words, cursor, digits, counts, a, b):
    """Whether u-rand ``a`` is below u-rand ``b`` (digits made until they differ)."""
    i = 0
    while cursor[1] == 0:
        first = _digit(words, cursor, digits, counts, a, i)
        second = _digit(words, cursor, digits, counts, b, i)
        if cursor[1] != 0:
            break
        if first != second:
            return first < second
        i += 1
    return False


@njit(cache=True, nogil=True, inline="always")
def _bernoulli_exp_half(words, cursor, digits, counts):
    """Bernoulli(exp(-1/2)): the decreasing chain whose first link is ``z_1 < 1/2``."""
    counts[_LINK_A] = 0
    if _digit(words, cursor, digits, counts, _LINK_A, 0) >= _HALF_DIGIT:
        return True  # a chain of length 0
    previous, current = _LINK_A, _LINK_B
    length = 1
    while cursor[1] == 0:
        counts[current] = 0
        if not _less(words, cursor, digits, counts, current, previous):
            break
        length += 1
        previous, current = current, previous
    return length % 2 == 0


@njit(cache=True, nogil=True, inline="always")
def _bernoulli_exp_link(words, cursor, digits, counts, k):
    """Bernoulli(exp(-x (2k + x) / (2k + 2))) for the u-rand x in slot ``_X``."""
    previous, current = _X, _LINK_A
    length = 0
    while cursor[1] == 0:
        counts[current] = 0
        if not _less(words, cursor, digits, counts, current, previous):
            break
        # An independent uniform below (2k + x) / (2k + 2).
        f = uniform_below(words, cursor, 2 * k + 2)
        if f > 2 * k:
            break
        if f == 2 * k:
            counts[_FRESH] = 0
            if not _less(words, cursor, digits, counts, _FRESH, _X):
                break
        length += 1
        if previous == _X:
            previous, current = _LINK_A, _LINK_B
        else:
            previous, current = current, previous
    return length % 2 == 0


@njit(cache=True, nogil=True, inline="always")
def _add_at(total, position, value):
    """Add ``value < 2**32`` at base-2**32 position ``position`` of ``total``, carrying up.

    ``total[0]`` is the integer part (it takes any carry); ``total[i]`` for
    ``i >= 1`` is the fraction's digit of weight ``2**(-32 i)``.
    """
    total[position] += value
    while position > 0 and total[position] >= _DIGIT_BASE:
        total[position] -= _DIGIT_BASE
        position -= 1
        total[position] += 1


@njit(cache=True, nogil=True, inline="always")
def _rounded(words, cursor, digits, counts, total, k, s):
    """``floor(s (k + x) + 1/2)`` for the u-rand x, making its digits until it is fixed.

    After ``m`` digits, ``x`` lies in ``[A, A + 2**(-32 m))`` and ``total``
    holds ``s (k + A) + 1/2`` exactly; the floor is the same over the whole
    interval when the fraction ``E 2**(-32 m)`` of ``total`` has ``E + s - 1 <
    2**(32 m)`` (no carry out of its digits).
    """
    total[:] = 0
    total[0] = s * k
    total[1] = _HALF_DIGIT
    m = 0
    while cursor[1] == 0:
        digit = _digit(words, cursor, digits, counts, _X, m)
        if cursor[1] != 0:
            break
        m += 1
        product = s * digit
        _add_at(total, m, product & _DIGIT_MASK)
        _add_at(total, m - 1, product >> _DIGIT_BITS)
        carry = (total[m] + s - 1) >> _DIGIT_BITS
        position = m - 1
        while carry != 0 and position >= 1:
            carry = (total[position] + carry) >> _DIGIT_BITS
            position -= 1
        if carry == 0:
            return total[0]
    return np.int64(0)


@njit(cache=True, nogil=True, inline="always")
def _rounded_gaussian(words, cursor, digits, counts, total, s, faults):
    """One draw of ``round(s G)`` (Karney's algorithm N, then the exact rounding)."""
    while cursor[1] == 0:
        k = np.int64(0)  # N1
        while cursor[1] == 0 and _bernoulli_exp_half(words, cursor, digits, counts):
            k += 1
            if k > LARGEST_INTEGER_PART:
                cursor[1] = CAPACITY_EXCEEDED
        trials = 0 if faults & _FAULT_SKIP_N2 else k * (k - 1)  # N2
        kept = True
        i = np.int64(0)
        while i < trials and cursor[1] == 0:
            if not _bernoulli_exp_half(words, cursor, digits, counts):
                kept = False
                break
            i += 1
        if not kept or cursor[1] != 0:
            continue
        counts[_X] = 0  # N3: a fresh x, kept with probability exp(-p)**(k + 1)
        i = np.int64(0)
        while i <= k and cursor[1] == 0:
            if not _bernoulli_exp_link(words, cursor, digits, counts, k):
                kept = False
                break
            i += 1
        if not kept or cursor[1] != 0:
            continue
        negative = uniform_below(words, cursor, np.int64(2)) == 1  # N4
        value = _rounded(words, cursor, digits, counts, total, k, s)
        if cursor[1] != 0:
            break
        return -value if negative and not faults & _FAULT_SKIP_SIGN else value
    return np.int64(0)


@njit(cache=True, nogil=True)
def _fill_rounded_gaussian(out, start, words, s, capacity, faults, cursor):
    """Fill ``out[start:]`` until the words run out; return how many entries are filled.

    On return ``cursor[0]`` is the first word of the unfinished draw (or the
    end of the words used when all are filled).
    """
    digits = np.zeros((4, capacity), dtype=np.int64)
    counts = np.zeros(4, dtype=np.int64)
    total = np.zeros(capacity + 1, dtype=np.int64)
    for i in range(start, out.shape[0]):
        first_word = cursor[0]
        value = _rounded_gaussian(words, cursor, digits, counts, total, s, faults)
        if cursor[1] != 0:
            cursor[0] = first_word
            return i
        out[i] = value
    return out.shape[0]
