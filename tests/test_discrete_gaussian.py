"""The exact discrete Gaussian sampler against the law's exact probabilities."""

import fractions
import math

import numpy as np
import pytest
from scipy import stats

from sklearn_dplssgd.backends._discrete_gaussian import (
    MAX_DENOMINATOR,
    DiscreteGaussianScale,
    SecureWords,
    sample_discrete_gaussian,
)


class SeededWords:
    """A deterministic word source for the tests only (the seam the sampler offers)."""

    def __init__(self, seed, per_request=None):
        self.rng = np.random.default_rng(seed)
        self.per_request = per_request
        self.requests = 0
        self.served = 0

    def words(self, count):
        count = count if self.per_request is None else self.per_request
        self.requests += 1
        self.served += count
        return self.rng.integers(0, 2 ** 64, size=count, dtype=np.uint64, endpoint=False)


def exact_probabilities(variance, support):
    """P(Y = y) of N_Z(0, variance) on ``support`` (|y| beyond it has mass below 1e-300)."""
    log_weights = -support.astype(np.float64) ** 2 / (2.0 * variance)
    weights = np.exp(log_weights - log_weights.max())
    return weights / weights.sum()


def chi_square_pvalue(draws, variance, min_expected=20.0):
    """Pearson's test of ``draws`` against N_Z(0, variance), adjacent integers merged into
    bins of at least ``min_expected`` expected draws (the tails into the outer bins)."""
    half_width = int(math.ceil(40 * math.sqrt(variance))) + 2
    support = np.arange(-half_width, half_width + 1)
    expected = exact_probabilities(variance, support) * draws.size
    assert np.abs(draws).max() <= half_width
    observed = np.bincount(draws + half_width, minlength=support.size).astype(np.float64)
    edges, running = [0], 0.0
    for i, value in enumerate(expected):
        running += value
        if running >= min_expected:
            edges.append(i + 1)
            running = 0.0
    edges[-1] = support.size  # the last partial bin joins its neighbour
    bins_expected = np.add.reduceat(expected, edges[:-1])
    bins_observed = np.add.reduceat(observed, edges[:-1])
    # The merged outer bins hold the tails: their expected counts already do
    # (all the mass beyond the support is below 1e-300).
    return stats.chisquare(bins_observed, bins_expected * bins_observed.sum()
                           / bins_expected.sum()).pvalue


@pytest.mark.parametrize("std, seed", [(0.5, 1), (1.0, 2), (3.0, 3), (1000.0, 4)])
def test_a_million_draws_follow_the_exact_probabilities(std, seed):
    scale = DiscreteGaussianScale.at_least(std)
    assert scale.variance == fractions.Fraction(std) ** 2 or std == 1000.0
    draws = sample_discrete_gaussian(1_000_000, scale, source=SeededWords(seed))
    assert draws.dtype == np.int64
    assert chi_square_pvalue(draws, float(scale.variance)) > 1e-4


def test_the_chi_square_test_refutes_a_rounded_continuous_gaussian():
    # The test can fail: at s = 0.5, rounding a continuous Gaussian (what a
    # float sampler does) is a different law, and a million draws show it.
    rng = np.random.default_rng(5)
    rounded = np.rint(rng.normal(0.0, 0.5, size=1_000_000)).astype(np.int64)
    assert chi_square_pvalue(rounded, 0.25) < 1e-6


def test_draws_depend_on_the_word_stream_only_not_on_the_buffers():
    # A draw that runs out of words restarts from its first word with more
    # appended: three words a request give the draws of one long request.
    scale = DiscreteGaussianScale.at_least(3.0)
    in_one = sample_discrete_gaussian(2000, scale, source=SeededWords(6, per_request=200_000))
    in_crumbs = sample_discrete_gaussian(2000, scale, source=SeededWords(6, per_request=3))
    np.testing.assert_array_equal(in_one, in_crumbs)


def test_the_secure_source_gives_distinct_uniform_words():
    words = SecureWords().words(4096)
    assert words.dtype == np.uint64 and words.shape == (4096,) and words.flags.writeable
    assert np.unique(words).size == 4096
    # Each of the 64 bits is set about half the time (binomial, 4096 draws).
    bits = (words[:, None] >> np.arange(64, dtype=np.uint64)) & np.uint64(1)
    assert np.all(np.abs(bits.mean(axis=0) - 0.5) < 0.05)
    draws = sample_discrete_gaussian(10_000, DiscreteGaussianScale.at_least(2.0))
    assert abs(draws.mean()) < 0.1 and abs(draws.var() - 4.0) < 0.4


@pytest.mark.parametrize("std", [1e-3, 0.5, 0.7, 1.0, 3.3, 1000.0, 12345.678, 2.0 ** 25])
def test_the_grid_never_lowers_the_variance(std):
    scale = DiscreteGaussianScale.at_least(std)
    requested = fractions.Fraction(std) ** 2
    assert requested <= scale.variance <= requested * (1 + fractions.Fraction(1, 2 ** 20)) \
        + fractions.Fraction(1, 2 ** 20)
    assert 2 * scale.t * scale.m * scale.q <= MAX_DENOMINATOR
    assert fractions.Fraction(scale.variance_at_most()) <= scale.variance


@pytest.mark.parametrize("arguments", [(0, 1, 1), (1, -2, 1), (1, 1, 1.5), (True, 1, 1),
                                       (2 ** 20, 2 ** 20, 2 ** 20)])
def test_a_bad_scale_is_refused(arguments):
    with pytest.raises(ValueError, match="DiscreteGaussianScale"):
        DiscreteGaussianScale(*arguments)


@pytest.mark.parametrize("std", [0.0, -1.0, math.inf, math.nan, 2.0 ** 26])
def test_a_bad_requested_std_is_refused(std):
    with pytest.raises(ValueError, match="std"):
        DiscreteGaussianScale.at_least(std)
