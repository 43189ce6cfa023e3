"""Compiled runs of consecutive steps: the NumPy backend's steps without Python between them.

A step from Python is a handful of Numba dispatches (about 25 us); a backend
may run a segment of a chunk's steps in one compiled call instead, each step
doing exactly what the Python step does (the tests compare them bit for bit).
Each function runs steps ``local_start .. local_stop - 1`` of a chunk whose
batches are ``rows[offsets[t]:offsets[t + 1]]`` (every row with
``full_batch``) and whose integer noise is ``noise[t]``; the draws were made
in Python.
"""

import numpy as np
from numba import njit, types
from numba.extending import overload

from ._kernels import (
    several_outputs_gradient_sum, single_output_buffers, single_output_sum_into, smooth_rows,
)
from .._training import apply_weight_decay, compiled_update, release_on_lattice
from ._sparse import csr_gradient_sum
from ._threads import (
    atomic_add, cycle_count, finish_chunk, made_by, next_published_step, redo_deadline,
    take_chunk, team_add_chunks,
)

__all__ = [
    "dense_several_outputs_steps",
    "dense_single_output_steps",
    "finish_step",
    "step_rows",
    "sparse_steps",
    "team_helper",
    "team_steps",
]


@njit(cache=True, nogil=True)
def step_rows(rows, offsets, full_batch, local):
    """The rows of the chunk's step ``local`` (every row with ``full_batch``)."""
    return rows if full_batch else rows[offsets[local]:offsets[local + 1]]


@njit(cache=True, nogil=True)
def finish_step(params, grad, noise, lattice_step, n_features, sigma, omega, learning_rates,
                step, alpha, inv_batch, optimizer_code, optimizer_factor, optimizer_state,
                averaged, average_start):
    """The release of step ``step``'s clipped sum ``grad``, and what follows it.

    The release on the lattice, then post-processing only: smoothing, decay,
    the optimizer's update and, from ``average_start`` on (-1: never), the
    running mean of the iterates in float64.
    """
    release_on_lattice(grad, noise, lattice_step)
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
    optimizer_factor, optimizer_state, averaged, average_start, zero, lattice_step,
):
    """Steps ``local_start .. local_stop - 1`` on dense rows with one output.

    The kernel prefetches the next step's rows while it finishes this step's.
    """
    n_features = X.shape[1]
    # The kernel's buffers once for the run, not once a step.
    gathered, per_row, coefficients, residual, scaled = single_output_buffers(
        params, X.shape[0])
    for local in range(local_start, local_stop):
        batch = step_rows(rows, offsets, full_batch, local)
        # The next step's rows (none after the chunk's last step), written
        # out here: a compiled helper would add to a first fit's compilation.
        upcoming = rows[:0]
        if full_batch:
            upcoming = rows
        elif local + 2 < offsets.shape[0]:
            upcoming = rows[offsets[local + 1]:offsets[local + 2]]
        single_output_sum_into(
            X, y, batch, params, row_norms, feature_norms, code, threshold, clip_norm,
            fit_intercept, largest, tiny, zero, grad, weights, gathered, per_row,
            coefficients, residual, scaled, upcoming)
        finish_step(params, grad, noise[local], lattice_step, n_features, sigma, omega,
                    learning_rates, chunk_start + local, alpha, inv_batch, optimizer_code,
                    optimizer_factor, optimizer_state, averaged, average_start)


@njit(cache=True, nogil=True)
def dense_several_outputs_steps(
    X, y, rows, offsets, full_batch, params, row_norms, feature_norms, code, threshold,
    clip_norm, fit_intercept, largest, tiny, noise, grad, weights, learning_rates,
    chunk_start, local_start, local_stop, alpha, sigma, omega, inv_batch, optimizer_code,
    optimizer_factor, optimizer_state, averaged, average_start, zero, lattice_step,
):
    """As :func:`dense_single_output_steps`, for several outputs (the BLAS kernel)."""
    n_features = X.shape[1]
    for local in range(local_start, local_stop):
        batch = step_rows(rows, offsets, full_batch, local)
        several_outputs_gradient_sum(
            X, y, batch, params, row_norms, feature_norms, code, threshold, clip_norm,
            fit_intercept, largest, tiny, zero, grad, weights)
        finish_step(params, grad, noise[local], lattice_step, n_features, sigma, omega,
                    learning_rates, chunk_start + local, alpha, inv_batch, optimizer_code,
                    optimizer_factor, optimizer_state, averaged, average_start)


@njit(cache=True, nogil=True)
def sparse_steps(
    X, y, rows, offsets, full_batch, params, row_norms, feature_norms, code, threshold,
    clip_norm, fit_intercept, largest, tiny, noise, grad, weights, learning_rates,
    chunk_start, local_start, local_stop, alpha, sigma, omega, inv_batch, optimizer_code,
    optimizer_factor, optimizer_state, averaged, average_start, zero, lattice_step,
):
    """As :func:`dense_single_output_steps`; ``X`` is the tuple ``(data, indices, indptr)``."""
    n_features = params.shape[1] - 1
    for local in range(local_start, local_stop):
        batch = step_rows(rows, offsets, full_batch, local)
        csr_gradient_sum(
            X, y, batch, params, row_norms, feature_norms, code, threshold, clip_norm,
            fit_intercept, largest, tiny, zero, grad, weights)
        finish_step(params, grad, noise[local], lattice_step, n_features, sigma, omega,
                    learning_rates, chunk_start + local, alpha, inv_batch, optimizer_code,
                    optimizer_factor, optimizer_state, averaged, average_start)


# --- A run of steps shared by a team of threads ---
#
# The helpers join a whole run of steps: each waits (spinning, for a bounded
# time) for the next step to be published and takes its chunks from a counter.
# Each thread writes its chunks' sums into its own buffers (partial[thread,
# chunk]) and marks the chunk with 1 + its index; a chunk's sum is read from
# the thread that marked it, so a stalled helper writes only into a finished
# step's buffer nothing reads again, and the result depends on the chunks
# only. The caller computes itself a chunk that is late. CSR rows keep the
# Python steps (a team run gained them nothing).


def _chunk_sum(X, y, rows, params, row_norms, feature_norms, code, threshold, clip_norm,
               fit_intercept, largest, tiny, noise, grad, weights, buffers, upcoming, several):
    """``grad = noise + clipped sum over rows`` on dense rows (compiled only).

    The one-output kernel in ``buffers``, or the BLAS kernel where ``several``
    is not None (chosen from the types when the run compiles): those the
    Python step's chunks call, so a team run adds the same numbers.
    """
    raise NotImplementedError("compiled only: see _chunk_sum_of_kind")


@overload(_chunk_sum, jit_options={"nogil": True})
def _chunk_sum_of_kind(X, y, rows, params, row_norms, feature_norms, code, threshold,
                       clip_norm, fit_intercept, largest, tiny, noise, grad, weights, buffers,
                       upcoming, several):
    if not isinstance(several, types.NoneType):
        def several_sum(X, y, rows, params, row_norms, feature_norms, code, threshold,
                        clip_norm, fit_intercept, largest, tiny, noise, grad, weights, buffers,
                        upcoming, several):
            several_outputs_gradient_sum(
                X, y, rows, params, row_norms, feature_norms, code, threshold, clip_norm,
                fit_intercept, largest, tiny, noise, grad, weights)
        return several_sum

    def one_output_sum(X, y, rows, params, row_norms, feature_norms, code, threshold,
                       clip_norm, fit_intercept, largest, tiny, noise, grad, weights, buffers,
                       upcoming, several):
        gathered, per_row, coefficients, residual, scaled = buffers
        single_output_sum_into(
            X, y, rows, params, row_norms, feature_norms, code, threshold, clip_norm,
            fit_intercept, largest, tiny, noise, grad, weights, gathered, per_row,
            coefficients, residual, scaled, upcoming)
    return one_output_sum


def _takes_ahead(several):
    """Whether a thread takes its next chunk before it starts one: one output (compiled only)."""
    raise NotImplementedError("compiled only: see _takes_ahead_of_kind")


@overload(_takes_ahead, jit_options={"nogil": True})
def _takes_ahead_of_kind(several):
    ahead = isinstance(several, types.NoneType)
    return lambda several: ahead


@njit(cache=True, nogil=True)
def _team_chunks(X, y, batch, params, row_norms, feature_norms, code, threshold, clip_norm,
                 fit_intercept, largest, tiny, weights, partial, states, rows_per_chunk,
                 thread, buffers, again, several):
    """Chunks of one step's batch into ``partial[thread]``; how many it computed.

    ``states[0]`` counts the chunks taken, ``states[1 + c]`` is 1 + the index
    of the thread whose buffer holds chunk ``c`` (0 until finished).
    ``again = -1``: every chunk still free; else chunk ``again`` only.
    """
    n_rows = batch.shape[0]
    n_chunks = (n_rows + rows_per_chunk - 1) // rows_per_chunk
    # The last buffer stays zero: the chunks' sums start from it.
    zeros = partial[thread, partial.shape[1] - 1]
    computed = 0
    chunk = again
    following = -1
    take_ahead = _takes_ahead(several)
    if again < 0:
        chunk = take_chunk(states)
        chunk = chunk if 0 <= chunk < n_chunks else -1
        if chunk >= 0 and take_ahead:
            following = take_chunk(states)
            following = following if 0 <= following < n_chunks else -1
    while chunk >= 0:
        start = chunk * rows_per_chunk
        stop = min(start + rows_per_chunk, n_rows)
        upcoming = batch[:0]
        if following >= 0:
            ahead = following * rows_per_chunk
            upcoming = batch[ahead:min(ahead + rows_per_chunk, n_rows)]
        _chunk_sum(X, y, batch[start:stop], params, row_norms, feature_norms, code, threshold,
                   clip_norm, fit_intercept, largest, tiny, zeros, partial[thread, chunk],
                   weights, buffers, upcoming, several)
        finish_chunk(states, chunk, 1 + thread)
        computed += 1
        if again >= 0:
            break
        if not take_ahead:
            following = take_chunk(states)
            following = following if 0 <= following < n_chunks else -1
        chunk = following
        following = -1
        if chunk >= 0 and take_ahead:
            following = take_chunk(states)
            following = following if 0 <= following < n_chunks else -1
    return computed


@njit(cache=True, nogil=True)
def team_helper(
    X, y, rows, offsets, full_batch, params, row_norms, feature_norms, code, threshold,
    clip_norm, fit_intercept, largest, tiny, weights, partial, progress, control,
    chunk_sizes, local_start, several, thread, seen,
):
    """A helper's share of a team run: the chunks of each step published after ``seen``.

    ``control[0]`` counts the steps published (step ``local_start + p - 1``
    is the p-th), ``control[1]`` is 1 once the run is over. Returns the
    steps seen, when the run is over (``-1``) or after waiting about
    ``_HELPER_PATIENCE_CYCLES`` for the next step (the count seen).
    """
    buffers = single_output_buffers(params, max(1, int(chunk_sizes.max())))
    published = next_published_step(control, seen)
    while published > seen:
        seen = published
        row = published - 1
        if chunk_sizes[row] > 0:
            batch = step_rows(rows, offsets, full_batch, local_start + row)
            _team_chunks(X, y, batch, params, row_norms, feature_norms, code, threshold,
                         clip_norm, fit_intercept, largest, tiny, weights, partial,
                         progress[row], chunk_sizes[row], thread, buffers, -1, several)
        published = next_published_step(control, seen)
    return published


@njit(cache=True, nogil=True)
def team_steps(
    X, y, rows, offsets, full_batch, params, row_norms, feature_norms, code, threshold,
    clip_norm, fit_intercept, largest, tiny, noise, grad, weights, learning_rates,
    chunk_start, local_start, local_stop, alpha, sigma, omega, inv_batch, optimizer_code,
    optimizer_factor, optimizer_state, averaged, average_start, zero, lattice_step, partial,
    progress, control, chunk_sizes, several,
):
    """As :func:`dense_single_output_steps`, each batch's chunks shared with helper threads.

    ``chunk_sizes[t]`` is the rows per chunk of step ``local_start + t`` (0:
    serial). A step's sum is its chunks' sums in chunk order, as
    ``_threads.sum_over_chunks`` forms it: the model of the Python steps.
    """
    n_features = params.shape[1] - 1
    buffers = single_output_buffers(params, max(1, rows.shape[0]))
    chunk_buffers = single_output_buffers(params, max(1, int(chunk_sizes.max())))
    for local in range(local_start, local_stop):
        batch = step_rows(rows, offsets, full_batch, local)
        row = local - local_start
        rows_per_chunk = chunk_sizes[row]
        if rows_per_chunk == 0:
            _chunk_sum(X, y, batch, params, row_norms, feature_norms, code, threshold,
                       clip_norm, fit_intercept, largest, tiny, zero, grad, weights,
                       buffers, rows[:0], several)
            _fetch_step(control)
        else:
            states = progress[row]
            n_chunks = (batch.shape[0] + rows_per_chunk - 1) // rows_per_chunk
            _fetch_step(control)
            started = cycle_count()
            taken = _team_chunks(X, y, batch, params, row_norms, feature_norms, code, threshold,
                                 clip_norm, fit_intercept, largest, tiny, weights, partial,
                                 states, rows_per_chunk, 0, chunk_buffers, -1, several)
            deadline = redo_deadline(started, cycle_count(), taken)
            for chunk in range(n_chunks):
                if not made_by(states, chunk, deadline):
                    _team_chunks(X, y, batch, params, row_norms, feature_norms, code,
                                 threshold, clip_norm, fit_intercept, largest, tiny, weights,
                                 partial, states, rows_per_chunk, 0, chunk_buffers, chunk,
                                 several)
            team_add_chunks(zero, partial, states, n_chunks, grad)
        finish_step(params, grad, noise[local], lattice_step, n_features, sigma, omega,
                    learning_rates, chunk_start + local, alpha, inv_batch, optimizer_code,
                    optimizer_factor, optimizer_state, averaged, average_start)


@njit(cache=True, nogil=True)
def _fetch_step(control):
    """Publish the next step to the helpers."""
    atomic_add(control, 0, 1)
