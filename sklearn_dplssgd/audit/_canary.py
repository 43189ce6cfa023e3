"""The canary row, its score on a fitted model, and its choice for an estimator."""

import collections
import math

import numpy as np
from sklearn.base import clone, is_classifier

from .._mechanisms import output_perturbation_bounds, smoothness_constants
from .._training import (
    resolve_sigma, LOSSES, loss_code, loss_derivative, learning_rate_schedule,
    smoothing_eigenvalues,
)
from ._fits import append_label, check_estimator, seeded_fit

__all__ = [
    "auto_canary", "canary_direction", "canary_score", "CanaryStatistic", "make_canary_dataset",
    "smoothing_strength"
]

# Margin of the regression canary's target over its largest plausible
# prediction, and that prediction's reach in standard deviations: the residual
# never changes sign, so the canary always pushes with the full clip norm.
_TARGET_HEADROOM = 10.0
_WEIGHT_REACH_SD = 6.0
# The regression canary's size over the smallest that saturates the clip
# norm: the share landing on the intercept, 1 / sqrt(M^2 + 1), is negligible.
_SATURATION_FACTOR = 100.0
# Classification canary magnitudes (over the clip norm) and the Monte Carlo
# sample of weights they are rated on.
_CLASSIFIER_SCALES = np.geomspace(1e-2, 1e6, 161)
_WEIGHT_SAMPLES = 512


def make_canary_dataset(n_samples, n_features, *, task="classification", classes=(0, 1),
                        canary_scale=10.0, canary_target=1e6, canary_feature=0,
                        random_state=None):
    """Background data that is zero in one feature, and a canary large in it.

    The background adds nothing to that coordinate of the gradient: after
    undoing the smoothing, the weights' coordinate is the noise plus the
    canary's clipped pushes, which makes the audit strong.

    Parameters
    ----------
    n_samples : int
        Background rows (the canary is not counted).
    n_features : int
        Number of features ``d >= 1``.
    task : {"classification", "regression"}, default="classification"
        Kind of targets.
    classes : sequence, default=(0, 1)
        Label set of a classification task (uniform background labels; the
        canary gets the last).
    canary_scale : float, default=10.0
        Value of the canary in ``canary_feature`` (its other features are 0).
    canary_target : float, default=1e6
        Target of a regression canary, far from any prediction.
    canary_feature : int, default=0
        The feature the background leaves at 0.
    random_state : int, Generator or None, default=None
        Seed of the background.

    Returns
    -------
    X_background : ndarray of shape (n_samples, n_features)
        Standard normal features scaled by ``1 / sqrt(n_features)``, with
        column ``canary_feature`` zero.
    y_background : ndarray of shape (n_samples,)
        Uniform labels, or a noisy linear function of the features.
    x_canary : ndarray of shape (n_features,)
    y_canary : label or float
    """
    if task not in ("classification", "regression"):
        raise ValueError(f"task must be 'classification' or 'regression'; got {task!r}.")
    if int(n_samples) < 1 or int(n_features) < 1:
        raise ValueError(
            f"Need n_samples >= 1 and n_features >= 1; got {n_samples!r}, {n_features!r}.")
    if not 0 <= canary_feature < n_features:
        raise ValueError(f"canary_feature must be in [0, {n_features}); got {canary_feature!r}.")
    rng = np.random.default_rng(random_state)
    X = rng.standard_normal((n_samples, n_features)) / math.sqrt(n_features)
    X[:, canary_feature] = 0.0
    x_canary = np.zeros(n_features)
    x_canary[canary_feature] = canary_scale
    if task == "classification":
        labels = np.asarray(classes)
        return X, labels[rng.integers(len(labels), size=n_samples)], x_canary, labels[-1]
    y = X @ rng.standard_normal(n_features) + 0.1 * rng.standard_normal(n_samples)
    return X, y, x_canary, float(canary_target)


def canary_direction(estimator, x_canary, y_canary, classes):
    """How the canary moves the weights from zero: ``(u, c, loss code, encoded target)``.

    ``u`` is the canary's unit feature vector and ``c`` the unit vector along
    its negated gradient ``-d loss / d z`` at zero weights: the canary drags
    ``W u`` along ``c``.
    """
    norm = np.linalg.norm(x_canary)
    if not norm > 0:
        raise ValueError("The canary's features are all zero: it would be invisible to the model.")
    probe_model = clone(estimator)
    if is_classifier(estimator):
        probe_model.set_params(classes=classes)
    y_encoded, n_outputs = probe_model._targets().encode(np.asarray([y_canary]))
    code = loss_code(estimator.loss, n_outputs)
    residual = loss_derivative(
        None, code, np.zeros((1, n_outputs)), np.asarray(y_encoded, dtype=np.float64),
        LOSSES[estimator.loss].threshold(estimator),
    )[0]
    push = -residual
    if not np.linalg.norm(push) > 0:
        raise ValueError(
            "The canary's loss has zero gradient at zero weights (for example a regression "
            "target within loss_threshold of 0): it never moves the model. Use a larger target."
        )
    return x_canary / norm, push / np.linalg.norm(push), code, y_encoded[0]


class CanaryStatistic:
    """Score of a fitted model: its un-smoothed weights projected on the canary's push.

    Each step moves the coefficients by ``-eta / b * A^{-1} g``, so ``A W^T``
    sums the raw noisy gradients; ``A`` being symmetric, ``c . (A W u) = c .
    (W (A u))`` undoes the smoothing once, on the probe ``A u``.
    """

    def __init__(self, direction, push, sigma):
        n_features = direction.shape[0]
        eigenvalues = smoothing_eigenvalues(n_features, sigma)
        self.probe = np.fft.irfft(np.fft.rfft(direction) * eigenvalues, n=n_features)
        self.push = push

    def __call__(self, model):
        coef = np.atleast_2d(model.coef_)
        return float(self.push @ (coef @ self.probe))


def canary_score(model, x_canary, y_canary):
    """Score of one fitted model for the presence of a canary.

    ``c . (W A_sigma u)``: the canary's coordinate of the un-smoothed
    coefficients (``u`` its unit feature vector, ``A_sigma`` the model's
    smoothing, ``c`` the direction its gradient pushes the outputs at zero
    weights), which training on the canary raises; ``c . (W u)`` for
    ``mechanism="output"``.

    Parameters
    ----------
    model : DPLSSGDClassifier or DPLSSGDRegressor
        A fitted estimator.
    x_canary : array-like of shape (n_features,)
    y_canary : label or float

    Returns
    -------
    score : float
    """
    check_estimator(model)
    classes = getattr(model, "classes_", None)
    x_canary = np.asarray(x_canary, dtype=np.float64)
    direction, push, _, _ = canary_direction(model, x_canary, y_canary, classes)
    return CanaryStatistic(direction, push, smoothing_strength(model, x_canary.shape[0]))(model)


def smoothing_strength(estimator, n_features):
    """The sigma of the smoothing applied to the noisy steps (none for output perturbation)."""
    if estimator._release_mechanism().perturbs_weights:
        return 0.0
    if hasattr(estimator, "sigma_"):
        return estimator.sigma_
    # Not fitted yet: as its fits on dense rows of the canary's length resolve it.
    return resolve_sigma(estimator.sigma, n_features, False, estimator._auto_sigma_levels)


def _quietest_direction(X):
    """Unit feature vector along which the background rows are smallest.

    An all-zero column if there is one, else X's last right singular vector
    (the ClipBKD construction of Jagielski, Ullman and Oprea, "Auditing
    differentially private machine learning: how private is private SGD?",
    NeurIPS 2020).
    """
    zero_columns = np.flatnonzero(~np.any(X != 0, axis=0))
    direction = np.zeros(X.shape[1])
    if zero_columns.size:
        direction[zero_columns[0]] = 1.0
        return direction
    return np.linalg.svd(X, full_matrices=True)[2][-1]


# Data-free scales of the weights (alpha's shrinkage ignored, which overstates
# them): the canary's coordinate ends near ``push`` with standard deviation
# ``noise``; no parameter drifts further than ``drift`` plus noise.
_WeightScale = collections.namedtuple("_WeightScale", "push noise drift")


def _weight_scale(model):
    """The :data:`_WeightScale` of a fitted model's settings."""
    etas = learning_rate_schedule(model.learning_rate, model.eta0_, model.power_t,
                                  model.n_steps_)
    expected_batch = model.batch_size_  # the public divisor of the noisy sum
    clip = float(model.clip_norm)
    noise = model.noise_multiplier_ * clip * math.sqrt(float(np.sum(etas**2))) / expected_batch
    push = clip * float(np.sum(etas)) * model.sample_rate_ / expected_batch
    # Each step moves a parameter by at most eta_t C |B_t| / b; twice the
    # expected batch covers the Poisson fluctuation of |B_t|.
    drift = 2.0 * clip * float(np.sum(etas))
    return _WeightScale(push=push, noise=noise, drift=drift)


def _classifier_canary_scale(scale, push, code, y_encoded, clip_norm, fit_intercept):
    """Canary magnitude that pushes hardest on average over training.

    Its gradient fades as its margin grows. The weights along the canary are
    modelled as ``push * t + noise * sqrt(t) * xi`` (``t`` uniform in (0, 1],
    ``xi`` standard normal); each magnitude is rated by the mean share of
    the clip norm its clipped gradient pushes along the statistic.
    """
    rng = np.random.default_rng(0)  # A fixed sample: the choice must be reproducible.
    n_outputs = push.shape[0]
    t = rng.uniform(size=(_WEIGHT_SAMPLES, 1))
    xi = rng.standard_normal((_WEIGHT_SAMPLES, n_outputs))
    weights = scale.push * t * push + scale.noise * np.sqrt(t) * xi
    intercept = 1.0 if fit_intercept else 0.0
    best_scale, best_share = None, -1.0
    for magnitude in _CLASSIFIER_SCALES * clip_norm:
        residuals = loss_derivative(
            None, code, magnitude * weights, np.full(_WEIGHT_SAMPLES, y_encoded, dtype=np.float64)
        )
        feature_norm = math.sqrt(magnitude**2 + intercept)
        gradient_norms = np.linalg.norm(residuals, axis=1) * feature_norm
        clip_factor = np.minimum(1.0, clip_norm / np.maximum(gradient_norms, 1e-300))
        share = np.mean(clip_factor * (-(residuals @ push)) * magnitude) / clip_norm
        if share > best_share:
            best_scale, best_share = magnitude, share
    return best_scale


def _regression_canary(model, scale):
    """Magnitude and target of a regression canary that always saturates the clip norm.

    Its target sits far beyond any prediction the noisy weights can make
    (coefficient along the canary times its size, plus the intercept, each
    bounded by the drift and six noise standard deviations), so the residual
    keeps its sign and its size (``|r| >= 1`` for squared error and
    epsilon-insensitive, ``= loss_threshold`` for Huber).
    """
    clip = float(model.clip_norm)
    smallest_residual = LOSSES[model.loss].far_residual(float(model.loss_threshold))
    magnitude = _SATURATION_FACTOR * clip / smallest_residual
    reach = (magnitude + 1.0) * (scale.drift + _WEIGHT_REACH_SD * scale.noise)
    target = _TARGET_HEADROOM * (reach + float(model.loss_threshold) + 1.0)
    return magnitude, target


def _output_canary(estimator, direction, label):
    """Canary for output perturbation: at the row norm bound, saturating the loss.

    Longer rows are clipped to ``row_norm_bound``, so the canary sits on it.
    A regression canary's target lies beyond any prediction of the
    noise-free weights, which stay within ``2 R / mu`` of zero (the penalised
    minimiser is within ``R / mu``, and the descent from zero contracts
    towards it): Huber's derivative then stays clipped at its threshold, the
    worst case of the sensitivity bound.
    """
    magnitude = float(output_perturbation_bounds(estimator.mechanism).row_norm_bound)
    if is_classifier(estimator):
        return magnitude * direction, label
    if not LOSSES[estimator.loss].needs_weight_bound:
        constants = smoothness_constants(
            estimator.loss, 1, magnitude, float(estimator.alpha), bool(estimator.fit_intercept),
            loss_threshold=float(estimator.loss_threshold))
        reach = 2.0 * constants.gradient_bound / constants.strong_convexity * (magnitude + 1.0)
        target = _TARGET_HEADROOM * (reach + float(estimator.loss_threshold) + 1.0)
    else:
        # R holds only within target_bounds, to which the targets are clipped.
        target = float(estimator.target_bounds[1])
    return magnitude * direction, target


def auto_canary(estimator, X, y, classes):
    """Canary for ``estimator`` on background ``(X, y)``: direction, size, label."""
    direction = _quietest_direction(X)
    label = classes[-1] if is_classifier(estimator) else 1.0
    if estimator._release_mechanism().perturbs_weights:
        return _output_canary(estimator, direction, label)
    # One fit with a unit canary gives the data-free z, q and T the size is tuned to.
    reference = seeded_fit(estimator, 0, np.vstack([X, direction]), append_label(y, label))
    scale = _weight_scale(reference)
    if not is_classifier(estimator):
        magnitude, target = _regression_canary(reference, scale)
        return magnitude * direction, target
    _, push, code, y_encoded = canary_direction(estimator, direction, label, classes)
    magnitude = _classifier_canary_scale(
        scale, push, code, y_encoded, float(estimator.clip_norm), bool(estimator.fit_intercept))
    return magnitude * direction, label
