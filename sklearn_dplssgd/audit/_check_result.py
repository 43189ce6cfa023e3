"""What a check returns, and the clones of the user's configuration a check fits."""

import dataclasses
import math

import numpy as np
from sklearn.base import clone, is_classifier

__all__ = ["CheckResult", "declare_public_n", "declared_labels", "private_clone", "set_existing"]


@dataclasses.dataclass(frozen=True)
class CheckResult:
    """Outcome of one check (:func:`~sklearn_dplssgd.audit.check_float_channel`).

    Attributes
    ----------
    name : str
        The check.
    passed : bool
        Whether the implementation passed it.
    measured : float
        The quantity measured (see ``detail`` for its meaning).
    limit : float
        The largest value of ``measured`` that passes.
    detail : str
        What was measured, in words.
    """

    name: str
    passed: bool
    measured: float
    limit: float
    detail: str

    def __str__(self):
        verdict = "passed" if self.passed else "FAILED"
        return (f"{self.name}: {verdict} (measured {self.measured:.6g}, "
                f"limit {self.limit:.6g}): {self.detail}")


def set_existing(estimator, **params):
    """``set_params`` for the parameters this estimator version has."""
    known = estimator.get_params()
    return estimator.set_params(**{k: v for k, v in params.items() if k in known})


def declared_labels(estimator):
    """Declared classes, or (0, 1)."""
    if not is_classifier(estimator):
        return None
    declared = estimator.get_params().get("classes")
    return np.unique(np.asarray(declared)) if declared is not None else np.array([0, 1])


def private_clone(estimator):
    """A clone with finite epsilon, declared classes or target bounds and,
    under add/remove, a public row count (the auditor's choice), ready to fit
    ``n_rows`` rows."""
    model = clone(estimator)
    set_existing(model, verbose=0)
    if not math.isfinite(model.epsilon):
        model.set_params(epsilon=1.0)
    if is_classifier(model):
        model.set_params(classes=declared_labels(estimator))
    return declare_target_range(model)


def declare_target_range(model):
    """A regressor without ``target_bounds`` declares ``(-1, 1)``, the identity map.

    The audits target the steps: a noisy range learnt from a few rows would
    swamp them. Declared bounds are kept.
    """
    if model.get_params().get("target_bounds", ()) is None:
        model.set_params(target_bounds=(-1.0, 1.0))
    return model


def declare_public_n(model, n_rows):
    params = model.get_params()
    if params.get("neighboring") == "add_remove" and params.get("public_n_samples", 0) is None:
        model.set_params(public_n_samples=n_rows)
    return model
