"""What an implementation check returns, and the helpers every check uses."""

import dataclasses
import math
import warnings

import numpy as np
from sklearn.base import clone, is_classifier

from .._utils import PrivacyLeakWarning

__all__ = [
    "adversarial_rows",
    "CheckResult",
    "declare_public_n",
    "declared_labels",
    "default_data",
    "ImplementationAudit",
    "private_clone",
    "quietly",
    "set_existing",
]

# Relative slack over the clip norm allowed for floating-point rounding of the
# clipped coefficient and the sum (float32 rounds at about 6e-8).
CLIP_TOLERANCE = 1e-5
# Features of the adversarial rows of check_clipping (an MNIST-sized row).
_CLIP_FEATURES = 784


@dataclasses.dataclass(frozen=True)
class CheckResult:
    """Outcome of one implementation check.

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


@dataclasses.dataclass(frozen=True)
class ImplementationAudit:
    """The results of :func:`audit_implementation`.

    Attributes
    ----------
    estimator_name : str
    checks : tuple of CheckResult
    """

    estimator_name: str
    checks: tuple

    @property
    def passed(self):
        """Whether every check passed."""
        return all(check.passed for check in self.checks)

    def __str__(self):
        lines = [f"Implementation audit of {self.estimator_name}: "
                 f"{'passed' if self.passed else 'FAILED'}"]
        lines += [f"  {check}" for check in self.checks]
        return "\n".join(lines)


def quietly(function, *args):
    """Call ``function`` with the library's usage warnings silenced."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", PrivacyLeakWarning)
        warnings.simplefilter("ignore", UserWarning)
        return function(*args)


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

    The audits target the training steps: without declared bounds a
    regressor would first learn its targets' range from a noisy histogram,
    which their few rows cannot outweigh. The steps see targets in
    ``[-1, 1]`` either way; bounds the user declared are kept.
    """
    if model.get_params().get("target_bounds", ()) is None:
        model.set_params(target_bounds=(-1.0, 1.0))
    return model


def declare_public_n(model, n_rows):
    params = model.get_params()
    if params.get("neighboring") == "add_remove" and params.get("public_n_samples", 0) is None:
        model.set_params(public_n_samples=n_rows)
    return model


def default_data(estimator, n_rows=200, n_features=5, dtype=np.float64, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.uniform(-1.0, 1.0, size=(n_rows, n_features)).astype(dtype)
    if is_classifier(estimator):
        labels = declared_labels(estimator)
        y = labels[rng.integers(0, len(labels), size=n_rows)]
    else:
        y = X @ rng.normal(size=n_features)
    return X, y


def adversarial_rows(estimator, dtype):
    """Single rows (x, y) at the edges of floating point, for this loss."""
    d = _CLIP_FEATURES
    finite_max = float(np.finfo(dtype).max)
    tiny = np.full(d, 2.5e-23, dtype)
    tiny[0] = 2.7e-23
    huge = np.full(d, 1e30 if dtype == np.float32 else 1e140, dtype)
    # float32 entries near the top of the range: margins overflow float32.
    overflow = np.full(d, 3e38 if dtype == np.float32 else 1e148, dtype)
    ordinary = np.linspace(-1.0, 1.0, d).astype(dtype)
    rows = [tiny, huge, overflow, ordinary, -overflow]
    if is_classifier(estimator):
        labels = declared_labels(estimator)
        return [(row, label) for row in rows for label in (labels[0], labels[-1])]
    targets = (1e30, -1e30, 0.5 * finite_max if dtype == np.float64 else 1e38)
    return [(row, target) for row in rows for target in targets]
