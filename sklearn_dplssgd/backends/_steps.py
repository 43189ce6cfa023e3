"""Compiled runs of consecutive steps: the NumPy backend's steps without Python between them.

One step of :func:`~sklearn_dplssgd.training.run_training` is a handful of calls (the
gradient kernel, the smoothing, the decay, the optimizer, the running mean),
each a Numba dispatch from Python: about 25 us a step, as much as the
gradient of a batch of 64 narrow rows. A backend may run a segment of a
chunk's steps in one compiled call instead; the loop still decides where
segments start and end (chunks, reported epochs), checks divergence and
reports, and every step does exactly what the Python step does, in the same
order and the same arithmetic (the tests compare the two bit for bit).

Each function here runs steps ``local_start .. local_stop - 1`` of a chunk
whose batches are ``rows[offsets[t]:offsets[t + 1]]`` (or every row, with
``full_batch``) and whose noise is ``noise[t]``, on one kind of input:
dense rows with one output, dense rows with several, CSR rows. They see only
arrays and scalars; the draws were made in Python.
"""

import numpy as np
from numba import njit

from ._kernels import (
    several_outputs_gradient_sum, single_output_buffers, single_output_sum_into, smooth_rows,
)
from ..training import apply_weight_decay, compiled_update
from ._sparse import csr_gradient_sum

__all__ = ["dense_several_outputs_steps", "dense_single_output_steps", "sparse_steps"]


@njit(cache=True, nogil=True)
def _batch(rows, offsets, full_batch, local):
    """The rows of the chunk's step ``local`` (every row with ``full_batch``)."""
    return rows if full_batch else rows[offsets[local]:offsets[local + 1]]


@njit(cache=True, nogil=True)
def _finish_step(params, grad, n_features, sigma, omega, learning_rates, step, alpha,
                 inv_batch, optimizer_code, optimizer_factor, optimizer_state, averaged,
                 average_start):
    """What follows the noisy gradient sum in step ``step`` (all post-processing).

    Smoothing, the decay ``params *= 1 - eta alpha``, the optimizer's update
    along the sum divided by b, and, from ``average_start`` on (-1: never),
    the running mean of the iterates in float64.
    """
    eta = learning_rates[step]
    if sigma > 0.0:
        smooth_rows(grad, n_features, omega, sigma)
    apply_weight_decay(params, 1.0 - eta * alpha, n_features)
    compiled_update(optimizer_code, optimizer_factor, params, grad, optimizer_state,
                    eta * inv_batch)
    if 0 <= average_start <= step:
        count = step - average_start + 1
        for k in range(params.shape[0]):
            for j in range(params.shape[1]):
                averaged[k, j] += (np.float64(params[k, j]) - averaged[k, j]) / count


@njit(cache=True, nogil=True)
def dense_single_output_steps(
    X, y, rows, offsets, full_batch, params, row_norms, feature_norms, code, threshold,
    clip_norm, fit_intercept, largest, tiny, noise, grad, weights, learning_rates,
    chunk_start, local_start, local_stop, alpha, sigma, omega, inv_batch, optimizer_code,
    optimizer_factor, optimizer_state, averaged, average_start,
):
    """Steps ``local_start .. local_stop - 1`` on dense rows with one output.

    ``average_start`` is -1 without averaging; ``optimizer_state`` is the
    optimizer's state array (any array of the parameters' shape for SGD).
    The next step's rows are known (the draws were made for the chunk), so
    the kernel prefetches them while it finishes this step's.
    """
    n_features = X.shape[1]
    # The kernel's buffers once for the run, not once a step.
    gathered, per_row, coefficients, residual, scaled = single_output_buffers(
        params, X.shape[0])
    for local in range(local_start, local_stop):
        batch = _batch(rows, offsets, full_batch, local)
        # The next step's rows (none after the chunk's last step), written
        # out here: a compiled helper would add to a first fit's compilation.
        upcoming = rows[:0]
        if full_batch:
            upcoming = rows
        elif local + 2 < offsets.shape[0]:
            upcoming = rows[offsets[local + 1]:offsets[local + 2]]
        single_output_sum_into(
            X, y, batch, params, row_norms, feature_norms, code, threshold, clip_norm,
            fit_intercept, largest, tiny, noise[local], grad, weights, gathered, per_row,
            coefficients, residual, scaled, upcoming)
        _finish_step(params, grad, n_features, sigma, omega, learning_rates, chunk_start + local,
                     alpha, inv_batch, optimizer_code, optimizer_factor, optimizer_state,
                     averaged, average_start)


@njit(cache=True, nogil=True)
def dense_several_outputs_steps(
    X, y, rows, offsets, full_batch, params, row_norms, feature_norms, code, threshold,
    clip_norm, fit_intercept, largest, tiny, noise, grad, weights, learning_rates,
    chunk_start, local_start, local_stop, alpha, sigma, omega, inv_batch, optimizer_code,
    optimizer_factor, optimizer_state, averaged, average_start,
):
    """As :func:`dense_single_output_steps`, for several outputs (the BLAS kernel)."""
    n_features = X.shape[1]
    for local in range(local_start, local_stop):
        batch = _batch(rows, offsets, full_batch, local)
        several_outputs_gradient_sum(
            X, y, batch, params, row_norms, feature_norms, code, threshold, clip_norm,
            fit_intercept, largest, tiny, noise[local], grad, weights)
        _finish_step(params, grad, n_features, sigma, omega, learning_rates, chunk_start + local,
                     alpha, inv_batch, optimizer_code, optimizer_factor, optimizer_state,
                     averaged, average_start)


@njit(cache=True, nogil=True)
def sparse_steps(
    X, y, rows, offsets, full_batch, params, row_norms, feature_norms, code, threshold,
    clip_norm, fit_intercept, largest, tiny, noise, grad, weights, learning_rates,
    chunk_start, local_start, local_stop, alpha, sigma, omega, inv_batch, optimizer_code,
    optimizer_factor, optimizer_state, averaged, average_start,
):
    """As :func:`dense_single_output_steps`; ``X`` is the tuple ``(data, indices, indptr)``."""
    n_features = params.shape[1] - 1
    for local in range(local_start, local_stop):
        batch = _batch(rows, offsets, full_batch, local)
        csr_gradient_sum(
            X, y, batch, params, row_norms, feature_norms, code, threshold, clip_norm,
            fit_intercept, largest, tiny, noise[local], grad, weights)
        _finish_step(params, grad, n_features, sigma, omega, learning_rates, chunk_start + local,
                     alpha, inv_batch, optimizer_code, optimizer_factor, optimizer_state,
                     averaged, average_start)
