"""The Numba kernels against the plain NumPy oracle of _losses."""

import numpy as np
import pytest

from sklearn_dplssgd._backends._kernels import (
    PARALLEL_MIN_WORK,
    compute_row_norms,
    noisy_clipped_gradient_sum,
    smooth_rows,
    smoothing_omega,
)
from sklearn_dplssgd._training._losses import LOSSES, loss_code
from oracles import (
    clipped_gradient_sum_reference,
    EPSILON_INSENSITIVE,
    HINGE_BINARY,
    HINGE_CRAMMER_SINGER,
    HUBER,
    LOG_LOSS_BINARY,
    LOG_LOSS_MULTINOMIAL,
    loss_derivative_reference,
    loss_value_reference,
    SQUARED_ERROR,
    SQUARED_HINGE_BINARY,
    SQUARED_HINGE_ONE_VS_REST,
)
from sklearn_dplssgd._training._smoothing import apply_smoothing, smoothing_eigenvalues

# (code, K): every loss of the registry, with one output (binary
# classification, regression) and, where it has one, its multiclass code
# with 4 outputs: a loss added to LOSSES is checked against the oracle here.
CASES = [(loss.code, 1) for loss in LOSSES.values()] + [
    (loss.multiclass_code, 4) for loss in LOSSES.values() if loss.multiclass_code is not None]


def test_every_kernel_code_is_covered():
    assert sorted(code for code, _ in CASES) == sorted({
        EPSILON_INSENSITIVE, HINGE_BINARY, HINGE_CRAMMER_SINGER, HUBER, LOG_LOSS_BINARY,
        LOG_LOSS_MULTINOMIAL, SQUARED_ERROR, SQUARED_HINGE_BINARY, SQUARED_HINGE_ONE_VS_REST})


def _problem(code, n_outputs, dtype, fit_intercept, seed, n_samples=60, n_features=9):
    rng = np.random.default_rng(seed)
    X = (rng.normal(size=(n_samples, n_features)) * rng.uniform(0.05, 4)).astype(dtype)
    loss = next(entry for entry in LOSSES.values()
                if code in (entry.code, entry.multiclass_code))
    if loss.task == "regression":
        y = rng.normal(size=n_samples) * 3
    elif code == loss.multiclass_code:
        y = rng.integers(0, n_outputs, n_samples).astype(float)
    else:
        y = rng.choice(loss.binary_targets, n_samples)
    params = rng.normal(size=(n_outputs, n_features + 1)).astype(dtype)
    if not fit_intercept:
        params[:, -1] = 0
    row_norms = np.linalg.norm(X.astype(float), axis=1)
    return X, y, params, row_norms


def _kernel(X, y, rows, params, row_norms, code, threshold, clip_norm, fit_intercept,
            noise=None, n_threads=1):
    grad = np.empty_like(params)
    if noise is None:
        noise = np.zeros_like(params)
    noisy_clipped_gradient_sum(
        X, y, rows, params, row_norms, code, threshold, clip_norm, fit_intercept,
        noise, grad, n_threads,
    )
    return grad


@pytest.mark.parametrize("code, n_outputs", CASES)
@pytest.mark.parametrize("fit_intercept", [True, False])
@pytest.mark.parametrize("dtype", [np.float64, np.float32])
@pytest.mark.parametrize("clip_norm", [0.3, 1e6])
def test_kernel_matches_oracle(code, n_outputs, fit_intercept, dtype, clip_norm):
    X, y, params, row_norms = _problem(code, n_outputs, dtype, fit_intercept, seed=code)
    rows = np.sort(np.random.default_rng(1).choice(len(X), 25, replace=False)).astype(np.int64)
    noise = np.random.default_rng(2).normal(size=params.shape).astype(dtype)
    if not fit_intercept:
        noise[:, -1] = 0
    grad = _kernel(X, y, rows, params, row_norms, code, 0.5, clip_norm, fit_intercept, noise)
    assert grad.dtype == dtype
    d = X.shape[1]
    ref_coef, ref_intercept = clipped_gradient_sum_reference(
        X, y, rows, params[:, :d], params[:, d], code, 0.5, clip_norm, fit_intercept
    )
    tol = 1e-10 if dtype == np.float64 else 2e-4
    scale = max(1.0, np.abs(ref_coef).max())
    np.testing.assert_allclose(grad[:, :d] - noise[:, :d], ref_coef, atol=tol * scale, rtol=tol)
    np.testing.assert_allclose(grad[:, d] - noise[:, d], ref_intercept, atol=tol * scale, rtol=tol)
    if not fit_intercept:
        assert np.all(grad[:, d] == 0)


@pytest.mark.parametrize("code, n_outputs", CASES)
@pytest.mark.parametrize("fit_intercept", [True, False])
def test_each_clipped_per_sample_gradient_is_within_clip_norm(code, n_outputs, fit_intercept):
    X, y, params, row_norms = _problem(code, n_outputs, np.float64, fit_intercept, seed=7)
    params *= 5  # large margins: most gradients are far above the bound
    clip_norm = 0.25
    norms = []
    for i in range(len(X)):
        grad = _kernel(X, y, np.array([i]), params, row_norms, code, 0.5, clip_norm,
                       fit_intercept)
        norms.append(np.linalg.norm(grad))
        # The whole vector (all outputs and the intercept) is clipped at once.
    norms = np.array(norms)
    assert norms.max() <= clip_norm * (1 + 1e-12)
    if code not in (HINGE_BINARY, HINGE_CRAMMER_SINGER, EPSILON_INSENSITIVE):
        # Smooth losses have non-zero gradients here: clipping must be active.
        assert np.isclose(norms.max(), clip_norm)


def test_empty_batch_returns_the_noise():
    X, y, params, row_norms = _problem(LOG_LOSS_MULTINOMIAL, 4, np.float64, True, seed=3)
    noise = np.random.default_rng(0).normal(size=params.shape)
    grad = _kernel(X, y, np.empty(0, dtype=np.int64), params, row_norms,
                   LOG_LOSS_MULTINOMIAL, 0.0, 1.0, True, noise)
    np.testing.assert_array_equal(grad, noise)


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_parallel_kernel_matches_serial(dtype):
    X, y, params, row_norms = _problem(LOG_LOSS_MULTINOMIAL, 10, dtype, True, seed=5,
                                       n_samples=3000, n_features=64)
    rows = np.arange(len(X), dtype=np.int64)
    assert len(rows) * 10 * 64 >= PARALLEL_MIN_WORK
    serial = _kernel(X, y, rows, params, row_norms, LOG_LOSS_MULTINOMIAL, 0.0, 1.0, True)
    parallel = _kernel(X, y, rows, params, row_norms, LOG_LOSS_MULTINOMIAL, 0.0, 1.0,
                       True, n_threads=2)
    tol = 1e-10 if dtype == np.float64 else 1e-4
    np.testing.assert_allclose(parallel, serial, rtol=tol, atol=tol)


def test_smooth_rows_smooths_the_coefficients_only():
    rng = np.random.default_rng(0)
    direction = rng.normal(size=(3, 9))
    expected = direction.copy()
    expected[:, :8] = apply_smoothing(direction[:, :8], smoothing_eigenvalues(8, 2.0))
    smooth_rows(direction, 8, smoothing_omega(2.0), 2.0)
    np.testing.assert_allclose(direction, expected, rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("code, n_outputs", CASES)
def test_oracle_derivative_matches_finite_differences(code, n_outputs):
    """The oracle itself: r = d loss / d z against central differences."""
    X, y, params, _ = _problem(code, n_outputs, np.float64, True, seed=11, n_samples=30)
    margins = X @ params[:, :-1].T + params[:, -1]
    residuals = loss_derivative_reference(code, margins, y, threshold=0.5)
    h = 1e-6
    numeric = np.zeros_like(margins)
    for k in range(n_outputs):
        step = np.zeros_like(margins)
        step[:, k] = h
        numeric[:, k] = (
            loss_value_reference(code, margins + step, y, 0.5)
            - loss_value_reference(code, margins - step, y, 0.5)
        ) / (2 * h)
    # Kinks of hinge-type losses are measure-zero; skip rows sitting on one.
    np.testing.assert_allclose(residuals, numeric, atol=1e-5)


def test_loss_code_names():
    assert loss_code("log_loss", 1) == LOG_LOSS_BINARY
    assert loss_code("log_loss", 3) == LOG_LOSS_MULTINOMIAL
    assert loss_code("hinge", 1) == HINGE_BINARY
    assert loss_code("hinge", 3) == HINGE_CRAMMER_SINGER
    with pytest.raises(ValueError, match="Unknown loss"):
        loss_code("perceptron")


def test_row_norms_neither_overflow_nor_underflow():
    X = np.array([[3e-300, 4e-300], [3e300, 4e300], [0.0, 0.0], [3.0, -4.0]])
    np.testing.assert_allclose(compute_row_norms(X), [5e-300, 5e300, 0.0, 5.0], rtol=1e-15)
    X32 = np.array([[3e-30, 4e-30], [3e30, 4e30]], dtype=np.float32)
    np.testing.assert_allclose(compute_row_norms(X32), [5e-30, 5e30], rtol=1e-6)


def test_huge_residuals_are_clipped_not_dropped():
    """A residual of 1e200 times a feature of 1e-150 must be clipped to C."""
    for x, target in [(1.0, 1e200), (1e-150, 1e155), (1e-300, 1e300)]:
        X = np.array([[x]])
        params = np.zeros((1, 2))
        grad = _kernel(X, np.array([target]), np.array([0]), params, compute_row_norms(X),
                       SQUARED_ERROR, 0.0, 1e-6, False)
        assert grad[0, 0] == pytest.approx(-1e-6, rel=1e-9)


def test_float32_row_norms_are_computed_in_float64():
    # float32 squares of 2.5e-23 underflow to 0: the norm came out 19 times
    # too small (3.74e-23 instead of 7.0e-22), and the clip let through 18.7 C.
    x = np.full(784, 2.5e-23, np.float32)
    x[0] = 2.7e-23
    expected = np.sqrt(np.sum(x.astype(np.float64) ** 2))
    assert compute_row_norms(x[np.newaxis, :])[0] == pytest.approx(expected, rel=1e-12)


@pytest.mark.parametrize("fit_intercept", [False, True])
def test_tiny_float32_row_with_huge_target_is_clipped(fit_intercept):
    x = np.full((1, 784), 2.5e-23, np.float32)
    params = np.zeros((1, 785), np.float32)
    grad = _kernel(x, np.array([1e30]), np.array([0]), params, compute_row_norms(x),
                   SQUARED_ERROR, 0.0, 1.0, fit_intercept)
    assert np.linalg.norm(grad.astype(np.float64)) == pytest.approx(1.0, rel=1e-6)


@pytest.mark.parametrize("n_outputs", [1, 3])
def test_overflowing_float32_margins_fall_back_to_float64(n_outputs):
    # w . x overflows float32 (20 * 1e10 * 1e28 = 2e39) but not float64: the
    # kernel must clip the true gradient, as the float64 oracle does.
    code = LOG_LOSS_MULTINOMIAL if n_outputs > 1 else LOG_LOSS_BINARY
    X = np.full((2, 20), 1e28, np.float32)
    X[1] = 0.5
    y = np.array([0.0, 1.0])
    params = np.full((n_outputs, 21), 1e10, np.float32)
    params[:, -1] = 0.0
    rows = np.array([0, 1])
    grad = _kernel(X, y, rows, params, compute_row_norms(X), code, 0.0, 1.0, True)
    assert np.isfinite(grad).all()
    coef, intercept = clipped_gradient_sum_reference(
        X.astype(np.float64), y, rows, params[:, :-1].astype(np.float64),
        params[:, -1].astype(np.float64), code, 0.0, 1.0, True)
    np.testing.assert_allclose(grad[:, :-1], coef, rtol=1e-5, atol=1e-30)
    np.testing.assert_allclose(grad[:, -1], intercept, rtol=1e-5, atol=1e-30)


def test_non_finite_residual_contributes_nothing():
    # Non-finite weights give a NaN residual, and NaN > bound is False: the
    # sample must not skip the clip. It contributes nothing instead.
    X = np.ones((1, 3))
    params = np.full((1, 4), np.nan)
    grad = _kernel(X, np.array([1.0]), np.array([0]), params, compute_row_norms(X),
                   SQUARED_ERROR, 0.0, 1.0, True)
    assert np.array_equal(grad, np.zeros_like(grad))


@pytest.mark.parametrize("code, n_outputs", [(SQUARED_ERROR, 1), (LOG_LOSS_MULTINOMIAL, 4)])
@pytest.mark.parametrize("dtype", [np.float64, np.float32])
@pytest.mark.parametrize("where", ["row_norms", "feature_norms"])
@pytest.mark.parametrize("sparse", [False, True])
def test_nan_or_negative_feature_norms_contribute_nothing(code, n_outputs, dtype, where,
                                                          sparse):
    # NaN > 0 is False, so a NaN norm once meant "no bound" and the sample's
    # gradient was added whole; a negative norm also skipped the clip. The
    # clip fails closed on its own: those rows contribute nothing, and the
    # others exactly what the oracle says.
    X, y, params, row_norms = _problem(code, n_outputs, dtype, True, seed=11)
    X *= 50  # every row's gradient is far above the clip norm
    row_norms = np.linalg.norm(X.astype(float), axis=1)
    rows = np.arange(len(X), dtype=np.int64)
    broken = np.zeros(len(X), dtype=bool)
    broken[::3] = True
    feature_norms = np.hypot(row_norms, 1.0)
    bad = np.where(np.arange(len(X)) % 2 == 0, np.nan, -1.0)
    if where == "row_norms":
        row_norms = np.where(broken, bad, row_norms)
        feature_norms = None
    else:
        feature_norms = np.where(broken, bad, feature_norms)
    grad = np.empty_like(params)
    if sparse:
        from scipy import sparse as sp

        from sklearn_dplssgd._backends._sparse import noisy_clipped_gradient_sum_sparse
        noisy_clipped_gradient_sum_sparse(
            sp.csr_matrix(X), y, rows, params, row_norms, code, 0.0, 0.3, True,
            np.zeros_like(params), grad, 1, None, feature_norms)
    else:
        noisy_clipped_gradient_sum(X, y, rows, params, row_norms, code, 0.0, 0.3, True,
                                   np.zeros_like(params), grad, 1, None, feature_norms)
    d = X.shape[1]
    kept = rows[~broken]
    ref_coef, ref_intercept = clipped_gradient_sum_reference(
        X, y, kept, params[:, :d], params[:, d], code, 0.0, 0.3, True)
    tol = 1e-10 if dtype == np.float64 else 2e-4
    np.testing.assert_allclose(grad[:, :d], ref_coef, rtol=tol, atol=tol)
    np.testing.assert_allclose(grad[:, d], ref_intercept, rtol=tol, atol=tol)
    # One broken row alone contributes exactly nothing.
    noisy_clipped_gradient_sum(X, y, rows[:1], params, np.full(len(X), np.nan), code, 0.0,
                               0.3, True, np.zeros_like(params), grad, 1)
    assert np.array_equal(grad, np.zeros_like(grad))


def test_subnormal_float32_clip_factor_drops_the_sample():
    # C / ||x|| = 1 / (3e38 sqrt(20)) is subnormal in float32: rounded, the
    # coefficient times x could exceed C. The sample contributes nothing.
    X = np.full((1, 20), 3e38, np.float32)
    params = np.zeros((1, 21), np.float32)
    grad = _kernel(X, np.array([1e30]), np.array([0]), params, compute_row_norms(X),
                   SQUARED_ERROR, 0.0, 1.0, True)
    assert np.array_equal(grad, np.zeros_like(grad))


# ---------------------------------------------------------------- weights


def _weights(n_samples, seed, largest=3.0):
    """Weights with zeros, fractions and values above 1."""
    weights = np.random.default_rng(seed).uniform(0.0, largest, n_samples)
    weights[::7] = 0.0
    return weights


@pytest.mark.parametrize("code, n_outputs", CASES)
@pytest.mark.parametrize("fit_intercept", [True, False])
@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_weighted_kernel_matches_oracle(code, n_outputs, fit_intercept, dtype):
    X, y, params, row_norms = _problem(code, n_outputs, dtype, fit_intercept, seed=code + 20)
    rows = np.sort(np.random.default_rng(3).choice(len(X), 30, replace=False)).astype(np.int64)
    weights = _weights(len(X), seed=code)
    grad = np.empty_like(params)
    noisy_clipped_gradient_sum(X, y, rows, params, row_norms, code, 0.5, 0.3, fit_intercept,
                               np.zeros_like(params), grad, 1, weights)
    d = X.shape[1]
    ref_coef, ref_intercept = clipped_gradient_sum_reference(
        X, y, rows, params[:, :d], params[:, d], code, 0.5, 0.3, fit_intercept, weights)
    tol = 1e-10 if dtype == np.float64 else 2e-4
    scale = max(1.0, np.abs(ref_coef).max())
    np.testing.assert_allclose(grad[:, :d], ref_coef, atol=tol * scale, rtol=tol)
    np.testing.assert_allclose(grad[:, d], ref_intercept, atol=tol * scale, rtol=tol)
    # Weights of 1 are the unweighted sum: bit for bit in the fused kernel;
    # the multi-output kernel's BLAS product may round differently from one
    # call to the next (its vector loops depend on the buffers' alignment).
    unweighted = _kernel(X, y, rows, params, row_norms, code, 0.5, 0.3, fit_intercept)
    noisy_clipped_gradient_sum(X, y, rows, params, row_norms, code, 0.5, 0.3, fit_intercept,
                               np.zeros_like(params), grad, 1, np.ones(len(X)))
    if n_outputs == 1:
        np.testing.assert_array_equal(grad, unweighted)
    else:
        ulps = 8 * np.finfo(dtype).eps
        np.testing.assert_allclose(grad, unweighted, rtol=ulps, atol=ulps * np.abs(grad).max())


@pytest.mark.parametrize("code, n_outputs", CASES)
def test_each_weighted_gradient_is_within_its_weight_times_clip_norm(code, n_outputs):
    X, y, params, row_norms = _problem(code, n_outputs, np.float64, True, seed=8)
    params *= 5
    weights = _weights(len(X), seed=1)
    grad = np.empty_like(params)
    ratios = []
    for i in range(len(X)):
        noisy_clipped_gradient_sum(X, y, np.array([i]), params, row_norms, code, 0.5, 0.25,
                                   True, np.zeros_like(params), grad, 1, weights)
        norm = np.linalg.norm(grad)
        if weights[i] == 0:
            assert norm == 0  # a row of weight 0 contributes nothing
        else:
            ratios.append(norm / (weights[i] * 0.25))
    assert max(ratios) <= 1 + 1e-12
    if code not in (HINGE_BINARY, HINGE_CRAMMER_SINGER, EPSILON_INSENSITIVE):
        assert np.isclose(max(ratios), 1.0)


def test_weighted_coefficient_beyond_the_dtype_drops_the_row():
    # float32: the clipped coefficient C / ||x|| = 1e30 fits, times 1e9 it does
    # not (above 3.4e38), so the row must contribute nothing rather than inf.
    X = np.array([[1e-30], [1.0]], dtype=np.float32)
    y = np.array([-1e35, 0.5])
    params = np.zeros((1, 2), dtype=np.float32)
    row_norms = compute_row_norms(X)
    grad = np.empty_like(params)
    rows = np.array([0, 1], dtype=np.int64)
    for weight, expected_first in ((1e9, 0.0), (10.0, 10.0)):
        weights = np.array([weight, 1.0])
        noisy_clipped_gradient_sum(X, y, rows, params, row_norms, SQUARED_ERROR, 0.0, 1.0,
                                   False, np.zeros_like(params), grad, 1, weights)
        assert np.isfinite(grad).all()
        # Row 1 (residual -0.5, unclipped) adds -0.5 * 1.0 to the coefficient.
        np.testing.assert_allclose(grad[0, 0], expected_first - 0.5, rtol=1e-6)


def test_weights_of_the_wrong_shape_or_dtype_are_refused():
    X, y, params, row_norms = _problem(SQUARED_ERROR, 1, np.float64, True, seed=0)
    grad = np.empty_like(params)
    rows = np.arange(5, dtype=np.int64)
    for weights in (np.ones(len(X) - 1), np.ones(len(X), dtype=np.float32)):
        with pytest.raises(ValueError, match="one entry per row"):
            noisy_clipped_gradient_sum(X, y, rows, params, row_norms, SQUARED_ERROR, 0.0,
                                       1.0, True, np.zeros_like(params), grad, 1, weights)
