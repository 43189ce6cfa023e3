"""Which backend trains on an input, and what the layers above need to know about it.

The estimators and the gradient mechanism ask :func:`backend_for` instead of
testing the input's kind themselves: one object per kind of input (NumPy and
SciPy sparse arrays; arrays of another array API namespace under
``array_api_dispatch``; Dask collections) validates and prepares its own rows
(``training_rows``), answers where the rows are, whether their norms can be
read on this host (for the clip warning and the NumPy kernels), which
training function runs the steps and with which of its own arguments. A new
backend (a GPU kernel, another cluster framework) plugs in as one more class
here and one more case of :func:`backend_for`.

The rows are validated by scikit-learn's ``validate_data`` on the estimator
(which records ``n_features_in_`` and ``feature_names_in_``); the targets are
encoded and the rows weighed by the fit's *targets* value, built by the
estimator before any row is read: ``encode(y) -> (y_encoded, n_outputs)``,
``weights(sample_weight, y)``, ``y_numeric``, ``labels`` (the declared label
set or None) and, for a classifier, ``read_labels(labels)``
(:mod:`sklearn_dplssgd._linear_model._targets`). Validation errors name the
problem, never a value (values are private).

A fitted model's predictions and scores ask the same objects where they run:
``predict_rows`` and ``score_rows`` call the model's in-memory methods on
rows held here, and run them blockwise, on the workers, for a Dask
collection (:mod:`._dask_predict`).
"""

import numpy as np
import scipy.sparse as sp
from sklearn.utils.validation import validate_data

from .._utils import validate_hiding_values
from ._array_api import array_api_namespace, to_numpy, train_dp_lssgd_array_api, without_autograd
from ._dask import is_dask_collection, train_dp_lssgd_dask
from ._dask_input import dask_arrays, dask_training_rows
from ._dask_network import check_cluster_network
from ._dask_predict import predict_blockwise, score_blockwise
from ._numpy import train_dp_lssgd
from ._row_passes import check_finite_rows, row_norms_of
from ._sparse import as_canonical_csr

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

    def arrays(self, mechanism, X, y, sample_weight):
        """The fit's inputs in this backend's form, before the ledger is charged.

        Parameters
        ----------
        mechanism : ReleaseMechanism
            Refused here if it cannot train on this kind of input.
        X, y, sample_weight :
            As the user passed them (never modified).

        Returns
        -------
        X, y, sample_weight :
            Read from metadata only: no row value is read.
        network : str or None
            The network the fit's secrets cross (see ``check_cluster_network``).
        """
        return X, y, sample_weight, None

    def training_rows(self, estimator, targets, X, y, sample_weight, *, reset, min_rows,
                      n_threads):
        """The validated rows, the encoded targets and the rows' weights.

        Parameters
        ----------
        estimator : BaseDPLSSGD
            ``reset`` sets its ``n_features_in_`` and ``feature_names_in_``.
        targets : ClassTargets or RangeTargets
            The fit's target encoding (see the module's description).
        X, y, sample_weight :
            As :meth:`arrays` returned them.
        reset : bool
            Whether this fit starts a series (else ``X``'s width must match).
        min_rows : int
            The fewest rows a fit accepts (0 where the row count is private).
        n_threads : int

        Returns
        -------
        X : array of shape (n_samples, n_features), float64 or float32
        y_encoded : float64 array of shape (n_samples,) or (n_samples, n_outputs)
        n_outputs : int
        weights : float64 array of shape (n_samples,) or None
        """
        X, y = validate_hiding_values(
            {"X": X, "y": y}, validate_data, estimator, X, y,
            # Other sparse formats are converted to CSR once, here.
            accept_sparse="csr", dtype=[np.float64, np.float32], order="C",
            y_numeric=targets.y_numeric, reset=reset, ensure_min_samples=min_rows,
            # Checked below, on the fit's threads: one pass over every row.
            ensure_all_finite=False)
        validate_hiding_values({"X": X}, check_finite_rows, X, n_threads,
                               type(estimator).__name__)
        if sp.issparse(X):
            # Duplicate entries summed into a copy: the clip's row norms are
            # taken over stored entries (see _sparse).
            X = as_canonical_csr(X)
        return (X, *self._encoded(targets, y, sample_weight))

    @staticmethod
    def _encoded(targets, y, sample_weight):
        y_encoded, n_outputs = targets.encode(y)
        weights = validate_hiding_values(
            {"sample_weight": sample_weight}, targets.weights, sample_weight, y)
        return y_encoded, n_outputs, weights

    def map_rows(self, function, X):
        """``function`` (rows in, rows of the same shape and dtype out) applied to ``X``."""
        return function(X)

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

    def arrays(self, mechanism, X, y, sample_weight):
        # Weights are validated on the host, whatever their namespace.
        if sample_weight is not None:
            sample_weight = to_numpy(without_autograd(sample_weight))
        return X, y, sample_weight, None

    def training_rows(self, estimator, targets, X, y, sample_weight, *, reset, min_rows,
                      n_threads):
        # The targets are encoded on the host (labels, bounds), whatever their
        # namespace; X keeps its namespace, device and float dtype.
        xp = self.namespace[0]
        X, y = validate_hiding_values(
            {"X": X, "y": y}, validate_data, estimator, without_autograd(X),
            to_numpy(without_autograd(y)), accept_sparse=False,
            dtype=[xp.float64, xp.float32], y_numeric=targets.y_numeric,
            ensure_min_samples=min_rows)
        return (X, *self._encoded(targets, y, sample_weight))

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
    #: A DataFrame's column names, read by :meth:`arrays` (public metadata).
    feature_names = None
    # Checked partition by partition by the encoding, without gathering y.
    labels_checked_on_host = False
    trainer = staticmethod(train_dp_lssgd_dask)

    def row_norms(self, X, n_threads):
        # Each partition computes its own, where it lives: none here.
        return None

    def trainer_arguments(self, n_threads, initial_params, row_norms):
        return {"n_threads": n_threads, "initial_params": initial_params}

    def arrays(self, mechanism, X, y, sample_weight):
        if not mechanism.accepts_dask:
            raise TypeError(
                f"mechanism={mechanism.name!r} trains on NumPy arrays only; use "
                "mechanism='gradient' for Dask arrays, or compute X first.")
        # A cluster whose traffic others could read is refused before the charge.
        network = check_cluster_network()
        X, y, sample_weight, self.feature_names = dask_arrays(X, y, sample_weight)
        return X, y, sample_weight, network

    def training_rows(self, estimator, targets, X, y, sample_weight, *, reset, min_rows,
                      n_threads):
        # Encoded and weighed partition by partition, on the workers (see _dask_input).
        return (X, *dask_training_rows(estimator, targets, X, y, sample_weight, reset,
                                       self.feature_names))

    def map_rows(self, function, X):
        return X.map_blocks(function, dtype=X.dtype)

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
