"""AboveThreshold over the fixed grid of candidates, on integers with exact noise.

The scans of :class:`~sklearn_dplssgd.DPBoundedScaler`'s
``mechanism="above_threshold"`` (its module docstring gives the method and
the privacy argument): integer counts and an integer threshold, each plus
discrete Laplace noise drawn exactly from the fit's random words, compared
as integers.
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
# (about 1e-6 to 1e15), 1017 values. A 10 percent step resolves a range
# finely enough for scaling; the span covers physical units from micro to
# peta. Values beyond the span are clipped to its ends.
GRID_BASE = 1.1
GRID_SMALLEST = 2.0 ** -20
GRID_LARGEST = 2.0 ** 50
# Share of an end's epsilon spent on the threshold's noise (the rest on the
# queries').
THRESHOLD_SHARE = 2.0 / 3.0
# The discrete Laplace's parameters: at least the sampler's smallest (a
# query noise scale below 2**50), and capped at 1024 (exp(-1024) is below
# any float: a larger parameter adds no accuracy, and a smaller one is
# always sound, more noise).
SMALLEST_NOISE_PARAMETER = 2.0 ** -50
LARGEST_NOISE_PARAMETER = 1024.0


def candidate_grid():
    """The fixed, data-independent candidates of the private range, increasing.

    Returns
    -------
    grid : ndarray of float64
        ``-GRID_LARGEST .. -GRID_SMALLEST, 0, GRID_SMALLEST .. GRID_LARGEST``,
        with consecutive magnitudes in the ratio ``GRID_BASE``.
    """
    n_steps = int(math.floor(math.log(GRID_LARGEST / GRID_SMALLEST) / math.log(GRID_BASE)))
    magnitudes = GRID_SMALLEST * GRID_BASE ** np.arange(n_steps + 1)
    return np.concatenate([-magnitudes[::-1], [0.0], magnitudes])


def scan_noise(epsilon):
    """The discrete Laplace parameters of a scan at ``epsilon``: threshold's, queries'.

    ``eps1 = THRESHOLD_SHARE * epsilon`` and ``eps2 = epsilon - eps1`` (exact:
    ``eps1`` lies within a factor 2 of ``epsilon``), each rounded down onto
    the sampler's rationals and capped at ``LARGEST_NOISE_PARAMETER``: a
    smaller parameter is more noise, so the scan stays ``epsilon``-DP.
    """
    threshold_epsilon = THRESHOLD_SHARE * epsilon
    return tuple(DiscreteLaplaceScale.at_most(min(part, LARGEST_NOISE_PARAMETER))
                 for part in (threshold_epsilon, epsilon - threshold_epsilon))


def word_source(rng):
    """The words of a scan: a fit's generator's own stream, or a given word source."""
    return rng if hasattr(rng, "words") else GeneratorWords(rng)


def first_crossing(counts, threshold, epsilon, rng):
    """AboveThreshold: index of the first noisy count at or above the noisy threshold.

    ``counts`` (int64) are the scan's queries in order (sensitivity 1,
    monotone) and ``threshold`` an integer. Threshold noise and query noise
    are discrete Laplace of parameters ``eps1 = THRESHOLD_SHARE * epsilon``
    and ``eps2 = epsilon - eps1`` (:func:`_scan_noise`), drawn exactly from
    the words of ``rng``, and every comparison is between integers:
    ``epsilon``-DP for monotone queries (Lyu, Su and Li 2017, with integer
    shifts; see the privacy guide). Drawing every query's noise at once is
    the same distribution as drawing it query by query (the noise after the
    stop is unused). A scan with no crossing returns the last index: a fixed
    answer, part of the mechanism's output.
    """
    threshold_scale, query_scale = scan_noise(epsilon)
    words = word_source(rng)
    noisy_threshold = int(threshold) + int(sample_discrete_laplace(1, threshold_scale, words)[0])
    noisy_counts = counts + sample_discrete_laplace(counts.shape[0], query_scale, words)
    crossed = np.flatnonzero(noisy_counts >= noisy_threshold)
    return int(crossed[0]) if crossed.size else counts.shape[0] - 1


def private_range(values, epsilon_end, k, rng, grid=None):
    """The private lower and upper end of one feature.

    Each end is one AboveThreshold scan at ``epsilon_end`` over
    ``candidate_grid``: the upper end scans upwards from zero for the
    first candidate ``c`` with ``count(values <= c) >= n - k`` (noisily), the
    lower end downwards from the upper end for the first with
    ``count(values >= c) >= n - k``. A feature whose ``k``-th largest value
    is not positive thus gets the upper end 0. If both ends are the same
    candidate, the range becomes the grid interval below it (above it for
    a candidate above zero); post-processing. The counts and the threshold
    are integers and the noise integer discrete Laplace, sampled exactly.

    Parameters
    ----------
    values : ndarray of shape (n_samples,)
        One feature's values (finite).
    epsilon_end : float
        Epsilon of each end.
    k : int
        Rows to leave outside each end (public: :func:`tail_count`).
    rng : numpy.random.Generator or object with ``words(count)``
        The fit's generator (its words draw the noise), or a word source.
    grid : ndarray or None
        The candidates (default ``candidate_grid``).

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
    upwards = grid[zero:]
    at_or_below = np.searchsorted(ordered, upwards, side="right").astype(np.int64)
    high = zero + first_crossing(at_or_below, n - k, epsilon_end, words)
    downwards = grid[high::-1]
    at_or_above = n - np.searchsorted(ordered, downwards, side="left").astype(np.int64)
    low = high - first_crossing(at_or_above, n - k, epsilon_end, words)
    if low == high:
        # A point mass (or noise): widen to the neighbouring grid value.
        if high > zero and high + 1 < grid.shape[0]:
            high += 1
        else:
            low -= 1
    return float(grid[low]), float(grid[high])
