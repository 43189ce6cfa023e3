"""The audit's fits: which estimators it takes, and its seeded fits."""

import warnings

import numpy as np
from sklearn.base import clone

from .._linear_model import BaseDPLSSGD
from .._utils import PrivacyLeakWarning

__all__ = ["append_label", "check_estimator", "seeded_fit", "steps_on_targets_as_given"]


def check_estimator(estimator):
    """Refuse anything but the library's estimators."""
    if not isinstance(estimator, BaseDPLSSGD):
        raise TypeError(
            "audit_epsilon audits DPLSSGDClassifier and DPLSSGDRegressor instances; "
            f"got {type(estimator).__name__}."
        )


class _TargetsAsGiven:
    """Overrides that make a regressor's steps train on its targets as given."""

    def _prepare_targets(self, X, continued):
        self._learns_target_range = False


def steps_on_targets_as_given(estimator):
    """``estimator``, or for a regressor that would learn its targets' range,
    an instance of its class whose steps train on the targets as given.

    The steps' guarantee holds whatever the targets, so a canary target far
    beyond any prediction audits them at their worst and at the whole
    epsilon; the range release is not audited here.
    """
    if estimator.get_params().get("target_bounds", ()) is not None:
        return estimator
    cls = type(estimator)
    steps_only = type(cls.__name__, (_TargetsAsGiven, cls), {"__module__": cls.__module__})
    return steps_only(**estimator.get_params())


def append_label(y, label):
    """``y`` with one more entry (numpy promotes the dtype if the label needs it)."""
    return np.concatenate([np.asarray(y), np.asarray([label])])


def seeded_fit(estimator, seed, X, y):
    """Fit a clone whose batches and noise come from ``seed``, its warnings silenced.

    The audit throws its models away: the seed leaks nothing.
    """
    model = clone(estimator).set_params(random_state=int(seed), reproducible=True)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", PrivacyLeakWarning)
        return model.fit(X, y)
