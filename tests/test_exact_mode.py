"""mechanism="gradient_exact": integer gradient sums plus exact integer noise.

The rounded Gaussian by default, accounted as the ordinary mode;
``"gradient_exact_discrete"``: the discrete Gaussian, with its RDP bound.
"""

import math
import warnings

import dp_accounting
import numpy as np
import pytest
import scipy.sparse as sp
from dp_accounting import pld as dp_pld
from dp_accounting import rdp as dp_rdp

from sklearn_dplssgd import DPLSSGDClassifier, DPLSSGDRegressor, PrivacyLedger
from sklearn_dplssgd.accounting import calibrate_noise, event_epsilon
from sklearn_dplssgd.accounting._discrete_gaussian_rdp import EXACT_NOISE_ORDERS
from sklearn_dplssgd.backends import (
    ChaChaWords, DiscreteGaussianScale, ExactNoise, ExactNoiseTraining, RoundedGaussianScale,
    factored_norm_bound,
)
from sklearn_dplssgd.mechanisms import (
    ExactGradientPerturbation, RoundedGaussianGradientPerturbation,
)
from sklearn_dplssgd.training import TrainingPlan, loss_code


@pytest.fixture(scope="module")
def data():
    rng = np.random.default_rng(7)
    X = rng.uniform(-1, 1, (600, 6))
    return X, (X[:, 0] + 0.5 * X[:, 1] > 0).astype(int)


def fit(X, y, mechanism="gradient_exact", **settings):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return DPLSSGDClassifier(mechanism=mechanism, classes=[0, 1], max_iter=3,
                                 **settings).fit(X, y)


@pytest.mark.parametrize("mechanism", ["gradient_exact", "gradient_exact_discrete"])
def test_fit_meets_the_target_and_learns(data, mechanism):
    X, y = data
    model = fit(X, y, mechanism, epsilon=2.0)
    assert model.epsilon_ <= 2.0
    assert model.epsilon_ > 1.9  # calibrated, not overly noisy
    assert model.score(X, y) > 0.7
    assert isinstance(model.dp_event_, dp_accounting.DpEvent)


def test_discrete_dp_event_recomputes_epsilon_and_matches_dp_accounting_at_integer_orders(
        data):
    X, y = data
    model = fit(X, y, "gradient_exact_discrete", epsilon=1.0, neighboring="add_remove",
                public_n_samples=len(X))
    assert event_epsilon(model.dp_event_, model.delta_, "add_remove") == model.epsilon_
    mechanism = ExactGradientPerturbation.calibrated(
        1.0, model.delta_, sample_rate=model.sample_rate_, n_steps=model.n_steps_,
        neighboring="add_remove", clip_norm=1.0, n_coordinates=X.shape[1] + 1)[0]
    bound = factored_norm_bound(mechanism.residual_bits, mechanism.row_bits, 1, X.shape[1] + 1)
    assert bound == mechanism.sensitivity_squared
    # The bound is the sampled Gaussian's RDP at multiplier s / sqrt(B),
    # at integer orders only: dp-accounting's own accountant restricted to them.
    accountant = dp_rdp.RdpAccountant(orders=list(EXACT_NOISE_ORDERS))
    multiplier = math.sqrt(mechanism.scale.variance_at_most() / bound)
    accountant.compose(dp_accounting.SelfComposedDpEvent(dp_accounting.PoissonSampledDpEvent(
        model.sample_rate_, dp_accounting.GaussianDpEvent(multiplier)), model.n_steps_))
    assert model.epsilon_ == pytest.approx(accountant.get_epsilon(model.delta_), rel=1e-6)
    # Never below dp-accounting's continuous answer with all its orders.
    full = dp_rdp.RdpAccountant()
    full.compose(dp_accounting.SelfComposedDpEvent(dp_accounting.PoissonSampledDpEvent(
        model.sample_rate_, dp_accounting.GaussianDpEvent(multiplier)), model.n_steps_))
    assert model.epsilon_ >= full.get_epsilon(model.delta_) - 1e-12


@pytest.mark.parametrize("neighboring", ["replace_one", "add_remove"])
def test_rounded_dp_event_is_the_ordinary_event_at_the_effective_multiplier(data, neighboring):
    X, y = data
    extra = {"public_n_samples": len(X)} if neighboring == "add_remove" else {}
    model = fit(X, y, epsilon=1.0, neighboring=neighboring, **extra)
    multiplier = model.noise_multiplier_
    assert model.dp_event_ == dp_accounting.SelfComposedDpEvent(
        dp_accounting.PoissonSampledDpEvent(
            model.sample_rate_, dp_accounting.GaussianDpEvent(multiplier)), model.n_steps_)
    # dp-accounting's PLD accountant on a fine grid, independent of the
    # library's interval, states epsilon_ again.
    relation = {"replace_one": dp_accounting.NeighboringRelation.REPLACE_ONE,
                "add_remove": dp_accounting.NeighboringRelation.ADD_OR_REMOVE_ONE}[neighboring]
    recomputed = dp_pld.PLDAccountant(relation, value_discretization_interval=1e-4).compose(
        model.dp_event_).get_epsilon(model.delta_)
    assert recomputed == pytest.approx(model.epsilon_, rel=2e-3)
    assert model.epsilon_ <= 1.0 and recomputed <= 1.0 + 2e-3
    # The multiplier is s / sqrt(B) (never above it), at or above the
    # ordinary calibration's.
    D = X.shape[1] + 1
    ordinary = calibrate_noise(1.0, model.delta_, sample_rate=model.sample_rate_,
                               n_steps=model.n_steps_, neighboring=neighboring)
    mechanism, _ = RoundedGaussianGradientPerturbation.calibrated(
        1.0, model.delta_, sample_rate=model.sample_rate_, n_steps=model.n_steps_,
        accountant="pld", neighboring=neighboring, clip_norm=1.0, n_coordinates=D)
    assert mechanism.noise_multiplier == multiplier
    bound = factored_norm_bound(mechanism.residual_bits, mechanism.row_bits, 1, D)
    assert multiplier ** 2 * bound <= mechanism.noise_scale ** 2
    assert ordinary.noise_multiplier <= multiplier <= ordinary.noise_multiplier * 1.001


def test_rounded_noise_at_mnist_shape_costs_under_a_tenth_of_a_percent():
    # K = 10, d = 784: D = 7,850 noisy coordinates, batch 256 of 60,000, 5 epochs.
    q, steps, D = 256 / 60000, 1172, 7850
    ordinary = calibrate_noise(1.0, 1e-5, sample_rate=q, n_steps=steps)
    mechanism, calibration = RoundedGaussianGradientPerturbation.calibrated(
        1.0, 1e-5, sample_rate=q, n_steps=steps, accountant="pld", neighboring="replace_one",
        clip_norm=1.0, n_coordinates=D)
    multiplier = mechanism.noise_multiplier
    assert ordinary.noise_multiplier <= multiplier <= ordinary.noise_multiplier * 1.001
    # The noise on the float scale, s 2**-k, exceeds the ordinary z by the
    # grid's sqrt(B) / 2**k and s's rounding up: a fraction of a percent.
    noise_std = mechanism.noise_scale * 2.0 ** -mechanism.grid_bits
    assert ordinary.noise_multiplier <= noise_std <= ordinary.noise_multiplier * 1.001
    assert calibration.epsilon <= 1.0 and calibration.accountant == "pld"
    assert mechanism.scale == RoundedGaussianScale(mechanism.noise_scale)


def test_the_rdp_accountant_is_honoured(data):
    X, y = data
    model = fit(X, y, epsilon=1.0, accountant="rdp", neighboring="add_remove",
                public_n_samples=len(X))
    ordinary = calibrate_noise(1.0, model.delta_, sample_rate=model.sample_rate_,
                               n_steps=model.n_steps_, accountant="rdp", neighboring="add_remove")
    assert ordinary.noise_multiplier <= model.noise_multiplier_ <= (
        ordinary.noise_multiplier * 1.001)
    # dp-accounting's RDP accountant (add/remove) on the event states epsilon_
    # again (the library's orders are denser: never above it).
    accountant = dp_rdp.RdpAccountant()
    accountant.compose(model.dp_event_)
    assert model.epsilon_ <= 1.0
    assert model.epsilon_ <= accountant.get_epsilon(model.delta_) <= model.epsilon_ * 1.1


def test_the_ledger_states_the_fit(data, tmp_path):
    X, y = data
    ledger = PrivacyLedger(delta=1e-5, neighboring="replace_one")
    model = fit(X, y, "gradient_exact_discrete", epsilon=1.0, delta=1e-5, ledger=ledger)
    assert ledger.epsilon() >= model.epsilon_
    # The rounded mode's event is the ordinary one: the ledger's PLD states
    # it again, up to the PLD grids' discretization.
    ledger = PrivacyLedger(delta=1e-5, neighboring="replace_one")
    model = fit(X, y, epsilon=1.0, delta=1e-5, ledger=ledger)
    assert ledger.epsilon() == pytest.approx(model.epsilon_, rel=1e-3)


@pytest.mark.parametrize("form", ["sparse", "coef_init"])
@pytest.mark.parametrize("mechanism", ["gradient_exact", "gradient_exact_discrete"])
def test_refusals_come_before_the_ledger_is_charged(data, form, mechanism):
    X, y = data
    ledger = PrivacyLedger(delta=1e-5)
    model = DPLSSGDClassifier(mechanism=mechanism, classes=[0, 1], ledger=ledger,
                              epsilon=1.0)
    with pytest.raises((TypeError, ValueError, AttributeError), match=mechanism):
        if form == "sparse":
            model.fit(sp.csr_matrix(X), y)
        else:
            model.fit(X, y, coef_init=np.zeros((1, X.shape[1])))
    assert ledger.records == []
    assert not hasattr(model, "partial_fit")


def test_infinite_epsilon_adds_no_noise_and_claims_nothing(data):
    X, y = data
    first = fit(X, y, epsilon=math.inf)
    second = fit(X, y, epsilon=math.inf)
    assert first.epsilon_ == math.inf and first.noise_multiplier_ == 0.0
    assert isinstance(first.dp_event_, dp_accounting.NonPrivateDpEvent)
    # The batches differ between fits; the sum of a fixed batch does not.
    full = dict(batch_size=len(X), epsilon=math.inf)
    np.testing.assert_array_equal(fit(X, y, **full).coef_, fit(X, y, **full).coef_)
    assert np.isfinite(second.coef_).all()


def test_reproducible_fits_repeat_and_claim_nothing(data):
    X, y = data
    first = fit(X, y, epsilon=1.0, reproducible=True, random_state=3)
    second = fit(X, y, epsilon=1.0, reproducible=True, random_state=3)
    assert first.epsilon_ == math.inf
    assert isinstance(first.dp_event_, dp_accounting.NonPrivateDpEvent)
    np.testing.assert_array_equal(first.coef_, second.coef_)
    other = fit(X, y, epsilon=1.0)
    assert not np.array_equal(first.coef_, other.coef_)


@pytest.mark.parametrize("scale", [RoundedGaussianScale(3), DiscreteGaussianScale.at_least(3.0)])
@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_each_step_is_the_grid_step_times_integers(data, dtype, scale):
    X, y = data
    X = X.astype(dtype)
    n_steps = 2
    plan = TrainingPlan(
        loss_code=loss_code("log_loss", 1), loss_threshold=0.0, fit_intercept=True,
        clip_norm=0.5, noise_multiplier=np.full(n_steps, 1.0), sample_rate=0.1,
        batch_size=60, n_steps=n_steps, n_epochs=1, learning_rates=np.full(n_steps, 0.1),
        alpha=0.0, sigma=0.0, average_start=None, optimizer=None, max_sample_weight=1.0)
    exact = ExactNoise(4, 6, scale, ChaChaWords(bytes(32), bytes(8)))
    backend = ExactNoiseTraining(X, y.astype(np.float64), 1, plan, np.random.default_rng(1),
                                 noise_source=exact)
    backend.params[:] = 0.25
    for _, _, draws in backend.chunks([0], n_steps, np.ones(n_steps)):
        grad = np.array(backend.gradient_sum(backend.params, draws, 0), dtype=np.float64)
    units = grad / (0.5 * 2.0 ** -10)
    np.testing.assert_array_equal(units, np.rint(units))
    assert np.abs(units).max() > 0


def test_regressor_and_multiclass(data):
    X, _ = data
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        # The exact mode takes declared target bounds only.
        model = DPLSSGDRegressor(mechanism="gradient_exact", epsilon=2.0, max_iter=3,
                                 target_bounds=(-1, 1)).fit(X, X[:, 0])
        labels = (3 * (X[:, 0] + 1)).astype(int) % 3
        multi = DPLSSGDClassifier(mechanism="gradient_exact", epsilon=2.0, max_iter=3,
                                  classes=[0, 1, 2]).fit(X, labels)
    assert model.epsilon_ <= 2.0 and multi.epsilon_ <= 2.0
    assert np.all(np.isfinite(model.coef_)) and multi.coef_.shape == (3, X.shape[1])
