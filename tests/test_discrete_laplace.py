"""The exact discrete Laplace sampler against its law's probabilities and a simple oracle."""

import fractions
import math

import numpy as np
import pytest
from scipy import stats

from sklearn_dplssgd._backends import (
    DiscreteLaplaceScale, SamplerCapacityError, sample_discrete_laplace,
)
from sklearn_dplssgd._backends import _discrete_laplace
from sklearn_dplssgd._backends._word_stream import draw_from_word_stream
from sklearn_dplssgd._training import GeneratorWords
from test_word_stream import SeededWords


def cdf(parameter, y):
    """``P(Y <= y)`` of the discrete Laplace law ``exp(-e |y|)``, from its closed form."""
    r = math.exp(-parameter)
    y = np.asarray(y, dtype=np.float64)
    below = np.exp(-parameter * np.abs(y)) / (1.0 + r)
    return np.where(y < 0, below, 1.0 - r * below)


def chi_square_pvalue(draws, parameter, n_bins=200):
    """Pearson's test against the law, on about ``n_bins`` bins of adjacent integers of
    nearly equal probability (the two tails included in the outer bins)."""
    quantiles = np.linspace(0.0, 1.0, n_bins + 1)[1:-1]
    # Integer cut points y: a bin is (previous cut, y]; quantiles of the law.
    r = math.exp(-parameter)
    cuts = np.where(quantiles < 1.0 / (1.0 + r),
                    -np.floor(np.log(quantiles * (1.0 + r)) / -parameter),
                    np.ceil(np.log((1.0 - quantiles) * (1.0 + r) / r) / -parameter))
    cuts = np.unique(cuts.astype(np.int64))
    probabilities = np.diff(np.concatenate(([0.0], cdf(parameter, cuts), [1.0])))
    observed = np.bincount(np.searchsorted(cuts, draws, side="left"),
                           minlength=cuts.size + 1).astype(np.float64)
    kept = probabilities * draws.size >= 5.0
    assert kept.sum() >= 3 and probabilities[~kept].sum() * draws.size < 20.0
    observed, probabilities = observed[kept], probabilities[kept]
    return stats.chisquare(observed, probabilities / probabilities.sum() * observed.sum()
                           ).pvalue


def oracle(parameter, size, rng):
    """A simple, independent sampler: the difference of two geometric variables.

    If ``G1, G2`` count failures before a success of probability ``1 - exp(-e)``,
    ``G1 - G2`` has the discrete Laplace law (a floating-point oracle, fine in a test).
    """
    p = -math.expm1(-parameter)
    return rng.geometric(p, size) - rng.geometric(p, size)


SCALES = [
    (DiscreteLaplaceScale.at_most(0.05), 1),
    (DiscreteLaplaceScale.at_most(1.0 / 3.0), 2),
    (DiscreteLaplaceScale(1, 1), 3),
    (DiscreteLaplaceScale(5, 2), 4),
    (DiscreteLaplaceScale(3, 7), 5),
    (DiscreteLaplaceScale.at_most(1e-6 / 3.0), 6),  # the parameter rounded onto 2**-62
]


@pytest.mark.parametrize("scale, seed", SCALES, ids=repr)
def test_draws_follow_the_exact_probabilities(scale, seed):
    draws = sample_discrete_laplace(200_000, scale, SeededWords(seed))
    assert draws.dtype == np.int64
    assert chi_square_pvalue(draws, float(scale.parameter)) > 1e-4


@pytest.mark.parametrize("scale, seed", SCALES[:5], ids=repr)
def test_draws_match_an_independent_oracle(scale, seed):
    parameter = float(scale.parameter)
    ours = sample_discrete_laplace(100_000, scale, GeneratorWords(np.random.default_rng(seed)))
    theirs = oracle(parameter, 100_000, np.random.default_rng(seed + 100))
    # Both against the same bins (a contingency table of the two samples).
    cut = int(math.ceil(3.0 / parameter))
    edges = np.unique(np.linspace(-cut, cut, 41).round()).astype(np.int64)
    table = np.stack([np.bincount(np.searchsorted(edges, sample), minlength=edges.size + 1)
                      for sample in (ours, theirs)])
    table = table[:, table.min(axis=0) > 0]
    assert stats.chi2_contingency(table).pvalue > 1e-4


@pytest.mark.parametrize("wrong", [
    "parameter 10 percent too large",
    "rounded continuous Laplace",
])
def test_the_law_test_refutes_a_wrong_sampler(wrong):
    parameter = 1.0
    rng = np.random.default_rng(7)
    if wrong == "parameter 10 percent too large":
        draws = sample_discrete_laplace(200_000, DiscreteLaplaceScale(11, 10), SeededWords(8))
    else:
        # What a float sampler rounded to integers gives: another law.
        draws = np.rint(rng.laplace(0.0, 1.0 / parameter, 200_000)).astype(np.int64)
    assert chi_square_pvalue(draws, parameter) < 1e-6


@pytest.mark.parametrize("per_request", [1, 3, 17])
def test_draws_depend_on_the_word_stream_only_not_on_the_buffers(per_request):
    scale = DiscreteLaplaceScale.at_most(0.2)
    whole = sample_discrete_laplace(2_000, scale, SeededWords(9))
    pieces = sample_discrete_laplace(2_000, scale, SeededWords(9, per_request=per_request))
    np.testing.assert_array_equal(whole, pieces)


def test_the_parameter_is_exact_or_rounded_down():
    assert DiscreteLaplaceScale.at_most(0.1).parameter == fractions.Fraction(0.1)
    assert DiscreteLaplaceScale.at_most(fractions.Fraction(2, 3)).parameter == \
        fractions.Fraction(2, 3)
    tiny = 1e-12 / 3.0
    rounded = DiscreteLaplaceScale.at_most(tiny)
    assert rounded.denominator == 2 ** 62
    assert fractions.Fraction(tiny) - fractions.Fraction(1, 2 ** 62) < rounded.parameter \
        <= fractions.Fraction(tiny)
    assert fractions.Fraction(rounded.epsilon_at_most()) >= rounded.parameter


@pytest.mark.parametrize("bad", [0.0, -1.0, 2.0 ** -51, math.inf, math.nan, 2.0 ** 63, "1"])
def test_a_bad_parameter_is_refused(bad):
    with pytest.raises(ValueError, match="DiscreteLaplaceScale"):
        DiscreteLaplaceScale.at_most(bad)


@pytest.mark.parametrize("numerator, denominator", [(0, 1), (1, 0), (1, 2 ** 63), (True, 1),
                                                    (1, 2 ** 51)])
def test_a_bad_scale_is_refused(numerator, denominator):
    with pytest.raises(ValueError, match="DiscreteLaplaceScale"):
        DiscreteLaplaceScale(numerator, denominator)


def test_a_draw_past_the_capacity_fails_closed():
    # With a tiny largest magnitude the kernel must refuse, not truncate.
    with pytest.raises(SamplerCapacityError):
        draw_from_word_stream(
            1000, SeededWords(10), 16, _discrete_laplace._fill_discrete_laplace,
            np.int64(1), np.int64(100), np.int64(100), np.int64(3))


def test_sampling_refuses_a_wrong_scale_and_size():
    with pytest.raises(TypeError, match="DiscreteLaplaceScale"):
        sample_discrete_laplace(3, 0.5)
    with pytest.raises(ValueError, match="non-negative"):
        sample_discrete_laplace(-1, DiscreteLaplaceScale(1, 1))
    assert sample_discrete_laplace(0, DiscreteLaplaceScale(1, 1)).shape == (0,)
    # The default source is the operating system's CSPRNG.
    assert sample_discrete_laplace(5, DiscreteLaplaceScale(1, 1)).shape == (5,)
