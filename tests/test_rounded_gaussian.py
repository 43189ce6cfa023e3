"""The exact rounded Gaussian sampler against the law's exact probabilities."""

import numpy as np
import pytest
from scipy import stats
from test_word_stream import SeededWords

from sklearn_dplssgd._backends import (
    RoundedGaussianScale, SamplerCapacityError, sample_rounded_gaussian,
)
from sklearn_dplssgd._backends._word_stream import draw_from_word_stream
from sklearn_dplssgd._backends._rounded_gaussian import (
    _COUNTS, _DIGITS, _FAULT_REUSE_SIGN_BIT, _FAULT_SKIP_ACCEPTANCE, _FAULT_SKIP_SIGN,
    _FAULT_WRONG_CELLS, _FIRST, _FLAG, _PREFIX, _X, _X_TAIL, CELL_BITS, DIGIT_CAPACITY, F_LEAD_BITS,
    LARGEST_INTEGER_PART, LEAD_BITS, MAX_ROUNDED_SCALE, Y_BITS, _accepted, _cumulative_table,
    _fill_rounded_gaussian, _kernel_parameters, _new_state, _rounded, _rounded_known, _table,
)

N_DRAWS = 1_000_000


def chi_square_pvalue(draws, scale, n_bins=200):
    """Pearson's test of ``draws`` against ``round(scale G)``: bins of adjacent integers of
    about equal mass, P(j) = Phi((j + 1/2) / s) - Phi((j - 1/2) / s), the tails in the outer bins.
    """
    quantiles = stats.norm.ppf(np.linspace(0.0, 1.0, n_bins + 1)[1:-1])
    edges = np.unique(np.round(quantiles * scale).astype(np.int64))
    # Bin b holds the integers in [edges[b - 1], edges[b]).
    inner = np.diff(stats.norm.cdf((edges - 0.5) / scale))
    probabilities = np.concatenate((
        [stats.norm.cdf((edges[0] - 0.5) / scale)], inner,
        [stats.norm.sf((edges[-1] - 0.5) / scale)]))
    observed = np.bincount(np.searchsorted(edges, draws, side="right"),
                           minlength=probabilities.size)
    return stats.chisquare(observed, probabilities / probabilities.sum() * draws.size).pvalue


def draws_with_faults(size, scale, faults, seed):
    return draw_from_word_stream(size, SeededWords(seed), 8, _fill_rounded_gaussian,
                                 *_kernel_parameters(scale, DIGIT_CAPACITY, faults))


@pytest.fixture(scope="module")
def fine_draws():
    return sample_rounded_gaussian(N_DRAWS, RoundedGaussianScale(2 ** 20), SeededWords(14))


@pytest.mark.parametrize("scale, seed", [(1, 11), (3, 12), (1000, 13)])
def test_a_million_draws_follow_the_exact_probabilities(scale, seed):
    draws = sample_rounded_gaussian(N_DRAWS, RoundedGaussianScale(scale), SeededWords(seed))
    assert draws.dtype == np.int64 and draws.shape == (N_DRAWS,)
    assert chi_square_pvalue(draws, scale) > 1e-4


def test_a_million_draws_at_a_fine_scale_follow_the_exact_probabilities(fine_draws):
    assert chi_square_pvalue(fine_draws, 2 ** 20) > 1e-4


@pytest.mark.parametrize("scale, seed", [(2 ** 40 + 12345, 22), (MAX_ROUNDED_SCALE - 1, 23)])
def test_a_million_draws_past_two_limbs_follow_the_exact_probabilities(scale, seed):
    # Past s = 2**32 every draw needs a second digit of x and both limbs of
    # s: the law (Pearson on 200 bins) and the low bits, which the later
    # digits make, uniform (Pearson on the low 8 bits).
    draws = sample_rounded_gaussian(N_DRAWS, RoundedGaussianScale(scale), SeededWords(seed))
    assert chi_square_pvalue(draws, scale) > 1e-4
    assert stats.chisquare(np.bincount(draws & 255, minlength=256)).pvalue > 1e-4
    assert stats.kstest(draws / scale, "norm").pvalue > 1e-4


def test_the_normal_part_is_the_standard_normal(fine_draws):
    # At s = 2**20 the draws over s are the normal to 20 bits: Kolmogorov-Smirnov
    # against N(0, 1) (the rounding moves the CDF by at most 2**-21 / sqrt(2 pi)).
    assert stats.kstest(fine_draws / 2.0 ** 20, "norm").pvalue > 1e-4
    assert abs(fine_draws.std() / 2.0 ** 20 - 1.0) < 0.005


def test_the_law_is_symmetric():
    draws = sample_rounded_gaussian(200_000, RoundedGaussianScale(3), SeededWords(15))
    positive, negative = np.count_nonzero(draws > 0), np.count_nonzero(draws < 0)
    assert stats.binomtest(positive, positive + negative).pvalue > 1e-4
    largest = np.abs(draws).max()
    above = np.bincount(draws[draws > 0], minlength=largest + 1)[1:]
    below = np.bincount(-draws[draws < 0], minlength=largest + 1)[1:]
    kept = above + below >= 10
    assert stats.chi2_contingency(np.stack((above[kept], below[kept]))).pvalue > 1e-4


@pytest.mark.parametrize("faults", [_FAULT_WRONG_CELLS, _FAULT_SKIP_SIGN, _FAULT_REUSE_SIGN_BIT])
def test_a_broken_sampler_fails_the_chi_square(faults):
    # The test can fail: with the cells drawn by a wrong law (exp(-j h / 2):
    # the draws are too wide), without the sign, or with the sign read from
    # a bit the cell's uniform reads too (the word's top bit: then only the
    # draws of |G| above its median are negative), the same words give
    # draws the chi-square refutes.
    assert chi_square_pvalue(draws_with_faults(200_000, 1000, 0, 16), 1000) > 1e-4
    assert chi_square_pvalue(draws_with_faults(200_000, 1000, faults, 16), 1000) < 1e-6


@pytest.mark.parametrize("per_request", [1, 3])
def test_draws_depend_on_the_word_stream_only_not_on_the_buffers(per_request):
    # A draw that runs out of words restarts from its first half-word (in
    # either half of a word) with more appended: one or three words a
    # request give the draws of one long request.
    scale = RoundedGaussianScale(1000)
    in_one = sample_rounded_gaussian(2000, scale, SeededWords(17, per_request=400_000))
    in_crumbs = sample_rounded_gaussian(2000, scale, SeededWords(17, per_request=per_request))
    np.testing.assert_array_equal(in_one, in_crumbs)


def fill_from(words, size=1000, scale=1000):
    out = np.empty(size, dtype=np.int64)
    cursor = np.zeros(3, dtype=np.int64)
    filled = _fill_rounded_gaussian(out, 0, words, *_kernel_parameters(scale, DIGIT_CAPACITY, 0),
                                    cursor)
    return out[:filled], cursor


@pytest.mark.parametrize("scale, low, high", [
    (1000, 1.0, 1.04), (2 ** 35, 1.0, 1.04), (2 ** 40, 1.0, 1.06), (2 ** 52, 1.9, 2.1)])
def test_a_draw_uses_about_one_word(scale, low, high):
    # One word settles a draw but about once in 50 (a cell the first 16 bits
    # leave open, a first link's f its first 8 bits leave open, a
    # rejection, x's first 46 bits leaving the rounding open): a second
    # word then (it used 1.51 words a draw, 2.01 past s = 2**32). Past s =
    # 2**46 the rounding needs x's second digit every time.
    words = SeededWords(20).words(100_000)
    draws, cursor = fill_from(words, size=40_000, scale=scale)
    assert draws.size == 40_000 and cursor[1] == 0 and cursor[2] == 0
    assert low < cursor[0] / draws.size < high


def test_the_words_fields_feed_their_own_decisions():
    # A draw settled by its one word: its lowest bit is the sign (flipping it
    # negates the draw and nothing else), the bits above it f's first bits
    # (a larger f_lead keeps a kept draw the same), and y's 39 bits move
    # the draw by at most s 2**-46 per unit of y.
    words = SeededWords(29).words(4000)
    scale = 2 ** 40
    settled = 0
    for word in words[:2000]:
        single = np.array([word, *words[2000:2008]], dtype=np.uint64)
        draw, cursor = fill_from(single, size=1, scale=scale)
        if cursor[0] != 1:
            continue
        settled += 1
        flipped = single.copy()
        flipped[0] ^= np.uint64(1)
        assert fill_from(flipped, size=1, scale=scale)[0][0] == -draw[0]
        top_f = single.copy()
        top_f[0] |= np.uint64(((1 << F_LEAD_BITS) - 1) << 1)
        assert fill_from(top_f, size=1, scale=scale)[0][0] == draw[0]
        y_step = single.copy()
        y_step[0] ^= np.uint64(1 << (1 + F_LEAD_BITS))
        moved = fill_from(y_step, size=1, scale=scale)[0]
        assert moved.size == 0 or abs(abs(int(moved[0])) - abs(int(draw[0]))) <= 1 + (scale >> 46)
    assert settled > 1900


def test_the_cells_table_is_their_law():
    # Row j: the first 1,024 bits of P(cell <= j), cell j of probability
    # exp(-(j h)^2 / 2) / W; its first digit against float64; the guide
    # points at the first cell whose first digit reaches its bucket.
    table = _cumulative_table().reshape(-1, DIGIT_CAPACITY)
    assert table.shape[0] == (LARGEST_INTEGER_PART + 1) << CELL_BITS
    assert table.min() >= 0 and table.max() < 2 ** 32
    as_integers = [int("".join(f"{digit:08x}" for digit in row), 16) for row in table]
    # Increasing while cells weigh more than 2**-1024 (|G| < 37.5), then
    # the floors may repeat; the last is 2**1024 - 1: P(|G| >= 38) < 2**-1024.
    assert all(a <= b for a, b in zip(as_integers, as_integers[1:]))
    increasing = as_integers[:(37 << CELL_BITS) + 1]
    assert all(a < b for a, b in zip(increasing, increasing[1:]))
    assert as_integers[-1] == 2 ** 1024 - 1
    weights = np.exp(-(np.arange(60 << CELL_BITS) / 2.0 ** CELL_BITS) ** 2 / 2.0)
    cumulative = np.cumsum(weights)[:table.shape[0]] / weights.sum()
    np.testing.assert_allclose(table[:, 0] / 2.0 ** 32, cumulative, rtol=0, atol=2e-9)
    packed, lookup = _table()
    np.testing.assert_array_equal(packed[_FIRST:], table[:, 0])
    # Lookup entry b: the cell of every uniform whose first 16 bits are b
    # (b between two rows' first 16 bits), else -1 - the first cell to search.
    assert lookup.size == 2 ** LEAD_BITS
    for bucket in range(lookup.size):
        entry = int(lookup[bucket])
        cell = entry if entry >= 0 else -1 - entry
        assert cell == 0 or as_integers[cell - 1] < bucket << (1024 - LEAD_BITS)
        if entry >= 0:
            assert (bucket + 1) << (1024 - LEAD_BITS) <= as_integers[cell]
        else:
            assert as_integers[cell] >> (1024 - LEAD_BITS) == bucket
    # Open about once in 140 uniforms.
    assert 0.005 < np.mean(lookup < 0) < 0.01
    # The fault table (a wrong law of the cells) is another law.
    assert not np.array_equal(_cumulative_table(wrong_cells=True), _cumulative_table())


def acceptance_rate(cell, y_bits, faults, trials=40_000, seed=24):
    """The acceptance test's rate for x = (i + y) h, y's first 25 bits ``y_bits``."""
    words = SeededWords(seed).words(4 * trials)
    f_leads = np.random.default_rng(seed + 1000).integers(0, 2 ** F_LEAD_BITS, size=trials)
    state = _new_state()
    prefix = (cell & ((1 << CELL_BITS) - 1)) << (32 - CELL_BITS)
    kept = 0
    for f_lead in f_leads:
        state[_PREFIX] = prefix
        state[_DIGITS + DIGIT_CAPACITY * _X] = prefix | y_bits
        state[_COUNTS + _X] = 1
        kept += bool(_accepted(words, state, np.int64(cell), np.int64(f_lead), np.int64(faults)))
    assert state[_FLAG] == 0
    return kept / trials


@pytest.mark.parametrize("cell, y", [(4800, 0.75), (2000, 0.5), (0, 0.9)])
def test_the_acceptance_test_keeps_x_with_the_densitys_ratio(cell, y):
    # exp(-h^2 y (2j + y) / 2), the density at (j + y) h over its value at
    # j h; at j = 4800 the chain often has one or two links (p = 0.22).
    # Skipping it (a broken sampler that keeps every x) is refuted.
    y_bits = int(y * 2 ** (32 - CELL_BITS))
    y = y_bits / 2 ** (32 - CELL_BITS)
    expected = np.exp(-y * (2 * cell + y) / 2 ** (2 * CELL_BITS + 1))
    rate = acceptance_rate(cell, y_bits, 0)
    assert abs(rate - expected) < 5 * np.sqrt(expected * (1 - expected) / 40_000) + 1e-4
    if cell:
        assert acceptance_rate(cell, y_bits, _FAULT_SKIP_ACCEPTANCE) == 1.0


def rounding_oracle(scale, k, digits, capacity):
    """``floor(s (k + x) + 1/2)`` in Python integers, and the digits of x it needs (or None)."""
    a = 0
    for m, digit in enumerate(digits[:capacity], start=1):
        a = (a << 32) | digit
        low = (scale * ((k << (32 * m)) + a) + (1 << (32 * m - 1))) >> (32 * m)
        high = (scale * ((k << (32 * m)) + a + 1) + (1 << (32 * m - 1)) - 1) >> (32 * m)
        if low == high:
            return low, m
    return None, None


def kernel_rounding(scale, k, digits, capacity=DIGIT_CAPACITY):
    state = _new_state(capacity)
    state[_DIGITS + DIGIT_CAPACITY * _X] = digits[0]
    state[_COUNTS + _X] = 1
    # x's second digit: its top 14 bits from the word (held in the state),
    # the rest the top 18 bits of the next half-word.
    split = CELL_BITS + Y_BITS - 32
    state[_X_TAIL] = digits[1] >> (32 - split) << (32 - split)
    rest = [(digits[1] % 2 ** (32 - split)) << split] + list(digits[2:])
    rest += [0] * (len(rest) % 2 + 2)
    words = np.array([(high << 32) | low for high, low in zip(rest[::2], rest[1::2])],
                     dtype=np.uint64)
    value = _rounded(words, state, np.int64(k), np.int64(scale))
    return (None, None) if state[_FLAG] else (int(value), int(state[_COUNTS + _X]))


def test_the_exact_rounding_against_python_integers():
    # floor(s (k + x) + 1/2) with s up to 2**52 (two limbs) and the digits
    # it makes, against the same in Python integers: random cases, and x
    # next to a rounding boundary, where many digits are needed (or more
    # than the capacity: both fail then).
    rng = np.random.default_rng(25)
    cases = []
    for _ in range(3000):
        scale = int(rng.integers(1, MAX_ROUNDED_SCALE, endpoint=True)) >> int(rng.integers(0, 52))
        digits = [int(d) for d in rng.integers(0, 2 ** 32, size=8)]
        cases.append((max(scale, 1), int(rng.integers(0, LARGEST_INTEGER_PART + 1)), digits))
    for scale in (1, 3, 2 ** 30 - 1, 2 ** 32 - 1, 2 ** 32, 2 ** 40 + 7, MAX_ROUNDED_SCALE):
        for k in (0, 5, LARGEST_INTEGER_PART):
            # x just below and at (N - 1/2) / s - k, to 8 digits.
            boundary = ((2 * (scale * k + scale // 3 + 1) - 1) << (32 * 8)) // (2 * scale) - (
                k << (32 * 8))
            for shift in (-1, 0, 1):
                value = boundary + shift
                cases.append((scale, k, [(value >> (32 * (7 - t))) & (2 ** 32 - 1)
                                         for t in range(8)]))
    needing_two = 0
    for scale, k, digits in cases:
        for capacity in (4, DIGIT_CAPACITY):
            expected = rounding_oracle(scale, k, digits, min(capacity, len(digits)))
            if capacity == DIGIT_CAPACITY and expected[0] is None:
                continue  # the oracle's digits ran out: the kernel would read more
            assert kernel_rounding(scale, k, digits, capacity) == expected, (scale, k)
            needing_two += capacity == 4 and expected[1] is not None and expected[1] >= 2
    assert needing_two > 1000


def test_a_draw_past_the_capacity_fails_closed():
    # Past s = 2**46 x's first 46 bits (the word's) never fix round(s (k + x))
    # and its second digit is needed: with a capacity of one digit the
    # sampler raises instead of truncating x.
    for scale in (RoundedGaussianScale(2 ** 47 + 1), RoundedGaussianScale(MAX_ROUNDED_SCALE)):
        with pytest.raises(SamplerCapacityError, match="capacity"):
            sample_rounded_gaussian(1000, scale, SeededWords(18), capacity=1)
        draws = sample_rounded_gaussian(1000, scale, SeededWords(18))
        assert np.abs(draws).max() < 6 * scale.scale


@pytest.mark.parametrize("scale", [0, -1, 1.5, True, MAX_ROUNDED_SCALE + 1])
def test_a_bad_scale_is_refused(scale):
    with pytest.raises(ValueError, match="RoundedGaussianScale"):
        RoundedGaussianScale(scale)


class ReferenceAttempt:
    """The half-words an attempt reads after its word: whole words, high half first."""

    def __init__(self, words, position):
        self.words, self.position, self.spare = words, position, None

    def half(self):
        if self.spare is not None:
            value, self.spare = self.spare, None
            return value
        word = int(self.words[self.position])
        self.position += 1
        self.spare = word & (2 ** 32 - 1)
        return word >> 32


class ReferenceUniform:
    """A u-rand of the Python reference below: 32-bit digits made on demand.

    ``first(half)`` makes its first digit from a half-word; ``known`` lists
    the start of a later digit that the attempt's word gave, as (index,
    value, bits known): its other bits are a fresh half-word's top bits.
    """

    def __init__(self, attempt, first=None, known=()):
        self.attempt, self.first, self.known, self.digits = attempt, first, dict(), []
        for index, value, bits in known:
            self.known[index] = (value, bits)

    def digit(self, i):
        while len(self.digits) <= i:
            half = self.attempt.half()
            index = len(self.digits)
            if index == 0 and self.first is not None:
                half = self.first(half)
            elif index in self.known:
                value, bits = self.known[index]
                half = (value << (32 - bits)) | (half >> bits)
            self.digits.append(half)
        return self.digits[i]

    def below(self, other):
        i = 0
        while self.digit(i) == other.digit(i):
            i += 1
        return self.digit(i) < other.digit(i)


def reference_draws(words, scale, count):
    """The sampler's draws from ``words``, in plain Python integers: a linear search for the
    cell from the first (no lookup table), the cell's uniform and x held as 1,024-bit and
    arbitrary integers: the algorithm written independently, as the module describes it."""
    rows = _cumulative_table().reshape(-1, DIGIT_CAPACITY)
    bounds = [int("".join(f"{digit:08x}" for digit in row), 16) for row in rows]
    draws, position = [], 0
    while len(draws) < count:
        word = int(words[position])
        attempt = ReferenceAttempt(words, position + 1)
        lead = word >> (64 - LEAD_BITS)
        y = (word >> (1 + F_LEAD_BITS)) & (2 ** Y_BITS - 1)
        f_lead = (word >> 1) & (2 ** F_LEAD_BITS - 1)
        negative = word & 1
        # The cell: the first whose C is above u; u's first 16 bits are the
        # word's, the rest read (32 bits at a time, from its first digit's
        # missing 16) only when a row's first 16 bits equal them.
        u = ReferenceUniform(attempt, first=lambda half: (lead << 16) | (half >> 16))
        cell = 0
        while True:
            top = bounds[cell] >> (1024 - LEAD_BITS)
            if lead < top:
                break
            if lead == top:
                value = 0
                for i in range(DIGIT_CAPACITY):
                    value = (value << 32) | u.digit(i)
                    bound = bounds[cell] >> (32 * (DIGIT_CAPACITY - 1 - i))
                    if value != bound:
                        break
                assert value != bound
                if value < bound:
                    break
            cell += 1
        i, k = cell % 2 ** CELL_BITS, cell >> CELL_BITS
        prefix = i << (32 - CELL_BITS)
        known = CELL_BITS + Y_BITS  # x's bits from the word: i, then y
        x_bits = (i << Y_BITS) | y
        x = ReferenceUniform(attempt, known=[(1, x_bits % 2 ** (known - 32), known - 32)])
        x.digits.append(x_bits >> (known - 32))

        def link_uniform():
            return ReferenceUniform(attempt, first=lambda half: prefix | (half >> CELL_BITS))

        # The chain: each link an f < 2j (or f = 2j and a fresh uniform below x),
        # then a uniform below the last; the first f starts with the word's bits.
        previous, length, first_link = x, 0, True
        while True:
            if first_link:
                f_rest = 2 * CELL_BITS + 1 - F_LEAD_BITS
                if f_lead > (2 * cell) >> f_rest:
                    break
                if f_lead < (2 * cell) >> f_rest:
                    f = -1
                else:
                    f = (f_lead << f_rest) | (attempt.half() >> (32 - f_rest))
            else:
                f = attempt.half() >> (32 - (2 * CELL_BITS + 1))
            first_link = False
            if f > 2 * cell or (f == 2 * cell and not link_uniform().below(x)):
                break
            current = link_uniform()
            if not current.below(previous):
                break
            previous, length = current, length + 1
        if length % 2:
            position = attempt.position  # a rejection: the next attempt on the next word
            continue
        # The rounding: from x's 46 bits, then 64, 96, ... until it is fixed.
        fraction_bits, a = known, (k << known) | x_bits
        m = 1
        while True:
            low = (scale * a + (1 << (fraction_bits - 1))) >> fraction_bits
            if low == (scale * (a + 1) + (1 << (fraction_bits - 1)) - 1) >> fraction_bits:
                break
            m += 1
            a = (k << (32 * m)) + sum(x.digit(t) << (32 * (m - 1 - t)) for t in range(m))
            fraction_bits = 32 * m
        draws.append(-low if negative else low)
        position = attempt.position
    return np.array(draws, dtype=np.int64)


@pytest.mark.parametrize("scale, seed", [
    (3, 26), (1000, 27), (2 ** 35 + 1, 30), (MAX_ROUNDED_SCALE - 1, 28)])
def test_the_draws_are_those_of_a_python_reference(scale, seed):
    # The kernel's bookkeeping (lookup table, the word's fields, the
    # prefixes, the chain's slots, the half-words, the limbs, the cursor)
    # against the same algorithm in plain Python on the same words,
    # rejections, open cells and chains of several links included.
    words = SeededWords(seed).words(10_000)
    draws, _ = fill_from(words, size=4000, scale=scale)
    assert draws.size == 4000
    np.testing.assert_array_equal(draws, reference_draws(words, scale, 4000))


def test_the_rounding_from_the_words_bits_against_python_integers():
    # floor(s (k + x) + 1/2) from x's first 46 bits (cell and y), and whether
    # they fix it, with s up to 2**52: four 32-bit products against Python's.
    rng = np.random.default_rng(31)
    cells = rng.integers(0, (LARGEST_INTEGER_PART + 1) << CELL_BITS, size=4000)
    ys = rng.integers(0, 2 ** Y_BITS, size=4000)
    scales = rng.integers(1, MAX_ROUNDED_SCALE, size=4000, endpoint=True) >> rng.integers(
        0, 52, size=4000)
    settled = 0
    for cell, y, scale in zip(cells.tolist(), ys.tolist(), np.maximum(scales, 1).tolist()):
        for y_case in (y, 2 ** Y_BITS - 1, 0):
            a = (cell << Y_BITS) | y_case
            low = (scale * a + 2 ** 45) >> 46
            fixed = low == (scale * (a + 1) + 2 ** 45 - 1) >> 46
            value, kernel_fixed = _rounded_known(np.int64(cell), np.int64(y_case),
                                                 np.int64(scale))
            assert bool(kernel_fixed) == fixed, (cell, y_case, scale)
            if fixed:
                assert int(value) == low
                settled += 1
    assert settled > 8000
