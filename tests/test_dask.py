"""Dask: ``dask_ml.wrappers.Incremental`` over blocks, and searches on a cluster.

The estimators need no Dask code of their own: ``Incremental`` calls
``partial_fit`` once per block (each call a private release, composed in
``dp_event_``), and joblib's dask backend runs ``GridSearchCV`` and
``DPRandomizedSearch`` on a ``dask.distributed`` cluster, whose worker
processes write to the same file-backed :class:`PrivacyLedger`.
"""

import warnings

import dp_accounting
import numpy as np
import pytest

da = pytest.importorskip("dask.array")
distributed = pytest.importorskip("distributed")
dask_ml_wrappers = pytest.importorskip("dask_ml.wrappers")

import joblib  # noqa: E402
from dp_accounting import pld as dp_pld  # noqa: E402
from sklearn.model_selection import GridSearchCV  # noqa: E402

from sklearn_dplssgd import (  # noqa: E402
    DPLSSGDClassifier,
    DPRandomizedSearch,
    PrivacyLedger,
    PrivacyLeakWarning,
)

N_BLOCKS = 4


@pytest.fixture(autouse=True)
def _quiet():
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", PrivacyLeakWarning)
        warnings.simplefilter("ignore", UserWarning)
        yield


@pytest.fixture(scope="module")
def cluster_client():
    # Two worker processes: the fits really leave this process.
    with distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True,
                                  dashboard_address=None) as cluster:
        with distributed.Client(cluster) as client:
            yield client


def _data(n=2000, d=6, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, d)) / np.sqrt(d)
    y = (X[:, 0] + 0.3 * rng.normal(size=n) > 0).astype(int)
    return X, y


def _pld_epsilon(event, delta):
    accountant = dp_pld.PLDAccountant(dp_accounting.NeighboringRelation.REPLACE_ONE,
                                      value_discretization_interval=1e-4)
    return accountant.compose(event).get_epsilon(delta)


@pytest.mark.parametrize("disjoint", [False, True])
def test_incremental_trains_over_the_blocks_with_every_block_accounted(disjoint):
    X, y = _data()
    X_dask = da.from_array(X, chunks=(len(X) // N_BLOCKS, X.shape[1]))
    y_dask = da.from_array(y, chunks=len(y) // N_BLOCKS)
    estimator = DPLSSGDClassifier(epsilon=1.0, delta=1e-5, classes=[0, 1])
    incremental = dask_ml_wrappers.Incremental(estimator, random_state=0)
    # Incremental.fit hands its keyword arguments to every block's partial_fit.
    incremental.fit(X_dask, y_dask, classes=[0, 1], disjoint_batches=disjoint)
    fitted = incremental.estimator_
    # One release per block, each a private epoch over its own rows.
    assert len(fitted.dp_events_) == N_BLOCKS
    # dp_event_ composes them (runs of equal calls written as self-compositions).
    composed = _pld_epsilon(fitted.dp_event_, 1e-5)
    assert composed == pytest.approx(
        _pld_epsilon(dp_accounting.ComposedDpEvent(fitted.dp_events_), 1e-5), rel=1e-6)
    if disjoint:
        # Parallel composition: the user's promise that no row is in two calls.
        assert fitted.epsilon_ == pytest.approx(
            max(_pld_epsilon(event, 1e-5) for event in fitted.dp_events_), rel=2e-3)
        assert fitted.epsilon_ <= 1.0 < composed
    else:
        assert fitted.epsilon_ == pytest.approx(composed, rel=2e-3) and fitted.epsilon_ > 1.0
    # The wrapper exposes the model and predicts blockwise.
    assert incremental.epsilon_ == fitted.epsilon_
    accuracy = float((incremental.predict(X_dask) == y_dask).mean().compute())
    assert accuracy > 0.7


def test_grid_search_on_a_cluster_records_every_fit_in_the_ledger(cluster_client, tmp_path):
    X, y = _data(n=600)
    ledger = PrivacyLedger(path=str(tmp_path / "ledger"))
    search = GridSearchCV(
        DPLSSGDClassifier(epsilon=1.0, delta=1e-5, classes=[0, 1], max_iter=2, ledger=ledger),
        {"sigma": [0.0, 1.0]}, cv=2)
    with joblib.parallel_backend("dask"):
        search.fit(X, y)
    # 2 candidates x 2 folds, then the refit: all recorded, by the workers too.
    assert len(ledger.records) == 5
    assert ledger.epsilon(1e-5) > 2.0


def test_private_search_on_a_cluster_is_one_release(cluster_client, tmp_path):
    X, y = _data(n=600)
    ledger = PrivacyLedger(path=str(tmp_path / "ledger"))
    search = DPRandomizedSearch(
        DPLSSGDClassifier(classes=[0, 1], max_iter=2), {"sigma": [0.0, 1.0, 2.0]},
        epsilon=1.0, delta=1e-5, n_trials=3, n_jobs=2, ledger=ledger)
    with joblib.parallel_backend("dask"):
        search.fit(X, y)
    assert [record["dp_event"] for record in ledger.records] == [search.dp_event_]
    assert search.epsilon_ <= 1.0
