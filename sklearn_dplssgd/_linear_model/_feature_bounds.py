"""Declared feature bounds: the estimators' ``feature_bounds`` parameter.

The ``"auto"`` defaults read public quantities only and are tuned for
features in ``[-1, 1]``. ``feature_bounds=(lower, upper)`` declares the
features' public range: each fit maps the rows by
:class:`~sklearn_dplssgd.BoundedScaler`'s map (clipping what lies outside),
trains, and folds the map into the released weights, so that ``coef_`` and
``intercept_`` apply to the rows as given. The map reads no row and the fold
is post-processing: neither changes the accounting.

An image's columns and a table's one-hot blocks with a zero lower bound keep
their zero (``x / upper``, onto ``[0, 1]``): mapped to -1, a mostly-zero
background would take most of every clipped gradient's norm. The choice
reads the bounds, the layout and the column names only; the why and the
measurements are in docs/user_guide/hyperparameters.rst (declared feature
bounds) and docs/preprocessing.rst.
"""

import numpy as np
import scipy.sparse as sp

from .._preprocessing import as_bounds, broadcast_bounds, scale_to_unit, unit_map, zero_kept
from .._training import ORDERED

__all__ = [
    "FeatureMap", "check_feature_bounds", "check_feature_bounds_form", "check_same_feature_map",
    "feature_map", "keeps_zero",
]


def check_feature_bounds_form(value):
    """The ``feature_bounds`` constraint: a message, or None for None or a pair."""
    if isinstance(value, (str, bytes, dict)) or sp.issparse(value):
        return "must be None or a pair (lower, upper); got a " + type(value).__name__ + "."
    try:
        size = len(value)
    except TypeError:
        return "must be None or a pair (lower, upper); got a " + type(value).__name__ + "."
    if size != 2:
        return f"must be None or a pair (lower, upper); got {size} items."
    return None


def _declared(estimator, n_features):
    """Checked ``(lower, upper)``, one value per feature (``n_features`` None: width-free)."""
    owner = f"The 'feature_bounds' parameter of {type(estimator).__name__}"
    subjects = (f"{owner} (its lower bounds)", f"{owner} (its upper bounds)")
    lower, upper = estimator.feature_bounds
    lower, upper = as_bounds(lower, subjects[0]), as_bounds(upper, subjects[1])
    return broadcast_bounds(lower, upper, n_features, owner, subjects)


def check_feature_bounds(estimator):
    """Check ``feature_bounds`` against the other parameters, before any row is read.

    Bounds not symmetric around zero shift the features, which only an
    intercept can express.
    """
    if estimator.feature_bounds is None:
        return
    lower, upper = _declared(estimator, None)
    if not estimator.fit_intercept and not np.all(lower == -upper):
        raise ValueError(
            "feature_bounds that are not symmetric around zero (lower != -upper) shift "
            "the features, and the shift becomes part of the intercept: use "
            "fit_intercept=True, or bounds with lower == -upper (a scale only).")


def feature_map(estimator, X=None, n_features=None, *, namespace=None):
    """The :class:`FeatureMap` of ``estimator.feature_bounds``, or None when undeclared.

    ``X`` (only its format and shape are read) is refused when sparse or of
    an array API ``namespace``; ``n_features`` is its public width when known.
    """
    if estimator.feature_bounds is None:
        return None
    if sp.issparse(X):
        raise TypeError(
            "feature_bounds needs dense X: mapping the features to [-1, 1] sends a zero "
            "to a nonzero value, so sparse rows would become dense. Scale sparse X by "
            "public bounds yourself (for example MaxAbsScaler-like division by a declared "
            "maximum), or convert it with X.toarray() if it fits in memory.")
    if namespace is not None:
        raise TypeError(
            "feature_bounds needs NumPy input (or input that converts to NumPy); with "
            "array API inputs (PyTorch, CuPy, ...) map the features with BoundedScaler's "
            "bounds before the fit, or pass NumPy arrays.")
    if n_features is None:
        shape = getattr(X, "shape", None)
        n_features = int(shape[1]) if shape is not None and len(shape) == 2 else None
    if n_features is None:
        return None
    lower, upper = _declared(estimator, n_features)
    return FeatureMap(lower, upper, zero_kept=keeps_zero(estimator, n_features))


def keeps_zero(estimator, n_features):
    """Which columns keep a zero lower bound at zero: an image's, and one-hot blocks'.

    From the bounds, the width, ``feature_names_in_`` and ``sigma="ordered"`` only.
    """
    lower, upper = _declared(estimator, n_features)
    names = estimator.__dict__.get("feature_names_in_")
    if names is not None and len(names) != n_features:
        names = None
    return zero_kept(lower, upper, "auto", n_features, names,
                     declared_ordered=estimator.sigma == ORDERED)


class FeatureMap:
    """The map of declared bounds to ``[-1, 1]`` and its fold into linear weights.

    ``zero_kept`` (bool per feature, or None for none) marks the columns
    mapped to ``[0, 1]`` (``x / upper``) instead: see :func:`keeps_zero`.
    """

    def __init__(self, lower, upper, zero_kept=None):
        self.lower = lower
        self.upper = upper
        self.zero_kept = (np.zeros(lower.shape, dtype=bool) if zero_kept is None
                          else np.asarray(zero_kept, dtype=bool))
        self.center, self.half_width, self._floor = unit_map(lower, upper, self.zero_kept)

    def rows(self, X):
        """``X`` (validated, dense) mapped to ``[-1, 1]`` (kept zeros: ``[0, 1]``), clipped."""
        return scale_to_unit(X, self.center, self.half_width, clip=True, floor=self._floor)

    def to_original(self, params):
        """Weights on mapped rows as weights on the rows as given.

        ``w . (x - c) / h + b = (w / h) . x + (b - (w / h) . c)`` for ``x``
        inside the bounds; ``params`` is ``[coef, intercept]`` per output.
        """
        coef = params[:, :-1].astype(np.float64) / self.half_width
        intercept = params[:, -1].astype(np.float64) - coef @ self.center
        return np.column_stack([coef, intercept]).astype(params.dtype, copy=False)

    def to_mapped(self, params):
        """The inverse of :meth:`to_original` (a warm start or ``coef_init``)."""
        coef = params[:, :-1].astype(np.float64)
        intercept = params[:, -1].astype(np.float64) + coef @ self.center
        return np.column_stack([coef * self.half_width, intercept]).astype(
            params.dtype, copy=False)

    def same_as(self, other):
        """Whether ``other`` (a FeatureMap or None) maps the same bounds the same way."""
        return other is not None and np.array_equal(self.lower, other.lower) and (
            np.array_equal(self.upper, other.upper)) and (
            np.array_equal(self.zero_kept, other.zero_kept))


def check_same_feature_map(fitted, declared):
    """Refuse a continued series whose ``declared`` map differs from the ``fitted`` one."""
    if (fitted is None) != (declared is None) or (
            fitted is not None and not fitted.same_as(declared)):
        raise ValueError(
            "feature_bounds differs from the bounds the fitted model was trained with (or "
            "sigma='ordered' changed which zero lower bounds stay zero): a warm start or "
            "partial_fit continues the same model on rows mapped the same way. Restore "
            "feature_bounds and sigma, or fit from scratch (warm_start=False).")
