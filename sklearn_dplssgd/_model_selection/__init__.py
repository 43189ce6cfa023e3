"""The private hyperparameter search and its handling of pipeline steps.

The modules are private; the names other layers use are re-exported here.
"""

from ._search import DPRandomizedSearch, final_estimator

__all__ = ["DPRandomizedSearch", "final_estimator"]
