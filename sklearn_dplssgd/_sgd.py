"""The one DP-LSSGD training loop, shared by both estimators.

Data flows one way: sample a batch (the batch sampler) -> clipped gradient
sum plus Gaussian noise (Numba; the noise source) -> Laplacian smoothing ->
weight decay -> optimizer update (:mod:`._optimizers`). Only the first two
touch the rows; everything after is post-processing. The smoothing is the
exact O(d) solve of :func:`_kernels.smooth_rows`; the FFT form
(:func:`_smoothing.apply_smoothing`) is its reference. All randomness is
drawn here, in Python, from one ``numpy.random.Generator``; the kernels get
index arrays and noise arrays. The sampler and the noise source can be
substituted (the audit's tests do, to show that a broken one is caught).
"""

import contextlib
import functools
import math
import time
import warnings

import numpy as np
import scipy.sparse as sp
from threadpoolctl import ThreadpoolController

from ._kernels import (
    PARALLEL_MIN_WORK,
    compute_row_norms,
    compute_row_norms_team,
    noisy_clipped_gradient_sum,
    smooth_rows,
    smooth_rows_team,
    smoothing_omega,
)
from ._optimizers import SGD, OptimizerRun, apply_weight_decay
from ._sparse import (
    as_canonical_csr,
    compute_sparse_row_norms,
    noisy_clipped_gradient_sum_sparse,
)
from ._threads import draws_ahead, numba_team_available, team_threads

__all__ = [
    "raise_diverged",
    "report_epoch",
    "blas_controller",
    "gaussian_noise",
    "learning_rate_schedule",
    "LEARNING_RATES",
    "number_of_steps",
    "poisson_batches",
    "step_schedule",
    "train_dp_lssgd",
    "without_long_rows",
]

LEARNING_RATES = ("constant", "inverse_time", "invscaling")

# Noise and batch indices are drawn for a chunk of steps at a time: one
# vectorised draw instead of thousands of small ones, with memory bounded by
# about this many noise values (8 MiB in float64).
_NOISE_VALUES_PER_CHUNK = 1 << 20

# Rows longer than this contribute nothing: the noisy weights times such a row
# could overflow float64 (infinite margins, residuals and predictions).
MAX_ROW_NORM = 1e150

LONG_ROWS_MESSAGE = (
    f"Some rows of X have an L2 norm above {MAX_ROW_NORM:g}: they contribute nothing "
    "to the fit (their margins could overflow float64). Rescale the features by a "
    "known bound before training."
)


@functools.lru_cache(maxsize=1)
def blas_controller():
    """The process's BLAS thread pools (found once: inspecting them is slow)."""
    return ThreadpoolController()


def number_of_steps(n_samples, batch_size, max_iter):
    """Number of steps T = ceil(max_iter * n / b), computed in integers.

    Parameters
    ----------
    n_samples : int
        Number of training rows n.
    batch_size : int
        Expected batch size; above ``n_samples`` every step uses all rows.
    max_iter : int
        Number of epochs.

    Returns
    -------
    n_steps : int
    """
    if batch_size >= n_samples:
        return int(max_iter)
    return int(-(-max_iter * n_samples // batch_size))


def learning_rate_schedule(learning_rate, eta0, power_t, n_steps, first_step=0):
    """Step sizes eta_t for t = first_step + 1 .. first_step + T.

    Parameters
    ----------
    learning_rate : {"constant", "inverse_time", "invscaling"}
        ``constant``: ``eta0``; ``inverse_time``: ``eta0 / t`` (the decay of
        the DP-LSSGD paper, section 4); ``invscaling``: ``eta0 / t ** power_t`` as in
        scikit-learn's SGD, with ``t`` counting steps.
    eta0 : float
        Initial step size.
    power_t : float
        Exponent of ``invscaling``.
    n_steps : int
        T.
    first_step : int, default=0
        Steps already taken by the releases this one continues
        (``partial_fit``), so that a decaying schedule goes on decaying.

    Returns
    -------
    etas : ndarray of shape (n_steps,)
    """
    t = np.arange(first_step + 1, first_step + n_steps + 1, dtype=np.float64)
    if learning_rate == "constant":
        return np.full(n_steps, float(eta0))
    if learning_rate == "inverse_time":
        return eta0 / t
    if learning_rate == "invscaling":
        # t ** -power_t underflows quietly to 0 for huge exponents, where
        # eta0 / t ** power_t would overflow first.
        return eta0 * t ** (-power_t)
    raise ValueError(
        f"Unknown learning_rate {learning_rate!r}; expected one of {LEARNING_RATES}."
    )


def poisson_batches(rng, n_samples, sample_rate, n_steps):
    """Poisson-sampled batches for ``n_steps`` consecutive steps.

    Every row enters every step's batch independently with probability
    ``sample_rate`` (the sampling the accountant assumes; batches may be
    empty). The ``n_steps * n_samples`` inclusion decisions form one
    Bernoulli process, drawn exactly through its geometric gaps: O(q n T)
    work instead of O(n T) uniform draws.

    Parameters
    ----------
    rng : numpy.random.Generator
    n_samples : int
    sample_rate : float
        q in (0, 1].
    n_steps : int

    Returns
    -------
    rows : ndarray of int64
        Row indices of all batches, concatenated, sorted within a batch.
    offsets : ndarray of int64 of shape (n_steps + 1,)
        Batch ``t`` is ``rows[offsets[t]:offsets[t + 1]]``.
    """
    if sample_rate >= 1.0:
        # Every row in every step: no draws (the gaps would all be 1).
        rows = np.tile(np.arange(n_samples, dtype=np.int64), n_steps)
        return rows, np.arange(n_steps + 1, dtype=np.int64) * n_samples
    n_slots = n_samples * n_steps
    expected = n_slots * sample_rate
    n_draws = int(expected + 6.0 * math.sqrt(expected) + 16)
    positions = np.cumsum(rng.geometric(sample_rate, size=n_draws)) - 1
    while positions[-1] < n_slots:
        more = positions[-1] + np.cumsum(rng.geometric(sample_rate, size=n_draws))
        positions = np.concatenate([positions, more])
    positions = positions[: np.searchsorted(positions, n_slots)]
    offsets = np.searchsorted(positions, np.arange(n_steps + 1) * n_samples)
    return positions % n_samples, offsets


def gaussian_noise(rng, shape, dtype):
    """Standard normal noise of ``shape`` (the default noise source)."""
    return rng.standard_normal(shape, dtype=dtype)


def step_schedule(noise_multiplier, clip_norm, n_steps, n_epochs, n_parameters):
    """The per-step quantities both training loops share.

    Parameters
    ----------
    noise_multiplier : float or ndarray of shape (n_steps,)
    clip_norm : float
    n_steps : int
    n_epochs : int
    n_parameters : int
        ``K (d + 1)``, the size of one step's noise.

    Returns
    -------
    noise_std : ndarray of shape (n_steps,)
        Standard deviation ``z_t C`` of each step's noise on the clipped sum.
    epoch_ends : ndarray of shape (n_epochs,)
        Epoch e ends after ``ceil(e T / n_epochs)`` steps.
    chunk : int
        Steps whose batches and noise are drawn at once (the same chunks, so
        the same draws, in both loops).
    """
    noise_std = np.broadcast_to(
        np.asarray(noise_multiplier, dtype=np.float64) * clip_norm, (n_steps,))
    epoch_ends = -(-np.arange(1, n_epochs + 1) * n_steps // n_epochs)
    chunk = max(1, min(n_steps, _NOISE_VALUES_PER_CHUNK // n_parameters))
    return noise_std, epoch_ends, chunk


def row_norms_of(X, n_threads=1):
    """``||x_i||`` in float64 for dense or canonical CSR ``X``: what sets each clip.

    Dense rows are split over ``n_threads`` of Numba's team where it is
    available (each row's norm is computed the same way either way).
    """
    if sp.issparse(X):
        return compute_sparse_row_norms(X)
    if n_threads > 1 and X.size >= PARALLEL_MIN_WORK and numba_team_available():
        with team_threads(n_threads):
            return compute_row_norms_team(X)
    return compute_row_norms(X)


def train_dp_lssgd(
    X,
    y,
    n_outputs,
    *,
    loss_code,
    loss_threshold,
    fit_intercept,
    clip_norm,
    noise_multiplier,
    sample_rate,
    batch_size,
    n_steps,
    n_epochs,
    learning_rates,
    alpha,
    sigma,
    rng,
    n_threads=1,
    verbose=0,
    epoch_callback=None,
    average_start=None,
    optimizer=None,
    batch_sampler=poisson_batches,
    noise_source=gaussian_noise,
    sample_weight=None,
    max_sample_weight=1.0,
    initial_params=None,
    row_norms=None,
):
    """Run T steps of DP-LSSGD from zero weights (or ``initial_params``).

    Parameters
    ----------
    X : ndarray or scipy sparse matrix of shape (n_samples, d), float64 or float32
        Dense X is C-contiguous. Sparse X is used in CSR form, converted
        (or deduplicated) once into a copy when it is not canonical CSR
        (:func:`~sklearn_dplssgd._sparse.as_canonical_csr`); only the
        gradients use its sparsity, the noise and the smoothing are dense.
    y : ndarray of shape (n_samples,), float64
        Encoded targets.
    n_outputs : int
        K, the number of rows of the coefficient matrix.
    loss_code : int
    loss_threshold : float
    fit_intercept : bool
    clip_norm : float
        C.
    noise_multiplier : float or ndarray of shape (n_steps,)
        z: the noise on the clipped sum has standard deviation ``z * C``; an
        array gives each step its own (a noise schedule).
    sample_rate : float
        q, the Poisson sampling rate.
    batch_size : int
        The user's expected batch size b. The noisy sum is divided by it:
        never by the realised batch size, and not by ``q * n`` either, which
        equals b when ``q < 1`` but is the number of rows n (private under
        add/remove adjacency) for full batches.
    n_steps : int
        T.
    n_epochs : int
        Number of epochs the T steps represent (for progress and callbacks).
    learning_rates : ndarray of shape (n_steps,)
    alpha : float
        L2 strength, applied after the noise (it is data-free).
    sigma : float
        Laplacian smoothing strength; 0 is plain DP-SGD.
    rng : numpy.random.Generator
    n_threads : int, default=1
    verbose : int, default=0
        Print one line per epoch: the epoch, the step, the norm of the
        weights (a function of the iterates, which the accountant covers)
        and the elapsed time (which depends on the data: it is printed for
        the person running the fit and is not covered by the guarantee).
    epoch_callback : callable, optional
        ``epoch_callback(epoch, params)`` after every epoch; ``params`` is the
        live ``(K, d + 1)`` parameter matrix (copy it to keep it).
    average_start : int or None, default=None
        When an int, return the mean of the iterates after steps
        ``average_start + 1 .. T`` (0 averages all of them) instead of the
        last iterate. The iterates are functions of the noisy gradients
        only, so their mean is post-processing: it costs no privacy.
    optimizer : Optimizer or None, default=None
        The update applied to the smoothed noisy gradient (post-processing);
        None is plain :class:`~sklearn_dplssgd.SGD`.
    batch_sampler : callable, default=poisson_batches
        ``batch_sampler(rng, n_samples, sample_rate, n_steps) -> (rows,
        offsets)`` as :func:`poisson_batches` (called for sample rates below 1).
    noise_source : callable, default=gaussian_noise
        ``noise_source(rng, shape, dtype)``: standard normal draws, scaled
        here by each step's ``z * max_sample_weight * C``.
    sample_weight : ndarray of shape (n_samples,), float64, or None, default=None
        Per-sample weights in ``[0, max_sample_weight]`` (validated by the
        caller): sample i contributes ``w_i`` times its clipped gradient.
    max_sample_weight : float, default=1.0
        The public bound w_max on the weights. One row moves the clipped sum
        by at most ``w_max C`` (add/remove), so that is the scale of the
        noise: z stays relative to the sensitivity and the accounting is
        unchanged.
    initial_params : ndarray of shape (n_outputs, d + 1) or None, default=None
        Starting weights (a warm start; copied). Their privacy is the
        caller's business: they must be public or covered by an earlier
        release.
    row_norms : ndarray of shape (n_samples,), float64, or None, default=None
        ``||x_i||`` as :func:`row_norms_of` computes them, when the caller
        already has them; None computes them here.

    Returns
    -------
    params : ndarray of shape (n_outputs, d + 1)
        Coefficients with the intercept in the last column (their average
        over the last steps with ``average_start``).
    """
    start_time = time.perf_counter()
    if sp.issparse(X):
        # The row norms that set each clip are taken over stored entries:
        # valid only without duplicates (see _sparse).
        X = as_canonical_csr(X)
        gradient_sum = noisy_clipped_gradient_sum_sparse
    else:
        gradient_sum = noisy_clipped_gradient_sum
    if row_norms is None:
        row_norms = row_norms_of(X, n_threads)
    elif row_norms.shape != (X.shape[0],) or row_norms.dtype != np.float64:
        # The kernels index it by row; a wrong array would mis-set every clip.
        raise ValueError("row_norms must be a float64 array with one norm per row of X.")
    n_samples, n_features = X.shape
    dtype = X.dtype
    params = np.zeros((n_outputs, n_features + 1), dtype=dtype)
    if initial_params is not None:
        params[:] = initial_params
    grad = np.empty_like(params)
    row_norms = without_long_rows(np, row_norms)
    # Per-step standard deviation of the noise on the clipped sum: z times
    # the sum's sensitivity w_max C.
    noise_std, epoch_ends, chunk = step_schedule(noise_multiplier, max_sample_weight * clip_norm,
                                                 n_steps, n_epochs, params.size)
    update = OptimizerRun(optimizer if optimizer is not None else SGD(), params, batch_size)
    # Weights are passed only when there are any, so an unweighted fit calls
    # the kernel exactly as before (the audits substitute that call).
    weighting = {} if sample_weight is None else {"weights": sample_weight}
    n_noisy_columns = n_features + 1 if fit_intercept else n_features
    # Computed once per fit; the compiled step solves A_sigma u = g exactly in
    # O(d) through A_sigma's factorisation (see _kernels.smooth_rows).
    omega = smoothing_omega(sigma) if sigma > 0 else 0.0
    next_epoch = 0
    report_epochs = bool(verbose) or epoch_callback is not None
    # Full batches (q = 1) use every row in every step: one index array,
    # instead of n * T sampled slots.
    all_rows = np.arange(n_samples, dtype=np.int64) if sample_rate >= 1.0 else None
    # Running mean of the iterates (accumulated in float64 whatever the dtype).
    averaged = None if average_start is None else np.zeros(params.shape, dtype=np.float64)

    # The multiclass kernel calls BLAS on small matrices at every step; BLAS's
    # own threads only add synchronisation there (and stall badly when the
    # cores are busy), so they are held to one; n_threads is our parallelism.
    # n_threads counts every thread of the fit. From 3 on, one of them draws
    # the next chunk while this one trains (the same draws in the same
    # order: see _threads.draws_ahead) and the others share the gradients;
    # with 2, both share the gradients and the draws stay inline (a third
    # busy thread on two cores slows the team more than the draws cost).
    team_size = n_threads - 1 if n_threads >= 3 else n_threads
    # Several outputs' rows are smoothed on the team too; a serial fit never
    # starts Numba's threading layer (nothing to fork-proof).
    team_smoothing = team_size > 1 and n_outputs > 1 and numba_team_available()
    smooth = smooth_rows_team if team_smoothing else smooth_rows
    team = team_threads(team_size) if team_smoothing else contextlib.nullcontext()
    with blas_controller().limit(limits=1, user_api="blas"), team:
        def draw(chunk_start):
            # A chunk's batches, then its noise: the order of the draws.
            chunk_steps = min(chunk, n_steps - chunk_start)
            rows = offsets = None
            if all_rows is None:
                rows, offsets = batch_sampler(rng, n_samples, sample_rate, chunk_steps)
            noise = np.zeros((chunk_steps,) + params.shape, dtype=dtype)
            chunk_std = noise_std[chunk_start:chunk_start + chunk_steps]
            if (chunk_std > 0).any():
                noise[:, :, :n_noisy_columns] = noise_source(
                    rng, (chunk_steps, n_outputs, n_noisy_columns), dtype)
                noise *= chunk_std.astype(dtype)[:, None, None]
            return chunk_start, chunk_steps, rows, offsets, noise

        chunk_starts = range(0, n_steps, chunk)
        draws = (draws_ahead(chunk_starts, draw) if n_threads >= 3
                 else map(draw, chunk_starts))
        for chunk_start, chunk_steps, rows, offsets, noise in draws:
            for local_step in range(chunk_steps):
                step = chunk_start + local_step
                if all_rows is None:
                    batch = rows[offsets[local_step]:offsets[local_step + 1]]
                else:
                    batch = all_rows
                gradient_sum(
                    X, y, batch, params,
                    row_norms, loss_code, loss_threshold, clip_norm, fit_intercept,
                    noise[local_step], grad, team_size, **weighting,
                )
                eta = learning_rates[step]
                if sigma > 0:
                    smooth(grad, n_features, omega, sigma)
                apply_weight_decay(params, 1.0 - eta * alpha, n_features)
                update.step(params, grad, eta)
                if averaged is not None and step >= average_start:
                    averaged += (params - averaged) / (step - average_start + 1)
                if step + 1 == epoch_ends[next_epoch]:
                    next_epoch += 1
                    if report_epochs:
                        _check_finite(params, next_epoch, step, n_steps)
                        report_epoch(params, next_epoch, step, n_steps, verbose,
                                     epoch_callback, time.perf_counter() - start_time)
            # Checked once per chunk of steps: non-finite weights stay non-finite.
            _check_finite(params, next_epoch, chunk_start + chunk_steps - 1, n_steps)
    if averaged is not None:
        return averaged.astype(dtype, copy=False)
    return params


def without_long_rows(xp, norms):
    """Row norms with every row longer than ``MAX_ROW_NORM`` set to infinity.

    A row of infinite norm contributes nothing (its clip factor is 0, and a
    non-finite residual is dropped: see ``_kernels._clipped_residual``).
    Refusing such rows instead would let one row decide whether a model is
    released at all, an output with epsilon = infinity; dropping a row by its
    own value is a map applied to each row alone, which keeps neighbouring
    data sets neighbouring. The warning reaches the data holder only (it
    names no value and nothing of it is stored on the model).

    Parameters
    ----------
    xp : namespace
        NumPy or the array API namespace of ``norms``.
    norms : array of shape (n_samples,)

    Returns
    -------
    norms : array of shape (n_samples,)
        A new array where a row was too long, else ``norms`` itself.
    """
    too_long = ~(norms <= MAX_ROW_NORM)
    if not bool(xp.any(too_long)):
        return norms
    warnings.warn(LONG_ROWS_MESSAGE, UserWarning, stacklevel=3)
    return xp.where(too_long, xp.full_like(norms, math.inf), norms)


def _check_finite(params, epoch, step, n_steps):
    """Raise if the weights are no longer finite."""
    if not np.isfinite(params).all():
        raise_diverged(epoch, step, n_steps)


def raise_diverged(epoch, step, n_steps):
    """The error of a fit whose weights are no longer finite (both training paths)."""
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
