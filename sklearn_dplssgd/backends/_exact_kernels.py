"""Compiled kernels of the exact-noise mode's steps: a step's integer sum, on one thread or a team.

A step's rows are summed in fixed blocks of :data:`ROWS_PER_STEP_BLOCK`
rows (:func:`exact_blocks_sum`), each block gathered, clipped, rounded onto
the public grids and summed exactly while its rows are in cache. A run of
steps is one compiled call on one thread (:func:`exact_steps`) or on a team
(:func:`exact_team_steps` with :func:`exact_team_helper` on the helpers):
the team takes a step's blocks from a shared counter, each block's integers
into a buffer of the thread that made it, and the calling thread adds the
blocks' buffers. The blocks are fixed and their sums are integers, so the
released integers never depend on the threads. :mod:`~._exact` documents
the mode.
"""

import math

import numpy as np
from numba import njit

from ..training import multiclass_residual, single_output_residual
from ._clipping import clipped_residual
from ._grid_sum import add_factored_rows
from ._steps import finish_step, step_rows
from ._threads import (
    atomic_add, atomic_read, cycle_count, finish_chunk, made_by, next_published_step,
    redo_deadline,
)

__all__ = [
    "PARTS_PER_THREAD", "ROWS_PER_STEP_BLOCK", "exact_blocks_sum", "exact_steps",
    "exact_team_helper", "exact_team_steps", "gather_margins", "scaled_clipped_residuals",
    "scaled_noisy_sum", "team_parts",
]

# Rows of a step gathered, clipped, rounded and summed together: a block's
# rows (about 400 KB at MNIST's width in float32) stay in cache from the
# gather to the integer sum. A public constant: the margins' BLAS calls, and
# so the released integers, do not depend on the threads.
ROWS_PER_STEP_BLOCK = 64
# Parts a thread of a step shared by the threads (whole row blocks), taken one
# at a time.
PARTS_PER_THREAD = 4


@njit(cache=True, nogil=True)
def scaled_noisy_sum(total, noise, grid_step, grad):
    """``grad = gamma (S + Y)``: ``Y`` on the noisy columns, in int64, then times the grid step."""
    n_outputs, width = total.shape
    n_noisy = noise.shape[1]
    for k in range(n_outputs):
        for j in range(width):
            value = total[k, j] + noise[k, j] if j < n_noisy else total[k, j]
            grad[k, j] = np.float64(value) * grid_step


@njit(cache=True, nogil=True)
def exact_steps(X, y, rows, offsets, full_batch, params, feature_norms, code, threshold,
                clip_norm, intercept_term, weights, largest, tiny, residual_scale,
                row_grid_scale, residual_bound, row_bound, noise, grid_step, total, grad,
                learning_rates, chunk_start, local_start, local_stop, alpha, sigma, omega,
                inv_batch, optimizer_code, optimizer_factor, optimizer_state, averaged,
                average_start):
    """Steps ``local_start .. local_stop - 1`` of a chunk, each on one thread.

    A step is :meth:`~._exact.ExactNoiseTraining.gradient_sum`'s: ``S`` over all the
    batch's row blocks (:func:`exact_blocks_sum`), ``grad = gamma (S +
    noise[local])`` (:func:`scaled_noisy_sum`), then the post-processing
    of :func:`~._steps.finish_step`.
    """
    n_features = X.shape[1]
    for local in range(local_start, local_stop):
        batch = rows if full_batch else rows[offsets[local]:offsets[local + 1]]
        total[:] = 0
        exact_blocks_sum(X, y, batch, params, feature_norms, code, threshold, clip_norm,
                         intercept_term, weights, largest, tiny, residual_scale,
                         row_grid_scale, residual_bound, row_bound, 0,
                         (batch.shape[0] + ROWS_PER_STEP_BLOCK - 1) // ROWS_PER_STEP_BLOCK,
                         total)
        scaled_noisy_sum(total, noise[local], grid_step, grad)
        finish_step(params, grad, n_features, sigma, omega, learning_rates, chunk_start + local,
                    alpha, inv_batch, optimizer_code, optimizer_factor, optimizer_state,
                    averaged, average_start)


@njit(cache=True, nogil=True)
def exact_blocks_sum(X, y, batch, params, feature_norms, code, threshold, clip_norm,
                     intercept_term, weights, largest, tiny, residual_scale, row_grid_scale,
                     residual_bound, row_bound, first_block, stop_block, total):
    """``total += S`` of the batch's row blocks ``first_block .. stop_block - 1``.

    Block ``b`` is the batch's rows ``b R .. (b + 1) R - 1`` (``R =``
    :data:`ROWS_PER_STEP_BLOCK`): :func:`gather_margins` of its rows (one
    BLAS product), then :func:`clipped_factored_sum` of them, all while
    they are in cache. Returns the rows left out.
    """
    n_rows, width = batch.shape[0], params.shape[1]
    n_outputs = params.shape[0]
    design = np.empty((ROWS_PER_STEP_BLOCK, width), dtype=params.dtype)
    scaled = np.empty((ROWS_PER_STEP_BLOCK, n_outputs), dtype=np.float64)
    left_out = 0
    for b in range(first_block, stop_block):
        start = b * ROWS_PER_STEP_BLOCK
        rows = batch[start:min(start + ROWS_PER_STEP_BLOCK, n_rows)]
        margins = gather_margins(X, rows, params, intercept_term, design[:rows.shape[0]])
        left_out += clipped_factored_sum(
            X, y, rows, params, margins, feature_norms, code, threshold, clip_norm,
            intercept_term, weights, largest, tiny, residual_scale, row_grid_scale,
            residual_bound, row_bound, 0, rows.shape[0], scaled, total)
    return left_out


@njit(cache=True, nogil=True)
def clipped_factored_sum(X, y, batch, params, margins, feature_norms, code, threshold,
                         clip_norm, intercept_term, weights, largest, tiny, residual_scale,
                         row_grid_scale, residual_bound, row_bound, start, stop, scaled, total):
    """``total += S`` of the batch's rows ``start .. stop - 1``; returns the rows left out.

    :func:`scaled_clipped_residuals` (the residual factors before rounding,
    on the grid ``residual_scale``), then
    :func:`~._grid_sum.add_factored_rows` (the rows' factors on
    ``row_grid_scale``, both norms enforced against ``residual_bound`` and
    ``row_bound``, the products summed exactly).
    """
    scaled_clipped_residuals(X, y, batch, params, margins, feature_norms, code, threshold,
                             clip_norm, intercept_term, weights, largest, tiny, residual_scale,
                             start, stop, scaled)
    return add_factored_rows(X, batch, scaled, feature_norms, row_grid_scale, intercept_term,
                             residual_bound, row_bound, start, stop, total)


@njit(cache=True, nogil=True)
def gather_margins(X, batch, params, intercept_term, design):
    """``design[r] = [x_i, b]`` for the batch's rows; returns ``design params^T`` (BLAS)."""
    n_rows, n_features = batch.shape[0], X.shape[1]
    for r in range(n_rows):
        # Element by element: a slice assignment compiles Numba's general
        # broadcasting.
        i = batch[r]
        for j in range(n_features):
            design[r, j] = X[i, j]
        design[r, n_features] = intercept_term
    if n_rows == 0:
        return np.zeros((0, params.shape[0]), dtype=params.dtype)
    return np.dot(design, params.T)


@njit(cache=True, nogil=True)
def scaled_clipped_residuals(X, y, batch, params, margins, feature_norms, code, threshold,
                             clip_norm, intercept_term, weights, largest, tiny, scale, start,
                             stop, scaled):
    """``scaled[r] = clip(r_i) ||x'_i|| scale`` for the batch's rows ``start .. stop - 1``.

    The residual factor ``u_i = clip(r_i) ||x'_i||`` (norm at most ``w_i C``)
    on the residual grid. The residuals are clipped (and weighted) as the
    ordinary kernels clip them, in float64; only their bound matters to the
    guarantee, and it is enforced on the integers.
    """
    n_features = X.shape[1]
    n_outputs = params.shape[0]
    row_margins = np.empty(n_outputs, dtype=np.float64)
    row_residual = np.empty(n_outputs, dtype=np.float64)
    clipped = np.empty(n_outputs, dtype=np.float64)
    for r in range(start, stop):
        i = batch[r]
        for k in range(n_outputs):
            row_margins[k] = margins[r, k]
            if not math.isfinite(row_margins[k]):
                # A float32 sum that overflowed: the margin in float64.
                acc = np.float64(params[k, n_features]) * intercept_term
                for j in range(n_features):
                    acc += np.float64(params[k, j]) * np.float64(X[i, j])
                row_margins[k] = acc
        if n_outputs == 1:
            row_residual[0] = single_output_residual(code, row_margins[0], y[i], threshold)
        else:
            multiclass_residual(code, row_margins, y[i], threshold, row_residual)
        weight = weights[i] if weights.shape[0] > 0 else 1.0
        clipped_residual(row_residual, feature_norms[i], clip_norm, weight, largest, tiny,
                         clipped)
        row_scale = feature_norms[i] * scale
        for k in range(n_outputs):
            scaled[r, k] = clipped[k] * row_scale


@njit(cache=True, nogil=True)
def team_parts(n_rows, n_threads):
    """``(parts, blocks per part)`` of a team step of ``n_rows`` rows.

    Whole row blocks, about :data:`PARTS_PER_THREAD` parts a thread (so
    that a thread the system runs late costs a step little, and a part's
    buffer is small beside its rows).
    """
    n_blocks = (n_rows + ROWS_PER_STEP_BLOCK - 1) // ROWS_PER_STEP_BLOCK
    per_part = max(1, (n_blocks + PARTS_PER_THREAD * n_threads - 1)
                   // (PARTS_PER_THREAD * n_threads))
    return (n_blocks + per_part - 1) // per_part, per_part


@njit(cache=True, nogil=True)
def check_team_buffers(n_parts, partial, states):
    """Refuse a step of ``n_parts`` parts that its buffers cannot hold.

    Compiled code checks no bounds: a part past ``partial``'s or ``states``'
    end would be written over another part's sum (a row counted twice) or
    past the array. Checked before anything of the step is written.
    """
    if n_parts > partial.shape[1] or n_parts + 1 > states.shape[0]:
        raise IndexError("exact team step: more parts than its buffers hold")


@njit(cache=True, nogil=True)
def _team_parts(X, y, batch, params, feature_norms, code, threshold, clip_norm,
                intercept_term, weights, largest, tiny, residual_scale, row_grid_scale,
                residual_bound, row_bound, partial, states, thread, only_part):
    """Parts of a step's sum into ``partial[thread, p]``; how many this call made.

    ``states[0]`` counts the parts taken, ``states[1 + p]`` is 0 until part
    ``p`` is made, then the index plus one of the thread whose buffer holds
    it (the first to finish). With ``only_part = -1`` the parts nobody
    took, else part ``only_part`` again.
    """
    n_rows = batch.shape[0]
    n_blocks = (n_rows + ROWS_PER_STEP_BLOCK - 1) // ROWS_PER_STEP_BLOCK
    n_parts, per_part = team_parts(n_rows, partial.shape[0])
    check_team_buffers(n_parts, partial, states)
    made = 0
    part = atomic_add(states, 0, 1) if only_part < 0 else only_part
    while part >= 0 and part < n_parts:
        buffer = partial[thread, part]
        buffer[:] = 0
        exact_blocks_sum(X, y, batch, params, feature_norms, code, threshold, clip_norm,
                         intercept_term, weights, largest, tiny, residual_scale, row_grid_scale,
                         residual_bound, row_bound, part * per_part,
                         min((part + 1) * per_part, n_blocks), buffer)
        finish_chunk(states, part, thread + 1)
        made += 1
        part = atomic_add(states, 0, 1) if only_part < 0 else -1
    return made


@njit(cache=True, nogil=True)
def exact_team_helper(X, y, rows, offsets, full_batch, params, feature_norms, code, threshold,
                      clip_norm, intercept_term, weights, largest, tiny, residual_scale,
                      row_grid_scale, residual_bound, row_bound, partial, progress, control,
                      local_start, thread, seen):
    """A helper's share of :func:`exact_team_steps`: the blocks of each step published.

    ``control[0]`` counts the steps published (step ``local_start + p - 1``
    is the p-th), ``control[1]`` is 1 once the run is over. Returns -1 when
    the run is over, else the steps seen after waiting long for the next.
    """
    published = next_published_step(control, seen)
    while published > seen:
        seen = published
        row = published - 1
        batch = step_rows(rows, offsets, full_batch, local_start + row)
        _team_parts(X, y, batch, params, feature_norms, code, threshold, clip_norm,
                    intercept_term, weights, largest, tiny, residual_scale, row_grid_scale,
                    residual_bound, row_bound, partial, progress[row], thread, -1)
        published = next_published_step(control, seen)
    return published


@njit(cache=True, nogil=True)
def exact_team_steps(X, y, rows, offsets, full_batch, params, feature_norms, code, threshold,
                     clip_norm, intercept_term, weights, largest, tiny, residual_scale,
                     row_grid_scale, residual_bound, row_bound, noise, grid_step, total, grad,
                     learning_rates, chunk_start, local_start, local_stop, alpha, sigma, omega,
                     inv_batch, optimizer_code, optimizer_factor, optimizer_state, averaged,
                     average_start, partial, progress, control):
    """As :func:`exact_steps`, each step's row blocks shared with helper threads.

    The helpers run :func:`exact_team_helper` meanwhile. This thread
    publishes a step, makes the blocks nobody took, waits for those a helper
    holds at most half again its own mean time per block, and makes any
    still unfinished again itself; so a step never waits long for a thread
    the system does not run. ``S`` is the sum of the blocks' integers, the
    same whichever thread made which.
    """
    n_features = X.shape[1]
    for local in range(local_start, local_stop):
        batch = step_rows(rows, offsets, full_batch, local)
        states = progress[local - local_start]
        n_parts = team_parts(batch.shape[0], partial.shape[0])[0]
        # Before the step is published, so that no helper starts it.
        check_team_buffers(n_parts, partial, states)
        atomic_add(control, 0, 1)
        started = cycle_count()
        made = _team_parts(X, y, batch, params, feature_norms, code, threshold, clip_norm,
                           intercept_term, weights, largest, tiny, residual_scale,
                           row_grid_scale, residual_bound, row_bound, partial, states, 0, -1)
        deadline = redo_deadline(started, cycle_count(), made)
        total[:] = 0
        for part in range(n_parts):
            if not made_by(states, part, deadline):
                _team_parts(X, y, batch, params, feature_norms, code, threshold, clip_norm,
                            intercept_term, weights, largest, tiny, residual_scale,
                            row_grid_scale, residual_bound, row_bound, partial, states, 0,
                            part)
            holder = atomic_read(states, 1 + part) - 1
            if holder < 0 or holder >= partial.shape[0]:
                raise IndexError("exact team step: a part without a valid holder")
            total += partial[holder, part]
        scaled_noisy_sum(total, noise[local], grid_step, grad)
        finish_step(params, grad, n_features, sigma, omega, learning_rates, chunk_start + local,
                    alpha, inv_batch, optimizer_code, optimizer_factor, optimizer_state,
                    averaged, average_start)
