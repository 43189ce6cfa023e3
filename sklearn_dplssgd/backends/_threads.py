"""Threads for one step's clipped sum (``n_jobs``), and for drawing ahead.

A step's batch is split into contiguous blocks; each block's clipped sum is
formed by the serial kernel into its own buffer, and the buffers are added to
the noise. Two ways to run the blocks, with the same arithmetic:

* a Numba team (``parallel=True``, ``prange`` over the blocks): a launch
  costs about 2 us on the OpenMP and TBB threading layers, so it pays even
  at batch 256 on many cores;
* a pool of Python threads running the GIL-free kernel (about 70 us per step
  to wake and join two threads): used where the Numba team is unsafe or slow.
  Numba's ``workqueue`` layer (the one left when neither OpenMP nor TBB is
  installed) is not safe for launches from several threads at once and costs
  about 90 us per launch; a process forked after an OpenMP team started
  cannot start one (Numba stops such a child).

Which is used is decided once per process, by launching a tiny team
(:func:`numba_team_available`).

The random draws of a fit (batches and noise, chunk by chunk) do not depend
on the weights, so with several threads they are drawn one chunk ahead on a
thread of their own (:func:`draws_ahead`): the same generator, the same
calls, in the same order, hence the same numbers as drawn inline.
"""

import concurrent.futures
import os
import threading

import numba
import numpy as np
from numba import njit, prange

__all__ = [
    "add_blocks",
    "block_bounds",
    "block_buffers",
    "draws_ahead",
    "numba_team_available",
    "pooled_blocks",
    "sum_over_blocks",
    "team_threads",
]


@njit(parallel=True, nogil=True, cache=True)
def _probe(out):
    for i in prange(out.shape[0]):
        out[i] = i


_TEAM_LOCK = threading.Lock()
_TEAM = {"pid": None, "safe": False}


def numba_team_available():
    """Whether Numba's threading layer is safe and fast for a per-step team.

    Decided at the first call in each process (a tiny parallel launch makes
    Numba choose its layer): True for the ``omp`` and ``tbb`` layers, False
    for ``workqueue`` (not thread-safe, slow to launch), and False in a child
    forked from a process that had decided already (its team's threads did
    not survive the fork).
    """
    pid = os.getpid()
    with _TEAM_LOCK:
        if _TEAM["pid"] is None:
            _probe(np.empty(2))
            _TEAM["safe"] = numba.threading_layer() in ("omp", "tbb")
            _TEAM["pid"] = pid
        elif _TEAM["pid"] != pid:
            return False
        return _TEAM["safe"]


class team_threads:
    """Context: Numba's thread count for this thread set to ``n`` (restored after)."""

    def __init__(self, n_threads):
        self.n_threads = max(1, min(int(n_threads), numba.config.NUMBA_NUM_THREADS))

    def __enter__(self):
        self.previous = numba.get_num_threads()
        numba.set_num_threads(self.n_threads)
        return self.n_threads

    def __exit__(self, *exc):
        numba.set_num_threads(self.previous)


@njit(cache=True, nogil=True)
def block_bounds(n_rows, n_blocks):
    """Start of each of ``n_blocks`` contiguous blocks of ``n_rows``, and the end."""
    bounds = np.empty(n_blocks + 1, dtype=np.int64)
    for b in range(n_blocks + 1):
        bounds[b] = b * n_rows // n_blocks
    return bounds


@njit(parallel=True, nogil=True, cache=True)
def add_blocks(noise, partial, grad):
    """``grad = noise + sum_b partial[b]``, the outputs' rows split over the team."""
    n_outputs, n_columns = grad.shape
    for k in prange(n_outputs):
        for j in range(n_columns):
            grad[k, j] = noise[k, j]
        for b in range(partial.shape[0]):
            for j in range(n_columns):
                grad[k, j] += partial[b, k, j]


_BUFFERS = threading.local()


def block_buffers(n_blocks, shape, dtype):
    """``(partial, zeros)``: room for ``n_blocks`` block sums and a zero start.

    Kept per calling thread and reused from step to step (a fresh megabyte
    per step for 16 blocks cost page faults on every step); ``zeros`` is
    only ever read. Concurrent fits in different threads get their own.
    """
    key = (tuple(shape), np.dtype(dtype))
    cached = getattr(_BUFFERS, "arrays", None)
    if cached is None or cached[0] != key or cached[1].shape[0] < n_blocks + 1:
        store = np.zeros((n_blocks + 1,) + key[0], dtype=key[1])
        _BUFFERS.arrays = cached = (key, store)
    store = cached[1]
    return store[:n_blocks], store[store.shape[0] - 1]


# One pool per thread count, kept for the life of the process. Plain threads
# running the GIL-free serial kernel on parts of the batch behave well on a
# loaded machine, where a spinning team can be slowed down while it waits
# for cores.
_POOLS = {}


def _pool(n_threads):
    with _TEAM_LOCK:
        if n_threads not in _POOLS:
            _POOLS[n_threads] = concurrent.futures.ThreadPoolExecutor(
                max_workers=n_threads, thread_name_prefix="dplssgd"
            )
        return _POOLS[n_threads]


def pooled_blocks(kernel, X, y, rows, params, *args, noise, grad, weights, n_threads):
    """Run ``kernel`` on ``n_threads`` blocks of ``rows`` on the Python pool.

    ``kernel(X, y, rows, params, *args, start, out, weights)`` writes
    ``out = start + (the clipped sum over rows)``; block 0 starts from the
    noise and writes into ``grad``, the others start from zeros.
    """
    bounds = block_bounds(rows.shape[0], n_threads)
    partial = np.empty((n_threads - 1,) + grad.shape, dtype=grad.dtype)
    zeros = np.zeros_like(grad)
    outputs = [grad] + list(partial)
    starts = [noise] + [zeros] * (n_threads - 1)
    futures = [
        _pool(n_threads).submit(
            kernel, X, y, rows[bounds[i]:bounds[i + 1]], params, *args,
            starts[i], outputs[i], weights,
        )
        for i in range(1, n_threads)
    ]
    # The calling thread takes the first block itself.
    kernel(X, y, rows[bounds[0]:bounds[1]], params, *args, starts[0], outputs[0], weights)
    for future in futures:
        future.result()
    grad += partial.sum(axis=0)


def sum_over_blocks(team_kernel, kernel, X, y, rows, params, args, noise, grad, weights,
                    n_blocks):
    """``grad = noise + clipped sum over rows``, the batch split into ``n_blocks``.

    ``kernel(X, y, rows, params, *args, start, out, weights)`` is a serial
    kernel; ``team_kernel(X, y, rows, params, *args, noise, grad, weights,
    partial, zeros)`` runs it over the blocks on Numba's team. One block:
    the serial kernel; several: the team where it is available
    (:func:`numba_team_available`), else the Python pool.
    """
    if n_blocks > 1 and numba_team_available():
        with team_threads(n_blocks) as n_blocks:
            partial, zeros = block_buffers(n_blocks, params.shape, params.dtype)
            team_kernel(X, y, rows, params, *args, noise, grad, weights, partial, zeros)
    elif n_blocks > 1:
        pooled_blocks(kernel, X, y, rows, params, *args, noise=noise, grad=grad,
                      weights=weights, n_threads=n_blocks)
    else:
        kernel(X, y, rows, params, *args, noise, grad, weights)


def draws_ahead(chunks, draw):
    """Yield ``draw(chunk)`` for each chunk, computing the next one on a thread.

    ``draw`` is called for the chunks in order, one at a time, so a shared
    random generator is advanced exactly as by ``map(draw, chunks)``; the
    next chunk's draws overlap the caller's work on the current one (NumPy's
    generators release the GIL while they fill arrays).
    """
    chunks = list(chunks)
    if not chunks:
        return
    with concurrent.futures.ThreadPoolExecutor(
            max_workers=1, thread_name_prefix="dplssgd-draws") as executor:
        pending = executor.submit(draw, chunks[0])
        for chunk in chunks[1:]:
            ready = pending.result()
            pending = executor.submit(draw, chunk)
            yield ready
        yield pending.result()
