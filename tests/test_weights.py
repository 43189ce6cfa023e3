"""Sample and class weights: semantics, noise scale, accounting, refusals."""

import math

import dp_accounting
import numpy as np
import pandas as pd
import pytest
from sklearn.base import clone

from sklearn_dplssgd import (
    DPLSSGDClassifier,
    DPLSSGDRegressor,
    DPRandomizedSearch,
    PrivacyLedger,
)
from sklearn_dplssgd._mechanisms._gradient import GradientPerturbation

# Deterministic, noise-free fits on full batches with fixed settings: the
# fitted weights are then a function of the clipped, weighted gradient sums
# alone, so weighted and repeated rows can be compared exactly. (With noise
# or Poisson sampling they cannot: see test_estimator_checks.py.)
EXACT = dict(epsilon=math.inf, batch_size=10_000, max_iter=40, eta0=0.5, average=False,
             random_state=0, reproducible=True)


@pytest.fixture(scope="module")
def binary():
    rng = np.random.default_rng(0)
    X = rng.normal(size=(300, 6))
    y = (X @ rng.normal(size=6) > 0).astype(int)
    return X, y


def test_zero_weight_rows_are_as_if_removed(binary):
    X, y = binary
    weights = np.ones(len(y))
    weights[::3] = 0.0
    weighted = DPLSSGDClassifier(classes=[0, 1], **EXACT).fit(X, y, sample_weight=weights)
    kept = weights > 0
    removed = DPLSSGDClassifier(classes=[0, 1], **EXACT).fit(X[kept], y[kept])
    np.testing.assert_allclose(weighted.coef_, removed.coef_, rtol=1e-12, atol=1e-14)
    np.testing.assert_allclose(weighted.intercept_, removed.intercept_, rtol=1e-12, atol=1e-14)


def test_a_weight_of_two_is_a_repeated_row_without_noise(binary):
    X, y = binary
    weights = np.ones(len(y))
    weights[:50] = 2.0
    weighted = DPLSSGDRegressor(max_sample_weight=2.0, **EXACT).fit(
        X, X[:, 0] - X[:, 1], sample_weight=weights)
    X_repeated = np.vstack([X, X[:50]])
    repeated = DPLSSGDRegressor(**EXACT).fit(X_repeated, X_repeated[:, 0] - X_repeated[:, 1])
    np.testing.assert_allclose(weighted.coef_, repeated.coef_, rtol=1e-10)
    np.testing.assert_allclose(weighted.intercept_, repeated.intercept_, rtol=1e-10,
                               atol=1e-12)


def test_class_weight_is_the_per_class_sample_weight(binary):
    X, y = binary
    by_class = DPLSSGDClassifier(classes=[0, 1], class_weight={1: 0.25}, **EXACT).fit(X, y)
    by_row = DPLSSGDClassifier(classes=[0, 1], **EXACT).fit(
        X, y, sample_weight=np.where(y == 1, 0.25, 1.0))
    np.testing.assert_array_equal(by_class.coef_, by_row.coef_)
    # Both: the class weight times the sample weight.
    both = DPLSSGDClassifier(classes=[0, 1], class_weight={1: 0.5}, **EXACT).fit(
        X, y, sample_weight=np.full(len(y), 0.5) * np.where(y == 1, 1.0, 2.0))
    np.testing.assert_array_equal(both.coef_, by_row.coef_)
    # A down-weighted class is predicted less often.
    plain = DPLSSGDClassifier(classes=[0, 1], **EXACT).fit(X, y)
    assert by_class.predict(X).mean() < plain.predict(X).mean()


def test_weights_of_one_change_nothing(binary):
    X, y = binary
    settings = dict(epsilon=1.0, classes=[0, 1], random_state=0, reproducible=True)
    plain = DPLSSGDClassifier(**settings).fit(X, y)
    for weights in (np.ones(len(y)), 1, [1.0] * len(y), pd.Series(np.ones(len(y)))):
        weighted = DPLSSGDClassifier(**settings).fit(X, y, sample_weight=weights)
        np.testing.assert_array_equal(weighted.coef_, plain.coef_)


@pytest.mark.parametrize("max_sample_weight", [1.0, 3.0])
def test_noise_is_calibrated_to_max_sample_weight_times_clip_norm(max_sample_weight):
    """With zero features the weights are pure noise: std sqrt(T) eta z w_max C / b."""
    n_samples, n_features, batch_size = 400, 4000, 100
    X = np.zeros((n_samples, n_features))
    y = np.arange(n_samples) % 2
    clf = DPLSSGDClassifier(epsilon=2.0, sigma=0.0, alpha=0.0, eta0=0.1, clip_norm=3.0,
                            max_sample_weight=max_sample_weight, batch_size=batch_size,
                            max_iter=2, fit_intercept=False, average=False, classes=[0, 1],
                            random_state=0, reproducible=True).fit(X, y)
    expected = (math.sqrt(clf.n_steps_) * 0.1 * clf.noise_multiplier_ * max_sample_weight
                * 3.0 / batch_size)
    assert clf.coef_.std() == pytest.approx(expected, rel=0.05)


def test_epsilon_recomputed_from_dp_event_with_dp_accounting(binary):
    X, y = binary
    weights = np.random.default_rng(1).uniform(0, 4, len(y))
    clf = DPLSSGDClassifier(epsilon=1.0, max_sample_weight=4.0, batch_size=60, max_iter=5,
                            classes=[0, 1]).fit(X, y, sample_weight=weights)
    unweighted = clone(clf).set_params(max_sample_weight=1.0).fit(X, y)
    # z is relative to the sensitivity w_max C: the event does not change.
    assert repr(clf.dp_event_) == repr(unweighted.dp_event_)
    assert clf.noise_multiplier_ == unweighted.noise_multiplier_
    accountant = dp_accounting.pld.PLDAccountant(
        dp_accounting.NeighboringRelation.REPLACE_ONE, value_discretization_interval=1e-4)
    recomputed = accountant.compose(clf.dp_event_).get_epsilon(clf.delta_)
    assert clf.epsilon_ == pytest.approx(recomputed, rel=2e-3)
    assert clf.epsilon_ <= 1.0


def test_auto_step_size_reads_the_sensitivity(binary):
    """``eta0="auto"`` scales with w_max C: w_max=2, C=1 is C=2."""
    X, y = binary
    settings = dict(epsilon=1.0, classes=[0, 1], batch_size=50, max_iter=3)
    by_weight = DPLSSGDClassifier(max_sample_weight=2.0, **settings).fit(X, y)
    by_clip = DPLSSGDClassifier(clip_norm=2.0, **settings).fit(X, y)
    assert by_weight.eta0_ == pytest.approx(by_clip.eta0_, rel=1e-12)
    plain = DPLSSGDClassifier(**settings).fit(X, y)
    assert by_weight.eta0_ == pytest.approx(plain.eta0_ / 2, rel=1e-12)


def test_user_weights_are_not_modified(binary):
    X, y = binary
    weights = np.linspace(0, 1, len(y))
    weights.flags.writeable = False
    before = weights.copy()
    DPLSSGDClassifier(classes=[0, 1], class_weight={0: 0.5}).fit(X, y, sample_weight=weights)
    np.testing.assert_array_equal(weights, before)


@pytest.mark.parametrize("weights, match", [
    (lambda n: np.full(n, 2.0), "weigh more than max_sample_weight=1"),
    (lambda n: -np.ones(n), "must not be negative"),
    (lambda n: np.r_[np.inf, np.ones(n - 1)], "infinity"),
    (lambda n: np.r_[np.nan, np.ones(n - 1)], "NaN"),
    (lambda n: np.ones(n + 1), "one weight per row"),
    (lambda n: np.ones((n, 2)), "one weight per row"),
    (lambda n: -1.0, "must not be negative"),
])
def test_bad_sample_weights_are_refused(binary, weights, match):
    X, y = binary
    with pytest.raises(ValueError, match=match):
        DPLSSGDClassifier(classes=[0, 1]).fit(X, y, sample_weight=weights(len(y)))


def test_combined_weight_above_the_maximum_is_refused(binary):
    X, y = binary
    clf = DPLSSGDClassifier(classes=[0, 1], class_weight={1: 2.0}, max_sample_weight=2.0)
    clf.fit(X, y, sample_weight=np.ones(len(y)))
    with pytest.raises(ValueError, match="sample_weight times class_weight"):
        clf.fit(X, y, sample_weight=np.full(len(y), 1.5))


@pytest.mark.parametrize("class_weight, match", [
    ("balanced", "private labels.*Pass a dict"),
    ({0: 1.5}, r"class_weight gives \{0: 1.5\}, above max_sample_weight=1"),
    ({0: -1.0}, "finite non-negative"),
    ({0: float("nan")}, "finite non-negative"),
    ([1.0, 2.0], "must be None or a dict"),
    ({7: 0.5}, r"keys \[7\] that are not classes"),
])
def test_bad_class_weights_are_refused_before_the_ledger_is_charged(binary, class_weight,
                                                                    match):
    X, y = binary
    ledger = PrivacyLedger()
    clf = DPLSSGDClassifier(classes=[0, 1], class_weight=class_weight, ledger=ledger)
    with pytest.raises(ValueError, match=match):
        clf.fit(X, y)
    assert ledger.records == []


def test_bad_max_sample_weight_is_refused(binary):
    X, y = binary
    for value, error in ((0.0, ValueError), (-1.0, ValueError), (math.inf, ValueError),
                         ("2", TypeError)):
        with pytest.raises(error, match="max_sample_weight"):
            DPLSSGDRegressor(max_sample_weight=value).fit(X, y)
    with pytest.raises(ValueError, match="must be finite"):
        DPLSSGDRegressor(max_sample_weight=1e300, clip_norm=1e10).fit(X, y)


def test_a_searchs_trial_scales_its_noise_by_the_estimators_weight_bound():
    """A private search fixes each trial's z; the trial scales it by its own w_max C."""
    n_samples, n_features, batch_size = 400, 3000, 100
    X = np.zeros((n_samples, n_features))
    y = np.arange(n_samples) % 2
    clf = DPLSSGDClassifier(sigma=0.0, alpha=0.0, eta0=0.1, clip_norm=2.0, max_sample_weight=3.0,
                            batch_size=batch_size, max_iter=2, fit_intercept=False,
                            average=False, classes=[0, 1], random_state=0, reproducible=True)
    n_steps = 8
    # What DPRandomizedSearch sets on its trials (built without the weight bound).
    clf._fixed_mechanism = GradientPerturbation(batch_size / n_samples, n_steps, 4.0,
                                                "replace_one", 2.0)
    clf.fit(X, y)
    expected = math.sqrt(n_steps) * 0.1 * 4.0 * 3.0 * 2.0 / batch_size
    assert clf.coef_.std() == pytest.approx(expected, rel=0.05)


def test_private_search_accepts_weighted_estimators(binary):
    X, y = binary
    search = DPRandomizedSearch(
        DPLSSGDClassifier(classes=[0, 1], class_weight={1: 3.0}, max_sample_weight=3.0,
                          batch_size=100, max_iter=2),
        {"sigma": [0.0, 1.0]}, epsilon=2.0, n_trials=2, random_state=0, reproducible=True)
    search.fit(X, y)
    assert search.best_estimator_.coef_.shape == (1, 6)


def test_bagging_bootstrap_counts_are_weights_within_the_bound(binary):
    """Bagging passes a row drawn k times as sample_weight=k: the bound must cover it."""
    from sklearn.ensemble import BaggingClassifier

    X, y = binary
    with pytest.raises(ValueError, match="weigh more than max_sample_weight"):
        BaggingClassifier(DPLSSGDClassifier(classes=[0, 1], max_iter=2),
                          n_estimators=1, random_state=0).fit(X, y)
    bagged = BaggingClassifier(
        DPLSSGDClassifier(classes=[0, 1], max_iter=2, max_sample_weight=20.0),
        n_estimators=2, random_state=0).fit(X, y)
    assert all(fit.epsilon_ <= 1.0 for fit in bagged.estimators_)
