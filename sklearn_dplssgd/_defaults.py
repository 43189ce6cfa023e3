"""The ``"auto"`` hyperparameters: resolved from public quantities only.

``delta``, ``batch_size``, ``max_iter``, ``eta0`` and ``average`` accept
``"auto"`` (their default). :func:`resolve_settings` turns them into numbers
at the start of ``fit``, before any row is read, from quantities that the
guarantee treats as public: the accounted row count (the actual ``n`` under
replace-one adjacency, ``public_n_samples`` under add/remove), the target
``epsilon``, the clip norm, the learning-rate schedule and the noise
multiplier calibrated from those. Nothing here sees a feature, a label or a
target, so two data sets with the same shape get the same settings, and the
settings release nothing about the rows.

The rule, and why
-----------------
Steps and batches. For the Poisson-subsampled Gaussian mechanism at small
sample rates the privacy of ``T`` steps depends, to first order, on
``q sqrt(T) / z`` only; the noise left in the weights after a run of total
step length ``eta T`` is then the same whatever the split into batch size
and number of steps (``benchmarks/results/defaults.md`` measures this on
MNIST: batch sizes 256 to 4000 and 30 to 100 epochs agree within the spread
of the seeds once ``eta T`` is fixed). What the split changes is the work
and how well the optimiser converges, so the defaults aim at about
``_TARGET_STEPS`` steps (enough for a linear model to converge) with the
sample rate ``q = b / n`` held at ``1 / 32`` or more: small tables
(``n <= 256``) train on full batches, mid-sized ones on batches of 256, and
large ones on ``n / 32`` rows (so ``z`` does not fall into the range where
subsampling amplifies privacy badly). ``max_iter`` is then the number of
epochs that gives at least ``_TARGET_STEPS`` steps.

Step size. Each coordinate of the weights accumulates the Gaussian noise of
every step: ``eta_t z C / b`` per step, so a standard deviation of
``eta0 (z C / b) sqrt(sum_t s_t^2)`` after the run, where ``s_t`` is the
schedule's shape (``eta_t = eta0 s_t``). ``eta0`` is chosen so that this
accumulated noise equals ``_WEIGHT_NOISE`` (a step size that large moves the
weights far enough to fit, and one larger only adds noise), and never above
the noise-free step ``max_step / C`` (reached at ``epsilon=inf``): 4 for
the classifiers, whose weights grow large on separable classes, 1 for the
regressor, whose targets are scaled to ``[-1, 1]`` by ``target_bounds`` so
that its weights are of order one (a step of 4 there oscillates: R2 0.18
against 0.41 on diabetes without noise).

Averaging. The returned model is the mean of the iterates of the last half
of the steps (Polyak-Ruppert tail averaging): it averages part of the
accumulated noise away, and as a function of the noisy iterates it is
post-processing, with no privacy cost.

Smoothing. ``sigma="auto"`` is 0 for sparse input (one-hot and hashed
columns have no order to smooth along). For dense input the classifier
smooths (sigma 1) from 100 features on and not below; the regressor always
smooths. Laplacian smoothing averages each coordinate of the noisy gradient
with its neighbours along the feature axis: it pays where neighbouring
features are related (pixels, spectra, time series, which come in hundreds)
and biases the step where the columns have no order. Chosen by measurement
with the other defaults (``benchmarks/results/defaults.md``; 6 seeds at
replace-one epsilon 2): for the classifier sigma 0 against 1 gave 0.946
against 0.937 on breast cancer (d = 30), 0.933 against 0.930 on wine (13),
0.838 against 0.785 on iris (4) and 0.907 against 0.910 on digits (64, a
tie), and on MNIST (784) 87.6 against 88.8 percent at epsilon 1
(``benchmarks/results/utility.md``); for the regressor, where smoothing
pulls the coefficients of one target towards each other (a shrinkage that
suits the correlated serum columns of diabetes), R2 0.283 against 0.350 on
diabetes (10 features).

delta. ``min(1e-5, 1 / (10 n))``: far below ``1 / n`` for any ``n`` (a
mechanism that publishes one random row with probability ``delta`` meets a
``(0, delta)`` guarantee), and the usual ``1e-5`` wherever that is smaller.
"""

import math

import numpy as np

from ._sgd import learning_rate_schedule

__all__ = [
    "AUTO",
    "nominal_batch_size",
    "resolve_average_start",
    "resolve_delta",
    "resolve_eta0",
    "resolve_schedule",
    "resolve_sigma",
]

AUTO = "auto"

# See the module docstring; the values are those measured in
# benchmarks/results/defaults.md.
_TARGET_STEPS = 1000
_FULL_BATCH_ROWS = 256
_MIN_SAMPLE_RATE = 1.0 / 32.0
_WEIGHT_NOISE = 0.5
_DEFAULT_DELTA = 1e-5
# The L2 decay factor 1 - eta alpha must stay above -1 (see _base); an
# automatic eta0 keeps a margin below that limit.
_MAX_ETA_ALPHA = 1.0
# What sigma="auto" smooths with (see resolve_sigma).
_AUTO_SIGMA = 1.0


def nominal_batch_size(batch_size):
    """``batch_size``, or for ``"auto"`` the largest table trained on full batches.

    For tools that build a data set of one batch before any fit (the audits):
    with ``"auto"``, a table of up to this many rows is one full batch.

    Parameters
    ----------
    batch_size : int or "auto"

    Returns
    -------
    batch_size : int
    """
    return _FULL_BATCH_ROWS if batch_size == AUTO else int(batch_size)


def resolve_delta(delta, n_public):
    """``delta``, with ``"auto"`` resolved to ``min(1e-5, 1 / (10 n))``.

    Parameters
    ----------
    delta : float or "auto"
    n_public : int
        The accounted row count (public under the adjacency in force).

    Returns
    -------
    delta : float
    """
    if delta != AUTO:
        return float(delta)
    return min(_DEFAULT_DELTA, 1.0 / (10.0 * n_public))


def resolve_schedule(batch_size, max_iter, n_public):
    """Batch size and epochs, with ``"auto"`` resolved from the row count.

    ``batch_size="auto"`` is ``n`` up to 256 rows (full batches), then 256,
    then ``ceil(n / 32)`` beyond 8,192 rows. ``max_iter="auto"`` is the
    number of epochs that gives at least 1,000 steps.

    Parameters
    ----------
    batch_size : int or "auto"
    max_iter : int or "auto"
    n_public : int
        The accounted row count.

    Returns
    -------
    batch_size : int
    max_iter : int
    """
    if batch_size == AUTO:
        batch_size = min(n_public, max(_FULL_BATCH_ROWS,
                                       math.ceil(n_public * _MIN_SAMPLE_RATE)))
    batch_size = int(batch_size)
    if max_iter == AUTO:
        # T = ceil(max_iter * n / b) >= _TARGET_STEPS (T = max_iter for full batches).
        max_iter = max(1, math.ceil(_TARGET_STEPS * min(batch_size, n_public) / n_public))
    return batch_size, int(max_iter)


def resolve_eta0(eta0, *, learning_rate, power_t, noise_multipliers, clip_norm, batch_size,
                 alpha, max_step, optimizer="sgd", momentum=0.0):
    """``eta0``, with ``"auto"`` resolved from the calibrated noise.

    SGD: the accumulated noise on each weight, ``eta0 (C / b) ||z s||_2``
    with ``z_t`` the noise multiplier of step t and ``s`` the learning-rate
    schedule's shape, is set to 0.5; the result is capped at
    ``max_step / C`` (reached without noise) and so that
    ``eta0 * alpha <= 1``. Momentum: the same long-run step, i.e. SGD's
    ``eta0`` times ``1 - momentum``. Adam: its step is about ``eta0`` per
    coordinate whatever the gradient's scale (the noise's own magnitude
    normalises it), so noise alone moves a weight by about
    ``eta0 ||s||_2``: that is set to 0.5.

    Parameters
    ----------
    eta0 : float or "auto"
    learning_rate : str
    power_t : float
    noise_multipliers : ndarray of shape (n_steps,)
        ``z_t``, calibrated from public quantities.
    clip_norm : float
    batch_size : int
    alpha : float
    max_step : float
        The step length ``eta0 * C`` of a noise-free fit (the estimator's
        ``_noise_free_step``).
    optimizer : {"sgd", "momentum", "adam"}, default="sgd"
    momentum : float, default=0.0

    Returns
    -------
    eta0 : float
    """
    if eta0 != AUTO:
        return float(eta0)
    noise_multipliers = np.asarray(noise_multipliers, dtype=np.float64)
    shape = learning_rate_schedule(learning_rate, 1.0, power_t, noise_multipliers.size)
    if optimizer == "adam":
        eta0 = _WEIGHT_NOISE / float(np.linalg.norm(shape))
    else:
        eta0 = max_step / clip_norm
        if (noise_multipliers > 0).any():
            # In this order: clip_norm / batch_size alone can underflow.
            accumulated = float(np.linalg.norm(noise_multipliers * shape)) * clip_norm / batch_size
            eta0 = min(eta0, _WEIGHT_NOISE / accumulated)
        if optimizer == "momentum":
            eta0 *= 1.0 - momentum
    if alpha > 0:
        eta0 = min(eta0, _MAX_ETA_ALPHA / alpha)
    return float(eta0)


def resolve_average_start(average, n_steps):
    """The step after which iterates are averaged, or None.

    Parameters
    ----------
    average : bool, int or "auto"
        ``"auto"``: the iterates of the last half of the steps; ``True``: of
        all steps; ``False``: no averaging (the last iterate); an int
        ``k >= 1``: the iterates after the first ``k`` steps (only the last
        one when ``k >= T``).
    n_steps : int

    Returns
    -------
    start : int or None
        Averaging covers the iterates after steps ``start + 1 .. T``.
    """
    if average == AUTO:
        return n_steps // 2
    if average is True:
        return 0
    if average is False:
        return None
    return min(int(average), n_steps - 1)


def resolve_sigma(sigma, n_features, sparse, min_features):
    """``sigma``, with ``"auto"`` resolved from the public shape of the input.

    Parameters
    ----------
    sigma : float or "auto"
    n_features : int
        d.
    sparse : bool
        Whether X is a sparse matrix (its columns are one-hot or hashed:
        no order to smooth along).
    min_features : int
        The fewest features that dense input is smoothed with (the
        estimator's ``_smoothing_min_features``).

    Returns
    -------
    sigma : float
    """
    if sigma != AUTO:
        return float(sigma)
    if sparse or n_features < min_features:
        return 0.0
    return _AUTO_SIGMA
