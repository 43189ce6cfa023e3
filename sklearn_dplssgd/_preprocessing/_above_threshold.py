"""AboveThreshold over the fixed grid of candidates, on integers with exact noise.

The scans of :class:`~sklearn_dplssgd.DPBoundedScaler`'s
``mechanism="above_threshold"``: integer counts and an integer threshold,
each plus discrete Laplace noise drawn exactly from the fit's random words,
compared as integers. The privacy argument (Lyu, Su and Li, "Understanding
the sparse vector technique for differential privacy", PVLDB 2017, with
monotone queries and integer shifts) is in the privacy guide.
"""

import math

import numpy as np

from .._backends import DiscreteLaplaceScale, sample_discrete_laplace
from .._training import GeneratorWords

__all__ = [
    "GRID_BASE", "GRID_LARGEST", "GRID_SMALLEST", "LARGEST_NOISE_PARAMETER",
    "SMALLEST_NOISE_PARAMETER", "THRESHOLD_SHARE", "candidate_grid", "first_crossing",
    "private_range", "scan_noise", "word_source",
]

# The candidates: 0 and +-GRID_BASE**i for magnitudes from 2**-20 to 2**50
# (about 1e-6 to 1e15): a 10 percent step resolves a range finely enough for
# scaling, and the span covers physical units from micro to peta.
GRID_BASE = 1.1
GRID_SMALLEST = 2.0 ** -20
GRID_LARGEST = 2.0 ** 50
# Share of an end's epsilon spent on the threshold's noise: that noise alone
# can put the threshold above n (a scan then runs on past the data), and the
# larger query noise makes such a run end sooner.
THRESHOLD_SHARE = 2.0 / 3.0
# The discrete Laplace's parameters: at least the sampler's smallest, and at
# most 1024 (exp(-1024) is below any float; a smaller parameter is more
# noise, so capping is sound).
SMALLEST_NOISE_PARAMETER = 2.0 ** -50
LARGEST_NOISE_PARAMETER = 1024.0


def candidate_grid():
    """The fixed, data-independent candidates, increasing: 0, +-GRID_SMALLEST * GRID_BASE**i."""
    n_steps = int(math.floor(math.log(GRID_LARGEST / GRID_SMALLEST) / math.log(GRID_BASE)))
    magnitudes = GRID_SMALLEST * GRID_BASE ** np.arange(n_steps + 1)
    return np.concatenate([-magnitudes[::-1], [0.0], magnitudes])


def scan_noise(epsilon):
    """The discrete Laplace parameters of a scan at ``epsilon``: threshold's, queries'.

    ``THRESHOLD_SHARE * epsilon`` and the rest, each rounded down onto the
    sampler's rationals and capped: less than the parameter is more noise.
    """
    threshold_epsilon = THRESHOLD_SHARE * epsilon
    return tuple(DiscreteLaplaceScale.at_most(min(part, LARGEST_NOISE_PARAMETER))
                 for part in (threshold_epsilon, epsilon - threshold_epsilon))


def word_source(rng):
    """The words of a scan: a fit's generator's own stream, or a given word source."""
    return rng if hasattr(rng, "words") else GeneratorWords(rng)


def first_crossing(counts, threshold, epsilon, rng):
    """AboveThreshold: index of the first noisy count at or above the noisy threshold.

    ``counts`` (int64, sensitivity 1, monotone) and the integer ``threshold``
    get discrete Laplace noise of :func:`scan_noise`'s parameters, drawn
    exactly from the words of ``rng``: ``epsilon``-DP. Drawing every query's
    noise at once has the law of drawing it query by query. With no
    crossing, the last index: a fixed answer.
    """
    threshold_scale, query_scale = scan_noise(epsilon)
    words = word_source(rng)
    noisy_threshold = int(threshold) + int(sample_discrete_laplace(1, threshold_scale, words)[0])
    noisy_counts = counts + sample_discrete_laplace(counts.shape[0], query_scale, words)
    crossed = np.flatnonzero(noisy_counts >= noisy_threshold)
    return int(crossed[0]) if crossed.size else counts.shape[0] - 1


def private_range(values, epsilon_end, k, rng, grid=None):
    """The private lower and upper end of one feature: two AboveThreshold scans.

    The upper end scans ``grid`` (default :func:`candidate_grid`) upwards
    from zero for the first ``c`` with ``count(values <= c) >= n - k``
    (noisily), the lower end downwards from the upper end for the first
    with ``count(values >= c) >= n - k``; each at ``epsilon_end``, ``k``
    public. Equal ends are widened to the neighbouring candidate
    (post-processing). ``rng`` is the fit's generator or a word source.

    Returns
    -------
    lower, upper : float
        ``lower < upper``, both grid values.
    """
    grid = candidate_grid() if grid is None else grid
    words = word_source(rng)
    ordered = np.sort(np.asarray(values, dtype=np.float64))
    n = ordered.shape[0]
    zero = int(np.searchsorted(grid, 0.0))
    at_or_below = np.searchsorted(ordered, grid[zero:], side="right").astype(np.int64)
    high = zero + first_crossing(at_or_below, n - k, epsilon_end, words)
    at_or_above = n - np.searchsorted(ordered, grid[high::-1], side="left").astype(np.int64)
    low = high - first_crossing(at_or_above, n - k, epsilon_end, words)
    if low == high:
        # A point mass (or noise): widen to the neighbouring grid value.
        if high > zero and high + 1 < grid.shape[0]:
            high += 1
        else:
            low -= 1
    return float(grid[low]), float(grid[high])
