"""The clipped per-sample gradients rounded onto a public grid and summed as integers (Numba).

The exact-noise mode releases a function of an integer vector: each sampled
row's clipped gradient ``c_i = r_i [x_i, b]`` (``||c_i|| <= C``, ``b`` the
intercept term) is divided by the public grid step ``gamma = 2**-k C`` and
rounded to the nearest integer, coordinate by coordinate, *per row*; the rows'
integer vectors ``n_i`` are summed in int64, and the exact integer noise
is added to that sum. Neighbouring datasets then give sums that differ by one
row's ``n_i``, whose norm is at most ``||c_i / gamma|| + sqrt(D) / 2 <= 2**k +
sqrt(D) / 2`` for ``D`` coordinates (each coordinate moves by at most 1/2).
Rounding the *sum* instead would not be bounded by one row.

:func:`grid_norm_bound` is that bound, squared and rounded up to an integer
(with a relative slack of ``2**-30`` for the float64 evaluation of
``c_i / gamma``), and it is enforced, not assumed: the kernel computes each
row's ``||n_i||**2`` exactly and leaves out any row above the bound (a row
whose clipped values are not finite included), so the sensitivity in grid
units is ``sqrt(grid_norm_bound(k, D))`` whatever the floats did. The
integers are held in float64 where that is exact (below ``2**53``, argued in
:func:`_add_rounded_rows`), so that the rounding, the norm and the sum run on
vectors, and moved into int64 for the sum.

Overflow is impossible by construction: every entry of an accepted ``n_i``
is at most ``2**24 + 2**16`` in magnitude (``k <= MAX_GRID_BITS``,
``D < 2**32``), a batch has at most :data:`MAX_BATCH_ROWS` rows (checked), so
every coordinate of the sum stays below ``2**61`` in magnitude, and the
noise below ``2**62`` (the discrete Gaussian's proposals are limited there;
the rounded Gaussian's draws stay below ``2**42``): their sum fits int64.
"""

import math

import numpy as np
from numba import njit

__all__ = [
    "MAX_BATCH_ROWS",
    "MAX_GRID_BITS",
    "add_rounded_rows",
    "grid_norm_bound",
    "rounded_clipped_sum",
]

# The grid step is gamma = 2**-k C with 0 <= k <= MAX_GRID_BITS.
MAX_GRID_BITS = 24
# At most this many rows in one sum: 2**36 rows times entries below 2**25 stay
# below 2**61 (an array of 2**36 rows of one float64 each is 512 GiB).
MAX_BATCH_ROWS = 2 ** 36
_MAX_COORDINATES = 2 ** 32


def _check_grid(grid_bits, n_coordinates):
    if isinstance(grid_bits, bool) or not isinstance(grid_bits, (int, np.integer)) or not (
            0 <= grid_bits <= MAX_GRID_BITS):
        raise ValueError(f"grid_bits must be an integer in [0, {MAX_GRID_BITS}].")
    if isinstance(n_coordinates, bool) or not isinstance(n_coordinates, (int, np.integer)) or not (
            1 <= n_coordinates < _MAX_COORDINATES):
        raise ValueError("n_coordinates must be an integer in [1, 2**32).")


def grid_norm_bound(grid_bits, n_coordinates):
    """An integer ``B`` with ``||n_i||**2 <= B`` for every row's rounded contribution.

    ``B >= (2**k (1 + 2**-30) + sqrt(D) / 2)**2``, computed with integers
    only: ``4**k (1 + 2**-30)**2 <= 4**k + 2**(2k - 29) + 1``, the cross term
    ``2**k sqrt(D) (1 + 2**-30) <= ceil(sqrt(4**k D)) + ceil(sqrt(4**k D) / 2**30)``,
    and ``D / 4 <= ceil(D / 4)``.

    Parameters
    ----------
    grid_bits : int
        ``k``: the grid step is ``2**-k`` times the clip norm.
    n_coordinates : int
        ``D``: the coordinates of one contribution, ``K (d + 1)`` with an
        intercept, ``K d`` without.

    Returns
    -------
    int
        The bound, in squared grid units (the sensitivity under add/remove is
        its square root).
    """
    _check_grid(grid_bits, n_coordinates)
    k, dimension = int(grid_bits), int(n_coordinates)
    cross = math.isqrt(4 ** k * dimension)
    if cross * cross < 4 ** k * dimension:
        cross += 1
    return (4 ** k + (2 ** (2 * k) >> 29) + 1 + cross + -(-cross // 2 ** 30)
            + -(-dimension // 4))


def rounded_clipped_sum(rows, clipped_residuals, clip_norm, grid_bits, intercept_term=1.0):
    """``sum_i n_i``: each row's clipped gradient on the grid ``2**-k clip_norm``, in int64.

    Parameters
    ----------
    rows : ndarray of shape (b, d), float32 or float64
        The sampled rows.
    clipped_residuals : ndarray of shape (b, K), float64
        The residuals already clipped: ``||r_i|| sqrt(||x_i||**2 + intercept_term**2)
        <= clip_norm``.
    clip_norm : float
        ``C``, positive.
    grid_bits : int
        ``k``, in ``[0, MAX_GRID_BITS]``.
    intercept_term : float, default=1.0
        The intercept's column value; 0 for a model without intercept (its
        column of the sum is then 0 and not counted in ``D``).

    Returns
    -------
    total : ndarray of int64, shape (K, d + 1)
        The integer sum; the last column is the intercept's.
    n_left_out : int
        Rows whose rounded contribution exceeded :func:`grid_norm_bound` (or
        were not finite) and were left out: 0 unless the clip failed.
    """
    n_rows, n_features = rows.shape
    n_outputs = clipped_residuals.shape[1]
    if clipped_residuals.shape[0] != n_rows:
        raise ValueError("rows and clipped_residuals must have the same number of rows.")
    if not (math.isfinite(clip_norm) and clip_norm > 0):
        raise ValueError("clip_norm must be a positive finite number.")
    # The design rows [x_i, b] in float64 (a float32 row converts exactly).
    design = np.empty((n_rows, n_features + 1), dtype=np.float64)
    design[:, :n_features] = rows
    design[:, n_features] = intercept_term
    scaled = np.ascontiguousarray(clipped_residuals, dtype=np.float64) * (
        2.0 ** grid_bits / float(clip_norm))
    total = np.zeros((n_outputs, n_features + 1), dtype=np.int64)
    left_out = add_rounded_rows(design, scaled, grid_bits, intercept_term != 0, 0, n_rows,
                                total)
    return total, int(left_out)


def add_rounded_rows(design, scaled_residuals, grid_bits, with_intercept, start, stop, total):
    """Add rows ``start .. stop - 1``'s rounded contributions to ``total``; how many were left out.

    The compiled core of :func:`rounded_clipped_sum` and of the exact mode's
    steps: row ``i`` contributes ``n_i[k, j] = rint(scaled_residuals[i, k] *
    design[i, j])`` (round half to even) if ``||n_i||**2 <= grid_norm_bound(k, D)``
    exactly, and nothing otherwise.

    Parameters
    ----------
    design : ndarray of shape (b, d + 1), float32 or float64
        The rows with the intercept's column (0 without an intercept).
    scaled_residuals : ndarray of shape (b, K), float64
        The clipped residuals times ``2**k / C`` (the product formed once,
        as ``rint(r * (2**k / C) * x)`` rounds it).
    grid_bits : int
    with_intercept : bool
        Whether the intercept's column counts in ``D``.
    start, stop : int
    total : ndarray of int64, shape (K, d + 1)
        Added to in place.
    """
    n_rows = stop - start
    if n_rows > MAX_BATCH_ROWS:
        raise ValueError("a batch of more than 2**36 rows could overflow the integer sum.")
    n_outputs, width = scaled_residuals.shape[1], design.shape[1]
    dimension = n_outputs * (width if with_intercept else width - 1)
    bound = grid_norm_bound(grid_bits, dimension)
    # The quick test of a row's norm (see _add_rounded_rows) where its
    # rounding errors are small enough: 0 turns it off.
    quick_limit = (4.0 ** grid_bits * (1.0 + 2.0 ** -31)
                   if 2 * n_outputs + 2 * width + 1 <= 2 ** 19 else 0.0)
    return _add_rounded_rows(design, scaled_residuals, float(bound), quick_limit, int(start),
                             int(stop), np.zeros(total.shape, dtype=np.float64), total)


# Rows added into the float64 partial sum before it is moved into the int64
# total: entries of accepted rows are below 2**25 in magnitude, so 2**20 rows
# keep every partial sum below 2**45, where float64 holds integers exactly.
_ROWS_PER_FLUSH = 2 ** 20


@njit(cache=True, nogil=True, fastmath={"reassoc"})
def _squared_rounded_norm(x, s):
    """``sum_j rint(s x_j)**2`` in float64 (see :func:`_add_rounded_rows` for why it is exact).

    Reassociated so that it runs on vectors: a sum of non-negative integers
    is the same in any order while it stays below 2**53. Only a sum is
    reassociated here (the product ``s x_j`` is one rounding in any order).
    """
    squared = 0.0
    for j in range(x.shape[0]):
        entry = np.rint(s * np.float64(x[j]))
        squared += entry * entry
    return squared


@njit(cache=True, nogil=True, fastmath={"reassoc"})
def _squared_norm(x):
    """``sum_j x_j**2`` in float64, in any order (a sum of non-negative terms)."""
    squared = 0.0
    for j in range(x.shape[0]):
        value = np.float64(x[j])
        squared += value * value
    return squared


@njit(cache=True, nogil=True, fastmath={"reassoc"})
def _add_rounded(x, s, partial):
    """``partial[j] += rint(s x_j)``: sums of integers below 2**53, exact in any order."""
    for j in range(x.shape[0]):
        partial[j] += np.rint(s * np.float64(x[j]))


@njit(cache=True, nogil=True)
def _add_rounded_rows(design, scaled, bound, quick_limit, start, stop, partial, total):
    """The rows' rounded contributions added to ``total``; the number left out.

    The quick test first: a row whose computed ``||s||**2 ||x||**2`` (``s``
    its scaled residuals, ``x`` its design row) is at most ``quick_limit =
    4**k (1 + 2**-31)`` is kept without rounding it twice. Each of the ``m <=
    2 K + 2 (d + 1) + 1`` float64 operations behind that number (squares, sums
    in any order, the product) errs by a relative ``2**-53`` at most, so with
    ``m <= 2**19`` (else the test is off) the exact ``||v||**2`` is at most
    ``4**k (1 + 2**-31) (1 + 2**-32)``; the products ``s_k x_j`` as computed
    are within ``2**-53`` of the exact ones, so their norm is at most
    ``2**k (1 + 2**-30)``, and Lemma 1 bounds the rounded row by ``2**k (1 +
    2**-30) + sqrt(D) / 2 <= sqrt(bound)``: the row is one the exact check
    keeps. (A subnormal square or product errs by ``2**-1075`` absolutely
    instead: times the largest finite factor and ``2**19`` terms, less than
    ``3e-10``, inside the ``4**k 2**-30`` between the two bounds.) A clipped
    row has ``||v|| <= 2**k`` up to ``2**-48``; the quick test fails only
    for rows the clip did not bound, or not finite: they take the exact
    check.

    Exactness, with every integer held in float64: an entry ``e = rint(v)``
    is an integer (or not finite); ``e**2`` is exact below ``2**53``; a sum of
    such non-negative integers is exact while it stays below ``2**53`` and
    never decreases under rounding. So a computed squared norm ``<= bound``
    (``bound < 2**50``) means every partial sum and every square was exact
    and the norm is ``||n_i||**2`` exactly; a computed norm above ``bound``
    (or NaN) means the exact one is above it too (the first inexact partial
    sum already exceeds ``2**53``). The row is kept exactly when the integer
    oracle keeps it: an entry beyond the oracle's limit ``2**k + 2**17``
    squares above every bound. A kept row's entries are below ``2**25``, so
    the float64 partial sums of up to ``_ROWS_PER_FLUSH`` rows are exact
    integers, moved into the int64 ``total`` as such.
    """
    n_outputs = scaled.shape[1]
    left_out = 0
    for flush_start in range(start, stop, _ROWS_PER_FLUSH):
        flush_stop = min(stop, flush_start + _ROWS_PER_FLUSH)
        for i in range(flush_start, flush_stop):
            x = design[i]
            residual_norm = 0.0
            for k in range(n_outputs):
                residual_norm += scaled[i, k] * scaled[i, k]
            # A NaN fails the comparisons: the exact check, then the row is
            # left out.
            if not residual_norm * _squared_norm(x) <= quick_limit:
                squared = 0.0
                for k in range(n_outputs):
                    squared += _squared_rounded_norm(x, scaled[i, k])
                if not squared <= bound:
                    left_out += 1
                    continue
            for k in range(n_outputs):
                _add_rounded(x, scaled[i, k], partial[k])
        for k in range(n_outputs):
            for j in range(partial.shape[1]):
                total[k, j] += np.int64(partial[k, j])
                partial[k, j] = 0.0
    return left_out
