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
    _FAULT_SKIP_N2, _FAULT_SKIP_SIGN, DIGIT_CAPACITY, LARGEST_INTEGER_PART, MAX_ROUNDED_SCALE,
    _cumulative_table, _fill_rounded_gaussian, _kernel_parameters,
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


@pytest.mark.parametrize("faults", [_FAULT_SKIP_N2, _FAULT_SKIP_SIGN])
def test_a_broken_sampler_fails_the_chi_square(faults):
    # The test can fail: without step N2 (the draws are too wide) or without
    # the sign, the same words give draws the chi-square refutes.
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


def test_a_draw_uses_both_halves_of_its_words():
    # Each 64-bit word gives two 32-bit digits: a draw uses about 3.4 words
    # (it used 17.5 when each word gave one digit).
    words = SeededWords(20).words(100_000)
    draws, cursor = fill_from(words, 0, size=20_000)
    assert draws.size == 20_000 and cursor[1] == 0
    assert 3.2 < (cursor[0] + cursor[2] / 2) / draws.size < 3.6


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


def test_the_first_steps_table_is_the_law_of_k_and_the_sign():
    # Row o: the first 1,024 bits of P(outcome <= o), outcome (k, sign) of
    # probability exp(-k^2 / 2) / (2 Z); its first digit against float64.
    table = _cumulative_table().reshape(-1, DIGIT_CAPACITY)
    assert table.shape[0] == 2 * (LARGEST_INTEGER_PART + 1)
    assert table.min() >= 0 and table.max() < 2 ** 32
    as_integers = [int("".join(f"{digit:08x}" for digit in row), 16) for row in table]
    assert all(a < b for a, b in zip(as_integers, as_integers[1:]))
    assert as_integers[-1] == 2 ** 1024 - 1  # P(k > 37) < 2**-1024
    weights = np.exp(-np.arange(LARGEST_INTEGER_PART + 1) ** 2 / 2.0)
    cumulative = np.cumsum(np.repeat(weights, 2)) / (2 * weights.sum())
    np.testing.assert_allclose(table[:, 0] / 2.0 ** 32, cumulative, rtol=0, atol=2e-9)
    # The fault table (step N2 skipped) is another law: exp(-k / 2).
    assert not np.array_equal(_cumulative_table(skip_n2=True), _cumulative_table())


def test_a_draw_past_the_capacity_fails_closed():
    # One 32-bit digit of x cannot fix round(s (k + x)) at s = 2**30 - 1 about
    # a quarter of the time: the sampler raises instead of truncating x.
    scale = RoundedGaussianScale(MAX_ROUNDED_SCALE - 1)
    with pytest.raises(SamplerCapacityError, match="capacity"):
        sample_rounded_gaussian(1000, scale, SeededWords(18), capacity=1)
    assert np.abs(sample_rounded_gaussian(1000, scale, SeededWords(18))).max() < 6 * 2 ** 30


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
