"""Privacy accounting: dp-accounting events and their epsilon, noise calibration, the
privacy ledger with its JSON event format, and the privacy reports.

The modules are private; the names other layers use are re-exported here.
"""

from ._calibration import calibrate_noise, smallest_noise_for
from ._events import (
    ACCOUNTANTS, compute_epsilon, dp_event, EpsilonDeltaDpEvent, event_epsilon,
    NEIGHBORING_RELATIONS, pld_grid_points, PLD_MAX_POINTS, PrivacyCalibration,
    REMAINING_BUDGET, TARGET_RANGE_SHARE,
)
from ._ledger import (
    ledger_error, LedgerFileError, PrivacyBudgetExceededError, PrivacyLedger,
    remaining_budget_error,
)
from ._report import estimator_report, search_report, transformer_report

__all__ = [
    "ACCOUNTANTS", "EpsilonDeltaDpEvent", "LedgerFileError", "NEIGHBORING_RELATIONS",
    "PLD_MAX_POINTS", "PrivacyBudgetExceededError", "PrivacyCalibration", "PrivacyLedger",
    "REMAINING_BUDGET", "TARGET_RANGE_SHARE", "calibrate_noise", "compute_epsilon",
    "dp_event", "estimator_report", "event_epsilon", "ledger_error", "pld_grid_points",
    "remaining_budget_error", "search_report", "smallest_noise_for", "transformer_report",
]
