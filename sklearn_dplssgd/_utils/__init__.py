"""What every layer shares: input validation that hides private values, warnings, the Numba flags.

The modules are private; the names other layers use are re-exported here.
"""

from ._numba_flags import CONTRACT_ONLY, FASTMATH
from ._validation import (
    check_choice, check_delta, check_epsilon, check_guess, check_mechanism,
    check_noise_multiplier, check_positive_int, check_sample_rate, Interval, Options,
    PrivacyLeakWarning, public_row_count, score_hiding_values, validate_hiding_values,
    validate_parameters, VALUES_NOT_SHOWN,
)

__all__ = [
    "CONTRACT_ONLY", "FASTMATH", "Interval", "Options", "PrivacyLeakWarning", "VALUES_NOT_SHOWN",
    "check_choice", "check_delta", "check_epsilon", "check_guess", "check_mechanism",
    "check_noise_multiplier", "check_positive_int", "check_sample_rate", "public_row_count",
    "score_hiding_values", "validate_hiding_values", "validate_parameters",
]
