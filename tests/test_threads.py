"""Many cores (``n_jobs``): the Numba team, the Python pool, drawing ahead.

A threaded fit must be the serial fit up to the order of the additions: the
same batches and the same noise (drawn one chunk ahead on their own thread),
the same clip for every row, in every way the threads can be run.
"""

import concurrent.futures
import threading
import time

import numpy as np
import pytest
import scipy.sparse as sp

from sklearn_dplssgd import DPLSSGDClassifier, DPLSSGDRegressor
from sklearn_dplssgd.linear_model import _base
from sklearn_dplssgd.backends import _kernels, _numpy as _sgd, _sparse, _threads
from sklearn_dplssgd.training import _loop as _training
from sklearn_dplssgd.backends._kernels import PARALLEL_MIN_WORK
from sklearn_dplssgd.backends._threads import block_bounds, draws_ahead, numba_team_available

TEAM = numba_team_available()
needs_team = pytest.mark.skipif(
    not TEAM, reason="Numba has neither its OpenMP nor its TBB threading layer here")


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
    """Count the team launches, the pool splits and the draws-ahead loops."""
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


@needs_team
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


def test_a_forked_child_uses_the_pool(monkeypatch):
    # Numba stops a child forked after an OpenMP team started, so a child
    # (another pid than the one that decided) never launches the team.
    numba_team_available()
    monkeypatch.setitem(_threads._TEAM, "pid", -1)
    assert numba_team_available() is False


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


@pytest.mark.parametrize("n_rows, n_blocks", [(10, 3), (256, 16), (5, 5), (0, 2)])
def test_block_bounds_cover_the_batch(n_rows, n_blocks):
    bounds = block_bounds(n_rows, n_blocks)
    assert bounds[0] == 0 and bounds[-1] == n_rows and len(bounds) == n_blocks + 1
    sizes = np.diff(bounds)
    assert (sizes >= 0).all() and sizes.max() - sizes.min() <= 1


@pytest.mark.parametrize("work, n_rows, n_threads, expected", [
    (PARALLEL_MIN_WORK - 1, 256, 16, 1),
    (PARALLEL_MIN_WORK, 256, 1, 1),
    (PARALLEL_MIN_WORK, 256, 16, 4),
    (256 * 10 * 784, 256, 16, 16),
    (256 * 10 * 784, 3, 16, 3),
])
def test_parallel_blocks(work, n_rows, n_threads, expected):
    assert _kernels.parallel_blocks(work, n_rows, n_threads) == expected


@needs_team
def test_team_smoothing_and_sum_are_the_serial_ones():
    from sklearn_dplssgd.backends._kernels import smooth_rows, smooth_rows_team, smoothing_omega
    from sklearn_dplssgd.backends._threads import add_blocks, team_threads

    rng = np.random.default_rng(16)
    grad = rng.normal(size=(10, 65))
    serial, team = grad.copy(), grad.copy()
    smooth_rows(serial, 64, smoothing_omega(2.0), 2.0)
    with team_threads(2):
        smooth_rows_team(team, 64, smoothing_omega(2.0), 2.0)
    np.testing.assert_array_equal(team, serial)  # each row by the same solver
    assert not np.allclose(serial, grad)
    partial = rng.normal(size=(5,) + grad.shape)
    summed = np.empty_like(grad)
    with team_threads(2):
        add_blocks(grad, partial, summed)
    np.testing.assert_allclose(summed, grad + partial.sum(axis=0), rtol=1e-13, atol=1e-13)


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
    from sklearn_dplssgd.training._losses import LOG_LOSS_MULTINOMIAL
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
    """Helpers that each take one chunk and then stall until released."""

    def __init__(self, n_helpers, release):
        self.release, self.queues = release, [self] * n_helpers

    def put(self, item):
        claim, args, job = item
        progress = args[-2]

        def stall():
            chunk = _threads.take_chunk(progress)
            self.release.wait(10)
            if chunk >= 0:
                claim(*args, chunk)  # too late: its sum is no longer read
            job.release()
        threading.Thread(target=stall, daemon=True).start()


@pytest.mark.parametrize("helpers", ["absent", "stalled"])
def test_a_step_never_waits_for_a_thread_that_does_not_run(monkeypatch, helpers):
    X, y, rows, params, noise = _chunked_problem(3, np.float64, False, seed=22)
    expected = _chunked_sum(X, y, rows, params, noise, 3)
    release = threading.Event()
    if helpers == "absent":
        monkeypatch.setattr(_threads, "_helpers", _AbsentHelpers)
    else:
        monkeypatch.setattr(_threads, "_helpers",
                            lambda n: _StalledHelpers(n, release))
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
    serial = _sgd.row_norms_of(X)
    np.testing.assert_array_equal(_sgd.row_norms_of(X, 3), serial)
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
