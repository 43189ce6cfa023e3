"""Output perturbation (Chen, Lee and Kifer, AISTATS 2019, Proposition 2).

Constants, sensitivity, accounting, audit.

The sensitivity bound is checked against the definition: two replace-one
neighbours trained with the same permutation and no noise end at most Delta
apart. The accounting is recomputed with dp-accounting and with the analytic
Gaussian mechanism (Balle and Wang 2018). An audit shows that a variant whose
sensitivity is halved is caught, and the real one is not.
"""

import dataclasses
import math

import dp_accounting
import numpy as np
import pytest
from dp_accounting import pld as dp_pld
from scipy import optimize, stats
from scipy.special import expit, logsumexp

from sklearn_dplssgd._accounting._events import PrivacyCalibration
from sklearn_dplssgd._training._losses import loss_code
from oracles import loss_derivative_reference
from sklearn_dplssgd._mechanisms.output_perturbation._accounting import (
    NoisyWeights,
    contraction_factor,
    default_step,
    plan_output_perturbation,
    sensitivity,
    smoothness_constants,
)
from sklearn_dplssgd._mechanisms.output_perturbation._descent import (
    add_output_noise,
    fixed_batches,
    train_output_perturbation,
)
from sklearn_dplssgd._mechanisms.output_perturbation._lattice import plan_on_lattice

DELTA = 1e-5
REPLACE_ONE = dp_accounting.NeighboringRelation.REPLACE_ONE

# One setting per smooth loss: (keyword arguments of the trainer).
SETTINGS = {
    "binary log_loss": dict(loss="log_loss", n_outputs=1, loss_threshold=None),
    "multinomial log_loss": dict(loss="log_loss", n_outputs=3, loss_threshold=None),
    "huber": dict(loss="huber", n_outputs=1, loss_threshold=0.5),
    "squared_error": dict(loss="squared_error", n_outputs=1, loss_threshold=None,
                          weight_norm_bound=1.5, target_bound=1.0),
}


def _noise_free(X, y, seed, **kwargs):
    """The weights before the noise: epsilon=inf, the permutation drawn from ``seed``."""
    params, mechanism = train_output_perturbation(
        X, y, rng=np.random.default_rng(seed), epsilon=math.inf, delta=DELTA, **kwargs)
    assert mechanism.noise_multiplier == 0 and not mechanism.private
    return params


def _plan(n_samples, **kwargs):
    kwargs = {key: value for key, value in kwargs.items() if key != "n_passes"}
    return plan_output_perturbation(1.0, DELTA, n_samples=n_samples, **kwargs)


# --------------------------------------------------------------------------
# Constants
# --------------------------------------------------------------------------


@pytest.mark.parametrize("loss, n_outputs, fit_intercept, extra, expected", [
    ("log_loss", 1, False, {}, (2.0, 4.0 / 4 + 0.1, 0.1)),
    ("log_loss", 1, True, {}, (math.sqrt(5), 5 / 4 + 0.1, 0.1)),
    ("log_loss", 4, True, {}, (math.sqrt(10), 5 / 2 + 0.1, 0.1)),
    ("huber", 1, True, {"loss_threshold": 0.3}, (0.3 * math.sqrt(5), 5 + 0.1, 0.1)),
    ("huber", 1, False, {"loss_threshold": 0.3}, (0.3 * 2, 4 + 0.1, 0.1)),
    ("squared_error", 1, True, {"weight_norm_bound": 3.0, "target_bound": 0.5},
     ((3 * math.sqrt(5) + 0.5) * math.sqrt(5), 5 + 0.1, 0.1)),
])
def test_constants_per_loss(loss, n_outputs, fit_intercept, extra, expected):
    # Rows clipped to 2; with an intercept the augmented rows have norm sqrt(5).
    constants = smoothness_constants(loss, n_outputs, 2.0, 0.1, fit_intercept, **extra)
    assert tuple(constants) == pytest.approx(expected, rel=1e-12)
    R, L, mu = constants
    assert (constants.gradient_bound, constants.smoothness, constants.strong_convexity) == (
        R, L, mu)


def _loss_gradient(code, params, x, y, threshold):
    """Per-row gradient of the loss (no penalty) for augmented rows: (n, K, d)."""
    margins = np.einsum("nkd,nd->nk", params, x)
    residuals = loss_derivative_reference(code, margins, y, threshold)
    return residuals[:, :, None] * x[:, None, :]


@pytest.mark.parametrize("name", list(SETTINGS))
def test_constants_bound_the_gradients_and_their_lipschitz_constant(name):
    """R and L - alpha checked on random rows, weights and targets (worst of 20000)."""
    setting = SETTINGS[name]
    loss, n_outputs, threshold = setting["loss"], setting["n_outputs"], setting["loss_threshold"]
    R, L, mu = smoothness_constants(
        loss, n_outputs, 1.0, 0.1, False, loss_threshold=threshold,
        weight_norm_bound=setting.get("weight_norm_bound"),
        target_bound=setting.get("target_bound"))
    rng = np.random.default_rng(1)
    n, d = 20000, 3
    x = rng.normal(size=(n, d))
    x /= np.linalg.norm(x, axis=1, keepdims=True)  # on the bound: the worst case
    if loss == "log_loss":
        y = rng.integers(0, max(2, n_outputs), n).astype(float)
    else:
        y = rng.choice([-1.0, 1.0], n) * setting.get("target_bound", 5.0)
    scale = setting.get("weight_norm_bound", 5.0)
    first = rng.normal(size=(n, n_outputs, d))
    first *= scale / np.linalg.norm(first, axis=(1, 2), keepdims=True)
    second = first + 0.1 * rng.normal(size=first.shape)
    second *= np.minimum(1.0, scale / np.linalg.norm(second, axis=(1, 2), keepdims=True))
    code = loss_code(loss, n_outputs)
    grad_first = _loss_gradient(code, first, x, y, threshold or 0.0)
    grad_second = _loss_gradient(code, second, x, y, threshold or 0.0)
    norms = np.linalg.norm(grad_first, axis=(1, 2))
    assert norms.max() <= R * (1 + 1e-12)
    assert norms.max() >= 0.5 * R  # the bound is of the right size
    lipschitz = (np.linalg.norm(grad_first - grad_second, axis=(1, 2))
                 / np.linalg.norm(first - second, axis=(1, 2)))
    assert lipschitz.max() <= (L - mu) * (1 + 1e-9)
    assert lipschitz.max() >= 0.5 * (L - mu)


# --------------------------------------------------------------------------
# Refusals
# --------------------------------------------------------------------------


@pytest.mark.parametrize("loss", ["hinge", "epsilon_insensitive"])
def test_non_smooth_losses_are_refused(loss):
    with pytest.raises(ValueError, match=f"loss='{loss}'.*not smooth"):
        smoothness_constants(loss, 1, 1.0, 0.1, True, loss_threshold=0.1)


@pytest.mark.parametrize("alpha", [0.0, -1.0])
def test_alpha_must_be_positive(alpha):
    with pytest.raises(ValueError, match="alpha must be > 0.*strong convexity"):
        smoothness_constants("log_loss", 1, 1.0, alpha, True)


def test_add_remove_is_refused():
    with pytest.raises(ValueError, match="replace_one.*Adding or removing"):
        NoisyWeights.calibrated(1.0, DELTA, sensitivity=0.1, neighboring="add_remove")
    with pytest.raises(ValueError, match="replace_one"):
        NoisyWeights(0.1, 1.0, neighboring="add_remove")
    with pytest.raises(ValueError, match="replace_one"):
        plan_output_perturbation(1.0, DELTA, n_samples=100, loss="log_loss", n_outputs=1,
                                 fit_intercept=True, alpha=0.1, row_norm_bound=1.0,
                                 batch_size=10, neighboring="add_remove")


@pytest.mark.parametrize("bounds", [{}, {"weight_norm_bound": 1.0}, {"target_bound": 1.0}])
def test_squared_error_needs_both_public_bounds(bounds):
    with pytest.raises(ValueError, match="squared_error.*weight_norm_bound.*target_bound"):
        smoothness_constants("squared_error", 1, 1.0, 0.1, True, **bounds)


def test_other_refusals():
    with pytest.raises(ValueError, match="weight_norm_bound is only used"):
        smoothness_constants("log_loss", 1, 1.0, 0.1, True, weight_norm_bound=2.0)
    with pytest.raises(ValueError, match="huber.*loss_threshold"):
        smoothness_constants("huber", 1, 1.0, 0.1, True)
    with pytest.raises(ValueError, match="row_norm_bound"):
        smoothness_constants("log_loss", 1, math.inf, 0.1, True)
    with pytest.raises(ValueError, match="loss='huber' has one output"):
        smoothness_constants("huber", 2, 1.0, 0.1, True, loss_threshold=0.1)
    with pytest.raises(ValueError, match="delta must be"):
        NoisyWeights.calibrated(1.0, 1.0, sensitivity=0.1)
    with pytest.raises(ValueError, match="batch_size must be at most"):
        _plan(10, loss="log_loss", n_outputs=1, fit_intercept=True, alpha=0.1,
              row_norm_bound=1.0, batch_size=11)


def test_a_step_that_does_not_contract_is_refused():
    R, L, mu = smoothness_constants("log_loss", 1, 1.0, 0.1, False)  # L = 0.35
    sensitivity(1.999 / L, R, L, mu, 10, 5)  # just inside (0, 2 / L)
    for eta in (2.0 / L, 3.0 / L):
        with pytest.raises(ValueError, match=r"eta0 = .*rho = .*0 < eta0 < 2 / L = 5\.71"):
            sensitivity(eta, R, L, mu, 10, 5)
    with pytest.raises(ValueError, match="eta"):
        sensitivity(0.0, R, L, mu, 10, 5)
    with pytest.raises(ValueError, match="eta0"):
        X = np.zeros((20, 2))
        train_output_perturbation(
            X, np.zeros(20), loss="log_loss", n_outputs=1, fit_intercept=False, alpha=0.1,
            row_norm_bound=1.0, eta=6.0, batch_size=5, n_passes=1,
            rng=np.random.default_rng(0), loss_threshold=None, epsilon=1.0, delta=DELTA)


# --------------------------------------------------------------------------
# The sensitivity formula
# --------------------------------------------------------------------------


def test_sensitivity_formula_and_the_papers_special_case():
    R, L, mu = 2.0, 3.0, 0.2
    for eta, m in [(0.1, 1), (0.5, 7), (2.0 / (L + mu), 30), (0.6, 200)]:
        rho = max(abs(1 - eta * mu), abs(1 - eta * L))
        assert contraction_factor(eta, L, mu) == pytest.approx(rho)
        assert sensitivity(eta, R, L, mu, 16, m) == pytest.approx(
            2 * eta * R / (16 * (1 - rho**m)), rel=1e-12)
    # Proposition 2: m = 1 and eta = 2 / (L + mu) give 2 R / (n mu).
    eta = default_step(L, mu)
    assert eta == pytest.approx(2 / (L + mu))
    assert sensitivity(eta, R, L, mu, 500, 1) == pytest.approx(2 * R / (500 * mu), rel=1e-12)
    # The default step minimises rho.
    grid = np.linspace(1e-3, 2 / L - 1e-3, 2001)
    assert contraction_factor(eta, L, mu) <= min(contraction_factor(e, L, mu) for e in grid)


def _worst_case_huber(n, d, batches):
    """Neighbours whose difference Proposition 2 bounds tightly.

    The differing row is alone on feature 0 and its targets are so far that
    Huber's derivative stays clipped at +h and -h: every step on its batch
    adds exactly 2 eta R / b along feature 0, where only the penalty
    contracts (by 1 - eta mu = rho at the default step). It sits in the last
    batch, so nothing contracts it after the last pass.
    """
    rng = np.random.default_rng(3)
    X = np.zeros((n, d))
    X[:, 1:] = rng.normal(size=(n, d - 1))
    y = rng.normal(size=n) * 0.5
    row = batches[-1, -1]
    X[row] = 0.0
    X[row, 0] = 1.0
    y_far, y_other = y.copy(), y.copy()
    y_far[row], y_other[row] = 1e3, -1e3
    return X, y_far, X.copy(), y_other


@pytest.mark.parametrize("n_passes", [1, 3, 60])
def test_sensitivity_is_tight_for_the_worst_case_huber_pair(n_passes):
    n, d, b, seed = 40, 5, 10, 7
    kwargs = dict(SETTINGS["huber"], fit_intercept=False, alpha=0.1, row_norm_bound=1.0,
                  eta=None, batch_size=b, n_passes=n_passes)
    batches = fixed_batches(np.random.default_rng(seed), n, b)
    X1, y1, X2, y2 = _worst_case_huber(n, d, batches)
    distance = np.linalg.norm(_noise_free(X1, y1, seed, **kwargs)
                              - _noise_free(X2, y2, seed, **kwargs))
    plan = _plan(n, **kwargs)
    R, L, mu = plan.constants
    rho, m = contraction_factor(plan.eta, L, mu), plan.n_batches
    # The difference after k passes is the partial geometric sum of the proof.
    expected = 2 * plan.eta * R / b * sum(rho ** (i * m) for i in range(n_passes))
    assert distance == pytest.approx(expected, rel=1e-9)
    assert distance <= plan.mechanism.sensitivity * (1 + 1e-12)
    if n_passes == 60:
        assert distance >= 0.999999 * plan.mechanism.sensitivity


def _random_neighbours(name, n, d, rng, row):
    """A random data set and a copy whose row ``row`` is replaced (rows up to norm 3)."""
    setting = SETTINGS[name]
    X = rng.normal(size=(n, d)) * rng.uniform(0.2, 1.5, size=(n, 1))
    if setting["loss"] == "log_loss":
        classes = max(2, setting["n_outputs"])
        y = rng.integers(0, classes, n).astype(float)
    else:
        y = rng.normal(size=n) * 2.0  # squared_error: beyond the bound, clipped
    X2, y2 = X.copy(), y.copy()
    if rng.random() < 0.5:  # an adversarial-looking replacement: reversed, long
        X2[row] = -3.0 * X[row] / np.linalg.norm(X[row])
        if setting["loss"] == "log_loss":
            y2[row] = (y[row] + 1) % max(2, setting["n_outputs"])  # another class
        else:
            y2[row] = -y[row]
    else:
        X2[row] = rng.normal(size=d)
        y2[row] = y[rng.integers(n)]
    return X, y, X2, y2


@pytest.mark.parametrize("name", list(SETTINGS))
@pytest.mark.parametrize("fit_intercept", [False, True])
def test_sensitivity_bounds_random_neighbours(name, fit_intercept):
    """||w - w'|| <= Delta for random replace-one neighbours; Delta not vacuous."""
    n, d, b, seed = 36, 4, 8, 11  # 4 batches of 8, 4 rows left out
    kwargs = dict(SETTINGS[name], fit_intercept=fit_intercept, alpha=0.1,
                  row_norm_bound=1.0, eta=None, batch_size=b, n_passes=25)
    plan = _plan(n, **kwargs)
    batches = fixed_batches(np.random.default_rng(seed), n, b)
    rng = np.random.default_rng(5)
    ratios = []
    for trial in range(12):
        # The differing row in each batch in turn, the last batch most often.
        row = batches[min(trial % 6, 3), trial % b]
        X1, y1, X2, y2 = _random_neighbours(name, n, d, rng, row)
        distance = np.linalg.norm(_noise_free(X1, y1, seed, **kwargs)
                                  - _noise_free(X2, y2, seed, **kwargs))
        ratios.append(distance / plan.mechanism.sensitivity)
    assert max(ratios) <= 1.0 + 1e-12
    assert max(ratios) >= 1.0 / 20.0, ratios


def test_rows_left_out_by_the_permutation_change_nothing():
    n, b, seed = 43, 10, 2  # 4 batches of 10, 3 rows never used
    kwargs = dict(SETTINGS["binary log_loss"], fit_intercept=True, alpha=0.1,
                  row_norm_bound=1.0, eta=None, batch_size=b, n_passes=3)
    rng = np.random.default_rng(0)
    X, y = rng.normal(size=(n, 3)), rng.integers(0, 2, n).astype(float)
    used = fixed_batches(np.random.default_rng(seed), n, b)
    # The permutation's first 40 rows, in order, in 4 batches; its last 3 left out.
    permutation = np.random.default_rng(seed).permutation(n)
    np.testing.assert_array_equal(used, permutation[:40].reshape(4, 10))
    left_out = permutation[40:]
    X2, y2 = X.copy(), y.copy()
    X2[left_out] *= -100.0
    y2[left_out] = 1.0 - y2[left_out]
    np.testing.assert_array_equal(_noise_free(X, y, seed, **kwargs),
                                  _noise_free(X2, y2, seed, **kwargs))


# --------------------------------------------------------------------------
# The descent itself
# --------------------------------------------------------------------------


def _penalised_minimiser(X, y, objective_and_gradient, n_params):
    result = optimize.minimize(objective_and_gradient, np.zeros(n_params), jac=True,
                               method="L-BFGS-B", options={"gtol": 1e-12, "ftol": 1e-15})
    return result.x


def test_full_batch_descent_reaches_the_penalised_minimiser():
    """b = n: gradient descent on mean loss + alpha/2 ||(w, b)||^2 (intercept penalised)."""
    rng = np.random.default_rng(4)
    n, d, alpha, bound = 120, 3, 0.05, 1.0
    X = rng.normal(size=(n, d))
    y = (X[:, 0] + 0.5 * rng.normal(size=n) > 0).astype(float)
    clipped = X / np.maximum(1.0, np.linalg.norm(X, axis=1, keepdims=True) / bound)
    augmented = np.hstack([clipped, np.ones((n, 1))])

    def logistic(theta):
        z = augmented @ theta
        value = np.mean(np.logaddexp(0, z) - y * z) + alpha / 2 * theta @ theta
        return value, augmented.T @ (expit(z) - y) / n + alpha * theta

    expected = _penalised_minimiser(X, y, logistic, d + 1)
    params = _noise_free(X, y, 0, **SETTINGS["binary log_loss"], fit_intercept=True,
                         alpha=alpha, row_norm_bound=bound, eta=None, batch_size=n,
                         n_passes=400)
    np.testing.assert_allclose(params[0], expected, atol=1e-7)


def test_multinomial_descent_reaches_the_penalised_minimiser():
    rng = np.random.default_rng(6)
    n, d, K, alpha = 90, 2, 3, 0.1
    X = rng.normal(size=(n, d)) * 0.5
    assert np.linalg.norm(X, axis=1).max() < 2.0  # no row is clipped
    y = rng.integers(0, K, n).astype(float)
    augmented = np.hstack([X, np.ones((n, 1))])
    onehot = np.eye(K)[y.astype(int)]

    def multinomial(theta):
        W = theta.reshape(K, d + 1)
        z = augmented @ W.T
        log_norm = logsumexp(z, axis=1)
        value = np.mean(log_norm - (z * onehot).sum(1)) + alpha / 2 * theta @ theta
        probabilities = np.exp(z - log_norm[:, None])
        return value, ((probabilities - onehot).T @ augmented / n + alpha * W).ravel()

    expected = _penalised_minimiser(X, y, multinomial, K * (d + 1)).reshape(K, d + 1)
    params = _noise_free(X, y, 0, **SETTINGS["multinomial log_loss"], fit_intercept=True,
                         alpha=alpha, row_norm_bound=2.0, eta=None, batch_size=n,
                         n_passes=300)
    np.testing.assert_allclose(params, expected, atol=1e-7)


def test_squared_error_is_ridge_inside_the_ball_and_projected_outside():
    rng = np.random.default_rng(8)
    n, d, alpha = 80, 3, 0.2
    X = rng.normal(size=(n, d)) * 0.4
    assert np.linalg.norm(X, axis=1).max() < 2.0  # no row is clipped
    y = np.clip(X @ [0.5, -0.3, 0.2] + 0.1 + 0.1 * rng.normal(size=n), -1, 1)
    augmented = np.hstack([X, np.ones((n, 1))])
    # Ridge with the intercept penalised too.
    ridge = np.linalg.solve(augmented.T @ augmented / n + alpha * np.eye(d + 1),
                            augmented.T @ y / n)
    common = dict(loss="squared_error", n_outputs=1, loss_threshold=None, fit_intercept=True,
                  alpha=alpha, row_norm_bound=2.0, eta=None, batch_size=n, n_passes=300,
                  target_bound=1.0)
    params = _noise_free(X, y, 0, weight_norm_bound=10.0, **common)
    np.testing.assert_allclose(params[0], ridge, atol=1e-9)
    small = 0.5 * np.linalg.norm(ridge)
    projected = _noise_free(X, y, 0, weight_norm_bound=small, **common)
    assert np.linalg.norm(projected) <= small * (1 + 1e-12)
    # Targets beyond the bound are clipped to it.
    np.testing.assert_array_equal(
        _noise_free(X, 5.0 * np.sign(y), 0, weight_norm_bound=10.0, **common),
        _noise_free(X, np.sign(y), 0, weight_norm_bound=10.0, **common))


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_user_data_is_not_modified_and_layout(dtype):
    rng = np.random.default_rng(9)
    X = (rng.normal(size=(50, 4)) * 5).astype(dtype)  # every row beyond the bound
    y = rng.normal(size=50) * 3
    X_before, y_before = X.copy(), y.copy()
    for fit_intercept in (True, False):
        params, mechanism = train_output_perturbation(
            X, y, loss="squared_error", n_outputs=1, fit_intercept=fit_intercept, alpha=0.1,
            row_norm_bound=1.0, eta=None, batch_size=10, n_passes=2,
            rng=np.random.default_rng(0), loss_threshold=None, epsilon=1.0, delta=DELTA,
            weight_norm_bound=1.0, target_bound=1.0)
        assert params.shape == (1, 5) and params.dtype == dtype
        assert mechanism.private and (params[0, 4] != 0) == fit_intercept
    np.testing.assert_array_equal(X, X_before)
    np.testing.assert_array_equal(y, y_before)


def test_targets_outside_the_encoding_are_refused():
    X = np.zeros((20, 2))
    common = dict(fit_intercept=True, alpha=0.1, row_norm_bound=1.0, eta=None, batch_size=5,
                  n_passes=1, rng=np.random.default_rng(0), loss_threshold=None, epsilon=1.0,
                  delta=DELTA)
    with pytest.raises(ValueError, match=r"binary log_loss needs y encoded in \{0, 1\}"):
        train_output_perturbation(X, np.full(20, 2.0), loss="log_loss", n_outputs=1, **common)
    with pytest.raises(ValueError, match="multiclass log_loss needs y encoded in 0 .. 2"):
        train_output_perturbation(X, np.full(20, 3.0), loss="log_loss", n_outputs=3, **common)


# --------------------------------------------------------------------------
# Accounting
# --------------------------------------------------------------------------


def _analytic_gaussian_epsilon(std_over_sensitivity, delta):
    """Exact epsilon of the Gaussian mechanism (Balle and Wang 2018, Theorem 8)."""
    s = std_over_sensitivity

    def excess_delta(eps):
        return (stats.norm.cdf(0.5 / s - eps * s)
                - math.exp(eps) * stats.norm.cdf(-0.5 / s - eps * s) - delta)

    return optimize.brentq(excess_delta, 0.0, 200.0, xtol=1e-14, rtol=1e-14)


@pytest.mark.parametrize("epsilon, delta", [(0.1, 1e-5), (1.0, 1e-5), (3.0, 1e-6)])
def test_epsilon_recomputed_from_the_event_and_analytically(epsilon, delta):
    mechanism, calibration = NoisyWeights.calibrated(epsilon, delta, sensitivity=0.37)
    assert isinstance(calibration, PrivacyCalibration)
    assert calibration.noise_multiplier == mechanism.noise_multiplier
    assert calibration.neighboring == mechanism.neighboring == "replace_one"
    assert mechanism.noise_std == pytest.approx(mechanism.noise_multiplier * 0.37)
    assert epsilon * (1 - 1e-3) <= calibration.epsilon <= epsilon
    assert mechanism.epsilon(delta) == calibration.epsilon
    event = mechanism.dp_event()
    assert event == dp_accounting.GaussianDpEvent(2 * mechanism.noise_multiplier)
    interval = epsilon / 1e4  # independent of the library's choice
    recomputed = dp_pld.PLDAccountant(REPLACE_ONE, value_discretization_interval=interval).compose(
        event).get_epsilon(delta)
    assert recomputed == pytest.approx(calibration.epsilon, rel=1e-4)
    # The Gaussian mechanism with sensitivity Delta and std z Delta.
    exact = _analytic_gaussian_epsilon(mechanism.noise_multiplier, delta)
    assert exact == pytest.approx(calibration.epsilon, rel=1e-4)
    # Without the factor 2 the accountant would read a sensitivity 2 Delta.
    halved = dp_pld.PLDAccountant(REPLACE_ONE, value_discretization_interval=interval).compose(
        dp_accounting.GaussianDpEvent(mechanism.noise_multiplier)).get_epsilon(delta)
    assert halved == pytest.approx(
        _analytic_gaussian_epsilon(mechanism.noise_multiplier / 2, delta), rel=1e-4)
    assert halved > 1.8 * exact


def test_non_private_and_seeded_mechanisms():
    mechanism, calibration = NoisyWeights.calibrated(math.inf, DELTA, sensitivity=0.2)
    assert mechanism.noise_multiplier == 0 and calibration.epsilon == math.inf
    assert not mechanism.private and mechanism.epsilon(DELTA) == math.inf
    assert mechanism.dp_event() == dp_accounting.NonPrivateDpEvent()
    private, _ = NoisyWeights.calibrated(1.0, DELTA, sensitivity=0.2)
    seeded = private.seeded_copy()
    assert private.private and not seeded.private
    assert seeded.dp_event() == dp_accounting.NonPrivateDpEvent()
    assert dataclasses.replace(seeded, seeded=False) == private


def test_the_mechanism_is_planned_from_public_quantities_only():
    kwargs = dict(SETTINGS["multinomial log_loss"], fit_intercept=True, alpha=0.01,
                  row_norm_bound=1.0, eta=None, batch_size=16, n_passes=2, epsilon=0.5,
                  delta=DELTA)
    plan = plan_on_lattice(plan_output_perturbation(n_samples=100, **{
        key: value for key, value in kwargs.items() if key != "n_passes"}), 5)
    rng = np.random.default_rng(0)
    mechanisms = set()
    for scale in (0.01, 100.0):
        X = rng.normal(size=(100, 5)) * scale
        y = rng.integers(0, 3, 100).astype(float)
        _, mechanism = train_output_perturbation(X, y, rng=rng, **kwargs)
        mechanisms.add(mechanism)
    assert mechanisms == {plan.mechanism}
    _, seeded = train_output_perturbation(X, y, rng=rng, seeded=True, **kwargs)
    assert seeded == plan.mechanism.seeded_copy()


def test_noise_std_of_the_release():
    """Release minus the noise-free weights (same permutation) has std z Delta."""
    rng = np.random.default_rng(10)
    n, d = 60, 300
    X, y = rng.normal(size=(n, d)), rng.integers(0, 3, n).astype(float)
    kwargs = dict(SETTINGS["multinomial log_loss"], fit_intercept=True, alpha=0.1,
                  row_norm_bound=1.0, eta=None, batch_size=20, n_passes=2)
    noise = []
    for seed in range(12):
        released, mechanism = train_output_perturbation(
            X, y, rng=np.random.default_rng(seed), epsilon=1.0, delta=DELTA, **kwargs)
        noise.append((released - _noise_free(X, y, seed, **kwargs)).ravel())
    noise = np.concatenate(noise) / mechanism.noise_std  # 12 * 3 * 301 = 10836 values
    assert abs(noise.mean()) < 4 / math.sqrt(noise.size)
    assert noise.std() == pytest.approx(1.0, abs=4 / math.sqrt(2 * noise.size))
    assert stats.kstest(noise, "norm").pvalue > 1e-3


# --------------------------------------------------------------------------
# Audit: a halved sensitivity is caught
# --------------------------------------------------------------------------


def _epsilon_lower_bound(statistic_first, statistic_second, threshold, delta, confidence):
    """Clopper-Pearson lower bound on epsilon from the test "statistic > threshold".

    (epsilon, delta)-DP implies P1(S) <= exp(epsilon) P2(S) + delta for the
    event S, so epsilon >= log((P1(S) - delta) / P2(S)); P1 is bounded below
    and P2 above, each at one-sided level (1 - confidence) / 2.
    """
    n1, n2 = statistic_first.size, statistic_second.size
    k1, k2 = int((statistic_first > threshold).sum()), int((statistic_second > threshold).sum())
    level = (1 - confidence) / 2
    p1_low = stats.beta.ppf(level, k1, n1 - k1 + 1) if k1 > 0 else 0.0
    p2_high = stats.beta.ppf(1 - level, k2 + 1, n2 - k2) if k2 < n2 else 1.0
    if p1_low <= delta:
        return 0.0
    return math.log((p1_low - delta) / p2_high)


def test_audit_catches_a_halved_sensitivity():
    """The worst-case Huber pair, 400000 releases each, threshold test.

    The noise-free weights of the two neighbours are computed once (the
    descent is deterministic given the permutation); the releases differ in
    their noise only. The statistic is the release projected on the
    direction between the two weight vectors, in units of the noise std; the
    threshold (3) is fixed in advance.
    """
    n, d, b, seed, epsilon = 40, 5, 10, 7, 1.0
    kwargs = dict(SETTINGS["huber"], fit_intercept=False, alpha=0.1, row_norm_bound=1.0,
                  eta=None, batch_size=b, n_passes=60)
    X1, y1, X2, y2 = _worst_case_huber(n, d, fixed_batches(np.random.default_rng(seed), n, b))
    first, second = _noise_free(X1, y1, seed, **kwargs), _noise_free(X2, y2, seed, **kwargs)
    direction = (first - second) / np.linalg.norm(first - second)
    delta_w = _plan(n, **kwargs).mechanism.sensitivity
    correct, calibration = NoisyWeights.calibrated(epsilon, DELTA, sensitivity=delta_w)
    broken, _ = NoisyWeights.calibrated(epsilon, DELTA, sensitivity=delta_w / 2)
    assert broken.epsilon(DELTA) == correct.epsilon(DELTA) <= epsilon  # same claim
    n_releases = 400_000
    bounds = {}
    for name, mechanism in (("correct", correct), ("broken", broken)):
        rng = np.random.default_rng(12)
        statistics = []
        for params in (first, second):
            # The real-valued mechanism the calibration is for (a model: no fit
            # releases floating-point noise).
            releases = params + mechanism.noise_std * rng.standard_normal(
                (n_releases,) + params.shape)
            statistics.append(np.einsum("nkd,kd->n", releases - second, direction)
                              / mechanism.noise_std)
        bounds[name] = _epsilon_lower_bound(*statistics, threshold=3.0, delta=DELTA,
                                            confidence=0.95)
    assert bounds["broken"] > calibration.epsilon, bounds
    assert bounds["correct"] < calibration.epsilon, bounds


# --------------------------------------------------------------------------
# The release on the lattice: integers plus exactly sampled integer noise
# --------------------------------------------------------------------------


def _rounded_gaussian_bins(scale, edges):
    """P(round(s G) in [a, b]) for consecutive integer bins [edges[i], edges[i + 1] - 1]."""
    cdf = stats.norm.cdf((np.asarray(edges, dtype=float) - 0.5) / scale)
    return np.diff(cdf)


def _chi_square_pvalue(values, scale, edges):
    """Chi-square of ``values`` against the rounded Gaussian, tails pooled into end bins."""
    edges = np.concatenate([[-2 ** 62], edges, [2 ** 62]])
    counts = np.histogram(values, bins=np.asarray(edges, dtype=float) - 0.5)[0]
    expected = _rounded_gaussian_bins(scale, edges) * values.size
    return stats.chisquare(counts, expected * counts.sum() / expected.sum()).pvalue


@pytest.mark.parametrize("scale", [1, 3, 40])
def test_the_lattice_noise_has_the_rounded_gaussian_law(scale):
    mechanism = NoisyWeights(sensitivity=1.0, noise_multiplier=1.0, grid_exponent=-3,
                             grid_scale=scale)
    released = add_output_noise(np.zeros((25_000, 2, 3)), mechanism,
                                np.random.default_rng(scale), fit_intercept=False)
    assert (released[..., -1] == 0).all()  # no intercept: the constant 0 stays 0
    noise = released[..., :-1].ravel() * 8.0  # gamma = 2**-3: integers again, exactly
    np.testing.assert_array_equal(noise, np.round(noise))
    edges = np.arange(-3 * scale, 3 * scale + 1, max(1, scale // 4))
    assert _chi_square_pvalue(noise, scale, edges) > 1e-3
    # The test can fail: the same draws against a 10 % wider law are refuted.
    assert _chi_square_pvalue(noise, 1.1 * scale, edges) < 1e-6


def test_the_planned_lattice_noise_has_the_law_at_its_own_scale():
    kwargs = dict(SETTINGS["binary log_loss"], fit_intercept=True, alpha=0.1,
                  row_norm_bound=1.0, batch_size=10)
    plan = plan_on_lattice(_plan(100, **kwargs), 9)
    mechanism, scale = plan.mechanism, plan.mechanism.grid_scale
    assert 2 ** 20 < scale <= 2 ** 52
    released = add_output_noise(np.zeros((4_000, 1, 10)), mechanism,
                                np.random.default_rng(0), fit_intercept=True)
    noise = np.ldexp(released.ravel(), -mechanism.grid_exponent)
    np.testing.assert_array_equal(noise, np.round(noise))
    edges = np.round(np.linspace(-3, 3, 25) * scale).astype(np.int64)
    assert _chi_square_pvalue(noise, scale, edges) > 1e-3


def test_the_release_is_the_rounded_weights_plus_the_integer_noise():
    mechanism = NoisyWeights(sensitivity=1.0, noise_multiplier=1.0, grid_exponent=-10,
                             grid_scale=50)
    weights = np.random.default_rng(1).normal(size=(2, 5))
    released = add_output_noise(weights, mechanism, np.random.default_rng(4),
                                fit_intercept=True)
    noise_only = add_output_noise(np.zeros_like(weights), mechanism,
                                  np.random.default_rng(4), fit_intercept=True)
    # The same words give the same noise: the release is round(w / gamma) + noise.
    np.testing.assert_array_equal(released, np.ldexp(np.rint(np.ldexp(weights, 10)), -10)
                                  + noise_only)


@pytest.mark.parametrize("name", list(SETTINGS))
@pytest.mark.parametrize("fit_intercept", [False, True])
def test_released_coefficients_are_gamma_times_integers(name, fit_intercept):
    rng = np.random.default_rng(2)
    X = rng.normal(size=(80, 6))
    setting = SETTINGS[name]
    y = (rng.integers(0, max(2, setting["n_outputs"]), 80) if setting["loss"] == "log_loss"
         else rng.normal(size=80)).astype(float)
    released, mechanism = train_output_perturbation(
        X, y, rng=rng, epsilon=1.0, delta=DELTA, fit_intercept=fit_intercept, alpha=0.1,
        row_norm_bound=1.0, eta=None, batch_size=16, n_passes=3, **setting)
    gamma = mechanism.grid_step
    assert gamma == 2.0 ** mechanism.grid_exponent
    integers = released / gamma
    np.testing.assert_array_equal(integers, np.round(integers))
    assert np.abs(integers).max() < 2 ** 53
    if not fit_intercept:
        assert (released[:, -1] == 0).all()


def test_the_lattice_mechanism_is_accounted_within_a_thousandth_of_the_continuous():
    kwargs = dict(SETTINGS["multinomial log_loss"], fit_intercept=True, alpha=0.05,
                  row_norm_bound=1.0, batch_size=25)
    continuous = _plan(500, **kwargs)
    plan = plan_on_lattice(continuous, 30)
    lattice, mechanism = plan.lattice, plan.mechanism
    z, delta_w = continuous.mechanism.noise_multiplier, continuous.mechanism.sensitivity
    gamma = mechanism.grid_step
    # gamma: the largest power of two with Delta / gamma >= 2**20.
    assert 2 ** 20 <= delta_w / gamma < 2 ** 21
    # Delta_lat covers Delta, the two roundings and twice the float allowance.
    n_released = 3 * 31
    assert lattice.lattice_sensitivity >= (delta_w + 2 * lattice.allowance) / gamma + math.sqrt(
        n_released)
    assert lattice.lattice_sensitivity == pytest.approx(
        delta_w / gamma + math.sqrt(n_released), rel=1e-9)
    assert mechanism.grid_scale == math.ceil(z * lattice.lattice_sensitivity)
    assert mechanism.noise_multiplier <= mechanism.grid_scale / lattice.lattice_sensitivity
    assert mechanism.noise_multiplier >= z
    assert mechanism.sensitivity == gamma * lattice.lattice_sensitivity
    # The event, recomputed with dp-accounting's own PLD accountant.
    event = mechanism.dp_event()
    assert event == dp_accounting.GaussianDpEvent(2 * mechanism.noise_multiplier)
    accountant = dp_accounting.pld.PLDAccountant(REPLACE_ONE)
    recomputed = accountant.compose(event).get_epsilon(DELTA)
    assert plan.calibration.epsilon == pytest.approx(recomputed, rel=1e-3)
    assert plan.calibration.epsilon <= continuous.calibration.epsilon <= 1.0
    assert plan.calibration.epsilon == pytest.approx(continuous.calibration.epsilon, rel=1e-3)
    assert plan.calibration.noise_multiplier == mechanism.noise_multiplier
    # A plan is put on the lattice once, for one number of features.
    assert plan_on_lattice(plan, 30) is plan
    with pytest.raises(ValueError, match="another number of features"):
        plan_on_lattice(plan, 31)


def _descent_oracle(X, y, plan, n_passes, seed, dtype):
    """The binary log_loss descent of the plan in ``dtype`` (NumPy, no intercept)."""
    X = np.asarray(X, dtype=dtype)
    norms = np.sqrt((X * X).sum(axis=1))
    X = X * np.minimum(dtype(1), dtype(plan.row_norm_bound) / norms)[:, None]
    batches = fixed_batches(np.random.default_rng(seed), X.shape[0], plan.batch_size)
    w = np.zeros(X.shape[1], dtype=dtype)
    eta, alpha, b = dtype(plan.eta), dtype(plan.alpha), dtype(plan.batch_size)
    for _ in range(n_passes):
        for rows in batches:
            residuals = dtype(1) / (dtype(1) + np.exp(-(X[rows] @ w))) - y[rows].astype(dtype)
            w = (dtype(1) - eta * alpha) * w - (eta / b) * (residuals @ X[rows])
    return w


def test_the_float_allowance_bounds_the_descents_rounding_error():
    """The float64 descent is within E of an extended-precision one; float32 is not."""
    rng = np.random.default_rng(6)
    n, d, seed, n_passes = 96, 20, 3, 30
    X = rng.normal(size=(n, d)) * 0.4
    y = (X[:, 0] + 0.3 * rng.normal(size=n) > 0).astype(float)
    kwargs = dict(SETTINGS["binary log_loss"], fit_intercept=False, alpha=0.02,
                  row_norm_bound=1.0, batch_size=16)
    plan = plan_on_lattice(_plan(n, **kwargs), d)
    allowance = plan.lattice.allowance
    float64 = _noise_free(X, y, seed, eta=None, n_passes=n_passes, **kwargs)[0, :d]
    extended = _descent_oracle(X, y, plan, n_passes, seed, np.longdouble)
    np.testing.assert_allclose(float64, extended.astype(np.float64), rtol=1e-9)
    assert np.linalg.norm((float64 - extended).astype(np.float64)) <= allowance
    # A descent in float32 (a broken allowance's case) is far outside it.
    float32 = _descent_oracle(X, y, plan, n_passes, seed, np.float32)
    assert np.linalg.norm(float32.astype(np.float64) - float64) > 100 * allowance
    # And the allowance is small against the sensitivity (little extra noise).
    assert allowance < 1e-6 * plan.mechanism.sensitivity


def test_rounded_neighbours_are_within_the_lattice_sensitivity():
    """||R(D) - R(D')|| <= Delta_lat on the worst-case Huber pair (near Delta)."""
    n, d, b, seed = 40, 5, 10, 7
    kwargs = dict(SETTINGS["huber"], fit_intercept=False, alpha=0.1, row_norm_bound=1.0,
                  eta=None, batch_size=b, n_passes=60)
    X1, y1, X2, y2 = _worst_case_huber(n, d, fixed_batches(np.random.default_rng(seed), n, b))
    plan = plan_on_lattice(_plan(n, **kwargs), d)
    exponent = plan.mechanism.grid_exponent
    points = [np.rint(np.ldexp(_noise_free(X, y, seed, **kwargs), -exponent))
              for X, y in ((X1, y1), (X2, y2))]
    distance = np.linalg.norm(points[0] - points[1])
    assert distance <= plan.lattice.lattice_sensitivity
    # Not vacuous: the pair moves the rounded weights by nearly all of it.
    assert distance >= 0.999 * plan.lattice.lattice_sensitivity - math.sqrt(d)


def test_audit_catches_a_halved_lattice_scale():
    """The threshold audit above, on the lattice release: half the scale ``s`` is refuted."""
    n, d, b, seed, epsilon = 40, 5, 10, 7, 1.0
    kwargs = dict(SETTINGS["huber"], fit_intercept=False, alpha=0.1, row_norm_bound=1.0,
                  eta=None, batch_size=b, n_passes=60)
    X1, y1, X2, y2 = _worst_case_huber(n, d, fixed_batches(np.random.default_rng(seed), n, b))
    first, second = _noise_free(X1, y1, seed, **kwargs), _noise_free(X2, y2, seed, **kwargs)
    direction = (first - second) / np.linalg.norm(first - second)
    plan = plan_on_lattice(_plan(n, **kwargs), d)
    correct = plan.mechanism
    broken = dataclasses.replace(correct, grid_scale=math.ceil(correct.grid_scale / 2))
    assert broken.epsilon(DELTA) == correct.epsilon(DELTA) == plan.calibration.epsilon
    n_releases = 400_000
    bounds = {}
    for name, mechanism in (("correct", correct), ("broken", broken)):
        rng = np.random.default_rng(12)
        statistics = []
        for params in (first, second):
            releases = add_output_noise(np.broadcast_to(params, (n_releases,) + params.shape),
                                        mechanism, rng, fit_intercept=False)
            statistics.append(np.einsum("nkd,kd->n", releases - second, direction)
                              / mechanism.noise_std)
        bounds[name] = _epsilon_lower_bound(*statistics, threshold=3.0, delta=DELTA,
                                            confidence=0.95)
    assert bounds["broken"] > epsilon, bounds
    assert bounds["correct"] < epsilon, bounds
