"""The clipped per-sample gradients rounded onto a public grid, factor by factor, summed exactly.

The exact-noise mode releases a function of an integer vector. Row ``i``'s
clipped gradient is the outer product ``u_i (x) e_i``: ``u_i = r_i ||x'_i||``
(``K`` values, ``||u_i|| <= w_i C <= w_max C`` after the clip) and ``e_i =
x'_i / ||x'_i||`` (``x'_i = [x_i, b]`` with the intercept's term ``b``, a unit
vector; 0 for a zero row). Each factor is rounded onto its own public grid:

* ``a_i = rint(2**k1 u_i / (w_max C))``, ``K`` integers, and
* ``b_i = rint(2**k2 e_i)``, ``D2`` integers (``D2 = d + 1``, or ``d``
  without intercept, whose column of ``x'`` is 0),

and each is *enforced*, exactly, per row: ``||a_i||**2 <= A = grid_norm_bound(k1, K)``
and ``||b_i||**2 <= Bb = grid_norm_bound(k2, D2)``; a row failing either
(one whose values are not finite included) contributes nothing. The row's
integer contribution ``n_i = a_i (x) b_i`` then has ``||n_i||**2 = ||a_i||**2
||b_i||**2 <= A Bb`` exactly (:func:`factored_norm_bound`): the sensitivity on
the grid ``2**-(k1 + k2) w_max C`` is ``sqrt(A Bb)`` whatever the floats did.
Rounding a factor moves it by at most ``sqrt(K) / 2`` (``sqrt(D2) / 2``), so
the bound exceeds the clip by the ratio ``(1 + sqrt(K) 2**-(k1+1)) (1 +
sqrt(D2) 2**-(k2+1))`` (and ``2**-30`` of slack for the floats).

The sum ``S = sum_i a_i (x) b_i`` is a float64 matrix product of
integer-valued matrices (BLAS, over blocks of rows), and it is exact: with
``k1, k2 <= MAX_GRID_BITS = 16`` and ``K, D2 < 2**32`` every kept entry is
below ``2**16 + 2**15 + 1 < 2**17`` in magnitude
(``sqrt(grid_norm_bound(16, 2**32 - 1)) < 2**17``), every product below
``2**34``, and one float64 accumulation covers at most :data:`MAX_GEMM_ROWS`
``= 2**19`` rows, so every partial sum, in any order, blocked or fused
(FMA), is an integer below ``2**53``: float64 holds each exactly, so each
operation is exact and the result is the exact integer sum, moved into int64.
Both factors of a row are rounded where the row is summed
(:func:`add_factored_rows`), straight into the product's cache-sized block:
a step touches only its batch's rows, so one epoch rounds about ``n`` rows'
``D2`` entries once, with no pass over the whole table and nothing kept
between steps.

Overflow of the int64 total is impossible by construction: a batch has at
most :data:`MAX_BATCH_ROWS` ``= 2**27`` rows (checked), each coordinate of the
sum stays below ``2**61`` in magnitude, and the noise below ``2**62`` (the
discrete Gaussian's proposals are limited there; the rounded Gaussian's draws
stay below ``2**42``): their sum fits int64.
"""

import math

import numpy as np
from numba import njit

__all__ = [
    "MAX_BATCH_ROWS",
    "MAX_GEMM_ROWS",
    "MAX_GRID_BITS",
    "add_factored_rows",
    "check_batch_rows",
    "factored_norm_bound",
    "grid_norm_bound",
    "rounded_clipped_sum",
]

# Each factor's grid step is 2**-k (times w_max C for the residuals) with
# 0 <= k <= MAX_GRID_BITS: the factors' entries stay below 2**17.
MAX_GRID_BITS = 16
# Rows in one float64 accumulation: products below 2**34, so 2**19 of them stay below
# 2**53, where float64 holds every partial sum exactly.
MAX_GEMM_ROWS = 2 ** 19
# Rows in one batch: 2**27 rows times products below 2**34 stay below 2**61.
MAX_BATCH_ROWS = 2 ** 27
_MAX_COORDINATES = 2 ** 32


def _check_grid(grid_bits, n_coordinates):
    if isinstance(grid_bits, bool) or not isinstance(grid_bits, (int, np.integer)) or not (
            0 <= grid_bits <= MAX_GRID_BITS):
        raise ValueError(f"grid_bits must be an integer in [0, {MAX_GRID_BITS}].")
    if isinstance(n_coordinates, bool) or not isinstance(n_coordinates, (int, np.integer)) or not (
            1 <= n_coordinates < _MAX_COORDINATES):
        raise ValueError("n_coordinates must be an integer in [1, 2**32).")


def grid_norm_bound(grid_bits, n_coordinates):
    """An integer bound on ``||rint(2**k v)||**2`` for a vector ``||v|| <= 1`` of ``D`` entries.

    ``B >= (2**k (1 + 2**-30) + sqrt(D) / 2)**2``, computed with integers
    only: ``4**k (1 + 2**-30)**2 <= 4**k + 2**(2k - 29) + 1``, the cross term
    ``2**k sqrt(D) (1 + 2**-30) <= ceil(sqrt(4**k D)) + ceil(sqrt(4**k D) / 2**30)``,
    and ``D / 4 <= ceil(D / 4)``. Each factor of a row's contribution is
    held to it (``A`` for the residuals, ``Bb`` for the unit row).

    Parameters
    ----------
    grid_bits : int
        ``k``, in ``[0, MAX_GRID_BITS]``: the grid step is ``2**-k`` times the
        factor's norm bound.
    n_coordinates : int
        ``D``: the factor's entries.

    Returns
    -------
    int
        The bound, in squared grid units.
    """
    _check_grid(grid_bits, n_coordinates)
    k, dimension = int(grid_bits), int(n_coordinates)
    cross = math.isqrt(4 ** k * dimension)
    if cross * cross < 4 ** k * dimension:
        cross += 1
    return (4 ** k + (2 ** (2 * k) >> 29) + 1 + cross + -(-cross // 2 ** 30)
            + -(-dimension // 4))


def factored_norm_bound(residual_bits, row_bits, n_outputs, row_width):
    """``A Bb``: every kept row's ``||a_i (x) b_i||**2`` is at most this, exactly (grid units).

    Parameters
    ----------
    residual_bits, row_bits : int
        ``k1`` and ``k2``, each in ``[0, MAX_GRID_BITS]``.
    n_outputs : int
        ``K``.
    row_width : int
        ``D2``: ``d + 1`` with an intercept, ``d`` without.

    Returns
    -------
    int
        The squared sensitivity of a step's integer sum under add/remove, on
        the grid ``2**-(k1 + k2) w_max C``.
    """
    return grid_norm_bound(residual_bits, n_outputs) * grid_norm_bound(row_bits, row_width)


def check_batch_rows(n_rows):
    """Refuse a batch of more than :data:`MAX_BATCH_ROWS` rows (its int64 sum could overflow)."""
    if n_rows > MAX_BATCH_ROWS:
        raise ValueError("a batch of more than 2**27 rows could overflow the integer sum.")


# Rows whose factors are rounded (in float64, in cache) for one BLAS product.
_ROWS_PER_PRODUCT = 128


@njit(cache=True, nogil=True)
def add_factored_rows(X, rows, scaled_residuals, row_norms, row_grid_scale, intercept_term,
                      residual_bound, row_bound, start, stop, total):
    """``total += sum_r a_r (x) b_r`` over the kept rows ``r`` in ``start .. stop - 1``, exactly.

    Row ``r`` is ``X[rows[r]]`` (``x'`` its entries and ``intercept_term``);
    its factors are ``a_r = rint(scaled_residuals[r])`` and ``b_r = rint(x'
    (row_grid_scale / row_norms[rows[r]]))`` (0 for a zero norm), and it is
    kept if ``||a_r||**2 <= residual_bound`` and ``||b_r||**2 <= row_bound``
    (NaN fails both: a row whose values are not finite is left out). Both
    squared norms are float64 sums of integer squares, exact while below
    ``2**53`` and never decreasing under rounding, so a computed value ``<=``
    a bound (``< 2**50``) was computed exactly.

    The factors are rounded straight into blocks of :data:`_ROWS_PER_PRODUCT`
    kept rows, each a float64 BLAS product added to a float64 partial sum.
    Integers below ``2**17`` times integers below ``2**17``: products below
    ``2**34``; at most :data:`MAX_GEMM_ROWS` rows go into the partial sum
    before it is moved into int64, so every partial sum is an integer below
    ``2**53`` and every operation exact, in any order the BLAS takes
    (blocking, FMA).

    Parameters
    ----------
    X : ndarray of shape (n, d), float32 or float64
    rows : ndarray of int64, shape (b,)
        The row of ``X`` each residual row is (the batch).
    scaled_residuals : ndarray of shape (b, K), float64
        ``2**k1 u_r / (w_max C)``.
    row_norms : ndarray of shape (n,), float64
        ``||x'_i||`` (the clip's feature norms: the same numbers scale the
        residual factor).
    row_grid_scale : float
        ``2**k2``.
    intercept_term : float
        ``x'``'s last entry (0 without an intercept).
    residual_bound, row_bound : float
        ``A`` and ``Bb`` (integers below ``2**50``).
    start, stop : int
        The rows ``r`` summed.
    total : ndarray of int64, shape (K, d + 1)
        Added to in place.

    Returns
    -------
    int
        The rows left out by either factor's check.
    """
    n_outputs, width = total.shape
    n_features = X.shape[1]
    block = np.empty((_ROWS_PER_PRODUCT, width), dtype=np.float64)
    block_factors = np.empty((_ROWS_PER_PRODUCT, n_outputs), dtype=np.float64)
    partial = np.zeros((n_outputs, width), dtype=np.float64)
    n_in_block = in_partial = left_out = 0
    for r in range(start, stop):
        squared = 0.0
        for k in range(n_outputs):
            entry = np.rint(scaled_residuals[r, k])
            block_factors[n_in_block, k] = entry
            squared += entry * entry
        if not squared <= residual_bound:
            left_out += 1
            continue
        i = rows[r]
        norm = row_norms[i]
        # A zero row's factor is 0 (its gradient is 0), not 0 / 0.
        scale = 0.0 if norm == 0.0 else row_grid_scale / norm
        last = np.rint(intercept_term * scale)
        block[n_in_block, n_features] = last
        squared = _round_into(X[i], scale, block[n_in_block]) + last * last
        if not squared <= row_bound:
            left_out += 1
            continue
        n_in_block += 1
        if n_in_block == _ROWS_PER_PRODUCT:
            partial += np.dot(block_factors.T, block)
            in_partial += n_in_block
            n_in_block = 0
            if in_partial + _ROWS_PER_PRODUCT > MAX_GEMM_ROWS:
                _move_into(partial, total)
                in_partial = 0
    if n_in_block > 0:
        partial += np.dot(block_factors[:n_in_block].T, block[:n_in_block])
    _move_into(partial, total)
    return left_out


@njit(cache=True, nogil=True)
def _move_into(partial, total):
    """``total += partial`` (float64-held integers below ``2**53``) and ``partial = 0``."""
    n_outputs, width = partial.shape
    for k in range(n_outputs):
        for j in range(width):
            total[k, j] += np.int64(partial[k, j])
            partial[k, j] = 0.0


@njit(cache=True, nogil=True, fastmath={"reassoc"})
def _round_into(x, scale, out):
    """``out[j] = rint(scale x_j)`` for ``x``'s entries; returns ``sum_j out[j]**2`` (float64).

    Reassociated so that it runs on vectors: a sum of non-negative integers
    is the same in any order while it stays below ``2**53``, and otherwise
    above it in any order. Only the sum is reassociated (the product
    ``scale x_j`` is one rounding in any order).
    """
    squared = 0.0
    for j in range(x.shape[0]):
        entry = np.rint(np.float64(x[j]) * scale)
        out[j] = entry
        squared += entry * entry
    return squared


def rounded_clipped_sum(rows, clipped_residuals, clip_norm, residual_bits, row_bits,
                        intercept_term=1.0):
    """``sum_i a_i (x) b_i`` of clipped gradients ``r_i x'_i``, in int64 (the mode's sum at once).

    Parameters
    ----------
    rows : ndarray of shape (b, d), float32 or float64
        The sampled rows.
    clipped_residuals : ndarray of shape (b, K), float64
        The residuals already clipped: ``||r_i|| ||x'_i|| <= clip_norm``.
    clip_norm : float
        ``C`` (times ``w_max``), positive.
    residual_bits, row_bits : int
        ``k1`` and ``k2``, in ``[0, MAX_GRID_BITS]``.
    intercept_term : float, default=1.0
        The intercept's column value; 0 for a model without intercept (its
        column of the sum is then 0 and not counted in ``D2``).

    Returns
    -------
    total : ndarray of int64, shape (K, d + 1)
        The integer sum on the grid ``2**-(k1 + k2) clip_norm``; the last
        column is the intercept's.
    n_left_out : int
        Rows left out by either factor's check: 0 unless the clip failed.
    """
    n_rows, n_features = rows.shape
    if clipped_residuals.shape[0] != n_rows:
        raise ValueError("rows and clipped_residuals must have the same number of rows.")
    if not (math.isfinite(clip_norm) and clip_norm > 0):
        raise ValueError("clip_norm must be a positive finite number.")
    design = np.empty((n_rows, n_features + 1), dtype=np.float64)
    design[:, :n_features] = rows
    design[:, n_features] = intercept_term
    with np.errstate(over="ignore", invalid="ignore"):
        norms = np.linalg.norm(design, axis=1)
    check_batch_rows(n_rows)
    with np.errstate(over="ignore", invalid="ignore"):
        # As the exact mode's steps form it: the clipped residual times
        # (||x'_i|| 2**k1 / C), one product of the two.
        scaled = np.asarray(clipped_residuals, dtype=np.float64) * (
            norms * (2.0 ** residual_bits / float(clip_norm)))[:, None]
    total = np.zeros((clipped_residuals.shape[1], n_features + 1), dtype=np.int64)
    left_out = add_factored_rows(
        np.ascontiguousarray(rows), np.arange(n_rows, dtype=np.int64), scaled, norms,
        2.0 ** row_bits, float(intercept_term),
        float(grid_norm_bound(residual_bits, clipped_residuals.shape[1])),
        float(grid_norm_bound(row_bits, n_features + int(intercept_term != 0))), 0, n_rows,
        total)
    return total, int(left_out)
