"""The public estimators: their shared base, the classifier, the regressor, their docstrings,
the declared feature bounds and the sample and class weights.

The modules are private; the names other layers use are re-exported here.
"""

from ._base import BaseDPLSSGD
from ._classifier import DPLSSGDClassifier
from ._regressor import DPLSSGDRegressor, TARGET_RANGE_SHARE

__all__ = [
    "BaseDPLSSGD",
    "DPLSSGDClassifier",
    "DPLSSGDRegressor",
    "TARGET_RANGE_SHARE",
]
