"""The canary row, its score on a fitted model, and its choice for an estimator."""

import dataclasses
import math

import numpy as np
from sklearn.base import clone, is_classifier

from .._mechanisms import smoothness_constants
from .._training import (
    resolve_sigma, LOSSES, loss_code, loss_derivative, learning_rate_schedule,
    smoothing_eigenvalues,
)
from ._fits import append_label, check_estimator, seeded_fit

__all__ = [
    "auto_canary",
    "canary_direction",
    "canary_score",
    "CanaryStatistic",
    "make_canary_dataset",
    "smoothing_strength",
]

# Margin of the regression canary's target over its largest plausible
# prediction, and the reach (in standard deviations) of that prediction: the
# residual then never changes sign, so the canary's gradient always saturates
# the clip norm and always pushes the same way.
_TARGET_HEADROOM = 10.0
_WEIGHT_REACH_SD = 6.0
# The regression canary is this many times larger than the smallest size at
# which its gradient saturates the clip norm: the share of its clipped
# gradient that lands on the intercept, 1 / sqrt(M^2 + 1), is then negligible.
_SATURATION_FACTOR = 100.0
# Candidate canary magnitudes for classification losses (relative to the clip
# norm) and the Monte Carlo sample of weights they are rated on.
_CLASSIFIER_SCALES = np.geomspace(1e-2, 1e6, 161)
_WEIGHT_SAMPLES = 512


# ---------------------------------------------------------------------------
# The canary
# ---------------------------------------------------------------------------


def make_canary_dataset(
    n_samples,
    n_features,
    *,
    task="classification",
    classes=(0, 1),
    canary_scale=10.0,
    canary_target=1e6,
    canary_feature=0,
    random_state=None,
):
    """Background data that is zero in one feature, and a canary large in it.

    Background rows contribute nothing to the gradient's coordinate
    ``canary_feature``, so after undoing the Laplacian smoothing that
    coordinate of the weights is the Gaussian noise plus the canary's own
    clipped pushes: the two hypotheses differ as little as the noise allows
    them to, which is what makes the audit strong.

    Parameters
    ----------
    n_samples : int
        Background rows (the canary is not counted).
    n_features : int
        Number of features ``d >= 1``.
    task : {"classification", "regression"}, default="classification"
        Kind of targets.
    classes : sequence, default=(0, 1)
        Label set of a classification task; background labels are drawn
        uniformly from it and the canary gets the last label.
    canary_scale : float, default=10.0
        Value of the canary in ``canary_feature`` (its other features are 0).
    canary_target : float, default=1e6
        Target of the canary for regression: far from any prediction, so its
        residual keeps its sign and its gradient saturates the clip norm.
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
            f"Need n_samples >= 1 and n_features >= 1; got {n_samples!r}, {n_features!r}."
        )
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
    """How the canary moves the weights, seen from the weights' starting point.

    Returns
    -------
    direction : ndarray of shape (n_features,)
        The canary's unit feature vector ``u``.
    push : ndarray of shape (n_outputs,)
        Unit vector ``c`` along its negated gradient ``-d loss / d z`` at zero
        weights: the canary drags ``W u`` along ``c``.
    code : int
        Loss code for the number of outputs.
    y_encoded : float
        The canary's target as the kernels see it.
    """
    norm = np.linalg.norm(x_canary)
    if not norm > 0:
        raise ValueError("The canary's features are all zero: it would be invisible to the model.")
    probe_model = clone(estimator)
    if is_classifier(estimator):
        probe_model.set_params(classes=classes)
    y_encoded, n_outputs = probe_model._encode_targets(np.asarray([y_canary]))
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

    Every step moves the coefficients by ``-eta / b * A^{-1} g`` (``g`` the
    noisy clipped gradient sum), so ``A W^T`` is a weighted sum of the raw
    noisy gradients: undoing the smoothing recovers coordinates in which the
    background contributes nothing. Since ``A`` is symmetric,
    ``c . (A W u)`` equals ``c . (W (A u))``: the smoothing is undone once,
    on the probe vector ``A u``, instead of on every model.
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

    The canary's coordinate of the un-smoothed coefficients, signed so that
    training on the canary raises it: ``c . (W A_sigma u)`` with ``u`` the
    canary's unit feature vector, ``A_sigma`` the Laplacian of the model's
    smoothing and ``c`` the direction the canary's gradient pushes the
    outputs at zero weights. For ``mechanism="output"`` (no smoothing) it is
    ``c . (W u)``: the released weights themselves.

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
    """The sigma of the smoothing applied to the noisy steps (none for output perturbation).

    Output perturbation adds its noise to the final weights directly, so the
    canary's coordinate is read from the released weights as they are.
    """
    if estimator._release_mechanism().perturbs_weights:
        return 0.0
    if hasattr(estimator, "sigma_"):
        return estimator.sigma_
    # Not fitted yet: resolved as its fits will resolve it (dense rows of
    # the canary's length; the audits take dense background rows).
    return resolve_sigma(estimator.sigma, n_features, False, estimator._auto_sigma_levels)


# ---------------------------------------------------------------------------
# Choosing the canary for an estimator
# ---------------------------------------------------------------------------


def _quietest_direction(X):
    """Unit feature vector along which the background rows are smallest.

    An all-zero column if there is one (a clean canary coordinate), otherwise
    the right singular vector of the smallest singular value of X: the
    background's gradients, ``r_i x_i``, then barely touch that coordinate
    (the ClipBKD construction of Jagielski et al. 2020).
    """
    zero_columns = np.flatnonzero(~np.any(X != 0, axis=0))
    direction = np.zeros(X.shape[1])
    if zero_columns.size:
        direction[zero_columns[0]] = 1.0
        return direction
    return np.linalg.svd(X, full_matrices=True)[2][-1]


@dataclasses.dataclass(frozen=True)
class _WeightScale:
    """Data-free scales of the weights, from the settings of a fit.

    With the canary saturating the clip norm, its coordinate of the weights
    ends near ``push`` with standard deviation ``noise``; no parameter can
    drift further than ``drift`` (all clipped gradients aligned) plus noise.
    alpha's shrinkage is ignored, which only overstates all three.
    """

    push: float
    noise: float
    drift: float


def _weight_scale(model, n_rows):
    """Push and noise of the canary coordinate, from a fitted model's settings."""
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

    A classification canary's gradient fades as its margin grows (the loss
    is satisfied), so a larger canary saturates the clip norm only while the
    weights stay small. The weights along the canary are modelled as
    ``push * t + noise * sqrt(t) * xi`` at time ``t`` in (0, 1] (xi standard
    normal per output) and each candidate magnitude is rated by the mean share
    of the clip norm its clipped gradient pushes along the statistic.
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
    magnitude = float(estimator.row_norm_bound)
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
    if is_classifier(estimator):
        label = classes[-1]
    else:
        label = 1.0
    if estimator._release_mechanism().perturbs_weights:
        return _output_canary(estimator, direction, label)
    # One fit with a unit canary gives the data-free quantities (z, q, T)
    # that the canary's size is tuned to; they do not depend on the size.
    reference = seeded_fit(estimator, 0, np.vstack([X, direction]), append_label(y, label))
    scale = _weight_scale(reference, X.shape[0] + 1)
    fit_intercept = bool(estimator.fit_intercept)
    if not is_classifier(estimator):
        magnitude, target = _regression_canary(reference, scale)
        return magnitude * direction, target
    _, push, code, y_encoded = canary_direction(estimator, direction, label, classes)
    magnitude = _classifier_canary_scale(
        scale, push, code, y_encoded, float(estimator.clip_norm), fit_intercept
    )
    return magnitude * direction, label
