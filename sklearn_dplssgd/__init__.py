"""Differentially private linear models for scikit-learn, trained by DP-LSSGD.

DP-LSSGD is DP-SGD (per-sample clipping, Gaussian noise calibrated to a
target (epsilon, delta)) whose noisy gradient is smoothed by the inverse of a
1-D Laplacian before each step (Wang et al.). Smoothing is post-processing:
it costs no privacy and removes much of the injected noise.
"""

from ._accounting import (
    LedgerFileError, PrivacyBudgetExceededError, PrivacyCalibration, PrivacyLedger,
    calibrate_noise, compute_epsilon,
)
from ._linear_model import DPLSSGDClassifier, DPLSSGDRegressor
from ._model_selection import DPRandomizedSearch
from ._preprocessing import BoundedScaler, DPBoundedScaler, DPOneHotEncoder
from ._training import (
    SGD, AdaGrad, Adam, ConstantNoise, ExponentialNoise, Momentum, Optimizer, RelativeNoise,
    StepNoise,
)
from ._utils import PrivacyLeakWarning, forget_stale_compiled_code, install_compile_notice

__version__ = "0.1.0"

# A one-line notice (logger "sklearn_dplssgd") while a first fit compiles
# the Numba kernels of its input kind, instead of several silent seconds.
install_compile_notice()

# Numba checks a cached kernel only against its own file: the cache files of
# a module whose imported sources (a residual of training/_losses.py inlined
# into a kernel of backends/) changed since they were written are removed
# here, before anything is compiled, so that they are compiled anew.
forget_stale_compiled_code(__name__)

__all__ = [
    "AdaGrad",
    "Adam",
    "BoundedScaler",
    "ConstantNoise",
    "DPBoundedScaler",
    "DPLSSGDClassifier",
    "DPLSSGDRegressor",
    "DPOneHotEncoder",
    "DPRandomizedSearch",
    "ExponentialNoise",
    "LedgerFileError",
    "Momentum",
    "Optimizer",
    "PrivacyBudgetExceededError",
    "PrivacyCalibration",
    "PrivacyLedger",
    "PrivacyLeakWarning",
    "RelativeNoise",
    "SGD",
    "StepNoise",
    "calibrate_noise",
    "compute_epsilon",
    "__version__",
]
