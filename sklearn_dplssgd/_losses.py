"""The losses: one registry entry each, and a plain NumPy reference (the test oracle).

Everything the library knows about a loss is in its :class:`Loss` entry of
:data:`LOSSES`: its task, its kernel codes (one output, several outputs), how
two classes are encoded, its parameter (the threshold of Huber and
epsilon-insensitive, read from the estimator's ``loss_threshold``), and, for
the smooth losses, the gradient bound and smoothness constants output
perturbation needs. The compiled kernels in :mod:`sklearn_dplssgd._kernels`
see a loss only as its integer code and its parameter; this module also holds,
for every code, the derivative ``r = d loss / d z`` with respect to the
margins ``z`` written in plain vectorised NumPy. The tests compare the Numba
kernels with :func:`clipped_gradient_sum_reference` built from these
functions. Adding a loss: its entry here, its branch in
``_kernels._residual`` and in the two reference functions below, and their
tests.

Target encodings (prepared in Python before training):

- binary ``log_loss``: ``y`` in {0, 1};
- binary ``hinge``: ``y`` in {-1, +1};
- multiclass losses: ``y`` is the class index 0 .. K-1 (stored as float);
- regression losses: ``y`` is the target value.
"""

import dataclasses
import math
import typing

import numpy as np
import scipy.sparse as sp
from scipy.special import expit, softmax

__all__ = [
    "LOSSES",
    "Loss",
    "NON_SMOOTH_LOSSES",
    "SMOOTH_LOSSES",
    "LOG_LOSS_BINARY",
    "LOG_LOSS_MULTINOMIAL",
    "HINGE_BINARY",
    "HINGE_CRAMMER_SINGER",
    "SQUARED_ERROR",
    "HUBER",
    "EPSILON_INSENSITIVE",
    "CLASSIFICATION_LOSSES",
    "REGRESSION_LOSSES",
    "loss_code",
    "loss_derivative_reference",
    "residual_norms_at_zero",
    "loss_value_reference",
    "clipped_gradient_sum_reference",
]

LOG_LOSS_BINARY = 0
LOG_LOSS_MULTINOMIAL = 1
HINGE_BINARY = 2
HINGE_CRAMMER_SINGER = 3
SQUARED_ERROR = 4
HUBER = 5
EPSILON_INSENSITIVE = 6


def _log_loss_constants(x_norm, n_outputs, threshold, weight_norm_bound, target_bound):
    # |sigmoid(z) - y| <= 1 and sigmoid' <= 1/4; ||softmax(z) - onehot(y)||^2
    # <= 2 (1 - p_y)^2 <= 2 and the softmax Hessian diag(p) - p p^T has
    # eigenvalues at most 1/2.
    if n_outputs == 1:
        return x_norm, x_norm**2 / 4.0
    return math.sqrt(2.0) * x_norm, x_norm**2 / 2.0


def _huber_constants(x_norm, n_outputs, threshold, weight_norm_bound, target_bound):
    # The derivative is clipped to [-h, h]; the curvature is at most 1.
    return threshold * x_norm, x_norm**2


def _squared_error_constants(x_norm, n_outputs, threshold, weight_norm_bound, target_bound):
    # The residual w . x - y is at most W X + Y while ||(W, b)|| <= W and |y| <= Y.
    return (weight_norm_bound * x_norm + target_bound) * x_norm, x_norm**2


@dataclasses.dataclass(frozen=True)
class Loss:
    """One loss, as every part of the library sees it.

    Attributes
    ----------
    name : str
        The estimators' ``loss`` value.
    task : {"classification", "regression"}
    code : int
        Kernel code with one output (binary classification, regression).
    multiclass_code : int or None
        Kernel code with K > 1 outputs (multinomial, Crammer-Singer).
    binary_targets : tuple of two floats or None
        How a classifier encodes its two classes for this loss.
    uses_threshold : bool
        Whether the loss has the parameter ``loss_threshold`` (its kink).
    constants : callable or None
        For a smooth loss, ``(x_norm, n_outputs, threshold, weight_norm_bound,
        target_bound) -> (R, L_loss)``: a bound on one row's loss gradient and
        on the curvature of its loss, for rows of norm at most ``x_norm``
        (output perturbation adds ``alpha`` to L). None for a loss that is not
        smooth (its derivative jumps).
    """

    name: str
    task: str
    code: int
    multiclass_code: typing.Optional[int] = None
    binary_targets: typing.Optional[tuple] = None
    uses_threshold: bool = False
    constants: typing.Optional[typing.Callable] = None

    @property
    def smooth(self):
        """Whether the loss has a Lipschitz derivative (output perturbation needs it)."""
        return self.constants is not None

    def kernel_code(self, n_outputs=1):
        """The kernels' code for a model with ``n_outputs`` outputs."""
        if n_outputs > 1 and self.multiclass_code is not None:
            return self.multiclass_code
        return self.code

    def threshold(self, estimator):
        """The loss's parameter as the kernels take it (0 for a loss without one)."""
        return float(estimator.loss_threshold) if self.uses_threshold else 0.0


LOSSES = {
    loss.name: loss
    for loss in (
        Loss("log_loss", "classification", LOG_LOSS_BINARY, LOG_LOSS_MULTINOMIAL,
             binary_targets=(0.0, 1.0), constants=_log_loss_constants),
        Loss("hinge", "classification", HINGE_BINARY, HINGE_CRAMMER_SINGER,
             binary_targets=(-1.0, 1.0)),
        Loss("squared_error", "regression", SQUARED_ERROR,
             constants=_squared_error_constants),
        Loss("huber", "regression", HUBER, uses_threshold=True, constants=_huber_constants),
        Loss("epsilon_insensitive", "regression", EPSILON_INSENSITIVE, uses_threshold=True),
    )
}
CLASSIFICATION_LOSSES = tuple(name for name, loss in LOSSES.items()
                              if loss.task == "classification")
REGRESSION_LOSSES = tuple(name for name, loss in LOSSES.items() if loss.task == "regression")
SMOOTH_LOSSES = tuple(name for name, loss in LOSSES.items() if loss.smooth)
NON_SMOOTH_LOSSES = tuple(name for name, loss in LOSSES.items() if not loss.smooth)


def loss_code(loss, n_outputs=1):
    """Integer code of a loss for the compiled kernels.

    Parameters
    ----------
    loss : str
        A key of :data:`LOSSES`.
    n_outputs : int, default=1
        Number of model outputs ``K``; a classification loss with ``K > 1``
        is the multinomial (log_loss) or Crammer-Singer (hinge) loss.

    Returns
    -------
    code : int
    """
    if loss not in LOSSES:
        raise ValueError(f"Unknown loss {loss!r}; expected one of {sorted(LOSSES)}.")
    return LOSSES[loss].kernel_code(n_outputs)


def residual_norms_at_zero(code, y, n_outputs, threshold=0.0):
    """``||d loss(0, y_i) / d z||`` for every row: the residuals' norms at zero weights.

    Parameters
    ----------
    code : int
        Loss code from :func:`loss_code`.
    y : ndarray of shape (n_rows,)
        Encoded targets.
    n_outputs : int
        K.
    threshold : float, default=0.0

    Returns
    -------
    norms : ndarray of shape (n_rows,)
        Equal to the row norms of :func:`loss_derivative_reference` at zero
        margins.
    """
    if n_outputs > 1:
        # With several outputs the encoded target is the class index, and the
        # residual at zero margins depends on it alone: K residuals instead
        # of an (n, K) softmax.
        labels = np.arange(n_outputs, dtype=np.float64)
        per_label = np.linalg.norm(loss_derivative_reference(
            code, np.zeros((n_outputs, n_outputs)), labels, threshold), axis=1)
        return per_label[np.asarray(y).astype(np.intp)]
    return np.abs(loss_derivative_reference(
        code, np.zeros((len(y), 1)), y, threshold)[:, 0])


def loss_derivative_reference(code, margins, y, threshold=0.0):
    """Derivative of the loss with respect to the margins, row by row.

    Parameters
    ----------
    code : int
        Loss code from :func:`loss_code`.
    margins : ndarray of shape (n_rows, K)
        ``z = X W^T + b``.
    y : ndarray of shape (n_rows,)
        Encoded targets (see the module docstring).
    threshold : float, default=0.0
        Huber threshold or epsilon-insensitive margin; unused otherwise.

    Returns
    -------
    residuals : ndarray of shape (n_rows, K)
        ``r_i = d loss(z_i, y_i) / d z_i``.
    """
    margins = np.asarray(margins, dtype=np.float64)
    y = np.asarray(y, dtype=np.float64)
    n_rows, n_outputs = margins.shape
    z = margins[:, 0]
    if code == LOG_LOSS_BINARY:
        return (expit(z) - y)[:, None]
    if code == HINGE_BINARY:
        return np.where(y * z < 1.0, -y, 0.0)[:, None]
    if code == SQUARED_ERROR:
        return (z - y)[:, None]
    if code == HUBER:
        return np.clip(z - y, -threshold, threshold)[:, None]
    if code == EPSILON_INSENSITIVE:
        diff = z - y
        return np.where(np.abs(diff) > threshold, np.sign(diff), 0.0)[:, None]
    labels = y.astype(np.intp)
    rows = np.arange(n_rows)
    if code == LOG_LOSS_MULTINOMIAL:
        residuals = softmax(margins, axis=1)
        residuals[rows, labels] -= 1.0
        return residuals
    if code == HINGE_CRAMMER_SINGER:
        others = margins.copy()
        others[rows, labels] = -np.inf
        rival = np.argmax(others, axis=1)
        violated = margins[rows, labels] - margins[rows, rival] < 1.0
        residuals = np.zeros_like(margins)
        residuals[rows[violated], labels[violated]] = -1.0
        residuals[rows[violated], rival[violated]] = 1.0
        return residuals
    raise ValueError(f"Unknown loss code {code!r}.")


def loss_value_reference(code, margins, y, threshold=0.0):
    """Loss of each row (used to monitor training in benchmarks and tests).

    Parameters
    ----------
    code : int
        Loss code from :func:`loss_code`.
    margins : ndarray of shape (n_rows, K)
        Model outputs.
    y : ndarray of shape (n_rows,)
        Encoded targets.
    threshold : float, default=0.0
        Huber threshold or epsilon-insensitive margin.

    Returns
    -------
    losses : ndarray of shape (n_rows,)
    """
    margins = np.asarray(margins, dtype=np.float64)
    y = np.asarray(y, dtype=np.float64)
    n_rows = margins.shape[0]
    z = margins[:, 0]
    if code == LOG_LOSS_BINARY:
        return np.logaddexp(0.0, z) - y * z
    if code == HINGE_BINARY:
        return np.maximum(0.0, 1.0 - y * z)
    if code == SQUARED_ERROR:
        return 0.5 * (z - y) ** 2
    if code == HUBER:
        diff = np.abs(z - y)
        return np.where(
            diff <= threshold, 0.5 * diff**2, threshold * (diff - 0.5 * threshold)
        )
    if code == EPSILON_INSENSITIVE:
        return np.maximum(0.0, np.abs(z - y) - threshold)
    labels = y.astype(np.intp)
    rows = np.arange(n_rows)
    if code == LOG_LOSS_MULTINOMIAL:
        top = margins.max(axis=1)
        log_norm = top + np.log(np.exp(margins - top[:, None]).sum(axis=1))
        return log_norm - margins[rows, labels]
    if code == HINGE_CRAMMER_SINGER:
        others = margins.copy()
        others[rows, labels] = -np.inf
        return np.maximum(0.0, 1.0 - margins[rows, labels] + others.max(axis=1))
    raise ValueError(f"Unknown loss code {code!r}.")


def clipped_gradient_sum_reference(
    X, y, rows, coef, intercept, code, threshold, clip_norm, fit_intercept, weights=None
):
    """Sum over ``rows`` of per-sample gradients, each clipped to ``clip_norm``.

    With ``weights``, each clipped gradient is multiplied by its row's weight
    (``w_i clip_C(g_i)``) before the sum.

    Builds every per-sample gradient explicitly (memory O(b d K)): slow but
    obviously right, which is what an oracle is for.

    Parameters
    ----------
    X : ndarray or scipy sparse matrix of shape (n_samples, d)
        A sparse X stands for the dense matrix it represents (entries stored
        twice are summed, as ``toarray()`` does): the oracle densifies the
        batch's rows, so that it says what the sparse kernels must compute.
    y : ndarray of shape (n_samples,)
        Encoded targets.
    rows : ndarray of int
        Indices of the batch (may be empty).
    coef : ndarray of shape (K, d)
    intercept : ndarray of shape (K,)
    code : int
        Loss code.
    threshold : float
        Huber threshold or epsilon-insensitive margin.
    clip_norm : float
        Per-sample L2 bound C on the whole parameter gradient.
    fit_intercept : bool
        Whether the intercept is a parameter (its gradient is clipped together
        with the coefficients').
    weights : ndarray of shape (n_samples,) or None, default=None
        Per-sample weights (of all rows, indexed by ``rows``); None is 1.

    Returns
    -------
    grad_coef : ndarray of shape (K, d)
    grad_intercept : ndarray of shape (K,)
        Zero when ``fit_intercept`` is False.
    """
    if sp.issparse(X):
        X_batch = sp.csr_array(X)[np.asarray(rows, dtype=np.intp)].toarray().astype(np.float64)
    else:
        X_batch = np.asarray(X, dtype=np.float64)[rows]
    margins = X_batch @ np.asarray(coef, dtype=np.float64).T
    if fit_intercept:
        margins = margins + intercept
    residuals = loss_derivative_reference(code, margins, np.asarray(y)[rows], threshold)
    # Explicit per-sample gradients of all parameters together: (b, K, d + 1).
    features = np.hstack([X_batch, np.ones((len(rows), 1))]) if fit_intercept else X_batch
    per_sample = residuals[:, :, None] * features[:, None, :]
    # Norms computed on rescaled gradients so that huge entries do not
    # overflow when squared.
    largest = np.abs(per_sample).max(axis=(1, 2), initial=0.0)
    safe = np.where(largest > 0, largest, 1.0)
    norms = safe * np.sqrt(((per_sample / safe[:, None, None]) ** 2).sum(axis=(1, 2)))
    with np.errstate(divide="ignore", invalid="ignore"):
        scale = np.where(norms > clip_norm, clip_norm / norms, 1.0)
    clipped = per_sample * scale[:, None, None]
    if weights is not None:
        clipped = clipped * np.asarray(weights, dtype=np.float64)[rows][:, None, None]
    total = clipped.sum(axis=0)
    d = X_batch.shape[1]
    grad_intercept = total[:, d] if fit_intercept else np.zeros(coef.shape[0])
    return total[:, :d], grad_intercept
