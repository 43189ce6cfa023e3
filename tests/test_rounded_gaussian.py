"""The exact rounded Gaussian sampler against the law's exact probabilities."""

import numpy as np
import pytest
from scipy import stats
from test_discrete_gaussian import SeededWords

from sklearn_dplssgd.backends import (
    DiscreteGaussianScale, ExactNoise, RoundedGaussianScale, SamplerCapacityError,
    sample_rounded_gaussian,
)
from sklearn_dplssgd.backends._discrete_gaussian import draw_from_word_stream
from sklearn_dplssgd.backends._rounded_gaussian import (
    _COUNTS, _DIGITS, _FAULT_SKIP_ACCEPTANCE, _FAULT_SKIP_SIGN, _FAULT_WRONG_CELLS, _FIRST, _FLAG,
    _GUIDE, _PREFIX, _X, CELL_BITS, DIGIT_CAPACITY, LARGEST_INTEGER_PART, MAX_ROUNDED_SCALE,
    _accepted, _cumulative_table, _fill_rounded_gaussian, _kernel_parameters, _new_state,
    _rounded, _table,
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


@pytest.mark.parametrize("faults", [_FAULT_WRONG_CELLS, _FAULT_SKIP_SIGN])
def test_a_broken_sampler_fails_the_chi_square(faults):
    # The test can fail: with the cells drawn by a wrong law (exp(-j h / 2):
    # the draws are too wide) or without the sign, the same words give
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


def fill_from(words, half, size=1000, scale=1000):
    out = np.empty(size, dtype=np.int64)
    cursor = np.array([0, 0, half], dtype=np.int64)
    filled = _fill_rounded_gaussian(out, 0, words, *_kernel_parameters(scale, DIGIT_CAPACITY, 0),
                                    cursor)
    return out[:filled], cursor


@pytest.mark.parametrize("scale, low, high", [(1000, 1.45, 1.55), (2 ** 40, 1.95, 2.05)])
def test_a_draw_uses_three_half_words(scale, low, high):
    # The cell's uniform, x with the sign, the first link's test: three
    # 32-bit halves of 64-bit words, a fourth past s = 2**32 (it used 3.4
    # words a draw with Karney's k and chains of each trial).
    words = SeededWords(20).words(100_000)
    draws, cursor = fill_from(words, 0, size=20_000, scale=scale)
    assert draws.size == 20_000 and cursor[1] == 0
    assert low < (cursor[0] + cursor[2] / 2) / draws.size < high


def test_the_stream_of_half_words_is_high_half_first():
    # Starting at the low half of word 0 gives the draws of the words that
    # hold the same half-words from the start: the stream is the halves in
    # order, high first, and a draw may start in either half.
    words = SeededWords(21).words(5000)
    low, high = words & np.uint64(0xFFFFFFFF), words >> np.uint64(32)
    shifted = (low[:-1] << np.uint64(32)) | high[1:]
    from_low_half, _ = fill_from(words, 1)
    from_start, _ = fill_from(shifted, 0)
    assert from_low_half.size == from_start.size == 1000
    np.testing.assert_array_equal(from_low_half, from_start)
    assert not np.array_equal(from_low_half, fill_from(words, 0)[0])


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
    packed = _table()
    np.testing.assert_array_equal(packed[_FIRST:_GUIDE], table[:, 0])
    guide = packed[_GUIDE:]
    for bucket in (0, 1, 300, 511, 1000, guide.size - 1):
        start = bucket << (32 - 10)
        assert table[guide[bucket], 0] >= start
        assert guide[bucket] == 0 or table[guide[bucket] - 1, 0] < start
    # The fault table (a wrong law of the cells) is another law.
    assert not np.array_equal(_cumulative_table(wrong_cells=True), _cumulative_table())


def acceptance_rate(cell, y_bits, faults, trials=40_000, seed=24):
    """The acceptance test's rate for x = (i + y) h, y's first 25 bits ``y_bits``."""
    words = SeededWords(seed).words(4 * trials)
    state = _new_state()
    prefix = (cell & ((1 << CELL_BITS) - 1)) << (32 - CELL_BITS)
    kept = 0
    for _ in range(trials):
        state[_PREFIX] = prefix
        state[_DIGITS + DIGIT_CAPACITY * _X] = prefix | y_bits
        state[_COUNTS + _X] = 1
        kept += bool(_accepted(words, state, np.int64(cell), np.int64(faults)))
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
    rest = list(digits[1:]) + [0] * (len(digits) % 2 + 2)
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
    # One 32-bit digit of x cannot fix round(s (k + x)) at s = 2**30 - 1 about
    # a quarter of the time (never past 2**32): the sampler raises instead of
    # truncating x.
    for scale in (RoundedGaussianScale(2 ** 30 - 1), RoundedGaussianScale(MAX_ROUNDED_SCALE)):
        with pytest.raises(SamplerCapacityError, match="capacity"):
            sample_rounded_gaussian(1000, scale, SeededWords(18), capacity=1)
        draws = sample_rounded_gaussian(1000, scale, SeededWords(18))
        assert np.abs(draws).max() < 6 * scale.scale


@pytest.mark.parametrize("scale", [0, -1, 1.5, True, MAX_ROUNDED_SCALE + 1])
def test_a_bad_scale_is_refused(scale):
    with pytest.raises(ValueError, match="RoundedGaussianScale"):
        RoundedGaussianScale(scale)


def test_the_noise_seam_draws_either_law():
    for scale in (RoundedGaussianScale(5), DiscreteGaussianScale.at_least(5.0)):
        noise = ExactNoise(4, 4, scale, SeededWords(19))
        np.testing.assert_array_equal(noise.draw(100), scale.sample(100, SeededWords(19)))
    with pytest.raises(TypeError, match="scale"):
        ExactNoise(4, 4, 5, SeededWords(19))


class ReferenceUniform:
    """A u-rand of the Python reference below: digits made from the half-words on demand."""

    def __init__(self, halves, prefix=None):
        self.halves, self.prefix, self.digits = halves, prefix, []

    def digit(self, i):
        while len(self.digits) <= i:
            value = next(self.halves)
            if not self.digits and self.prefix is not None:
                value = self.prefix | (value >> CELL_BITS)
            self.digits.append(value)
        return self.digits[i]

    def below(self, other):
        i = 0
        while self.digit(i) == other.digit(i):
            i += 1
        return self.digit(i) < other.digit(i)


def reference_draws(words, scale, count):
    """The sampler's draws from ``words``, in plain Python integers (a linear search for the
    cell, no guide, no one-word rounding): the same algorithm written independently."""
    halves = iter([int(w) >> shift for w in words for shift in (32, 0)])
    halves = (h & (2 ** 32 - 1) for h in halves)
    rows = _cumulative_table().reshape(-1, DIGIT_CAPACITY)
    draws = []
    while len(draws) < count:
        u = ReferenceUniform(halves)
        cell = 0
        while True:
            i = 0
            while i < DIGIT_CAPACITY and u.digit(i) == rows[cell, i]:
                i += 1
            assert i < DIGIT_CAPACITY
            if u.digit(i) < rows[cell, i]:
                break
            cell += 1
        prefix = (cell % 2 ** CELL_BITS) << (32 - CELL_BITS)
        half = next(halves)
        x = ReferenceUniform(halves, prefix)
        x.digits.append(prefix | (half >> CELL_BITS))
        previous, length = x, 0
        while True:
            f = next(halves) >> (32 - (2 * CELL_BITS + 1))
            if f > 2 * cell or (f == 2 * cell
                                and not ReferenceUniform(halves, prefix).below(x)):
                break
            current = ReferenceUniform(halves, prefix)
            if not current.below(previous):
                break
            previous, length = current, length + 1
        if length % 2:
            continue
        k, m, a = cell >> CELL_BITS, 0, 0
        while True:
            a, m = (a << 32) | x.digit(m), m + 1
            low = (scale * ((k << (32 * m)) + a) + (1 << (32 * m - 1))) >> (32 * m)
            if low == (scale * ((k << (32 * m)) + a + 1) + (1 << (32 * m - 1)) - 1) >> (32 * m):
                break
        draws.append(-low if half & 1 else low)
    return np.array(draws, dtype=np.int64)


@pytest.mark.parametrize("scale, seed", [(3, 26), (1000, 27), (MAX_ROUNDED_SCALE - 1, 28)])
def test_the_draws_are_those_of_a_python_reference(scale, seed):
    # The kernel's bookkeeping (guide, prefixes, the chain's slots, the
    # limbs, the cursor) against the same algorithm in plain Python on the
    # same words, rejections and chains of several links included.
    words = SeededWords(seed).words(6000)
    draws, _ = fill_from(words, 0, size=2000, scale=scale)
    assert draws.size == 2000
    np.testing.assert_array_equal(draws, reference_draws(words, scale, 2000))
