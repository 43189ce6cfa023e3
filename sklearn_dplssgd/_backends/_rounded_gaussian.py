"""The rounded Gaussian ``round(s G)``, sampled exactly from secure random words (Numba).

``G`` is a standard normal, ``s`` a public positive integer and the rounding
to the nearest integer; ``P(round(s G) = j) = Phi((j + 1/2) / s) - Phi((j -
1/2) / s)``. Added to an integer vector ``S``, ``S + round(s G) = round(S + s
G)``: a post-processing of the continuous Gaussian mechanism, accounted as
that mechanism is.

``|G|`` is drawn exactly with integer arithmetic only, by the idea of
Karney, "Sampling exactly from the normal distribution" (ACM Transactions
on Mathematical Software 42(1), 2016), written anew on cells ``[j h, (j + 1)
h)``, ``h = 2**-CELL_BITS``: a cell by inversion against the cumulative
probabilities of :func:`_cumulative_table` (first 1,024 bits, with a
rigorous error bound), ``y`` uniform kept with probability ``exp(-p)``, ``p
= h^2 y (2j + y) / 2``, by von Neumann's decreasing chain, and an independent
sign. Every uniform is a *u-rand* whose 32-bit digits are made only when a
comparison needs them, so every decision is exact; an attempt reads one
64-bit word (``u``'s first ``LEAD_BITS``, ``y``'s first ``Y_BITS``, the
first link's ``F_LEAD_BITS``, the sign) and then fresh half-words in order.
A draw that would need more than :data:`DIGIT_CAPACITY` digits (probability
below ``2**-960``) raises :class:`~._word_stream.SamplerCapacityError`
rather than truncate. ``s <= MAX_ROUNDED_SCALE = 2**52`` keeps the
arithmetic exact in int64. The proof that the law is exact, and the
layout of the bits, are in docs/privacy_argument.rst ("The rounded Gaussian
and its sampler"). A draw uses about 1.02 words up to ``s = 2**44``, 2 past
``s = 2**46``.
"""

import decimal
import functools

import numpy as np
from numba import njit

from ._word_stream import CAPACITY_EXCEEDED, WORDS_EXHAUSTED, draw_from_word_stream

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
# Words requested per missing draw (a short buffer costs another request).
_WORDS_PER_SAMPLE = 1.04
_WORDS_PER_SAMPLE_PAST_44_BITS = 2.04

_CELLS = (LARGEST_INTEGER_PART + 1) << CELL_BITS
_CELL_MASK = np.int64((1 << CELL_BITS) - 1)
_PREFIX_SHIFT = np.int64(32 - CELL_BITS)
# f of a link: the top 2 CELL_BITS + 1 bits of a half-word.
_LINK_SHIFT = np.int64(32 - (2 * CELL_BITS + 1))

# An attempt's word (64 bits, high to low): the cell's uniform's first
# LEAD_BITS bits, y's first Y_BITS bits, the first F_LEAD_BITS bits of the
# first link's f, the sign. Every bit feeds one decision only.
LEAD_BITS = 16
Y_BITS = 39
F_LEAD_BITS = 8
_LEAD_SHIFT = np.uint64(64 - LEAD_BITS)
_Y_SHIFT = np.uint64(1 + F_LEAD_BITS)
_Y_MASK = np.uint64((1 << Y_BITS) - 1)
_F_LEAD_MASK = np.uint64((1 << F_LEAD_BITS) - 1)
# x's bits the word gives: its i, then y's Y_BITS bits. Its first digit is
# their top 32 bits; the low _X_SPLIT bits start its second digit, whose
# other 32 - _X_SPLIT bits come from a fresh half-word when needed.
_X_BITS = CELL_BITS + Y_BITS
_X_SPLIT = _X_BITS - 32
# The first link's f is (f_lead << _F_REST_BITS) + the top _F_REST_BITS bits
# of a fresh half-word; f_lead > j >> _SQUEEZE_SHIFT settles f > 2j.
_F_REST_BITS = 2 * CELL_BITS + 1 - F_LEAD_BITS
_SQUEEZE_SHIFT = np.int64(_F_REST_BITS - 1)
# The cells' lookup table on the uniform's first LEAD_BITS bits (_table).
_LOOKUP_SIZE = 1 << LEAD_BITS

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
# the prefix of the draw's u-rands (its i in their top bits), the word's
# bits that start the cell's uniform's first digit and x's second, each
# slot's count of digits made, the rounding's total (integer part, then
# fraction digits), then each slot's digits.
_POSITION, _FLAG, _CAPACITY, _PREFIX, _LEAD, _X_TAIL, _COUNTS = 0, 1, 2, 3, 4, 5, 6
_TOTAL = _COUNTS + _SLOTS
_DIGITS = _TOTAL + DIGIT_CAPACITY + 1
_STATE_SIZE = _DIGITS + _SLOTS * DIGIT_CAPACITY
# The table (read only, shared by all draws): each cell's 1,024-bit
# cumulative probability as DIGIT_CAPACITY digits, then every first digit.
_FIRST = _CELLS * DIGIT_CAPACITY
# Deliberate faults, for the tests that show a broken sampler fails them
# (bits of the kernel's ``faults``; always 0 outside those tests): the cells
# drawn with the wrong law exp(-j h / 2), the sign ignored, every draw
# kept (the acceptance test skipped), or the sign read from the word's top
# bit, which the cell's uniform reads too (a bit reused).
_FAULT_WRONG_CELLS = 1
_FAULT_SKIP_SIGN = 2
_FAULT_SKIP_ACCEPTANCE = 4
_FAULT_REUSE_SIGN_BIT = 8


def _cumulative_table(wrong_cells=False):
    """The first ``DIGIT_CAPACITY`` base-2**32 digits of each cell's cumulative probability.

    Row ``j`` holds ``floor(C_j 2**1024)``, ``C_j`` the probability of the
    cells up to ``j`` (weights ``exp(-(j h)^2 / 2)``, ``exp(-j h / 2)`` for
    the test fault), computed in 380-digit decimals and checked to be the
    same at both ends of its error bound (docs/privacy_argument.rst).
    Returns an int64 array of shape ``(_CELLS * DIGIT_CAPACITY,)``.
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
    """The kernel's read-only tables: the rows and their first digits; the lookup table.

    Lookup entry ``b``, for a uniform whose first ``LEAD_BITS`` bits are
    ``b``, is the cell ``c`` when the first such bits of every earlier row
    are below ``b`` and those of row ``c`` above it; ``-1 - c`` when those of
    row ``c`` equal ``b`` (more bits decide, from cell ``c`` on).
    """
    rows = _cumulative_table(wrong_cells)
    first = rows[::DIGIT_CAPACITY]
    table = np.concatenate((rows, first)).astype(np.int64)
    table.setflags(write=False)
    leads = first >> (32 - LEAD_BITS)
    buckets = np.arange(_LOOKUP_SIZE, dtype=np.int64)
    cells = np.searchsorted(leads, buckets, side="left")
    lookup = np.where(leads[cells] > buckets, cells, -1 - cells).astype(np.int16)
    lookup.setflags(write=False)
    return table, lookup


def _kernel_parameters(scale, capacity, faults):
    """The tables and scalars that :func:`_fill_rounded_gaussian` takes after ``words``."""
    return (*_table(bool(faults & _FAULT_WRONG_CELLS)), np.int64(scale), np.int64(capacity),
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
    words_per_sample = (_WORDS_PER_SAMPLE if scale.scale <= 2 ** 44
                        else _WORDS_PER_SAMPLE_PAST_44_BITS)
    return draw_from_word_stream(size, source, words_per_sample, _fill_rounded_gaussian,
                                 *_kernel_parameters(scale.scale, capacity, 0))


def _new_state(capacity=DIGIT_CAPACITY):
    """A kernel state before a draw (for the tests of the kernel's parts)."""
    state = np.zeros(_STATE_SIZE, dtype=np.int64)
    state[_CAPACITY] = capacity
    return state


# The compiled kernel. ``state[_FLAG]`` is set when the words run out or a
# limit is passed, and every loop checks it. Digit i of u-rand u is
# ``state[_DIGITS + DIGIT_CAPACITY u + i]``, made while ``i < state[_COUNTS + u]``.
# ``state[_POSITION]`` counts half-words: half-word h is the high half of
# word h >> 1 when h is even, its low half when odd; an attempt starts on a
# word (even h). The helpers are inlined and leave their loops on their
# conditions (a ``break`` or ``return`` in a loop made Numba count the
# arrays' references at every call: ten times slower).

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

    The first digits take the word's bits first (module docstring); x's
    first digit is set from the word before any comparison.
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
        if u == _INVERSION:
            if i == 0:
                value = (state[_LEAD] << (32 - LEAD_BITS)) | (value >> LEAD_BITS)
        elif u == _X:
            if i == 1:
                value = state[_X_TAIL] | (value >> _X_SPLIT)
        elif i == 0:
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
def _searched_cell(words, state, table, cell):
    """The cell of the u-rand in slot ``_INVERSION``, searched from ``cell`` on.

    The cell is the first whose cumulative probability is above the
    uniform; every cell before ``cell`` is known to be below it. Each cell's
    first digit decides, except a tie, which the cell's whole row decides.
    """
    leading = _digit(words, state, _INVERSION, 0)
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
                # Not reachable with the exact table (its last row is all
                # ones): failing closed all the same.
                state[_FLAG] = CAPACITY_EXCEEDED
        searching = searching and state[_FLAG] == 0
    return cell


@njit(cache=True, nogil=True, inline="always")
def _accepted(words, state, cell, f_lead, faults):
    """Bernoulli(exp(-h^2 y (2j + y) / 2)) for the u-rand x = (i + y) h in slot ``_X``.

    A link is three tests in turn (``phase``): ``f`` below ``2j``, or equal
    and a fresh u-rand below x (phase 1); then the new link below the last
    (phase 2). The first link's ``f`` starts with the word's ``f_lead``
    (the squeeze). One loop with one comparison in it: nested loops made
    Numba count the arrays' references.
    """
    previous, current = _X, _LINK_A
    length = 0
    growing = True
    twice = 2 * cell
    phase = 0
    first_link = True
    if faults & _FAULT_SKIP_ACCEPTANCE:
        growing = False
    while growing and state[_FLAG] == 0:
        linked = False
        if phase == 0:
            if first_link and f_lead != cell >> _SQUEEZE_SHIFT:
                # f's first bits settle f against 2j without its others.
                f = twice + 1 if f_lead > cell >> _SQUEEZE_SHIFT else np.int64(0)
            elif first_link:
                f = (f_lead << _F_REST_BITS) | (_next_half_word(words, state) >> (
                    32 - _F_REST_BITS))
            else:
                f = _next_half_word(words, state) >> _LINK_SHIFT
            first_link = False
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
def _rounded_known(cell, y, s):
    """``floor(s (k + x) + 1/2)`` from x's first ``_X_BITS`` bits, and whether they fix it.

    ``k + x`` lies in ``[V, V + 1) 2**-_X_BITS``, ``V = cell 2**Y_BITS + y
    < 2**52``: with ``T = s V + 2**(_X_BITS - 1)`` (below ``2**105``, made
    from four exact 32-bit products), the floor is ``T >> _X_BITS`` over
    the whole interval when ``(T mod 2**_X_BITS) + s <= 2**_X_BITS``.
    """
    v = np.uint64((cell << Y_BITS) | y)
    scale = np.uint64(s)
    s_low, s_high = scale & _UINT_MASK, scale >> np.uint64(32)
    v_low, v_high = v & _UINT_MASK, v >> np.uint64(32)
    low = s_low * v_low
    # s_low v_high and s_high v_low are below 2**52 each.
    middle = (low >> np.uint64(32)) + s_low * v_high + s_high * v_low
    high = s_high * v_high + (middle >> np.uint64(32))
    low = ((middle & _UINT_MASK) << np.uint64(32)) | (low & _UINT_MASK)
    half = np.uint64(1 << (_X_BITS - 1))
    total = low + half
    if total < low:
        high += np.uint64(1)
    remainder = total & np.uint64((1 << _X_BITS) - 1)
    value = np.int64((high << np.uint64(64 - _X_BITS)) | (total >> np.uint64(_X_BITS)))
    return value, remainder + scale <= np.uint64(1 << _X_BITS)


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

    After ``m`` digits the total holds ``s (k + A) + 1/2`` exactly (``x`` in
    ``[A, A + 2**(-32 m))``); the floor is fixed when adding ``s - 1`` to its
    fraction carries nothing out. ``s d`` is added as two exact limbs.
    Called when x's first ``_X_BITS`` bits leave the floor open.
    """
    result = np.int64(0)
    undecided = True
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
def _fill_rounded_gaussian(out, start, words, table, lookup, s, capacity, faults, cursor):
    """Fill ``out[start:]`` until the words run out; return how many entries are filled.

    The common case in local variables, the rest in the state (see the
    module's notes). The stream starts at word ``cursor[0]``. On return
    ``cursor[0]`` is the first word of the unfinished draw (or the end of
    the words used), ``cursor[1]`` why it stopped, ``cursor[2]`` 0.
    """
    state = np.zeros(_STATE_SIZE, dtype=np.int64)
    state[_CAPACITY] = capacity
    n_words = words.shape[0]
    word_at = cursor[0]
    filled = start
    first = word_at
    flag = 0
    keep_all = (faults & _FAULT_SKIP_ACCEPTANCE) != 0
    no_sign = (faults & _FAULT_SKIP_SIGN) != 0
    sign_shift = np.uint64(63 if faults & _FAULT_REUSE_SIGN_BIT else 0)
    one = np.uint64(1)
    while filled < out.shape[0] and flag == 0:
        first = word_at
        value = np.int64(0)
        negative = False
        drawing = True
        while drawing and flag == 0:
            if word_at >= n_words:
                flag = WORDS_EXHAUSTED
            else:
                word = words[word_at]
                word_at += 1
                lead = np.int64(word >> _LEAD_SHIFT)
                y = np.int64((word >> _Y_SHIFT) & _Y_MASK)
                f_lead = np.int64((word >> one) & _F_LEAD_MASK)
                negative = ((word >> sign_shift) & one) == one and not no_sign
                cell = np.int64(lookup[lead])
                settled = False
                if cell >= 0 and (f_lead > cell >> _SQUEEZE_SHIFT or keep_all):
                    # The common case: the cell known, the chain empty.
                    value, settled = _rounded_known(cell, y, s)
                if not settled:
                    # The rest of the attempt, from the bits already read.
                    state[_POSITION] = 2 * word_at
                    state[_LEAD] = lead
                    state[_COUNTS + _INVERSION] = 0
                    if cell < 0:
                        cell = _searched_cell(words, state, table, -1 - cell)
                    prefix = (cell & _CELL_MASK) << _PREFIX_SHIFT
                    state[_PREFIX] = prefix
                    state[_DIGITS + DIGIT_CAPACITY * _X] = prefix | (y >> _X_SPLIT)
                    state[_COUNTS + _X] = 1
                    state[_X_TAIL] = (y & ((1 << _X_SPLIT) - 1)) << (32 - _X_SPLIT)
                    kept = state[_FLAG] == 0 and _accepted(words, state, cell, f_lead, faults)
                    if kept and state[_FLAG] == 0:
                        value, settled = _rounded_known(cell, y, s)
                        if not settled:
                            value = _rounded(words, state, cell >> CELL_BITS, s)
                            settled = state[_FLAG] == 0
                    flag = state[_FLAG]
                    # The next attempt starts on a whole word.
                    word_at = (state[_POSITION] + 1) >> 1
                drawing = not settled
        if flag == 0:
            out[filled] = -value if negative else value
            filled += 1
    if flag == 0:
        first = word_at
    cursor[0] = first
    cursor[2] = 0
    cursor[1] = flag
    return filled
