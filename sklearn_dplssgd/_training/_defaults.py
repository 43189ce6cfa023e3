"""The ``"auto"`` hyperparameters, resolved from public quantities only.

``delta``, ``batch_size``, ``max_iter``, ``eta0``, ``average`` and ``sigma``
accept ``"auto"``; the ``resolve_*`` functions turn them into numbers at the
start of ``fit``, before any row is read, from the accounted row count, the
width, epsilon, the clip norm, the schedule and the calibrated noise. Nothing
here sees a feature, a label or a target, so the settings release nothing
about the rows. Why each rule: the user guide, "Hyperparameters and the
defaults" (``docs/user_guide/hyperparameters.rst``, "How the defaults are
chosen").
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

# About 1,000 steps converge a linear model; q >= 1/32 keeps z where
# subsampling amplifies privacy well; small tables train on full batches.
_TARGET_STEPS = 1000
_FULL_BATCH_ROWS = 256
_MIN_SAMPLE_RATE = 1.0 / 32.0
# The noise allowed on each weight, _PREDICTION_NOISE sqrt(m / d) for a
# noise-free step m: the same noise on a prediction of a row in [-1, 1]^d
# at every width; at least _MIN_WEIGHT_NOISE m and at most _MAX_WEIGHT_NOISE.
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
    """``batch_size``, or for ``"auto"`` the largest table trained on full batches."""
    return _FULL_BATCH_ROWS if batch_size == AUTO else int(batch_size)


def resolve_delta(delta, n_public):
    """``delta``, with ``"auto"`` resolved to ``min(1e-5, 1 / (10 n))`` (n: ``n_public``)."""
    if delta != AUTO:
        return float(delta)
    return min(_DEFAULT_DELTA, 1.0 / (10.0 * n_public))


def resolve_schedule(batch_size, max_iter, n_public, *, partial=False):
    """Batch size and epochs, with ``"auto"`` resolved from the row count ``n_public``.

    ``batch_size="auto"``: ``n`` up to 256 rows, then 256, then
    ``ceil(n / 32)``; ``max_iter="auto"``: the epochs that give at least
    1,000 steps. For a call of a release series (``partial=True``, one
    epoch) ``batch_size="auto"`` is ``ceil(n / 64)``, at least 16, at most n.
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

    ``1.75 sqrt(max_step / d)`` within ``[max_step / 16, 2]``, with
    ``max_step`` the noise-free step ``eta0 * C`` (4 for the classifiers,
    1 for the regressor).
    """
    target = _PREDICTION_NOISE * math.sqrt(max_step / max(int(n_features), 1))
    return float(min(_MAX_WEIGHT_NOISE, max(_MIN_WEIGHT_NOISE * max_step, target)))


def smoothed_noise_share(n_features, sigma, reference_sigma):
    """``sqrt(beta(sigma) / beta(reference_sigma))``: the noise reaching the weights.

    Smoothing with ``sigma`` leaves ``sqrt(beta)`` of the noise's standard
    deviation (:func:`.smoothing_beta`); a step rule measured with
    ``reference_sigma`` scales its noise estimate by this share. 1.0 when
    ``reference_sigma`` is None.
    """
    if reference_sigma is None or n_features < 2 or sigma == reference_sigma:
        return 1.0
    return math.sqrt(smoothing_beta(n_features, sigma)
                     / smoothing_beta(n_features, reference_sigma))


def resolve_eta0(eta0, *, learning_rate, power_t, noise_multipliers, clip_norm, batch_size,
                 alpha, max_step, n_features, optimizer=None, partial=False, noise_share=1.0):
    """``eta0``, with ``"auto"`` resolved from the calibrated noise.

    SGD: the noise accumulated on each weight, ``eta0 (C / b) ||z s||_2``
    (``z_t`` the noise multipliers, ``s`` the schedule's shape, scaled by
    ``noise_share``), is set to :func:`weight_noise_target`, capped at
    ``max_step / C`` and at ``1 / alpha``. Another optimizer translates
    SGD's ``eta0`` by :meth:`.Optimizer.default_eta0`. The first call of a
    release series (``partial=True``) bounds the noise of ``ASSUMED_CALLS``
    calls like it.
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

    ``W / m`` within ``[1/16, 1/2]`` (``W`` :func:`weight_noise_target`,
    ``m`` the noise-free step): a wide table takes short steps and its
    weights still drift at the end, where a long tail lags behind them.
    """
    share = weight_noise_target(n_features, max_step) / max_step
    return float(min(_LONGEST_TAIL, max(_SHORTEST_TAIL, share)))


def resolve_average_start(average, n_steps, *, tail=0.5):
    """The step after which iterates are averaged (steps ``start + 1 .. T``), or None.

    ``"auto"`` and ``True`` average the last ``tail`` of the steps,
    ``False`` none, an int k the iterates after the first k steps.
    """
    if average == AUTO or average is True:
        return n_steps - max(math.ceil(n_steps * tail), 1)
    if average is False:
        return None
    return min(int(average), n_steps - 1)


def resolve_sigma(sigma, n_features, sparse, levels, feature_names=None):
    """``sigma``, with ``"auto"`` and ``"ordered"`` resolved from public information.

    ``"auto"`` smooths only columns :func:`.feature_layout` finds ordered,
    ``"ordered"`` declares them ordered. Ordered columns get the sigma of
    the last ``(min_features, sigma)`` pair of ``levels`` with
    ``min_features <= n_features`` (0 below the first).
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
    """Why ``sigma`` resolves to its value, in one sentence (:func:`resolve_sigma`'s inputs)."""
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
