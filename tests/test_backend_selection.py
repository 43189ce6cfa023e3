"""The backend-selection seam: ``backend_for(X)`` answers what the estimators used to branch on.

Each kind of input gets its backend (NumPy and sparse, array API, Dask), and
the fit asks the selected backend for the rows' norms, the clip warning, the
training function and its arguments: a backend plugged in there trains.
"""

import warnings

import numpy as np
import pytest
import scipy.sparse as sp
import sklearn

from sklearn_dplssgd import DPLSSGDClassifier, PrivacyLeakWarning
from sklearn_dplssgd._backends import (
    ArrayApiInput, DaskInput, NumpyInput, backend_for, train_dp_lssgd, train_dp_lssgd_dask,
)


def _rows(n=40, d=3):
    rng = np.random.default_rng(0)
    X = rng.uniform(-1.0, 1.0, size=(n, d))
    return X, (X[:, 0] > 0).astype(int)


@pytest.mark.parametrize("X", [_rows()[0], sp.csr_array(_rows()[0]), _rows()[0].tolist()])
def test_numpy_and_sparse_rows_take_the_numpy_backend(X):
    backend = backend_for(X)
    assert isinstance(backend, NumpyInput) and backend.name == "numpy"
    assert backend.namespace is None and not backend.rows_are_remote
    assert backend.labels_checked_on_host and backend.trainer is train_dp_lssgd
    norms = backend.row_norms(np.asarray(_rows()[0]), 1)
    np.testing.assert_allclose(norms, np.linalg.norm(_rows()[0], axis=1))
    assert set(backend.trainer_arguments(2, None, norms)) == {
        "n_threads", "initial_params", "row_norms"}


def test_dask_rows_stay_remote():
    da = pytest.importorskip("dask.array")
    X, y = _rows()
    for value in (da.from_array(X, chunks=(10, 3)), da.from_array(y, chunks=10)):
        backend = backend_for(value)
        assert isinstance(backend, DaskInput) and backend.name == "dask"
        assert backend.rows_are_remote and not backend.labels_checked_on_host
        assert backend.trainer is train_dp_lssgd_dask
        # No norm is formed here (that would compute the rows on the client).
        assert backend.row_norms(value, 1) is None
        assert set(backend.trainer_arguments(1, None, None)) == {"n_threads", "initial_params"}


def test_array_api_rows_train_on_their_namespace():
    torch = pytest.importorskip("torch")
    pytest.importorskip("array_api_compat")
    X = torch.asarray(_rows()[0])
    # Outside array_api_dispatch, a tensor takes the NumPy path (converted there).
    assert type(backend_for(X)) is NumpyInput
    with sklearn.config_context(array_api_dispatch=True):
        backend = backend_for(X)
    assert isinstance(backend, ArrayApiInput) and backend.namespace is not None
    assert backend.row_norms(X, 1) is None and backend.trainer_arguments(2, None, None) == {}


def test_the_fit_trains_through_the_selected_backend(monkeypatch):
    calls = []

    class Recording(NumpyInput):
        name = "recording"

        def row_norms(self, X, n_threads):
            calls.append("row_norms")
            return super().row_norms(X, n_threads)

        @staticmethod
        def trainer(*args, **kwargs):
            calls.append("trainer")
            return train_dp_lssgd(*args, **kwargs)

    monkeypatch.setattr("sklearn_dplssgd._mechanisms._gradient.backend_for",
                        lambda X: Recording())
    X, y = _rows()
    estimator = DPLSSGDClassifier(epsilon=1.0, classes=[0, 1], batch_size=20, max_iter=1,
                                  reproducible=True, random_state=0)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", PrivacyLeakWarning)
        warnings.simplefilter("ignore", UserWarning)
        through_recording = estimator.fit(X, y).coef_.copy()
        monkeypatch.undo()
        directly = estimator.fit(X, y).coef_
    assert calls == ["row_norms", "trainer"]
    np.testing.assert_array_equal(through_recording, directly)


def test_every_input_class_prepares_its_rows_under_one_signature():
    import inspect

    from sklearn_dplssgd._backends import ArrayApiInput, DaskInput, NumpyInput

    for method in ("arrays", "training_rows", "map_rows"):
        expected = inspect.signature(getattr(NumpyInput, method))
        for backend in (ArrayApiInput, DaskInput):
            assert inspect.signature(getattr(backend, method)) == expected, (backend, method)
