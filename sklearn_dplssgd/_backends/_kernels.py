"""Compiled per-sample kernels (Numba); they never draw random numbers.

Losses arrive as integer codes, batches as index arrays, noise as an array.
``params`` has shape ``(K, d + 1)``, intercept last. Sample i's gradient is
``r_i [x_i, 1]`` (``r_i = d loss / d z_i``), of norm
``||r_i|| sqrt(||x_i||^2 + 1)``, so clipping is one scale per sample. One
output: the batch is gathered in cache-sized blocks and the clipped rows
added one by one; several: ``S^T [X_B, 1]`` through BLAS for the clipped
residuals ``S``. No per-sample gradient is stored. Kernels compile once per
dtype and are cached on disk.
"""

import math

import numpy as np
from numba import njit

from ._clipping import (
    COEFFICIENT_RANGE, NORM_SLACK, clipped_residual, compute_feature_norms, feature_norm_of,
)
from .._training import multiclass_residual, single_output_residual
from ._row_norms import compute_row_norms
from .._utils import CONTRACT_ONLY, FASTMATH
from ._prefetch import CACHE_LINE, prefetch_address
from ._threads import (
    CHUNK_DONE, CHUNK_REDONE, chunk_rows, chunk_slot, finish_chunk, sum_over_chunks, take_chunk,
)

__all__ = [
    "copy_rows",
    "COEFFICIENT_RANGE",
    "check_feature_norms",
    "check_weights",
    "clipped_residual",
    "compute_feature_norms",
    "compute_row_norms",
    "dense_gradient_kernel",
    "feature_norm_of",
    "gathered_block_rows",
    "noisy_clipped_gradient_sum",
    "several_outputs_gradient_sum",
    "single_output_buffers",
    "single_output_gradient_sum",
    "single_output_sum_into",
    "smooth_rows",
    "smoothing_omega",
    "NORM_SLACK",
    "PARALLEL_MIN_WORK",
    "parallel_blocks",
]

# Relative size below which a term of a geometric series cannot change a
# float64 sum.
_NEGLIGIBLE = 1e-18

# Below this many multiply-adds per step (rows * K * d) the threads' start-up
# cost exceeds what they save; small fits (audits, tiny data) stay serial.
PARALLEL_MIN_WORK = 400_000


@njit(cache=True, nogil=True)
def _margin_float64(weights, x, n_features):
    """``weights[:d] . x + weights[d]`` accumulated in float64, whatever the dtype."""
    acc = np.float64(weights[n_features])
    for j in range(n_features):
        acc += np.float64(weights[j]) * np.float64(x[j])
    return acc


# Bytes of a row prefetched at most: the processor's own prefetcher follows
# a long row once its first lines are read.
_PREFETCHED_ROW_BYTES = 1 << 10


# Rows of one output's batch gathered at a time: a block of about 128 KiB
# stays in the L2 cache between the gather and the two passes over it.
_GATHER_BYTES = 1 << 17


@njit(cache=True, nogil=True)
def gathered_block_rows(n_features, itemsize):
    """Rows per gathered block: about ``_GATHER_BYTES``, from 8 to 1024 rows."""
    rows = _GATHER_BYTES // (itemsize * (n_features + 1))
    if rows > 1024:
        return 1024
    if rows < 8:
        return 8
    return rows


@njit(cache=True, fastmath=FASTMATH, nogil=True)
def _gathered_margins(weights, gathered, n_rows, margins):
    """``margins[r] = weights[:d] . gathered[r] + weights[d]`` for a block's rows.

    A function of its own so that fastmath's reassociation stays out of the
    clipping arithmetic; a float32 sum that overflowed is recomputed in float64.
    """
    n_features = gathered.shape[1]
    for r in range(n_rows):
        x = gathered[r]
        acc = weights[n_features]
        for j in range(n_features):
            acc += weights[j] * x[j]
        if math.isfinite(acc):
            margins[r] = acc
        else:
            margins[r] = _margin_float64(weights, x, n_features)


@njit(cache=True, fastmath=CONTRACT_ONLY, nogil=True)
def _accumulate_gathered(gathered, coefficients, n_rows, intercept_term, gradient):
    """``gradient += sum_r coefficients[r] [gathered[r], intercept_term]``, row by row."""
    n_features = gathered.shape[1]
    for r in range(n_rows):
        coefficient = coefficients[r]
        if coefficient != 0.0:
            x = gathered[r]
            for j in range(n_features):
                gradient[j] += coefficient * x[j]
            gradient[n_features] += coefficient * intercept_term


@njit(cache=True, nogil=True)
def single_output_buffers(params, n_rows):
    """The one-output kernel's buffers for batches of up to ``n_rows`` rows.

    ``(gathered, per_row, coefficients, residual, scaled)``: a block of rows,
    its targets, norms, weights and margins (float64), its clipped
    coefficients, and the clip's two buffers (``scaled`` in the parameters'
    dtype, where the bound is checked).
    """
    n_features = params.shape[1] - 1
    block = gathered_block_rows(n_features, params.itemsize)
    if block > n_rows:
        block = n_rows
    if block < 1:
        block = 1
    return (np.empty((block, n_features), dtype=params.dtype),
            np.empty((4, block), dtype=np.float64),
            np.empty(block, dtype=params.dtype),
            np.empty(1, dtype=np.float64),
            np.empty(1, dtype=params.dtype))


@njit(cache=True, nogil=True)
def single_output_gradient_sum(
    X, y, rows, params, row_norms, feature_norms, code, threshold, clip_norm, fit_intercept,
    largest, tiny, noise, grad, weights,
):
    """``grad = noise + clipped sum``, one output: :func:`single_output_sum_into`, own buffers."""
    gathered, per_row, coefficients, residual, scaled = single_output_buffers(
        params, rows.shape[0])
    single_output_sum_into(X, y, rows, params, row_norms, feature_norms, code, threshold,
                           clip_norm, fit_intercept, largest, tiny, noise, grad, weights,
                           gathered, per_row, coefficients, residual, scaled, rows[:0])


@njit(cache=True, nogil=True)
def single_output_sum_into(
    X, y, rows, params, row_norms, feature_norms, code, threshold, clip_norm, fit_intercept,
    largest, tiny, noise, grad, weights, gathered, per_row, coefficients, residual, scaled,
    upcoming,
):
    """``grad = noise + clipped sum`` for one output, in the given buffers.

    Blocks of ``gathered.shape[0]`` rows are gathered into a contiguous
    buffer (many cache misses in flight), then clipped, then summed in batch
    order, so the block size does not change the result. While a block
    computes, the rows one block ahead (then ``upcoming``, the next batch's)
    are prefetched: a prefetch changes when data arrives, never a result.
    Written out, not in helpers: each compiled helper adds to the first
    fit's compilation.
    """
    copy_rows(noise, grad)
    n_rows = rows.shape[0]
    n_features = X.shape[1]
    block = gathered.shape[0]
    targets, norms, row_weights, margins = per_row[0], per_row[1], per_row[2], per_row[3]
    weighted = weights.shape[0] > 0
    intercept_term = 1.0 if fit_intercept else 0.0
    gradient = grad[0]
    # Rows prefetched ahead of the one computed: one block, at most a batch.
    distance = block if block < n_rows else n_rows
    n_upcoming = upcoming.shape[0]
    # Where a sample's data lie: ``ctypes`` once per call (it builds an object).
    norms_read = feature_norms if feature_norms.shape[0] > 0 else row_norms
    x_base, x_step, x_bytes = X.ctypes.data, X.strides[0], n_features * X.strides[1]
    if x_bytes > _PREFETCHED_ROW_BYTES:
        x_bytes = _PREFETCHED_ROW_BYTES
    y_base, y_step = y.ctypes.data, y.strides[0]
    norm_base, norm_step = norms_read.ctypes.data, norms_read.strides[0]
    weight_base, weight_step = weights.ctypes.data, weights.strides[0]
    for start in range(0, n_rows, block):
        stop = start + block
        if stop > n_rows:
            stop = n_rows
        # Everything the rows' clips read is gathered in the one pass.
        for r in range(stop - start):
            source = rows[start + r]
            for j in range(n_features):
                gathered[r, j] = X[source, j]
            targets[r] = y[source]
            norms[r] = feature_norm_of(row_norms, feature_norms, source, intercept_term)
            row_weights[r] = weights[source] if weighted else 1.0
        _gathered_margins(params[0], gathered, stop - start, margins)
        for r in range(stop - start):
            ahead = start + r + distance
            sample = -1
            if ahead < n_rows:
                sample = rows[ahead]
            elif ahead - n_rows < n_upcoming:
                sample = upcoming[ahead - n_rows]
            if sample >= 0:
                row = x_base + sample * x_step
                for offset in range(0, x_bytes, CACHE_LINE):
                    prefetch_address(row + offset)
                # A row that does not start on a line ends on one line more.
                prefetch_address(row + x_bytes - 1)
                prefetch_address(y_base + sample * y_step)
                prefetch_address(norm_base + sample * norm_step)
                if weighted:
                    prefetch_address(weight_base + sample * weight_step)
            residual[0] = single_output_residual(code, margins[r], targets[r], threshold)
            # Fail-closed: a NaN or negative norm contributes nothing.
            clipped_residual(residual, norms[r], clip_norm, row_weights[r], largest, tiny,
                             scaled)
            coefficients[r] = scaled[0]
        _accumulate_gathered(gathered, coefficients, stop - start, intercept_term, gradient)


@njit(cache=True, nogil=True)
def copy_rows(source, target):
    """``target[:, :] = source`` as plain loops (a slice assignment compiles for seconds)."""
    for k in range(source.shape[0]):
        for j in range(source.shape[1]):
            target[k, j] = source[k, j]


@njit(cache=True, nogil=True)
def several_outputs_gradient_sum(
    X, y, rows, params, row_norms, feature_norms, code, threshold, clip_norm, fit_intercept,
    largest, tiny, noise, grad, weights,
):
    """The same sum for K > 1 outputs: margins ``B params^T`` and sum ``S^T B`` by BLAS.

    ``B = [X_batch, 1]`` is gathered (memory O(b d)); each row's residual is
    clipped as in the one-output kernel; a row whose float32 margins
    overflowed is recomputed in float64.
    """
    n_rows = rows.shape[0]
    n_outputs = params.shape[0]
    n_features = X.shape[1]
    copy_rows(noise, grad)
    if n_rows == 0:
        return
    intercept_term = 1.0 if fit_intercept else 0.0
    batch = np.empty((n_rows, n_features + 1), dtype=params.dtype)
    for r in range(n_rows):
        # Element by element: see copy_rows.
        source = rows[r]
        for j in range(n_features):
            batch[r, j] = X[source, j]
        batch[r, n_features] = intercept_term
    margins = np.dot(batch, params.T)
    clipped = np.empty((n_rows, n_outputs), dtype=params.dtype)
    row_margins = np.empty(n_outputs, dtype=np.float64)
    residual = np.empty(n_outputs, dtype=np.float64)
    # In the parameters' dtype: the clip is checked on the stored numbers.
    scaled = np.empty(n_outputs, dtype=params.dtype)
    for r in range(n_rows):
        i = rows[r]
        for k in range(n_outputs):
            row_margins[k] = margins[r, k]
            if not math.isfinite(row_margins[k]):
                row_margins[k] = _margin_float64(params[k], X[i], n_features)
        multiclass_residual(code, row_margins, y[i], threshold, residual)
        weight = weights[i] if weights.shape[0] > 0 else 1.0
        # Fail-closed: a NaN or negative norm contributes nothing.
        clipped_residual(residual, feature_norm_of(row_norms, feature_norms, i, intercept_term),
                         clip_norm, weight, largest, tiny, scaled)
        for k in range(n_outputs):
            clipped[r, k] = scaled[k]
    grad += np.dot(clipped.T, batch)


# "No weights" for the compiled kernels: an empty array (one compiled
# signature whether or not a fit is weighted, and no array of ones per step).
_UNWEIGHTED = np.empty(0, dtype=np.float64)


@njit(cache=True, nogil=True)
def _dense_chunks(
    X, y, rows, params, row_norms, feature_norms, code, threshold, clip_norm, fit_intercept,
    largest, tiny, weights, partial, zeros, progress, rows_per_chunk, again,
):
    """Chunks of the batch into their buffers (see ``_threads.sum_over_chunks``).

    ``again = -1``: every free chunk, one at a time; else chunk ``again``
    once more, into its spare buffer. Returns the chunks computed. With one
    output a thread takes its next chunk before starting the current one, so
    its rows are prefetched as ``upcoming``.
    """
    computed = 0
    several = params.shape[0] > 1
    gathered, per_row, coefficients, residual, scaled = single_output_buffers(
        params, rows_per_chunk)
    chunk = take_chunk(progress) if again < 0 else again
    following = -1
    if again < 0 and chunk >= 0 and not several:
        following = take_chunk(progress)
    while chunk >= 0:
        start = chunk * rows_per_chunk
        stop = min(start + rows_per_chunk, rows.shape[0])
        out = partial[chunk_slot(progress, chunk, again >= 0)]
        if several:
            several_outputs_gradient_sum(
                X, y, rows[start:stop], params, row_norms, feature_norms, code, threshold,
                clip_norm, fit_intercept, largest, tiny, zeros, out, weights)
        else:
            upcoming = rows[:0]
            if following >= 0:
                ahead = following * rows_per_chunk
                upcoming = rows[ahead:min(ahead + rows_per_chunk, rows.shape[0])]
            single_output_sum_into(
                X, y, rows[start:stop], params, row_norms, feature_norms, code, threshold,
                clip_norm, fit_intercept, largest, tiny, zeros, out, weights, gathered,
                per_row, coefficients, residual, scaled, upcoming)
        finish_chunk(progress, chunk, CHUNK_REDONE if again >= 0 else CHUNK_DONE)
        computed += 1
        if again >= 0:
            chunk = -1
        elif several:
            chunk = take_chunk(progress)
        else:
            chunk = following
            following = take_chunk(progress) if chunk >= 0 else -1
    return computed


def _per_row_argument(values, n_samples, what):
    """A kernel's optional per-row array: empty for None, else checked (no bounds checks there)."""
    if values is None:
        return _UNWEIGHTED
    if values.shape != (n_samples,) or values.dtype != np.float64:
        raise ValueError(f"{what} must be a float64 array with one entry per row of X.")
    return values


def check_feature_norms(feature_norms, n_samples):
    """The kernels' feature_norms argument: empty for None (computed per row), else checked."""
    return _per_row_argument(feature_norms, n_samples, "feature_norms")


def check_weights(weights, n_samples):
    """The kernels' weights argument: ``_UNWEIGHTED`` for None, else checked."""
    return _per_row_argument(weights, n_samples, "weights")


def noisy_clipped_gradient_sum(
    X, y, rows, params, row_norms, code, threshold, clip_norm, fit_intercept,
    noise, grad, n_threads=1, weights=None, feature_norms=None,
):
    """``grad = noise + sum_{i in rows} w_i clip_C(gradient of sample i)``.

    ``X`` C-contiguous float64 or float32, ``params``, ``noise`` and ``grad``
    (overwritten) of shape (K, d + 1) in its dtype; ``y`` the encoded
    targets; ``row_norms`` ``||x_i||`` (:func:`compute_row_norms`);
    ``weights`` (None: all 1) multiply the *clipped* gradients, so a sample
    contributes at most ``w_i C``; ``feature_norms`` ``||[x_i, 1]||`` when
    the fit computed them once (None: from ``row_norms`` as used).
    """
    weights = check_weights(weights, X.shape[0])
    feature_norms = check_feature_norms(feature_norms, X.shape[0])
    kernel = dense_gradient_kernel(params.shape[0])
    # The range of clipped coefficients the parameters' dtype holds exactly
    # enough; a sample outside it contributes nothing (see clipped_residual).
    largest, tiny = COEFFICIENT_RANGE[np.dtype(params.dtype)]
    work = rows.shape[0] * params.shape[0] * X.shape[1]
    args = (row_norms, feature_norms, code, threshold, clip_norm, fit_intercept, largest, tiny)
    if parallel_blocks(work, rows.shape[0], n_threads) > 1:
        sum_over_chunks(_dense_chunks, X, y, rows, params, args, noise, grad, weights,
                        n_threads, chunk_rows(rows.shape[0], params.size, n_threads))
    else:
        kernel(X, y, rows, params, *args, noise, grad, weights)


def _single_output_sum_from_python(
    X, y, rows, params, row_norms, feature_norms, code, threshold, clip_norm, fit_intercept,
    largest, tiny, noise, grad, weights,
):
    """:func:`single_output_gradient_sum` from Python (compiled, it re-optimises both parts)."""
    buffers = single_output_buffers(params, rows.shape[0])
    single_output_sum_into(X, y, rows, params, row_norms, feature_norms, code, threshold,
                           clip_norm, fit_intercept, largest, tiny, noise, grad, weights,
                           *buffers, rows[:0])


def dense_gradient_kernel(n_outputs):
    """The serial kernel of a dense batch: gathered blocks for one output, BLAS for several."""
    return several_outputs_gradient_sum if n_outputs > 1 else _single_output_sum_from_python


def parallel_blocks(work, n_rows, n_threads):
    """How many blocks to split a batch into: 1 (serial) below ``PARALLEL_MIN_WORK``.

    Each block gets at least ``PARALLEL_MIN_WORK / 4`` multiply-adds (a
    block costs a (K, d + 1) buffer to fill and add) and one row.
    """
    if n_threads <= 1 or work < PARALLEL_MIN_WORK:
        return 1
    return int(max(1, min(n_threads, n_rows, work // (PARALLEL_MIN_WORK // 4))))


@njit(cache=True, nogil=True)
def smooth_rows(grad, n_features, omega, sigma):
    """Apply A_sigma^{-1} in place to ``grad[k, :n_features]`` (not the intercepts), every k.

    With S the cyclic shift, A_sigma factors exactly as
    ``(sigma / omega) (I - omega S) (I - omega S^T)``, ``omega`` in (0, 1)
    (:func:`smoothing_omega`); each factor is inverted by a stable periodic
    recursion: O(d), against the reference FFT's O(d log d).
    """
    for k in range(grad.shape[0]):
        _smooth_row(grad[k], n_features, omega, sigma)


@njit(cache=True, nogil=True)
def _smooth_row(v, n_features, omega, sigma):
    """Apply A_sigma^{-1} in place to ``v[:n_features]`` (see :func:`smooth_rows`)."""
    d = n_features
    omega_d = omega**d
    # (I - omega S)^{-1}: p_i = v_i + omega p_{i-1}, periodic.
    # p_0 = sum_j omega^j v_{-j} / (1 - omega^d); the terms decay
    # geometrically, so the sum stops once they no longer matter.
    head = v[0]
    power = omega
    for j in range(1, d):
        if power < _NEGLIGIBLE:
            break
        head += power * v[d - j]
        power *= omega
    previous = head / (1.0 - omega_d)
    first = previous
    for i in range(1, d):
        previous = v[i] + omega * previous
        v[i] = previous
    v[0] = first
    # (I - omega S^T)^{-1}: u_i = p_i + omega u_{i+1}, periodic.
    tail = v[d - 1]
    power = omega
    for j in range(1, d):
        if power < _NEGLIGIBLE:
            break
        tail += power * v[j - 1]
        power *= omega
    following = tail / (1.0 - omega_d)
    v[d - 1] = following
    for i in range(d - 2, -1, -1):
        following = v[i] + omega * following
        v[i] = following
    scale = omega / sigma
    for i in range(d):
        v[i] *= scale


def smoothing_omega(sigma):
    """``(1 + 2 sigma - sqrt(1 + 4 sigma)) / (2 sigma)``, written without cancellation."""
    return 2.0 * sigma / (1.0 + 2.0 * sigma + math.sqrt(1.0 + 4.0 * sigma))
