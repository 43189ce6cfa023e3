"""Sparse input: compiled per-sample kernels on CSR rows, and their checks.

The sparse forms of :mod:`._kernels`, with the same per-sample pieces (the
residuals, the fail-closed clip, the row norms, the thread split): only a
row's two dot products visit its stored entries, O(nnz K) a step; the noise,
the smoothing and the update stay dense (the noise covers every coordinate).
A row's norm is a sum over its STORED entries, its true norm only without
duplicates: every sparse X goes through :func:`as_canonical_csr` first.
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
    """``X`` as a checked canonical CSR matrix (sorted, duplicates summed into a copy).

    ``X`` itself when it already is one; never modified. A ValueError where
    the index arrays are inconsistent (the compiled code would read out of
    bounds).
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
    """``margins[k] = params[k, columns] . values + params[k, d]``, in the parameters' dtype.

    Compiled apart from the clip (fastmath must not reach it); the caller
    redoes an overflowed sum in float64, outside these flags, which can hide
    an infinity from ``isfinite``.
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
    """``grad = noise + clipped sum`` of ``rows``, row by row.

    Inlined into its two kernels, whose constant ``several`` prunes the other
    loss family from the compilation.
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
    """``grad = noise + clipped sum``, one output; ``X`` is ``(data, indices, indptr)``."""
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
    """The kernel for ``params.shape[0]`` outputs, chosen at run time (compiles both)."""
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
    """Rows per chunk of a CSR batch (``n_rows`` or more: not split), from public quantities only.

    Never from the stored entries: the cut may change a sum's rounding. As
    :func:`._threads.chunk_rows`, deciding on the work of dense rows, with at
    least ``d + 1`` rows a chunk so its dense buffer costs no more than its rows.
    """
    work = n_rows * n_outputs * n_features
    if n_rows <= 1 or parallel_blocks(work, n_rows, n_threads) <= 1:
        return max(1, n_rows)
    return max(chunk_rows(n_rows, n_outputs * (n_features + 1), n_threads), n_features + 1)


def noisy_clipped_gradient_sum_sparse(
    X, y, rows, params, row_norms, code, threshold, clip_norm, fit_intercept,
    noise, grad, n_threads=1, weights=None, feature_norms=None,
):
    """:func:`._kernels.noisy_clipped_gradient_sum` for canonical CSR X (:func:`as_canonical_csr`).

    The same arguments and result up to rounding, row by row from the stored
    entries (no gather, no BLAS).
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
