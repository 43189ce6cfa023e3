"""Helpers of the library's implementation checks: the battery's result, quiet
fits, default rows and rows at the edges of floating point.

The result of one check, and the clones of a configuration that the checks
fit, are the public audit's (:mod:`sklearn_dplssgd.audit`); they are
re-exported here for the checks.
"""

import dataclasses
import warnings

import numpy as np
from sklearn.base import is_classifier

from sklearn_dplssgd._utils import PrivacyLeakWarning
from sklearn_dplssgd.audit import CheckResult
from sklearn_dplssgd.audit._check_result import (
    declare_public_n, declared_labels, private_clone, set_existing,
)

__all__ = [
    "CLIP_TOLERANCE",
    "CheckResult",
    "ImplementationAudit",
    "adversarial_rows",
    "declare_public_n",
    "declared_labels",
    "default_data",
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
