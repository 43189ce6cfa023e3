"""The value that is used is the value whose norm was checked (issue: rounding after the clip).

Every kernel (dense fused, dense BLAS, CSR, array API; float32 and float64;
weighted and not) must add a per-sample contribution whose *stored*
coefficients, times ``||[x, 1]||``, stay within ``w C``. The stored
coefficients are read back from the intercept column of a one-row, noise-free
sum (``coefficient * 1`` is exact). Magnitudes are drawn log-uniformly over
the whole range of each dtype, subnormals included, with clip norms placed
just above and below a row's gradient norm: the cases where a float64
decision can be undone by rounding to the parameters' dtype.
"""

import math

import numpy as np
import pytest
import scipy.sparse as sp
from array_api_compat import array_namespace

from sklearn_dplssgd._backends import _array_api
from sklearn_dplssgd._backends._kernels import compute_row_norms, noisy_clipped_gradient_sum
from sklearn_dplssgd._training._losses import loss_code
from sklearn_dplssgd._backends._sparse import (
    compute_sparse_row_norms, noisy_clipped_gradient_sum_sparse,
)

LOSSES = [("squared_error", 1), ("huber", 1), ("log_loss", 1), ("log_loss", 3),
          ("hinge", 3), ("epsilon_insensitive", 1)]


def _dense(X, y, params, clip_norm, weights, code, threshold):
    grad = np.empty_like(params)
    noisy_clipped_gradient_sum(
        X, y, np.zeros(1, np.int64), params, compute_row_norms(X), code, threshold,
        clip_norm, True, np.zeros_like(params), grad, weights=weights)
    return grad


def _sparse(X, y, params, clip_norm, weights, code, threshold):
    matrix = sp.csr_matrix(X)
    grad = np.empty_like(params)
    noisy_clipped_gradient_sum_sparse(
        matrix, y, np.zeros(1, np.int64), params, compute_sparse_row_norms(matrix), code,
        threshold, clip_norm, True, np.zeros_like(params), grad, weights=weights)
    return grad


def _array_api_numpy(X, y, params, clip_norm, weights, code, threshold):
    feature_norms = np.hypot(compute_row_norms(X), 1.0)
    # NumPy as the library's array API backend sees it (bare ``np`` is an
    # array API namespace only from NumPy 2.1: 2.0's clip has no min, max).
    return _array_api.clipped_gradient_sum(
        array_namespace(X), X, y, feature_norms, params, loss_code=code,
        loss_threshold=threshold, clip_norm=clip_norm, fit_intercept=True, wide=np.float64,
        weights=weights)


KERNELS = {"dense": _dense, "csr": _sparse, "array_api": _array_api_numpy}


def _random_case(rng, dtype, loss, n_outputs):
    info = np.finfo(dtype)
    d = int(rng.integers(1, 6))
    log_min = math.log10(float(info.smallest_subnormal))
    log_max = math.log10(float(info.max)) - 1
    x = (10.0 ** rng.uniform(log_min, log_max, size=d)) * rng.choice([-1.0, 1.0], size=d)
    X = x.astype(dtype)[np.newaxis, :]
    if loss in ("squared_error", "huber", "epsilon_insensitive"):
        target = float(10.0 ** rng.uniform(log_min - 2, 30) * rng.choice([-1.0, 1.0]))
    elif n_outputs == 1:
        target = float(rng.integers(0, 2)) if loss == "log_loss" else float(
            rng.choice([-1.0, 1.0]))
    else:
        target = float(rng.integers(0, n_outputs))
    # Weights of order 1 and large margins: residuals of every size, tiny
    # softmax probabilities included.
    params = (rng.normal(size=(n_outputs, d + 1)) * 10.0 ** rng.uniform(-45, 2)).astype(dtype)
    return X, np.array([target]), params


@pytest.mark.parametrize("kernel", sorted(KERNELS))
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("weighted", [False, True])
def test_stored_contribution_never_exceeds_the_bound(kernel, dtype, weighted):
    rng = np.random.default_rng(20261124)
    worst = 0.0
    for _ in range(300):
        loss, n_outputs = LOSSES[int(rng.integers(len(LOSSES)))]
        code = loss_code(loss, n_outputs)
        X, y, params = _random_case(rng, dtype, loss, n_outputs)
        feature_norm = math.hypot(float(compute_row_norms(X)[0]), 1.0)
        # A clip norm near the row's own scale, where the decision is close.
        clip_norm = float(10.0 ** rng.uniform(-45, 45)) * min(feature_norm, 1e290)
        if not 0.0 < clip_norm < math.inf:
            continue
        weight = float(rng.choice([1.0, 0.5, 3e-45, 1e-40, 2.0])) if weighted else 1.0
        weights = np.array([weight]) if weighted else None
        grad = KERNELS[kernel](X, y, params, clip_norm, weights, code, 0.5)
        stored = grad[:, -1].astype(np.float64)
        assert np.isfinite(stored).all()
        ratio = float(np.linalg.norm(stored)) * feature_norm / (weight * clip_norm)
        worst = max(worst, ratio)
    assert worst <= 1.0 + 1e-12, worst


@pytest.mark.parametrize("kernel", sorted(KERNELS))
@pytest.mark.parametrize("weighted", [False, True])
def test_a_residual_rounded_up_to_a_subnormal_is_dropped(kernel, weighted):
    # The attack of the review: a float32 coefficient just above half the
    # smallest subnormal rounds UP to it, so a row at the clip norm in float64
    # contributed up to 2 C. Here 1.05e-45 rounds to 1.4e-45 (1.33 C).
    X = np.zeros((1, 3), np.float32)
    X[0, 0] = 1e38
    feature_norm = math.hypot(float(compute_row_norms(X)[0]), 1.0)
    clip_norm = 1.06e-45 * feature_norm  # the residual is NOT clipped
    y = np.array([-1.05e-45])
    params = np.zeros((1, 4), np.float32)
    weights = np.array([1.0]) if weighted else None
    grad = KERNELS[kernel](X, y, params, clip_norm, weights, loss_code("squared_error", 1),
                           0.0)
    stored = float(np.linalg.norm(grad[:, -1].astype(np.float64)))
    assert stored * feature_norm <= clip_norm


@pytest.mark.parametrize("kernel", sorted(KERNELS))
def test_ordinary_rows_are_unchanged(kernel):
    # The fix only touches coefficients at the edges: ordinary float64 rows
    # give r min(1, C / ||g||) to the last bits.
    rng = np.random.default_rng(3)
    X = rng.normal(size=(1, 5))
    params = rng.normal(size=(3, 6))
    y = np.array([1.0])
    code = loss_code("log_loss", 3)
    margins = X @ params[:, :5].T + params[:, 5]
    probabilities = np.exp(margins - margins.max())
    probabilities /= probabilities.sum()
    residual = probabilities[0].copy()
    residual[1] -= 1.0
    feature_norm = math.hypot(float(np.linalg.norm(X)), 1.0)
    clip_norm = 0.1
    expected = residual * min(1.0, clip_norm / (np.linalg.norm(residual) * feature_norm))
    grad = KERNELS[kernel](X, y, params, clip_norm, None, code, 0.0)
    np.testing.assert_allclose(grad[:, -1], expected, rtol=1e-13)
