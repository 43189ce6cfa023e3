"""DPRandomizedSearch: accounting from dp_event_, the secret number of trials, the workflow."""

import fractions
import math
import pickle
import warnings

import dp_accounting
import numpy as np
import pandas as pd
import pytest
from dp_accounting import rdp as dp_rdp
from dp_accounting.rdp.rdp_privacy_accountant import _gamma_truncated_negative_binomial
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import StandardScaler
from scipy import stats

from sklearn_dplssgd import (
    BoundedScaler,
    DPLSSGDClassifier,
    DPLSSGDRegressor,
    DPRandomizedSearch,
    PrivacyBudgetExceededError,
    PrivacyLedger,
    PrivacyLeakWarning,
)
from sklearn_dplssgd._mechanisms import RandomSearchSelection
from sklearn_dplssgd._mechanisms._search_selection import (
    SCORE_LATTICE_BITS, _trial_gamma, score_noise_scale,
)
from sklearn_dplssgd._model_selection import _search
from sklearn_dplssgd._accounting._events import group_of_two_epsilon, _rdp_orders
from sklearn_dplssgd._training import GeneratorWords


@pytest.fixture
def data():
    rng = np.random.default_rng(0)
    X = rng.uniform(-1, 1, size=(600, 6))
    return X, (X[:, 0] + 0.5 * X[:, 1] > 0).astype(int)


def _search_of(**kwargs):
    model = DPLSSGDClassifier(classes=[0, 1], max_iter=3, batch_size=64)
    grid = {"eta0": [0.1, 0.5, 2.0], "sigma": [0.0, 1.0]}
    kwargs.setdefault("n_trials", 3)
    return DPRandomizedSearch(model, grid, **kwargs)


@pytest.mark.parametrize("neighboring", ["add_remove", "replace_one"])
def test_epsilon_is_recomputed_from_dp_event_with_dp_accounting(data, neighboring):
    X, y = data
    search = _search_of(epsilon=1.5)
    search.estimator.set_params(neighboring=neighboring, public_n_samples=600)
    search.fit(X, y)
    event = search.dp_event_
    assert isinstance(event, dp_accounting.dp_event.RepeatAndSelectDpEvent)
    assert (event.mean, event.shape) == (3.0, 0.0)
    training, score = event.event.events
    assert score == dp_accounting.GaussianDpEvent(search.score_noise_multiplier_)
    sampled = training.event
    assert sampled.event.noise_multiplier == search.noise_multiplier_
    assert sampled.sampling_probability == pytest.approx(64 / 480)  # 80 % of 600 rows

    accountant = dp_rdp.RdpAccountant(orders=list(_rdp_orders()))
    accountant.compose(event)
    if neighboring == "add_remove":
        recomputed = accountant.get_epsilon(1e-5)
    else:
        recomputed = group_of_two_epsilon(accountant, 1e-5)
        # The group-of-two condition, checked with dp-accounting alone.
        d_ar = 1e-5 / (1 + math.exp(recomputed / 2))
        assert 2 * accountant.get_epsilon(d_ar) <= recomputed * (1 + 1e-9)
    assert search.epsilon_ == pytest.approx(recomputed, rel=1e-9)
    assert 1.5 * (1 - 1e-3) <= search.epsilon_ <= 1.5
    # The released model carries the whole search's guarantee.
    assert search.best_estimator_.epsilon_ == search.epsilon_
    assert search.best_estimator_.dp_event_ == search.dp_event_


def test_the_score_changes_the_accounting(data):
    # Less noise on the scores (a larger score budget) is paid by the training.
    X, y = data
    low = _search_of(epsilon=1.0, score_budget=0.1).fit(X, y)
    high = _search_of(epsilon=1.0, score_budget=0.6).fit(X, y)
    assert high.score_noise_multiplier_ < low.score_noise_multiplier_
    assert high.noise_multiplier_ > low.noise_multiplier_


@pytest.mark.parametrize("mean, shape", [(10.0, 0.0), (10.0, 1.0), (4.0, 2.5), (6.0, math.inf)])
def test_number_of_trials_follows_the_accounted_distribution(mean, shape):
    rng = np.random.default_rng(1)
    search = RandomSearchSelection(None, 1.0, mean, shape)
    draws = np.array([search.number_of_trials(rng) for _ in range(20000)])
    assert draws.mean() == pytest.approx(mean, rel=0.05)
    if shape == math.inf:
        observed = np.array([(draws == i).mean() for i in range(12)])
        np.testing.assert_allclose(observed, stats.poisson(mean).pmf(np.arange(12)), atol=0.01)
        return
    assert draws.min() >= 1
    gamma = _trial_gamma(mean, shape)
    assert gamma == pytest.approx(_gamma_truncated_negative_binomial(shape, mean), rel=1e-6)
    k = np.arange(1, 200)
    if shape == 0.0:
        pmf = (1 - gamma) ** k / k
    else:
        pmf = stats.nbinom(shape, gamma).pmf(k)
    pmf /= pmf.sum()
    observed = np.array([(draws == i).mean() for i in k[:5]])
    np.testing.assert_allclose(observed, pmf[:5], atol=0.01)


def test_scores_carry_the_calibrated_noise(data, monkeypatch):
    # A broken variant that released the exact score would fail this: the
    # released score minus the exact one must be N(0, (z_score / m)^2).
    X, y = data
    exact_total = 250.0

    def fixed_trial(estimator, X, y, train, validation, scoring, bound):
        # The score sum in lattice units (2**K per correct row).
        lattice_total = exact_total * 2 ** SCORE_LATTICE_BITS
        return estimator.fit(X[train], y[train]), lattice_total, 0.0

    monkeypatch.setattr(_search, "_fit_trial", fixed_trial)
    search = _search_of(epsilon=1.0, n_trials=30)
    errors = []
    for _ in range(3):
        search.fit(X, y)
        errors += [trial["score"] - exact_total / 120 for trial in search.trials_]
    std = search.score_noise_multiplier_ / 120  # 20 % of 600 rows validate
    assert stats.kstest(np.array(errors) / std, "norm").pvalue > 1e-3


def test_per_row_scores_are_bounded():
    y = np.array([0.0, 1.0, 5.0, -3.0])
    pred = np.array([0.0, 3.0, np.nan, 100.0])
    mae = _search._per_row_scores("neg_mean_absolute_error", y, pred, 4.0)
    np.testing.assert_array_equal(mae, [0.0, -2.0, -4.0, -4.0])
    mse = _search._per_row_scores("neg_mean_squared_error", y, pred, 4.0)
    np.testing.assert_array_equal(mse, [0.0, -4.0, -4.0, -4.0])
    np.testing.assert_array_equal(
        _search._per_row_scores("accuracy", [1, 2, 3], [1, 0, 3], 1.0), [1.0, 0.0, 1.0])


def test_pipeline_on_a_dataframe(data):
    X, y = data
    frame = pd.DataFrame(X, columns=[f"f{i}" for i in range(X.shape[1])])
    model = make_pipeline(BoundedScaler(lower=-1, upper=1),
                          DPLSSGDClassifier(classes=[0, 1], max_iter=3))
    search = DPRandomizedSearch(
        model, [{"dplssgdclassifier__eta0": stats.loguniform(0.05, 2.0)},
                {"dplssgdclassifier__sigma": [0.0, 2.0]}],
        epsilon=2.0, n_trials=3, n_jobs=2,
    ).fit(frame, pd.Series(y))
    assert list(search.feature_names_in_) == list(frame.columns)
    assert set(search.best_params_) <= {"dplssgdclassifier__eta0", "dplssgdclassifier__sigma"}
    np.testing.assert_array_equal(search.predict(frame), search.best_estimator_.predict(frame))
    assert search.predict_proba(frame).shape == (600, 2)
    assert search.decision_function(frame).shape == (600,)
    assert 0.5 < search.score(frame, y) <= 1.0
    assert search.trials_ and all(
        set(trial) == {"params", "score", "fit_time"} for trial in search.trials_)


def test_a_learning_preprocessor_is_flagged(data):
    X, y = data
    model = make_pipeline(StandardScaler(), DPLSSGDClassifier(classes=[0, 1], max_iter=2))
    search = DPRandomizedSearch(model, {"dplssgdclassifier__eta0": [0.5]}, n_trials=1)
    with pytest.warns(PrivacyLeakWarning, match="'standardscaler'"):
        search.fit(X, y)


def test_regressor_search_needs_a_bound_on_the_error():
    rng = np.random.default_rng(2)
    X = rng.uniform(-1, 1, size=(300, 3))
    y = 50 + 40 * X[:, 0]
    grid = {"eta0": [0.1, 1.0]}
    with pytest.raises(ValueError, match="score_bound"):
        DPRandomizedSearch(DPLSSGDRegressor(max_iter=2), grid, n_trials=2).fit(X, y)
    with pytest.raises(ValueError, match="does not apply"):
        DPRandomizedSearch(DPLSSGDRegressor(max_iter=2, target_bounds=(0, 100)), grid,
                           scoring="accuracy").fit(X, y)
    search = DPRandomizedSearch(DPLSSGDRegressor(max_iter=5, target_bounds=(0, 100)), grid,
                                scoring="neg_mean_squared_error", n_trials=2,
                                epsilon=4.0).fit(X, y)
    assert search.best_score_ <= 1e4  # errors are clipped to 100 ** 2, plus noise
    assert search.predict(X).shape == (300,)


@pytest.mark.parametrize("name", ["epsilon", "batch_size", "max_iter", "public_n_samples",
                                  "random_state", "ledger"])
def test_mechanism_parameters_cannot_be_searched(data, name):
    X, y = data
    search = DPRandomizedSearch(DPLSSGDClassifier(), {name: [1, 2]})
    with pytest.raises(ValueError, match="cannot search"):
        search.fit(X, y)


@pytest.mark.parametrize("grid, match", [
    ({"not_a_parameter": [1]}, "not a parameter"),
    ({"eta0": []}, "non-empty list"),
    ({}, "non-empty dict"),
])
def test_bad_search_spaces_are_refused(data, grid, match):
    X, y = data
    with pytest.raises(ValueError, match=match):
        DPRandomizedSearch(DPLSSGDClassifier(), grid).fit(X, y)


def test_other_estimators_are_refused(data):
    X, y = data
    with pytest.raises(TypeError, match="DPLSSGDClassifier"):
        DPRandomizedSearch(StandardScaler(), {"with_mean": [True]}).fit(X, y)


def test_add_remove_needs_a_public_row_count(data):
    X, y = data
    search = _search_of()
    search.estimator.set_params(neighboring="add_remove")
    with pytest.raises(ValueError, match="public_n_samples"):
        search.fit(X, y)


def test_the_ledger_is_charged_once_before_the_data_is_read(data, tmp_path):
    X, y = data
    ledger = PrivacyLedger(max_epsilon=1.5, path=str(tmp_path / "ledger"))
    search = _search_of(epsilon=1.0, ledger=ledger).fit(X, y)
    assert [record["dp_event"] for record in ledger.records] == [search.dp_event_]
    assert ledger.epsilon() == pytest.approx(search.epsilon_, rel=1e-6)

    class Untouchable:
        shape = X.shape

        def __array__(self, *args, **kwargs):
            raise AssertionError("the data was read")

    with pytest.raises(PrivacyBudgetExceededError):
        _search_of(epsilon=1.0, ledger=ledger).fit(Untouchable(), y)
    assert len(ledger.records) == 1


def test_the_released_model_keeps_the_ledger_of_the_search(data, tmp_path):
    X, y = data
    ledger = PrivacyLedger(path=str(tmp_path / "kept"))
    search = _search_of(epsilon=1.0, ledger=ledger).fit(X, y)
    best = search.best_estimator_
    assert best.ledger is ledger
    # Continuing the released model on the same rows is charged, once, with
    # the continuation's own event (the search's stays one record).
    best.partial_fit(X, y)
    records = ledger.records
    assert len(records) == 2 and records[0]["dp_event"] == search.dp_event_
    assert records[1]["dp_event"] == best.dp_events_[-1]
    assert ledger.epsilon() == pytest.approx(
        PrivacyLedger(path=str(tmp_path / "kept"), create=False).epsilon())
    best.set_params(warm_start=True).fit(X, y)
    assert len(ledger.records) == 3


def test_the_cap_refuses_a_continuation_of_the_released_model(data, tmp_path):
    X, y = data
    ledger = PrivacyLedger(max_epsilon=1.5, path=str(tmp_path / "capped"))
    search = _search_of(epsilon=1.0).set_params(ledger=ledger).fit(X, y)
    coef = search.best_estimator_.coef_.copy()
    with pytest.raises(PrivacyBudgetExceededError, match="max_epsilon=1.5"):
        search.best_estimator_.partial_fit(X, y)
    assert [record["dp_event"] for record in ledger.records] == [search.dp_event_]
    np.testing.assert_array_equal(search.best_estimator_.coef_, coef)


def test_the_estimators_ledger_follows_the_released_model(data, tmp_path):
    X, y = data
    ledger = PrivacyLedger(path=str(tmp_path / "estimator"))
    search = _search_of(epsilon=1.0)
    search.estimator.set_params(ledger=ledger)
    search.fit(X, y)
    search.best_estimator_.partial_fit(X, y)
    assert len(ledger.records) == 2


def test_the_number_of_trials_is_not_pickled(data):
    X, y = data
    search = _search_of(epsilon=1.0).fit(X, y)
    assert search.n_trials_ == len(search.trials_) >= 1
    restored = pickle.loads(pickle.dumps(search))
    assert not hasattr(restored, "trials_") and not hasattr(restored, "n_trials_")
    np.testing.assert_array_equal(restored.predict(X), search.predict(X))


def test_reproducible_search_is_repeatable_and_not_private(data):
    X, y = data
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", PrivacyLeakWarning)
        first = _search_of(random_state=3, reproducible=True).fit(X, y)
        second = _search_of(random_state=3, reproducible=True).fit(X, y)
    assert first.epsilon_ == math.inf
    assert isinstance(first.dp_event_, dp_accounting.NonPrivateDpEvent)

    def without_times(trials):
        return [(trial["params"], trial["score"]) for trial in trials]

    assert without_times(first.trials_) == without_times(second.trials_)
    np.testing.assert_array_equal(first.best_estimator_.coef_, second.best_estimator_.coef_)


def test_searches_are_not_repeatable_by_default(data):
    X, y = data
    with pytest.warns(UserWarning, match="not used unless reproducible"):
        first = _search_of(random_state=3).fit(X, y)
    second = _search_of(random_state=3).fit(X, y)
    assert [t["score"] for t in first.trials_] != [t["score"] for t in second.trials_]


def test_infinite_epsilon_searches_without_noise(data):
    X, y = data
    search = _search_of(epsilon=math.inf).fit(X, y)
    assert search.epsilon_ == math.inf and search.noise_multiplier_ == 0.0
    # Exact counts of correct validation rows over the public expected count
    # (600 - 480 = 120; the realised count varies, so a score may pass 1).
    assert all(abs(trial["score"] * 120 - round(trial["score"] * 120)) < 1e-9
               for trial in search.trials_)


@pytest.mark.parametrize("z", [1e-3, 0.7, 3.0, 41.5])
def test_the_score_noise_scale_is_at_least_the_accounted_one(z):
    s = score_noise_scale(z).scale
    lattice = 2 ** SCORE_LATTICE_BITS
    assert fractions.Fraction(s, lattice) >= fractions.Fraction(z)
    # Above it by the rounding up and the float margin only.
    assert fractions.Fraction(s, lattice) <= fractions.Fraction(z) * (
        1 + fractions.Fraction(1, 2 ** 45)) + fractions.Fraction(1, lattice)


def test_lattice_scores_are_integers_within_one_range():
    lattice = 2.0 ** SCORE_LATTICE_BITS
    rng = np.random.default_rng(40)
    y, pred = rng.normal(size=500), rng.normal(size=500) * 3
    for scoring, bound in (("neg_mean_absolute_error", 2.5), ("neg_mean_squared_error", 4.0)):
        scores = _search._lattice_scores(scoring, y, pred, bound)
        assert np.all(scores == np.round(scores)) and np.all((-lattice <= scores) & (scores <= 0))
        # The lattice value is the per-row score over its range, to 2**-K.
        np.testing.assert_allclose(scores / lattice * bound,
                                   _search._per_row_scores(scoring, y, pred, bound),
                                   atol=bound / lattice)
    accuracy = _search._lattice_scores("accuracy", np.array([0, 1, 1]), np.array([0, 0, 1]), 1.0)
    np.testing.assert_array_equal(accuracy, [lattice, 0.0, lattice])


def _released_noise(z, total, n_draws, seed):
    """Released scores of a fixed lattice total, back in lattice units, minus the total."""
    words = GeneratorWords(np.random.default_rng(seed))
    lattice = 2 ** SCORE_LATTICE_BITS
    search = RandomSearchSelection(None, z, 10.0, 0.0)
    scores = np.array([search.noisy_score(total, 1.0, 120, words) for _ in range(n_draws)])
    scaled = scores * 120 * lattice
    return scaled, np.rint(scaled).astype(np.int64) - int(total)


def test_released_scores_are_the_lattice_sum_plus_exact_rounded_gaussian_noise():
    z, total = 2.5, 250 * 2 ** SCORE_LATTICE_BITS
    scaled, noise = _released_noise(z, total, 100_000, seed=41)
    # Integers (to the float rounding of the division by 120, far below 1).
    assert np.abs(scaled - np.rint(scaled)).max() < 1e-3
    s = score_noise_scale(z).scale
    edges = np.arange(-12, 13) * (s // 4) - (s // 4) // 2
    cdf = stats.norm.cdf((edges + 0.5) / s)  # P(round(s G) <= edge)
    expected = np.diff(np.concatenate(([0.0], cdf, [1.0]))) * noise.size
    observed = np.bincount(np.searchsorted(edges, noise, side="left"), minlength=edges.size + 1)
    assert stats.chisquare(observed, expected).pvalue > 1e-4
    # The same test refutes noise 5 percent too small.
    observed = np.bincount(np.searchsorted(edges, np.rint(noise * 0.95), side="left"),
                           minlength=edges.size + 1)
    assert stats.chisquare(observed, expected).pvalue < 1e-6


def test_a_float_score_noise_substituted_back_is_seen_in_the_low_bits(monkeypatch):
    z, total = 2.5, 250 * 2 ** SCORE_LATTICE_BITS

    def off_lattice(scaled):
        return np.abs(scaled - np.rint(scaled)).max() > 0.01

    assert not off_lattice(_released_noise(z, total, 200, seed=42)[0])
    rng = np.random.default_rng(43)
    monkeypatch.setattr(RandomSearchSelection, "noisy_score", lambda self, total, bound, n, words: (
        (total / 2 ** SCORE_LATTICE_BITS + rng.normal(0.0, self.score_noise_multiplier * bound))
        / n))
    assert off_lattice(_released_noise(z, total, 200, seed=42)[0])
