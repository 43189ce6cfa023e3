"""Where the arrays live: NumPy/Numba kernels (dense and CSR, threads, prefetch), the NumPy
training backend, and the array API backend with its prediction helpers.

The modules are private; the names other layers use are re-exported here.
"""

from ._array_api import (
    ArrayApiTraining,
    array_api_namespace, initial_gradient_norms, to_device, to_numpy, train_dp_lssgd_array_api,
    without_autograd,
)
from ._array_api_predict import (
    check_fitted_namespace, class_labels, class_probabilities, copy_params, decision_values,
)
from ._dask import (
    DaskTraining, NonFiniteRowsError, WorkerLostError, is_dask_collection, train_dp_lssgd_dask,
)
from ._kernels import compute_row_norms
from ._numpy import (
    NumpyTraining, blas_controller, numpy_backend, train_dp_lssgd, use_numpy_backend,
)
from ._row_passes import check_finite_rows, on_row_blocks, row_norms_of, share_of_rows
from ._sparse import as_canonical_csr

__all__ = [
    "ArrayApiTraining",
    "DaskTraining",
    "NonFiniteRowsError",
    "NumpyTraining",
    "WorkerLostError",
    "array_api_namespace",
    "as_canonical_csr",
    "check_finite_rows",
    "blas_controller",
    "check_fitted_namespace",
    "class_labels",
    "class_probabilities",
    "compute_row_norms",
    "copy_params",
    "decision_values",
    "initial_gradient_norms",
    "on_row_blocks",
    "is_dask_collection",
    "numpy_backend",
    "row_norms_of",
    "share_of_rows",
    "to_device",
    "to_numpy",
    "train_dp_lssgd",
    "train_dp_lssgd_array_api",
    "train_dp_lssgd_dask",
    "use_numpy_backend",
    "without_autograd",
]
