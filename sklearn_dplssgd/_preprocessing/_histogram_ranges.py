"""Every feature's range from one Gaussian release of coarse histograms.

The second mechanism of :class:`~sklearn_dplssgd.DPBoundedScaler`
(``mechanism="gaussian_histogram"``). Each learned feature's values are
counted in the bins of a fixed, data-independent grid that grows by a
factor of 2 in both directions from zero (``0, +-2**i`` for ``i`` from -20
to 50, the span of the AboveThreshold grid; ``histogram_grid(k)`` is the
grid of ``k`` bins an octave, for screens); all
features' counts are released at once with Gaussian noise; each feature's
range runs from the lowest to the highest bin whose noisy count reaches a
public threshold. Where no bin of a feature reaches it, the same noisy
counts summed over coarser blocks of bins give the range (``_ends``).

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
concatenated counts is the Gaussian mechanism; it is drawn exactly on
integers (:func:`noise_lattice`): each count scaled by a public ``2**k``
plus ``round(s G)``, ``s`` a public integer with ``s / 2**k >= sigma``,
which is ``round(c 2**k + s G)``, a post-processing of the Gaussian
mechanism with at least the noise accounted (a Gaussian mechanism with more
noise is at least as private), and no floating-point draw whose low bits
could tell the counts. The release is recorded as
``GaussianDpEvent(z)``, which dp-accounting reads as noise ``z`` times the
add/remove sensitivity and, under replace-one, a shift of twice that: the
noise is ``sigma = z * sqrt(d)`` under add/remove and ``z * sqrt(d / 2)``
under replace-one, so that the accountant's shift is the true one in both.
``z`` is calibrated from the scaler's epsilon and delta alone; the grid and
the threshold depend only on the grid size and ``d``; the ends, and the
fallback's merged counts, are a function of the noisy counts
(post-processing). The grid's width changes none of this: however many bins
there are, a row moves one count per feature, so the sensitivity, the noise
and the event are the same at any grid; only the threshold's union bound
counts the bins (a public number). Nothing depends on the
number of rows, so the mechanism needs no public row count under
add/remove.
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

    ``k`` bins an octave (``HISTOGRAM_BINS_PER_OCTAVE``, 1 by default: the
    edges are the powers of 2). Every edge is a power of two times one of
    ``k`` fixed factors ``2**(s / k)``, ``s < k`` (for ``k = 2``: 1 and the
    correctly rounded ``sqrt(2)``), so the octave edges are exact powers of
    two and the grid depends on ``k`` alone: public.

    Parameters
    ----------
    bins_per_octave : int, optional
        ``k``; ``HISTOGRAM_BINS_PER_OCTAVE`` when None.

    Returns
    -------
    edges : ndarray of float64
    """
    k = HISTOGRAM_BINS_PER_OCTAVE if bins_per_octave is None else int(bins_per_octave)
    octaves, steps = np.divmod(np.arange(_SMALLEST_EXPONENT * k, _LARGEST_EXPONENT * k + 1), k)
    factors = np.array([math.sqrt(2.0) if 2 * s == k else 2.0 ** (s / k) for s in range(k)])
    magnitudes = np.ldexp(factors[steps], octaves)
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


def _bin_span(first, last, edges):
    """The range from bin ``first`` to bin ``last`` (bin indices as in :func:`histogram_counts`)."""
    top = edges.shape[0] - 1
    low, high = max(int(first) - 1, 0), min(int(last), top)
    if low == high:  # both ends clipped to the same end of the grid
        low, high = (low - 1, high) if high == top else (low, high + 1)
    return float(edges[low]), float(edges[high])


def _blocks(n_bins, edges, width):
    """The block of ``width`` adjacent bins that each bin lies in, numbered from 0.

    Blocks are aligned on zero (no block straddles it except where a
    block is wider than a side) and depend on the grid alone: public.
    """
    # Bin 1 + (index of the edge 0) is (0, smallest edge]: start the blocks
    # at the next one, so that they run between powers of two.
    offsets = np.arange(n_bins) - (int(np.searchsorted(edges, 0.0)) + 2)
    blocks = offsets // width
    return blocks - blocks[0]


def _n_blocks(n_bins, edges, widths):
    """How many blocks the levels of ``widths`` test together: the union bound's count."""
    return sum(int(_blocks(n_bins, edges, width)[-1]) + 1 for width in widths)


def _fallback_widths(n_bins):
    """The fallback's levels: blocks of 2, 4, 8, ... bins, up to the whole grid."""
    width, widths = 2, []
    while width < 2 * n_bins:
        widths.append(width)
        width *= 2
    return widths


def _crossed_span(noisy, edges, widths, threshold):
    """First and last bin of the blocks, over levels ``widths``, that reach the threshold.

    A block of ``w`` bins has noise ``sigma sqrt(w)``: it must reach
    ``threshold sqrt(w)`` (``threshold`` in noise scales of one bin times
    ``sigma``). None where no block does.
    """
    first, last = None, None
    for width in widths:
        blocks = _blocks(noisy.shape[0], edges, width)
        merged = np.bincount(blocks, weights=noisy)
        # A block must hold a row: without noise (z = 0, a non-private fit)
        # the threshold is 0, and an empty block is not data.
        crossed = np.flatnonzero((merged >= threshold * math.sqrt(width)) & (merged > 0))
        if crossed.size:
            members = np.flatnonzero((blocks == crossed[0]) | (blocks == crossed[-1]))
            first = members[0] if first is None else min(first, members[0])
            last = members[-1] if last is None else max(last, members[-1])
    return None if first is None else (first, last)


def _ends(noisy, sigma, edges, n_learned):
    """The range of one feature from its noisy counts (post-processing).

    The ends are the lowest and highest bin that stands out of the noise
    (the threshold a union bound over every bin of every feature). Where
    none does (too few rows a bin against the noise), the fallback sums the
    same noisy counts over blocks of 2, 4, 8, ... adjacent bins (its own
    union bound over every block of every level) and takes the first level
    at which a block stands out: wider ends, never a bin of pure noise far
    from the data. Where nothing stands out at any level, there is no range
    (NaN ends): the caller refuses rather than guess one.

    Returns
    -------
    low, high : float
        NaN where nothing stood out at any level.
    detected : bool
        False where the fallback ran.
    """
    n_bins = noisy.shape[0]
    span = _crossed_span(noisy, edges, (1,), sigma * detection_threshold(n_learned, n_bins))
    if span is not None:
        return (*_bin_span(*span, edges), True)
    widths = _fallback_widths(n_bins)
    threshold = sigma * detection_threshold(n_learned, _n_blocks(n_bins, edges, widths))
    for width in widths:
        span = _crossed_span(noisy, edges, (width,), threshold)
        if span is not None:
            return (*_bin_span(*span, edges), False)
    return math.nan, math.nan, False


def noise_lattice(sigma):
    """The exact release's lattice: counts times ``2**k``, noise ``round(s G)``, public.

    ``k`` and the integer ``s`` are chosen from ``sigma`` alone so that ``s``
    has :data:`NOISE_SCALE_BITS` bits and ``s / 2**k`` is at least ``sigma``
    (by a relative margin of ``2**-45`` that covers the float error in
    ``sigma``, and by the rounding up): the noise is never below the one
    accounted, and exceeds it by a relative ``2**-(NOISE_SCALE_BITS - 1)`` at
    most.

    Parameters
    ----------
    sigma : float
        The noise's standard deviation in rows (> 0, at most ``2**51``).

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
    (:func:`noise_lattice`): ``c 2**k + round(s G) = round(c 2**k + s G)``,
    a post-processing of the Gaussian mechanism of standard deviation
    ``s / 2**k >= sigma`` rows on the counts, whose integer noise is drawn
    exactly from the words of ``rng``. The float returned is that integer
    over ``2**k``, rounded correctly (exact below ``2**53``): a function of
    the integer alone. Without noise (``noise_multiplier`` 0, a non-private
    fit) the counts themselves.

    Parameters
    ----------
    X : ndarray of shape (n_samples, n_learned)
        The learned features' values (finite).
    noise_multiplier : float
        ``z`` of the release's ``GaussianDpEvent`` (> 0).
    neighboring : {"replace_one", "add_remove"}
    rng : numpy.random.Generator
        The fit's generator: its words draw the noise.

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
        ``lower < upper``, both grid values; both NaN for a column of which
        nothing stood out at any level (see ``_ends``).
    detected : ndarray of bool, shape (n_learned,)
        False for a column none of whose bins reached the threshold: its
        range comes from the coarser levels' merged counts, or is NaN.
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
    """The largest ``z`` at which a bin of ``n_rows`` rows reaches the detection threshold.

    The inverse of :func:`rows_needed` in ``z``: public quantities only
    (a public row count, ``d``, the grid).
    """
    return n_rows / rows_needed(1.0, n_learned, neighboring)


def rows_needed(noise_multiplier, n_learned, neighboring):
    """Rows a bin needs to stand out of the noise: the detection threshold, in rows."""
    sigma = histogram_noise_scale(noise_multiplier, n_learned, neighboring)
    return sigma * detection_threshold(n_learned, histogram_grid().shape[0] + 1)
