"""Many cores (``n_jobs``): chunks shared by threads, the per-fit passes, drawing ahead.

A threaded fit must be the serial fit up to the order of the additions: the
same batches and the same noise (drawn one chunk ahead on their own thread),
the same clip for every row, in every way the threads can be run.
"""

import concurrent.futures
import queue
import threading
import time
import warnings

import numpy as np
import pytest
import scipy.sparse as sp
import sklearn
from sklearn.utils import assert_all_finite

from sklearn_dplssgd import DPLSSGDClassifier, DPLSSGDRegressor
from sklearn_dplssgd._linear_model import _base
from sklearn_dplssgd._backends import _kernels, _numpy as _sgd, _row_passes, _sparse, _threads
from sklearn_dplssgd._training import _loop as _training
from sklearn_dplssgd._backends._kernels import PARALLEL_MIN_WORK
from sklearn_dplssgd._backends._threads import draws_ahead


def _problem(seed=12, n=3000, d=64, n_classes=10):
    rng = np.random.default_rng(seed)
    X = rng.uniform(-1.0, 1.0, (n, d)) / 4.0
    y = rng.integers(0, n_classes, n)
    return X, y


def _fit(X, y, n_jobs, **params):
    settings = dict(classes=range(10), batch_size=1000, max_iter=3, sigma=1.0,
                    random_state=0, reproducible=True)
    settings.update(params)
    return DPLSSGDClassifier(n_jobs=n_jobs, **settings).fit(X, y)


@pytest.fixture
def small_chunks(monkeypatch):
    # Two steps' noise per chunk, so that a fit has several chunks and the
    # draws really run ahead of the training.
    monkeypatch.setattr(_training, "NOISE_VALUES_PER_CHUNK", 2 * 10 * 65)


@pytest.fixture
def counted(monkeypatch):
    """Count the steps split over the threads and the draws-ahead loops."""
    calls = {"chunks": 0, "ahead": 0}

    def counting(module, name, key):
        original = getattr(module, name)

        def wrapper(*args, **kwargs):
            calls[key] += 1
            return original(*args, **kwargs)
        monkeypatch.setattr(module, name, wrapper)

    counting(_kernels, "sum_over_chunks", "chunks")
    counting(_sparse, "sum_over_chunks", "chunks")
    counting(_sgd, "draws_ahead", "ahead")
    team_steps = _sgd.team_steps

    def counting_team_steps(*args):
        # A compiled team run: its steps whose batches are split (the last
        # argument but one holds each step's rows per chunk, 0 where not split).
        calls["chunks"] += int((args[-2] > 0).sum())
        return team_steps(*args)

    monkeypatch.setattr(_sgd, "team_steps", counting_team_steps)
    return calls


def _assert_same_fit(threaded, serial):
    np.testing.assert_allclose(threaded.coef_, serial.coef_, rtol=1e-9,
                               atol=1e-12 * np.abs(serial.coef_).max())
    np.testing.assert_allclose(threaded.intercept_, serial.intercept_, rtol=1e-9,
                               atol=1e-12 * np.abs(serial.coef_).max())
    assert str(threaded.dp_event_) == str(serial.dp_event_)


@pytest.mark.parametrize("sparse", [False, True])
@pytest.mark.parametrize("n_jobs", [2, 3])
def test_threaded_fit_is_the_serial_fit(monkeypatch, small_chunks, counted, sparse, n_jobs):
    # n_jobs=3 on a machine of 4 cores (or more): one thread draws ahead, two
    # share the gradients; with 2 both share them and the draws are inline.
    monkeypatch.setattr(_base.os, "cpu_count", lambda: 4)
    X, y = _problem()
    assert 1000 * 10 * 64 >= PARALLEL_MIN_WORK
    if sparse:
        X = sp.csr_matrix(np.where(np.abs(X) > 0.05, X, 0.0))  # 80 % stored
    serial = _fit(X, y, None)
    assert counted == {"chunks": 0, "ahead": 0}
    threaded = _fit(X, y, n_jobs)
    n_steps = threaded.n_steps_
    assert counted["chunks"] == n_steps and counted["ahead"] == (n_jobs == 3)
    _assert_same_fit(threaded, serial)
    assert not np.allclose(serial.coef_, 0.0)


def test_concurrent_threaded_fits_from_several_threads(small_chunks):
    # GridSearchCV's threading backend, Dask's threaded scheduler: several
    # threaded fits at once must each be the serial fit.
    X, y = _problem(seed=13)
    serial = _fit(X, y, None)
    with concurrent.futures.ThreadPoolExecutor(max_workers=3) as executor:
        fits = list(executor.map(lambda n_jobs: _fit(X, y, n_jobs), [2, 2, -1]))
    for threaded in fits:
        _assert_same_fit(threaded, serial)


def test_regressor_and_weights_threaded(small_chunks):
    rng = np.random.default_rng(14)
    X = rng.uniform(-1.0, 1.0, (8000, 64)) / 8.0
    y = X @ rng.normal(size=64)
    weights = rng.uniform(0.0, 2.0, len(X))
    settings = dict(batch_size=7000, max_iter=2, random_state=0, reproducible=True,
                    max_sample_weight=2.0)
    serial = DPLSSGDRegressor(**settings).fit(X, y, sample_weight=weights)
    threaded = DPLSSGDRegressor(n_jobs=2, **settings).fit(X, y, sample_weight=weights)
    np.testing.assert_allclose(threaded.coef_, serial.coef_, rtol=1e-9, atol=1e-12)


def test_draws_ahead_draws_exactly_as_inline():
    def draws(iterate):
        rng = np.random.default_rng(5)
        out = list(iterate(range(7), lambda i: rng.standard_normal(1000 + i)))
        return out, rng.standard_normal(3)

    inline, inline_after = draws(lambda chunks, draw: map(draw, chunks))
    ahead, ahead_after = draws(draws_ahead)
    assert len(ahead) == 7
    for a, b in zip(ahead, inline):
        np.testing.assert_array_equal(a, b)
    np.testing.assert_array_equal(ahead_after, inline_after)  # the generator ends alike
    assert list(draws_ahead([], lambda i: i)) == []


def test_draws_ahead_raises_the_draws_error():
    def draw(i):
        if i == 2:
            raise RuntimeError("draw failed")
        return i

    with pytest.raises(RuntimeError, match="draw failed"):
        list(draws_ahead(range(5), draw))


@pytest.mark.parametrize("work, n_rows, n_threads, expected", [
    (PARALLEL_MIN_WORK - 1, 256, 16, 1),
    (PARALLEL_MIN_WORK, 256, 1, 1),
    (PARALLEL_MIN_WORK, 256, 16, 4),
    (256 * 10 * 784, 256, 16, 16),
    (256 * 10 * 784, 3, 16, 3),
])
def test_parallel_blocks(work, n_rows, n_threads, expected):
    assert _kernels.parallel_blocks(work, n_rows, n_threads) == expected


def _chunked_problem(n_outputs, dtype, sparse, seed=21, n_rows=3000, n_features=40):
    rng = np.random.default_rng(seed)
    X = rng.uniform(-1.0, 1.0, size=(n_rows + 50, n_features)).astype(dtype)
    if sparse:
        X = sp.csr_matrix(np.where(np.abs(X) > 0.3, X, 0.0).astype(dtype))
    y = rng.integers(0, max(n_outputs, 2), X.shape[0]).astype(np.float64)
    params = rng.normal(scale=0.5, size=(n_outputs, n_features + 1)).astype(dtype)
    noise = rng.normal(size=params.shape).astype(dtype)
    rows = np.sort(rng.choice(X.shape[0], size=n_rows, replace=False)).astype(np.int64)
    return X, y, rows, params, noise


def _chunked_sum(X, y, rows, params, noise, n_threads):
    code = 0 if params.shape[0] == 1 else _multinomial_code()
    kernel = (_sparse.noisy_clipped_gradient_sum_sparse if sp.issparse(X)
              else _kernels.noisy_clipped_gradient_sum)
    grad = np.empty_like(params)
    kernel(X, y, rows, params, np.sqrt(np.asarray(X.multiply(X).sum(axis=1)).ravel()
                                       if sp.issparse(X) else (X.astype(float) ** 2).sum(1)),
           code, 0.0, 1.0, True, noise, grad, n_threads)
    return grad


def _multinomial_code():
    from oracles import LOG_LOSS_MULTINOMIAL
    return LOG_LOSS_MULTINOMIAL


@pytest.mark.parametrize("sparse", [False, True])
@pytest.mark.parametrize("n_outputs", [1, 5])
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_chunked_sum_is_the_serial_sum_and_reproducible(sparse, n_outputs, dtype):
    X, y, rows, params, noise = _chunked_problem(n_outputs, dtype, sparse)
    serial = _chunked_sum(X, y, rows, params, noise, 1)
    threaded = _chunked_sum(X, y, rows, params, noise, 2)
    tolerance = 1e-4 if dtype == np.float32 else 1e-11
    np.testing.assert_allclose(threaded, serial, rtol=tolerance,
                               atol=tolerance * np.abs(serial).max())
    assert threaded.dtype == dtype and not np.allclose(serial, noise)
    # Whatever thread took which chunk, the chunks are added in one order.
    for _ in range(3):
        np.testing.assert_array_equal(_chunked_sum(X, y, rows, params, noise, 2), threaded)


class _AbsentHelpers:
    """Helpers that the system never runs: the work handed to them is dropped."""

    class _Dropped:
        def put(self, item):
            pass

    def __init__(self, n_helpers):
        self.queues = [self._Dropped() for _ in range(n_helpers)]


class _StalledHelpers:
    """Helpers that each take ``n_taken`` chunks and then stall until released.

    Two: as a one-output helper holds its next chunk (taken ahead, to
    prefetch its rows) while it computes the current one.
    """

    def __init__(self, n_helpers, release, n_taken=1):
        self.release, self.queues, self.n_taken = release, [self] * n_helpers, n_taken

    def put(self, item):
        claim, args, job = item
        progress = args[-2]

        def stall():
            chunks = [_threads.take_chunk(progress) for _ in range(self.n_taken)]
            self.release.wait(10)
            for chunk in chunks:
                if chunk >= 0:
                    claim(*args, chunk)  # too late: its sum is no longer read
            job.release()
        threading.Thread(target=stall, daemon=True).start()


@pytest.mark.parametrize("n_outputs", [1, 3])
@pytest.mark.parametrize("helpers", ["absent", "stalled", "stalled holding two"])
def test_a_step_never_waits_for_a_thread_that_does_not_run(monkeypatch, helpers, n_outputs):
    # Enough work for the batch to be split (batch * outputs * features).
    X, y, rows, params, noise = _chunked_problem(n_outputs, np.float64, False, seed=22,
                                                 n_features=200 // n_outputs)
    assert rows.shape[0] * n_outputs * X.shape[1] >= PARALLEL_MIN_WORK
    expected = _chunked_sum(X, y, rows, params, noise, 3)
    release = threading.Event()
    if helpers == "absent":
        monkeypatch.setattr(_threads, "_helpers", _AbsentHelpers)
    else:
        n_taken = 2 if helpers == "stalled holding two" else 1
        monkeypatch.setattr(_threads, "_helpers",
                            lambda n: _StalledHelpers(n, release, n_taken))
    started = time.perf_counter()
    got = _chunked_sum(X, y, rows, params, noise, 3)
    elapsed = time.perf_counter() - started
    release.set()
    # The calling thread did every chunk itself (the stalled ones again).
    np.testing.assert_array_equal(got, expected)
    assert elapsed < 5.0


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_row_norms_on_threads_are_the_serial_ones(dtype):
    rng = np.random.default_rng(23)
    X = rng.normal(size=(1001, 17)).astype(dtype)
    X[3] = np.finfo(dtype).max / 16  # overflows a plain sum of squares
    X[500] = 2.5e-23  # underflows one in float32
    serial = _row_passes.row_norms_of(X)
    np.testing.assert_array_equal(_row_passes.row_norms_of(X, 3), serial)
    assert np.isfinite(serial).all() and serial[500] > 0


@pytest.mark.parametrize("sparse", [False, True])
def test_reproducible_threaded_fits_are_the_same_model(counted, sparse):
    X, y = _problem(seed=24, n=2000)
    X = X.astype(np.float32)
    if sparse:
        X = sp.csr_matrix(np.where(np.abs(X) > 0.05, X, 0.0).astype(np.float32))
    first, second = (_fit(X, y, 2, batch_size=1000, max_iter=2) for _ in range(2))
    assert counted["chunks"] == 2 * first.n_steps_  # every step on the threads
    assert first.coef_.dtype == np.float32 and not np.allclose(first.coef_, 0.0)
    np.testing.assert_array_equal(first.coef_, second.coef_)
    np.testing.assert_array_equal(first.intercept_, second.intercept_)


def test_sparse_chunks_depend_on_public_quantities_only(monkeypatch):
    # The chunks' sums are added in chunk order, so the cut of a CSR batch
    # may set the rounding of its sum: it must follow from the batch's
    # length, the parameters' shape and the threads, never the stored entries.
    cuts = []

    def recording(claim, X, y, rows, params, args, noise, grad, weights, n_threads,
                  rows_per_chunk):
        cuts.append(rows_per_chunk)
        return _threads.sum_over_chunks(claim, X, y, rows, params, args, noise, grad,
                                        weights, n_threads, rows_per_chunk)

    monkeypatch.setattr(_sparse, "sum_over_chunks", recording)
    rng = np.random.default_rng(26)
    dense = rng.uniform(-1.0, 1.0, size=(4000, 100))
    rows = np.sort(rng.choice(4000, size=3000, replace=False)).astype(np.int64)
    params = rng.normal(scale=0.1, size=(5, 101))
    noise = np.zeros_like(params)
    y = rng.integers(0, 5, 4000).astype(np.float64)
    for kept in (0.9, 0.05):
        X = sp.csr_matrix(np.where(rng.random(dense.shape) < kept, dense, 0.0))
        norms = np.sqrt(np.asarray(X.multiply(X).sum(axis=1)).ravel())
        _sparse.noisy_clipped_gradient_sum_sparse(
            X, y, rows, params, norms, _multinomial_code(), 0.0, 1.0, True, noise,
            np.empty_like(params), 2)
    expected = _sparse.sparse_chunk_rows(3000, 5, 100, 2)
    assert cuts == [expected, expected] and expected < 3000


@pytest.mark.parametrize("n_rows, n_outputs, n_features, n_threads, expected", [
    (4096, 1, 20, 2, 4096),  # too little work: one thread
    (4096, 1, 100, 2, 512),
    (3000, 5, 5000, 2, 5001),  # a chunk's dense buffer would cost more than its rows
    (1, 10, 784, 16, 1),
])
def test_sparse_chunk_rows(n_rows, n_outputs, n_features, n_threads, expected):
    assert _sparse.sparse_chunk_rows(n_rows, n_outputs, n_features, n_threads) == expected


class _StalledBlockHelpers:
    """Helpers that each take one block of a per-fit pass and stall until released."""

    def __init__(self, n_helpers, release):
        self.release, self.queues = release, [self] * n_helpers

    def put(self, item):
        shared = item[2]

        def stall():
            block = shared._take()
            self.release.wait(10)
            if block >= 0:
                shared.claim(block)  # too late: the first result is kept
        threading.Thread(target=stall, daemon=True).start()


@pytest.mark.parametrize("helpers", ["absent", "stalled", "running"])
def test_a_per_fit_pass_never_waits_for_a_thread_that_does_not_run(monkeypatch, helpers):
    release = threading.Event()
    if helpers == "absent":
        monkeypatch.setattr(_threads, "_helpers", _AbsentHelpers)
    elif helpers == "stalled":
        monkeypatch.setattr(_threads, "_helpers", lambda n: _StalledBlockHelpers(n, release))
    started = time.perf_counter()
    got = _threads.blocks_on_threads(lambda b: b * b, 9, 3)
    elapsed = time.perf_counter() - started
    release.set()
    assert got == [b * b for b in range(9)] and elapsed < 5.0
    assert _threads.blocks_on_threads(lambda b: b, 0, 3) == []


def test_a_helpers_error_is_raised_by_the_calling_thread():
    def failing(block):
        if block == 5:
            raise ValueError("block five")
        return block

    with pytest.raises(ValueError, match="block five"):
        _threads.blocks_on_threads(failing, 8, 2)


@pytest.mark.parametrize("sparse", [False, True])
@pytest.mark.parametrize("bad, message", [(np.nan, "contains NaN"),
                                          (np.inf, "contains infinity")])
def test_finite_check_on_threads_is_scikit_learns(sparse, bad, message):
    rng = np.random.default_rng(27)
    X = rng.uniform(0.5, 1.0, size=(4000, 70)).astype(np.float32)
    X[3999, 69] = bad  # in the last block
    if sparse:
        X = sp.csr_matrix(X)
    with pytest.raises(ValueError) as whole:
        assert_all_finite(X, estimator_name="DPLSSGDClassifier", input_name="X")
    for n_threads in (1, 2, 3):
        with pytest.raises(ValueError, match=message) as error:
            _row_passes.check_finite_rows(X, n_threads, "DPLSSGDClassifier")
        assert str(error.value) == str(whole.value)  # names the problem, never a value
    # scikit-learn's setting, read in the calling thread (helpers have their own).
    with sklearn.config_context(assume_finite=True):
        _row_passes.check_finite_rows(X, 2)
    X = X.copy()
    if sparse:
        X.data[-1] = 1.0
    else:
        X[3999, 69] = 1.0
    _row_passes.check_finite_rows(X, 2)


def test_a_threaded_fit_checks_the_rows_on_its_threads(monkeypatch):
    # The finiteness check and the rows' norms: passes over every row, once
    # a fit, on the fit's threads (on one thread they bound n_jobs's gain).
    passes = []
    original = _threads.blocks_on_threads

    def counting(function, n_blocks, n_threads):
        passes.append((n_blocks, n_threads))
        return original(function, n_blocks, n_threads)

    monkeypatch.setattr(_row_passes, "blocks_on_threads", counting)
    monkeypatch.setattr(_base.os, "cpu_count", lambda: 4)
    X, y = _problem(seed=28, n=6000, d=100)
    _fit(X, y, 2, max_iter=1)
    # The finiteness check, the targets' encoding, the norms, the share of
    # rows clipped far down, the clips' feature norms (the second and the
    # last two read one number a row: one block at this size).
    assert [n for _, n in passes] == [2] * 5 and passes[0][0] > 1 and passes[2][0] > 1
    X[17, 3] = np.nan
    with pytest.raises(ValueError, match="Input X contains NaN"):
        _fit(X, y, 2, max_iter=1)


@pytest.mark.parametrize("scale, warned", [(1000.0, True), (1.0, False)])
def test_mostly_clipped_warning_on_threads(monkeypatch, scale, warned):
    monkeypatch.setattr(_base.os, "cpu_count", lambda: 4)
    rng = np.random.default_rng(29)
    X = rng.uniform(0, scale, (3000, 4))
    y = X @ [1.0, 2.0, 0.0, 0.0]
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        DPLSSGDRegressor(max_iter=1, n_jobs=2).fit(X, y)
    assert bool([w for w in caught if "clipped" in str(w.message)]) == warned


@pytest.mark.parametrize("n_classes", [2, 4])
@pytest.mark.parametrize("declared", [True, False])
def test_target_encoding_on_threads_is_the_serial_one(monkeypatch, n_classes, declared):
    monkeypatch.setattr(_base.os, "cpu_count", lambda: 4)
    rng = np.random.default_rng(30)
    y = rng.choice(np.array([3, 7, 11, 20])[:n_classes], 400_000)
    classes = [3, 7, 11, 20][:n_classes] if declared else None
    blocks = []
    original = _threads.blocks_on_threads

    def counting(function, n_blocks, n_threads):
        blocks.append(n_blocks)
        return original(function, n_blocks, n_threads)

    monkeypatch.setattr(_row_passes, "blocks_on_threads", counting)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        serial = DPLSSGDClassifier(classes=classes)._targets().encode(y)
        threaded = DPLSSGDClassifier(classes=classes, n_jobs=2)._targets().encode(y)
    assert blocks and blocks[0] > 1
    np.testing.assert_array_equal(threaded[0], serial[0])
    assert threaded[1] == serial[1] == (1 if n_classes == 2 else n_classes)
    y[-1] = 5  # an unknown label, in the last block
    if declared:
        with pytest.raises(ValueError, match="labels that are not in classes"):
            DPLSSGDClassifier(classes=classes, n_jobs=2)._targets().encode(y)


def test_team_run_never_waits_for_a_helper_that_does_not_run(monkeypatch):
    # Helpers whose queues nobody serves (threads the system never runs): a
    # compiled team run computes every chunk itself, finishes, and gives the
    # model of a run whose helper did run.
    monkeypatch.setattr(_kernels, "PARALLEL_MIN_WORK", 200)
    monkeypatch.setattr(_sgd, "COMPILED_RUN_MIN_STEPS", 0)
    rng = np.random.default_rng(7)
    X = rng.uniform(-1, 1, (300, 6))
    y = (X[:, 0] > 0).astype(int)

    def fit():
        return DPLSSGDClassifier(epsilon=1.0, max_iter=2, batch_size=60, n_jobs=2,
                                 random_state=2, reproducible=True).fit(X, y)

    served = fit()

    class Unserved:
        queues = [queue.SimpleQueue()]

    monkeypatch.setattr(_threads, "_helpers", lambda n_helpers: Unserved)
    unserved = fit()
    np.testing.assert_array_equal(unserved.coef_, served.coef_)
    np.testing.assert_array_equal(unserved.intercept_, served.intercept_)
