"""The rounded Gaussian ``round(s G)``, sampled exactly from secure random words (Numba).

``G`` is a standard normal, ``s`` a public positive integer and the rounding
to the nearest integer; ``P(round(s G) = j) = Phi((j + 1/2) / s) - Phi((j -
1/2) / s)``. Added to an integer vector ``S``, ``S + round(s G) = round(S + s
G)``: a post-processing of the continuous Gaussian mechanism, accounted as
that mechanism is.

The normal is drawn by the exact algorithm of Karney, "Sampling exactly from
the normal distribution" (ACM Transactions on Mathematical Software 42(1),
2016), written here anew with integer arithmetic only, its first two steps
(and the sign) drawn at once:

* (N1, N2, N4) ``k >= 0`` and a sign, ``k`` with probability ``exp(-k^2 /
  2) / Z``, ``Z = sum_j exp(-j^2 / 2)`` (the law of Karney's N1 and N2
  together, a rejection there restarting only them), by inversion: a
  uniform ``u`` is compared with the cumulative probabilities of the pairs
  (k, sign), whose first 1,024 bits are computed once, with a rigorous
  error bound, by :func:`_cumulative_table`;
* (N3) ``x`` uniform in [0, 1) is kept with probability ``exp(-x (2k + x) /
  2)``, the product of ``k + 1`` Bernoulli(``exp(-p)``) trials with ``p = x
  (2k + x) / (2k + 2)``, else the draw restarts.

``k + x`` then has the density of ``|G|``. Each Bernoulli(``exp(-p)``) is von
Neumann's decreasing chain: uniforms ``z_1 > z_2 > ...`` each below ``p``,
the trial succeeding when the chain's length is even (``P(length >= n) = p^n
/ n!``). A link ``z_n < p`` is drawn as ``z_n < z_{n-1}`` (``z_0 = x``) and an
independent uniform below ``(2k + x) / (2k + 2)``: an integer ``f`` uniform
in [0, 2k + 2) with ``f < 2k``, or ``f = 2k`` and a fresh uniform below ``x``.

Every uniform in [0, 1) is a *u-rand*: its base-``2**32`` digits are made
(one per 32-bit half of a word of the source, the high half first) only
when a comparison needs them, so every comparison is exact and ends after
finitely many digits with probability one. When ``x`` is accepted, its
digits not yet made are uniform given everything drawn so far: the output
``floor(s (k + x) + 1/2)`` is fixed by making more of them until the
integer is the same at both ends of the interval ``x`` is known to lie in.
A u-rand holds at most :data:`DIGIT_CAPACITY` digits (1,024 bits), and
``k`` is at most :data:`LARGEST_INTEGER_PART`: a draw that needs more, with
probability below ``2**-990``, raises
:class:`~._discrete_gaussian.SamplerCapacityError` rather than truncate
(which would bias the law). No floating-point value takes part in a draw.

``s <= MAX_ROUNDED_SCALE = 2**30`` keeps every product of ``s`` and a digit
below ``2**62``: the arithmetic is exact in int64. Words come from a word
source as for :func:`~._discrete_gaussian.sample_discrete_gaussian` (by
default the operating system's CSPRNG), through the same restart of a draw
whose words ran out (:func:`~._discrete_gaussian.draw_from_word_stream`; the
kernel's cursor counts half-words, so a draw may start in a word's low half).
"""

import decimal
import fractions
import functools

import numpy as np
from numba import njit

from ._discrete_gaussian import CAPACITY_EXCEEDED, WORDS_EXHAUSTED, draw_from_word_stream

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
# The largest k of the table: P(k > 37) is below 10**-313 < 2**-1024, so the
# table's last cumulative probability has 1,024-bit floor 2**1024 - 1 and a
# larger k shows as a tie there (a capacity failure). Then |round(s G)| <
# 38 s < 2**36, far inside int64 with any grid sum.
LARGEST_INTEGER_PART = 37
# Words requested per missing draw: a draw uses about 3.4 on average (a short
# buffer only costs another request, an oversized one the words' making;
# none of 200 blocks of 4,096 draws was short).
_WORDS_PER_SAMPLE = 3.5

_DIGIT_BITS = np.int64(32)
_DIGIT_BASE = np.int64(2 ** 32)
_DIGIT_MASK = np.int64(2 ** 32 - 1)
_HALF_DIGIT = np.int64(2 ** 31)
# The outcomes of the first step: (k, sign) pairs, k = outcome >> 1 and the
# sign negative when outcome & 1.
_OUTCOMES = 2 * (LARGEST_INTEGER_PART + 1)
# The u-rand slots of a draw: x, the chain's two alternating links, the fresh
# uniform of a link's last test and the first step's uniform.
_X, _LINK_A, _LINK_B, _FRESH, _INVERSION = 0, 1, 2, 3, 4
_SLOTS = 5
# The kernel's state is one int64 array: the next half-word and the stop
# flag (as the discrete Gaussian's ``cursor``), the capacity in use, each
# slot's count of digits made, the rounding's total (integer part, then
# fraction digits), each slot's digits, then the first step's table (the
# digits of each outcome's cumulative probability). With the words, the
# helpers then pass two arrays, whose reference counts Numba removes; with
# more, or with a loop left by ``break`` or ``return``, it counted them at
# every call (ten times slower).
_POSITION, _FLAG, _CAPACITY, _COUNTS = 0, 1, 2, 3
_TOTAL = _COUNTS + _SLOTS
_DIGITS = _TOTAL + DIGIT_CAPACITY + 1
_TABLE = _DIGITS + _SLOTS * DIGIT_CAPACITY
_STATE_SIZE = _TABLE + _OUTCOMES * DIGIT_CAPACITY
# Deliberate faults, for the tests that show a broken sampler fails them
# (bits of the kernel's ``faults``; always 0 outside those tests): k drawn
# with Karney's N1 law exp(-k/2) (step N2 skipped), or the sign ignored.
_FAULT_SKIP_N2 = 1
_FAULT_SKIP_SIGN = 2


def _cumulative_table(skip_n2=False):
    """The first ``DIGIT_CAPACITY`` base-2**32 digits of each outcome's cumulative probability.

    Outcome ``o`` is ``k = o >> 1`` with a negative sign when ``o & 1``, of
    probability ``w_k / (2 Z)``, ``w_k = exp(-k^2 / 2)`` (``exp(-k / 2)`` for
    the test fault), ``Z`` the sum of ``w_k`` over every ``k >= 0``. Row
    ``o`` holds ``floor(C_o 2**1024)``, ``C_o`` the probability of the
    outcomes up to ``o``: then a uniform whose first 1,024 bits are ``P``
    is below ``C_o`` when ``P < floor(C_o 2**1024)``, above when ``P >``,
    and undecided (a capacity failure) when equal.

    Computed with 380 significant decimal digits (each operation rounded
    correctly): every ``C_o`` is known within ``10**-340``, the terms of
    ``Z`` beyond ``k = 60`` (below ``exp(-1800)``) included, and each floor
    is checked to be the same at both ends of that interval.

    Returns
    -------
    ndarray of int64, shape (_OUTCOMES * DIGIT_CAPACITY,)
    """
    bits = 32 * DIGIT_CAPACITY
    error = fractions.Fraction(1, 10 ** 340)
    with decimal.localcontext() as context:
        context.prec = 380
        weights = [(decimal.Decimal(-(k if skip_n2 else k * k)) / 2).exp() for k in range(61)]
        total = 2 * sum(weights)
        running = decimal.Decimal(0)
        rows = []
        for outcome in range(_OUTCOMES):
            running += weights[outcome >> 1]
            value = fractions.Fraction(running / total)
            low = (value - error) * 2 ** bits // 1
            if (value + error) * 2 ** bits // 1 != low or not 0 <= low < 2 ** bits:
                raise RuntimeError("the rounded Gaussian's table is not exact at 1,024 bits.")
            rows.append([(low >> (32 * (DIGIT_CAPACITY - 1 - i))) & (2 ** 32 - 1)
                         for i in range(DIGIT_CAPACITY)])
    return np.array(rows, dtype=np.int64).ravel()


@functools.lru_cache(maxsize=2)
def _initial_state(skip_n2=False):
    """The kernel's state before the first draw: zeros and the first step's table."""
    state = np.zeros(_STATE_SIZE, dtype=np.int64)
    state[_TABLE:] = _cumulative_table(skip_n2)
    return state


def _kernel_parameters(scale, capacity, faults):
    """The scalars and table that :func:`_fill_rounded_gaussian` takes after ``words``."""
    return (_initial_state(bool(faults & _FAULT_SKIP_N2)), np.int64(scale),
            np.int64(capacity), np.int64(faults))


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
                                 *_kernel_parameters(scale.scale, capacity, 0))


# ---------------------------------------------------------------------------
# Compiled kernel. ``state[_FLAG]`` is set when the words run out or a limit
# is passed, and every loop checks it so that the kernel stops; the loops end
# on their conditions (see above). Digit i of u-rand u is
# ``state[_DIGITS + DIGIT_CAPACITY u + i]``, made while ``i < state[_COUNTS + u]``.
# ``state[_POSITION]`` counts half-words: half-word h is the high half of
# word h >> 1 when h is even, its low half when odd.
# ---------------------------------------------------------------------------

@njit(cache=True, nogil=True, inline="always")
def _next_half_word(words, state):
    """The next 32 bits of the stream (0, with the flag set, when the words ran out)."""
    value = np.int64(0)
    position = state[_POSITION]
    if (position >> 1) >= words.shape[0]:
        state[_FLAG] = WORDS_EXHAUSTED
    else:
        shift = np.uint64(32 - 32 * (position & 1))
        value = np.int64((words[position >> 1] >> shift) & np.uint64(0xFFFFFFFF))
        state[_POSITION] = position + 1
    return value


@njit(cache=True, nogil=True, inline="always")
def _digit(words, state, u, i):
    """Digit ``i`` of u-rand ``u``, made from the next half-word when first needed."""
    value = np.int64(0)
    if i < state[_COUNTS + u]:
        value = state[_DIGITS + DIGIT_CAPACITY * u + i]
    elif i >= state[_CAPACITY]:
        state[_FLAG] = CAPACITY_EXCEEDED
    elif (state[_POSITION] >> 1) >= words.shape[0]:
        state[_FLAG] = WORDS_EXHAUSTED
    else:
        # As _next_half_word, written out: a nested inlined call here made
        # Numba count the arrays' references.
        position = state[_POSITION]
        shift = np.uint64(32 - 32 * (position & 1))
        value = np.int64((words[position >> 1] >> shift) & np.uint64(0xFFFFFFFF))
        state[_POSITION] = position + 1
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
def _below_cumulative(words, state, outcome):
    """Whether the first step's u-rand is below the cumulative probability of ``outcome``.

    Its digits are compared with the table's ``floor(C 2**1024)``: the first
    that differ decide; equal digits up to the capacity fail closed (the
    digit past it sets the flag).
    """
    row = _TABLE + DIGIT_CAPACITY * outcome
    i = 0
    undecided = True
    result = False
    while undecided and state[_FLAG] == 0:
        digit = _digit(words, state, _INVERSION, i)
        if state[_FLAG] == 0 and digit != state[row + i]:
            result = digit < state[row + i]
            undecided = False
        i += 1
    return result


@njit(cache=True, nogil=True, inline="always")
def _first_step(words, state):
    """The outcome (k, sign) of the first step, by inversion of its cumulative probabilities."""
    state[_COUNTS + _INVERSION] = 0
    outcome = 0
    while state[_FLAG] == 0 and not _below_cumulative(words, state, outcome):
        outcome += 1
        if outcome == _OUTCOMES:
            # Not reachable with the exact table (its last row is all ones):
            # failing closed all the same.
            state[_FLAG] = CAPACITY_EXCEEDED
    return outcome


@njit(cache=True, nogil=True, inline="always")
def _bernoulli_exp_link(words, state, k):
    """Bernoulli(exp(-x (2k + x) / (2k + 2))) for the u-rand x in slot ``_X``.

    A link is three tests in turn (``phase``): the new link below the last,
    then ``f`` uniform in [0, 2k + 2) (a half-word, rejected below ``2**32
    mod (2k + 2)``), then, when ``f = 2k``, a fresh u-rand below x. One loop
    with one comparison in it: two comparisons' loops inside one loop made
    Numba count the arrays' references.
    """
    previous, current = _X, _LINK_A
    length = 0
    growing = True
    n = 2 * k + 2
    rejected = _DIGIT_BASE % n
    phase = 0
    while growing and state[_FLAG] == 0:
        linked = False
        if phase == 1:
            value = _next_half_word(words, state)
            if value >= rejected and state[_FLAG] == 0:
                f = value % n
                if f > 2 * k:
                    growing = False
                elif f == 2 * k:
                    phase = 2
                    state[_COUNTS + _FRESH] = 0
                else:
                    linked = True
        else:
            below, above = (current, previous) if phase == 0 else (_FRESH, _X)
            if phase == 0:
                state[_COUNTS + current] = 0
            growing = _less(words, state, below, above)
            if growing and phase == 0:
                phase = 1
            elif growing:
                linked = True
        if linked:
            length += 1
            phase = 0
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
    2**(32 m)`` (no carry out of its digits). Only the total's digits in use
    are set (each when first reached), not the whole capacity.
    """
    state[_TOTAL] = s * k
    state[_TOTAL + 1] = _HALF_DIGIT
    m = 0
    result = np.int64(0)
    undecided = True
    while undecided and state[_FLAG] == 0:
        digit = _digit(words, state, _X, m)
        if state[_FLAG] == 0:
            m += 1
            if m >= 2:
                state[_TOTAL + m] = 0
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
        outcome = _first_step(words, state)  # N1, N2 and N4
        k = np.int64(outcome >> 1)
        negative = outcome & 1 == 1 and not faults & _FAULT_SKIP_SIGN
        # N3: a fresh x, kept with probability exp(-p)**(k + 1); a rejection
        # restarts the draw.
        state[_COUNTS + _X] = 0
        kept = True
        i = np.int64(0)
        while kept and i <= k and state[_FLAG] == 0:
            kept = _bernoulli_exp_link(words, state, k)
            i += 1
        if kept and state[_FLAG] == 0:
            value = _rounded(words, state, k, s)
            if state[_FLAG] == 0:
                result = -value if negative else value
                drawing = False
    return result


@njit(cache=True, nogil=True)
def _fill_rounded_gaussian(out, start, words, initial_state, s, capacity, faults, cursor):
    """Fill ``out[start:]`` until the words run out; return how many entries are filled.

    The stream starts at half-word ``cursor[2]`` of ``words`` (0 or 1). On
    return ``cursor[0]`` and ``cursor[2]`` are the word and the half of the
    first half-word of the unfinished draw (or of the end of the half-words
    used when all are filled), ``cursor[1]`` why it stopped.
    """
    state = initial_state.copy()
    state[_POSITION] = 2 * cursor[0] + cursor[2]
    state[_CAPACITY] = capacity
    filled = start
    first = state[_POSITION]
    while filled < out.shape[0] and state[_FLAG] == 0:
        first = state[_POSITION]
        value = _rounded_gaussian(words, state, s, faults)
        if state[_FLAG] == 0:
            out[filled] = value
            filled += 1
    if state[_FLAG] == 0:
        first = state[_POSITION]
    cursor[0] = first >> 1
    cursor[2] = first & 1
    cursor[1] = state[_FLAG]
    return filled
