"""Every feature's range from one Gaussian release of coarse histograms.

The second mechanism of :class:`~sklearn_dplssgd.DPBoundedScaler`
(``mechanism="gaussian_histogram"``). Each learned feature's values are
counted in the bins of a fixed, data-independent grid that grows by a
factor of 2 in both directions from zero (``0, +-2**i`` for ``i`` from -20
to 50, the span of the AboveThreshold grid); all features' counts are
released at once with Gaussian noise; each feature's range runs from the
lowest to the highest bin whose noisy count reaches a public threshold.

Why. AboveThreshold spends a pure epsilon on each of the ``2 d`` ends and
the ends add up by basic composition. Here a row moves exactly one count of
each feature, so the whole release has the L2 sensitivity ``sqrt(d)`` of a
row (``sqrt(2 d)`` when a row is replaced: one count down and one up per
feature), and it is one Gaussian mechanism: its privacy loss composes with
the model's subsampled Gaussian steps under the PLD accountant, in
quadrature rather than by adding epsilons. Ends right within a factor of 2
are enough for scaling (a range twice too wide halves the signal; one half
too narrow clips the top of a feature).

Privacy. The counts of a learned feature form a vector in which one row
adds 1 to one entry (add/remove neighbours: L2 change 1 per feature, at
most ``sqrt(d)`` over ``d`` features) or moves 1 from one entry to another
(replace-one: at most ``sqrt(2 d)``). Adding ``N(0, sigma**2 I)`` to the
concatenated counts is the Gaussian mechanism. The release is recorded as
``GaussianDpEvent(z)``, which dp-accounting reads as noise ``z`` times the
add/remove sensitivity and, under replace-one, a shift of twice that: the
noise is ``sigma = z * sqrt(d)`` under add/remove and ``z * sqrt(d / 2)``
under replace-one, so that the accountant's shift is the true one in both.
``z`` is calibrated from the scaler's epsilon and delta alone; the grid and
the threshold depend only on the grid size and ``d``; the ends are a
function of the noisy counts (post-processing). Nothing depends on the
number of rows, so the mechanism needs no public row count under
add/remove.
"""

import math

import numpy as np

__all__ = [
    "HISTOGRAM_GRID_BASE", "FALSE_DETECTION_RATE", "histogram_counts", "histogram_grid",
    "histogram_noise_scale", "histogram_ranges", "detection_threshold", "noisy_histograms",
    "noise_for_rows", "rows_needed",
]

# Bins twice as wide as the one below: ends right within a factor of 2.
HISTOGRAM_GRID_BASE = 2.0
_SMALLEST_EXPONENT, _LARGEST_EXPONENT = -20, 50
# The threshold is set so that, over every bin of every learned feature,
# the chance that pure noise reaches it somewhere is at most this (a bin
# far from the data that crossed would stretch a range to it).
FALSE_DETECTION_RATE = 0.01


def histogram_grid():
    """The fixed bin edges, increasing: ``-2**50 .. -2**-20, 0, 2**-20 .. 2**50``.

    Returns
    -------
    edges : ndarray of float64
    """
    magnitudes = HISTOGRAM_GRID_BASE ** np.arange(_SMALLEST_EXPONENT, _LARGEST_EXPONENT + 1,
                                                  dtype=np.float64)
    return np.concatenate([-magnitudes[::-1], [0.0], magnitudes])


def histogram_counts(values, edges):
    """Counts of one feature in the bins of ``edges``: one count per row.

    Bin ``i`` (``1 <= i < len(edges)``) holds the values in
    ``(edges[i - 1], edges[i]]``; bin 0 the values at or below
    ``edges[0]``, the last bin those above ``edges[-1]``.

    Parameters
    ----------
    values : ndarray of shape (n_samples,)
    edges : ndarray of shape (n_edges,)

    Returns
    -------
    counts : ndarray of float64, shape (n_edges + 1,)
    """
    bins = np.searchsorted(edges, values, side="left")
    return np.bincount(bins, minlength=edges.shape[0] + 1).astype(np.float64)


def histogram_noise_scale(noise_multiplier, n_learned, neighboring):
    """Standard deviation of each count's noise, in rows.

    ``z`` times the sensitivity unit that ``GaussianDpEvent(z)`` means to
    dp-accounting: ``sqrt(d)`` under add/remove, ``sqrt(2 d) / 2`` under
    replace-one (the accountant doubles it there).

    Parameters
    ----------
    noise_multiplier : float
    n_learned : int
        Features whose counts are released.
    neighboring : {"replace_one", "add_remove"}

    Returns
    -------
    sigma : float
    """
    unit = math.sqrt(n_learned / 2.0) if neighboring == "replace_one" else math.sqrt(n_learned)
    return noise_multiplier * unit


def detection_threshold(n_learned, n_bins):
    """How many noise scales a noisy count must reach to count as data: public.

    ``sqrt(2 ln(n_learned n_bins / FALSE_DETECTION_RATE))``: a standard
    normal exceeds ``t`` with probability below ``exp(-t**2 / 2)``, so by
    the union bound no empty bin of any feature crosses, except with
    probability ``FALSE_DETECTION_RATE``.

    Parameters
    ----------
    n_learned : int
    n_bins : int

    Returns
    -------
    t : float
    """
    return math.sqrt(2.0 * math.log(n_learned * n_bins / FALSE_DETECTION_RATE))


def _ends(noisy, threshold, edges):
    """Lowest and highest bin at or above ``threshold`` as a range (post-processing)."""
    crossed = np.flatnonzero(noisy >= threshold)
    if crossed.size == 0:
        # Nothing stands out of the noise: the bin with the largest noisy count.
        crossed = np.array([int(np.argmax(noisy))])
    last = edges.shape[0] - 1
    low, high = max(int(crossed[0]) - 1, 0), min(int(crossed[-1]), last)
    if low == high:  # both ends clipped to the same end of the grid
        low, high = (low - 1, high) if high == last else (low, high + 1)
    return float(edges[low]), float(edges[high])


def noisy_histograms(X, noise_multiplier, neighboring, rng):
    """The release: every column's counts on the grid, with Gaussian noise.

    Parameters
    ----------
    X : ndarray of shape (n_samples, n_learned)
        The learned features' values (finite).
    noise_multiplier : float
        ``z`` of the release's ``GaussianDpEvent`` (> 0).
    neighboring : {"replace_one", "add_remove"}
    rng : numpy.random.Generator

    Returns
    -------
    noisy : ndarray of shape (n_learned, n_edges + 1)
        One row of noisy bin counts per column of ``X``.
    """
    edges = histogram_grid()
    sigma = histogram_noise_scale(noise_multiplier, X.shape[1], neighboring)
    counts = np.stack([histogram_counts(X[:, j], edges) for j in range(X.shape[1])])
    return counts + rng.normal(0.0, sigma, counts.shape)


def histogram_ranges(X, noise_multiplier, neighboring, rng):
    """The lower and upper end of every column of ``X``, from one Gaussian release.

    Each range runs from the lowest to the highest bin whose noisy count
    reaches ``detection_threshold`` noise scales (post-processing of
    :func:`noisy_histograms`).

    Parameters
    ----------
    X : ndarray of shape (n_samples, n_learned)
        The learned features' values (finite).
    noise_multiplier : float
        ``z`` of the release's ``GaussianDpEvent`` (> 0).
    neighboring : {"replace_one", "add_remove"}
    rng : numpy.random.Generator

    Returns
    -------
    lower, upper : ndarray of shape (n_learned,)
        ``lower < upper``, both grid values.
    """
    edges = histogram_grid()
    noisy = noisy_histograms(X, noise_multiplier, neighboring, rng)
    threshold = rows_needed(noise_multiplier, X.shape[1], neighboring)
    lower, upper = np.empty(X.shape[1]), np.empty(X.shape[1])
    for j in range(X.shape[1]):
        lower[j], upper[j] = _ends(noisy[j], threshold, edges)
    return lower, upper


def noise_for_rows(n_rows, n_learned, neighboring):
    """The largest ``z`` at which a bin of ``n_rows`` rows reaches the detection threshold.

    The inverse of :func:`rows_needed` in ``z``: public quantities only
    (a public row count, ``d``, the grid).
    """
    return n_rows / rows_needed(1.0, n_learned, neighboring)


def rows_needed(noise_multiplier, n_learned, neighboring):
    """Rows a bin needs to stand out of the noise: the detection threshold, in rows."""
    sigma = histogram_noise_scale(noise_multiplier, n_learned, neighboring)
    return sigma * detection_threshold(n_learned, histogram_grid().shape[0] + 1)
