"""The exact rounded Gaussian sampler against an independent exact sampler of the same law.

The library draws ``round(s G)`` by rejection from words of a secure stream
(Karney's method for the normal part, exact integer rounding). The oracle here
shares nothing with it: it inverts the law's distribution function at a
128-bit uniform, ``Y = k`` for ``F(k - 1/2) <= U < F(k + 1/2)``, ``F`` the
standard normal's (``Phi(x / s)``). It decides with SciPy's float64 ``Phi``
where ``U`` lies far from both edges, and otherwise (and wherever the float64
guess of ``k`` is off) with mpmath at 50 significant digits, so its law is
the exact one up to a 2**-128 uniform. The two samples are compared by a
two-sample chi-square on bins of adjacent integers.
"""

import math

import mpmath
import numpy as np
import pytest
from scipy import stats
from test_rounded_gaussian import chi_square_pvalue, draws_with_faults
from test_word_stream import SeededWords

from sklearn_dplssgd._backends import RoundedGaussianScale, sample_rounded_gaussian
from sklearn_dplssgd._backends._rounded_gaussian import _FAULT_SKIP_SIGN, _FAULT_WRONG_CELLS

N_DRAWS = 200_000
# Far more than the float64 error of Phi (a few units in the last place):
# a uniform this close to an edge is decided in 50-digit arithmetic.
EDGE_MARGIN = 1e-12


def _exact_inverse(numerator, scale):
    """The ``k`` with ``F(k - 1/2) <= numerator / 2**128 < F(k + 1/2)``, in mpmath."""
    with mpmath.workdps(50):
        u = mpmath.mpf(numerator) / mpmath.mpf(2) ** 128
        k = int(mpmath.floor(scale * mpmath.sqrt(2) * mpmath.erfinv(2 * u - 1) + 0.5))
        # The inverse's last digits could put k one off: check the edges.
        while mpmath.ncdf(mpmath.mpf(2 * k - 1) / (2 * scale)) > u:
            k -= 1
        while mpmath.ncdf(mpmath.mpf(2 * k + 1) / (2 * scale)) <= u:
            k += 1
    return k


def inversion_draws(size, scale, seed):
    """``size`` draws of ``round(scale G)`` by inversion of the exact distribution function."""
    rng = np.random.default_rng(seed)
    high = rng.integers(0, 2 ** 64, size, dtype=np.uint64)
    low = rng.integers(0, 2 ** 64, size, dtype=np.uint64)
    u = high * 2.0 ** -64 + low * 2.0 ** -128
    with np.errstate(divide="ignore"):
        k = np.floor(scale * stats.norm.ppf(u) + 0.5)
    below = stats.norm.cdf((k - 0.5) / scale)
    above = stats.norm.cdf((k + 0.5) / scale)
    undecided = ((u < below * (1 + EDGE_MARGIN)) | (u >= above * (1 - EDGE_MARGIN))
                 | ~np.isfinite(k))
    k = np.where(np.isfinite(k), k, 0).astype(np.int64)
    for i in np.flatnonzero(undecided):
        k[i] = _exact_inverse((int(high[i]) << 64) | int(low[i]), scale)
    return k


def two_sample_pvalue(first, second, scale, n_bins=100):
    """Two-sample chi-square of ``first`` against ``second`` on bins of about equal mass."""
    quantiles = stats.norm.ppf(np.linspace(0.0, 1.0, n_bins + 1)[1:-1])
    edges = np.unique(np.round(quantiles * scale).astype(np.int64))
    counts = [np.bincount(np.searchsorted(edges, draws, side="right"), minlength=edges.size + 1)
              for draws in (first, second)]
    return stats.chi2_contingency(np.stack(counts)).pvalue


def test_the_exact_inverse_decides_the_edges():
    # At the uniform just below F(k + 1/2) the draw is k, just above it k + 1:
    # the 50-digit arithmetic, not a float, decides.
    scale, k = 3, 2
    with mpmath.workdps(60):
        edge = mpmath.ncdf(mpmath.mpf(2 * k + 1) / (2 * scale)) * mpmath.mpf(2) ** 128
        just_below, just_above = int(mpmath.floor(edge)), int(mpmath.ceil(edge))
    assert _exact_inverse(just_below, scale) == k
    assert _exact_inverse(just_above, scale) == k + 1


@pytest.mark.parametrize("scale", [3, 2 ** 20])
def test_the_oracle_follows_the_exact_probabilities(scale):
    assert chi_square_pvalue(inversion_draws(N_DRAWS, scale, 21), scale) > 1e-4


@pytest.mark.parametrize("scale, seed", [(1, 31), (3, 32), (1000, 33), (2 ** 20, 34)])
def test_the_sampler_and_the_oracle_draw_the_same_law(scale, seed):
    library = sample_rounded_gaussian(N_DRAWS, RoundedGaussianScale(scale), SeededWords(seed))
    oracle = inversion_draws(N_DRAWS, scale, seed)
    assert two_sample_pvalue(library, oracle, scale) > 1e-4
    # The second moment too: E[round(s G)^2] = s^2 + 1/12 up to terms in exp(-2 pi^2 s^2).
    moment = scale ** 2 + 1 / 12
    for draws in (library, oracle):
        assert abs(np.mean(draws.astype(float) ** 2) / moment - 1) < 6 * math.sqrt(2 / N_DRAWS)


@pytest.mark.parametrize("faults", [_FAULT_SKIP_SIGN, _FAULT_WRONG_CELLS])
def test_a_broken_sampler_is_told_apart_from_the_oracle(faults):
    # The comparison can fail: without the sign, or with the cells drawn by a
    # wrong law, the sampler's law is not the oracle's.
    oracle = inversion_draws(200_000, 1000, 41)
    assert two_sample_pvalue(draws_with_faults(200_000, 1000, 0, 42), oracle, 1000) > 1e-4
    assert two_sample_pvalue(draws_with_faults(200_000, 1000, faults, 42), oracle, 1000) < 1e-6
