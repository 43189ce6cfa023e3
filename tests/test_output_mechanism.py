"""``mechanism="output"`` on the estimators: planning, accounting, refusals, the release."""

import math
import warnings

import dp_accounting
import numpy as np
import pytest
from dp_accounting import pld as dp_pld
from sklearn.base import clone

from sklearn_dplssgd import (
    DPLSSGDClassifier,
    DPLSSGDRegressor,
    DPRandomizedSearch,
    OutputPerturbation,
    PrivacyBudgetExceededError,
    PrivacyLedger,
    PrivacyLeakWarning,
)


@pytest.fixture(autouse=True)
def _quiet():
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", PrivacyLeakWarning)
        warnings.simplefilter("ignore", UserWarning)
        yield


def _classification(n=600, d=5, n_classes=3, seed=0):
    rng = np.random.default_rng(seed)
    centres = rng.normal(size=(n_classes, d))
    y = rng.integers(n_classes, size=n)
    X = centres[y] + 0.5 * rng.normal(size=(n, d))
    return X / np.sqrt(d), y


def _regression(n=600, d=4, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.uniform(-1, 1, size=(n, d)) / np.sqrt(d)
    y = X @ np.array([1.0, -0.5, 0.25, 0.0])[:d] + 0.05 * rng.normal(size=n)
    return X, y


def _pld_epsilon(event, delta):
    accountant = dp_pld.PLDAccountant(
        dp_accounting.NeighboringRelation.REPLACE_ONE, value_discretization_interval=1e-4)
    return accountant.compose(event).get_epsilon(delta)


@pytest.mark.parametrize("n_classes", [2, 3])
def test_classifier_release_is_accounted_from_its_event(n_classes):
    X, y = _classification(n_classes=n_classes)
    clf = DPLSSGDClassifier(mechanism="output", alpha=0.05, epsilon=1.0, classes=range(n_classes),
                            max_iter=3).fit(X, y)
    z = clf.noise_multiplier_
    assert clf.dp_event_ == dp_accounting.GaussianDpEvent(2 * z)
    assert clf.neighboring_ == "replace_one" and math.isnan(clf.sample_rate_)
    np.testing.assert_array_equal(clf.noise_multipliers_, [z])
    recomputed = _pld_epsilon(clf.dp_event_, clf.delta_)
    assert clf.epsilon_ <= 1.0
    assert recomputed == pytest.approx(clf.epsilon_, rel=2e-3)
    # Barely less noise would not meet the target (the calibration is tight).
    assert _pld_epsilon(dp_accounting.GaussianDpEvent(2 * z * 0.99), clf.delta_) > 1.0
    assert clf.output_sensitivity_ > 0 and clf.coef_.shape == (
        (1, 5) if n_classes == 2 else (n_classes, 5))
    assert clf.n_steps_ == 3 * (600 // clf.batch_size_)


def test_the_noise_on_the_weights_has_the_planned_scale():
    # Same seed: the same permutation and the same noise-free weights, so the
    # difference of a noisy and a noise-free fit is the noise alone.
    X, y = _classification(n=2000, d=40, n_classes=10, seed=1)
    common = dict(mechanism="output", alpha=0.05, classes=range(10), max_iter=2,
                  random_state=3, reproducible=True)
    noisy = DPLSSGDClassifier(epsilon=1.0, **common).fit(X, y)
    exact = DPLSSGDClassifier(epsilon=math.inf, **common).fit(X, y)
    # The noise is calibrated to the rounded weights' sensitivity: Delta widened
    # by the roundings and the descent's float error bound, by little.
    assert exact.output_sensitivity_ < noisy.output_sensitivity_
    assert noisy.output_sensitivity_ == pytest.approx(exact.output_sensitivity_, rel=1e-4)
    noise = np.concatenate([(noisy.coef_ - exact.coef_).ravel(),
                            noisy.intercept_ - exact.intercept_])
    expected_std = noisy.noise_multiplier_ * noisy.output_sensitivity_
    # 410 draws: the sample std is within 10 % of the truth with overwhelming probability.
    assert np.std(noise) == pytest.approx(expected_std, rel=0.1)
    assert abs(np.mean(noise)) < 4 * expected_std / math.sqrt(noise.size)
    # reproducible: nothing is claimed, yet the noise is the calibrated one.
    assert noisy.epsilon_ == math.inf and noisy.dp_event_ == dp_accounting.NonPrivateDpEvent()


def test_noise_free_output_fit_learns_and_noise_costs_accuracy():
    X, y = _classification(n=3000, d=5, n_classes=3, seed=2)
    exact = DPLSSGDClassifier(mechanism="output", alpha=0.01, epsilon=math.inf, classes=range(3),
                              max_iter=5, random_state=0, reproducible=True).fit(X, y)
    assert exact.score(X, y) > 0.9
    assert exact.epsilon_ == math.inf and exact.noise_multiplier_ == 0


def test_regressors_huber_and_bounded_squared_error():
    X, y = _regression()
    huber = DPLSSGDRegressor(loss="huber", loss_threshold=1.0, mechanism="output", alpha=0.05,
                             epsilon=math.inf, max_iter=20, random_state=0,
                             reproducible=True).fit(X, y)
    assert huber.score(X, y) > 0.5
    squared = DPLSSGDRegressor(alpha=0.05, epsilon=2.0,
                               target_bounds=(-2, 2), max_iter=5,
                               mechanism=OutputPerturbation(weight_norm_bound=3.0)).fit(X, y)
    assert squared.dp_event_ == dp_accounting.GaussianDpEvent(2 * squared.noise_multiplier_)
    assert np.isfinite(squared.predict(X)).all()
    exact = DPLSSGDRegressor(mechanism=OutputPerturbation(weight_norm_bound=10.0), alpha=0.01,
                             epsilon=math.inf, target_bounds=(-2, 2), max_iter=50,
                             random_state=0, reproducible=True).fit(X, y)
    # Predictions come back in the target's units.
    assert exact.score(X, y) > 0.5


def test_the_ledger_is_charged_with_the_output_event():
    X, y = _classification()
    ledger = PrivacyLedger(max_epsilon=1.2)
    clf = DPLSSGDClassifier(mechanism="output", alpha=0.05, epsilon=1.0, classes=range(3),
                            ledger=ledger, max_iter=1).fit(X, y)
    assert [record["dp_event"] for record in ledger.records] == [clf.dp_event_]
    with pytest.raises(PrivacyBudgetExceededError, match="max_epsilon"):
        DPLSSGDClassifier(mechanism="output", alpha=0.05, epsilon=1.0, classes=range(3),
                          ledger=ledger, max_iter=1).fit(X, y)


@pytest.mark.parametrize("estimator, match", [
    (DPLSSGDClassifier(loss="hinge", mechanism="output", alpha=0.1), "smooth loss"),
    (DPLSSGDRegressor(loss="epsilon_insensitive", mechanism="output", alpha=0.1), "smooth loss"),
    (DPLSSGDClassifier(mechanism="output", alpha=0.0), "alpha > 0"),
    (DPLSSGDClassifier(mechanism="output", alpha=0.1, neighboring="add_remove",
                       public_n_samples=100), "replace_one"),
    (DPLSSGDClassifier(mechanism="output", alpha=0.1, public_n_samples=100), "public_n_samples"),
    (DPLSSGDClassifier(mechanism="output", alpha=0.1, accountant="rdp"), "PLD"),
    (DPLSSGDClassifier(mechanism="output", alpha=0.1, learning_rate="inverse_time"),
     "learning_rate='constant'"),
    (DPLSSGDClassifier(mechanism="output", alpha=0.1, optimizer="adam"), "optimizer='sgd'"),
    (DPLSSGDClassifier(mechanism="output", alpha=0.1, noise_schedule="exponential"),
     "noise_schedule='constant'"),
    (DPLSSGDClassifier(mechanism="output", alpha=0.1, noise_schedule=[1.0, 0.5]),
     "noise_schedule='constant'"),
    (DPLSSGDClassifier(mechanism="output", alpha=0.1, average=True), "last iterate"),
    (DPLSSGDRegressor(mechanism="output", alpha=0.1), "weight_norm_bound"),
    (DPLSSGDRegressor(mechanism=OutputPerturbation(weight_norm_bound=1.0), alpha=0.1),
     "target_bounds"),
    (DPLSSGDRegressor(loss="huber", mechanism=OutputPerturbation(weight_norm_bound=1.0),
                      alpha=0.1), "weight_norm_bound is only used"),
    (DPLSSGDRegressor(loss="huber", loss_threshold=0.0, mechanism="output", alpha=0.1),
     "loss_threshold"),
    (DPLSSGDClassifier(mechanism="output", alpha=0.01, eta0=50.0), "too large"),
    (DPLSSGDClassifier(mechanism=OutputPerturbation(row_norm_bound=math.inf), alpha=0.1),
     "mechanism.row_norm_bound"),
    (DPLSSGDClassifier(mechanism=OutputPerturbation(row_norm_bound=0), alpha=0.1),
     "mechanism.row_norm_bound"),
    (DPLSSGDRegressor(mechanism=OutputPerturbation(weight_norm_bound=-1.0), alpha=0.1,
                      target_bounds=(-1, 1)), "mechanism.weight_norm_bound"),
    (DPLSSGDClassifier(mechanism="outputs"), "mechanism"),
    (DPLSSGDClassifier(mechanism=object()), "mechanism"),
])
def test_settings_output_perturbation_cannot_honour_are_refused(estimator, match):
    X, y = _regression() if isinstance(estimator, DPLSSGDRegressor) else _classification()
    ledger = PrivacyLedger()
    estimator.set_params(ledger=ledger)
    with pytest.raises(ValueError, match=match):
        estimator.fit(X, y)
    # Refused before anything was released.
    assert not ledger.records


def test_the_private_search_refuses_output_trials():
    X, y = _classification()
    search = DPRandomizedSearch(
        DPLSSGDClassifier(mechanism="output", alpha=0.1, classes=range(3)),
        {"sigma": [0.0, 1.0]}, epsilon=1.0, delta=1e-5, n_trials=2)
    with pytest.raises(ValueError, match="mechanism='output' cannot be searched"):
        search.fit(X, y)


def test_user_data_is_not_modified():
    X, y = _classification()
    X32 = (X * 10).astype(np.float32)  # rows far beyond row_norm_bound
    before_X, before_y = X32.copy(), y.copy()
    clf = DPLSSGDClassifier(mechanism="output", alpha=0.05, classes=range(3), max_iter=1)
    clf.fit(X32, y)
    np.testing.assert_array_equal(X32, before_X)
    np.testing.assert_array_equal(y, before_y)
    assert clf.coef_.dtype == np.float32


def test_sparse_input_is_refused_before_anything_is_released():
    import scipy.sparse as sp

    X, y = _classification()
    ledger = PrivacyLedger()
    clf = DPLSSGDClassifier(mechanism="output", alpha=0.1, classes=range(3), ledger=ledger)
    with pytest.raises(TypeError, match="mechanism='output' needs dense X"):
        clf.fit(sp.csr_matrix(X), y)
    assert not ledger.records


def test_sample_weights_enter_the_loss_and_the_bound_scales_the_sensitivity():
    X, y = _classification(n=400)
    common = dict(mechanism="output", alpha=0.1, classes=range(3), batch_size=400, max_iter=5,
                  epsilon=math.inf, random_state=0, reproducible=True)
    plain = DPLSSGDClassifier(**common).fit(X, y)
    ones = DPLSSGDClassifier(**common).fit(X, y, sample_weight=np.ones(400))
    np.testing.assert_array_equal(plain.coef_, ones.coef_)
    # Weight 0 on half the rows: the descent's mean loss over the other half,
    # times 1/2 (full batch, the public batch size divides).
    weights = np.where(np.arange(400) < 200, 1.0, 0.0)
    half = DPLSSGDClassifier(**common).fit(X, y, sample_weight=weights)
    assert not np.allclose(half.coef_, plain.coef_)
    bounded = DPLSSGDClassifier(**{**common, "max_sample_weight": 2.0}).fit(X, y)
    # R and the loss's curvature double: the sensitivity grows.
    assert bounded.output_sensitivity_ > plain.output_sensitivity_
    with pytest.raises(ValueError, match="max_sample_weight"):
        DPLSSGDClassifier(**common).fit(X, y, sample_weight=np.full(400, 2.0))


@pytest.mark.parametrize("call", ["partial_fit", "coef_init", "warm_start"])
def test_continued_releases_are_refused(call):
    X, y = _classification()
    clf = DPLSSGDClassifier(mechanism="output", alpha=0.1, classes=range(3), max_iter=1)
    if call == "partial_fit":
        assert not hasattr(clf, "partial_fit")
        with pytest.raises(AttributeError, match="no attribute 'partial_fit'") as excinfo:
            clf.partial_fit(X, y, classes=range(3))
        # scikit-learn's available_if chains the reason.
        assert "mechanism='output'" in str(excinfo.value.__cause__)
        return
    with pytest.raises(ValueError, match="mechanism='output'"):
        if call == "coef_init":
            clf.fit(X, y, coef_init=np.zeros((3, 5)))
        else:
            clf.fit(X, y)
            clf.set_params(warm_start=True).fit(X, y)


# --------------------------------------------------------------------------
# The release on a lattice: integers, exact noise, the float channel closed
# --------------------------------------------------------------------------


def test_the_released_model_is_gamma_times_integers_and_reported():
    X, y = _classification(n_classes=3)
    clf = DPLSSGDClassifier(mechanism="output", alpha=0.05, epsilon=1.0, classes=range(3),
                            max_iter=3).fit(X, y)
    noise = clf._noise_added
    assert noise.law == "rounded Gaussian" and noise.grid_step == 2.0 ** -noise.grid_bits
    for values in (clf.coef_, clf.intercept_):
        lattice_points = values / noise.grid_step
        np.testing.assert_array_equal(lattice_points, np.round(lattice_points))
    assert noise.bound == clf.output_sensitivity_
    assert noise.stds[0] == noise.grid_scale * noise.grid_step
    assert clf.noise_multiplier_ * clf.output_sensitivity_ == pytest.approx(noise.stds[0],
                                                                            rel=1e-12)
    report = clf.privacy_report()
    assert f"s = {int(noise.grid_scale)} lattice units" in report
    assert "rounded Gaussian noise round(s G)" in report and f"(2**{-noise.grid_bits})" in report
    # An integer release: the floating-point paragraph of a float release is not there.
    assert "Floating-point noise:" not in report
    assert "outside the released integers" in report


def test_epsilon_is_within_a_thousandth_of_the_continuous_calibration():
    from sklearn_dplssgd._mechanisms.output_perturbation import NoisyWeights
    X, y = _regression()
    reg = DPLSSGDRegressor(loss="huber", loss_threshold=1.0, mechanism="output", alpha=0.05,
                           epsilon=0.7, target_bounds=(-2, 2), max_iter=2).fit(X, y)
    assert reg.dp_event_ == dp_accounting.GaussianDpEvent(2 * reg.noise_multiplier_)
    assert reg.epsilon_ == pytest.approx(_pld_epsilon(reg.dp_event_, reg.delta_), rel=2e-3)
    # The float release this replaces: the continuous calibration (its epsilon
    # depends on the noise multiplier only, not on the sensitivity).
    _, continuous = NoisyWeights.calibrated(0.7, reg.delta_, sensitivity=1.0)
    assert reg.epsilon_ <= continuous.epsilon * (1 + 1e-9) <= 0.7 * (1 + 1e-9)
    assert reg.epsilon_ == pytest.approx(continuous.epsilon, rel=1e-3)


def test_reproducible_output_fits_are_bit_for_bit():
    X, y = _classification(n_classes=3)
    common = dict(mechanism="output", alpha=0.05, epsilon=1.0, classes=range(3), max_iter=2,
                  reproducible=True)
    first, second, other = (DPLSSGDClassifier(random_state=seed, **common).fit(X, y)
                            for seed in (5, 5, 6))
    assert first.coef_.tobytes() == second.coef_.tobytes()
    assert first.intercept_.tobytes() == second.intercept_.tobytes()
    assert first.coef_.tobytes() != other.coef_.tobytes()


def _float_draw(params, mechanism, rng, fit_intercept):
    """The release this mechanism had before: float64 Gaussian noise on the float weights."""
    released = np.array(params, dtype=np.float64)
    columns = released.shape[-1] if fit_intercept else released.shape[-1] - 1
    released[..., :columns] += mechanism.noise_std * rng.standard_normal(
        released[..., :columns].shape)
    return released


@pytest.mark.parametrize("estimator", [
    DPLSSGDClassifier(mechanism="output", epsilon=1.0, classes=[0, 1]),
    DPLSSGDRegressor(mechanism="output", loss="huber", epsilon=1.0),
])
def test_the_float_channel_audit_passes_the_lattice_and_refutes_float_noise(
        estimator, monkeypatch):
    from sklearn_dplssgd.audit import check_float_channel
    from sklearn_dplssgd._mechanisms.output_perturbation import _descent
    result = check_float_channel(estimator, n_runs=250, random_state=0)
    assert result.passed and result.measured == 0.0, result
    assert "output mechanism" in result.detail and "in 0 of 250 runs without" in result.detail
    monkeypatch.setattr(_descent, "release_on_lattice", _float_draw)
    broken = check_float_channel(estimator, n_runs=250, random_state=0)
    assert not broken.passed and broken.measured > 1.0, broken


def test_the_mechanism_object_holds_the_bounds_a_search_reaches():
    X, y = _classification()
    by_name = DPLSSGDClassifier(mechanism="output", alpha=0.05, epsilon=1.0, classes=range(3),
                                max_iter=1, random_state=0, reproducible=True).fit(X, y)
    by_object = clone(by_name).set_params(mechanism=OutputPerturbation()).fit(X, y)
    np.testing.assert_array_equal(by_object.coef_, by_name.coef_)
    # The bounds are nested parameters: a search sets them, clone copies them.
    wider = clone(by_object).set_params(mechanism__row_norm_bound=4.0)
    assert wider.get_params()["mechanism__row_norm_bound"] == 4.0
    assert by_object.mechanism.row_norm_bound == 1.0  # the original is not changed
    assert wider.fit(X, y).output_sensitivity_ > by_object.output_sensitivity_
    assert repr(wider).count("OutputPerturbation(row_norm_bound=4.0)") == 1
    assert not wider.__sklearn_tags__().input_tags.sparse
