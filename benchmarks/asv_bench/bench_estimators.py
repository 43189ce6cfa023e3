"""Speed of the estimators through their public API, for airspeed velocity (asv).

Each class times one of the standard shapes: ``fit`` for one epoch and
``predict``, at the library's defaults otherwise (replace-one epsilon 1, the
noise calibrated by the PLD accountant). Timing one epoch (``max_iter=1``)
keeps a run short; a fit's time is its epochs' times plus a fixed part
(the calibration, read from the disk cache after the first fit, and the
checks of ``X``), which the first-fit benchmark and the Dask benchmark show
apart. ``setup`` fits once first so that the timed fits find the compiled
kernels and the calibration cached, as every fit but a process's first does.

The shapes are the benchmarks' standard ones; setting the environment
variable ``DPLSSGD_ASV_ROWS`` to a number of rows caps every table at that
many (a smoke run on tiny shapes, as the test suite does).

How to run the suite, and how to compare two commits, is in
``docs/developers.rst``.
"""

import os
import subprocess
import sys
import textwrap
import time
import warnings

import numpy as np
import scipy.sparse as sp

from sklearn_dplssgd import DPLSSGDClassifier, DPLSSGDRegressor

# A rows cap for smoke runs; unset, the standard shapes.
ROWS_CAP = int(os.environ.get("DPLSSGD_ASV_ROWS", "0")) or None


def _rows(n):
    return min(n, ROWS_CAP) if ROWS_CAP else n


def _dense(n, d, n_classes, seed=0):
    """A seeded table of ``n`` rows in [0, 1] with ``n_classes`` labels."""
    rng = np.random.default_rng(seed)
    X = rng.random((_rows(n), d))
    y = rng.integers(0, n_classes, size=X.shape[0])
    return X, y


def _csr(n, d, per_row, seed=0):
    """A seeded CSR table: ``per_row`` entries in [0, 1] a row, one per block of columns.

    (``scipy.sparse.random`` takes minutes at this size; one column drawn in
    each of ``per_row`` equal blocks gives sorted, distinct indices directly.)
    """
    rng = np.random.default_rng(seed)
    width = d // per_row
    columns = (np.arange(per_row) * width + rng.integers(0, width, size=(n, per_row)))
    indptr = np.arange(0, n * per_row + 1, per_row)
    X = sp.csr_matrix((rng.random(n * per_row), columns.ravel(), indptr), shape=(n, d))
    return X, rng.integers(0, 2, size=n)


def _classifier(**params):
    # Bounds known in advance (the table is drawn in [0, 1]); no seed: a fit
    # draws its noise from the operating system, as a private fit should.
    params.setdefault("feature_bounds", (0.0, 1.0))
    return DPLSSGDClassifier(max_iter=1, **params)


def _quiet_fit(model, X, y):
    with warnings.catch_warnings():
        # The synthetic rows are far from unit scale; the fit says so, once a fit.
        warnings.simplefilter("ignore")
        return model.fit(X, y)


class MNISTShaped:
    """60,000 x 784, 10 classes: one epoch at batch 256 and 4,096, one and two threads."""

    params = ([256, 4096], [1, 2])
    param_names = ["batch_size", "n_jobs"]
    timeout = 300

    def setup(self, batch_size, n_jobs):
        self.X, self.y = _dense(60_000, 784, 10)
        self.model = _quiet_fit(
            _classifier(batch_size=batch_size, n_jobs=n_jobs), self.X, self.y)

    def time_fit_epoch(self, batch_size, n_jobs):
        _quiet_fit(_classifier(batch_size=batch_size, n_jobs=n_jobs), self.X, self.y)

    def time_predict(self, batch_size, n_jobs):
        self.model.predict(self.X)


class BinaryNarrow:
    """1,000,000 rows, 20 and 100 features, two classes: one epoch at the default batch."""

    params = ([20, 100], [1, 2])
    param_names = ["n_features", "n_jobs"]
    timeout = 300

    def setup(self, n_features, n_jobs):
        self.X, self.y = _dense(1_000_000, n_features, 2)
        self.model = _quiet_fit(_classifier(n_jobs=n_jobs), self.X, self.y)

    def time_fit_epoch(self, n_features, n_jobs):
        _quiet_fit(_classifier(n_jobs=n_jobs), self.X, self.y)

    def time_predict(self, n_features, n_jobs):
        self.model.predict(self.X)


class SparseCSR:
    """CSR 100,000 x 10,000 at 1 % stored, two classes: one epoch."""

    params = [1, 2]
    param_names = ["n_jobs"]
    timeout = 300

    def setup(self, n_jobs):
        self.X, self.y = _csr(_rows(100_000), 10_000, 100)
        self.model = _quiet_fit(self._model(n_jobs), self.X, self.y)

    def _model(self, n_jobs):
        # Sparse rows take no feature_bounds (mapping to [-1, 1] would fill
        # them in); their stored values are already in [0, 1].
        return _classifier(n_jobs=n_jobs, feature_bounds=None)

    def time_fit_epoch(self, n_jobs):
        _quiet_fit(self._model(n_jobs), self.X, self.y)

    def time_predict(self, n_jobs):
        self.model.predict(self.X)


class Regression:
    """A regression table, 200,000 x 50, targets in declared bounds: one epoch."""

    params = [1, 2]
    param_names = ["n_jobs"]
    timeout = 300

    def _model(self, n_jobs):
        return DPLSSGDRegressor(feature_bounds=(0.0, 1.0), target_bounds=(-10.0, 10.0),
                                max_iter=1, n_jobs=n_jobs)

    def setup(self, n_jobs):
        rng = np.random.default_rng(2)
        self.X = rng.random((_rows(200_000), 50))
        self.y = np.clip(self.X @ rng.normal(size=50) + rng.normal(size=self.X.shape[0]),
                         -10.0, 10.0)
        self.model = _quiet_fit(self._model(n_jobs), self.X, self.y)

    def time_fit_epoch(self, n_jobs):
        _quiet_fit(self._model(n_jobs), self.X, self.y)

    def time_predict(self, n_jobs):
        self.model.predict(self.X)


_FIRST_FIT = textwrap.dedent("""
    import time, warnings
    start = time.perf_counter()
    import numpy as np
    from sklearn_dplssgd import DPLSSGDClassifier
    imported = time.perf_counter()
    rng = np.random.default_rng(0)
    X, y = rng.random((2000, 64)), rng.integers(0, 2, 2000)
    warnings.simplefilter("ignore")
    DPLSSGDClassifier(feature_bounds=(0.0, 1.0), max_iter=1).fit(X, y)
    print(time.perf_counter() - imported)
""")


class FirstFit:
    """A new process's first fit, with an empty compilation cache (compile time included)."""

    timeout = 600
    number = 1
    repeat = 1
    unit = "seconds"

    def track_first_fit_cold(self):
        import tempfile

        with tempfile.TemporaryDirectory() as cache:
            env = dict(os.environ, NUMBA_CACHE_DIR=cache)
            out = subprocess.run([sys.executable, "-c", _FIRST_FIT], env=env, check=True,
                                 capture_output=True, text=True).stdout
        return float(out.split()[-1])


class DaskFit:
    """A fit on a Dask array on a local cluster of two one-thread workers: one epoch."""

    timeout = 600
    number = 1
    repeat = 1
    unit = "seconds"

    def setup(self):
        try:
            import dask.array as da
            from distributed import Client, LocalCluster
        except ImportError as error:  # asv skips a benchmark whose setup raises this
            raise NotImplementedError(f"Dask is not installed: {error}")
        self.cluster = LocalCluster(n_workers=2, threads_per_worker=1, processes=True,
                                    dashboard_address=None)
        self.client = Client(self.cluster)
        X, y = _dense(200_000, 100, 2)
        chunks = max(X.shape[0] // 4, 1)
        self.X = da.from_array(X, chunks=(chunks, X.shape[1])).persist()
        self.y = da.from_array(y, chunks=chunks).persist()
        _quiet_fit(_classifier(), self.X, self.y)

    def teardown(self):
        self.client.close()
        self.cluster.close()

    def track_fit_epoch(self):
        start = time.perf_counter()
        _quiet_fit(_classifier(), self.X, self.y)
        return time.perf_counter() - start
