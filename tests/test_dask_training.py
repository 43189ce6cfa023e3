"""``fit`` on a Dask array trains on the partitions: the same mechanism as in memory.

The rows stay in their partitions (on the workers of a ``LocalCluster`` of
two processes, or in this process under Dask's local scheduler): the same
``dp_event_`` and ``epsilon_`` as the NumPy fit, the same steps where the
sampling is not random (full batches, no noise), no gather of X, and
errors that release nothing.
"""

import warnings

import numpy as np
import pytest

da = pytest.importorskip("dask.array")
dd = pytest.importorskip("dask.dataframe")
distributed = pytest.importorskip("distributed")

from sklearn_dplssgd import (  # noqa: E402
    DPLSSGDClassifier, DPLSSGDRegressor, PrivacyLedger, PrivacyLeakWarning,
)
from sklearn_dplssgd._backends import (  # noqa: E402
    TRUSTED_NETWORK_SETTING, DaskTraining, NonFiniteRowsError, UntrustedNetworkError,
    WorkerLostError, check_cluster_network, is_protected_address,
)


@pytest.fixture(autouse=True)
def _quiet():
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", PrivacyLeakWarning)
        warnings.simplefilter("ignore", UserWarning)
        yield


def _table(n=3000, d=8, seed=0, classes=2):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, d)) / np.sqrt(d)
    margins = X @ rng.normal(size=(d, classes))
    y = margins.argmax(axis=1) if classes > 2 else (margins[:, 0] > 0).astype(int)
    return X, y


def _chunked(X, y, rows=300):
    return da.from_array(X, chunks=(rows, X.shape[1])), da.from_array(y, chunks=rows)


def _noise_free_full_batch(estimator_class, n, **settings):
    return estimator_class(epsilon=np.inf, batch_size=n, max_iter=4, sigma=1.0,
                           reproducible=True, random_state=0, **settings)


# Under Dask's local scheduler: these run before the cluster fixture starts a client.

@pytest.mark.parametrize("estimator_class, settings", [
    (DPLSSGDClassifier, {"classes": [0, 1]}),
    (DPLSSGDClassifier, {"classes": [0, 1, 2], "class_weight": {0: 0.5, 1: 1.0, 2: 1.0}}),
    (DPLSSGDRegressor, {"target_bounds": (-3.0, 3.0)}),
])
def test_full_batch_without_noise_takes_the_in_memory_steps(estimator_class, settings):
    n_classes = len(settings.get("classes", [0, 1]))
    X, y = _table(n=600, classes=n_classes)
    if estimator_class is DPLSSGDRegressor:
        y = X[:, 0] * 2.0 + 0.1
    weights = np.random.default_rng(1).uniform(0.0, 1.0, size=len(X))
    estimator = _noise_free_full_batch(estimator_class, len(X), **settings)
    X_dask, y_dask = _chunked(X, y, rows=130)
    on_dask = estimator.fit(X_dask, y_dask, sample_weight=da.from_array(weights, chunks=130))
    dask_params = np.column_stack([np.atleast_2d(on_dask.coef_),
                                   np.atleast_1d(on_dask.intercept_)])
    in_memory = estimator.fit(X, y, sample_weight=weights)
    expected = np.column_stack([np.atleast_2d(in_memory.coef_),
                                np.atleast_1d(in_memory.intercept_)])
    np.testing.assert_allclose(dask_params, expected, rtol=1e-9, atol=1e-12)


@pytest.mark.parametrize("dtype, sample_rate", [(np.float64, 0.1), (np.float32, 0.1),
                                                (np.float64, 1.0)])
def test_a_workers_actor_answers_the_partitions_sums_and_fails_on_rebuilt_ones(
        dtype, sample_rate, monkeypatch):
    import asyncio

    from sklearn_dplssgd._backends import _dask
    from sklearn_dplssgd._training import loss_code

    X, y = _table(n=500)
    weights = np.random.default_rng(1).uniform(0.0, 1.0, size=len(X))
    partitions = [_dask._prepare(X[start:start + 250].astype(dtype), y[start:start + 250],
                                 weights[start:start + 250], True) for start in (0, 250)]
    seeds = np.random.default_rng(2).integers(0, 2**63, size=(2, 2), dtype=np.int64)
    settings = _dask._StepSettings(loss_code("log_loss"), 0.0, 1.0, True, sample_rate)
    tokens = [partition.token for partition in partitions]
    holder = _dask._PartitionHolder(seeds, settings, tokens, *partitions)
    params = np.random.default_rng(3).normal(size=(1, X.shape[1] + 1)).astype(dtype)

    async def steps():
        answers = [await holder.sums(params, 7)]
        # Queued behind the answer, on the worker's event loop: the next step's sample.
        await asyncio.sleep(0)
        assert holder._drawn_step == 8
        answers.append(await holder.sums(params, 8))
        return answers

    for step, answer in zip((7, 8), asyncio.run(steps())):
        assert answer.dtype == dtype and answer.shape == (2, 1, X.shape[1] + 1)
        # The sums of one task per partition (the local scheduler's), exactly:
        # the sample drawn ahead is the step's own.
        for partition, seed, partial in zip(partitions, seeds, answer):
            expected, _ = _dask._partition_sum(partition, seed, params, step, settings)
            np.testing.assert_array_equal(partial, expected)
    # A draw ahead that failed half way leaves no stale batch: the step draws its own.
    draw_batch = _dask._step_batch

    def failing_on_the_second(partition, *args):
        if partition is partitions[1]:
            raise MemoryError
        return draw_batch(partition, *args)

    with monkeypatch.context() as failing:
        failing.setattr(_dask, "_step_batch", failing_on_the_second)
        with pytest.raises(MemoryError):
            holder._draw(10)
    assert holder._drawn_step != 10
    # Rebuilt partitions (new tokens) under an actor rebuilt from its arguments.
    rebuilt = _dask._PartitionHolder(
        seeds, settings, tokens, *[_dask._prepare(X[:250], y[:250], None, True)] * 2)
    # Sent back as a value (whatever the call itself raises is the transport's), raised here.
    answer = asyncio.run(rebuilt.sums(params, 0))
    with pytest.raises(WorkerLostError, match="released nothing"):
        _dask._unwrap(answer)


@pytest.mark.parametrize("dtype, value, finite, long_rows", [
    (np.float64, np.nan, False, False), (np.float32, np.nan, False, False),
    (np.float64, np.inf, False, False), (np.float32, -np.inf, False, False),
    (np.float64, "y nan", False, False),
    # Finite entries whose row is too long (its norm overflows in float64, or not): the
    # row dropped with a warning, not the partition refused as non-finite.
    (np.float64, 1e300, True, True), (np.float64, -1e200, True, True),
    # A float32 row's norm never overflows in float64, nor reaches the limit.
    (np.float32, 3e38, True, False),
])
def test_a_partition_is_finite_exactly_when_its_values_are(dtype, value, finite, long_rows):
    from sklearn_dplssgd._backends import _dask

    X, y = _table(n=50)
    X, y = X.astype(dtype), y.astype(np.float64)
    if value == "y nan":
        y[7] = np.nan
    else:
        X[7, 3] = value
    with warnings.catch_warnings():
        # No warning of the arithmetic on a partition's values reaches the worker's log.
        warnings.simplefilter("error", RuntimeWarning)
        partition = _dask._prepare(X, y, None, True)
    assert partition.finite is finite
    if finite:
        assert partition.long_rows is long_rows
        assert bool(np.isinf(partition.row_norms[7])) is long_rows
        assert np.isfinite(np.delete(partition.row_norms, 7)).all()


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_a_steps_sample_is_read_in_place_with_the_sums_of_its_rows_copied_out(dtype):
    from sklearn_dplssgd._backends import _dask
    from sklearn_dplssgd._backends._kernels import noisy_clipped_gradient_sum
    from sklearn_dplssgd._training import loss_code

    X, y = _table(n=400)
    weights = np.random.default_rng(1).uniform(0.0, 1.0, size=len(X))
    partition = _dask._prepare(X.astype(dtype), y, weights, True)
    settings = _dask._StepSettings(loss_code("log_loss"), 0.0, 1.0, True, 0.2)
    seed = np.random.default_rng(2).integers(0, 2**63, size=2, dtype=np.int64)
    batch = _dask._step_batch(partition, seed, 5, settings)
    # The rows stay where they are (a copy a step cost a worker more than it saved).
    assert np.shares_memory(batch.X, partition.X) and 0 < len(batch.rows) < len(X)
    params = np.random.default_rng(3).normal(size=(1, X.shape[1] + 1)).astype(dtype)
    in_place = _dask._batch_gradient_sum(batch, params, settings, np.empty_like(params))
    # The same sum, bit for bit, as over the sampled rows copied out in order.
    rows = batch.rows
    copied = np.empty_like(params)
    noisy_clipped_gradient_sum(
        np.ascontiguousarray(partition.X[rows]), partition.y[rows],
        np.arange(len(rows), dtype=np.int64), params, partition.row_norms[rows],
        settings.loss_code, settings.loss_threshold, settings.clip_norm, True,
        np.zeros_like(params), copied, 1, weights=partition.weights[rows],
        feature_norms=partition.feature_norms[rows])
    np.testing.assert_array_equal(in_place, copied)


def test_unknown_chunk_sizes_are_refused_before_anything_is_charged():
    X, y = _table(n=200)
    X_dask, y_dask = _chunked(X, y, rows=50)
    # A boolean mask leaves the chunks' lengths unknown (nan) until computed.
    keep = X_dask[:, 0] < np.inf
    ledger = PrivacyLedger()
    with pytest.raises(ValueError, match=r"compute_chunk_sizes\(\)"):
        DPLSSGDClassifier(classes=[0, 1], ledger=ledger).fit(X_dask[keep], y_dask[keep])
    assert ledger.records == []


def test_non_numeric_dataframe_and_output_perturbation_are_refused():
    pd = pytest.importorskip("pandas")
    frame = pd.DataFrame({"a": [0.1, 0.2, 0.3, 0.4], "b": ["x", "y", "x", "y"]})
    with pytest.raises(TypeError, match="numeric columns"):
        DPLSSGDClassifier(classes=[0, 1]).fit(dd.from_pandas(frame, npartitions=2),
                                              np.array([0, 1, 0, 1]))
    X, y = _table(n=100)
    with pytest.raises(TypeError, match="mechanism='output'"):
        DPLSSGDClassifier(classes=[0, 1], mechanism="output").fit(*_chunked(X, y, rows=50))


# The cluster's network: the fit's secrets cross it only if it is local, TLS or trusted.

@pytest.mark.parametrize("address, protected", [
    ("inproc://192.0.2.2/4242/1", True),
    ("tcp://127.0.0.1:8786", True),
    ("tcp://127.3.2.1:8786", True),
    ("tcp://[::1]:8786", True),
    ("tcp://[::ffff:127.0.0.1]:8786", True),
    ("tcp://localhost:8786", True),
    ("ws://127.0.0.1:8786", True),
    ("tls://10.0.0.5:8786", True),
    ("tls://scheduler.example.org:8786", True),
    ("wss://203.0.113.7:443", True),
    ("tcp://10.0.0.5:8786", False),
    ("10.0.0.5:8786", False),
    ("tcp://0.0.0.0:8786", False),
    ("tcp://[2001:db8::1]:8786", False),
    ("tcp://scheduler.example.org:8786", False),
    ("tcp://localhost.example.org:8786", False),
    ("ws://10.0.0.5:8786", False),
    ("ucx://10.0.0.5:8786", False),
    ("unix:///tmp/dask.sock", False),
    ("", False),
])
def test_an_address_is_protected_when_local_or_tls(address, protected):
    assert is_protected_address(address) is protected


class _Cluster:
    """What the check reads of a client: its scheduler's and workers' addresses."""

    def __init__(self, scheduler, *workers):
        self.scheduler = type("Scheduler", (), {"address": scheduler})()
        self.workers = workers

    def scheduler_info(self):
        return {"workers": {address: {} for address in self.workers}}


def test_a_plaintext_remote_scheduler_or_worker_is_refused_unless_declared_trusted():
    import dask

    # Dask's local scheduler sends nothing.
    assert check_cluster_network() is None
    assert check_cluster_network(_Cluster("tls://10.0.0.5:8786", "tls://10.0.0.6:1")) == (
        "protected")
    assert check_cluster_network(_Cluster("inproc://192.0.2.2/1/1", "inproc://192.0.2.2/1/2")
                                 ) == "protected"
    for cluster, exposed in [
            (_Cluster("tcp://10.0.0.5:8786", "tls://10.0.0.6:1"), "tcp://10.0.0.5:8786"),
            # A TLS scheduler does not make a plaintext worker safe.
            (_Cluster("tls://10.0.0.5:8786", "tls://10.0.0.6:1", "tcp://10.0.0.7:1"),
             "tcp://10.0.0.7:1")]:
        with pytest.raises(UntrustedNetworkError, match="neither local") as refused:
            check_cluster_network(cluster)
        assert exposed in str(refused.value) and TRUSTED_NETWORK_SETTING in str(refused.value)
        with dask.config.set({TRUSTED_NETWORK_SETTING: True}):
            assert check_cluster_network(cluster) == "declared"
        # The environment's spelling of the setting (as Dask reads DASK_* variables).
        with dask.config.set({"sklearn-dplssgd.trusted-network": True}):
            assert check_cluster_network(cluster) == "declared"
        with dask.config.set({TRUSTED_NETWORK_SETTING: False}):
            with pytest.raises(UntrustedNetworkError):
                check_cluster_network(cluster)
    with dask.config.set({TRUSTED_NETWORK_SETTING: "yes"}):
        with pytest.raises(TypeError, match="must be True or False"):
            check_cluster_network(_Cluster("tcp://10.0.0.5:8786"))


def test_an_in_process_cluster_fits_the_model_of_the_local_scheduler(monkeypatch):
    from sklearn_dplssgd._backends import _dask

    X, y = _table(n=600)
    X_dask, y_dask = _chunked(X, y, rows=150)
    estimator = DPLSSGDClassifier(epsilon=1.0, classes=[0, 1], reproducible=True,
                                  random_state=3, max_iter=2)
    expected = estimator.fit(X_dask, y_dask).coef_.copy()
    assert "Cluster:" not in estimator.privacy_report()
    called = []
    coordinate = _dask._CoordinatorTraining.__init__

    def counting(self, holder, state, others, order):
        called.append(len(others))
        coordinate(self, holder, state, others, order)

    monkeypatch.setattr(_dask._CoordinatorTraining, "__init__", counting)
    # Workers in this process: the coordinator calls the other worker's holder.
    with distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=False,
                                  dashboard_address=None) as cluster:
        with distributed.Client(cluster):
            np.testing.assert_array_equal(estimator.fit(X_dask, y_dask).coef_, expected)
            assert called == [1]
            assert "reached locally or over TLS" in estimator.privacy_report()
            # The loop on the client, each step a call to both workers.
            monkeypatch.setattr(DaskTraining, "runs_on_cluster", False)
            np.testing.assert_array_equal(estimator.fit(X_dask, y_dask).coef_, expected)
            assert called == [1]


# Predictions and scores on Dask input: blockwise, lazily, nothing gathered.


def _fitted_models(n=600, d=5):
    X, y = _table(n=n, d=d, classes=3)
    classifier = DPLSSGDClassifier(epsilon=1.0, classes=[0, 1, 2], random_state=0,
                                   max_iter=2).fit(X, y)
    targets = X @ np.linspace(-1.0, 1.0, d)
    regressor = DPLSSGDRegressor(epsilon=1.0, target_bounds=(-2.0, 2.0), random_state=0,
                                 max_iter=2).fit(X, targets)
    return X, y, targets, classifier, regressor


def test_unknown_row_chunks_are_predicted_and_a_nan_fails_when_computed():
    X, y, _, classifier, _ = _fitted_models()
    X_dask = da.from_array(X, chunks=(130, 2))
    keep = X_dask[:, 0] < 0.3  # rows of unknown chunk sizes (nan)
    labels = classifier.predict(X_dask[keep])
    assert isinstance(labels, da.Array) and np.isnan(labels.chunks[0][0])
    np.testing.assert_array_equal(labels.compute(), classifier.predict(X[X[:, 0] < 0.3]))
    # Columns of unknown sizes: the width is not known, refused at once.
    one_column_chunk = da.from_array(X, chunks=(130, 5))
    unknown_width = one_column_chunk.map_blocks(
        lambda block: block, chunks=(one_column_chunk.chunks[0], (np.nan,)), dtype=X.dtype)
    with pytest.raises(ValueError, match="unknown chunk sizes .* columns"):
        classifier.predict(unknown_width)
    with_nan = X.copy()
    with_nan[457, 2] = np.nan
    # Lazy: the partition holding the NaN raises when computed, quoting no value.
    proba = classifier.predict_proba(da.from_array(with_nan, chunks=(130, 5)))
    with pytest.raises(ValueError, match="Input X contains NaN") as raised:
        proba.compute()
    assert "nan," not in str(raised.value).lower()


def test_float32_rows_and_a_wrong_width_under_the_local_scheduler():
    X, _, _, classifier, _ = _fitted_models()
    X32 = X.astype(np.float32)
    margins = classifier.decision_function(da.from_array(X32, chunks=(200, 5)))
    assert margins.dtype == np.float32
    np.testing.assert_allclose(margins.compute(), classifier.decision_function(X32),
                               rtol=1e-6, atol=1e-6)
    with pytest.raises(ValueError, match="X has 4 features, but DPLSSGDClassifier is "
                                         "expecting 5 features"):
        classifier.predict(da.from_array(X[:, :4], chunks=(200, 4)))


def test_r2_on_fewer_than_two_rows_is_nan_with_scikit_learns_warning():
    from sklearn.exceptions import UndefinedMetricWarning

    X, _, targets, _, regressor = _fitted_models()
    with pytest.warns(UndefinedMetricWarning, match="less than two samples"):
        expected = regressor.score(X[:1], targets[:1])
    assert np.isnan(expected)
    # One row in a partition of its own, beside an empty one.
    X_dask = da.concatenate([da.from_array(X[:1], chunks=(1, 5)),
                             da.from_array(X[:0], chunks=(1, 5))])
    for weights in (None, np.zeros(1)):
        with pytest.warns(UndefinedMetricWarning, match="less than two samples"):
            assert np.isnan(regressor.score(X_dask, targets[:1], sample_weight=weights))
    # Two rows are scored (the formula's value).
    two_rows = da.from_array(X[:2], chunks=(1, 5))
    assert regressor.score(two_rows, targets[:2]) == pytest.approx(
        regressor.score(X[:2], targets[:2]), rel=1e-12)
    with pytest.raises(ValueError, match="0 sample"):
        regressor.score(da.from_array(X[:0], chunks=(1, 5)), targets[:0])


@pytest.fixture(scope="module")
def client():
    import dask

    # Two worker processes: the partitions really live in other processes. A worker restarted
    # by a test must come back however busy the machine: the cluster hard-closes the nanny of
    # a worker not back within ``lost-worker-timeout`` (15 s by default), and every later test
    # would then wait for a second worker that never comes.
    with dask.config.set({"distributed.deploy.lost-worker-timeout": "10 minutes"}), \
            distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True,
                                     dashboard_address=None) as cluster, \
            distributed.Client(cluster) as client:
        yield client


def test_same_event_and_epsilon_as_in_memory_and_no_gather(client, monkeypatch):
    X, y = _table()
    X_dask, y_dask = _chunked(X, y)
    estimator = DPLSSGDClassifier(epsilon=1.0, delta=1e-5, classes=[0, 1], random_state=0,
                                  max_iter=3)
    in_memory = estimator.fit(X, y)
    event, epsilon = in_memory.dp_event_, in_memory.epsilon_
    steps, rate, noise = in_memory.n_steps_, in_memory.sample_rate_, in_memory.noise_multiplier_

    def refuse(*args, **kwargs):
        raise AssertionError("the fit gathered X on the client")

    # The client never holds X: computing it (or converting it to NumPy) fails.
    monkeypatch.setattr(da.Array, "compute", refuse)
    monkeypatch.setattr(da.Array, "__array__", refuse)
    on_dask = estimator.fit(X_dask, y_dask)
    monkeypatch.undo()
    assert on_dask.dp_event_ == event and on_dask.epsilon_ == epsilon
    assert (on_dask.n_steps_, on_dask.sample_rate_, on_dask.noise_multiplier_) == (
        steps, rate, noise)
    assert "epsilon" in on_dask.privacy_report()


def test_a_fit_on_a_cluster_reached_in_plaintext_is_refused_before_anything_is_sent(
        client, monkeypatch):
    import dask

    from sklearn_dplssgd import DPRandomizedSearch

    X, y = _table(n=400)
    X_dask, y_dask = _chunked(X, y, rows=100)
    ledger = PrivacyLedger()
    estimator = DPLSSGDClassifier(epsilon=1.0, classes=[0, 1], ledger=ledger, max_iter=2)
    search = DPRandomizedSearch(DPLSSGDClassifier(classes=[0, 1], max_iter=2),
                                {"alpha": [1e-4]}, epsilon=1.0, n_trials=1, ledger=ledger)
    with monkeypatch.context() as elsewhere:
        # As if one worker were on another machine, reached in plaintext.
        elsewhere.setattr(client, "scheduler_info", lambda **kwargs: {
            "workers": {"tcp://10.0.0.5:40000": {}}})

        def refuse(*args, **kwargs):
            raise AssertionError("the fit sent work to the cluster")

        for method in ("submit", "compute", "map", "scatter"):
            elsewhere.setattr(client, method, refuse)
        for fit in (estimator.fit, search.fit):
            with pytest.raises(UntrustedNetworkError, match="tcp://10.0.0.5:40000"):
                fit(X_dask, y_dask)
        assert ledger.records == [] and "coef_" not in estimator.__dict__
        with pytest.raises(UntrustedNetworkError):
            DaskTraining(X_dask, y_dask.astype(float), 1, None, np.random.default_rng(0))
    # Declared trusted, the same cluster trains, and the report says what was assumed.
    with monkeypatch.context() as elsewhere, dask.config.set({TRUSTED_NETWORK_SETTING: True}):
        elsewhere.setattr(client, "scheduler_info", lambda **kwargs: {
            "workers": {"tcp://10.0.0.5:40000": {}}})
        estimator.fit(X_dask, y_dask)
    assert len(ledger.records) == 1
    assert "declared trusted (sklearn_dplssgd.trusted_network)" in estimator.privacy_report()
    # A later release of the series on the local cluster keeps the weaker assumption.
    estimator.partial_fit(X_dask, y_dask)
    assert "declared trusted" in estimator.privacy_report()
    # A fresh fit on the local cluster assumes only its machines.
    estimator.fit(X_dask, y_dask)
    assert "reached locally or over TLS" in estimator.privacy_report()


def test_reproducible_fit_is_the_same_on_the_cluster_and_locally(client, monkeypatch):
    X, y = _table(n=1200)
    X_dask, y_dask = _chunked(X, y, rows=250)
    estimator = DPLSSGDClassifier(epsilon=1.0, classes=[0, 1], reproducible=True,
                                  random_state=3, max_iter=3)
    first = estimator.fit(X_dask, y_dask).coef_.copy()
    np.testing.assert_array_equal(estimator.fit(X_dask, y_dask).coef_, first)
    with monkeypatch.context() as direct:
        # The client reaching the workers itself rather than through the scheduler.
        direct.setattr(client, "direct_to_workers", True)
        np.testing.assert_array_equal(estimator.fit(X_dask, y_dask).coef_, first)
    with monkeypatch.context() as local:
        # Dask's local scheduler, in this process: the same draws, the same sums.
        local.setattr("sklearn_dplssgd._backends._dask._active_client", lambda: None)
        np.testing.assert_array_equal(estimator.fit(X_dask, y_dask).coef_, first)
    with monkeypatch.context() as on_the_client:
        # The loop on the client, each step a call to every worker.
        on_the_client.setattr(DaskTraining, "runs_on_cluster", False)
        np.testing.assert_array_equal(estimator.fit(X_dask, y_dask).coef_, first)
    # Another seed samples and noises differently.
    assert not np.array_equal(estimator.set_params(random_state=4).fit(X_dask, y_dask).coef_,
                              first)


def test_the_loop_on_a_worker_draws_what_the_loop_on_the_client_draws(client, monkeypatch):
    from sklearn_dplssgd._backends import _dask

    X, y = _table(n=900)
    X_dask, y_dask = _chunked(X, y, rows=150)
    estimator = DPLSSGDClassifier(epsilon=1.0, classes=[0, 1], reproducible=True,
                                  random_state=5, max_iter=2, average=True)
    states, loops = {}, []
    train_on_cluster, run_training = DaskTraining.train_on_cluster, _dask.run_training

    def on_a_worker(self):
        params = train_on_cluster(self)
        states["worker"] = self.rng.bit_generator.state
        return params

    def on_the_client(backend, *args, **kwargs):
        loops.append(backend)
        params = run_training(backend, *args, **kwargs)
        states["client"] = backend.rng.bit_generator.state
        return params

    monkeypatch.setattr(DaskTraining, "train_on_cluster", on_a_worker)
    monkeypatch.setattr(_dask, "run_training", on_the_client)
    on_worker = estimator.fit(X_dask, y_dask).coef_.copy()
    # Nothing of the loop ran here.
    assert not loops and "client" not in states
    with monkeypatch.context() as client_loop:
        client_loop.setattr(DaskTraining, "runs_on_cluster", False)
        np.testing.assert_array_equal(estimator.fit(X_dask, y_dask).coef_, on_worker)
    assert len(loops) == 1
    # The fit's generator goes on from where the worker's loop left it.
    assert _same_state(states["worker"], states["client"])


def _same_state(first, second):
    """Bit generator states equal, the arrays in them (an AES key schedule, counters) too."""
    if isinstance(first, dict):
        return (isinstance(second, dict) and first.keys() == second.keys()
                and all(_same_state(first[key], second[key]) for key in first))
    if isinstance(first, np.ndarray):
        return isinstance(second, np.ndarray) and np.array_equal(first, second)
    return first == second


def test_accuracy_matches_the_in_memory_fit(client):
    X, y = _table(n=8000, d=10, seed=5)
    X, X_test, y, y_test = X[:6000], X[6000:], y[:6000], y[6000:]
    X_dask, y_dask = _chunked(X, y, rows=1000)
    # Few, large steps: each step is a round trip to the workers.
    estimator = DPLSSGDClassifier(epsilon=1.0, classes=[0, 1], batch_size=1000, max_iter=10)
    on_dask = np.mean([estimator.fit(X_dask, y_dask).score(X_test, y_test) for _ in range(3)])
    in_memory = np.mean([estimator.fit(X, y).score(X_test, y_test) for _ in range(3)])
    assert on_dask > 0.85
    assert abs(on_dask - in_memory) < 0.02


def test_dataframe_of_numeric_columns(client):
    pd = pytest.importorskip("pandas")
    X, y = _table(n=800, d=3)
    frame = dd.from_pandas(pd.DataFrame(X, columns=["a", "b", "c"]), npartitions=4)
    labels = dd.from_pandas(pd.Series(y), npartitions=4)
    model = DPLSSGDClassifier(epsilon=1.0, classes=[0, 1], batch_size=400, max_iter=2).fit(
        frame, labels)
    assert list(model.feature_names_in_) == ["a", "b", "c"] and model.n_features_in_ == 3


def test_nan_on_a_worker_fails_closed_and_the_ledger_is_charged(client):
    X, y = _table(n=600)
    X[457, 2] = np.nan  # in the second worker's partitions
    ledger = PrivacyLedger()
    estimator = DPLSSGDClassifier(epsilon=1.0, classes=[0, 1], ledger=ledger)
    with pytest.raises(NonFiniteRowsError, match="NaN or infinity"):
        estimator.fit(*_chunked(X, y, rows=100))
    assert "coef_" not in estimator.__dict__
    # Charged before any row was read, like every fit that may read rows.
    assert len(ledger.records) == 1


@pytest.mark.parametrize("how", ["restarted", "crashed"])
def test_a_worker_lost_mid_fit_fails_closed(client, monkeypatch, how):
    import os
    import time

    X, y = _table(n=600)
    X_dask, y_dask = _chunked(X, y, rows=100)
    original = DaskTraining.gradient_sum
    calls = []

    def lose_a_worker(self, params, draws, local_step):
        calls.append(local_step)
        if len(calls) == 3:
            # The worker holding the first partition goes away (and comes back empty):
            # restarted by the client, or its process exiting while the fit goes on.
            holder = next(iter(client.who_has(self._partitions[:1]).values()))[0]
            if how == "restarted":
                client.restart_workers([holder], timeout=300)
            else:
                client.submit(os._exit, 1, workers=[holder], pure=False)
                # Until the scheduler has seen it go (no more than a few seconds).
                for _ in range(200):
                    if holder not in client.scheduler_info()["workers"]:
                        break
                    time.sleep(0.05)
        return original(self, params, draws, local_step)

    monkeypatch.setattr(DaskTraining, "gradient_sum", lose_a_worker)
    ledger = PrivacyLedger()
    # Progress lines keep the loop on the client (it prints every epoch's iterate).
    estimator = DPLSSGDClassifier(epsilon=1.0, classes=[0, 1], ledger=ledger, max_iter=2,
                                  verbose=1)
    with pytest.raises(WorkerLostError, match="released nothing"):
        estimator.fit(X_dask, y_dask)
    assert "coef_" not in estimator.__dict__ and len(ledger.records) == 1
    assert len(calls) >= 3


def _on_both_workers(client, X, y):
    """X and y in 6 partitions of 100 rows, the first 3 on one worker, the others on the other.

    A worker holding none of the partitions takes no part in the fit (losing
    it loses nothing), and the scheduler may well put them all on one. Fresh
    keys at each call (a lost key of an earlier case is not asked for again).
    """
    X_dask = da.from_array(X, chunks=(100, X.shape[1]), name=False)
    y_dask = da.from_array(y, chunks=100, name=False)
    first, second = sorted(client.scheduler_info()["workers"])
    return (da.concatenate([part[:300].persist(workers=[first]),
                            part[300:].persist(workers=[second])]) for part in (X_dask, y_dask))


def _steps_drawn(keys, dask_worker):
    """The latest step this fit's holder on this worker has drawn a sample for (-1: none)."""
    return max([dask_worker.state.actors[key]._drawn_step or -1
                for key in keys if key in dask_worker.state.actors], default=-1)


@pytest.mark.parametrize("lost, how", [("coordinator", "restarted"), ("other", "restarted"),
                                       ("other", "crashed")])
def test_a_worker_lost_while_the_loop_runs_on_a_worker_fails_closed(client, monkeypatch,
                                                                    lost, how):
    import concurrent.futures
    import os
    import threading
    import time

    # A worker crashed by an earlier test is brought back by its nanny.
    client.wait_for_workers(2, timeout=300)
    X_dask, y_dask = _on_both_workers(client, *_table(n=600))
    original = DaskTraining.train_on_cluster
    started, workers = threading.Event(), {}

    def note_the_coordinator(self):
        try:
            # The coordinator is the worker of the first partition (the first holder).
            workers["coordinator"] = client.who_has(self._partitions[:1])[
                self._partitions[0].key][0]
            workers["other"] = next(address for address in client.scheduler_info()["workers"]
                                    if address != workers["coordinator"])
            workers["holders"] = [holder.key for holder in self._runner._actor_futures]
        finally:
            started.set()
        return original(self)

    monkeypatch.setattr(DaskTraining, "train_on_cluster", note_the_coordinator)
    ledger = PrivacyLedger()
    # Tens of thousands of steps: the loss comes long before the loop's end even on a busy
    # machine (a loop that ended first would rightly release its model); a passing run stops
    # at the loss.
    estimator = DPLSSGDClassifier(epsilon=1.0, classes=[0, 1], ledger=ledger, batch_size=6,
                                  max_iter=300)
    with concurrent.futures.ThreadPoolExecutor(1) as pool:
        fit = pool.submit(estimator.fit, X_dask, y_dask)
        assert started.wait(60), fit.exception()
        # Until the loop is a few steps in, on the workers (a worker lost before the holders
        # exist is only a slower start: the fit then rightly trains on its replacement).
        deadline = time.monotonic() + 60
        while min(client.run(_steps_drawn, workers["holders"]).values()) < 3:
            assert time.monotonic() < deadline and not fit.done(), "the loop did not start"
            time.sleep(0.01)
        if how == "restarted":
            client.restart_workers([workers[lost]], timeout=300)
        else:
            client.submit(os._exit, 1, workers=[workers[lost]], pure=False)
        with pytest.raises(WorkerLostError, match="released nothing"):
            fit.result(timeout=120)
    assert "coef_" not in estimator.__dict__ and len(ledger.records) == 1


# Run on every worker by ``client.run(exec, ...)``: a holder's sums fail at step 3 with a
# RuntimeError of its own on the worker named (the function is not sent: the workers' module).
_BREAK_THE_SUMS = """
import sklearn_dplssgd._backends._dask as module

def broken(self, params, step, sums=module._PartitionHolder._sums):
    if step == 3 and dask_worker.address == {address!r}:
        raise RuntimeError("a fault of the step, not of the cluster")
    return sums(self, params, step)

module._PartitionHolder._unbroken_sums = module._PartitionHolder._sums
module._PartitionHolder._sums = broken
"""
_MEND_THE_SUMS = """
import sklearn_dplssgd._backends._dask as module

module._PartitionHolder._sums = module._PartitionHolder.__dict__["_unbroken_sums"]
del module._PartitionHolder._unbroken_sums
"""


def _exec_on_worker(code, dask_worker):
    exec(code, {"dask_worker": dask_worker})


@pytest.mark.parametrize("where", ["coordinator", "other", "client loop"])
def test_an_error_of_the_loop_on_a_worker_is_raised_as_itself_and_fails_closed(client, where):
    client.wait_for_workers(2, timeout=300)
    X_dask, y_dask = _on_both_workers(client, *_table(n=600))
    # The coordinator is the worker of the first partition (the first holder).
    coordinator, other = sorted(client.scheduler_info()["workers"])
    ledger = PrivacyLedger()
    # Progress lines keep the loop on the client, each step a call to both workers.
    estimator = DPLSSGDClassifier(epsilon=1.0, classes=[0, 1], ledger=ledger, batch_size=60,
                                  max_iter=2, verbose=int(where == "client loop"))
    broken = other if where == "other" else coordinator
    # On that worker alone: a call to every worker would also wait for one still restarting.
    client.run(_exec_on_worker, _BREAK_THE_SUMS.format(address=broken), workers=[broken])
    try:
        with pytest.raises(RuntimeError, match="a fault of the step") as raised:
            estimator.fit(X_dask, y_dask)
    finally:
        client.run(_exec_on_worker, _MEND_THE_SUMS, workers=[broken])
    # Not reported as a lost worker: both workers are there.
    assert not isinstance(raised.value, WorkerLostError)
    assert "coef_" not in estimator.__dict__ and len(ledger.records) == 1


def test_search_trains_and_scores_on_the_cluster(client, monkeypatch):
    from sklearn_dplssgd import DPRandomizedSearch

    X, y = _table(n=1200, d=4, seed=2)
    X_dask, y_dask = _chunked(X, y, rows=200)

    def refuse(*args, **kwargs):
        raise AssertionError("the search gathered rows on the client")

    original_compute = da.Array.compute

    def compute_scalars_only(self, *args, **kwargs):
        # Only a trial's score sum (a 0-d array) may come back.
        if self.ndim:
            refuse()
        return original_compute(self, *args, **kwargs)

    monkeypatch.setattr(da.Array, "compute", compute_scalars_only)
    monkeypatch.setattr(da.Array, "__array__", refuse)
    ledger = PrivacyLedger()
    search = DPRandomizedSearch(
        DPLSSGDClassifier(classes=[0, 1], batch_size=200, max_iter=2),
        {"alpha": [1e-4]}, epsilon=2.0, n_trials=1,
        ledger=ledger).fit(X_dask, y_dask)
    monkeypatch.undo()
    assert len(ledger.records) == 1 and search.n_trials_ == len(search.trials_) >= 1
    assert np.isfinite(search.epsilon_) and search.best_estimator_.n_features_in_ == 4
    assert search.score(X, y) > 0.6
    # The best model predicts and scores the Dask rows on the workers too.
    with monkeypatch.context() as patched:
        _refusing_gathers(patched, len(X))
        predicted = search.predict(X_dask)
        score = search.score(X_dask, y_dask)
    assert isinstance(predicted, da.Array)
    np.testing.assert_array_equal(predicted.compute(), search.predict(X))
    assert score == pytest.approx(search.score(X, y), rel=1e-12)


@pytest.mark.parametrize("search_settings, message", [
    ({"n_jobs": 2}, "n_jobs must be None or 1"),
    ({"pipeline": True}, "not a Pipeline"),
])
def test_search_refuses_what_would_gather_before_the_charge(search_settings, message):
    from sklearn.pipeline import make_pipeline

    from sklearn_dplssgd import BoundedScaler, DPRandomizedSearch

    X, y = _table(n=400, d=3)
    estimator = DPLSSGDClassifier(classes=[0, 1])
    space = {"alpha": [0.0, 1e-4]}
    if search_settings.pop("pipeline", False):
        estimator = make_pipeline(BoundedScaler(lower=-1.0, upper=1.0), estimator)
        space = {"dplssgdclassifier__alpha": [0.0, 1e-4]}
    ledger = PrivacyLedger()
    search = DPRandomizedSearch(estimator, space, epsilon=1.0, ledger=ledger,
                                **search_settings)
    with pytest.raises((TypeError, ValueError), match=message):
        search.fit(*_chunked(X, y, rows=100))
    assert ledger.records == []


def _refusing_gathers(monkeypatch, n_rows):
    """Make computing a Dask array of as many values as rows (or more) fail on the client."""
    original_compute = da.Array.compute

    def refuse(*args, **kwargs):
        raise AssertionError("X or a prediction was gathered on the client")

    def compute_sums_only(self, *args, **kwargs):
        if self.size >= n_rows:
            refuse()
        return original_compute(self, *args, **kwargs)

    monkeypatch.setattr(da.Array, "compute", compute_sums_only)
    monkeypatch.setattr(da.Array, "__array__", refuse)


def test_predictions_run_blockwise_on_the_cluster(client, monkeypatch):
    X, _, _, classifier, regressor = _fitted_models()
    X_dask = da.from_array(X, chunks=(130, 3))
    methods = [(classifier, "predict"), (classifier, "decision_function"),
               (classifier, "predict_proba"), (classifier, "predict_log_proba"),
               (regressor, "predict")]
    with monkeypatch.context() as patched:
        _refusing_gathers(patched, len(X))
        lazy = [getattr(model, method)(X_dask) for model, method in methods]
    for (model, method), result in zip(methods, lazy):
        assert isinstance(result, da.Array) and result.chunks[0] == X_dask.chunks[0]
        # Computed on the workers; only this test brings the predictions back.
        computed = client.compute(result).result()
        np.testing.assert_allclose(computed, getattr(model, method)(X), rtol=1e-12,
                                   err_msg=method)


def test_scores_add_the_partitions_sums_and_equal_scikit_learns(client, monkeypatch):
    from sklearn.metrics import accuracy_score, r2_score

    X, y, targets, classifier, regressor = _fitted_models()
    weights = np.random.default_rng(4).uniform(0.0, 2.0, size=len(X))
    X_dask = da.from_array(X, chunks=(130, 5))
    y_dask, targets_dask = da.from_array(y, chunks=130), da.from_array(targets, chunks=100)
    with monkeypatch.context() as patched:
        _refusing_gathers(patched, len(X))
        accuracy = classifier.score(X_dask, y_dask, sample_weight=weights)
        r2 = regressor.score(X_dask, targets_dask, sample_weight=da.from_array(weights, 150))
        unweighted_r2 = regressor.score(X_dask, targets)
    assert isinstance(accuracy, float) and isinstance(r2, float)
    assert accuracy == pytest.approx(
        accuracy_score(y, classifier.predict(X), sample_weight=weights), rel=1e-12)
    assert r2 == pytest.approx(
        r2_score(targets, regressor.predict(X), sample_weight=weights), rel=1e-9)
    assert unweighted_r2 == pytest.approx(regressor.score(X, targets), rel=1e-9)


def test_dataframe_predictions_and_score_on_the_cluster(client, monkeypatch):
    pd = pytest.importorskip("pandas")
    X, y = _table(n=800, d=3)
    columns = ["a", "b", "c"]
    model = DPLSSGDClassifier(epsilon=1.0, classes=[0, 1], random_state=0, max_iter=2).fit(
        pd.DataFrame(X, columns=columns), y)
    frame = dd.from_pandas(pd.DataFrame(X, columns=columns), npartitions=4)
    labels = dd.from_pandas(pd.Series(y), npartitions=4)
    with monkeypatch.context() as patched:
        _refusing_gathers(patched, len(X))
        predicted = model.predict(frame)
        score = model.score(frame, labels)
    np.testing.assert_array_equal(client.compute(predicted).result(), model.predict(X))
    assert score == pytest.approx(model.score(pd.DataFrame(X, columns=columns), y), rel=1e-12)
    # The columns are checked on the client, from the DataFrame's metadata.
    renamed = dd.from_pandas(pd.DataFrame(X, columns=["a", "b", "z"]), npartitions=4)
    with pytest.raises(ValueError, match="feature names should match"):
        model.predict(renamed)
