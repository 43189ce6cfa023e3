"""The optimizer updates against plain NumPy oracles, and through the estimators."""

import math

import numpy as np
import pytest

from sklearn_dplssgd import DPLSSGDClassifier, DPLSSGDRegressor
from sklearn_dplssgd._optimizers import (
    Optimizer,
    adam_update,
    apply_weight_decay,
    momentum_update,
    sgd_update,
)


def _oracle_steps(name, gradients, eta, inv_batch, momentum=0.9, beta1=0.9, beta2=0.999,
                  epsilon=1e-8):
    """The textbook updates, one NumPy line each, from zero weights."""
    params = np.zeros_like(gradients[0])
    velocity = np.zeros_like(params)
    first, second = np.zeros_like(params), np.zeros_like(params)
    for t, gradient_sum in enumerate(gradients, start=1):
        g = gradient_sum * inv_batch
        if name == "sgd":
            params = params - eta * g
        elif name == "momentum":
            velocity = momentum * velocity + gradient_sum
            params = params - eta * inv_batch * velocity
        else:
            first = beta1 * first + (1 - beta1) * g
            second = beta2 * second + (1 - beta2) * g**2
            m_hat, v_hat = first / (1 - beta1**t), second / (1 - beta2**t)
            params = params - eta * m_hat / (np.sqrt(v_hat) + epsilon)
    return params


@pytest.mark.parametrize("name", ["sgd", "momentum", "adam"])
@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_optimizer_matches_its_oracle(name, dtype):
    rng = np.random.default_rng(3)
    gradients = rng.normal(size=(6, 2, 5)).astype(dtype)
    optimizer = Optimizer(name, (2, 5), dtype, batch_size=4, momentum=0.8, beta1=0.7,
                          beta2=0.95, epsilon=1e-6)
    params = np.zeros((2, 5), dtype=dtype)
    for gradient_sum in gradients:
        optimizer.step(params, gradient_sum.copy(), 0.05)
    expected = _oracle_steps(name, gradients.astype(np.float64), 0.05, 0.25, momentum=0.8,
                             beta1=0.7, beta2=0.95, epsilon=1e-6)
    tol = 1e-12 if dtype == np.float64 else 1e-5
    np.testing.assert_allclose(params, expected, rtol=tol, atol=tol)


def test_the_kernels_leave_the_gradient_alone():
    gradient = np.array([[0.5, -0.5, 1.0]])
    for update, args in [(sgd_update, (0.1,)),
                         (momentum_update, (np.zeros((1, 3)), 0.1, 0.9)),
                         (adam_update, (np.zeros((1, 3)), np.zeros((1, 3)), 0.1, 1.0, 0.9,
                                        0.999, 1e-8, 1))]:
        params = np.zeros((1, 3))
        update(params, gradient, *args)
        assert gradient.tolist() == [[0.5, -0.5, 1.0]]
        assert np.all(params != 0)


def test_weight_decay_spares_the_intercept():
    params = np.array([[1.0, 2.0, 3.0]])
    apply_weight_decay(params, 0.9, 2)
    np.testing.assert_allclose(params, [[0.9, 1.8, 3.0]])


def test_adam_first_step_moves_every_coordinate_by_eta():
    # Bias-corrected m_hat / sqrt(v_hat) is sign(g) at step 1: Adam's step is
    # eta per coordinate whatever the gradient's (noise's) magnitude.
    params = np.zeros((1, 4))
    adam_update(params, np.array([[1e-3, -5.0, 2e2, -1e-1]]), np.zeros((1, 4)),
                np.zeros((1, 4)), 0.01, 1.0, 0.9, 0.999, 0.0, 1)
    np.testing.assert_allclose(params, [[-0.01, 0.01, -0.01, 0.01]])


def test_unknown_optimizer_is_refused():
    with pytest.raises(ValueError, match="optimizer"):
        Optimizer("rmsprop", (1, 2), np.float64, 1)


def _blobs(seed=0, n=400, d=6):
    rng = np.random.default_rng(seed)
    y = rng.integers(0, 2, n)
    X = rng.normal(size=(n, d)) * 0.3 + (2 * y[:, None] - 1) * 0.5
    return np.clip(X, -1, 1), y


@pytest.mark.parametrize("optimizer", ["sgd", "momentum", "adam"])
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


def test_momentum_auto_step_keeps_the_effective_step():
    # The auto eta0 is that of SGD times (1 - momentum): the long-run step
    # eta0 / (1 - momentum), and so the accumulated noise, stays the same.
    X, y = _blobs(1)
    sgd = DPLSSGDClassifier(epsilon=1.0, random_state=0).fit(X, y)
    heavy = DPLSSGDClassifier(epsilon=1.0, optimizer="momentum", momentum=0.75,
                              random_state=0).fit(X, y)
    assert heavy.eta0_ == pytest.approx(sgd.eta0_ * 0.25)


@pytest.mark.parametrize("params, match", [
    ({"optimizer": "rmsprop"}, "optimizer"),
    ({"momentum": 1.0}, "momentum"),
    ({"beta1": -0.1}, "beta1"),
    ({"beta2": 1.0}, "beta2"),
    ({"adam_epsilon": 0.0}, "adam_epsilon"),
])
def test_bad_optimizer_settings_are_refused(params, match):
    X, y = _blobs()
    with pytest.raises(ValueError, match=match):
        DPLSSGDClassifier(**params).fit(X, y)
