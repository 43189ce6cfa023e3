"""loss="squared_hinge": both residual forms against the oracle, and through the estimators."""

import math

import numpy as np
import pytest
from sklearn.base import clone

from oracles import squared_hinge_derivative_reference, squared_hinge_value_reference
from sklearn_dplssgd import DPLSSGDClassifier, OutputPerturbation
# Compiles the residual kernel.
from sklearn_dplssgd._backends._kernels import noisy_clipped_gradient_sum  # noqa: F401
from sklearn_dplssgd._training._losses import LOSSES, loss_code, loss_derivative, residual


@pytest.mark.parametrize("n_outputs", [1, 3])
def test_residuals_match_the_oracle(n_outputs):
    rng = np.random.default_rng(0)
    margins = rng.normal(scale=2.0, size=(60, n_outputs))
    y = (rng.choice([-1.0, 1.0], size=60) if n_outputs == 1
         else rng.integers(0, n_outputs, size=60).astype(np.float64))
    code = loss_code("squared_hinge", n_outputs)
    expected = squared_hinge_derivative_reference(margins, y, n_outputs)
    np.testing.assert_allclose(loss_derivative(None, code, margins, y), expected, rtol=1e-14)
    compiled = np.empty(n_outputs)
    for i in range(60):
        residual(code, margins[i], y[i], 0.0, compiled)
        np.testing.assert_allclose(compiled, expected[i], rtol=1e-14)
    # The oracle is the loss's derivative (central differences).
    step = 1e-6
    for k in range(n_outputs):
        shift = np.zeros(n_outputs)
        shift[k] = step
        numeric = (squared_hinge_value_reference(margins + shift, y, n_outputs)
                   - squared_hinge_value_reference(margins - shift, y, n_outputs)) / (2 * step)
        np.testing.assert_allclose(expected[:, k], numeric, atol=1e-5)


@pytest.mark.parametrize("n_outputs", [1, 4])
def test_constants_bound_the_gradient_and_the_curvature(n_outputs):
    # R bounds ||r|| ||[x, 1]|| for ||theta|| <= W; L bounds the residual's
    # Lipschitz constant times ||x||^2.
    rng = np.random.default_rng(1)
    x_norm, weight_bound = 1.3, 2.0
    bound, smoothness = LOSSES["squared_hinge"].constants(x_norm, n_outputs, 0.0,
                                                          weight_bound, None)
    margins = rng.uniform(-weight_bound * x_norm, weight_bound * x_norm, size=(500, n_outputs))
    margins *= weight_bound * x_norm / np.maximum(np.linalg.norm(margins, axis=1,
                                                                 keepdims=True), 1e-12)
    y = (rng.choice([-1.0, 1.0], size=500) if n_outputs == 1
         else rng.integers(0, n_outputs, size=500).astype(np.float64))
    r = squared_hinge_derivative_reference(margins, y, n_outputs)
    assert np.max(np.linalg.norm(r, axis=1)) * x_norm <= bound
    other = margins + rng.normal(scale=0.1, size=margins.shape)
    change = np.linalg.norm(squared_hinge_derivative_reference(other, y, n_outputs) - r, axis=1)
    assert np.all(change <= smoothness / x_norm**2 * np.linalg.norm(other - margins, axis=1)
                  + 1e-12)


def _blobs(n_classes, seed=0, n=300, d=5):
    rng = np.random.default_rng(seed)
    y = rng.integers(0, n_classes, n)
    centres = rng.normal(size=(n_classes, d))
    X = centres[y] * 0.5 + rng.normal(scale=0.2, size=(n, d))
    return np.clip(X, -1, 1), y


@pytest.mark.parametrize("n_classes", [2, 3])
def test_gradient_perturbation_trains_it(n_classes):
    X, y = _blobs(n_classes)
    clf = DPLSSGDClassifier(loss="squared_hinge", epsilon=math.inf, random_state=0).fit(X, y)
    assert clf.score(X, y) > 0.9
    with pytest.raises(AttributeError):
        clf.predict_proba(X)
    private = clone(clf).set_params(epsilon=2.0).fit(X, y)
    assert private.epsilon_ <= 2.0


def test_output_perturbation_needs_and_uses_a_weight_bound():
    X, y = _blobs(2, seed=1, n=3000)
    with pytest.raises(ValueError, match="weight_norm_bound"):
        DPLSSGDClassifier(loss="squared_hinge", mechanism="output", random_state=0).fit(X, y)
    # Without noise: the projected descent learns, inside the declared ball.
    exact = DPLSSGDClassifier(loss="squared_hinge",
                              mechanism=OutputPerturbation(weight_norm_bound=3.0),
                              epsilon=math.inf, random_state=0).fit(X, y)
    assert exact.score(X, y) > 0.9
    assert np.linalg.norm(np.hstack([exact.coef_.ravel(), exact.intercept_])) <= 3.0 + 1e-9
    # With noise: calibrated to the target, with a sensitivity that grows with
    # the bound (the gradient grows with the margin, unlike log_loss's).
    private = clone(exact).set_params(epsilon=4.0).fit(X, y)
    assert private.epsilon_ <= 4.0
    wider = clone(private).set_params(mechanism__weight_norm_bound=6.0).fit(X, y)
    assert wider.output_sensitivity_ > private.output_sensitivity_
