"""Threads for one step's clipped sum (``n_jobs``), for the rows' norms, and for drawing ahead.

A step's batch is cut into chunks of a size fixed by public quantities (the
batch's length, the parameters' shape, the thread count:
:func:`chunk_rows`); each chunk's clipped sum is formed by the serial kernel
into a buffer of its own, and the buffers are added to the noise in chunk
order (:func:`sum_over_chunks`). The calling thread and ``n_jobs - 1``
helper threads take the chunks from a shared atomic counter
(:func:`take_chunk`), so a thread that the system runs late takes fewer
chunks, and none once they are all taken: a step never waits for a thread
that has not started. A chunk that a helper took but has not finished when
the calling thread runs out of chunks is, after a short wait, computed again
by the calling thread into a spare buffer; the first of the two to finish is
used, and both hold the same numbers. The result therefore depends on the
chunks only, never on which thread computed which: a fit is reproducible for
a fixed ``n_jobs`` however the threads were scheduled.

This replaced a Numba team launched per step (``parallel=True``, one static
block per thread): its join waited for every thread of the team, so with
another busy process on the cores ``n_jobs=2`` ran 2.7 to 9 times slower
than one thread.

The passes over every row that a fit makes once (the finiteness check of
``X``, the rows' norms) are shared the same way (:func:`blocks_on_threads`):
blocks of rows taken one at a time by the calling thread and the helpers,
a block a stalled helper holds computed again by the calling thread. A
pool's ``future.result()`` would wait for a thread the system does not run.

The random draws of a fit (batches and noise, chunk by chunk) do not depend
on the weights, so with several threads they are drawn one chunk ahead on a
thread of their own (:func:`draws_ahead`): the same generator, the same
calls, in the same order, hence the same numbers as drawn inline.
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


# --- Dynamic chunks: the threads take chunks of the batch from a shared counter ---
#
# A team launched per step waits at its join for every thread, including one
# that the operating system has not run yet: with another busy process on the
# cores, n_jobs=2 ran 2.7 to 9 times slower than one thread. Instead, the batch
# is cut into fixed chunks whose clipped sums go into buffers of their own; the
# calling thread and helpers take chunks from an atomic counter until none is
# left, and the chunks' sums are added to the noise in chunk order. A helper
# that starts late takes fewer chunks (none, if it starts after the last), and
# a chunk that a helper took but has not finished when the calling thread has
# nothing left to do is, after a short wait, computed again by the calling
# thread into a spare buffer (the first to finish is used: both hold the same
# numbers). So a step never waits for a thread that does not run, and the
# result depends only on the chunks, not on which thread computed what.


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


# Cycles a team helper waits for the next step before it returns to Python
# (where it yields the processor and comes back until the run is over): about
# 50 us. Spinning longer takes a core from the calling thread and from other
# processes when the machine is busy.
_HELPER_PATIENCE_CYCLES = 150_000


@njit(cache=True, nogil=True)
def next_published_step(control, seen):
    """What a team helper waits for: the count of steps published once above ``seen``.

    ``control[0]`` counts the steps the calling thread has published,
    ``control[1]`` is 1 once the run is over. Returns the new count (above
    ``seen``), ``-1`` when the run is over, or ``seen`` after waiting about
    ``_HELPER_PATIENCE_CYCLES`` with nothing new (the helper then returns to
    Python, yields the processor, and comes back).
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

    ``started`` and ``finished`` bracket the calling thread's own ``made``
    parts (cycle counts); a part a helper still holds at the deadline is
    made again by the calling thread, so a step never waits long for a
    thread the system does not run.
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
    """``grad = noise + sum_c partial[states[1 + c] - 1, c]``, in chunk order.

    A team run's chunk ``c`` is held by the buffers of the thread whose
    index plus one ``states[1 + c]`` is; the additions are those of
    :func:`add_chunks`.
    """
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
    """Rows per chunk of a batch of ``n_rows`` with ``n_parameters`` = K (d + 1).

    From public quantities only (the batch's length, the shape of the
    parameters and the thread count): at least two chunks per thread.
    """
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
                # No step for a while: the calling thread is not running (the
                # steps of a run follow each other within microseconds), so
                # leave the processor to it and to other processes for a
                # moment rather than spin (it computes any chunk left).
                time.sleep(_TEAM_IDLE_SLEEP)

    def release(self):
        """What a helper calls when it is done (nothing to free: the run's buffers are its own)."""


def run_with_team(run, helper, helper_args, control, n_threads):
    """``run()`` on this thread while ``n_threads - 1`` helpers run ``helper``.

    ``helper(*helper_args, thread, seen)`` (thread 1, 2, ...) returns -1 once
    ``control[1]`` is set, else the count of steps it has seen when it
    waited long for the next (it is then called again after yielding the
    processor). ``control[1]`` is set when ``run`` returns or raises, so no
    helper outlives the run by more than the step it is computing. ``run``
    must never wait for a helper (it computes again what a helper holds).
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

    The calling thread and ``n_threads - 1`` helpers (those of the steps'
    chunks) take the blocks one at a time; when the calling thread finds
    none left, it waits for the blocks helpers hold at most half again its
    own mean time per block, then computes the unfinished ones itself. So a
    pass never waits long for a thread the system does not run, and its
    result does not depend on which thread computed what. An error raised
    on a helper is raised again when the calling thread computes that block.
    ``function`` must release the GIL for most of its time to gain
    (NumPy's whole-array operations do).

    Parameters
    ----------
    function : callable
        ``function(block) -> value``; the same value on any thread.
    n_blocks : int
    n_threads : int

    Returns
    -------
    values : list
        ``function(b)`` for every block, in block order.
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
    """Hand ``shared`` to the ``n_threads - 1`` helper threads (none with one thread).

    Each helper calls ``shared.claim(-1)`` when it comes to it (after the
    work handed to it before), then ``shared.release()``. ``claim(-1)``
    computes whatever is left to take; the caller never waits for a helper
    to start, and computes again what a late helper holds (as
    :func:`blocks_on_threads` does), so its result must not depend on which
    thread computed what. An exception on a helper is swallowed there: the
    calling thread, computing the same part again, raises it.
    """
    if n_threads > 1:
        for work in _helpers(n_threads - 1).queues:
            work.put((shared.claim, (), shared))
