"""Array API inputs (array-api-strict, PyTorch on CPU): the device training path.

Oracles: the NumPy reference functions of ``_losses`` for residuals and
clipped sums, the Numba training loop for whole fits (array-api-strict has no
random generator, so its noise is drawn on the host exactly as the NumPy
path draws it, and a reproducible fit must match the NumPy fit to rounding;
PyTorch draws on its device, so its fits are compared without noise, or
statistically), and ``_optimizers.OptimizerRun`` for the updates.
"""

import warnings

import numpy as np
import pytest
import sklearn
from numpy.testing import assert_allclose

from sklearn_dplssgd import DPLSSGDClassifier, DPLSSGDRegressor, PrivacyLeakWarning
from sklearn_dplssgd._backends import _array_api
from sklearn_dplssgd._backends._kernels import smooth_rows, smoothing_omega
from sklearn_dplssgd._training._losses import loss_derivative
from oracles import (
    clipped_gradient_sum_reference,
    EPSILON_INSENSITIVE,
    HINGE_BINARY,
    HINGE_CRAMMER_SINGER,
    HUBER,
    LOG_LOSS_BINARY,
    LOG_LOSS_MULTINOMIAL,
    loss_derivative_reference,
    SQUARED_ERROR,
)
from sklearn_dplssgd import Adam, Momentum
from sklearn_dplssgd._backends._numpy import poisson_batches, train_dp_lssgd
from sklearn_dplssgd._training._loop import TrainingPlan

array_api_strict = pytest.importorskip("array_api_strict")

NAMESPACES = ["array_api_strict", "torch"]
BINARY_CODES = (LOG_LOSS_BINARY, HINGE_BINARY, SQUARED_ERROR, HUBER, EPSILON_INSENSITIVE)
ALL_CODES = BINARY_CODES + (LOG_LOSS_MULTINOMIAL, HINGE_CRAMMER_SINGER)


@pytest.fixture(autouse=True)
def _dispatch():
    """Every test runs under array_api_dispatch, with the workflow warnings off."""
    with sklearn.config_context(array_api_dispatch=True), warnings.catch_warnings():
        warnings.simplefilter("ignore", PrivacyLeakWarning)
        warnings.simplefilter("ignore", UserWarning)
        yield


@pytest.fixture(params=NAMESPACES)
def xp_module(request):
    """The array module under test (skipped when it is not installed)."""
    return pytest.importorskip(request.param)


def _namespace(module, array):
    """The array API namespace of ``array`` (array_api_compat's wrapper for torch)."""
    from array_api_compat import array_namespace

    return array_namespace(array)


def _as(module, array, dtype=None):
    array = np.asarray(array) if dtype is None else np.asarray(array, dtype=dtype)
    return module.asarray(array)


def _targets(code, n_rows, n_outputs, rng):
    if code in (LOG_LOSS_MULTINOMIAL, HINGE_CRAMMER_SINGER):
        return rng.integers(0, n_outputs, n_rows).astype(np.float64)
    if code == LOG_LOSS_BINARY:
        return rng.integers(0, 2, n_rows).astype(np.float64)
    if code == HINGE_BINARY:
        return rng.choice([-1.0, 1.0], n_rows)
    return rng.normal(scale=3.0, size=n_rows)


@pytest.mark.parametrize("code", ALL_CODES)
def test_loss_derivative_matches_the_numpy_oracle(xp_module, code):
    rng = np.random.default_rng(code)
    n_outputs = 4 if code in (LOG_LOSS_MULTINOMIAL, HINGE_CRAMMER_SINGER) else 1
    # Extreme margins (overflow of exp) and integer ones (ties for the rival class).
    margins = np.concatenate([
        rng.normal(scale=3.0, size=(40, n_outputs)),
        rng.choice([-800.0, 800.0, 0.0], size=(10, n_outputs)),
        rng.integers(-2, 3, size=(20, n_outputs)).astype(np.float64),
    ])
    y = _targets(code, margins.shape[0], n_outputs, rng)
    xp = _namespace(xp_module, _as(xp_module, margins))
    result = loss_derivative(xp, code, _as(xp_module, margins), _as(xp_module, y),
                             1.5)
    expected = loss_derivative_reference(code, margins, y, 1.5)
    assert_allclose(_array_api.to_numpy(result), expected, rtol=1e-12, atol=1e-300)


@pytest.mark.parametrize("code", ALL_CODES)
@pytest.mark.parametrize("fit_intercept", [True, False])
@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_clipped_sum_matches_the_numpy_oracle(xp_module, code, fit_intercept, dtype):
    rng = np.random.default_rng(7)
    n_outputs = 3 if code in (LOG_LOSS_MULTINOMIAL, HINGE_CRAMMER_SINGER) else 1
    X = rng.normal(scale=2.0, size=(60, 9)).astype(dtype)
    y = _targets(code, 60, n_outputs, rng)
    params = rng.normal(size=(n_outputs, 10)).astype(dtype)
    if not fit_intercept:
        params[:, -1] = 0.0
    rows = np.sort(rng.choice(60, 25, replace=False))
    X_dev = _as(xp_module, X)
    xp = _namespace(xp_module, X_dev)
    wide = xp.float64
    norms = _array_api.row_norms(xp, X_dev, wide)
    feature_norms = xp.sqrt(norms * norms + (1.0 if fit_intercept else 0.0))
    batch = _as(xp_module, rows)
    grad = _array_api.clipped_gradient_sum(
        xp, xp.take(X_dev, batch, axis=0), xp.take(_as(xp_module, y), batch, axis=0),
        xp.take(feature_norms, batch, axis=0), _as(xp_module, params), loss_code=code,
        loss_threshold=0.8,
        clip_norm=0.7, fit_intercept=fit_intercept, wide=wide)
    grad_coef, grad_intercept = clipped_gradient_sum_reference(
        X, y, rows, params[:, :-1], params[:, -1], code, 0.8, 0.7, fit_intercept)
    tolerance = 1e-5 if dtype == np.float32 else 1e-12
    result = _array_api.to_numpy(grad)
    assert result.dtype == dtype
    assert_allclose(result[:, :-1], grad_coef, rtol=tolerance, atol=tolerance)
    assert_allclose(result[:, -1], grad_intercept, rtol=tolerance, atol=tolerance)


def test_float32_rows_of_tiny_entries_are_still_clipped(xp_module):
    # Squares of 2.5e-23 underflow float32: a norm computed from them would
    # be far too small and the row's gradient would escape the clip (the
    # privacy bug fixed in the NumPy kernels).
    d = 400
    X = np.full((1, d), 2.5e-23, dtype=np.float32)
    X_dev = _as(xp_module, X)
    xp = _namespace(xp_module, X_dev)
    exact = np.linalg.norm(X.astype(np.float64))
    for wide in (xp.float64, xp.float32):
        norm = float(_array_api.to_numpy(_array_api.row_norms(xp, X_dev, wide))[0])
        assert norm == pytest.approx(exact, rel=1e-6)
    # A target of 1e30 makes the gradient about 5e8 times the clip norm.
    y = _as(xp_module, [1e30])
    norms = _array_api.row_norms(xp, X_dev, xp.float64)
    grad = _array_api.clipped_gradient_sum(
        xp, X_dev, y, norms, xp.zeros((1, d + 1), dtype=xp.float32),
        loss_code=SQUARED_ERROR, loss_threshold=0.0,
        clip_norm=1.0, fit_intercept=False, wide=xp.float64)
    contribution = np.linalg.norm(_array_api.to_numpy(grad).astype(np.float64))
    assert 0.99 < contribution <= 1.0 + 1e-5


def test_row_norms_of_extreme_float64_rows(xp_module):
    X = np.array([[1e-300, 1e-300], [1e300, -1e300], [0.0, 0.0], [3.0, 4.0]])
    X_dev = _as(xp_module, X)
    xp = _namespace(xp_module, X_dev)
    norms = _array_api.to_numpy(_array_api.row_norms(xp, X_dev, xp.float64))
    assert_allclose(norms, [np.sqrt(2) * 1e-300, np.sqrt(2) * 1e300, 0.0, 5.0], rtol=1e-14)


def test_unrepresentable_contributions_fail_closed(xp_module):
    # A NaN residual (NaN > bound is False) and a float32 coefficient above
    # float32's range both contribute nothing instead of escaping the clip.
    residuals = np.array([[np.nan], [1e39], [2.0], [0.1]])
    feature_norms = np.array([1.0, 0.0, 1.0, 1.0])
    xp = _namespace(xp_module, _as(xp_module, residuals))
    result = _array_api.to_numpy(_array_api.clipped_residuals(
        xp, _as(xp_module, residuals), _as(xp_module, feature_norms), 1.0, xp.float32))
    assert_allclose(result[:, 0], [0.0, 0.0, 1.0, 0.1], rtol=1e-7)


def test_float32_residuals_of_tiny_entries_are_still_clipped(xp_module):
    # Where the widest float is float32 (MPS), residual entries near 1e-23
    # square to 0: an unscaled norm is 0, the clip sees nothing to clip, and
    # a row of norm 1e30 adds a gradient of norm about 1e7 C. The norm scaled
    # by the row's largest entry keeps every contribution within C.
    rng = np.random.default_rng(5)
    residuals = (rng.uniform(0.5, 2.0, size=(6, 3)) * 1e-23).astype(np.float32)
    residuals[0] = [3e-23, 0.0, -4e-23]
    feature_norms = np.float32(1e30) * rng.uniform(0.5, 2.0, size=6).astype(np.float32)
    residuals_dev = _as(xp_module, residuals)
    xp = _namespace(xp_module, residuals_dev)
    coefficients = _array_api.to_numpy(_array_api.clipped_residuals(
        xp, residuals_dev, _as(xp_module, feature_norms), 1.0, xp.float32))
    assert coefficients.dtype == np.float32
    contributions = (np.linalg.norm(coefficients.astype(np.float64), axis=1)
                     * feature_norms.astype(np.float64))
    assert np.all(contributions <= 1.0 + 1e-5)
    assert np.all(contributions > 0.99)  # clipped to C, not dropped
    # The direction is kept: row 0 is (3, 0, -4) / 5 times C / ||x||.
    assert_allclose(coefficients[0] * feature_norms[0], [0.6, 0.0, -0.8], rtol=1e-5,
                    atol=1e-6)


@pytest.mark.parametrize("bad_norm", [np.nan, -1.0])
def test_nan_or_negative_feature_norms_contribute_nothing(xp_module, bad_norm):
    # NaN > 0 is False: such a norm once meant "no bound", and the row was kept whole.
    residuals = np.array([[5.0, -3.0], [5.0, -3.0], [0.3, 0.4]])
    feature_norms = np.array([bad_norm, 2.0, 1.0])
    xp = _namespace(xp_module, _as(xp_module, residuals))
    result = _array_api.to_numpy(_array_api.clipped_residuals(
        xp, _as(xp_module, residuals), _as(xp_module, feature_norms), 1.0, xp.float64))
    assert np.array_equal(result[0], [0.0, 0.0])
    assert_allclose(np.linalg.norm(result[1]) * 2.0, 1.0, rtol=1e-12)
    assert_allclose(result[2], [0.3, 0.4], rtol=1e-15)


def _train_plan(n_outputs, code, n_steps=60, **overrides):
    settings = dict(
        loss_code=code, loss_threshold=1.0, fit_intercept=True, clip_norm=1.0,
        noise_multiplier=1.3, sample_rate=0.1, batch_size=20, n_steps=n_steps, n_epochs=6,
        learning_rates=np.linspace(0.5, 0.1, n_steps), alpha=1e-3, sigma=2.0,
        average_start=None, optimizer=None, max_batch_rows=200,
    )
    settings.update(overrides)
    return TrainingPlan(**settings)


@pytest.mark.parametrize("settings", [
    dict(),
    dict(optimizer=Momentum(momentum=0.8), average_start=30),
    dict(optimizer=Adam(beta1=0.8, beta2=0.99, epsilon=1e-6),
         fit_intercept=False),
    dict(sigma=0.0, sample_rate=1.0, alpha=0.0, noise_multiplier=np.linspace(2, 1, 60)),
])
@pytest.mark.parametrize("multiclass", [False, True])
def test_training_loop_matches_the_numpy_path_draw_for_draw(xp_module, settings, multiclass):
    # The integer noise is drawn on the host from the same generator, so the
    # whole run is the NumPy path's to rounding: batches, clipping, the
    # lattice's release, smoothing, decay, update, averaging.
    rng = np.random.default_rng(3)
    n_outputs = 4 if multiclass else 1
    code = LOG_LOSS_MULTINOMIAL if multiclass else HUBER
    X = rng.normal(size=(200, 16))
    y = _targets(code, 200, n_outputs, rng)
    plan = _train_plan(n_outputs, code, **settings)
    expected = train_dp_lssgd(X, y, n_outputs, plan, np.random.default_rng(11))
    result = _array_api.train_dp_lssgd_array_api(
        _as(xp_module, X), y, n_outputs, plan, np.random.default_rng(11))
    assert type(result).__module__.split(".")[0] == xp_module.__name__
    assert_allclose(_array_api.to_numpy(result), expected, rtol=1e-9, atol=1e-11)


def test_the_noise_has_the_calibrated_standard_deviation_on_the_lattice():
    # One step from zero weights on all-zero rows without intercept: the
    # update is -eta * noise / b, so the weights are the noise itself, gamma
    # times integers, with standard deviation z * C (a hair more) per
    # coordinate, and none on the intercept.
    torch = pytest.importorskip("torch")
    d, n_outputs = 2000, 10
    X = torch.zeros((50, d), dtype=torch.float64)
    z, clip_norm = 0.7, 3.0
    params = _array_api.train_dp_lssgd_array_api(
        X, np.zeros(50), n_outputs, _train_plan(
            n_outputs, LOG_LOSS_MULTINOMIAL, n_steps=1, noise_multiplier=z, clip_norm=clip_norm,
            batch_size=1, sample_rate=1.0, learning_rates=np.ones(1), alpha=0.0, sigma=0.0,
            fit_intercept=False, n_epochs=1, max_batch_rows=50),
        np.random.default_rng(5))
    noise = -_array_api.to_numpy(params)
    assert np.all(noise[:, -1] == 0.0)
    values = noise[:, :-1].ravel()
    step = 2.0 ** (np.floor(np.log2(clip_norm)) - 20)
    assert np.all(values / step == np.round(values / step))
    # 20,000 draws: the sample std is within 2 % of z C with overwhelming probability.
    assert values.std() == pytest.approx(z * clip_norm, rel=0.02)
    assert abs(values.mean()) < 5 * z * clip_norm / np.sqrt(values.size)


def test_the_mechanism_does_not_depend_on_the_data(xp_module):
    # The sampler sees only public quantities: the same calls whatever the rows.
    calls = []

    def recording_sampler(rng, n_samples, sample_rate, n_steps):
        calls.append((n_samples, sample_rate, n_steps))
        return poisson_batches(rng, n_samples, sample_rate, n_steps)

    rng = np.random.default_rng(0)
    runs = []
    for scale in (1.0, 1e3):
        calls.clear()
        X = rng.normal(scale=scale, size=(300, 8))
        _array_api.train_dp_lssgd_array_api(
            _as(xp_module, X), rng.normal(size=300), 1,
            _train_plan(1, SQUARED_ERROR, n_steps=50, sample_rate=0.05),
            np.random.default_rng(), batch_sampler=recording_sampler)
        runs.append(list(calls))
    assert runs[0] == runs[1]
    assert sum(steps for _, _, steps in runs[0]) == 50
    assert {rate for _, rate, _ in runs[0]} == {0.05}


def _classification_data(n_classes=3, n=240, d=12, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, d)) / np.sqrt(d)
    y = rng.integers(0, n_classes, n)
    return X, y


@pytest.mark.parametrize("estimator", [
    DPLSSGDClassifier(classes=[0, 1, 2], max_iter=3, batch_size=40),
    DPLSSGDClassifier(loss="hinge", classes=[0, 1, 2], max_iter=3, batch_size=40,
                      optimizer="adam", sigma=0.0),
    DPLSSGDRegressor(max_iter=3, batch_size=40, target_bounds=(-2.0, 2.0),
                     optimizer="momentum", average=True),
    DPLSSGDRegressor(loss="epsilon_insensitive", max_iter=3, batch_size=40,
                     fit_intercept=False),
], ids=["log_loss", "crammer_singer", "squared_error", "epsilon_insensitive"])
def test_reproducible_strict_fit_equals_the_numpy_fit(estimator):
    # array-api-strict draws its noise on the host exactly as the NumPy path:
    # a reproducible fit must give the same weights and predictions.
    X, y = _classification_data()
    if isinstance(estimator, DPLSSGDRegressor):
        y = X @ np.arange(12.0) / 6 + 0.1
    params = dict(random_state=4, reproducible=True, epsilon=2.0)
    reference = sklearn.base.clone(estimator).set_params(**params)
    with sklearn.config_context(array_api_dispatch=False):
        reference.fit(X, y)
    model = sklearn.base.clone(estimator).set_params(**params).fit(
        array_api_strict.asarray(X), array_api_strict.asarray(y))
    assert isinstance(model.coef_, array_api_strict._array_object.Array)
    assert_allclose(_array_api.to_numpy(model.coef_), reference.coef_, rtol=1e-9, atol=1e-12)
    assert_allclose(_array_api.to_numpy(model.intercept_), reference.intercept_,
                    rtol=1e-9, atol=1e-12)
    for name in ("n_steps_", "sample_rate_", "noise_multiplier_", "eta0_", "batch_size_",
                 "average_start_", "epsilon_", "delta_"):
        assert getattr(model, name) == getattr(reference, name), name
    assert model.dp_event_ == reference.dp_event_
    X_test = array_api_strict.asarray(X[:30])
    methods = ["predict", "decision_function", "predict_proba", "predict_log_proba"]
    for method in methods:
        if not hasattr(reference, method):
            continue
        with sklearn.config_context(array_api_dispatch=False):
            expected = getattr(reference, method)(X[:30])
        result = getattr(model, method)(X_test)
        assert isinstance(result, array_api_strict._array_object.Array), method
        assert_allclose(_array_api.to_numpy(result), expected, rtol=1e-9, atol=1e-12)


def test_weighted_strict_fit_equals_the_weighted_numpy_fit():
    # Weights (sample and class) multiply the clipped gradients on the device
    # too, and the noise is scaled to max_sample_weight * clip_norm.
    X, y = _classification_data()
    weights = np.random.default_rng(1).uniform(0, 3, size=len(y))
    params = dict(classes=[0, 1, 2], max_iter=3, batch_size=40, max_sample_weight=3.0,
                  class_weight={0: 1.0, 1: 0.5, 2: 1.0}, random_state=4, reproducible=True)
    with sklearn.config_context(array_api_dispatch=False):
        reference = DPLSSGDClassifier(**params).fit(X, y, sample_weight=weights)
    model = DPLSSGDClassifier(**params).fit(
        array_api_strict.asarray(X), array_api_strict.asarray(y),
        sample_weight=array_api_strict.asarray(weights))
    assert_allclose(_array_api.to_numpy(model.coef_), reference.coef_, rtol=1e-9, atol=1e-12)
    with pytest.raises(ValueError, match="partial_fit, warm_start"):
        model.partial_fit(array_api_strict.asarray(X), array_api_strict.asarray(y))


def test_torch_fit_without_noise_equals_the_numpy_fit():
    torch = pytest.importorskip("torch")
    X, y = _classification_data(n_classes=4, seed=2)
    params = dict(epsilon=float("inf"), random_state=1, reproducible=True, max_iter=4,
                  batch_size=30, classes=range(4), sigma=1.5)
    with sklearn.config_context(array_api_dispatch=False):
        reference = DPLSSGDClassifier(**params).fit(X, y)
    model = DPLSSGDClassifier(**params).fit(torch.asarray(X), torch.asarray(y))
    assert isinstance(model.coef_, torch.Tensor) and isinstance(model.intercept_, torch.Tensor)
    assert_allclose(model.coef_.numpy(), reference.coef_, rtol=1e-9, atol=1e-12)
    predicted = model.predict(torch.asarray(X))
    assert isinstance(predicted, torch.Tensor)
    with sklearn.config_context(array_api_dispatch=False):
        assert_allclose(predicted.numpy(), reference.predict(X))


def test_private_torch_fit_reports_the_planned_mechanism():
    torch = pytest.importorskip("torch")
    X, y = _classification_data()
    settings = dict(epsilon=1.0, classes=[0, 1, 2], max_iter=2, batch_size=40)
    with sklearn.config_context(array_api_dispatch=False):
        reference = DPLSSGDClassifier(**settings).fit(X, y)
    fits = [DPLSSGDClassifier(**settings).fit(torch.asarray(X * scale), torch.asarray(y))
            for scale in (1.0, 5.0)]
    for model in fits:
        assert model.epsilon_ == reference.epsilon_ <= 1.0
        assert (model.n_steps_, model.sample_rate_, model.noise_multiplier_) == (
            reference.n_steps_, reference.sample_rate_, reference.noise_multiplier_)
        assert model.dp_event_ == reference.dp_event_
        assert isinstance(model.noise_multipliers_, torch.Tensor)
    # Fresh operating-system entropy: two private fits never share their noise.
    assert not torch.equal(fits[0].coef_, DPLSSGDClassifier(**settings).fit(
        torch.asarray(X), torch.asarray(y)).coef_)


def test_float32_stays_float32_and_inputs_are_not_modified(xp_module):
    X, y = _classification_data()
    X_dev = _as(xp_module, X, np.float32)
    before = np.array(_array_api.to_numpy(X_dev), copy=True)
    model = DPLSSGDClassifier(classes=[0, 1, 2], max_iter=2).fit(X_dev, _as(xp_module, y))
    assert model.coef_.dtype == X_dev.dtype
    assert_allclose(_array_api.to_numpy(X_dev), before, rtol=0, atol=0)
    assert model.predict_proba(X_dev).dtype == X_dev.dtype


def test_features_that_require_gradients_are_not_tracked():
    torch = pytest.importorskip("torch")
    X, y = _classification_data()
    X_grad = torch.asarray(X).requires_grad_(True)
    model = DPLSSGDClassifier(classes=[0, 1, 2], max_iter=2).fit(X_grad, torch.asarray(y))
    assert not model.coef_.requires_grad and X_grad.grad is None
    assert model.predict(X_grad).shape == (X.shape[0],)


def test_string_labels_with_device_features():
    torch = pytest.importorskip("torch")
    X, y = _classification_data(n_classes=2)
    labels = np.array(["no", "yes"])[y]
    model = DPLSSGDClassifier(classes=["no", "yes"], max_iter=2).fit(torch.asarray(X), labels)
    predicted = model.predict(torch.asarray(X))
    assert isinstance(predicted, np.ndarray) and set(predicted) <= {"no", "yes"}


def test_output_perturbation_refuses_array_api_inputs(xp_module):
    X, y = _classification_data()
    estimator = DPLSSGDClassifier(mechanism="output", alpha=0.1, classes=[0, 1, 2])
    with pytest.raises(ValueError, match="mechanism='output' trains on NumPy arrays only"):
        estimator.fit(_as(xp_module, X), _as(xp_module, y))
    assert not sklearn.utils.get_tags(estimator).array_api_support
    assert sklearn.utils.get_tags(DPLSSGDClassifier()).array_api_support


def test_device_model_outside_dispatch_gives_a_clear_error():
    X, y = _classification_data()
    model = DPLSSGDClassifier(classes=[0, 1, 2], max_iter=1).fit(
        array_api_strict.asarray(X), array_api_strict.asarray(y))
    with sklearn.config_context(array_api_dispatch=False):
        with pytest.raises(ValueError, match="fitted on array API arrays"):
            model.predict(X)
    with pytest.raises(ValueError, match="must use the same namespace"):
        model.predict(X)


def test_refusals_and_divergence_on_device(xp_module):
    X, y = _classification_data()
    too_long = X.copy()
    too_long[0, 0] = 1e160
    # A row too long to train on contributes nothing (refusing it would let
    # one row decide whether a model is released).
    with pytest.warns(UserWarning, match="L2 norm above"):
        model = DPLSSGDRegressor(max_iter=1).fit(_as(xp_module, too_long),
                                                 _as(xp_module, y * 1.0))
    assert np.isfinite(_array_api.to_numpy(model.coef_)).all()
    with_nan = X.copy()
    with_nan[3, 2] = np.nan
    with pytest.raises(ValueError, match="NaN"):
        DPLSSGDRegressor(max_iter=1).fit(_as(xp_module, with_nan), _as(xp_module, y * 1.0))
    # array-api-strict computes with NumPy, which warns on the overflow itself.
    with pytest.raises(ValueError, match="diverged"), np.errstate(over="ignore",
                                                                  invalid="ignore"):
        DPLSSGDRegressor(max_iter=5, eta0=1e300, alpha=0.0, epsilon=float("inf"),
                         clip_norm=1e100, sigma=0.0).fit(_as(xp_module, X * 1e100),
                                                         _as(xp_module, y * 1e100))


def test_verbose_prints_one_line_per_epoch(xp_module, capsys):
    X, y = _classification_data()
    DPLSSGDClassifier(classes=[0, 1, 2], max_iter=3, verbose=1).fit(
        _as(xp_module, X), _as(xp_module, y))
    assert capsys.readouterr().out.count("-- Epoch") == 3


class _WithoutFFT:
    """A namespace without the FFT extension (delegates everything else)."""

    def __init__(self, xp):
        self._xp = xp

    def __getattr__(self, name):
        if name == "fft":
            raise AttributeError(name)
        return getattr(self._xp, name)


@pytest.mark.parametrize("drop_fft", [False, True])
def test_smoothing_matches_the_exact_solve(drop_fft):
    rng = np.random.default_rng(4)
    rows = rng.normal(size=(3, 17))
    xp = _namespace(array_api_strict, array_api_strict.asarray(rows))
    namespace = _WithoutFFT(xp) if drop_fft else xp
    smooth = _array_api._smoother(namespace, array_api_strict.Device("CPU_DEVICE"), 17, 2.5,
                                  xp.float64)
    result = _array_api.to_numpy(smooth(array_api_strict.asarray(rows)))
    expected = np.concatenate([rows, np.zeros((3, 1))], axis=1)
    smooth_rows(expected, 17, smoothing_omega(2.5), 2.5)
    assert_allclose(result, expected[:, :17], rtol=1e-10, atol=1e-12)
    assert _array_api._smoother(xp, None, 17, 0.0, xp.float64) is None


def test_numpy_inputs_under_dispatch_take_the_numpy_path():
    X, y = _classification_data()
    settings = dict(classes=[0, 1, 2], max_iter=2, random_state=0, reproducible=True)
    model = DPLSSGDClassifier(**settings).fit(X, y)
    with sklearn.config_context(array_api_dispatch=False):
        reference = DPLSSGDClassifier(**settings).fit(X, y)
    assert isinstance(model.coef_, np.ndarray)
    assert_allclose(model.coef_, reference.coef_, rtol=0, atol=0)


# ------------------------------------------------ full-precision products


def _new_torch_layout(precision):
    """A stand-in for PyTorch 2.9+'s ``torch.backends`` (one ``fp32_precision`` per backend)."""
    from types import SimpleNamespace

    def place():
        return SimpleNamespace(fp32_precision=precision)

    return SimpleNamespace(backends=SimpleNamespace(
        cuda=SimpleNamespace(matmul=place()), mkldnn=SimpleNamespace(matmul=place()),
        cudnn=SimpleNamespace(conv=place())))


def _old_torch_layout():
    """A stand-in for older PyTorch: ``allow_tf32`` flags and the global matmul precision."""
    from types import SimpleNamespace

    state = {"precision": "high"}
    return SimpleNamespace(
        backends=SimpleNamespace(cuda=SimpleNamespace(matmul=SimpleNamespace(allow_tf32=True)),
                                 cudnn=SimpleNamespace(allow_tf32=True)),
        get_float32_matmul_precision=lambda: state["precision"],
        set_float32_matmul_precision=lambda value: state.update(precision=value))


def _precision_state(torch_like):
    backends = torch_like.backends
    if hasattr(backends.cuda.matmul, "fp32_precision"):
        return (backends.cuda.matmul.fp32_precision, backends.mkldnn.matmul.fp32_precision,
                backends.cudnn.conv.fp32_precision)
    return (backends.cuda.matmul.allow_tf32, backends.cudnn.allow_tf32,
            torch_like.get_float32_matmul_precision())


@pytest.mark.parametrize("layout, full", [
    (lambda: _new_torch_layout("tf32"), ("ieee", "ieee", "ieee")),
    (_old_torch_layout, (False, False, "highest")),
])
def test_full_precision_products_switch_tf32_off_and_restore_the_users_settings(layout, full):
    torch_like = layout()
    users = _precision_state(torch_like)
    with _array_api.full_precision_products(None, torch_module=torch_like):
        assert _precision_state(torch_like) == full
    assert _precision_state(torch_like) == users
    with pytest.raises(RuntimeError, match="inside"):
        with _array_api.full_precision_products(None, torch_module=torch_like):
            raise RuntimeError("inside")
    assert _precision_state(torch_like) == users


@pytest.fixture
def users_tf32_settings():
    """The installed PyTorch with TF32 switched on, as a user may have it; restored after."""
    torch = pytest.importorskip("torch")
    switches = _array_api.full_precision_switches(torch)
    saved = [(write, read()) for read, write, _ in switches]
    for _, write, full in switches:
        write("tf32" if full == "ieee" else (True if full is False else "high"))
    yield torch, [read() for read, _, _ in switches]
    for write, value in reversed(saved):
        write(value)


def test_the_torch_backend_sums_clipped_gradients_in_full_precision(users_tf32_settings,
                                                                    monkeypatch):
    # With TF32 a clipped contribution summed by a matrix product may exceed
    # its checked norm by about 1e-3: every step must run with it off, and
    # the user's settings come back after the fit.
    torch, users = users_tf32_settings
    switches = _array_api.full_precision_switches(torch)
    seen = []
    summing = _array_api.clipped_gradient_sum

    def recording(*args, **kwargs):
        seen.append([read() for read, _, _ in switches])
        return summing(*args, **kwargs)

    monkeypatch.setattr(_array_api, "clipped_gradient_sum", recording)
    rng = np.random.default_rng(4)
    X = rng.normal(size=(80, 5)).astype(np.float32)
    y = (X[:, 0] > 0).astype(np.int64)
    DPLSSGDClassifier(classes=[0, 1], max_iter=2, batch_size=20).fit(
        torch.asarray(X), torch.asarray(y))
    full = [value for _, _, value in switches]
    assert seen and all(state == full for state in seen)
    assert [read() for read, _, _ in switches] == users != full
