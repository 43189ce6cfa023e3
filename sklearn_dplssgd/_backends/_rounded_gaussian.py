"""The rounded Gaussian ``round(s G)``, sampled exactly from secure random words (Numba).

``G`` is a standard normal and ``s`` a public positive integer (at most
``MAX_ROUNDED_SCALE``). ``|G|`` is drawn with integer arithmetic only, after
Karney, "Sampling exactly from the normal distribution" (ACM Transactions on
Mathematical Software 42(1), 2016). The law, the layout of the bits and the
capacity bound are argued in docs/privacy_argument.rst ("The rounded Gaussian
and its sampler").
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

# The largest s for which the arithmetic is exact in int64 (and s a float64).
MAX_ROUNDED_SCALE = 2 ** 52
# Digits a u-rand may hold (32 bits each): a draw needing more fails closed.
DIGIT_CAPACITY = 32
# |G| < LARGEST_INTEGER_PART + 1 in the table; a larger |G| fails closed.
LARGEST_INTEGER_PART = 37
# The cells are 2**-CELL_BITS wide: finer cells reject less but make the
# table longer; p < 1 needs j < 4**CELL_BITS.
CELL_BITS = 7
# Words requested per missing draw (a short buffer costs another request).
_WORDS_PER_SAMPLE = 1.04
_WORDS_PER_SAMPLE_PAST_44_BITS = 2.04

_CELLS = (LARGEST_INTEGER_PART + 1) << CELL_BITS
_CELL_MASK = np.int64((1 << CELL_BITS) - 1)
_PREFIX_SHIFT = np.int64(32 - CELL_BITS)
# f of a link: the top 2 CELL_BITS + 1 bits of a half-word.
_LINK_SHIFT = np.int64(32 - (2 * CELL_BITS + 1))

# An attempt's word, high to low: u's first LEAD_BITS bits, y's first
# Y_BITS, the first link's f's first F_LEAD_BITS, the sign.
LEAD_BITS = 16
Y_BITS = 39
F_LEAD_BITS = 8
_LEAD_SHIFT = np.uint64(64 - LEAD_BITS)
_Y_SHIFT = np.uint64(1 + F_LEAD_BITS)
_Y_MASK = np.uint64((1 << Y_BITS) - 1)
_F_LEAD_MASK = np.uint64((1 << F_LEAD_BITS) - 1)
# x's bits the word gives (i, then y): the low _X_SPLIT start its second digit.
_X_BITS = CELL_BITS + Y_BITS
_X_SPLIT = _X_BITS - 32
# f_lead > j >> _SQUEEZE_SHIFT settles f > 2j (the squeeze).
_F_REST_BITS = 2 * CELL_BITS + 1 - F_LEAD_BITS
_SQUEEZE_SHIFT = np.int64(_F_REST_BITS - 1)
_LOOKUP_SIZE = 1 << LEAD_BITS

_DIGIT_BITS = np.int64(32)
_DIGIT_BASE = np.int64(2 ** 32)
_DIGIT_MASK = np.int64(2 ** 32 - 1)
_HALF_DIGIT = np.int64(2 ** 31)
_UINT_MASK = np.uint64(2 ** 32 - 1)
# The u-rand slots: x, the chain's two links, a link's fresh uniform, the cell's.
_X, _LINK_A, _LINK_B, _FRESH, _INVERSION = 0, 1, 2, 3, 4
_SLOTS = 5
# The kernel's state (one int64 array): next half-word, stop flag, capacity,
# u-rands' prefix, the word's leftover bits, digit counts, rounding total, digits.
_POSITION, _FLAG, _CAPACITY, _PREFIX, _LEAD, _X_TAIL, _COUNTS = 0, 1, 2, 3, 4, 5, 6
_TOTAL = _COUNTS + _SLOTS
_DIGITS = _TOTAL + DIGIT_CAPACITY + 1
_STATE_SIZE = _DIGITS + _SLOTS * DIGIT_CAPACITY
# The table: each cell's 1,024-bit cumulative probability, then every first digit.
_FIRST = _CELLS * DIGIT_CAPACITY
# Deliberate faults for the tests that show a broken sampler fails them (0 elsewhere).
_FAULT_WRONG_CELLS = 1
_FAULT_SKIP_SIGN = 2
_FAULT_SKIP_ACCEPTANCE = 4
_FAULT_REUSE_SIGN_BIT = 8


def _cumulative_table(wrong_cells=False):
    """The first ``DIGIT_CAPACITY`` base-2**32 digits of each cell's cumulative probability.

    Row ``j`` holds ``floor(C_j 2**1024)``, checked at both ends of its error
    bound (docs/privacy_argument.rst).
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

    Lookup entry ``b`` (a uniform's first ``LEAD_BITS`` bits) is the cell when
    ``b`` decides it, else ``-1 - c``, ``c`` the first cell to search.
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
    """``size`` independent int64 draws of ``round(s G)``, ``G`` standard normal, exactly.

    ``source`` is ``SecureWords`` when None. Raises ``SamplerCapacityError``
    when a draw needs more than ``capacity`` digits of one uniform (the tests
    lower it to force that).
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


# The kernel. Every loop checks ``state[_FLAG]``; ``state[_POSITION]`` counts
# half-words. The helpers are inlined and leave loops on their conditions: a
# ``break`` or ``return`` in a loop makes Numba count the arrays' references.

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
    """Digit ``i`` of u-rand ``u``, made from the next half-word when first needed."""
    value = np.int64(0)
    if i < state[_COUNTS + u]:
        value = state[_DIGITS + DIGIT_CAPACITY * u + i]
    elif i >= state[_CAPACITY]:
        state[_FLAG] = CAPACITY_EXCEEDED
    elif (state[_POSITION] >> 1) >= words.shape[0]:
        state[_FLAG] = WORDS_EXHAUSTED
    else:
        # _next_half_word written out: a nested inlined call is slower in Numba.
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
    """Whether the cell's u-rand is below ``C_cell`` (equal to capacity: fails closed)."""
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
    """The first cell from ``cell`` on whose cumulative probability is above the uniform."""
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
                # Not reachable with the exact table: fail closed all the same.
                state[_FLAG] = CAPACITY_EXCEEDED
        searching = searching and state[_FLAG] == 0
    return cell


@njit(cache=True, nogil=True, inline="always")
def _accepted(words, state, cell, f_lead, faults):
    """Bernoulli(exp(-h^2 y (2j + y) / 2)) for the u-rand x = (i + y) h in slot ``_X``.

    A link's tests in turn (``phase``): ``f`` against ``2j``, a fresh u-rand
    below x when equal (1), the new link below the last (2). One flat loop,
    for Numba's sake.
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

    With ``T = s (cell 2**Y_BITS + y) + 2**(_X_BITS - 1)`` (four exact 32-bit
    products), the floor is ``T >> _X_BITS`` when ``(T mod 2**_X_BITS) + s <=
    2**_X_BITS``.
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

    ``state[_TOTAL]`` is the integer part, ``state[_TOTAL + i]`` the fraction's
    digit of weight ``2**(-32 i)``.
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

    The total holds ``s (k + A) + 1/2`` exactly; the floor is fixed when
    adding ``s - 1`` to its fraction carries nothing out.
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

    ``cursor`` as in :func:`~._word_stream.draw_from_word_stream`: in, the
    first word; out, the first word of the unfinished draw and why it stopped.
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
