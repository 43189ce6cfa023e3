"""partial_fit, warm_start and coef_init: training continues, the accounting composes."""

import math

import dp_accounting
import numpy as np
import pytest
from sklearn.base import clone

from sklearn_dplssgd import (
    DPLSSGDClassifier,
    DPLSSGDRegressor,
    DPRandomizedSearch,
    PrivacyBudgetExceededError,
    PrivacyLedger,
)
from sklearn_dplssgd._backends import NumpyInput
from sklearn_dplssgd._training._schedules import learning_rate_schedule
from sklearn_dplssgd._training._streaming import compose_events

SEEDED = dict(random_state=0, reproducible=True)


@pytest.fixture(scope="module")
def binary():
    rng = np.random.default_rng(0)
    X = rng.normal(size=(600, 6))
    y = (X @ rng.normal(size=6) + 0.2 > 0).astype(int)
    return X, y


def _pld_epsilon(event, delta, relation=dp_accounting.NeighboringRelation.REPLACE_ONE):
    """dp-accounting's own PLD accountant, at a fine discretization."""
    accountant = dp_accounting.pld.PLDAccountant(relation, value_discretization_interval=1e-4)
    return accountant.compose(event).get_epsilon(delta)


# ------------------------------------------------------------ accounting


def test_partial_fit_composes_the_calls_recomputed_from_dp_event(binary):
    X, y = binary
    clf = DPLSSGDClassifier(epsilon=1.0, batch_size=50)
    for part in np.array_split(np.arange(600), 3):
        clf.partial_fit(X[part], y[part], classes=[0, 1])
    assert len(clf.dp_events_) == 3
    assert clf.dp_event_ == compose_events(clf.dp_events_)
    # Each call is calibrated to epsilon on its own; the total composes them.
    single = [_pld_epsilon(event, clf.delta_) for event in clf.dp_events_]
    assert max(single) <= 1.0 + 1e-3
    recomputed = _pld_epsilon(clf.dp_event_, clf.delta_)
    assert clf.epsilon_ == pytest.approx(recomputed, rel=2e-3)
    assert 1.5 < clf.epsilon_ < 3.0
    # The same composition written flat (no grouping of equal calls).
    flat = _pld_epsilon(dp_accounting.ComposedDpEvent(clf.dp_events_), clf.delta_)
    assert recomputed == pytest.approx(flat, rel=1e-9)
    assert clf.t_ == 3 * clf.n_steps_ == 3 * 4 and clf.n_iter_ == 1


def test_disjoint_batches_report_the_largest_call(binary):
    X, y = binary
    clf = DPLSSGDRegressor(epsilon=1.0, batch_size=50)
    for part in np.array_split(np.arange(600), [200, 500]):  # 200, 300 and 100 rows
        clf.partial_fit(X[part], y[part], disjoint_batches=True)
    assert clf.disjoint_batches_ == [True, True, True]
    assert len({repr(event) for event in clf.dp_events_}) == 3
    expected = max(_pld_epsilon(event, clf.delta_) for event in clf.dp_events_)
    assert clf.epsilon_ == pytest.approx(expected, rel=2e-3)
    assert clf.epsilon_ <= 1.0 + 1e-3
    # dp_event_ still holds the sequential composition (valid without the promise).
    assert _pld_epsilon(clf.dp_event_, clf.delta_) > 1.5


def test_add_remove_partial_fit_composes_under_add_remove(binary):
    X, y = binary
    clf = DPLSSGDClassifier(epsilon=1.0, batch_size=50, neighboring="add_remove",
                            public_n_samples=300)
    with pytest.raises(ValueError, match="public_n_samples"):
        clone(clf).set_params(public_n_samples=None).partial_fit(X, y, classes=[0, 1])
    clf.partial_fit(X[:300], y[:300], classes=[0, 1]).partial_fit(X[300:], y[300:])
    recomputed = _pld_epsilon(clf.dp_event_, clf.delta_,
                              dp_accounting.NeighboringRelation.ADD_OR_REMOVE_ONE)
    assert clf.epsilon_ == pytest.approx(recomputed, rel=2e-3)
    assert clf.neighboring_ == "add_remove" and clf.sample_rate_ == 50 / 300


def test_the_ledger_counts_every_call_and_caps_the_series(binary):
    X, y = binary
    ledger = PrivacyLedger(max_epsilon=1.2, delta=1e-5)
    clf = DPLSSGDClassifier(epsilon=1.0, delta=1e-5, batch_size=100, ledger=ledger)
    clf.partial_fit(X[:300], y[:300], classes=[0, 1])
    coef = clf.coef_.copy()
    assert len(ledger.records) == 1
    with pytest.raises(PrivacyBudgetExceededError):
        clf.partial_fit(X[300:], y[300:])
    # Refused before any row was read: the model and its accounting are unchanged.
    np.testing.assert_array_equal(clf.coef_, coef)
    assert len(clf.dp_events_) == 1 and len(ledger.records) == 1
    clf.set_params(ledger=PrivacyLedger()).partial_fit(X[300:], y[300:])
    assert clf.ledger.epsilon() == pytest.approx(_pld_epsilon(clf.dp_events_[1], 1e-5),
                                                 rel=2e-3)


def test_warm_start_composes_with_the_previous_fit_and_a_cold_fit_resets(binary):
    X, y = binary
    clf = DPLSSGDClassifier(epsilon=1.0, batch_size=100, max_iter=2, classes=[0, 1])
    clf.fit(X, y)
    first = clf.dp_event_
    clf.set_params(warm_start=True).fit(X, y)
    assert clf.dp_events_ == [first, first] and clf.t_ == 2 * clf.n_steps_
    assert clf.epsilon_ == pytest.approx(_pld_epsilon(clf.dp_event_, clf.delta_), rel=2e-3)
    assert clf.epsilon_ > 1.2
    clf.partial_fit(X[:100], y[:100])  # partial_fit continues the series too
    assert len(clf.dp_events_) == 3
    clf.set_params(warm_start=False).fit(X, y)
    assert clf.dp_events_ == [first] and clf.epsilon_ <= 1.0 and clf.t_ == clf.n_steps_
    # A user-given start is public: no composition.
    clf.set_params(warm_start=True).fit(X, y, coef_init=np.zeros((1, 6)))
    assert len(clf.dp_events_) == 1


def test_the_series_keeps_its_delta():
    rng = np.random.default_rng(2)
    X, y = rng.normal(size=(20_100, 3)), rng.normal(size=20_100)
    clf = DPLSSGDRegressor(epsilon=1.0, batch_size=4000)  # delta="auto" from each call's n
    clf.partial_fit(X[:20_000], y[:20_000])
    assert clf.delta_ == 1 / (10 * 20_000)  # min(1e-5, 1 / (10 n))
    clf.partial_fit(X[20_000:], y[20_000:])  # 100 rows alone would give 1e-5
    assert clf.delta_ == 1 / (10 * 20_000)
    assert clf.epsilon_ == pytest.approx(_pld_epsilon(clf.dp_event_, clf.delta_), rel=2e-3)


# ------------------------------------------------------------ training


@pytest.mark.parametrize("average, fit_average", [("auto", False), (True, True)])
def test_one_partial_fit_is_one_epoch_of_fit(binary, average, fit_average):
    X, y = binary
    settings = dict(epsilon=1.0, classes=[0, 1], batch_size=64, **SEEDED)
    # average="auto": the series average of one call is its last iterate.
    streamed = DPLSSGDClassifier(average=average, **settings).partial_fit(X, y)
    one_epoch = DPLSSGDClassifier(max_iter=1, average=fit_average, **settings).fit(X, y)
    np.testing.assert_array_equal(streamed.coef_, one_epoch.coef_)
    assert streamed.n_steps_ == one_epoch.n_steps_ == math.ceil(600 / 64)
    assert repr(streamed.dp_event_) == repr(one_epoch.dp_event_)


@pytest.mark.parametrize("make", [
    lambda: DPLSSGDClassifier(classes=["a", "b", "c"], batch_size=80, average=True, **SEEDED),
    lambda: DPLSSGDRegressor(target_bounds=(-5.0, 3.0), batch_size=80, average=True,
                             **SEEDED),
    lambda: DPLSSGDRegressor(target_bounds=(-5.0, 3.0), fit_intercept=False, batch_size=80,
                             average=False, **SEEDED),
], ids=["multiclass", "target-bounds", "no-intercept"])
def test_a_later_call_starts_from_the_published_model(binary, make):
    # An explicit average: each call publishes its own iterates' mean (the
    # series average of average="auto" is tested below).
    X, y = binary
    if isinstance(make(), DPLSSGDClassifier):
        y = np.array(["a", "b", "c"])[(X[:, 0] > 0).astype(int) + (X[:, 1] > 0.5)]
    else:
        y = 2.0 * X[:, 0] - X[:, 1]
    first = make().partial_fit(X[:300], y[:300])
    second = clone(first).partial_fit(X[:300], y[:300]).partial_fit(X[300:], y[300:])
    # The same epoch run by fit from the first call's published weights
    # (constant learning rate, same row count: the same step sizes).
    restarted = make().set_params(max_iter=1).fit(
        X[300:], y[300:], coef_init=first.coef_,
        intercept_init=first.intercept_ if first.fit_intercept else None)
    np.testing.assert_allclose(second.coef_, restarted.coef_, rtol=1e-12, atol=1e-14)
    np.testing.assert_allclose(second.intercept_, restarted.intercept_, rtol=1e-12,
                               atol=1e-14)
    assert not np.allclose(second.coef_, first.coef_)


def test_warm_start_starts_from_coef(binary):
    X, y = binary
    settings = dict(epsilon=math.inf, classes=[0, 1], batch_size=100, max_iter=2, **SEEDED)
    warm = DPLSSGDClassifier(warm_start=True, **settings).fit(X, y)
    start = warm.coef_.copy(), warm.intercept_.copy()
    warm.fit(X, y)
    cold = DPLSSGDClassifier(**settings).fit(X, y, coef_init=start[0], intercept_init=start[1])
    np.testing.assert_array_equal(warm.coef_, cold.coef_)


def test_a_decaying_learning_rate_continues_across_calls(binary, monkeypatch):
    np.testing.assert_allclose(learning_rate_schedule("invscaling", 2.0, 0.5, 3, first_step=2),
                               2.0 / np.sqrt([3.0, 4.0, 5.0]))
    recorded = []
    real = NumpyInput.trainer

    def recording(*args, **kwargs):
        recorded.append(args[3].learning_rates)  # the TrainingPlan
        return real(*args, **kwargs)

    # The training function the selected backend (NumPy rows) runs.
    monkeypatch.setattr(NumpyInput, "trainer", staticmethod(recording))
    X, y = binary
    clf = DPLSSGDRegressor(learning_rate="inverse_time", batch_size=100, **SEEDED)
    clf.partial_fit(X[:300], y[:300])
    eta0 = clf.eta0_
    clf.partial_fit(X[300:], y[300:])
    assert clf.eta0_ == eta0 and clf.t_ == 6
    np.testing.assert_allclose(recorded[0], eta0 / np.array([1.0, 2.0, 3.0]))
    np.testing.assert_allclose(recorded[1], eta0 / np.array([4.0, 5.0, 6.0]))
    # A warm-started fit is a run of its own: its schedule starts again.
    clf.set_params(warm_start=True, max_iter=1).fit(X[:300], y[:300])
    np.testing.assert_allclose(recorded[2], clf.eta0_ / np.array([1.0, 2.0, 3.0]))
    assert clf.t_ == 9


def test_partial_fit_takes_sample_weights(binary):
    X, y = binary
    settings = dict(epsilon=math.inf, batch_size=10_000, eta0=0.5, classes=[0, 1], **SEEDED)
    weights = np.ones(600)
    weights[::2] = 0.0
    weighted = DPLSSGDClassifier(**settings).partial_fit(X, y, sample_weight=weights)
    removed = DPLSSGDClassifier(**settings).partial_fit(X[1::2], y[1::2])
    np.testing.assert_allclose(weighted.coef_, removed.coef_, rtol=1e-12)


# ------------------------------------------------------------ refusals


def test_partial_fit_needs_a_public_label_set(binary):
    X, y = binary
    with pytest.raises(ValueError, match="classes must be passed to the first call"):
        DPLSSGDClassifier().partial_fit(X, y)
    declared = DPLSSGDClassifier(classes=[0, 1]).partial_fit(X[:100], y[:100])
    declared.partial_fit(X[100:200], y[100:200], classes=[1, 0])  # the same set
    with pytest.raises(ValueError, match="differs from the label set"):
        declared.partial_fit(X, y, classes=[0, 1, 2])
    with pytest.raises(ValueError, match="differs from the label set"):
        DPLSSGDClassifier(classes=[0, 1]).partial_fit(X, y, classes=[0, 2])
    with pytest.raises(ValueError, match="at least two distinct"):
        DPLSSGDClassifier().partial_fit(X, y, classes=[1])
    with pytest.raises(ValueError, match="not in classes"):
        DPLSSGDClassifier().partial_fit(X, y + 1, classes=[0, 1])


def test_a_warm_start_keeps_the_label_set(binary):
    X, y = binary
    clf = DPLSSGDClassifier(warm_start=True, max_iter=1).fit(X, y)
    with pytest.raises(ValueError, match="label set differs"):
        clf.fit(X, y + 1)
    np.testing.assert_array_equal(clf.classes_, [0, 1])


def test_a_series_keeps_its_features_and_adjacency(binary):
    X, y = binary
    clf = DPLSSGDRegressor(batch_size=100).partial_fit(X, y)
    with pytest.raises(ValueError, match="features"):
        clf.partial_fit(X[:, :-1], y)
    with pytest.raises(ValueError, match="do not compose"):
        clf.set_params(neighboring="add_remove", public_n_samples=600).partial_fit(X, y)
    assert len(clf.dp_events_) == 1


@pytest.mark.parametrize("coef_init, intercept_init, error, match", [
    (np.zeros(5), None, ValueError, r"coef_init has shape \(5,\)"),
    (np.zeros((2, 6)), None, ValueError, r"shape \(1, 6\)"),
    (None, [0.0, 1.0], ValueError, "intercept_init has 2 values"),
    (np.full(6, np.nan), None, ValueError, "finite"),
    (["a"] * 6, None, TypeError, "arrays of numbers"),
])
def test_bad_starting_points_are_refused(binary, coef_init, intercept_init, error, match):
    X, y = binary
    with pytest.raises(error, match=match):
        DPLSSGDClassifier(classes=[0, 1]).fit(X, y, coef_init=coef_init,
                                              intercept_init=intercept_init)


def test_an_intercept_start_needs_an_intercept(binary):
    X, y = binary
    with pytest.raises(ValueError, match="only used with fit_intercept=True"):
        DPLSSGDRegressor(fit_intercept=False).fit(X, y, intercept_init=1.0)
    coef = np.arange(6.0)
    user = coef.copy()
    DPLSSGDRegressor(max_iter=1).fit(X, y, coef_init=user, intercept_init=0.5)
    np.testing.assert_array_equal(user, coef)  # never modified


def test_continuing_a_searched_model_composes_with_the_whole_search(binary):
    X, y = binary
    search = DPRandomizedSearch(DPLSSGDClassifier(classes=[0, 1], batch_size=100, max_iter=2),
                                {"sigma": [0.0, 1.0]}, epsilon=1.0, n_trials=2)
    best = search.fit(X, y).best_estimator_
    assert best.dp_events_ == [search.dp_event_]
    best.partial_fit(X[:300], y[:300])
    assert best.dp_events_[0] == search.dp_event_ and len(best.dp_events_) == 2
    assert best.epsilon_ > search.epsilon_


def test_disjoint_calls_compose_in_parallel_with_the_calls_that_may_see_their_rows(binary):
    # Calls 1 and 3 declare new rows; call 2 and 4 may revisit anything.
    # Parts: {1, 2, 4} (rows of call 1, seen again by 2 and 4) and {3, 4}.
    X, y = binary
    clf = DPLSSGDRegressor(epsilon=1.0, batch_size=50)
    sizes = (200, 100, 200, 100)
    flags = (True, False, True, False)
    start = 0
    for size, flag in zip(sizes, flags):
        clf.partial_fit(X[start:start + size], y[start:start + size], disjoint_batches=flag)
        start += size
    assert clf.disjoint_batches_ == list(flags)
    events = clf.dp_events_
    parts = [[events[0], events[1], events[3]], [events[2], events[3]]]
    expected = max(_pld_epsilon(dp_accounting.ComposedDpEvent(part), clf.delta_)
                   for part in parts)
    assert clf.epsilon_ == pytest.approx(expected, rel=2e-3)
    # Fewer releases composed than the whole series, more than one release.
    everything = _pld_epsilon(dp_accounting.ComposedDpEvent(events), clf.delta_)
    assert max(_pld_epsilon(event, clf.delta_) for event in events) < clf.epsilon_
    assert clf.epsilon_ < everything * (1 - 1e-3)
    # A warm-started fit is never declared: it may see every earlier row.
    clf.set_params(warm_start=True, max_iter=1).fit(X[:100], y[:100])
    assert clf.disjoint_batches_[-1] is False


def test_disjoint_batches_must_be_a_bool(binary):
    X, y = binary
    with pytest.raises(TypeError, match="disjoint_batches must be True or False"):
        DPLSSGDRegressor().partial_fit(X, y, disjoint_batches="yes")
