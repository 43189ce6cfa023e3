"""The ``"auto"`` hyperparameters: resolved from public quantities only.

``delta``, ``batch_size``, ``max_iter``, ``eta0`` and ``average`` accept
``"auto"`` (their default). The ``resolve_*`` functions below turn them into
numbers at the start of ``fit``, before any row's value is read, from
quantities that the guarantee treats as public: the accounted row count (the
actual ``n`` under replace-one adjacency, ``public_n_samples`` under
add/remove), the number of features, the target ``epsilon``, the clip norm,
the learning-rate schedule and the noise multiplier calibrated from those.
Nothing here sees a feature, a label or a target, so two data sets with the
same shape get the same settings, and the settings release nothing about the
rows.

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
columns have no order to smooth along). For dense input it follows the
number of features d, by the estimator's own levels: the classifier does
not smooth below 10 features, smooths lightly (sigma 0.25) from 10 and fully
(sigma 1) from 100; the regressor always smooths (sigma 1). Laplacian
smoothing averages each coordinate of the noisy gradient with its
neighbours along the feature axis: it pays where neighbouring features are
related (pixels, spectra, time series, which come in hundreds) and biases
the step where the columns have no order; a light smoothing removes part of
the noise at a small bias. Chosen by measurement with the other defaults
(``benchmarks/results/width_rules.md``; 100 seeds, replace-one epsilon 2 /
add/remove epsilon 1): for the classifier, sigma 0.25 against 0 gave 0.903
/ 0.907 against 0.896 / 0.900 on digits (d = 64), 0.944 / 0.948 against
0.937 / 0.939 on wine (13) and 0.936 / 0.938 against 0.936 / 0.939 on
breast cancer (30); 6 seeds of sigma 0 against 1 gave 0.838 against 0.785
on iris (4); on MNIST (784) sigma 1 gave 88.8 against 87.6 percent at
epsilon 1 (``benchmarks/results/utility.md``); for the regressor, where
smoothing pulls the coefficients of one target towards each other (a
shrinkage that suits the correlated serum columns of diabetes), R2 0.350
against 0.283 on diabetes (10 features).

Few features. The noise a weight vector of accumulated noise ``w`` adds to
a prediction is ``w . x``, of standard deviation ``_WEIGHT_NOISE ||x||``;
with features scaled to ``[-1, 1]`` that norm grows like ``sqrt(d)``, so a
model over fewer than 10 features tolerates more accumulated noise for the
same disturbance of its predictions, and a longer step fits it better.
Below 10 features the accumulated noise is set to 1 instead of 0.5.
Measured by ``benchmarks/bench_width_rules.py``
(``benchmarks/results/width_rules.md``; replace-one epsilon 2 / add/remove
epsilon 1): iris (d = 4) 0.885 / 0.890 against 0.878 / 0.882 over 300 seeds;
six synthetic classification tables (``make_classification``, n 150 to
3,000, d 2 to 8, 2 to 4 classes, 40 seeds) gained 0.5 to 1.8 points each;
three synthetic regression tables gained 4.0 and 1.4 points of R2 at d = 5
and 8 and lost 2.8 at n = 150, d = 2.

delta. ``min(1e-5, 1 / (10 n))``: far below ``1 / n`` for any ``n`` (a
mechanism that publishes one random row with probability ``delta`` meets a
``(0, delta)`` guarantee), and the usual ``1e-5`` wherever that is smaller.
"""

import math

import numpy as np

from ._schedules import learning_rate_schedule

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
# Below this many features, the accumulated noise allowed instead (see
# "Few features" above).
_FEW_FEATURES = 10
_WEIGHT_NOISE_FEW_FEATURES = 1.0
_DEFAULT_DELTA = 1e-5
# The L2 decay factor 1 - eta alpha must stay above -1 (see _base); an
# automatic eta0 keeps a margin below that limit.
_MAX_ETA_ALPHA = 1.0


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
                 alpha, max_step, n_features, optimizer=None):
    """``eta0``, with ``"auto"`` resolved from the calibrated noise.

    SGD: the accumulated noise on each weight, ``eta0 (C / b) ||z s||_2``
    with ``z_t`` the noise multiplier of step t and ``s`` the learning-rate
    schedule's shape, is set to 0.5 (1 below 10 features, see the module
    docstring); the result is capped at
    ``max_step / C`` (reached without noise) and so that
    ``eta0 * alpha <= 1``. Another optimizer translates SGD's ``eta0`` by
    its own rule (:meth:`.Optimizer.default_eta0`: momentum keeps the
    long-run step, Adam and AdaGrad, whose steps are normalised per
    coordinate, set the noise-only movement of a weight to the same 0.5 or
    1).

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
        The step length ``eta0 * C`` of a noise-free fit (the
        loss's ``noise_free_step``).
    n_features : int
        d, the public width of X.
    optimizer : Optimizer or None, default=None
        The checked optimizer (:func:`.check_optimizer`); None is plain SGD.

    Returns
    -------
    eta0 : float
    """
    if eta0 != AUTO:
        return float(eta0)
    weight_noise = _WEIGHT_NOISE_FEW_FEATURES if n_features < _FEW_FEATURES else _WEIGHT_NOISE
    noise_multipliers = np.asarray(noise_multipliers, dtype=np.float64)
    shape = learning_rate_schedule(learning_rate, 1.0, power_t, noise_multipliers.size)
    eta0 = max_step / clip_norm
    if (noise_multipliers > 0).any():
        # In this order: clip_norm / batch_size alone can underflow.
        accumulated = float(np.linalg.norm(noise_multipliers * shape)) * clip_norm / batch_size
        eta0 = min(eta0, weight_noise / accumulated)
    if optimizer is not None:
        eta0 = optimizer.default_eta0(eta0, weight_noise, shape)
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


def resolve_sigma(sigma, n_features, sparse, levels):
    """``sigma``, with ``"auto"`` resolved from the public shape of the input.

    Parameters
    ----------
    sigma : float or "auto"
    n_features : int
        d.
    sparse : bool
        Whether X is a sparse matrix (its columns are one-hot or hashed:
        no order to smooth along).
    levels : tuple of (int, float)
        The estimator's ``_auto_sigma_levels``: ``(min_features, sigma)``
        pairs in increasing order; dense input of d features is smoothed
        with the sigma of the last pair whose ``min_features <= d``, and
        not at all below the first.

    Returns
    -------
    sigma : float
    """
    if sigma != AUTO:
        return float(sigma)
    resolved = 0.0
    if not sparse:
        for min_features, level in levels:
            if n_features >= min_features:
                resolved = level
    return float(resolved)
