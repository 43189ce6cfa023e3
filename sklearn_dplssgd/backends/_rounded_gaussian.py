"""The rounded Gaussian ``round(s G)``, sampled exactly from secure random words (Numba).

``G`` is a standard normal, ``s`` a public positive integer and the rounding
to the nearest integer; ``P(round(s G) = j) = Phi((j + 1/2) / s) - Phi((j -
1/2) / s)``. Added to an integer vector ``S``, ``S + round(s G) = round(S + s
G)``: a post-processing of the continuous Gaussian mechanism, accounted as
that mechanism is.

``|G|`` is drawn exactly with integer arithmetic only, by the idea of
Karney, "Sampling exactly from the normal distribution" (ACM Transactions
on Mathematical Software 42(1), 2016), written here anew on a finer
partition: the half-line is cut into cells ``[j h, (j + 1) h)``, ``h =
2**-CELL_BITS``, and

* a cell ``j`` is drawn with probability ``w_j / W``, ``w_j = exp(-(j h)^2
  / 2)`` the density's largest value on the cell and ``W`` the sum of all
  of them, by inversion: a uniform ``u`` is compared with the cumulative
  probabilities ``C_j``, whose first 1,024 bits are computed once, with a
  rigorous error bound, by :func:`_cumulative_table` (a guide table on
  ``u``'s first 10 bits starts the search next to the answer);
* ``y`` uniform in [0, 1) is kept with probability ``exp(-p)``, ``p = h^2 y
  (2j + y) / 2`` (the density at ``(j + y) h`` over its value at ``j h``),
  else the draw restarts; ``p <= (2j + 1) h^2 / 2 < 1`` always (a rejection
  about once in 300 draws);
* the sign is an independent bit.

``(j + y) h`` then has the density of ``|G|`` exactly. ``Bernoulli(exp(-p))``
is von Neumann's decreasing chain as in Karney's algorithm: uniforms ``z_1 >
z_2 > ...`` each below ``p``, the trial succeeding when the chain's length
is even (``P(length >= n) = p^n / n!``). A link ``z_n < p`` is drawn as
``z_n < z_{n-1}`` (``z_0 = y``) and an independent uniform below ``c = (2j +
y) / 2**(2 CELL_BITS + 1)``: an integer ``f`` uniform in ``[0, 2**(2
CELL_BITS + 1))`` with ``f < 2j``, or ``f = 2j`` and a fresh uniform below
``y``. The test on ``f`` comes first: it ends the chain (accepting) but
about once in 300 draws, so a draw uses three 32-bit half-words (the cell's
uniform, ``y`` and the sign, ``f``), and a fourth when ``s`` exceeds
``2**32`` (below).

Every uniform in [0, 1) is a *u-rand*: its base-``2**32`` digits are made
(one per 32-bit half of a word of the source, the high half first) only
when a comparison needs them, so every comparison is exact and ends after
finitely many digits with probability one. The fraction ``x = (i + y) h``
of ``|G| = k + x`` (``j = k 2**CELL_BITS + i``) is held as a u-rand whose first
digit is ``i`` in its top ``CELL_BITS`` bits and the top bits of a
half-word below them (that half-word's lowest bit is the sign); the
chain's uniforms carry the same prefix, so comparing them compares the
``y``s. When the draw is kept, the digits of ``x`` not yet made are
uniform given everything drawn so far: the output ``floor(s (k + x) + 1/2)`` is
fixed by making more of them until the integer is the same at both ends
of the interval ``x`` is known to lie in. A u-rand holds at most
:data:`DIGIT_CAPACITY` digits (1,024 bits), and ``|G|`` is below
:data:`LARGEST_INTEGER_PART` ``+ 1``: a draw that needs more, with
probability below ``2**-960``, raises
:class:`~._discrete_gaussian.SamplerCapacityError` rather than truncate
(which would bias the law). No floating-point value takes part in a draw.

``s <= MAX_ROUNDED_SCALE = 2**52``: the products of ``s`` and a digit (up
to ``2**84``) are made of two exact limbs, ``(s mod 2**32) d`` in uint64 and
``(s >> 32) d`` below ``2**52``, and the output (below ``38 s < 2**58``)
fits int64 with room for any grid sum. Words come from a word source as for
:func:`~._discrete_gaussian.sample_discrete_gaussian` (by default the
operating system's CSPRNG), through the same restart of a draw whose words
ran out (:func:`~._discrete_gaussian.draw_from_word_stream`; the kernel's
cursor counts half-words, so a draw may start in a word's low half).
"""

import decimal
import functools

import numpy as np
from numba import njit

from ._discrete_gaussian import CAPACITY_EXCEEDED, WORDS_EXHAUSTED, draw_from_word_stream

__all__ = [
    "CELL_BITS",
    "DIGIT_CAPACITY",
    "LARGEST_INTEGER_PART",
    "MAX_ROUNDED_SCALE",
    "RoundedGaussianScale",
    "sample_rounded_gaussian",
]

# The largest s: s (k + x) is made from two limbs of s (s >> 32 < 2**20
# times a digit stays below 2**52), the output |round(s G)| < 38 s < 2**58
# leaves the grid sum room in int64, and every such s is a float64 exactly.
MAX_ROUNDED_SCALE = 2 ** 52
# Digits a u-rand may hold (32 bits each): a draw needing more fails closed.
DIGIT_CAPACITY = 32
# |G| < LARGEST_INTEGER_PART + 1 in the table: P(|G| >= 38) is below
# 10**-313 < 2**-1024, so the table's last cumulative probability has
# 1,024-bit floor 2**1024 - 1 and a larger |G| shows as a tie there (a
# capacity failure).
LARGEST_INTEGER_PART = 37
# The cells are 2**-CELL_BITS wide: (LARGEST_INTEGER_PART + 1) 2**CELL_BITS
# of them. Finer cells reject less (about j h^2 a draw) but make the table
# longer (computed once, about 0.2 s at 7 bits); p < 1 needs j < 4**CELL_BITS.
CELL_BITS = 7
# Words requested per missing draw: a draw uses about 1.5 (2 past s = 2**32)
# on average (a short buffer only costs another request, an oversized one
# the words' making).
_WORDS_PER_SAMPLE = 2.25

_CELLS = (LARGEST_INTEGER_PART + 1) << CELL_BITS
_CELL_MASK = np.int64((1 << CELL_BITS) - 1)
_PREFIX_SHIFT = np.int64(32 - CELL_BITS)
# f of a link: the top 2 CELL_BITS + 1 bits of a half-word.
_LINK_SHIFT = np.int64(32 - (2 * CELL_BITS + 1))
# The guide table: entry g is the first cell whose cumulative probability's
# first digit is at least g 2**(32 - _GUIDE_BITS).
_GUIDE_BITS = 10
_GUIDE_SHIFT = np.int64(32 - _GUIDE_BITS)

_DIGIT_BITS = np.int64(32)
_DIGIT_BASE = np.int64(2 ** 32)
_DIGIT_MASK = np.int64(2 ** 32 - 1)
_HALF_DIGIT = np.int64(2 ** 31)
_UINT_MASK = np.uint64(2 ** 32 - 1)
# The u-rand slots of a draw: x, the chain's two alternating links, the fresh
# uniform of a link's last test and the cell's uniform.
_X, _LINK_A, _LINK_B, _FRESH, _INVERSION = 0, 1, 2, 3, 4
_SLOTS = 5
# The kernel's state is one small int64 array: the next half-word and the
# stop flag (as the discrete Gaussian's ``cursor``), the capacity in use,
# the prefix of the draw's u-rands (its i in their top bits), each slot's
# count of digits made, the rounding's total (integer part, then fraction
# digits), then each slot's digits.
_POSITION, _FLAG, _CAPACITY, _PREFIX, _COUNTS = 0, 1, 2, 3, 4
_TOTAL = _COUNTS + _SLOTS
_DIGITS = _TOTAL + DIGIT_CAPACITY + 1
_STATE_SIZE = _DIGITS + _SLOTS * DIGIT_CAPACITY
# The table (read only, shared by all draws): each cell's 1,024-bit
# cumulative probability as DIGIT_CAPACITY digits, then every first digit
# again (contiguous, for the search), then the guide.
_FIRST = _CELLS * DIGIT_CAPACITY
_GUIDE = _FIRST + _CELLS
_TABLE_SIZE = _GUIDE + (1 << _GUIDE_BITS)
# Deliberate faults, for the tests that show a broken sampler fails them
# (bits of the kernel's ``faults``; always 0 outside those tests): the cells
# drawn with the wrong law exp(-j h / 2), the sign ignored, or every draw
# kept (the acceptance test skipped).
_FAULT_WRONG_CELLS = 1
_FAULT_SKIP_SIGN = 2
_FAULT_SKIP_ACCEPTANCE = 4


def _cumulative_table(wrong_cells=False):
    """The first ``DIGIT_CAPACITY`` base-2**32 digits of each cell's cumulative probability.

    Cell ``j`` has probability ``w_j / W``, ``w_j = exp(-(j h)^2 / 2)``
    (``exp(-j h / 2)`` for the test fault), ``W`` the sum of ``w_j`` over
    every ``j >= 0``. Row ``j`` holds ``floor(C_j 2**1024)``, ``C_j`` the
    probability of the cells up to ``j``: then a uniform whose first 1,024
    bits are ``P`` is below ``C_j`` when ``P < floor(C_j 2**1024)``, above
    when ``P >``, and undecided (a capacity failure) when equal.

    Computed with 380 significant decimal digits, each operation rounded
    correctly: ``w_{j+1} = w_j q^(2j + 1)``, ``q = exp(-h^2 / 2)``, so each
    ``w_j`` is within a relative ``10**-370`` after its ``2j`` products (``j
    < 60 2**CELL_BITS``), and every ``C_j`` within ``10**-340``, the terms
    of ``W`` beyond ``j h = 60`` (below ``exp(-1800)``) included; each floor
    is checked to be the same at both ends of that interval.

    Returns
    -------
    ndarray of int64, shape (_CELLS * DIGIT_CAPACITY,)
    """
    bits = 32 * DIGIT_CAPACITY
    with decimal.localcontext() as context:
        context.prec = 380
        one = decimal.Decimal(1)
        width = one / 2 ** CELL_BITS
        scale = decimal.Decimal(2) ** bits
        error = decimal.Decimal(10) ** -340 * scale
        weights = []
        if wrong_cells:
            ratio = (-width / 2).exp()
            weights = [ratio ** j for j in range(60 << CELL_BITS)]
        else:
            q = (-width * width / 2).exp()
            weight, factor = one, q
            for _ in range(60 << CELL_BITS):
                weights.append(weight)
                weight, factor = weight * factor, factor * q * q
        total = sum(weights)
        running = decimal.Decimal(0)
        rows = np.empty((_CELLS, DIGIT_CAPACITY), dtype=np.int64)
        for j in range(_CELLS):
            running += weights[j]
            value = running / total * scale
            low = int((value - error).to_integral_value(decimal.ROUND_FLOOR))
            if (int((value + error).to_integral_value(decimal.ROUND_FLOOR)) != low
                    or not 0 <= low < 2 ** bits):
                raise RuntimeError("the rounded Gaussian's table is not exact at 1,024 bits.")
            rows[j] = np.frombuffer(low.to_bytes(bits // 8, "big"), dtype=">u4")
    return rows.ravel()


@functools.lru_cache(maxsize=2)
def _table(wrong_cells=False):
    """The kernel's read-only table: the rows, their first digits and the guide."""
    rows = _cumulative_table(wrong_cells)
    first = rows[::DIGIT_CAPACITY]
    bucket_starts = np.arange(1 << _GUIDE_BITS, dtype=np.int64) << int(_GUIDE_SHIFT)
    guide = np.searchsorted(first, bucket_starts, side="left")
    table = np.concatenate((rows, first, guide)).astype(np.int64)
    table.setflags(write=False)
    return table


def _kernel_parameters(scale, capacity, faults):
    """The table and scalars that :func:`_fill_rounded_gaussian` takes after ``words``."""
    return (_table(bool(faults & _FAULT_WRONG_CELLS)), np.int64(scale), np.int64(capacity),
            np.int64(faults))


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
                f"RoundedGaussianScale: scale must be an integer in [1, 2**52]; the exact "
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


def _new_state(capacity=DIGIT_CAPACITY):
    """A kernel state before a draw (for the tests of the kernel's parts)."""
    state = np.zeros(_STATE_SIZE, dtype=np.int64)
    state[_CAPACITY] = capacity
    return state


# ---------------------------------------------------------------------------
# Compiled kernel. ``state[_FLAG]`` is set when the words run out or a limit
# is passed, and every loop checks it so that the kernel stops; the loops end
# on their conditions (see above). Digit i of u-rand u is
# ``state[_DIGITS + DIGIT_CAPACITY u + i]``, made while ``i < state[_COUNTS + u]``.
# ``state[_POSITION]`` counts half-words: half-word h is the high half of
# word h >> 1 when h is even, its low half when odd. The helpers are inlined
# and leave their loops on their conditions (a ``break`` or ``return`` in a
# loop made Numba count the arrays' references at every call: ten times
# slower).
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
        value = np.int64((words[position >> 1] >> shift) & _UINT_MASK)
        state[_POSITION] = position + 1
    return value


@njit(cache=True, nogil=True, inline="always")
def _digit(words, state, u, i):
    """Digit ``i`` of u-rand ``u``, made from the next half-word when first needed.

    The first digit of every u-rand but the cell's carries the draw's prefix
    (``i`` of the cell) in its top ``CELL_BITS`` bits, the half-word's top
    bits below it.
    """
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
        value = np.int64((words[position >> 1] >> shift) & _UINT_MASK)
        state[_POSITION] = position + 1
        if i == 0 and u != _INVERSION:
            value = state[_PREFIX] | (value >> CELL_BITS)
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
def _below_cumulative(words, state, table, cell):
    """Whether the cell's u-rand is below the cumulative probability ``C_cell``.

    Its digits are compared with the table's ``floor(C 2**1024)``: the first
    that differ decide; equal digits up to the capacity fail closed (the
    digit past it sets the flag).
    """
    row = DIGIT_CAPACITY * cell
    i = 0
    undecided = True
    result = False
    while undecided and state[_FLAG] == 0:
        digit = _digit(words, state, _INVERSION, i)
        if state[_FLAG] == 0 and digit != table[row + i]:
            result = digit < table[row + i]
            undecided = False
        i += 1
    return result


@njit(cache=True, nogil=True, inline="always")
def _accepted(words, state, cell, faults):
    """Bernoulli(exp(-h^2 y (2j + y) / 2)) for the u-rand x = (i + y) h in slot ``_X``.

    A link is three tests in turn (``phase``): ``f`` uniform in ``[0, 2**(2
    CELL_BITS + 1))`` (the top bits of a half-word) below ``2j``, or equal
    to it and a fresh u-rand below x (phase 1); then the new link below the
    last (phase 2). One loop with one comparison in it: two comparisons'
    loops inside one loop made Numba count the arrays' references.
    """
    previous, current = _X, _LINK_A
    length = 0
    growing = True
    twice = 2 * cell
    phase = 0
    if faults & _FAULT_SKIP_ACCEPTANCE:
        growing = False
    while growing and state[_FLAG] == 0:
        linked = False
        if phase == 0:
            f = _next_half_word(words, state) >> _LINK_SHIFT
            if f > twice or state[_FLAG] != 0:
                growing = False
            elif f == twice:
                phase = 1
                state[_COUNTS + _FRESH] = 0
            else:
                phase = 2
                state[_COUNTS + current] = 0
        else:
            below, above = (_FRESH, _X) if phase == 1 else (current, previous)
            growing = _less(words, state, below, above)
            if growing and phase == 1:
                phase = 2
                state[_COUNTS + current] = 0
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
    """Add ``0 <= value < 2**62`` at base-2**32 position ``position`` of the total, carrying up.

    ``state[_TOTAL]`` is the integer part (it takes any carry);
    ``state[_TOTAL + i]`` for ``i >= 1`` is the fraction's digit of weight
    ``2**(-32 i)``, below ``2**32`` between calls.
    """
    state[_TOTAL + position] += value
    while position > 0 and state[_TOTAL + position] >= _DIGIT_BASE:
        carry = state[_TOTAL + position] >> _DIGIT_BITS
        state[_TOTAL + position] &= _DIGIT_MASK
        position -= 1
        state[_TOTAL + position] += carry


@njit(cache=True, nogil=True, inline="always")
def _rounded(words, state, k, s):
    """``floor(s (k + x) + 1/2)`` for the u-rand x, making its digits until it is fixed.

    After ``m`` digits, ``x`` lies in ``[A, A + 2**(-32 m))`` and the total
    holds ``s (k + A) + 1/2`` exactly; the floor is the same over the whole
    interval when the total's fraction ``E 2**(-32 m)`` has ``E + s - 1 <
    2**(32 m)`` (no carry out of its digits). ``s d`` for a digit ``d`` is
    added as ``(s mod 2**32) d`` (below ``2**64``, in uint64) at position
    ``m`` and ``(s >> 32) d`` (below ``2**52``) at ``m - 1``. Only the
    total's digits in use are set (each when first reached). The common
    case, ``s < 2**32`` and x's first digit ``d`` enough, is the same sum in
    one word: ``s d + 2**31 < 2**64``, its high half the integer part's
    addition and its low half ``E``.
    """
    result = np.int64(0)
    undecided = True
    if s < _DIGIT_BASE and state[_COUNTS + _X] >= 1:
        total = np.uint64(s) * np.uint64(state[_DIGITS + DIGIT_CAPACITY * _X]) + np.uint64(
            _HALF_DIGIT)
        if np.int64(total & _UINT_MASK) + s - 1 < _DIGIT_BASE:
            result = s * k + np.int64(total >> np.uint64(32))
            undecided = False
    state[_TOTAL] = s * k
    state[_TOTAL + 1] = _HALF_DIGIT
    low_scale = np.uint64(s & _DIGIT_MASK)
    high_scale = s >> _DIGIT_BITS
    m = 0
    while undecided and state[_FLAG] == 0:
        digit = _digit(words, state, _X, m)
        if state[_FLAG] == 0:
            m += 1
            if m >= 2:
                state[_TOTAL + m] = 0
            product = low_scale * np.uint64(digit)
            _add_at(state, m, np.int64(product & _UINT_MASK))
            _add_at(state, m - 1, np.int64(product >> np.uint64(32)) + high_scale * digit)
            carry = (state[_TOTAL + m] + s - 1) >> _DIGIT_BITS
            position = m - 1
            while carry != 0 and position >= 1:
                carry = (state[_TOTAL + position] + carry) >> _DIGIT_BITS
                position -= 1
            if carry == 0:
                result = state[_TOTAL]
                undecided = False
    return result


@njit(cache=True, nogil=True)
def _fill_rounded_gaussian(out, start, words, table, s, capacity, faults, cursor):
    """Fill ``out[start:]`` until the words run out; return how many entries are filled.

    A draw: a cell, its acceptance test (a rejection restarts the draw), the
    sign, the exact rounding. The stream starts at half-word ``cursor[2]`` of ``words`` (0 or 1). On
    return ``cursor[0]`` and ``cursor[2]`` are the word and the half of the
    first half-word of the unfinished draw (or of the end of the half-words
    used when all are filled), ``cursor[1]`` why it stopped.
    """
    state = np.zeros(_STATE_SIZE, dtype=np.int64)
    state[_POSITION] = 2 * cursor[0] + cursor[2]
    state[_CAPACITY] = capacity
    filled = start
    first = state[_POSITION]
    while filled < out.shape[0] and state[_FLAG] == 0:
        # One draw, written out here: a helper taking the table as a third
        # array made Numba count the arrays' references at every draw.
        first = state[_POSITION]
        # The cell, by inversion of the C_j: u is at least C_j for every
        # cell before the guide's (their first digits are below u's); from
        # there each cell's first digit decides, except a tie, which the
        # cell's whole row decides.
        state[_COUNTS + _INVERSION] = 0
        leading = _digit(words, state, _INVERSION, 0)
        cell = table[_GUIDE + (leading >> _GUIDE_SHIFT)]
        searching = state[_FLAG] == 0
        while searching:
            bound = table[_FIRST + cell]
            if leading < bound:
                searching = False
            elif leading == bound and _below_cumulative(words, state, table, cell):
                searching = False
            else:
                cell += 1
                if cell == _CELLS:
                    # Not reachable with the exact table (its last row is
                    # all ones): failing closed all the same.
                    state[_FLAG] = CAPACITY_EXCEEDED
            searching = searching and state[_FLAG] == 0
        # x = (i + y) h: its first digit holds i, then y's top bits; the
        # half-word's lowest bit, unused by x, is the sign.
        prefix = (cell & _CELL_MASK) << _PREFIX_SHIFT
        state[_PREFIX] = prefix
        half = _next_half_word(words, state)
        state[_DIGITS + DIGIT_CAPACITY * _X] = prefix | (half >> CELL_BITS)
        state[_COUNTS + _X] = 1
        negative = half & 1 == 1 and not faults & _FAULT_SKIP_SIGN
        kept = state[_FLAG] == 0 and _accepted(words, state, cell, faults)
        if kept and state[_FLAG] == 0:
            value = _rounded(words, state, cell >> CELL_BITS, s)
            if state[_FLAG] == 0:
                out[filled] = -value if negative else value
                filled += 1
    if state[_FLAG] == 0:
        first = state[_POSITION]
    cursor[0] = first >> 1
    cursor[2] = first & 1
    cursor[1] = state[_FLAG]
    return filled
