"""Every feature's range from one Gaussian release of coarse histograms.

The default mechanism of :class:`~sklearn_dplssgd.DPBoundedScaler`, also
used for the regressor's target range. Each learned feature's values are
counted in the bins of a fixed grid, ``0`` and ``+-2**i`` for ``i`` from -20
to 50; all features' counts are released at once with Gaussian noise drawn
exactly on a lattice; each range runs from the lowest to the highest bin
whose noisy count reaches a public threshold, or, where no bin does, the
same noisy counts summed over coarser blocks (``_ends``). A row moves one
count of each feature, so the release is one Gaussian mechanism of L2
sensitivity ``sqrt(d)`` (``sqrt(2 d)`` under replace-one), which composes
with a model's steps under PLD; its privacy argument is in the privacy
guide ("Private preprocessing" and "Exact noise").
"""

import fractions
import math

import numpy as np

from .._backends import RoundedGaussianScale, sample_rounded_gaussian
from .._training import GeneratorWords

__all__ = [
    "HISTOGRAM_BINS_PER_OCTAVE", "HISTOGRAM_GRID_BASE", "FALSE_DETECTION_RATE",
    "NOISE_SCALE_BITS", "histogram_counts", "histogram_grid", "histogram_noise_scale",
    "histogram_ranges", "detection_threshold", "noise_lattice", "noisy_histograms",
    "noise_for_rows", "rows_needed",
]

# Bins twice as wide as the one below: ends right within a factor of 2.
# Half-octaves place a dense small table's ends closer but split a sparse
# tail (UCI Adult's capital gain) into bins too thin to stand out.
HISTOGRAM_BINS_PER_OCTAVE = 1
HISTOGRAM_GRID_BASE = 2.0 ** (1.0 / HISTOGRAM_BINS_PER_OCTAVE)
_SMALLEST_EXPONENT, _LARGEST_EXPONENT = -20, 50
# The threshold is set so that, over every bin of every learned feature,
# the chance that pure noise reaches it somewhere is at most this (a bin
# far from the data that crossed would stretch a range to it).
FALSE_DETECTION_RATE = 0.01
# Bits of the rounded Gaussian's integer scale s: the noise exceeds the one
# accounted by a relative 2**-23 at most, and a count times 2**k plus the
# noise stays exact in float64 up to about 2**29 sigma rows.
NOISE_SCALE_BITS = 24


def histogram_grid(bins_per_octave=None):
    """The fixed bin edges, increasing: ``0`` and ``+-2**(i / k)``, ``i / k`` in [-20, 50].

    ``k`` bins an octave (default ``HISTOGRAM_BINS_PER_OCTAVE``). Each edge is
    a power of two times one of ``k`` fixed factors ``2**(s / k)`` (for
    ``k = 2``, the correctly rounded ``sqrt(2)``), so the octave edges are
    exact and the grid depends on ``k`` alone: public.
    """
    k = HISTOGRAM_BINS_PER_OCTAVE if bins_per_octave is None else int(bins_per_octave)
    octaves, steps = np.divmod(np.arange(_SMALLEST_EXPONENT * k, _LARGEST_EXPONENT * k + 1), k)
    factors = np.array([math.sqrt(2.0) if 2 * s == k else 2.0 ** (s / k) for s in range(k)])
    magnitudes = np.ldexp(factors[steps], octaves)
    return np.concatenate([-magnitudes[::-1], [0.0], magnitudes])


def histogram_counts(values, edges):
    """Counts of one feature in the ``len(edges) + 1`` bins of ``edges``: one count per row.

    Bin ``i`` holds the values in ``(edges[i - 1], edges[i]]``; bin 0 those
    at or below ``edges[0]``, the last bin those above ``edges[-1]``.
    """
    bins = np.searchsorted(edges, values, side="left")
    return np.bincount(bins, minlength=edges.shape[0] + 1).astype(np.float64)


def histogram_noise_scale(noise_multiplier, n_learned, neighboring):
    """Standard deviation of each count's noise, in rows, for ``GaussianDpEvent(z)``.

    ``z`` times the sensitivity unit dp-accounting reads into the event:
    ``sqrt(d)`` under add/remove, ``sqrt(2 d) / 2`` under replace-one (the
    accountant doubles it there).
    """
    unit = math.sqrt(n_learned / 2.0) if neighboring == "replace_one" else math.sqrt(n_learned)
    return noise_multiplier * unit


def detection_threshold(n_learned, n_bins):
    """How many noise scales a noisy count must reach to count as data: public.

    ``sqrt(2 ln(n_learned n_bins / FALSE_DETECTION_RATE))``: by the Gaussian
    tail and the union bound, no empty bin of any feature crosses, except
    with probability ``FALSE_DETECTION_RATE``.
    """
    return math.sqrt(2.0 * math.log(n_learned * n_bins / FALSE_DETECTION_RATE))


def _bin_span(first, last, edges):
    """The range from bin ``first`` to bin ``last`` (bin indices as in :func:`histogram_counts`)."""
    top = edges.shape[0] - 1
    low, high = max(int(first) - 1, 0), min(int(last), top)
    if low == high:  # both ends clipped to the same end of the grid
        low, high = (low - 1, high) if high == top else (low, high + 1)
    return float(edges[low]), float(edges[high])


def _blocks(n_bins, edges, width):
    """The block of ``width`` adjacent bins each bin lies in, numbered from 0 (public).

    Aligned on zero, so that blocks run between powers of two.
    """
    # Bin 1 + (index of the edge 0) is (0, smallest edge]: start at the next one.
    offsets = np.arange(n_bins) - (int(np.searchsorted(edges, 0.0)) + 2)
    blocks = offsets // width
    return blocks - blocks[0]


def _fallback_widths(n_bins):
    """The fallback's levels: blocks of 2, 4, 8, ... bins, up to the whole grid."""
    width, widths = 2, []
    while width < 2 * n_bins:
        widths.append(width)
        width *= 2
    return widths


def _crossed_span(noisy, edges, width, threshold):
    """First and last bin of the blocks of ``width`` bins that reach the threshold, or None.

    A block of ``w`` bins has noise ``sigma sqrt(w)``: it must reach
    ``threshold sqrt(w)``.
    """
    blocks = _blocks(noisy.shape[0], edges, width)
    merged = np.bincount(blocks, weights=noisy)
    # Without noise (a non-private fit) the threshold is 0: an empty block is not data.
    crossed = np.flatnonzero((merged >= threshold * math.sqrt(width)) & (merged > 0))
    if not crossed.size:
        return None
    members = np.flatnonzero((blocks == crossed[0]) | (blocks == crossed[-1]))
    return members[0], members[-1]


def _ends(noisy, sigma, edges, n_learned):
    """The range of one feature from its noisy counts (post-processing).

    The lowest and highest bin that stands out of the noise; where none
    does, the first level of :func:`_fallback_widths` at which a block of
    the same noisy counts stands out (its own union bound over every block of
    every level): wider ends, never a bin of pure noise far from the data.

    Returns
    -------
    low, high : float
        NaN where nothing stood out at any level (the caller refuses).
    detected : bool
        False where the fallback ran.
    """
    n_bins = noisy.shape[0]
    span = _crossed_span(noisy, edges, 1, sigma * detection_threshold(n_learned, n_bins))
    if span is not None:
        return (*_bin_span(*span, edges), True)
    widths = _fallback_widths(n_bins)
    n_blocks = sum(int(_blocks(n_bins, edges, width)[-1]) + 1 for width in widths)
    threshold = sigma * detection_threshold(n_learned, n_blocks)
    for width in widths:
        span = _crossed_span(noisy, edges, width, threshold)
        if span is not None:
            return (*_bin_span(*span, edges), False)
    return math.nan, math.nan, False


def noise_lattice(sigma):
    """The release's lattice, from ``sigma`` alone: counts times ``2**k``, noise ``round(s G)``.

    The integer ``s`` has :data:`NOISE_SCALE_BITS` bits and ``s / 2**k`` is at
    least ``sigma`` (by a relative margin of ``2**-45`` that covers the float
    error in ``sigma``): never below the noise accounted, above it by a
    relative ``2**-(NOISE_SCALE_BITS - 1)`` at most.

    Returns
    -------
    k : int
    scale : RoundedGaussianScale
        ``s``.
    """
    if not 0.0 < sigma <= 2.0 ** 51:
        raise ValueError(
            f"The histogram's noise scale ({sigma:.3g} rows) is beyond the exact sampler's "
            "range (2**51 rows): the 'epsilon' is far too small for any range to stand out.")
    k = max(0, NOISE_SCALE_BITS - math.frexp(sigma)[1])
    needed = fractions.Fraction(sigma) * 2 ** k * (1 + fractions.Fraction(1, 2 ** 45))
    return k, RoundedGaussianScale(math.ceil(needed))


def noisy_histograms(X, noise_multiplier, neighboring, rng):
    """The release: every column's counts on the grid, with exact rounded Gaussian noise.

    Each count ``c`` is released as ``(c 2**k + round(s G)) / 2**k``
    (:func:`noise_lattice`), the noise drawn from the words of ``rng``; the
    float is that integer over ``2**k``, correctly rounded. Without noise
    (``noise_multiplier`` 0, a non-private fit) the counts themselves.

    Returns
    -------
    noisy : ndarray of shape (n_learned, n_edges + 1)
        One row of noisy bin counts per column of ``X``.
    """
    edges = histogram_grid()
    sigma = histogram_noise_scale(noise_multiplier, X.shape[1], neighboring)
    counts = np.stack([histogram_counts(X[:, j], edges) for j in range(X.shape[1])])
    if sigma == 0.0:
        return counts
    k, scale = noise_lattice(sigma)
    noise = sample_rounded_gaussian(counts.size, scale, GeneratorWords(rng)).reshape(
        counts.shape)
    if k == 0:
        # The integer sum first (|noise| < 2**58), then one rounding to float.
        return (counts.astype(np.int64) + noise).astype(np.float64)
    # Here s < 2**24: noise / 2**k is exact (|noise| < 2**30), and the float
    # sum is the lattice value c 2**k + noise over 2**k, rounded once.
    return counts + np.ldexp(noise.astype(np.float64), -k)


def histogram_ranges(X, noise_multiplier, neighboring, rng):
    """The lower and upper end of every column of ``X``, from one Gaussian release.

    Parameters
    ----------
    X : ndarray of shape (n_samples, n_learned)
        The learned features' values (finite).
    noise_multiplier : float
        ``z`` of the release's ``GaussianDpEvent``.
    neighboring : {"replace_one", "add_remove"}
    rng : numpy.random.Generator
        The fit's generator: its words draw the noise.

    Returns
    -------
    lower, upper : ndarray of shape (n_learned,)
        Grid values, ``lower < upper``; NaN for a column of which nothing
        stood out at any level.
    detected : ndarray of bool, shape (n_learned,)
        False for a column whose range comes from the coarser levels (or is NaN).
    """
    edges = histogram_grid()
    noisy = noisy_histograms(X, noise_multiplier, neighboring, rng)
    sigma = histogram_noise_scale(noise_multiplier, X.shape[1], neighboring)
    lower, upper = np.empty(X.shape[1]), np.empty(X.shape[1])
    detected = np.empty(X.shape[1], dtype=bool)
    for j in range(X.shape[1]):
        lower[j], upper[j], detected[j] = _ends(noisy[j], sigma, edges, X.shape[1])
    return lower, upper, detected


def noise_for_rows(n_rows, n_learned, neighboring):
    """The largest ``z`` at which a bin of ``n_rows`` rows reaches the threshold (public)."""
    return n_rows / rows_needed(1.0, n_learned, neighboring)


def rows_needed(noise_multiplier, n_learned, neighboring):
    """Rows a bin needs to stand out of the noise: the detection threshold, in rows."""
    sigma = histogram_noise_scale(noise_multiplier, n_learned, neighboring)
    return sigma * detection_threshold(n_learned, histogram_grid().shape[0] + 1)
