"""Where the arrays live: NumPy/Numba kernels (dense and CSR, threads, prefetch), the NumPy
training backend, the array API backend with its prediction helpers, the Dask backend
(training, and blockwise predictions and scores), the
selection of a backend for an input (``backend_for``), and the exact samplers of the noise
(the rounded Gaussian, the discrete Laplace).

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
from ._discrete_laplace import DiscreteLaplaceScale, sample_discrete_laplace
from ._word_stream import SamplerCapacityError, SecureWords
from ._dask import (
    DaskTraining, NonFiniteRowsError, WorkerLostError, is_dask_collection, train_dp_lssgd_dask,
)
from ._dask_input import dask_arrays
from ._dask_network import (
    TRUSTED_NETWORK_SETTING, UntrustedNetworkError, check_cluster_network, is_protected_address,
)
from ._dask_rows import as_dask_array
from ._kernels import compute_row_norms
from ._numpy import (
    NumpyTraining, blas_controller, numpy_backend, train_dp_lssgd, use_numpy_backend,
)
from ._rounded_gaussian import (
    MAX_ROUNDED_SCALE, RoundedGaussianScale, sample_rounded_gaussian,
)
from ._row_passes import (
    check_finite_rows, integral_labels, on_row_blocks, row_norms_of, share_of_rows,
)
from ._selection import ArrayApiInput, DaskInput, NumpyInput, backend_for
from ._sparse import as_canonical_csr

__all__ = [
    "ArrayApiInput",
    "ArrayApiTraining",
    "DaskInput",
    "DaskTraining",
    "DiscreteLaplaceScale",
    "MAX_ROUNDED_SCALE",
    "NonFiniteRowsError",
    "NumpyInput",
    "NumpyTraining",
    "RoundedGaussianScale",
    "SamplerCapacityError",
    "SecureWords",
    "TRUSTED_NETWORK_SETTING",
    "UntrustedNetworkError",
    "WorkerLostError",
    "array_api_namespace",
    "as_canonical_csr",
    "as_dask_array",
    "dask_arrays",
    "backend_for",
    "check_cluster_network",
    "check_finite_rows",
    "blas_controller",
    "check_fitted_namespace",
    "class_labels",
    "class_probabilities",
    "compute_row_norms",
    "copy_params",
    "decision_values",
    "initial_gradient_norms",
    "integral_labels",
    "on_row_blocks",
    "is_dask_collection",
    "is_protected_address",
    "numpy_backend",
    "row_norms_of",
    "sample_discrete_laplace",
    "sample_rounded_gaussian",
    "share_of_rows",
    "to_device",
    "to_numpy",
    "train_dp_lssgd",
    "train_dp_lssgd_array_api",
    "train_dp_lssgd_dask",
    "use_numpy_backend",
    "without_autograd",
]
