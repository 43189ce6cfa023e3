"""Threads for one step's clipped sum (``n_jobs``), for the rows' norms, and for drawing ahead.

A step's batch is cut into chunks fixed by public quantities
(:func:`chunk_rows`); the calling thread and ``n_jobs - 1`` helpers take
chunks from an atomic counter (:func:`take_chunk`), each chunk's sum goes to
a buffer of its own, and the buffers are added to the noise in chunk order
(:func:`sum_over_chunks`). A chunk a late helper still holds is computed
again by the calling thread into a spare buffer (both hold the same numbers).
So a step never waits for a thread the system does not run (a team joined
per step did, and ran many times slower on busy cores), and the result
depends on the chunks only: a fit is reproducible for a fixed ``n_jobs``.
The once-per-fit passes over the rows share blocks the same way
(:func:`blocks_on_threads`); the draws, which do not depend on the weights,
run one chunk ahead on a thread of their own (:func:`draws_ahead`).
"""

import concurrent.futures
import os
import queue
import threading
import time

import numpy as np
from numba import njit, types
from llvmlite import ir
from numba.extending import intrinsic

__all__ = [
    "CHUNK_DONE",
    "CHUNK_REDONE",
    "add_chunks",
    "chunk_rows",
    "chunk_slot",
    "finish_chunk",
    "sum_over_chunks",
    "take_chunk",
    "atomic_read",
    "cycle_count",
    "atomic_add",
    "next_published_step",
    "redo_deadline",
    "made_by",
    "run_with_team",
    "team_add_chunks",
    "draws_ahead",
    "blocks_on_threads",
    "share_with_helpers",
]


def draws_ahead(chunks, draw):
    """Yield ``draw(chunk)`` for each chunk, computing the next one on a thread.

    The calls run in order, one at a time, so a shared generator advances
    exactly as by ``map(draw, chunks)``.
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


# --- Dynamic chunks: the threads take chunks of the batch from a shared counter ---


@intrinsic
def _fetch_add(typingctx, array, index, value):
    """Atomically ``old = array[index]; array[index] += value; return old`` (int64 arrays)."""
    signature = types.int64(array, types.intp, types.int64)

    def codegen(context, builder, sig, args):
        data = context.make_array(sig.args[0])(context, builder, args[0]).data
        return builder.atomic_rmw("add", builder.gep(data, [args[1]]), args[2], "seq_cst")
    return signature, codegen


@intrinsic
def _compare_exchange(typingctx, array, index, expected, value):
    """Atomically set ``array[index] = value`` if it equals ``expected``; whether it did."""
    signature = types.boolean(array, types.intp, types.int64, types.int64)

    def codegen(context, builder, sig, args):
        data = context.make_array(sig.args[0])(context, builder, args[0]).data
        pair = builder.cmpxchg(builder.gep(data, [args[1]]), args[2], args[3],
                               "seq_cst", "seq_cst")
        return builder.extract_value(pair, 1)
    return signature, codegen


@intrinsic
def cycle_count(typingctx):
    """The processor's cycle counter (``llvm.readcyclecounter``; 0 where it has none)."""
    signature = types.int64()

    def codegen(context, builder, sig, args):
        function = builder.module.declare_intrinsic(
            "llvm.readcyclecounter", fnty=ir.FunctionType(ir.IntType(64), []))
        return builder.call(function, [])
    return signature, codegen


@njit(cache=True, nogil=True)
def atomic_read(array, index):
    """``array[index]``, read afresh (a plain read in a wait loop may be hoisted out of it)."""
    return _fetch_add(array, index, 0)


@njit(cache=True, nogil=True)
def atomic_add(array, index, value):
    """Atomically ``array[index] += value``; the value it had."""
    return _fetch_add(array, index, value)


# Cycles (about 50 us) a team helper spins for the next step before it yields
# the processor: spinning longer takes a core from the others on a busy machine.
_HELPER_PATIENCE_CYCLES = 150_000


@njit(cache=True, nogil=True)
def next_published_step(control, seen):
    """The count of published steps (``control[0]``) once above ``seen``.

    ``-1`` once the run is over (``control[1]``), ``seen`` after
    ``_HELPER_PATIENCE_CYCLES`` with nothing new.
    """
    idle_since = cycle_count()
    while True:
        published = atomic_read(control, 0)
        if published > seen:
            return published
        if atomic_read(control, 1) != 0:
            return -1
        if cycle_count() - idle_since > _HELPER_PATIENCE_CYCLES:
            return seen


@njit(cache=True, nogil=True)
def redo_deadline(started, finished, made):
    """When the calling thread stops waiting for a helper's part: half again its own mean time.

    ``started`` and ``finished`` (cycles) bracket its own ``made`` parts.
    """
    return finished + (3 * (finished - started)) // (2 * max(1, made))


@njit(cache=True, nogil=True)
def made_by(states, part, deadline):
    """Whether part ``part`` (its state ``states[1 + part]``) is made by ``deadline``."""
    while atomic_read(states, 1 + part) == 0 and cycle_count() < deadline:
        pass
    return atomic_read(states, 1 + part) != 0


# progress[0] counts the chunks taken; progress[1 + c] is chunk c's state.
CHUNK_PENDING, CHUNK_DONE, CHUNK_REDONE = 0, 1, 2


@njit(cache=True, nogil=True)
def take_chunk(progress):
    """The next chunk nobody took (-1 when every chunk is taken)."""
    chunk = _fetch_add(progress, 0, 1)
    return chunk if chunk < progress.shape[0] - 1 else -1


@njit(cache=True, nogil=True)
def finish_chunk(progress, chunk, state):
    """Mark ``chunk`` finished (``CHUNK_DONE`` or ``CHUNK_REDONE``) unless it already is."""
    return _compare_exchange(progress, 1 + chunk, CHUNK_PENDING, state)


@njit(cache=True, nogil=True)
def chunk_slot(progress, chunk, redo):
    """The buffer of ``chunk``'s sum: its own, or its spare when computed again."""
    return chunk + (progress.shape[0] - 1 if redo else 0)


@njit(cache=True, nogil=True)
def add_chunks(noise, partial, progress, grad):
    """``grad = noise + sum_c (chunk c's sum)``, in chunk order."""
    n_chunks = progress.shape[0] - 1
    n_outputs, n_columns = grad.shape
    for k in range(n_outputs):
        for j in range(n_columns):
            grad[k, j] = noise[k, j]
    for c in range(n_chunks):
        slot = chunk_slot(progress, c, progress[1 + c] == CHUNK_REDONE)
        for k in range(n_outputs):
            for j in range(n_columns):
                grad[k, j] += partial[slot, k, j]


@njit(cache=True, nogil=True)
def team_add_chunks(noise, partial, states, n_chunks, grad):
    """``grad = noise + sum_c partial[states[1 + c] - 1, c]`` (c's holder), in chunk order."""
    n_outputs, n_columns = grad.shape
    for k in range(n_outputs):
        for j in range(n_columns):
            grad[k, j] = noise[k, j]
    for c in range(n_chunks):
        holder = atomic_read(states, 1 + c) - 1
        for k in range(n_outputs):
            for j in range(n_columns):
                grad[k, j] += partial[holder, c, k, j]


# Multiply-adds per chunk (rows * K * (d + 1)), and the rows a chunk holds:
# enough per chunk that a chunk's buffer and the Python call are small beside
# its arithmetic, few enough that a late thread costs a step little.
_CHUNK_WORK = 1 << 21
_CHUNK_ROWS = (64, 512)


def chunk_rows(n_rows, n_parameters, n_threads):
    """Rows per chunk of a batch, from public quantities only; at least two chunks a thread."""
    rows = min(max(_CHUNK_WORK // max(1, n_parameters), _CHUNK_ROWS[0]), _CHUNK_ROWS[1])
    return max(1, min(rows, -(-n_rows // (2 * n_threads))))


class _Helpers:
    """Helper threads of one size, each waiting on its own queue for a step's work."""

    def __init__(self, n_helpers):
        self.queues = [queue.SimpleQueue() for _ in range(n_helpers)]
        for index, work in enumerate(self.queues):
            threading.Thread(target=self._serve, args=(work,), daemon=True,
                             name=f"dplssgd-{index}").start()

    @staticmethod
    def _serve(work):
        while True:
            claim, args, job = work.get()
            try:
                claim(*args, -1)
            except Exception:  # noqa: BLE001
                # The calling thread computes again any chunk left unfinished
                # (and raises there if the error is real); the helper lives on.
                pass
            finally:
                job.release()


_HELPERS = {}
_HELPERS_LOCK = threading.Lock()


def _helpers(n_helpers):
    # Per process: a forked child has none of its parent's threads.
    with _HELPERS_LOCK:
        key = (os.getpid(), n_helpers)
        if key not in _HELPERS:
            _HELPERS[key] = _Helpers(n_helpers)
        return _HELPERS[key]


class _Job:
    """A step's chunk buffers and progress, reused once no helper still holds them."""

    def __init__(self, n_chunks, shape, dtype):
        self.partial = np.zeros((2 * n_chunks,) + tuple(shape), dtype=dtype)
        self.progress = np.zeros(n_chunks + 1, dtype=np.int64)
        self.zeros = np.zeros(shape, dtype=dtype)
        self.users = 0
        self.lock = threading.Lock()

    def acquire(self):
        with self.lock:
            self.users += 1

    def release(self):
        with self.lock:
            self.users -= 1

    def free(self):
        with self.lock:
            return self.users == 0


_JOBS = threading.local()


def _job(n_chunks, shape, dtype):
    """Buffers for ``n_chunks`` chunks that no late helper still writes (per calling thread)."""
    jobs = getattr(_JOBS, "jobs", None)
    if jobs is None:
        jobs = _JOBS.jobs = []
    for job in jobs:
        if (job.free() and job.progress.shape[0] == n_chunks + 1
                and job.zeros.shape == tuple(shape) and job.zeros.dtype == dtype):
            job.progress[:] = 0
            return job
    job = _Job(n_chunks, shape, dtype)
    if len(jobs) >= 8:
        jobs[:] = [old for old in jobs if not old.free()]
    jobs.append(job)
    return job


# How long the calling thread waits for a chunk a helper took, in multiples of
# its own mean time per chunk, before it computes the chunk again itself.
_PATIENCE = 1.5


def sum_over_chunks(claim, X, y, rows, params, args, noise, grad, weights, n_threads,
                    rows_per_chunk):
    """``grad = noise + clipped sum over rows``, the chunks shared by ``n_threads`` threads.

    ``claim(X, y, rows, params, *args, weights, partial, zeros, progress,
    rows_per_chunk, chunk)`` computes chunks into their buffers: with
    ``chunk = -1`` every chunk it can take (:func:`take_chunk`), else the
    given chunk again, into its spare buffer. Returns how many it computed.
    """
    n_chunks = -(-rows.shape[0] // rows_per_chunk)
    job = _job(n_chunks, params.shape, params.dtype)
    call = (X, y, rows, params, *args, weights, job.partial, job.zeros, job.progress,
            rows_per_chunk)
    for work in _helpers(n_threads - 1).queues:
        job.acquire()
        work.put((claim, call, job))
    started = time.perf_counter()
    taken = claim(*call, -1)
    states = job.progress[1:]
    if not states.all():
        finished = time.perf_counter()
        deadline = finished + _PATIENCE * (finished - started) / max(1, taken)
        while not states.all() and time.perf_counter() < deadline:
            time.sleep(0)
        for chunk in np.flatnonzero(states == CHUNK_PENDING):
            if job.progress[1 + chunk] == CHUNK_PENDING:
                claim(*call, int(chunk))
    add_chunks(noise, job.partial, job.progress, grad)


# Seconds a team run's helper sleeps once it has waited long for a step.
_TEAM_IDLE_SLEEP = 1e-4


class _TeamShare:
    """One helper's part in a team run: the compiled helper, called until the run is over."""

    def __init__(self, helper, args, thread):
        self.helper, self.args, self.thread = helper, args, thread

    def claim(self, _unused):
        seen = 0
        while seen >= 0:
            seen = self.helper(*self.args, self.thread, seen)
            if seen >= 0:
                # No step for a while: the calling thread is not running, so
                # leave it the processor rather than spin.
                time.sleep(_TEAM_IDLE_SLEEP)

    def release(self):
        """What a helper calls when it is done (nothing to free: the run's buffers are its own)."""


def run_with_team(run, helper, helper_args, control, n_threads):
    """``run()`` on this thread while ``n_threads - 1`` helpers run ``helper``.

    ``helper(*helper_args, thread, seen)`` returns -1 once ``control[1]`` is
    set (when ``run`` returns or raises), else the steps it has seen. ``run``
    must never wait for a helper.
    """
    control[:] = 0
    for thread, work in enumerate(_helpers(n_threads - 1).queues, start=1):
        share = _TeamShare(helper, helper_args, thread)
        work.put((share.claim, (), share))
    try:
        return run()
    finally:
        atomic_add(control, 1, 1)


class _SharedBlocks:
    """Blocks ``0 .. n_blocks - 1`` of a pass, each taken once by whichever thread asks.

    ``claim(-1)`` computes blocks until none is left to take; ``claim(b)``
    computes block ``b`` again. The first result of a block is kept (a
    block's function gives the same result on any thread).
    """

    def __init__(self, function, n_blocks):
        self.function, self.n_blocks = function, n_blocks
        self.results = [None] * n_blocks
        self.done = [False] * n_blocks
        self.next_block = 0
        self.n_done = 0
        self.lock = threading.Lock()
        self.finished = threading.Event()

    def _take(self):
        with self.lock:
            block = self.next_block
            self.next_block += 1
        return block if block < self.n_blocks else -1

    def claim(self, again):
        computed = 0
        block = self._take() if again < 0 else again
        while block >= 0:
            value = self.function(block)
            with self.lock:
                if not self.done[block]:
                    self.results[block], self.done[block] = value, True
                    self.n_done += 1
                    if self.n_done == self.n_blocks:
                        self.finished.set()
            computed += 1
            block = self._take() if again < 0 else -1
        return computed

    def release(self):
        """What a helper calls when it is done (nothing to free here)."""


def blocks_on_threads(function, n_blocks, n_threads):
    """``[function(b) for b in range(n_blocks)]``, the blocks shared by ``n_threads`` threads.

    As the steps' chunks: the calling thread computes again, after half again
    its mean time per block, any block a helper still holds (raising a
    helper's error there). ``function`` gives the same value on any thread
    and gains only where it releases the GIL.
    """
    shared = _SharedBlocks(function, n_blocks)
    if n_blocks > 1:
        share_with_helpers(shared, n_threads)
    started = time.perf_counter()
    taken = shared.claim(-1)
    if not shared.finished.is_set() and n_blocks > 0:
        waited = _PATIENCE * (time.perf_counter() - started) / max(1, taken)
        shared.finished.wait(waited)
        for block in range(n_blocks):
            if not shared.done[block]:
                shared.claim(block)
    return shared.results


def share_with_helpers(shared, n_threads):
    """Hand ``shared`` to the ``n_threads - 1`` helpers: each calls ``claim(-1)``, ``release()``.

    An exception on a helper is swallowed there; the calling thread, which
    computes again what a late helper holds, raises it.
    """
    if n_threads > 1:
        for work in _helpers(n_threads - 1).queues:
            work.put((shared.claim, (), shared))
