"""Which backend trains on an input, and what the layers above need to know about it.

The estimators and the gradient mechanism ask :func:`backend_for` instead of
testing the input's kind themselves: one object per kind of input (NumPy and
SciPy sparse arrays; arrays of another array API namespace under
``array_api_dispatch``; Dask collections) answers where the rows are, whether
their norms can be read on this host (for the clip warning and the NumPy
kernels), which training function runs the steps and with which of its own
arguments. A new backend (a GPU kernel, another cluster framework) plugs in
as one more class here and one more case of :func:`backend_for`.

A fitted model's predictions and scores ask the same objects where they run:
``predict_rows`` and ``score_rows`` call the model's in-memory methods on
rows held here, and run them blockwise, on the workers, for a Dask
collection (:mod:`._dask_predict`).
"""

from ._array_api import array_api_namespace, train_dp_lssgd_array_api
from ._dask import is_dask_collection, train_dp_lssgd_dask
from ._dask_predict import predict_blockwise, score_blockwise
from ._numpy import train_dp_lssgd
from ._row_passes import row_norms_of

__all__ = ["ArrayApiInput", "DaskInput", "NumpyInput", "backend_for"]


class NumpyInput:
    """NumPy arrays and SciPy sparse matrices: the rows in this process, Numba kernels."""

    name = "numpy"
    #: The array API namespace of the rows (None: NumPy/SciPy, or not an array API array).
    namespace = None
    #: Whether the rows stay where they are, never gathered here (a cluster's partitions).
    rows_are_remote = False
    #: Whether the labels can be inspected here before encoding (missing or mixed types).
    labels_checked_on_host = True
    trainer = staticmethod(train_dp_lssgd)

    def row_norms(self, X, n_threads):
        """The rows' L2 norms, computed once for the clip warning and the kernels."""
        return row_norms_of(X, n_threads)

    def trainer_arguments(self, n_threads, initial_params, row_norms):
        """The training function's own keyword arguments (beyond the plan and the rows)."""
        return {"n_threads": n_threads, "initial_params": initial_params,
                "row_norms": row_norms}

    def predict_rows(self, model, method, X):
        """A fitted model's prediction of ``X``, where its rows are.

        Parameters
        ----------
        model : fitted estimator
        method : str
            Name of the model's in-memory method (rows held here in, an array
            with one value or one row per row out).
        X : array-like of shape (n_samples, n_features)

        Returns
        -------
        array of shape (n_samples,) or (n_samples, k)
            Here: the method's own result.
        """
        return getattr(model, method)(X)

    def score_rows(self, score, metric, model, X, y, sample_weight=None):
        """A fitted model's score on ``(X, y)``, where the rows are: one float.

        Parameters
        ----------
        score : callable
            The in-memory score, ``score(X, y, sample_weight)``.
        metric : {"accuracy", "r2"}
            What ``score`` computes (for a backend that adds it up otherwise).
        model : fitted estimator
        X, y, sample_weight :
            The score's arguments.

        Returns
        -------
        score : float
        """
        return score(X, y, sample_weight)


class ArrayApiInput(NumpyInput):
    """Arrays of another array API namespace (PyTorch, CuPy, ...): trained on their device."""

    name = "array_api"
    labels_checked_on_host = False
    trainer = staticmethod(train_dp_lssgd_array_api)

    def __init__(self, namespace):
        self.namespace = namespace

    def row_norms(self, X, n_threads):
        # The backend forms the norms on the device itself.
        return None

    def trainer_arguments(self, n_threads, initial_params, row_norms):
        # No threads of ours; no starting point (refused before the release).
        return {}


class DaskInput(NumpyInput):
    """Dask arrays and DataFrames: each partition's rows stay on its worker."""

    name = "dask"
    rows_are_remote = True
    # Checked partition by partition by the encoding, without gathering y.
    labels_checked_on_host = False
    trainer = staticmethod(train_dp_lssgd_dask)

    def row_norms(self, X, n_threads):
        # Each partition computes its own, where it lives: none here.
        return None

    def trainer_arguments(self, n_threads, initial_params, row_norms):
        return {"n_threads": n_threads, "initial_params": initial_params}

    def predict_rows(self, model, method, X):
        # Blockwise on the workers: a lazy Dask array, no row gathered.
        return predict_blockwise(model, method, X)

    def score_rows(self, score, metric, model, X, y, sample_weight=None):
        # Each partition's sums on its worker; only those reach the client.
        return score_blockwise(model, X, y, sample_weight, metric)


def backend_for(X):
    """The backend that trains on ``X`` (see the module's description).

    Parameters
    ----------
    X : array-like, sparse matrix, array API array or Dask collection

    Returns
    -------
    NumpyInput or ArrayApiInput or DaskInput
    """
    if is_dask_collection(X):
        return DaskInput()
    namespace = array_api_namespace(X)
    if namespace is not None:
        return ArrayApiInput(namespace)
    return NumpyInput()
