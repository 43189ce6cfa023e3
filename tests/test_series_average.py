"""The series average of ``partial_fit`` (``average="auto"``): post-processing of the calls.

With ``average="auto"`` each call trains without averaging of its own, the
next call continues from its last iterate, and ``coef_`` / ``intercept_``
are the mean of the calls' last iterates weighted by ``s_j t_j^2`` (see
:mod:`sklearn_dplssgd._training._streaming`). The trajectory is exactly that of an
explicit ``average=False`` series, so these tests compare the two.
"""

import pickle
import warnings

import dp_accounting
import numpy as np
import pytest

from sklearn_dplssgd import DPLSSGDClassifier, DPLSSGDRegressor, PrivacyLedger

SEEDED = dict(random_state=3, reproducible=True)
# Unequal blocks: the weights depend on each call's steps and end step.
BLOCKS = (slice(0, 150), slice(150, 400), slice(400, 600))


@pytest.fixture(autouse=True)
def _quiet():
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # reproducible=True: known here
        yield


@pytest.fixture(scope="module")
def table():
    rng = np.random.default_rng(1)
    X = rng.uniform(-1, 1, size=(600, 5))
    y = (X @ rng.normal(size=5) > 0).astype(int)
    return X, y


def _make(kind, **settings):
    settings = {**SEEDED, **settings}
    if kind == "clf":
        return DPLSSGDClassifier(epsilon=1.0, classes=[0, 1], batch_size=25, **settings)
    return DPLSSGDRegressor(epsilon=1.0, target_bounds=(-2.0, 3.0), batch_size=25,
                            **settings)


def _stream(estimator, X, y, **fit_params):
    published = []
    for block in BLOCKS:
        estimator.partial_fit(X[block], y[block], **fit_params)
        published.append((np.array(estimator.coef_, copy=True),
                          np.array(estimator.intercept_, copy=True), estimator.n_steps_,
                          estimator.t_))
    return published


@pytest.mark.parametrize("kind", ["clf", "reg"])
def test_the_published_model_is_the_weighted_mean_of_the_last_iterates(table, kind):
    X, y = table
    if kind == "reg":
        y = 2.0 * X[:, 0] - X[:, 1] + 0.5
    averaged = _make(kind)
    means = _stream(averaged, X, y)
    # The same trajectory published call by call (the last iterates).
    lasts = _stream(_make(kind, average=False), X, y)
    for count in range(1, len(BLOCKS) + 1):
        weights = np.array([steps * float(end) ** 2 for _, _, steps, end in lasts[:count]])
        weights /= weights.sum()
        coef = sum(w * last[0] for w, last in zip(weights, lasts[:count]))
        intercept = sum(w * last[1] for w, last in zip(weights, lasts[:count]))
        np.testing.assert_allclose(means[count - 1][0], coef, rtol=1e-10, atol=1e-12)
        np.testing.assert_allclose(means[count - 1][1], intercept, rtol=1e-10, atol=1e-12)
    # The first call's average is its last iterate; later ones differ from it.
    np.testing.assert_allclose(means[0][0], lasts[0][0], rtol=1e-12)
    assert not np.allclose(means[-1][0], lasts[-1][0])
    assert averaged.average_start_ is None


@pytest.mark.parametrize("disjoint", [False, True])
def test_the_series_average_costs_no_privacy(table, disjoint):
    X, y = table
    ledgers = PrivacyLedger(), PrivacyLedger()
    # Private fits (fresh noise: a seeded fit is not private); the accounting
    # does not depend on the noise drawn.
    private = dict(random_state=None, reproducible=False)
    averaged = _make("clf", ledger=ledgers[0], **private)
    plain = _make("clf", average=False, ledger=ledgers[1], **private)
    _stream(averaged, X, y, disjoint_batches=disjoint)
    _stream(plain, X, y, disjoint_batches=disjoint)
    # The same releases: the same events, accounting and ledger charges.
    assert repr(averaged.dp_events_) == repr(plain.dp_events_)
    assert repr(averaged.dp_event_) == repr(plain.dp_event_)
    assert averaged.epsilon_ == plain.epsilon_
    assert repr(ledgers[0].dp_event) == repr(ledgers[1].dp_event)
    assert ledgers[0].epsilon() == ledgers[1].epsilon()
    # epsilon_ recomputed from the events with dp-accounting itself.
    accountant = dp_accounting.pld.PLDAccountant(
        dp_accounting.NeighboringRelation.REPLACE_ONE, value_discretization_interval=1e-4)
    if disjoint:
        expected = max(dp_accounting.pld.PLDAccountant(
            dp_accounting.NeighboringRelation.REPLACE_ONE,
            value_discretization_interval=1e-4).compose(event).get_epsilon(averaged.delta_)
            for event in averaged.dp_events_)
        assert averaged.epsilon_ <= 1.0 + 1e-9
    else:
        expected = accountant.compose(averaged.dp_event_).get_epsilon(averaged.delta_)
        assert averaged.epsilon_ > 1.0
    assert averaged.epsilon_ == pytest.approx(expected, rel=5e-3)


def test_a_fit_or_an_explicit_average_ends_the_series_average(table):
    X, y = table
    averaged = _make("clf", eta0=0.5)  # a series keeps its first call's eta0
    _stream(averaged, X, y)
    published = averaged.coef_.copy(), averaged.intercept_.copy()
    # An explicit average continues from the published (averaged) weights.
    averaged.set_params(average=False).partial_fit(X[:200], y[:200])
    assert averaged.__dict__["_series_trajectory"] is None
    restarted = _make("clf", average=False, eta0=0.5, max_iter=1).fit(
        X[:200], y[:200], coef_init=published[0], intercept_init=published[1])
    np.testing.assert_allclose(averaged.coef_, restarted.coef_, rtol=1e-12, atol=1e-14)
    # A cold fit ends it too: the next auto call starts a new average from
    # the fit's weights (its published model is its last iterate).
    cold = _make("clf", eta0=0.5).fit(X, y)
    assert cold.__dict__["_series_trajectory"] is None
    start = cold.coef_.copy(), cold.intercept_.copy()
    cold.partial_fit(X[:200], y[:200])
    one_call = _make("clf", average=False, eta0=0.5, max_iter=1).fit(
        X[:200], y[:200], coef_init=start[0], intercept_init=start[1])
    np.testing.assert_allclose(cold.coef_, one_call.coef_, rtol=1e-12, atol=1e-14)


def test_a_pickled_series_goes_on_averaging(table):
    X, y = table
    first = _make("clf")
    first.partial_fit(X[:300], y[:300])
    copy = pickle.loads(pickle.dumps(first))
    first.partial_fit(X[300:], y[300:])
    copy.partial_fit(X[300:], y[300:])
    np.testing.assert_array_equal(first.coef_, copy.coef_)
    np.testing.assert_array_equal(first.intercept_, copy.intercept_)


def test_incremental_publishes_the_series_average(table):
    da = pytest.importorskip("dask.array")
    wrappers = pytest.importorskip("dask_ml.wrappers")
    X, y = table
    incremental = wrappers.Incremental(_make("clf"), shuffle_blocks=False)
    incremental.fit(da.from_array(X, chunks=(200, 5)), da.from_array(y, chunks=200),
                    classes=[0, 1], disjoint_batches=True)
    by_hand = _make("clf")
    for start in (0, 200, 400):
        by_hand.partial_fit(X[start:start + 200], y[start:start + 200],
                            disjoint_batches=True)
    fitted = incremental.estimator_
    np.testing.assert_array_equal(fitted.coef_, by_hand.coef_)
    assert repr(fitted.dp_event_) == repr(by_hand.dp_event_)
    assert fitted.disjoint_batches_ == [True] * 3
    assert fitted.__dict__["_series_trajectory"] is not None
