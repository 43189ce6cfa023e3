"""DP-LSSGD on a Dask array: the rows stay in their partitions, on the cluster.

The NumPy backend's mechanism: each step, every partition Poisson-samples its
own rows and returns its clipped-gradient sum (no noise); the loop adds them
and releases the total once, on the lattice, with the fit's integer noise.
The partitions are prepared once and held where they are computed: by one
actor per worker of the active ``dask.distributed`` client, or in this process
under Dask's local scheduler. On a cluster the loop runs on one worker, the
coordinator (:class:`_CoordinatorTraining`), unless the fit reports progress.
Partition k's sample at step t comes from an AES-CTR generator keyed from
``(s_k, t)``, ``s_k`` secret, drawn from the fit's generator; a partition
rebuilt after a lost worker is detected by its token and fails the fit
(docs/privacy_argument.rst, "Dask arrays (a cluster)"). :mod:`._dask_network`
decides whether the cluster's network may carry what crosses it.
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

    Dask raises a lost worker's errors (:data:`_LOST_WORKER_ERRORS`) with the
    same types: as a value, the fit's own error is told apart from them.
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
        # Finite norms prove the rows finite; X is checked only where one is not.
        with np.errstate(invalid="ignore"):
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
    """A step's Poisson sample of a partition: its row indices, the rows left in place."""

    def __init__(self, partition, rows=None):
        self.X, self.y, self.row_norms, self.feature_norms, self.weights = (
            partition.X, partition.y, partition.row_norms, partition.feature_norms,
            partition.weights)
        self.rows = np.arange(self.X.shape[0], dtype=np.int64) if rows is None else rows


def _step_batch(partition, seed, step, settings):
    """This step's Poisson sample of the partition, from the generator of ``(seed, step)`` alone."""
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
    """``(sum, token)``: the clipped-gradient sum over this step's sample of the partition."""
    batch = _step_batch(partition, seed, step, settings)
    return _batch_gradient_sum(batch, params, settings, np.empty_like(params)), partition.token


class _PartitionHolder:
    """A worker's partitions of a fit, held by one Dask actor for the whole fit.

    A step is one call per worker, answered on the worker's event loop, which
    then draws the next step's sample while the answer travels.
    """

    def __init__(self, seeds, settings, tokens, *partitions):
        self.seeds, self.settings, self.partitions = seeds, settings, partitions
        # Partitions rebuilt after a lost worker have other tokens: every call fails.
        self.tokens = tokens
        self._drawn_step, self._drawn_batches = None, None
        # Set by the client when a worker is lost, to free a loop waiting here.
        self._stopped = False

    def _draw(self, step):
        batches = [_step_batch(partition, seed, step, self.settings)
                   for partition, seed in zip(self.partitions, self.seeds)]
        # Marked drawn only once all are: a failed draw leaves no stale batch.
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
        """Run the loop here, as the coordinator (``others``: the holders' addresses, keys).

        An error of the loop comes back as a :class:`_Raised` value.
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
        """The partitions' sums at this step, ``(k, K, d + 1)``; an error as a :class:`_Raised`."""
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
            # The next step draws its own, and meets the error there if it lasts.
            pass


class _DistributedRunner:
    """Partitions prepared as tasks on a client's workers, then held by one actor a worker."""

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
                # Rebuilt elsewhere if its worker is lost: the new tokens fail the fit.
                actor=True, workers=[worker], allow_other_workers=True, pure=False))
            self._order.extend(indices)
        # Created side by side: one wait for all.
        wait(actors)
        self._holders = [actor.result() for actor in actors]
        self._actor_futures = actors
        # Where each holder is, for the coordinator's handles on the others.
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
        """Run the loop on the first holder's worker: ``(params, rng_state)`` after it."""
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
                    # A lost worker does not always break the call: the
                    # futures say it, and a stopped coordinator frees its worker.
                    if any(future.status != "finished" for future in self._actor_futures):
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

    The fit's generator (secret) goes only where the rows already are.
    """

    plan: object
    rng: object
    noise_source: object
    params: np.ndarray


class _PartialSumsSteps(HostWeightSteps):
    """The loop's steps over the partitions' sums: their total released here, once.

    Shared by the loop on the client and on a worker (the same draws, the
    same sums); a subclass calls :meth:`_start` and has ``_partition_sums``."""

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

    The other holders are called at once while the coordinator sums its own
    partitions; the sums are added in partition order, so the result is the
    client's loop's, bit for bit.
    """

    def __init__(self, holder, state, others, order):
        from distributed import Actor

        self._start(state)
        # Handles made here: one the client made may be bound to the holder's
        # own worker (in-process workers), and be called in this thread.
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

    ``X`` (one chunk along the columns, known row chunks), ``y`` (encoded)
    and ``sample_weight`` (validated, or None) are Dask arrays chunked alike
    along the rows; ``rng`` draws the partitions' sampling seeds, then the
    noise; ``n_threads`` is for Dask's local scheduler (no client active).
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
        # Sums in float64, for which the release's error bound holds.
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
        """Run the whole loop on a worker; the released ``(K, d + 1)`` parameters.

        The same steps as the loop here: the fit's generator draws the same
        noise on the coordinator, and its state comes back to this generator.
        """
        params, rng_state = self._runner.train(
            _LoopState(self.plan, self.rng, self.noise_source, self.params))
        self.rng.bit_generator.state = rng_state
        return params


def train_dp_lssgd_dask(X, y, n_outputs, plan, rng, *, n_threads=1, verbose=0,
                        epoch_callback=None, sample_weight=None, initial_params=None):
    """Run the T steps of DP-LSSGD on a Dask array (see :class:`DaskTraining`).

    As :func:`~sklearn_dplssgd._backends.train_dp_lssgd`, with ``X``, ``y``
    and ``sample_weight`` Dask arrays chunked alike along the rows.
    """
    backend = DaskTraining(X, y, n_outputs, plan, rng, n_threads=n_threads,
                           sample_weight=sample_weight, initial_params=initial_params)
    if backend.runs_on_cluster and not verbose and epoch_callback is None:
        # One hop worker to worker a step; progress and callbacks need the client.
        return backend.train_on_cluster()
    return run_training(backend, plan, verbose=verbose, epoch_callback=epoch_callback)
