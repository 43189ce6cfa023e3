"""Predictions of a model fitted on array API arrays: in its namespace, on its device.

The estimators' ``predict``, ``decision_function`` and ``predict_proba``
call these when ``coef_`` is an array API array (see :mod:`._array_api` for
training on such arrays).
"""

import array_api_compat
import numpy as np
from sklearn import get_config

from ._array_api import check_same_namespace, device_of, to_device, to_numpy, wide_dtype

__all__ = [
    "check_fitted_namespace",
    "class_labels",
    "class_probabilities",
    "copy_params",
    "decision_values",
]


def check_fitted_namespace(estimator, X, method):
    """Refuse inputs of another namespace or device than the fitted weights.

    Parameters
    ----------
    estimator : fitted estimator with ``coef_``
    X : array-like
        The input of ``method``.
    method : str
        Name of the calling method (for the message).
    """
    fitted_on_device = not isinstance(estimator.coef_, np.ndarray)
    if fitted_on_device and not get_config()["array_api_dispatch"]:
        raise ValueError(
            f"This {type(estimator).__name__} was fitted on array API arrays (its coef_ "
            f"is a {type(estimator.coef_).__module__} array): call {method} under "
            "sklearn.config_context(array_api_dispatch=True) with arrays of the same "
            "namespace and device."
        )
    if get_config()["array_api_dispatch"]:
        check_same_namespace(X, estimator, attribute="coef_", method=method)


def decision_values(xp, X, coef, intercept):
    """Margins ``X coef^T + intercept`` of shape (n, K) in the namespace and dtype of X.

    As ``BaseDPLSSGD._decision_values``: float32 margins that overflow are
    recomputed in float64 (where the device has it) and saturated at the
    dtype's range.

    Parameters
    ----------
    xp : namespace
    X : array of shape (n, d)
    coef : array of shape (K, d) or (d,)
    intercept : array of shape (K,)

    Returns
    -------
    margins : array of shape (n, K)
    """
    coef = coef if coef.ndim == 2 else coef[None, :]
    margins = xp.matmul(X, xp.astype(coef, X.dtype).T) + xp.astype(intercept, X.dtype)
    overflowed = ~xp.isfinite(margins)
    wide = wide_dtype(xp, device_of(X))
    if X.dtype != wide and bool(xp.any(overflowed)):
        exact = xp.matmul(xp.astype(X, wide), xp.astype(coef, wide).T) + xp.astype(
            intercept, wide)
        limit = float(xp.finfo(X.dtype).max)
        margins = xp.where(overflowed, xp.astype(xp.clip(exact, min=-limit, max=limit),
                                                 X.dtype), margins)
    return margins


def class_labels(xp, margins, classes):
    """Predicted labels from margins: in ``xp`` for numeric labels, NumPy for others.

    Parameters
    ----------
    xp : namespace
    margins : array of shape (n, K)
    classes : ndarray of shape (n_classes,)
        ``classes_`` (kept on the host: labels may be strings).

    Returns
    -------
    labels : array of shape (n,)
    """
    if margins.shape[1] == 1:
        indices = xp.astype(margins[:, 0] > 0, xp.int64)
    else:
        indices = xp.argmax(margins, axis=1)
    if classes.dtype.kind in "biuf":
        return xp.take(to_device(classes, xp, device_of(margins)), indices, axis=0)
    return classes[to_numpy(indices)]


def class_probabilities(xp, margins, log=False):
    """Class probabilities (or their logarithms) of a logistic model, in ``xp``.

    Parameters
    ----------
    xp : namespace
    margins : array of shape (n, K)
    log : bool, default=False

    Returns
    -------
    proba : array of shape (n, max(K, 2))
    """
    if margins.shape[1] == 1:
        z = margins[:, 0]
        zero = xp.zeros_like(z)
        if log:
            # log expit(z) = -log(1 + exp(-z)), without overflow.
            return xp.stack([-xp.logaddexp(zero, z), -xp.logaddexp(zero, -z)], axis=1)
        e = xp.exp(-xp.abs(z))
        positive = xp.where(z >= 0, 1.0 / (1.0 + e), e / (1.0 + e))
        return xp.stack([1.0 - positive, positive], axis=1)
    shifted = margins - xp.max(margins, axis=1, keepdims=True)
    if log:
        return shifted - xp.log(xp.sum(xp.exp(shifted), axis=1, keepdims=True))
    exponentials = xp.exp(shifted)
    return exponentials / xp.sum(exponentials, axis=1, keepdims=True)


def copy_params(params, rows, columns):
    """A copy of ``params[rows, columns]`` in its own namespace (NumPy or not)."""
    return array_api_compat.array_namespace(params).asarray(params[rows, columns], copy=True)
