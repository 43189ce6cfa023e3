"""DP-LSSGD on NumPy arrays: the compiled backend of the one training loop.

A step: sample a batch -> clipped gradient sum (Numba, float64) -> released
on the lattice with exact integer noise -> smoothing -> decay -> optimizer.
Only the first two touch the rows. Here: Poisson sampling, the noise source
(both substitutable, as the audit's tests do), and :class:`NumpyTraining`.
"""

import contextlib
import contextvars
import functools
import math
import warnings

import numpy as np
import scipy.sparse as sp
from threadpoolctl import ThreadpoolController

from . import _kernels
from .._training import apply_weight_decay, GeneratorWords, release_on_lattice, run_training
from ._kernels import (
    COEFFICIENT_RANGE, noisy_clipped_gradient_sum, smooth_rows, smoothing_omega,
)
from ._poisson import INVERSION_BELOW, place_gaps
from ._rounded_gaussian import RoundedGaussianScale, sample_rounded_gaussian
from ._sparse import as_canonical_csr, noisy_clipped_gradient_sum_sparse
from ._steps import (
    dense_several_outputs_steps, dense_single_output_steps, sparse_steps, team_helper,
    team_steps,
)
from ._row_passes import feature_norms_of, row_norms_of
from ._threads import chunk_rows, draws_ahead, run_with_team

__all__ = [
    "NumpyTraining",
    "blas_controller",
    "check_chunk_batches",
    "chunk_noise",
    "numpy_backend",
    "poisson_batches",
    "rounded_gaussian_noise",
    "train_dp_lssgd",
    "use_numpy_backend",
    "without_long_rows",
]

# Rows longer than this contribute nothing: the noisy weights times such a row
# could overflow float64 (infinite margins, residuals and predictions).
MAX_ROW_NORM = 1e150

# A compiled run of steps (_steps) saves a few us of Python a step but costs
# about 1.5 s to compile in a fresh environment: used from this many steps,
# or rows visited (where the prefetch across steps pays).
COMPILED_RUN_MIN_STEPS = 2_000
COMPILED_RUN_MIN_ROWS = 2_000_000

# At most this many noise values are drawn in one call of the sampler.
_DRAWS_PER_CALL = 1 << 17

LONG_ROWS_MESSAGE = (
    f"Some rows of X have an L2 norm above {MAX_ROW_NORM:g}: they contribute nothing "
    "to the fit (their margins could overflow float64). Rescale the features by a "
    "known bound before training."
)


@functools.lru_cache(maxsize=1)
def blas_controller():
    """The process's BLAS thread pools (found once: inspecting them is slow)."""
    return ThreadpoolController()


def poisson_batches(rng, n_samples, sample_rate, n_steps):
    """Poisson-sampled batches for ``n_steps`` steps: ``(rows, offsets)``.

    Each row enters each batch independently with probability ``sample_rate``
    (what the accountant assumes), drawn exactly through the geometric gaps
    of one Bernoulli process. Batch t is ``rows[offsets[t]:offsets[t + 1]]``,
    sorted.
    """
    if sample_rate >= 1.0:
        # Every row in every step: no draws (the gaps would all be 1).
        rows = np.tile(np.arange(n_samples, dtype=np.int64), n_steps)
        return rows, np.arange(n_steps + 1, dtype=np.int64) * n_samples
    n_slots = n_samples * n_steps
    expected = n_slots * sample_rate
    n_draws = int(expected + 6.0 * math.sqrt(expected) + 16)
    if 0.0 < sample_rate < INVERSION_BELOW:
        # The gaps from one fill of exponentials, placed in one compiled
        # pass (see _poisson); other rates (and invalid ones, which NumPy
        # refuses) use NumPy's geometric draws.
        log_keep = math.log1p(-sample_rate)
        rows = np.empty(n_draws, dtype=np.int64)
        offsets = np.zeros(n_steps + 1, dtype=np.int64)
        state = np.array([-1, 0, 0], dtype=np.int64)
        while not place_gaps(rng.standard_exponential(size=n_draws), log_keep, n_samples,
                             n_slots, rows, offsets, state):
            rows = np.concatenate([rows, np.empty(n_draws, dtype=np.int64)])
        return rows[:state[1]], offsets
    positions = np.cumsum(rng.geometric(sample_rate, size=n_draws)) - 1
    while positions[-1] < n_slots:
        more = positions[-1] + np.cumsum(rng.geometric(sample_rate, size=n_draws))
        positions = np.concatenate([positions, more])
    positions = positions[: np.searchsorted(positions, n_slots)]
    offsets = np.searchsorted(positions, np.arange(n_steps + 1) * n_samples)
    return positions % n_samples, offsets


def rounded_gaussian_noise(rng, scale, count):
    """``count`` exact int64 draws of ``round(scale G)`` from the fit's generator's words."""
    return sample_rounded_gaussian(count, RoundedGaussianScale(int(scale)), GeneratorWords(rng))


def chunk_noise(noise_source, rng, lattice, chunk_start, chunk_steps, shape, n_noisy_columns):
    """The integer noise of a chunk of steps: float64 of shape ``(chunk_steps,) + shape``.

    Step t's noise is ``round(s_t G)`` (``s_t = lattice.scales[t]``) on the
    first ``n_noisy_columns`` columns, zero elsewhere (and everywhere without
    a lattice). Every backend draws its noise here, in this one order.
    """
    noise = np.zeros((chunk_steps,) + tuple(shape), dtype=np.float64)
    if lattice is None:
        return noise
    scales = lattice.scales[chunk_start:chunk_start + chunk_steps]
    per_step = shape[0] * n_noisy_columns
    # Steps per draw: a bounded block (the sampler's words and output are
    # each about its size), at least one step.
    block = max(1, _DRAWS_PER_CALL // per_step)
    start = 0
    while start < chunk_steps:
        stop = start + 1
        while stop < min(chunk_steps, start + block) and scales[stop] == scales[start]:
            stop += 1
        draws = noise_source(rng, int(scales[start]), (stop - start) * per_step)
        noise[start:stop, :, :n_noisy_columns] = draws.reshape(
            stop - start, shape[0], n_noisy_columns)
        start = stop
    return noise


def check_chunk_batches(lattice, offsets, n_rows):
    """Fail closed where a batch (``offsets``; None: all ``n_rows``) exceeds the public bound."""
    if lattice is None:
        return
    largest = n_rows if offsets is None else int(np.diff(offsets).max(initial=0))
    lattice.check_batch(largest)


class HostWeightSteps:
    """The steps after the gradient sum on weights held here (the NumPy and Dask backends).

    A subclass sets ``plan``, ``params``, ``n_features``, ``_omega`` and ``_smooth``.
    """

    def smooth(self, grad):
        if self.plan.sigma > 0:
            self._smooth(grad, self.n_features, self._omega, self.plan.sigma)
        return grad

    def decay(self, params, shrink):
        apply_weight_decay(params, shrink, self.n_features)
        return params

    def project(self, params):
        return params

    def new_average(self):
        # The running mean is accumulated in float64 whatever the dtype.
        return np.zeros(self.params.shape, dtype=np.float64)

    def add_to_average(self, averaged, params, count):
        averaged += (params - averaged) / count
        return averaged

    def all_finite(self, params):
        return bool(np.isfinite(params).all())

    def to_host(self, params):
        return params

    def finish(self, params):
        return params.astype(getattr(self, "_output_dtype", self.params.dtype), copy=False)


class NumpyTraining(HostWeightSteps):
    """The NumPy backend of the training loop: compiled kernels, in place.

    Dense or canonical CSR rows (only the gradients use the sparsity); all
    randomness is drawn here, in Python, from the fit's generator. The
    parameters: :func:`train_dp_lssgd`.
    """

    xp = None
    # Whether a segment of steps may run as one compiled call (_steps), which
    # embeds the standard gradient kernels; a backend running another kernel
    # (the audit's substitutes) answers False and steps through its own.
    supports_compiled_runs = True

    def __init__(self, X, y, n_outputs, plan, rng, *, n_threads=1,
                 batch_sampler=poisson_batches, noise_source=rounded_gaussian_noise,
                 sample_weight=None, initial_params=None, row_norms=None):
        if sp.issparse(X):
            # The row norms that set each clip are taken over stored entries:
            # valid only without duplicates (see _sparse).
            X = as_canonical_csr(X)
            self._steps = sparse_steps
        else:
            self._steps = (dense_several_outputs_steps if n_outputs > 1
                           else dense_single_output_steps)
        self._kernel = self.gradient_kernel(sp.issparse(X))
        if row_norms is None:
            row_norms = row_norms_of(X, n_threads)
        elif row_norms.shape != (X.shape[0],) or row_norms.dtype != np.float64:
            # The kernels index it by row; a wrong array would mis-set every clip.
            raise ValueError("row_norms must be a float64 array with one norm per row of X.")
        self.X, self.y, self.plan, self.rng = X, y, plan, rng
        self.n_features = X.shape[1]
        # Sums accumulate in float64 whatever X's dtype: the error bound of
        # the release (training._lattice) is then far below the lattice step.
        # The model is returned in X's dtype.
        self.params = np.zeros((n_outputs, self.n_features + 1), dtype=np.float64)
        self._output_dtype = X.dtype
        if initial_params is not None:
            self.params[:] = initial_params
        self._grad = np.empty_like(self.params)
        # The kernels add the clipped sum to this: the noise is added on the
        # lattice afterwards (release_on_lattice), never to a float sum.
        self._zero = np.zeros_like(self.params)
        self.row_norms = without_long_rows(np, row_norms)
        self.batch_sampler, self.noise_source = batch_sampler, noise_source
        # Weights are passed only when there are any (the audits substitute
        # the unweighted call).
        self._weighting = {} if sample_weight is None else {"weights": sample_weight}
        # ||[x_i, 1]|| once per fit rather than a hypot per row and step
        # (about as costly as the rest of a narrow row's clip).
        self.feature_norms = feature_norms_of(
            self.row_norms, 1.0 if plan.fit_intercept else 0.0, n_threads)
        if self.supports_compiled_runs:
            # The standard kernels take the precomputed norms; another kernel
            # gets the arguments without them.
            self._weighting["feature_norms"] = self.feature_norms
        self._weights = _kernels.check_weights(sample_weight, X.shape[0])
        self._n_noisy_columns = self.n_features + int(bool(plan.fit_intercept))
        # Computed once per fit; the compiled step solves A_sigma u = g
        # exactly in O(d) through A_sigma's factorisation.
        self._omega = smoothing_omega(plan.sigma) if plan.sigma > 0 else 0.0
        # Full batches (q = 1) use every row in every step: one index array,
        # instead of n * T sampled slots.
        self._all_rows = (np.arange(X.shape[0], dtype=np.int64) if plan.sample_rate >= 1.0
                          else None)
        self._no_offsets = np.zeros(1, dtype=np.int64)
        # n_threads counts every thread of the fit. From 3 on, one draws the
        # next chunk (_threads.draws_ahead) and the others share the
        # gradients; with 2, both share them and the draws stay inline.
        self.n_threads = n_threads
        self._team_size = n_threads - 1 if n_threads >= 3 else n_threads
        self._smooth = smooth_rows

    def gradient_kernel(self, sparse):
        """The kernel of one step's sum, as :func:`._kernels.noisy_clipped_gradient_sum`."""
        return noisy_clipped_gradient_sum_sparse if sparse else noisy_clipped_gradient_sum

    def context(self):
        # BLAS on the multiclass kernel's small matrices: its threads only add
        # synchronisation, so one; n_threads is our parallelism.
        stack = contextlib.ExitStack()
        stack.enter_context(blas_controller().limit(limits=1, user_api="blas"))
        return stack

    def chunk_batches(self, chunk_steps):
        """A chunk's Poisson batches ``(rows, offsets)``; ``(None, None)``: every row."""
        if self._all_rows is not None:
            return None, None
        return self.batch_sampler(self.rng, self.X.shape[0], self.plan.sample_rate,
                                  chunk_steps)

    def chunks(self, chunk_starts, chunk, lattice):
        n_steps, shape = self.plan.n_steps, self.params.shape
        self._lattice_step = 0.0 if lattice is None else lattice.step

        def draw(chunk_start):
            # A chunk's batches, then its noise: the order of the draws.
            chunk_steps = min(chunk, n_steps - chunk_start)
            rows, offsets = self.chunk_batches(chunk_steps)
            check_chunk_batches(lattice, offsets, self.X.shape[0])
            noise = chunk_noise(self.noise_source, self.rng, lattice, chunk_start, chunk_steps,
                                shape, self._n_noisy_columns)
            return chunk_start, chunk_steps, (rows, offsets, noise)

        if self.n_threads >= 3:
            return draws_ahead(chunk_starts, draw)
        return map(draw, chunk_starts)

    def step_batch(self, rows, offsets, local_step):
        """The rows of step ``local_step`` of a chunk (every row for a full-batch plan)."""
        if rows is None:
            return self._all_rows
        return rows[offsets[local_step]:offsets[local_step + 1]]

    def gradient_sum(self, params, draws, local_step):
        rows, offsets, noise = draws
        batch = self.step_batch(rows, offsets, local_step)
        plan = self.plan
        self._kernel(self.X, self.y, batch, params, self.row_norms, plan.loss_code,
                     plan.loss_threshold, plan.clip_norm, plan.fit_intercept,
                     self._zero, self._grad, self._team_size, **self._weighting)
        release_on_lattice(self._grad, noise[local_step], self._lattice_step)
        return self._grad

    def compiled_steps(self, update):
        """A compiled run of steps (``_steps``), or None where the loop must step.

        For the standard kernels and an optimizer with a compiled update, on
        one thread or (dense rows) a team, where the fit is long enough to
        pay for compiling it or a team splits its typical batch.
        """
        optimizer = update.optimizer
        plan = self.plan
        rows_visited = plan.n_steps * min(1.0, plan.sample_rate) * self.X.shape[0]
        # A team's steps from Python hand each batch's chunks to the helpers
        # (a wake-up and a call each, tens of us a step): wherever a typical
        # batch is split, the compiled team run pays at any length of fit.
        typical_rows = int(min(1.0, plan.sample_rate) * self.X.shape[0])
        team_pays = (self._team_size > 1 and not sp.issparse(self.X)
                     and self._rows_per_chunk(typical_rows) > 0)
        if (not self.supports_compiled_runs or optimizer.compiled_code is None
                or (self._team_size > 1 and sp.issparse(self.X))
                or (plan.n_steps < COMPILED_RUN_MIN_STEPS and not team_pays
                    and rows_visited < COMPILED_RUN_MIN_ROWS)):
            return None
        largest, tiny = COEFFICIENT_RANGE[np.dtype(self.params.dtype)]
        X = (self.X.data, self.X.indices, self.X.indptr) if sp.issparse(self.X) else self.X
        state = update.state[0] if update.state else self._grad
        average_start = -1 if plan.average_start is None else int(plan.average_start)
        no_average = np.empty((0, 0), dtype=np.float64)
        inv_batch = update.inv_batch
        factor = optimizer.compiled_factor()
        learning_rates = np.ascontiguousarray(plan.learning_rates, dtype=np.float64)
        # One compiled signature whatever Python types the settings came as.
        code, threshold, clip_norm = int(plan.loss_code), float(plan.loss_threshold), float(
            plan.clip_norm)
        fit_intercept, alpha, sigma = bool(plan.fit_intercept), float(plan.alpha), float(
            plan.sigma)

        def run(params, averaged, draws, chunk_start, local_start, local_stop):
            rows, offsets, noise = draws
            full_batch = rows is None
            arguments = (
                X, self.y, self._all_rows if full_batch else rows,
                self._no_offsets if full_batch else offsets, full_batch, params,
                self.row_norms, self.feature_norms, code, threshold, clip_norm, fit_intercept,
                largest, tiny, noise, self._grad, self._weights, learning_rates, chunk_start,
                local_start, local_stop, alpha, sigma, self._omega, inv_batch,
                optimizer.compiled_code, factor, state,
                no_average if averaged is None else averaged, average_start,
                self._zero, self._lattice_step)
            if self._team_size > 1:
                self._team_steps(arguments, offsets, local_start, local_stop)
            else:
                self._steps(*arguments)
            update.n_updates += local_stop - local_start
            return params, averaged

        return run

    def _rows_per_chunk(self, n_rows):
        """Rows per chunk of a dense batch on the team, as the Python step cuts it; 0: not split."""
        n_outputs, n_threads = self.params.shape[0], self._team_size
        if _kernels.parallel_blocks(n_rows * n_outputs * self.n_features, n_rows,
                                    n_threads) > 1:
            return chunk_rows(n_rows, self.params.size, n_threads)
        return 0

    def _team_steps(self, arguments, offsets, local_start, local_stop):
        """A compiled run on dense rows, each batch's chunks shared by the team."""
        n_threads = self._team_size
        if local_stop <= local_start:
            return
        if offsets is None:
            sizes = np.full(local_stop - local_start, self.X.shape[0], dtype=np.int64)
        else:
            sizes = np.diff(offsets)[local_start:local_stop]
        params = self.params
        chunk_sizes = np.array([self._rows_per_chunk(size) for size in sizes.tolist()],
                               dtype=np.int64)
        n_chunks = int(max([-(-size // rows) for size, rows
                            in zip(sizes.tolist(), chunk_sizes.tolist()) if rows > 0],
                           default=1))
        # A buffer per thread and chunk, and one more left zero; a progress
        # row per step, so that a late helper never touches a later step's.
        partial = np.zeros((n_threads, n_chunks + 1) + params.shape, dtype=params.dtype)
        progress = np.zeros((len(sizes), n_chunks + 1), dtype=np.int64)
        control = np.zeros(2, dtype=np.int64)
        (X, y, rows, offsets_arg, full_batch, run_params, row_norms, feature_norms, code,
         threshold, clip_norm, fit_intercept, largest, tiny, _, _, weights) = arguments[:17]
        # None with one output: its run compiles no BLAS kernel (see _steps).
        several = True if params.shape[0] > 1 else None
        helper_args = (X, y, rows, offsets_arg, full_batch, run_params, row_norms,
                       feature_norms, code, threshold, clip_norm, fit_intercept, largest, tiny,
                       weights, partial, progress, control, chunk_sizes, local_start, several)
        run_with_team(
            lambda: team_steps(*arguments, partial, progress, control, chunk_sizes, several),
            team_helper, helper_args, control, n_threads)


# The class that runs NumPy fits in the current context (thread, task).
_NUMPY_BACKEND = contextvars.ContextVar("numpy_backend", default=NumpyTraining)


def numpy_backend():
    """The backend class that runs DP-LSSGD on NumPy arrays here (:class:`NumpyTraining`)."""
    return _NUMPY_BACKEND.get()


@contextlib.contextmanager
def use_numpy_backend(backend_class):
    """Run the NumPy fits inside the block on ``backend_class``, a :class:`NumpyTraining` subclass.

    The seam through which the audit runs a deliberately broken kernel; local
    to the current thread or task.
    """
    if not (isinstance(backend_class, type) and issubclass(backend_class, NumpyTraining)):
        raise TypeError("backend_class must be a subclass of NumpyTraining.")
    token = _NUMPY_BACKEND.set(backend_class)
    try:
        yield backend_class
    finally:
        _NUMPY_BACKEND.reset(token)


def train_dp_lssgd(X, y, n_outputs, plan, rng, *, n_threads=1, verbose=0, epoch_callback=None,
                   batch_sampler=poisson_batches, noise_source=rounded_gaussian_noise,
                   sample_weight=None, initial_params=None, row_norms=None):
    """Run the T steps of DP-LSSGD on NumPy arrays, from zero weights or ``initial_params``.

    ``X`` dense C-contiguous or CSR, float64 or float32; ``y`` the encoded
    targets; ``rng`` draws the batches and the noise, through
    ``batch_sampler`` (as :func:`poisson_batches`) and ``noise_source`` (as
    :func:`rounded_gaussian_noise`). ``sample_weight`` in
    ``[0, plan.max_sample_weight]`` scales each clipped gradient.
    ``initial_params`` (copied) must be public or covered by an earlier
    release. ``row_norms``: ``||x_i||`` when the caller has them. Returns
    the ``(n_outputs, d + 1)`` parameters, intercept last.
    """
    backend = numpy_backend()(
        X, y, n_outputs, plan, rng, n_threads=n_threads, batch_sampler=batch_sampler,
        noise_source=noise_source, sample_weight=sample_weight,
        initial_params=initial_params, row_norms=row_norms)
    return run_training(backend, plan, verbose=verbose, epoch_callback=epoch_callback)


def without_long_rows(xp, norms):
    """``norms`` with every row longer than ``MAX_ROW_NORM`` set to infinity (it then adds nothing).

    A map applied to each row alone, not a refusal that one row could
    trigger: why that keeps the guarantee, docs/privacy.rst. The warning
    names no value and reaches the data holder only.
    """
    too_long = ~(norms <= MAX_ROW_NORM)
    if not bool(xp.any(too_long)):
        return norms
    warnings.warn(LONG_ROWS_MESSAGE, UserWarning, stacklevel=3)
    return xp.where(too_long, xp.full_like(norms, math.inf), norms)
