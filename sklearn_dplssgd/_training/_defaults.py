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
rows. The measurements behind each constant are quoted, with the commands
that reproduce them, in the user guide ("Hyperparameters and the defaults").

The rule, and why
-----------------
Steps and batches. For the Poisson-subsampled Gaussian mechanism at small
sample rates the privacy of ``T`` steps depends, to first order, on
``q sqrt(T) / z`` only, so the noise left in the weights after a run of
total step length ``eta T`` is the same whatever the split into batch size
and number of steps; the split changes the work and how well the optimiser
converges. The defaults aim at about ``_TARGET_STEPS`` steps (enough for a
linear model to converge) with the sample rate ``q = b / n`` held at
``1 / 32`` or more: small tables (``n <= 256``) train on full batches,
mid-sized ones on batches of 256, large ones on ``n / 32`` rows (so that
``z`` does not fall where subsampling amplifies privacy badly).
``max_iter`` is the number of epochs that gives at least ``_TARGET_STEPS``
steps.

Step size. Each weight accumulates the Gaussian noise of every step,
``eta_t z C / b`` per step, so a standard deviation of
``W = eta0 (z C / b) sqrt(sum_t s_t^2)`` after the run (``s_t`` the
schedule's shape), while the signal moves it by at most
``eta0 C sum_t s_t``: ``eta0`` only chooses the scale, and it is chosen so
that ``W`` equals :func:`weight_noise_target`, ``1.75 sqrt(max_step / d)``
within ``[max_step / 16, 2]``, never above the noise-free step
``max_step / C``: 4 for the classifiers (whose weights grow large on
separable classes), 1 for the regressor (whose targets are scaled to
``[-1, 1]``, so that its weights are of order one). Why ``1 / sqrt(d)``:
the noise on the weights reaches a prediction as ``W ||x||``, and rows
mapped to ``[-1, 1]`` (or ``[0, 1]``) by public bounds have
``||x|| <= sqrt(d)``, so the target keeps that noise at one level for every
width (3.5 logits for the classifier, 1.75 for the regressor's scaled
targets). The exponent and the constant were fitted on a map of tables,
widths, scalings and epsilons, and judged on held-out tables and splits.
The target reads ``d`` and the noise-free step only, never a value of the
rows, so it cannot tell features in ``[0, 1]`` from features in ``[-1, 1]``,
nor two classes from ten: the rule is the compromise between them. The
regressor's target was measured on fits smoothed with sigma 1; an
unsmoothed regressor scales its estimate of the accumulated noise by
``sqrt(beta(sigma_) / beta(1))`` (:func:`smoothed_noise_share`) so that the
noise reaching its weights stays where it was measured.

Averaging. The returned model is the mean of the iterates of the last share
of the steps (tail averaging: post-processing of the noisy iterates, no
privacy cost), a half for the regressor and :func:`averaging_tail` for the
classifiers (``W / m`` within ``[1/16, 1/2]``). While the weights still
drift, an average over the last fraction f of the steps lags the drift by
``f / 2`` of it and keeps ``1 - 2 f / 3`` of the noise's variance; once
they have settled around the optimum it averages the fluctuations away.
``eta0`` scales with ``W``, so a wide table takes short steps and still
drifts at the end of the run (a short tail), while a narrow one travels
far, settles and gains from a long one.

Release series. A ``partial_fit`` call runs one epoch over its own rows;
its ``batch_size="auto"`` is ``ceil(n_call / 64)`` rows, at least 16, so
that a call takes up to 64 steps. The series' ``eta0`` is fixed by its first
call and bounds the noise of ``ASSUMED_CALLS`` (4) calls like it, so a
series of k calls ends with ``sqrt(k / 4)`` times the target; over k
disjoint blocks each block's noise protects only that block's rows, about
``1 / sqrt(k)`` of ``fit``'s signal-to-noise ratio at the same epsilon.

Smoothing. ``sigma="auto"`` smooths only columns that are ordered, decided
from public information only (``_feature_layout``: the declaration
``sigma="ordered"``, the input's format, its width and the column names).
Laplacian smoothing averages each coordinate of the noisy gradient with its
neighbours along the feature axis: it pays where neighbouring features are
related (pixels, spectra, time series) and biases the step where the
columns have no order (a one-hot table). Ordered columns are smoothed by
the estimator's own levels, by width: the classifier not below 10
features, lightly (sigma 0.25) from 10 and fully (sigma 1) from 100; the
regressor always (sigma 1). The reason is in ``privacy_report()``
(:func:`explain_sigma`).

delta. ``min(1e-5, 1 / (10 n))``: far below ``1 / n`` for any ``n`` (a
mechanism that publishes one random row with probability ``delta`` meets a
``(0, delta)`` guarantee), and the usual ``1e-5`` wherever that is smaller.
"""

import math

import numpy as np

from ._feature_layout import feature_layout, ORDERED
from ._schedules import learning_rate_schedule
from ._smoothing import smoothing_beta

__all__ = [
    "ASSUMED_CALLS",
    "AUTO",
    "ORDERED",
    "averaging_tail",
    "nominal_batch_size",
    "resolve_average_start",
    "resolve_delta",
    "resolve_eta0",
    "resolve_schedule",
    "resolve_sigma",
    "explain_sigma",
    "smoothed_noise_share",
    "weight_noise_target",
]

AUTO = "auto"

# See the module docstring.
_TARGET_STEPS = 1000
_FULL_BATCH_ROWS = 256
_MIN_SAMPLE_RATE = 1.0 / 32.0
# The accumulated noise allowed on each weight: _PREDICTION_NOISE sqrt(m / d)
# for a noise-free step m (see "Step size"), at least _MIN_WEIGHT_NOISE m and
# at most _MAX_WEIGHT_NOISE.
_PREDICTION_NOISE = 1.75
_MIN_WEIGHT_NOISE = 1.0 / 16.0
_MAX_WEIGHT_NOISE = 2.0
# A release series (partial_fit): the calls assumed when bounding the noise
# the weights accumulate over the whole series, and the steps a call aims at.
ASSUMED_CALLS = 4
_STEPS_PER_CALL = 64
_MIN_CALL_BATCH = 16
_DEFAULT_DELTA = 1e-5
# The share of the steps a classifier averages (averaging_tail).
_SHORTEST_TAIL = 1.0 / 16.0
_LONGEST_TAIL = 0.5
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


def resolve_schedule(batch_size, max_iter, n_public, *, partial=False):
    """Batch size and epochs, with ``"auto"`` resolved from the row count.

    ``batch_size="auto"`` is ``n`` up to 256 rows (full batches), then 256,
    then ``ceil(n / 32)`` beyond 8,192 rows. ``max_iter="auto"`` is the
    number of epochs that gives at least 1,000 steps. For a call of a
    release series (``partial=True``: one epoch over the call's rows),
    ``batch_size="auto"`` is ``ceil(n / 64)`` rows, at least 16 (and at most
    ``n``), so that each call takes up to 64 steps instead of one.

    Parameters
    ----------
    batch_size : int or "auto"
    max_iter : int or "auto"
    n_public : int
        The accounted row count (of this call, for a call of a series).
    partial : bool, default=False
        A call of a release series (``partial_fit``).

    Returns
    -------
    batch_size : int
    max_iter : int
    """
    if batch_size == AUTO:
        if partial:
            batch_size = min(n_public, max(_MIN_CALL_BATCH,
                                           math.ceil(n_public / _STEPS_PER_CALL)))
        else:
            batch_size = min(n_public, max(_FULL_BATCH_ROWS,
                                           math.ceil(n_public * _MIN_SAMPLE_RATE)))
    batch_size = int(batch_size)
    if max_iter == AUTO:
        # T = ceil(max_iter * n / b) >= _TARGET_STEPS (T = max_iter for full batches).
        max_iter = max(1, math.ceil(_TARGET_STEPS * min(batch_size, n_public) / n_public))
    return batch_size, int(max_iter)


def weight_noise_target(n_features, max_step):
    """The noise ``"auto"`` lets each weight accumulate over a run (or a series).

    ``1.75 sqrt(max_step / d)``, at least ``max_step / 16`` and at most 2:
    the noise this leaves on the prediction of a row at a corner of
    ``[-1, 1]^d`` (norm ``sqrt(d)``) is ``1.75 sqrt(max_step)``, 3.5 logits
    for the classifiers (``max_step`` 4: ``3.5 / sqrt(d)`` within
    ``[0.25, 2]``), 1.75 for the regressor (``max_step`` 1, targets scaled to
    ``[-1, 1]``: ``1.75 / sqrt(d)`` within ``[0.0625, 2]``). See the module
    docstring, "Step size".

    Parameters
    ----------
    n_features : int
        d, the public width of X.
    max_step : float
        The step length ``eta0 * C`` of a noise-free fit.

    Returns
    -------
    weight_noise : float
    """
    target = _PREDICTION_NOISE * math.sqrt(max_step / max(int(n_features), 1))
    return float(min(_MAX_WEIGHT_NOISE, max(_MIN_WEIGHT_NOISE * max_step, target)))


def smoothed_noise_share(n_features, sigma, reference_sigma):
    """The noise reaching the weights, relative to the smoothing a step rule was measured with.

    Smoothing with ``sigma`` leaves each coordinate of the step's Gaussian
    noise ``sqrt(beta)`` of its standard deviation, with ``beta`` the mean
    of ``1 / lambda_k^2`` over the eigenvalues of ``A_sigma``
    (:func:`.smoothing_beta`; 0.52 at sigma 1 from 10 features). A rule for
    ``eta0`` whose noise target was measured on fits smoothed with
    ``reference_sigma`` keeps the noise that reaches the weights when the fit
    smooths with another ``sigma`` by scaling its estimate of the
    accumulated noise by ``sqrt(beta(sigma) / beta(reference_sigma))``.
    From public quantities only (d and the two sigmas).

    Parameters
    ----------
    n_features : int
    sigma : float
        The fit's ``sigma_``.
    reference_sigma : float or None
        The sigma the estimator's step rule was measured with; None: no
        adjustment (1.0 returned).

    Returns
    -------
    share : float
    """
    if reference_sigma is None or n_features < 2 or sigma == reference_sigma:
        return 1.0
    return math.sqrt(smoothing_beta(n_features, sigma)
                     / smoothing_beta(n_features, reference_sigma))


def resolve_eta0(eta0, *, learning_rate, power_t, noise_multipliers, clip_norm, batch_size,
                 alpha, max_step, n_features, optimizer=None, partial=False, noise_share=1.0):
    """``eta0``, with ``"auto"`` resolved from the calibrated noise.

    SGD: the accumulated noise on each weight, ``eta0 (C / b) ||z s||_2``
    with ``z_t`` the noise multiplier of step t and ``s`` the learning-rate
    schedule's shape, is set to :func:`weight_noise_target` (see the module
    docstring); the result is capped at ``max_step / C`` (reached without
    noise) and so that ``eta0 * alpha <= 1``. Another optimizer translates
    SGD's ``eta0`` by its own rule (:meth:`.Optimizer.default_eta0`:
    momentum keeps the long-run step, Adam and AdaGrad, whose steps are
    normalised per coordinate, set the noise-only movement of a weight to
    the same target).

    For the first call of a release series (``partial=True``; later calls
    keep the series' ``eta0``) the noise bounded is that of the whole
    series: ``ASSUMED_CALLS`` (4) calls like this one, so ``||z s||_2`` is
    taken ``sqrt(4)`` times larger (and the optimizers' target ``sqrt(4)``
    times smaller). A series of k calls then ends with ``sqrt(k / 4)`` times
    the target.

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
    partial : bool, default=False
        The first call of a release series (``partial_fit``).
    noise_share : float, default=1.0
        The share of the accumulated noise that reaches the weights,
        relative to the smoothing the rule was measured with
        (:func:`smoothed_noise_share`).

    Returns
    -------
    eta0 : float
    """
    if eta0 != AUTO:
        return float(eta0)
    weight_noise = weight_noise_target(n_features, max_step)
    noise_multipliers = np.asarray(noise_multipliers, dtype=np.float64)
    shape = learning_rate_schedule(learning_rate, 1.0, power_t, noise_multipliers.size)
    calls = math.sqrt(ASSUMED_CALLS) if partial else 1.0
    eta0 = max_step / clip_norm
    if (noise_multipliers > 0).any():
        # In this order: clip_norm / batch_size alone can underflow.
        accumulated = (calls * noise_share * float(np.linalg.norm(noise_multipliers * shape))
                       * clip_norm / batch_size)
        eta0 = min(eta0, weight_noise / accumulated)
    if optimizer is not None:
        eta0 = optimizer.default_eta0(eta0, weight_noise / calls, shape)
    if alpha > 0:
        eta0 = min(eta0, _MAX_ETA_ALPHA / alpha)
    return float(eta0)


def averaging_tail(n_features, max_step):
    """The share of the steps a classifier's ``average="auto"`` averages.

    ``W / m`` within ``[1/16, 1/2]``, where ``W`` is
    :func:`weight_noise_target` and ``m`` the noise-free step: for the
    classifiers (``m = 4``) a half up to 3 features, a quarter at 12, an
    eighth at 48, a sixteenth from 196. The wider the table, the smaller
    the noise ``eta0`` lets each weight carry, the shorter the steps, and
    the more the weights still drift at the end of the run, where a long
    tail lags behind them. See the module docstring, "Averaging".

    Parameters
    ----------
    n_features : int
        d, the public width of X.
    max_step : float
        The step length ``eta0 * C`` of a noise-free fit.

    Returns
    -------
    tail : float
    """
    share = weight_noise_target(n_features, max_step) / max_step
    return float(min(_LONGEST_TAIL, max(_SHORTEST_TAIL, share)))


def resolve_average_start(average, n_steps, *, tail=0.5):
    """The step after which iterates are averaged, or None.

    Parameters
    ----------
    average : bool, int or "auto"
        ``"auto"`` and ``True``: the iterates of the last ``tail`` of the
        steps (earlier iterates lag behind the model and would drag the
        average back towards the starting point); ``False``: no averaging
        (the last iterate); an int ``k >= 1``: the iterates after the first
        ``k`` steps (only the last one when ``k >= T``).
    n_steps : int
    tail : float, default=0.5
        The share of the steps ``"auto"`` and ``True`` average, in (0, 1]:
        a half for the regressor, :func:`averaging_tail` for the
        classifiers (see the module docstring, "Averaging").

    Returns
    -------
    start : int or None
        Averaging covers the iterates after steps ``start + 1 .. T``.
    """
    if average == AUTO or average is True:
        return n_steps - max(math.ceil(n_steps * tail), 1)
    if average is False:
        return None
    return min(int(average), n_steps - 1)


def resolve_sigma(sigma, n_features, sparse, levels, feature_names=None):
    """``sigma``, with ``"auto"`` and ``"ordered"`` resolved from public information.

    ``"auto"`` smooths only columns that :func:`.feature_layout` finds
    ordered (an image's shape, numbered names; never sparse input or a
    table's named columns), ``"ordered"`` declares them ordered; ordered
    columns are smoothed by the estimator's levels, by width.

    Parameters
    ----------
    sigma : float, "auto" or "ordered"
    n_features : int
        d.
    sparse : bool
        Whether X is a sparse matrix (its columns are one-hot or hashed:
        no order to smooth along).
    levels : tuple of (int, float)
        The estimator's ``_auto_sigma_levels``: ``(min_features, sigma)``
        pairs in increasing order; ordered input of d features is smoothed
        with the sigma of the last pair whose ``min_features <= d``, and
        not at all below the first.
    feature_names : array-like of str or None, default=None
        The column names (``feature_names_in_``: schema, public).

    Returns
    -------
    sigma : float
    """
    if sigma not in (AUTO, ORDERED):
        return float(sigma)
    ordered, _ = feature_layout(n_features, sparse, feature_names,
                                declared_ordered=sigma == ORDERED)
    resolved = 0.0
    if ordered:
        for min_features, level in levels:
            if n_features >= min_features:
                resolved = level
    return float(resolved)


def explain_sigma(sigma, n_features, sparse, levels, feature_names=None):
    """Why ``sigma`` resolves to the value it does, in one sentence.

    The same inputs as :func:`resolve_sigma`, all public: what a report or a
    demonstration prints beside the smoothing strength a fit used.

    Parameters
    ----------
    sigma : float, "auto" or "ordered"
    n_features : int
    sparse : bool
    levels : tuple of (int, float)
    feature_names : array-like of str or None, default=None

    Returns
    -------
    reason : str
    """
    resolved = resolve_sigma(sigma, n_features, sparse, levels, feature_names)
    if sigma not in (AUTO, ORDERED):
        return f"sigma={resolved:g} was given"
    ordered, why = feature_layout(n_features, sparse, feature_names,
                                  declared_ordered=sigma == ORDERED)
    if not ordered:
        return f"sigma={sigma!r} chose 0: {why}"
    rule = ", ".join(f"{level:g} from {min_features} features" for min_features, level in levels)
    return (f"sigma={sigma!r} chose {resolved:g} for ordered columns ({why}; by width: "
            f"{rule}; 0 below)")
