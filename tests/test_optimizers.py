"""The optimizers against plain NumPy oracles, on both backends and through the estimators."""

import math

import numpy as np
import pytest
from sklearn.base import clone

from sklearn_dplssgd import (
    SGD, AdaGrad, Adam, DPLSSGDClassifier, DPLSSGDRegressor, DPRandomizedSearch, Momentum,
)
from sklearn_dplssgd._training._defaults import weight_noise_target
from sklearn_dplssgd._training._losses import LOSSES
from sklearn_dplssgd._training._optimizers import (
    OPTIMIZERS,
    OptimizerRun,
    adagrad_update,
    adam_update,
    apply_weight_decay,
    check_optimizer,
    momentum_update,
    sgd_update,
)

SETTINGS = {
    "sgd": SGD(),
    "momentum": Momentum(momentum=0.8),
    "adam": Adam(beta1=0.7, beta2=0.95, epsilon=1e-6),
    "adagrad": AdaGrad(epsilon=1e-6),
}


def _oracle_steps(optimizer, gradients, etas, inv_batch):
    """The textbook updates, one NumPy line each, from zero weights."""
    params = np.zeros_like(gradients[0])
    first, second = np.zeros_like(params), np.zeros_like(params)
    for t, (gradient_sum, eta) in enumerate(zip(gradients, etas), start=1):
        g = gradient_sum * inv_batch
        if optimizer.name == "sgd":
            params = params - eta * g
        elif optimizer.name == "momentum":
            first = optimizer.momentum * first + gradient_sum
            params = params - eta * inv_batch * first
        elif optimizer.name == "adam":
            b1, b2 = optimizer.beta1, optimizer.beta2
            first = b1 * first + (1 - b1) * g
            second = b2 * second + (1 - b2) * g**2
            m_hat, v_hat = first / (1 - b1**t), second / (1 - b2**t)
            params = params - eta * m_hat / (np.sqrt(v_hat) + optimizer.epsilon)
        else:
            first = first + g**2
            params = params - eta * g / (np.sqrt(first) + optimizer.epsilon)
    return params


def test_every_named_optimizer_has_an_oracle_case():
    assert set(SETTINGS) == set(OPTIMIZERS)


@pytest.mark.parametrize("name", sorted(SETTINGS))
@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_compiled_update_matches_its_oracle(name, dtype):
    rng = np.random.default_rng(3)
    gradients = rng.normal(size=(6, 2, 5)).astype(dtype)
    etas = 0.05 / np.arange(1, 7)
    params = np.zeros((2, 5), dtype=dtype)
    run = OptimizerRun(SETTINGS[name], params, batch_size=4)
    for gradient_sum, eta in zip(gradients, etas):
        assert run.step(params, gradient_sum.copy(), eta) is params  # in place
    expected = _oracle_steps(SETTINGS[name], gradients.astype(np.float64), etas, 0.25)
    tol = 1e-12 if dtype == np.float64 else 1e-5
    np.testing.assert_allclose(params, expected, rtol=tol, atol=tol)


@pytest.mark.parametrize("name", sorted(SETTINGS))
def test_array_api_update_matches_the_compiled_one(name):
    array_api_strict = pytest.importorskip("array_api_strict")
    rng = np.random.default_rng(9)
    params = rng.normal(size=(3, 6))
    device_params = array_api_strict.asarray(params.copy())
    compiled = OptimizerRun(SETTINGS[name], params, 16)
    functional = OptimizerRun(SETTINGS[name], device_params, 16, xp=array_api_strict)
    for step in range(5):
        gradient = rng.normal(size=params.shape)
        compiled.step(params, gradient, 0.1 / (step + 1))
        device_params = functional.step(device_params, array_api_strict.asarray(gradient),
                                        0.1 / (step + 1))
    np.testing.assert_allclose(np.asarray(device_params), params, rtol=1e-12)


def test_the_kernels_leave_the_gradient_alone():
    gradient = np.array([[0.5, -0.5, 1.0]])
    for update, args in [(sgd_update, (0.1,)),
                         (momentum_update, (np.zeros((1, 3)), 0.1, 0.9)),
                         (adam_update, (np.zeros((1, 3)), np.zeros((1, 3)), 0.1, 1.0, 0.9,
                                        0.999, 1e-8, 1)),
                         (adagrad_update, (np.zeros((1, 3)), 0.1, 1.0, 1e-8))]:
        params = np.zeros((1, 3))
        update(params, gradient, *args)
        assert gradient.tolist() == [[0.5, -0.5, 1.0]]
        assert np.all(params != 0)


def test_weight_decay_spares_the_intercept():
    params = np.array([[1.0, 2.0, 3.0]])
    apply_weight_decay(params, 0.9, 2)
    np.testing.assert_allclose(params, [[0.9, 1.8, 3.0]])


@pytest.mark.parametrize("update, extra", [
    (adam_update, lambda: (np.zeros((1, 4)), np.zeros((1, 4)), 0.01, 1.0, 0.9, 0.999, 0.0, 1)),
    (adagrad_update, lambda: (np.zeros((1, 4)), 0.01, 1.0, 0.0)),
])
def test_normalised_first_step_moves_every_coordinate_by_eta(update, extra):
    # Adam's bias-corrected m_hat / sqrt(v_hat) and AdaGrad's g / sqrt(g^2)
    # are sign(g) at step 1: the step is eta per coordinate whatever the
    # gradient's (the noise's) magnitude.
    params = np.zeros((1, 4))
    update(params, np.array([[1e-3, -5.0, 2e2, -1e-1]]), *extra())
    np.testing.assert_allclose(params, [[-0.01, 0.01, -0.01, 0.01]])


def test_names_and_instances():
    assert isinstance(check_optimizer("adam"), Adam)
    momentum = Momentum(momentum=0.5)
    assert check_optimizer(momentum) is momentum
    assert clone(momentum).get_params() == {"momentum": 0.5}
    with pytest.raises(ValueError, match="optimizer must be one of"):
        check_optimizer("rmsprop")
    with pytest.raises(ValueError, match="optimizer must be one of"):
        check_optimizer(object())


def _blobs(seed=0, n=400, d=6):
    rng = np.random.default_rng(seed)
    y = rng.integers(0, 2, n)
    X = rng.normal(size=(n, d)) * 0.3 + (2 * y[:, None] - 1) * 0.5
    return np.clip(X, -1, 1), y


@pytest.mark.parametrize("optimizer", sorted(SETTINGS))
def test_estimators_train_with_each_optimizer(optimizer):
    X, y = _blobs()
    clf = DPLSSGDClassifier(epsilon=2.0, optimizer=optimizer, random_state=0).fit(X, y)
    assert clf.score(X, y) > 0.85
    # Post-processing: the optimizer changes nothing in what is accounted.
    sgd = DPLSSGDClassifier(epsilon=2.0, random_state=0).fit(X, y)
    assert clf.noise_multiplier_ == sgd.noise_multiplier_
    assert repr(clf.dp_event_) == repr(sgd.dp_event_)
    reg = DPLSSGDRegressor(epsilon=math.inf, optimizer=optimizer, random_state=0).fit(
        X, X @ np.linspace(-0.2, 0.2, X.shape[1]))
    assert reg.score(X, X @ np.linspace(-0.2, 0.2, X.shape[1])) > 0.9


def test_an_instance_is_the_named_optimizer_with_settings():
    X, y = _blobs(2)
    common = dict(epsilon=1.0, random_state=0, reproducible=True, max_iter=3)
    named = DPLSSGDClassifier(optimizer="adam", **common).fit(X, y)
    default = DPLSSGDClassifier(optimizer=Adam(), **common).fit(X, y)
    np.testing.assert_array_equal(named.coef_, default.coef_)
    other = DPLSSGDClassifier(optimizer=Adam(beta1=0.5), **common).fit(X, y)
    assert not np.array_equal(other.coef_, default.coef_)
    # The estimator's optimizer is not modified by fitting (no state kept on it).
    assert default.optimizer.get_params() == Adam().get_params()


def test_momentum_auto_step_keeps_the_effective_step():
    # The auto eta0 is that of SGD times (1 - momentum): the long-run step
    # eta0 / (1 - momentum), and so the accumulated noise, stays the same.
    X, y = _blobs(1)
    sgd = DPLSSGDClassifier(epsilon=1.0, random_state=0).fit(X, y)
    heavy = DPLSSGDClassifier(epsilon=1.0, optimizer=Momentum(momentum=0.75),
                              random_state=0).fit(X, y)
    assert heavy.eta0_ == pytest.approx(sgd.eta0_ * 0.25)


def test_adagrad_auto_step_sets_its_noise_only_movement():
    # With a steady gradient scale AdaGrad moves a coordinate by about
    # eta_t / sqrt(t): eta0 sqrt(sum_t s_t^2 / t) is the target weight noise.
    X, y = _blobs(1)
    clf = DPLSSGDClassifier(epsilon=1.0, optimizer="adagrad", learning_rate="constant",
                            random_state=0).fit(X, y)
    steps = np.arange(1, clf.n_steps_ + 1)
    target = weight_noise_target(X.shape[1], LOSSES["log_loss"].noise_free_step)
    assert clf.eta0_ * math.sqrt(np.sum(1.0 / steps)) == pytest.approx(target)


def test_a_search_reaches_the_optimizer_settings():
    X, y = _blobs(3)
    search = DPRandomizedSearch(
        DPLSSGDClassifier(epsilon=1.0, optimizer=Momentum(), max_iter=3),
        {"optimizer__momentum": [0.5, 0.9]}, n_trials=2, epsilon=2.0, random_state=0,
    ).fit(X, y)
    assert search.best_params_["optimizer__momentum"] in (0.5, 0.9)


@pytest.mark.parametrize("optimizer, match", [
    ("rmsprop", "optimizer"),
    (Momentum(momentum=1.0), "optimizer.momentum"),
    (Adam(beta1=-0.1), "optimizer.beta1"),
    (Adam(beta2=1.0), "optimizer.beta2"),
    (Adam(epsilon=0.0), "optimizer.epsilon"),
    (AdaGrad(epsilon=-1.0), "optimizer.epsilon"),
    (Momentum(momentum="high"), "optimizer.momentum"),
])
def test_bad_optimizer_settings_are_refused(optimizer, match):
    X, y = _blobs()
    with pytest.raises(ValueError, match=match):
        DPLSSGDClassifier(optimizer=optimizer).fit(X, y)
