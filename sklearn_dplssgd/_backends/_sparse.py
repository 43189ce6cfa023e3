"""Sparse input: compiled per-sample kernels on CSR rows, and their checks.

A CSR matrix stores row ``i``'s non-zero entries as ``data[indptr[i]:
indptr[i + 1]]`` in the columns ``indices[indptr[i]:indptr[i + 1]]``. The
kernels here are the sparse forms of those in :mod:`._kernels` and reuse
its per-sample pieces unchanged (the residuals of
:mod:`~sklearn_dplssgd._training._losses`, the fail-closed clip
``clipped_residual``, the overflow-safe row norms of :mod:`._row_norms`,
the thread split): only
the two dot products of a row (its margins ``W x + b``, and the clipped
gradient ``c [x, 1]`` added into the sum) visit its stored entries instead
of all d columns. A step then costs O(nnz of the batch * K) for the
gradients; the noise, the smoothing and the update stay dense, O(d K), as
they must (the noise covers every coordinate, or it would not be private).

The row norms that set each sample's clip are sums over the STORED entries,
which equal the row's norm only when no entry is stored twice. Every sparse
X therefore goes through :func:`as_canonical_csr` before its norms are
taken: duplicates are summed into a copy (the user's matrix is never
modified), and indices outside ``[0, n_features)`` (which the compiled code
would read out of bounds) are refused.
"""

import math

import numpy as np
from numba import njit

from ._clipping import COEFFICIENT_RANGE, clipped_residual, feature_norm_of
from ._kernels import check_feature_norms, check_weights, copy_rows, parallel_blocks
from .._training import multiclass_residual, single_output_residual
from .._utils import CONTRACT_ONLY, FASTMATH
from ._row_norms import compute_sparse_row_norms
from ._threads import (
    CHUNK_DONE, CHUNK_REDONE, chunk_rows, chunk_slot, finish_chunk, sum_over_chunks, take_chunk,
)

__all__ = [
    "as_canonical_csr",
    "compute_sparse_row_norms",
    "csr_gradient_sum",
    "csr_kernel_for",
    "csr_several_outputs_gradient_sum",
    "csr_single_output_gradient_sum",
    "noisy_clipped_gradient_sum_sparse",
    "sparse_chunk_rows",
]

# Outcomes of the structure check.
_CANONICAL = 0
_NOT_CANONICAL = 1  # unsorted or duplicated column indices within a row
_BAD_INDPTR = 2
_BAD_INDEX = 3


@njit(cache=True, nogil=True)
def _csr_structure(indptr, indices, n_features):
    """Check the CSR index arrays in one pass (one of the codes above).

    Does not trust scipy's cached ``has_canonical_format`` flag, which goes
    stale when the index arrays are edited in place.
    """
    n_entries = indices.shape[0]
    if indptr[0] != 0:
        return _BAD_INDPTR
    canonical = True
    for i in range(indptr.shape[0] - 1):
        start = indptr[i]
        stop = indptr[i + 1]
        if stop < start or stop > n_entries:
            return _BAD_INDPTR
        previous = -1
        for p in range(start, stop):
            column = indices[p]
            if column < 0 or column >= n_features:
                return _BAD_INDEX
            if column <= previous:
                canonical = False
            previous = column
    return _CANONICAL if canonical else _NOT_CANONICAL


def as_canonical_csr(X):
    """``X`` as a checked CSR matrix in canonical format (sorted, no duplicates).

    Returns ``X`` itself when it already is one; otherwise a converted or
    deduplicated copy (duplicate entries summed, as ``X.toarray()`` does).
    ``X`` is never modified.

    Parameters
    ----------
    X : scipy sparse matrix or array of shape (n_samples, n_features)

    Returns
    -------
    X_csr : scipy sparse CSR matrix or array

    Raises
    ------
    ValueError
        When the index arrays are inconsistent (row pointers that decrease
        or point past the stored entries, column indices outside
        ``[0, n_features)``).
    """
    if X.format != "csr":
        X = X.tocsr()
    n_rows, n_features = X.shape
    if (
        X.data.ndim != 1 or X.indices.ndim != 1 or X.indptr.ndim != 1
        or X.indptr.shape[0] != n_rows + 1 or X.data.shape[0] != X.indices.shape[0]
    ):
        raise ValueError(
            "The sparse matrix X is malformed: its data, indices and indptr arrays "
            "do not have consistent lengths (see scipy.sparse.csr_matrix.check_format)."
        )
    status = _csr_structure(X.indptr, X.indices, n_features)
    if status == _NOT_CANONICAL:
        X = X.copy()
        # Not trusting a cached flag: sort and sum from scratch.
        X.has_sorted_indices = False
        X.sum_duplicates()
        status = _csr_structure(X.indptr, X.indices, n_features)
    if status == _BAD_INDPTR:
        raise ValueError(
            "The sparse matrix X is malformed: its row pointers (indptr) decrease or "
            "point past the stored entries."
        )
    if status == _BAD_INDEX:
        raise ValueError(
            f"The sparse matrix X is malformed: it stores entries in columns outside "
            f"[0, {n_features}) (its indices array)."
        )
    if status != _CANONICAL:  # pragma: no cover - sum_duplicates always canonicalises
        raise RuntimeError("could not bring the sparse matrix X into canonical format")
    return X


@njit(cache=True, nogil=True)
def _sparse_margin_float64(weights, values, columns, n_features):
    """``weights[columns] . values + weights[d]`` accumulated in float64."""
    acc = np.float64(weights[n_features])
    for p in range(values.shape[0]):
        acc += np.float64(weights[columns[p]]) * np.float64(values[p])
    return acc


@njit(cache=True, fastmath=FASTMATH, nogil=True)
def _sparse_row_margins(params, values, columns, n_features, margins):
    """``margins[k] = params[k, columns] . values + params[k, d]``.

    Summed in the parameters' dtype, compiled apart from the clipping
    arithmetic (its reassociation must not reach it). A float32 sum that
    overflowed is recomputed in float64 by the caller, outside these fastmath
    flags: with them, Numba 0.60 let an infinite sum through its own
    ``isfinite`` check.
    """
    for k in range(params.shape[0]):
        weights = params[k]
        acc = weights[n_features]
        for p in range(values.shape[0]):
            acc += weights[columns[p]] * values[p]
        margins[k] = acc


@njit(cache=True, nogil=True, inline="always")
def _csr_rows_sum(
    X, y, rows, params, row_norms, feature_norms, code, threshold, clip_norm, fit_intercept,
    largest, tiny, noise, grad, weights, several,
):
    """``grad = noise + clipped sum``: the (weighted) clipped gradients of ``rows``, row by row.

    O(stored entries * K). Inlined into its two kernels, whose constant
    ``several`` prunes the other loss family: a kernel compiles only the
    losses it can call (the one-output losses or the multiclass ones).
    """
    data, indices, indptr = X
    copy_rows(noise, grad)
    n_outputs = params.shape[0]
    n_features = params.shape[1] - 1
    margins = np.empty(n_outputs, dtype=np.float64)
    residual = np.empty(n_outputs, dtype=np.float64)
    scaled = np.empty(n_outputs, dtype=params.dtype)
    intercept_term = 1.0 if fit_intercept else 0.0
    for position in range(rows.shape[0]):
        i = rows[position]
        values = data[indptr[i]:indptr[i + 1]]
        columns = indices[indptr[i]:indptr[i + 1]]
        _sparse_row_margins(params, values, columns, n_features, margins)
        for k in range(n_outputs):
            if not math.isfinite(margins[k]):
                margins[k] = _sparse_margin_float64(params[k], values, columns, n_features)
        if several:
            multiclass_residual(code, margins, y[i], threshold, residual)
        else:
            residual[0] = single_output_residual(code, margins[0], y[i], threshold)
        # The same clip as the dense kernel: the whole parameter gradient of
        # the sample (all outputs, coefficients and intercept) to C.
        weight = weights[i] if weights.shape[0] > 0 else 1.0
        # Fail-closed: a NaN or negative norm contributes nothing.
        clipped_residual(residual, feature_norm_of(row_norms, feature_norms, i, intercept_term),
                         clip_norm, weight, largest, tiny, scaled)
        for k in range(n_outputs):
            coefficient = scaled[k]
            if coefficient != 0.0:
                row = grad[k]
                for p in range(values.shape[0]):
                    row[columns[p]] += coefficient * values[p]
                row[n_features] += coefficient * intercept_term


@njit(cache=True, fastmath=CONTRACT_ONLY, nogil=True)
def csr_single_output_gradient_sum(
    X, y, rows, params, row_norms, feature_norms, code, threshold, clip_norm, fit_intercept,
    largest, tiny, noise, grad, weights,
):
    """``grad = noise + clipped sum`` for one output; ``X`` is ``(data, indices, indptr)``.

    The argument order of the dense kernels, so that the chunks of a batch
    (``_csr_chunks``) and the compiled steps call it as they call those.
    """
    _csr_rows_sum(X, y, rows, params, row_norms, feature_norms, code, threshold, clip_norm,
                  fit_intercept, largest, tiny, noise, grad, weights, False)


@njit(cache=True, fastmath=CONTRACT_ONLY, nogil=True)
def csr_several_outputs_gradient_sum(
    X, y, rows, params, row_norms, feature_norms, code, threshold, clip_norm, fit_intercept,
    largest, tiny, noise, grad, weights,
):
    """:func:`csr_single_output_gradient_sum` for several outputs (the multiclass losses)."""
    _csr_rows_sum(X, y, rows, params, row_norms, feature_norms, code, threshold, clip_norm,
                  fit_intercept, largest, tiny, noise, grad, weights, True)


@njit(cache=True, nogil=True)
def csr_gradient_sum(
    X, y, rows, params, row_norms, feature_norms, code, threshold, clip_norm, fit_intercept,
    largest, tiny, noise, grad, weights,
):
    """The kernel for ``params.shape[0]`` outputs, chosen when the steps run.

    For the compiled runs of steps and the chunks, which compile both kernels;
    a Python caller picks one (:func:`csr_kernel_for`) and compiles only it.
    """
    if params.shape[0] > 1:
        csr_several_outputs_gradient_sum(
            X, y, rows, params, row_norms, feature_norms, code, threshold, clip_norm,
            fit_intercept, largest, tiny, noise, grad, weights)
    else:
        csr_single_output_gradient_sum(
            X, y, rows, params, row_norms, feature_norms, code, threshold, clip_norm,
            fit_intercept, largest, tiny, noise, grad, weights)


def csr_kernel_for(n_outputs):
    """The sparse kernel of ``n_outputs`` outputs (each compiles only its losses)."""
    return csr_several_outputs_gradient_sum if n_outputs > 1 else csr_single_output_gradient_sum


def sparse_chunk_rows(n_rows, n_outputs, n_features, n_threads):
    """Rows per chunk of a CSR batch, from public quantities only.

    The batch's length, the parameters' shape and the thread count decide
    how a batch is cut, never its stored entries: the chunks' sums are added
    in chunk order, so the rounding of a step's sum may depend on the cut,
    and the cut must not depend on the data. As for dense rows
    (:func:`~sklearn_dplssgd._backends._threads.chunk_rows`), with two
    differences: whether to split is decided on the work of dense rows of
    ``n_features`` columns (:func:`~sklearn_dplssgd._backends._kernels.parallel_blocks`),
    and a chunk holds at least ``n_features + 1`` rows, so that the dense
    ``(K, d + 1)`` buffer each chunk fills and adds costs no more than its
    rows when each holds one stored entry or more.

    Parameters
    ----------
    n_rows : int
        Rows of the batch.
    n_outputs : int
        K.
    n_features : int
        d.
    n_threads : int

    Returns
    -------
    rows_per_chunk : int
        ``n_rows`` or more when the batch stays on one thread.
    """
    work = n_rows * n_outputs * n_features
    if n_rows <= 1 or parallel_blocks(work, n_rows, n_threads) <= 1:
        return max(1, n_rows)
    return max(chunk_rows(n_rows, n_outputs * (n_features + 1), n_threads), n_features + 1)


def noisy_clipped_gradient_sum_sparse(
    X, y, rows, params, row_norms, code, threshold, clip_norm, fit_intercept,
    noise, grad, n_threads=1, weights=None, feature_norms=None,
):
    """``grad = noise + sum_{i in rows} w_i clip_C(gradient of sample i)`` for sparse X.

    The sparse form of :func:`sklearn_dplssgd._backends._kernels.noisy_clipped_gradient_sum`,
    with the same arguments and the same result up to float rounding; every
    output's gradient is formed row by row from the stored entries (no
    gather, no BLAS: a sparse row touches only its own columns).

    Parameters
    ----------
    X : scipy sparse CSR matrix or array of shape (n_samples, d)
        In canonical format (:func:`as_canonical_csr`), float64 or float32.
    y : ndarray of shape (n_samples,), float64
        Encoded targets.
    rows : ndarray of int64
        The batch; may be empty.
    params : ndarray of shape (K, d + 1), dtype of ``X``
    row_norms : ndarray of shape (n_samples,), float64
        From :func:`compute_sparse_row_norms`.
    code : int
    threshold : float
    clip_norm : float
    fit_intercept : bool
    noise : ndarray of shape (K, d + 1), dtype of ``X``
    grad : ndarray of shape (K, d + 1), dtype of ``X``
        Output buffer, overwritten.
    n_threads : int, default=1
        Split the batch over this many threads when its work is large enough.
    weights : ndarray of shape (n_samples,), float64, or None, default=None
        Per-sample weights, applied to the clipped gradients (as the dense
        kernel's).
    feature_norms : ndarray of shape (n_samples,), float64, or None, default=None
        As the dense kernel's.
    """
    weights = check_weights(weights, X.shape[0])
    feature_norms = check_feature_norms(feature_norms, X.shape[0])
    csr = (X.data, X.indices, X.indptr)
    largest, tiny = COEFFICIENT_RANGE[np.dtype(params.dtype)]
    args = (row_norms, feature_norms, code, threshold, clip_norm, fit_intercept, largest, tiny)
    rows_per_chunk = sparse_chunk_rows(rows.shape[0], params.shape[0], params.shape[1] - 1,
                                       n_threads)
    if rows_per_chunk < rows.shape[0]:
        sum_over_chunks(_csr_chunks, csr, y, rows, params, args, noise, grad, weights,
                        n_threads, rows_per_chunk)
    else:
        csr_kernel_for(params.shape[0])(csr, y, rows, params, *args, noise, grad, weights)


@njit(cache=True, nogil=True)
def _csr_chunks(
    X, y, rows, params, row_norms, feature_norms, code, threshold, clip_norm, fit_intercept,
    largest, tiny, weights, partial, zeros, progress, rows_per_chunk, again,
):
    """The sparse form of ``_kernels._dense_chunks``."""
    computed = 0
    chunk = take_chunk(progress) if again < 0 else again
    while chunk >= 0:
        start = chunk * rows_per_chunk
        stop = min(start + rows_per_chunk, rows.shape[0])
        csr_gradient_sum(X, y, rows[start:stop], params, row_norms, feature_norms, code,
                         threshold, clip_norm, fit_intercept, largest, tiny, zeros,
                         partial[chunk_slot(progress, chunk, again >= 0)], weights)
        finish_chunk(progress, chunk, CHUNK_REDONE if again >= 0 else CHUNK_DONE)
        computed += 1
        chunk = take_chunk(progress) if again < 0 else -1
    return computed
