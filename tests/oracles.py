"""Plain NumPy oracles of the losses and of the clipped gradient sum (tests only).

Written once, vectorised and obviously right: the compiled kernels
(``_kernels``, ``_sparse``), the array API path and the losses' own
residuals (``_losses``) are compared with them. They were
``_losses.loss_derivative_reference`` and friends; the library itself no
longer calls them.
"""

import numpy as np
import scipy.sparse as sp
from scipy.special import expit, softmax

from sklearn_dplssgd._training._losses import LOSSES

# The kernel codes of each loss's forms, which the oracles below dispatch on.
LOG_LOSS_BINARY, LOG_LOSS_MULTINOMIAL = LOSSES["log_loss"].code, LOSSES["log_loss"].multiclass_code
HINGE_BINARY, HINGE_CRAMMER_SINGER = LOSSES["hinge"].code, LOSSES["hinge"].multiclass_code
SQUARED_HINGE_BINARY = LOSSES["squared_hinge"].code
SQUARED_HINGE_ONE_VS_REST = LOSSES["squared_hinge"].multiclass_code
SQUARED_ERROR = LOSSES["squared_error"].code
HUBER = LOSSES["huber"].code
EPSILON_INSENSITIVE = LOSSES["epsilon_insensitive"].code

__all__ = ["clipped_gradient_sum_reference", "loss_derivative_reference",
           "loss_value_reference", "factored_sum_reference",
           "squared_hinge_derivative_reference", "squared_hinge_value_reference"]


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
    if code in (SQUARED_HINGE_BINARY, SQUARED_HINGE_ONE_VS_REST):
        return squared_hinge_derivative_reference(margins, y, n_outputs)
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
    if code in (SQUARED_HINGE_BINARY, SQUARED_HINGE_ONE_VS_REST):
        return squared_hinge_value_reference(margins, y, margins.shape[1])
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


def _squared_hinge_targets(y, n_outputs):
    """+-1 per output: y itself with one output, one-vs-rest signs of the class index else."""
    if n_outputs == 1:
        return np.asarray(y, dtype=np.float64)[:, None]
    return np.where(np.arange(n_outputs)[None, :] == np.asarray(y)[:, None], 1.0, -1.0)


def squared_hinge_derivative_reference(margins, y, n_outputs):
    """``d/dz`` of ``max(0, 1 - t z) ** 2``: binary ``y`` in {-1, +1}, else one-vs-rest indices."""
    margins = np.asarray(margins, dtype=np.float64)
    targets = _squared_hinge_targets(y, n_outputs)
    return -2.0 * targets * np.maximum(0.0, 1.0 - targets * margins)


def squared_hinge_value_reference(margins, y, n_outputs):
    """The squared hinge loss of each row, summed over the outputs."""
    margins = np.asarray(margins, dtype=np.float64)
    targets = _squared_hinge_targets(y, n_outputs)
    return (np.maximum(0.0, 1.0 - targets * margins) ** 2).sum(axis=1)


def factored_sum_reference(rows, clipped_residuals, clip_norm, residual_bits, row_bits,
                           intercept_term=1.0, row_norms=None, scaled_residuals=None):
    """The exact mode's factored integer sum, row by row with Python integers (the oracle).

    Row ``i`` (``x' = [x_i, intercept_term]``, ``norm = ||x'||`` or
    ``row_norms[i]``) has the factors ``a = rint(r_i (norm 2**k1 / C))`` and
    ``b = rint(x' (2**k2 / norm))`` (``b = 0`` for a zero norm); it adds the
    outer product ``a (x) b`` if both are finite and
    ``||a||**2 <= grid_norm_bound(k1, K)``, ``||b||**2 <= grid_norm_bound(k2, D2)``
    in Python integers; ``scaled_residuals`` given, ``a = rint(scaled_residuals[i])``
    (the residual factors as a kernel scaled them). Returns ``(total, n_left_out)``.
    """
    from sklearn_dplssgd._backends import grid_norm_bound
    n_rows, n_features = rows.shape
    n_outputs = clipped_residuals.shape[1]
    residual_bound = grid_norm_bound(residual_bits, n_outputs)
    row_bound = grid_norm_bound(row_bits, n_features + (1 if intercept_term != 0 else 0))
    design = np.hstack([rows.astype(np.float64), np.full((n_rows, 1), float(intercept_term))])
    total = [[0] * (n_features + 1) for _ in range(n_outputs)]
    left_out = 0
    with np.errstate(invalid="ignore", over="ignore", divide="ignore"):
        norms = (np.linalg.norm(design, axis=1) if row_norms is None
                 else np.asarray(row_norms, dtype=np.float64))
        for i in range(n_rows):
            row_scale = 0.0 if norms[i] == 0 else 2.0 ** row_bits / norms[i]
            b = np.rint(design[i] * row_scale)
            a = (np.rint(np.asarray(clipped_residuals[i], dtype=np.float64)
                         * (norms[i] * (2.0 ** residual_bits / clip_norm)))
                 if scaled_residuals is None else np.rint(scaled_residuals[i]))
            if not (np.isfinite(a).all() and np.isfinite(b).all()):
                left_out += 1
                continue
            a_int = [int(v) for v in a]
            b_int = [int(v) for v in b]
            if (sum(v * v for v in a_int) > residual_bound
                    or sum(v * v for v in b_int) > row_bound):
                left_out += 1
                continue
            for k, a_k in enumerate(a_int):
                if a_k:
                    row = total[k]
                    for j, b_j in enumerate(b_int):
                        row[j] += a_k * b_j
    return np.array(total, dtype=np.int64).reshape(n_outputs, n_features + 1), left_out
