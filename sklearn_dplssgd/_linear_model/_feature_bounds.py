"""Declared feature bounds: the estimators' ``feature_bounds`` parameter.

The ``"auto"`` defaults (see :mod:`~sklearn_dplssgd._training._defaults`)
read public quantities only, so they cannot tell a table whose features fill
``[0, 1]`` from one in ``[-1, 1]``; they were fitted to the latter (what
:class:`~sklearn_dplssgd.BoundedScaler` produces).
``feature_bounds=(lower, upper)`` declares the features' public range: each
fit maps the rows to ``[-1, 1]`` by exactly
:class:`~sklearn_dplssgd.BoundedScaler`'s map (clipping what lies outside), trains as
on any other rows, and folds the map into the released weights, so that
``coef_`` and ``intercept_`` apply to the rows as given. The map reads no
row's value and the fold is post-processing of the release: neither changes
the privacy accounting.

Two exceptions keep zeros at zero. The columns of an image (or of another
ordered signal: :func:`~sklearn_dplssgd._training.feature_layout`, from the
width, the column names and ``sigma="ordered"``) whose declared lower bound
is 0 are divided by their upper bound, onto ``[0, 1]``, instead. Such pixels
are mostly background: mapped to ``[-1, 1]`` the background becomes -1, so
every row carries a constant vector of norm up to ``sqrt(d)`` into the
per-sample clip. That constant says nothing about the label (the intercept
carries it), yet it takes most of each clipped gradient's norm, so the
informative part of every gradient shrinks against the same noise; and the
noise that the weights of the background pixels accumulate, harmless while
those pixels are 0, shifts every prediction once they are -1. On MNIST the
whole gap between declared and undeclared fits closes at epsilon 1000,
and no step size (a quarter to four times the default) or clip norm
recovers it at epsilon 1: the cost is the map, so the map changes. And in
a table, the columns of a one-hot block (declared ``(0, 1)`` and named
``<feature>_<category>``, as one-hot encoders and ``pandas.get_dummies``
name them, with another column of the same feature: see
:func:`~sklearn_dplssgd._preprocessing.one_hot_columns`) stay in ``[0, 1]``
for the same reason: a block of ``k`` indicators holds one 1, so mapped to
``[-1, 1]`` it holds ``k - 1`` entries of -1. On UCI Adult that map cost
0.36 to 0.58 points against keeping the indicators at 0 while the numeric
columns are mapped (centring those gains).
Every other column of a table keeps the map to ``[-1, 1]``, which centres
features that spread over their range (unnamed ``(0, 1)`` columns
included: no public fact tells indicators from fractions there). The
choice reads the bounds, the layout and the column names only, never a
row.

This module holds all of it: checking the declaration, the map of the rows,
the fold of the weights (and its inverse, for a warm start or ``coef_init``
given in the user's units) and the privacy report's mention.
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
    """``(lower, upper)`` of ``estimator.feature_bounds``, checked, one value per feature.

    ``n_features`` None checks what does not depend on the width of X.
    """
    owner = f"The 'feature_bounds' parameter of {type(estimator).__name__}"
    subjects = (f"{owner} (its lower bounds)", f"{owner} (its upper bounds)")
    lower, upper = estimator.feature_bounds
    lower, upper = as_bounds(lower, subjects[0]), as_bounds(upper, subjects[1])
    return broadcast_bounds(lower, upper, n_features, owner, subjects)


def check_feature_bounds(estimator):
    """Check ``feature_bounds`` and its compatibility with the other parameters.

    Called with the other hyperparameters' checks, before any row is read.
    Bounds not symmetric around zero shift the features, which the released
    model can express only through its intercept.
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

    Parameters
    ----------
    estimator : BaseDPLSSGD
    X : array-like, sparse matrix or None, default=None
        The input of a fit, before its values are read: refused when sparse
        or of an array API namespace. Only its format and shape are used.
    n_features : int or None, default=None
        The public width of X (its shape), when known.
    namespace : tuple or None, default=None
        The array API namespace of X (see :func:`~sklearn_dplssgd._backends.array_api_namespace`).
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

    From public information only (see :func:`~sklearn_dplssgd._preprocessing.zero_kept`):
    the declared bounds, the width, the schema's column names
    (``feature_names_in_``, when a fit has read them) and ``sigma="ordered"``.
    """
    lower, upper = _declared(estimator, n_features)
    names = estimator.__dict__.get("feature_names_in_")
    if names is not None and len(names) != n_features:
        names = None
    return zero_kept(lower, upper, "auto", n_features, names,
                     declared_ordered=estimator.sigma == ORDERED)


class FeatureMap:
    """The map of declared bounds to ``[-1, 1]`` and its fold into linear weights.

    Parameters
    ----------
    lower, upper : ndarray of shape (n_features,)
        Checked bounds (see :func:`~sklearn_dplssgd._preprocessing.broadcast_bounds`).
    zero_kept : ndarray of shape (n_features,) of bool or None, default=None
        The columns mapped to ``[0, 1]`` (``x / upper``) instead: see
        :func:`keeps_zero`. None: none.
    """

    def __init__(self, lower, upper, zero_kept=None):
        self.lower = lower
        self.upper = upper
        self.zero_kept = (np.zeros(lower.shape, dtype=bool) if zero_kept is None
                          else np.asarray(zero_kept, dtype=bool))
        self.center, self.half_width, self._floor = unit_map(lower, upper, self.zero_kept)

    def rows(self, X):
        """``X`` (validated, dense) mapped to ``[-1, 1]`` and clipped: a new array.

        Columns whose zero is kept land in ``[0, 1]`` (clipped at 0 below).
        """
        return scale_to_unit(X, self.center, self.half_width, clip=True, floor=self._floor)

    def to_original(self, params):
        """Weights on mapped rows as weights on the rows as given.

        For ``x`` inside the bounds, ``w . (x - c) / h + b`` equals
        ``(w / h) . x + (b - (w / h) . c)``: the returned ``(coef, intercept)``
        columns (``params`` is ``[coef, intercept]``, one row per output).
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
    """A warm start or ``partial_fit`` continues on rows mapped by the same bounds.

    ``fitted`` is the map of the fitted series, ``declared`` that of the
    current ``feature_bounds`` (either may be None: no bounds).
    """
    if (fitted is None) != (declared is None) or (
            fitted is not None and not fitted.same_as(declared)):
        raise ValueError(
            "feature_bounds differs from the bounds the fitted model was trained with (or "
            "sigma='ordered' changed which zero lower bounds stay zero): a warm start or "
            "partial_fit continues the same model on rows mapped the same way. Restore "
            "feature_bounds and sigma, or fit from scratch (warm_start=False).")
