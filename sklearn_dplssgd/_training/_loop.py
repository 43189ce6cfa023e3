"""The one training loop: the steps of a release, over interchangeable backends.

Every model comes out of :func:`run_training` (DP-LSSGD on NumPy or array
API arrays, output perturbation's noise-free descent). The loop owns what
they share: the epochs and chunks (:func:`step_schedule`), the draws in one
fixed order (so two backends given one generator draw the same numbers), the
learning rate, the decay, the optimizer, averaging, the divergence checks and
the progress report; a backend supplies the rest
(:class:`~sklearn_dplssgd._training.TrainingBackend`). Everything a
:class:`TrainingPlan` holds is public.
"""

import dataclasses
import functools
import time
import typing

import numpy as np

from ._lattice import lattice_for
from ._optimizers import SGD, OptimizerRun

__all__ = [
    "NOISE_VALUES_PER_CHUNK",
    "TrainingPlan",
    "python_steps",
    "raise_diverged",
    "report_epoch",
    "run_training",
    "step_schedule",
]

# Noise and batch indices are drawn for a chunk of steps at a time: one
# vectorised draw instead of thousands of small ones, with memory bounded by
# about this many noise values (8 MiB in float64).
NOISE_VALUES_PER_CHUNK = 1 << 20


@dataclasses.dataclass(frozen=True)
class TrainingPlan:
    """The public settings of one release's steps.

    Attributes
    ----------
    loss_code : int
        The loss's kernel code (:func:`._losses.loss_code`).
    loss_threshold : float
        Its parameter (0 for a loss without one).
    fit_intercept : bool
    clip_norm : float
        C, the per-sample bound on the gradient.
    noise_multiplier : float or ndarray of shape (n_steps,)
        z: the noise's standard deviation is ``z w_max C`` (a little more:
        :meth:`lattice`); an array gives each step its own; 0 adds none.
    sample_rate : float
        q, the Poisson sampling rate (1: every row in every step).
    batch_size : int
        The expected batch size b, public, that the sum is divided by (never
        the realised batch size, nor ``q n``: n is private under add/remove).
    n_steps : int
        T.
    n_epochs : int
        The epochs the T steps represent (for progress and callbacks).
    learning_rates : ndarray of shape (n_steps,)
    alpha : float
        L2 strength, a data-free decay after the noise.
    sigma : float
        Laplacian smoothing strength; 0 is plain DP-SGD.
    average_start : int or None, default=None
        An int: the result is the mean of the iterates after steps
        ``average_start + 1 .. T``.
    optimizer : Optimizer or None, default=None
        None is plain :class:`~sklearn_dplssgd.SGD`.
    max_sample_weight : float, default=1.0
        w_max, the public bound on the sample weights.
    max_batch_rows : int, default=0
        The public bound on a step's batch (:func:`~._lattice.batch_rows_bound`)
        up to which each release's rounding error bound holds. Required with noise.
    """

    loss_code: int
    loss_threshold: float
    fit_intercept: bool
    clip_norm: float
    noise_multiplier: typing.Any
    sample_rate: float
    batch_size: int
    n_steps: int
    n_epochs: int
    learning_rates: typing.Any
    alpha: float
    sigma: float
    average_start: typing.Optional[int] = None
    optimizer: typing.Any = None
    max_sample_weight: float = 1.0
    max_batch_rows: int = 0

    def lattice(self, n_coordinates, sum_dtype=np.float64):
        """The :class:`~._lattice.Lattice` of the steps' sums (None without noise).

        ``n_coordinates`` is p, the noisy coordinates of a step (``K (d + 1)``,
        or ``K d`` without an intercept); ``sum_dtype`` the backend's.
        """
        multipliers = np.broadcast_to(
            np.asarray(self.noise_multiplier, dtype=np.float64), (self.n_steps,))
        if not (multipliers > 0).any():
            return None
        if self.max_batch_rows < 1:
            raise ValueError("a plan with noise needs max_batch_rows, the public bound "
                             "on a step's batch (batch_rows_bound).")
        return lattice_for(multipliers, self.max_sample_weight * self.clip_norm,
                           n_coordinates, self.max_batch_rows, sum_dtype)


def step_schedule(n_steps, n_epochs, n_parameters):
    """The epochs and the chunks of a run.

    Parameters
    ----------
    n_steps : int
    n_epochs : int
    n_parameters : int
        ``K (d + 1)``, the size of one step's noise.

    Returns
    -------
    epoch_ends : ndarray of shape (n_epochs,)
        Epoch e ends after ``ceil(e T / n_epochs)`` steps.
    chunk : int
        Steps whose batches and noise are drawn at once.
    """
    epoch_ends = -(-np.arange(1, n_epochs + 1) * n_steps // n_epochs)
    chunk = max(1, min(n_steps, NOISE_VALUES_PER_CHUNK // n_parameters))
    return epoch_ends, chunk


def run_training(backend, plan, *, verbose=0, epoch_callback=None):
    """Run the T steps of ``plan`` on ``backend``; return the released parameters.

    The steps are :func:`python_steps`'s (or the backend's compiled run of
    them), in segments ending with a chunk of draws or at a reported epoch;
    non-finite weights raise. ``verbose`` prints one line per epoch (the
    elapsed time depends on the data: it is for the person running the fit,
    outside the guarantee); ``epoch_callback(epoch, params)`` gets the live
    NumPy parameters after every epoch. Returns the last iterate, or the
    mean of the iterates with ``average_start``.
    """
    start_time = time.perf_counter()
    n_steps, average_start = plan.n_steps, plan.average_start
    params = backend.params
    lattice = plan.lattice(params.shape[0] * (params.shape[1] - 1 + int(plan.fit_intercept)),
                           getattr(backend, "sum_dtype", np.float64))
    epoch_ends, chunk = step_schedule(n_steps, plan.n_epochs, params.shape[0] * params.shape[1])
    optimizer = plan.optimizer if plan.optimizer is not None else SGD()
    update = OptimizerRun(optimizer, params, plan.batch_size, xp=backend.xp)
    averaged = None if average_start is None else backend.new_average()
    report_epochs = bool(verbose) or epoch_callback is not None
    # A backend may run a segment of steps in one compiled call; the steps
    # are the same (see python_steps).
    run_steps = backend.compiled_steps(update)
    if run_steps is None:
        run_steps = functools.partial(python_steps, backend, plan, update)
    n_epochs, next_epoch = len(epoch_ends), 0
    with backend.context():
        for chunk_start, chunk_steps, draws in backend.chunks(
                range(0, n_steps, chunk), chunk, lattice):
            local = 0
            while local < chunk_steps:
                # A segment ends with the chunk, or at the next reported epoch.
                stop = chunk_steps
                if report_epochs and next_epoch < n_epochs:
                    stop = min(stop, int(epoch_ends[next_epoch]) - chunk_start)
                params, averaged = run_steps(params, averaged, draws, chunk_start, local, stop)
                local = stop
                done = chunk_start + local
                while next_epoch < n_epochs and epoch_ends[next_epoch] <= done:
                    next_epoch += 1
                    if report_epochs:
                        host = backend.to_host(params)
                        if not np.isfinite(host).all():
                            raise_diverged(next_epoch, done - 1, n_steps)
                        report_epoch(host, next_epoch, done - 1, n_steps, verbose,
                                     epoch_callback, time.perf_counter() - start_time)
            # Once per chunk (on a device, a synchronisation): non-finite
            # weights stay non-finite.
            if not backend.all_finite(params):
                raise_diverged(next_epoch, chunk_start + chunk_steps - 1, n_steps)
    return backend.finish(averaged if averaged is not None else params)


def python_steps(backend, plan, update, params, averaged, draws, chunk_start, local_start,
                 local_stop):
    """Steps ``local_start .. local_stop - 1`` of a chunk, one backend call at a time.

    One step: the batch's noisy clipped gradient sum (the only part that
    reads rows), smoothing, the decay ``params *= 1 - eta_t alpha``, the
    optimizer's update, the backend's projection, and the running mean of
    the iterates from ``plan.average_start`` on. Returns ``(params, averaged)``.
    """
    learning_rates, alpha, average_start = plan.learning_rates, plan.alpha, plan.average_start
    for local_step in range(local_start, local_stop):
        step = chunk_start + local_step
        grad = backend.gradient_sum(params, draws, local_step)
        grad = backend.smooth(grad)
        eta = float(learning_rates[step])
        params = backend.decay(params, 1.0 - eta * alpha)
        params = backend.project(update.step(params, grad, eta))
        if averaged is not None and step >= average_start:
            averaged = backend.add_to_average(averaged, params, step - average_start + 1)
    return params, averaged


def raise_diverged(epoch, step, n_steps):
    """The error of a fit whose weights are no longer finite (every backend)."""
    raise ValueError(
        f"The fit diverged by epoch {epoch} (step {step + 1} of {n_steps}): the "
        "weights are no longer finite. Use a smaller learning rate (eta0), a "
        "smaller alpha, or rescale the features."
    )


def report_epoch(params, epoch, step, n_steps, verbose, callback, elapsed):
    """Progress line and callback after an epoch."""
    if verbose:
        # No loss (computed on private rows): the iterate, which the
        # accountant covers, and the elapsed time, for the person running the
        # fit only (it depends on the data: see the privacy guide).
        print(
            f"-- Epoch {epoch}: step {step + 1}/{n_steps}, "
            f"norm of weights {np.linalg.norm(params):.4g}, elapsed {elapsed:.2f} s"
        )
    if callback is not None:
        callback(epoch, params)
