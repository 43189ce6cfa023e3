"""Differentially private linear models for scikit-learn, trained by DP-LSSGD.

DP-LSSGD is DP-SGD (per-sample clipping, Gaussian noise calibrated to a
target (epsilon, delta)) whose noisy gradient is smoothed by the inverse of a
1-D Laplacian before each step (Wang et al.). Smoothing is post-processing:
it costs no privacy and removes much of the injected noise.
"""

from ._accounting import PrivacyCalibration, compute_epsilon
from ._calibration import calibrate_noise
from ._classifier import DPLSSGDClassifier
from ._compile_notice import install_compile_notice
from ._dp_encoder import DPOneHotEncoder
from ._dp_scaler import DPBoundedScaler
from ._ledger import PrivacyBudgetExceededError, PrivacyLedger
from ._optimizers import SGD, AdaGrad, Adam, Momentum, Optimizer
from ._regressor import DPLSSGDRegressor
from ._scaler import BoundedScaler
from ._schedules import ConstantNoise, ExponentialNoise, RelativeNoise, StepNoise
from ._search import DPRandomizedSearch
from ._validation import PrivacyLeakWarning

__version__ = "0.1.0"

# A one-line notice (logger "sklearn_dplssgd") while a first fit compiles
# the Numba kernels of its input kind, instead of several silent seconds.
install_compile_notice()

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
