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
from ._mechanisms import OutputPerturbation
from ._model_selection import DPRandomizedSearch
from ._preprocessing import BoundedScaler, DPBoundedScaler, DPOneHotEncoder
from ._training import (
    SGD, AdaGrad, Adam, ConstantNoise, ExponentialNoise, Momentum, Optimizer, RelativeNoise,
    StepNoise,
)
from ._utils import PrivacyLeakWarning

__version__ = "0.1.0"

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
    "OutputPerturbation",
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
