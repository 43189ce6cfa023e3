"""The audit's fits: which estimators it takes, and its seeded fits."""

import warnings

import numpy as np
from sklearn.base import clone

from ..linear_model import BaseDPLSSGD
from ..utils import PrivacyLeakWarning

__all__ = ["append_label", "check_estimator", "seeded_fit"]


def check_estimator(estimator):
    """Refuse anything but the library's estimators."""
    if not isinstance(estimator, BaseDPLSSGD):
        raise TypeError(
            "audit_epsilon audits DPLSSGDClassifier and DPLSSGDRegressor instances; "
            f"got {type(estimator).__name__}."
        )


def append_label(y, label):
    """``y`` with one more entry (numpy promotes the dtype if the label needs it)."""
    return np.concatenate([np.asarray(y), np.asarray([label])])


def seeded_fit(estimator, seed, X, y):
    """Fit a clone whose batches and noise come from ``seed`` (reproducible).

    The audit throws its models away, so the seed leaks nothing; seeding
    makes an audit repeatable. The warnings of a reproducible fit (it is not
    private) are meant for users publishing models and are silenced here.
    """
    model = clone(estimator).set_params(random_state=int(seed), reproducible=True)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", PrivacyLeakWarning)
        return model.fit(X, y)
