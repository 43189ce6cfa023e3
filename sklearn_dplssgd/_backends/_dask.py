"""DP-LSSGD on a Dask array: the rows stay in their partitions, on the cluster.

The same mechanism as the NumPy backend (:class:`DaskTraining` implements
:class:`~sklearn_dplssgd._training.TrainingBackend` for the one training loop):
each step, every partition Poisson-samples its own rows (each row
independently with probability q) and returns the clipped-gradient sum of
its sample, computed by the NumPy backend's kernel
(:func:`~sklearn_dplssgd._backends._kernels.noisy_clipped_gradient_sum`, with
zero noise); the loop adds the partial sums and releases their total on the
lattice with the step's integer noise, once (drawn from the fit's generator,
as the NumPy backend draws it; :mod:`~sklearn_dplssgd._training._lattice`),
smooths and steps. A step sends the weights out and brings ``n_blocks`` arrays
of shape ``(K, d + 1)`` back; no row leaves its partition.

The partitions are prepared once per fit (made C-contiguous, checked finite,
their norms computed) and held where they are computed: on the workers of
the active ``dask.distributed`` client, or in this process under Dask's
local scheduler when no client is active. On a cluster, each worker's
partitions are then handed to one Dask actor on that worker, so that a step
is one direct call per worker (the weights out, the worker's partial sums
back as one array) rather than one scheduled task per partition. The loop
itself then runs on one of those workers, the coordinator
(:class:`_CoordinatorTraining`): the workers already hold the rows, so they
may hold the fit's generator too. A step is one hop from the coordinator to
each other worker and back, overlapped with the coordinator's own
partitions, instead of a round trip from the client to every worker (and
through the scheduler unless the client is made with
``direct_to_workers=True``); only the released parameters and the
generator's state come back. A fit that prints progress (``verbose``) or
calls back every epoch keeps the loop on the client, which needs the
iterate every epoch.

The sampling randomness of partition k at step t comes from an AES-CTR
generator keyed from ``(s_k, t)``, ``s_k`` two 63-bit words drawn from the
fit's own generator: as secret as the noise (fresh entropy unless
``reproducible=True``), it travels to the workers only, and makes a fit
reproducible for the same partitions and seed. Because each step's sample
depends on ``(s_k, t)`` alone, a task recomputed elsewhere draws the same
sample; a partition that had to be rebuilt (its worker was lost) is detected
by its token and fails the fit before anything is released.

What crosses the cluster's network is secret: :mod:`._dask_network` decides
whether it may carry it, before anything is sent.
"""

import contextlib
import dataclasses
import os
import warnings

import numpy as np

from .._training import derived_generator, release_on_lattice, run_training
from ._kernels import (
    compute_feature_norms, compute_row_norms, noisy_clipped_gradient_sum, smooth_rows,
    smoothing_omega,
)
from ._dask_network import active_client as _active_client, check_cluster_network
from ._numpy import HostWeightSteps, LONG_ROWS_MESSAGE, chunk_noise, poisson_batches, \
    rounded_gaussian_noise, without_long_rows

__all__ = ["DaskTraining", "NonFiniteRowsError", "WorkerLostError", "is_dask_collection",
           "train_dp_lssgd_dask"]

NON_FINITE_MESSAGE = (
    "X or y contains NaN or infinity (found on a Dask worker); nothing was trained "
    "or released. Clean or impute the rows before the fit (imputing with statistics "
    "of the private rows is itself a release)."
)

WORKER_LOST_MESSAGE = (
    "A Dask worker holding training rows was lost during the fit: its partitions "
    "were rebuilt, so the fit stopped and released nothing. Any ledger was "
    "charged for this fit (it may have read rows). Fit again on a stable cluster."
)

# Seconds between the client's checks that the holders of a fit run on a
# worker are still where they were (a check is one look at their futures).
_LIVENESS_PERIOD = 0.5


class NonFiniteRowsError(ValueError):
    """A partition of a Dask fit holds NaN or infinite values (no value is named)."""


class WorkerLostError(RuntimeError):
    """A worker holding a partition of a Dask fit was lost mid-fit."""


# What Dask raises for a call to an actor whose worker is gone or came back
# without it: the worker cannot be reached (OSError), the actor's task is
# lost (RuntimeError), the restarted worker holds no such actor (KeyError).
_LOST_WORKER_ERRORS = (OSError, RuntimeError, KeyError)


class _Raised:
    """An error of the fit's own code on a worker, sent back as a value.

    Dask re-raises a remote call's error with its type, as it raises a lost
    worker's (:data:`_LOST_WORKER_ERRORS`): returned as a value, an error of
    the fit's code keeps its type, and what a call itself raises is Dask's.
    """

    def __init__(self, error):
        self.error = error


def _unwrap(answer):
    """``answer``, or the error of the fit's code it carries raised here."""
    if isinstance(answer, _Raised):
        raise answer.error
    return answer


def is_dask_collection(X):
    """Whether ``X`` is a Dask collection (an array or a DataFrame), without importing Dask."""
    return callable(getattr(X, "__dask_graph__", None)) and not isinstance(X, type)


@dataclasses.dataclass(frozen=True)
class _StepSettings:
    """What a partition's task needs besides its rows and the weights (public)."""

    loss_code: int
    loss_threshold: float
    clip_norm: float
    fit_intercept: bool
    sample_rate: float


class _Partition:
    """One partition's rows as a fit holds them on its worker."""

    def __init__(self, X, y, weights, fit_intercept):
        self.X = np.ascontiguousarray(X)
        self.y = np.ascontiguousarray(y, dtype=np.float64).reshape(-1)
        self.weights = None if weights is None else np.ascontiguousarray(
            weights, dtype=np.float64).reshape(-1)
        # A row with a NaN or infinite entry has no finite norm: finite norms
        # prove the rows finite, and the check over X (a second pass over the
        # partition) is needed only where a norm is not (or a row is too long).
        with np.errstate(invalid="ignore"):
            # A non-finite row's rescaled norm divides inf by inf: NaN, as it should.
            row_norms = compute_row_norms(self.X)
        self.finite = bool(np.isfinite(self.y).all()) and (
            bool(np.isfinite(row_norms).all()) or bool(np.isfinite(self.X).all()))
        self.long_rows = False
        if self.finite:
            with warnings.catch_warnings(record=True) as caught:
                warnings.simplefilter("always")
                self.row_norms = without_long_rows(np, row_norms)
            # The client warns once (a worker's warning reaches no one).
            self.long_rows = bool(caught)
            self.feature_norms = compute_feature_norms(
                self.row_norms, 1.0 if fit_intercept else 0.0)
        # Identifies this copy: a partition rebuilt after a lost worker has another.
        self.token = os.urandom(16)

    def summary(self):
        return self.finite, self.long_rows, self.token


def _prepare(X, y, weights, fit_intercept):
    return _Partition(X, y, weights, fit_intercept)


def _summary(partition):
    return partition.summary()


class _Batch:
    """A step's Poisson sample of a partition: its row indices, the rows left in place.

    The kernel reads the sampled rows through the indices, in the sample's
    order. Not gathered into arrays of their own: measured on a 2-worker
    LocalCluster (d = 100, about 400 rows a partition), copying them out
    cost a worker more a step than the kernel saves by reading them in
    order (each copy a fresh allocation of some hundred kilobytes, which
    the workers' allocator settings map and unmap every time), and a draw
    run ahead of its call still held up the step.
    """

    def __init__(self, partition, rows=None):
        self.X, self.y, self.row_norms, self.feature_norms, self.weights = (
            partition.X, partition.y, partition.row_norms, partition.feature_norms,
            partition.weights)
        self.rows = np.arange(self.X.shape[0], dtype=np.int64) if rows is None else rows


def _step_batch(partition, seed, step, settings):
    """This step's sample of the partition's rows: each row independently with probability q.

    Drawn from the generator of ``(seed, step)`` alone, whoever draws it and
    whenever: the same sample on a worker, ahead of its call, or here.
    """
    if settings.sample_rate >= 1.0:
        return _Batch(partition)
    rng = derived_generator([int(seed[0]), int(seed[1]), int(step)])
    rows, _ = poisson_batches(rng, partition.X.shape[0], settings.sample_rate, 1)
    return _Batch(partition, rows)


def _batch_gradient_sum(batch, params, settings, out):
    """The clipped-gradient sum over a step's batch, written into ``out`` (no noise)."""
    weighting = {} if batch.weights is None else {"weights": batch.weights}
    noisy_clipped_gradient_sum(
        batch.X, batch.y, batch.rows, params, batch.row_norms, settings.loss_code,
        settings.loss_threshold, settings.clip_norm, settings.fit_intercept,
        np.zeros_like(params), out, 1, feature_norms=batch.feature_norms, **weighting)
    return out


def _partition_sum(partition, seed, params, step, settings):
    """The clipped-gradient sum over this step's Poisson sample of the partition.

    Runs where the partition lives; returns ``(sum, token)``.
    """
    batch = _step_batch(partition, seed, step, settings)
    return _batch_gradient_sum(batch, params, settings, np.empty_like(params)), partition.token


class _PartitionHolder:
    """A worker's partitions of a fit, held by one Dask actor for the whole fit.

    A step is one call per worker carrying the weights and bringing back
    one array: the sums of the worker's partitions, in their order. The
    call comes from the coordinator (the holder on another worker that runs
    the loop, :meth:`train`), or from the client when the loop runs there.
    It is answered on the worker's event loop (an ``async`` method), which
    computes the sums itself (no thread hop either way: about 0.5 ms a step
    less, measured worker to worker) and then queues the next step's sample
    (it does not depend on the weights) on the same loop, to be drawn while
    the answer travels and the coordinator noises and steps.
    """

    def __init__(self, seeds, settings, tokens, *partitions):
        self.seeds, self.settings, self.partitions = seeds, settings, partitions
        # The tokens the client read: partitions rebuilt after a lost worker
        # (under an actor rebuilt with them) have others, and fail every call.
        self.tokens = tokens
        self._drawn_step, self._drawn_batches = None, None
        # Set by the client when it sees a worker of the fit lost, for a loop
        # run here that waits on a call the lost worker will never answer.
        self._stopped = False

    def _draw(self, step):
        batches = [_step_batch(partition, seed, step, self.settings)
                   for partition, seed in zip(self.partitions, self.seeds)]
        # Marked drawn only once all are: a draw that failed half way (it ran
        # ahead, where nothing reports its error) leaves no stale batch for
        # this step, which then draws its own.
        self._drawn_step, self._drawn_batches = step, batches

    def _sums(self, params, step):
        if [partition.token for partition in self.partitions] != self.tokens:
            raise WorkerLostError(WORKER_LOST_MESSAGE)
        if self._drawn_step != step:
            self._draw(step)
        sums = np.empty((len(self.partitions),) + params.shape, dtype=params.dtype)
        for batch, out in zip(self._drawn_batches, sums):
            _batch_gradient_sum(batch, params, self.settings, out)
        return sums

    def train(self, state, others, order):
        """Run the whole loop here, as the fit's coordinator: see :func:`_train_here`.

        ``others`` are the other holders' ``(worker address, key)`` pairs.
        An error of the loop comes back as a :class:`_Raised` value (a lost
        worker found by the loop as a :class:`WorkerLostError`).
        """
        try:
            return _train_here(self, state, others, order)
        except Exception as error:
            return _Raised(error)

    async def stop(self):
        """Make a loop run here fail at its next wait (answered on the worker's event loop)."""
        self._stopped = True

    def _answer(self, call):
        """Another holder's answer to ``call``, or WorkerLostError once the client says stop."""
        while not self._stopped:
            try:
                return call.result(timeout=_LIVENESS_PERIOD)
            except TimeoutError:
                continue
        raise WorkerLostError(WORKER_LOST_MESSAGE)

    async def sums(self, params, step):
        """The partitions' clipped-gradient sums at this step, shape ``(k, K, d + 1)``.

        An error comes back as a :class:`_Raised` value (rebuilt partitions as
        a :class:`WorkerLostError`).
        """
        import asyncio

        try:
            sums = self._sums(params, step)
        except Exception as error:
            return _Raised(error)
        # The next step's sample, drawn once this answer is on its way.
        asyncio.get_running_loop().call_soon(self._draw_ahead, step + 1)
        return sums

    def _draw_ahead(self, step):
        try:
            self._draw(step)
        except Exception:
            # Not an error of the step answered: the next step draws its own
            # (and meets the error, if it lasts, in its call).
            pass


class _DistributedRunner:
    """Partitions held on the workers of a ``dask.distributed`` client.

    The partitions are prepared as tasks (in parallel, where their rows
    are), then each worker's are handed to one actor on that worker: a step
    costs one direct call per worker instead of one scheduled task per
    partition.
    """

    def __init__(self, client):
        self.client = client
        self._holders = []

    def hold(self, tasks):
        # Not waited for: gathering the summaries waits (one wait a fit, not two).
        return self.client.compute(tasks)

    def map(self, function, partitions, *args):
        futures = [self.client.submit(function, partition, *args, pure=False)
                   for partition in partitions]
        return self.client.gather(futures)

    def bind(self, partitions, seeds, settings, tokens):
        """One actor per worker, holding that worker's partitions (and their seeds)."""
        from distributed import wait

        holders = self.client.who_has(partitions)
        by_worker = {}
        for index, partition in enumerate(partitions):
            by_worker.setdefault(holders[partition.key][0], []).append(index)
        self._order, actors = [], []
        for worker, indices in by_worker.items():
            actors.append(self.client.submit(
                _PartitionHolder, seeds[indices], settings,
                [tokens[index] for index in indices],
                *[partitions[index] for index in indices],
                # Where its partitions are; if that worker is lost, the actor
                # may be rebuilt elsewhere (a call waits for it rather than
                # for a worker that will not return), over rebuilt
                # partitions, whose new tokens fail the fit.
                actor=True, workers=[worker], allow_other_workers=True, pure=False))
            self._order.extend(indices)
        # Created side by side: one wait for all.
        wait(actors)
        self._holders = [actor.result() for actor in actors]
        self._actor_futures = actors
        # Where each holder is (it may not be where it was asked to be), for
        # the coordinator's own handles on the others (see _CoordinatorTraining).
        where = self.client.who_has(actors)
        self._addresses = [(where[actor.key][0], actor.key) for actor in actors]
        self._order = np.asarray(self._order)

    async def _call_holders(self, params, step):
        import asyncio

        return await asyncio.gather(*[holder.sums(params, step) for holder in self._holders])

    def sums(self, params, step):
        """The partitions' sums at this step, shape ``(n_partitions, K, d + 1)``, in order."""
        if any(future.status != "finished" for future in self._actor_futures):
            raise WorkerLostError(WORKER_LOST_MESSAGE)
        try:
            # Both calls at once, awaited together on the client's event loop:
            # one hop from this thread to the loop a step.
            by_holder = self.client.sync(self._call_holders, params, step, asynchronous=False)
        except _LOST_WORKER_ERRORS as error:
            # The actor's worker went away, or came back without it.
            raise WorkerLostError(WORKER_LOST_MESSAGE) from error
        # The holders' own errors, as themselves.
        return _in_order([_unwrap(answer) for answer in by_holder], self._order, params)

    def train(self, state):
        """Run the loop on the first holder's worker (the coordinator); its result here.

        Returns ``(params, rng_state)``: the released parameters and the fit
        generator's state after the loop (the client's generator goes on from
        it, as after a loop run here).
        """
        if any(future.status != "finished" for future in self._actor_futures):
            raise WorkerLostError(WORKER_LOST_MESSAGE)
        coordinator, others = self._holders[0], self._addresses[1:]
        try:
            call = coordinator.train(state, others, self._order)
            while True:
                try:
                    answer = call.result(timeout=_LIVENESS_PERIOD)
                    break
                except TimeoutError:
                    # A lost worker does not always break the call (Dask may
                    # wait to rebuild the coordinator and call it again): its
                    # holders' futures say it.
                    if any(future.status != "finished" for future in self._actor_futures):
                        # The coordinator's thread may be waiting on the lost
                        # worker: told to stop (if it is there to be told),
                        # it frees the worker for later fits.
                        coordinator.stop()
                        raise WorkerLostError(WORKER_LOST_MESSAGE) from None
        except WorkerLostError:
            raise
        except _LOST_WORKER_ERRORS as error:
            # The coordinator's worker went away, or came back without it.
            raise WorkerLostError(WORKER_LOST_MESSAGE) from error
        # The loop's own errors (a lost worker it found included), as themselves.
        return _unwrap(answer)


def _in_order(by_holder, order, params):
    """The holders' answers (each its partitions' sums) as one array in partition order."""
    sums = np.empty((len(order),) + params.shape, dtype=params.dtype)
    sums[order] = np.concatenate(by_holder)
    return sums


class _LocalRunner:
    """Partitions held in this process, run by Dask's local scheduler."""

    def __init__(self, n_threads):
        self.n_threads = max(1, int(n_threads))

    def hold(self, tasks):
        import dask

        return list(dask.compute(*tasks, scheduler="threads", num_workers=self.n_threads))

    def _run(self, graph, keys):
        import dask.local
        import dask.threaded

        if self.n_threads == 1:
            return dask.local.get_sync(graph, keys)
        return dask.threaded.get(graph, keys, num_workers=self.n_threads)

    def map(self, function, partitions, *args):
        return self.map_each(lambda partition, _, *rest: function(partition, *rest),
                             partitions, [None] * len(partitions), *args)

    def bind(self, partitions, seeds, settings, tokens):
        self._partitions, self._seeds, self._settings = partitions, seeds, settings
        self._tokens = tokens

    def sums(self, params, step):
        """The partitions' sums at this step, shape ``(n_partitions, K, d + 1)``, in order."""
        results = self.map_each(_partition_sum, self._partitions, self._seeds, params, step,
                                self._settings)
        if [token for _, token in results] != self._tokens:
            raise WorkerLostError(WORKER_LOST_MESSAGE)
        return np.stack([partial for partial, _ in results])

    def map_each(self, function, partitions, per_partition, *args):
        keys = [f"dplssgd-partition-{k}" for k in range(len(partitions))]
        # Arguments that are not tasks are given through a closure: a tuple
        # in a Dask graph would be read as a task.
        graph = {key: (_Closure(function, partition, extra, *args),)
                 for key, partition, extra in zip(keys, partitions, per_partition)}
        return list(self._run(graph, keys))


class _Closure:
    """A call with its arguments bound, so that the graph holds no argument tuples."""

    def __init__(self, function, *args):
        self.function, self.args = function, args

    def __call__(self):
        return self.function(*self.args)


@dataclasses.dataclass
class _LoopState:
    """What the loop needs besides the partitions' sums; travels to the coordinator.

    The fit's generator (the noise's; secret unless the fit is reproducible)
    goes only where the rows already are.
    """

    plan: object
    rng: object
    noise_source: object
    params: np.ndarray


class _PartialSumsSteps(HostWeightSteps):
    """The loop's steps over the partitions' sums: their total released here, once.

    Shared by the loop run on the client (:class:`DaskTraining`) and on a
    worker (:class:`_CoordinatorTraining`): the same draws in the same order,
    the same sums added the same way. A subclass calls :meth:`_start` and
    supplies ``_partition_sums(params, step)``."""

    xp = None

    def _start(self, state):
        self.plan, self.rng, self.noise_source = state.plan, state.rng, state.noise_source
        self.params = state.params
        self.n_features = self.params.shape[1] - 1
        self._n_noisy_columns = self.n_features + int(bool(self.plan.fit_intercept))
        self._omega = smoothing_omega(self.plan.sigma) if self.plan.sigma > 0 else 0.0
        self._smooth = smooth_rows

    def context(self):
        return contextlib.nullcontext()

    def chunks(self, chunk_starts, chunk, lattice):
        # The batches are drawn on the partitions (the plan's batch bound is
        # the row bound there, which every batch meets): the noise only.
        step = 0.0 if lattice is None else lattice.step
        for chunk_start in chunk_starts:
            chunk_steps = min(chunk, self.plan.n_steps - chunk_start)
            noise = chunk_noise(self.noise_source, self.rng, lattice, chunk_start, chunk_steps,
                                self.params.shape, self._n_noisy_columns)
            yield chunk_start, chunk_steps, (chunk_start, noise, step)

    def gradient_sum(self, params, draws, local_step):
        chunk_start, noise, step = draws
        # The partitions' sums added, then released once.
        grad = np.sum(self._partition_sums(params, chunk_start + local_step), axis=0)
        release_on_lattice(grad, noise[local_step], step)
        return grad

    def compiled_steps(self, update):
        # Every step waits for the partitions' sums: nothing to compile.
        return None


class _CoordinatorTraining(_PartialSumsSteps):
    """The loop run on a worker, the coordinator: its own partitions here, the others' called.

    A step sends the weights to every other worker's holder at once (worker
    to worker, one hop each way), computes the coordinator's own partitions'
    sums and draws their next sample while those calls travel, then adds
    everything in partition order: the sums and the noise of the loop run on
    the client, bit for bit.
    """

    def __init__(self, holder, state, others, order):
        from distributed import Actor

        self._start(state)
        # Handles made here, bound to this worker: a handle the client made
        # (which in-process workers receive as it is, unserialized) may be
        # bound to the holder's own worker, and Dask then calls the holder
        # directly, in this thread, as if it were on this worker.
        self._others = [Actor(_PartitionHolder, address, key) for address, key in others]
        self._holder, self._order = holder, order

    def _partition_sums(self, params, step):
        # A copy: the calls' arguments are serialized on the worker's event
        # loop, while this thread goes on.
        sent = params.copy()
        try:
            calls = [other.sums(sent, step) for other in self._others]
        except _LOST_WORKER_ERRORS as error:
            # Another holder's worker is known lost before the call.
            raise WorkerLostError(WORKER_LOST_MESSAGE) from error
        own = self._holder._sums(params, step)
        if step + 1 < self.plan.n_steps:
            self._holder._draw(step + 1)
        try:
            answers = [self._holder._answer(call) for call in calls]
        except WorkerLostError:
            raise
        except _LOST_WORKER_ERRORS as error:
            # Another worker went away, or came back without its holder.
            raise WorkerLostError(WORKER_LOST_MESSAGE) from error
        # The other holders' own errors, as themselves.
        return _in_order([own] + [_unwrap(answer) for answer in answers], self._order, params)


def _train_here(holder, state, others, order):
    """The whole loop on this worker: ``(params, rng_state)``."""
    params = run_training(_CoordinatorTraining(holder, state, others, order), state.plan)
    return params, state.rng.bit_generator.state


class DaskTraining(_PartialSumsSteps):
    """The Dask backend of the training loop: partial sums on the partitions, the rest here.

    Parameters
    ----------
    X : dask.array.Array of shape (n_samples, d), float64 or float32
        One chunk along the columns; known chunk sizes along the rows.
    y : dask.array.Array of shape (n_samples,), float64
        Encoded targets, chunked as X's rows.
    n_outputs : int
    plan : TrainingPlan
    rng : numpy.random.Generator
        The fit's generator: the partitions' sampling seeds, then the noise.
    n_threads : int, default=1
        Threads of Dask's local scheduler (no client active); unused with a client.
    noise_source : callable, default=rounded_gaussian_noise
    sample_weight : dask.array.Array of shape (n_samples,) or None, default=None
        Validated weights, chunked as X's rows.
    initial_params : ndarray of shape (n_outputs, d + 1) or None, default=None
    """

    def __init__(self, X, y, n_outputs, plan, rng, *, n_threads=1,
                 noise_source=rounded_gaussian_noise, sample_weight=None, initial_params=None):
        client = _active_client()
        # Before anything is sent: the partitions' sums and the generator cross its network.
        check_cluster_network(client)
        self._runner = _DistributedRunner(client) if client is not None else _LocalRunner(
            n_threads)
        x_parts = X.to_delayed().reshape(-1)
        y_parts = y.to_delayed().reshape(-1)
        if len(x_parts) != len(y_parts):
            raise ValueError("X must have one chunk along its columns, and y X's row chunks.")
        w_parts = ([None] * len(x_parts) if sample_weight is None
                   else sample_weight.to_delayed().reshape(-1))
        import dask

        prepare = dask.delayed(_prepare, pure=False)
        # Each partition is prepared once and held where it was computed.
        self._partitions = self._runner.hold([
            prepare(x, t, w, bool(plan.fit_intercept))
            for x, t, w in zip(x_parts, y_parts, w_parts)])
        summaries = self._runner.map(_summary, self._partitions)
        if not all(finite for finite, _, _ in summaries):
            raise NonFiniteRowsError(NON_FINITE_MESSAGE)
        if any(long_rows for _, long_rows, _ in summaries):
            warnings.warn(LONG_ROWS_MESSAGE, UserWarning, stacklevel=3)
        self._tokens = [token for _, _, token in summaries]
        # The partitions' sampling seeds, from the fit's generator (secret
        # unless the fit is reproducible), before any noise.
        self._seeds = rng.integers(0, 2**63, size=(len(self._partitions), 2), dtype=np.int64)
        # Sums in float64 whatever X's dtype (the release's error bound is
        # for float64); the model is returned in X's dtype.
        self.params = np.zeros((n_outputs, X.shape[1] + 1), dtype=np.float64)
        self._output_dtype = X.dtype
        if initial_params is not None:
            self.params[:] = initial_params
        self._start(_LoopState(plan, rng, noise_source, self.params))
        self._settings = _StepSettings(
            int(plan.loss_code), float(plan.loss_threshold), float(plan.clip_norm),
            bool(plan.fit_intercept), float(plan.sample_rate))
        self._runner.bind(self._partitions, self._seeds, self._settings, self._tokens)

    @property
    def n_partitions(self):
        """The number of partitions (tasks per step)."""
        return len(self._partitions)

    @property
    def runs_on_cluster(self):
        """Whether the partitions are on the workers of a ``dask.distributed`` client."""
        return isinstance(self._runner, _DistributedRunner)

    def _partition_sums(self, params, step):
        return self._runner.sums(params, step)

    def train_on_cluster(self):
        """Run the whole loop on a worker of the cluster; the released parameters.

        The same steps as :func:`~sklearn_dplssgd._training.run_training` on
        this backend: the fit's generator travels to the coordinator, draws
        the same noise there, and its state comes back to this generator.

        Returns
        -------
        params : ndarray of shape (K, d + 1)
        """
        params, rng_state = self._runner.train(
            _LoopState(self.plan, self.rng, self.noise_source, self.params))
        self.rng.bit_generator.state = rng_state
        return params


def train_dp_lssgd_dask(X, y, n_outputs, plan, rng, *, n_threads=1, verbose=0,
                        epoch_callback=None, sample_weight=None, initial_params=None):
    """Run the T steps of DP-LSSGD on a Dask array (see :class:`DaskTraining`).

    Parameters are those of :func:`~sklearn_dplssgd._backends.train_dp_lssgd`,
    with ``X``, ``y`` and ``sample_weight`` Dask arrays chunked alike along
    the rows.

    Returns
    -------
    params : ndarray of shape (n_outputs, d + 1)
    """
    backend = DaskTraining(X, y, n_outputs, plan, rng, n_threads=n_threads,
                           sample_weight=sample_weight, initial_params=initial_params)
    if backend.runs_on_cluster and not verbose and epoch_callback is None:
        # The loop on a worker: a step is then one hop from worker to worker
        # instead of a round trip from the client to every worker. Progress
        # lines and callbacks need the iterate here every epoch: they keep
        # the loop on the client.
        return backend.train_on_cluster()
    return run_training(backend, plan, verbose=verbose, epoch_callback=epoch_callback)
