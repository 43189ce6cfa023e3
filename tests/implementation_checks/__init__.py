"""The library's own implementation checks: regression tests, not a user's tool.

Each check fits clones of a configured estimator (or of a private transformer,
a search, the ledger) and tests one class of bugs that a statistical audit of
final models would need enormous numbers of runs to see; the test files show
that each passes on the library and fails a deliberately broken variant.
:func:`audit_implementation` runs the battery on one estimator configuration.

* clipping at the edges of floating point (:func:`check_clipping`);
* a published model replaying its own noise (:func:`check_seed_replay`);
* clones sharing noise (:func:`check_clone_independence`);
* a mechanism that depends on the private row count (:func:`check_row_count`);
* an error that depends on one row (:func:`check_overflow_row`);
* a released model continued outside its ledger, or a ledger that forgets
  its records (:func:`check_ledger_continuity`);
* an error message that quotes private values (:func:`check_error_messages`);
* a coefficient rounded past the clip after the clip decision
  (:func:`check_rounding`);
* errors decided by one row on neighbouring data sets inside the declared
  domain (:func:`check_error_outcomes`);
* a private search that refits a private step outside its accounting
  (:func:`check_search_private_steps`);
* a fitted attribute, other than the noisy output, that depends on the
  private row count (:func:`check_public_attributes`);
* a category of the private encoder whose representation one row decides
  (:func:`check_category_representation`);
* a ledger file that holds or accepts a pickle, or forgets a removed record
  (:func:`check_ledger_file_format`);
* for a mechanism whose noisy values are integers, a floating-point channel
  in the low bits of one noisy step (the public
  :func:`sklearn_dplssgd.audit.check_float_channel`, which the battery runs).

:func:`substituted_gradient_kernel` runs the NumPy fits of a block with
another gradient kernel (through ``SubstitutedKernelTraining``, a NumPy
backend): the way the tests show that a broken kernel is caught.
"""

from .attribute_checks import check_category_representation, check_public_attributes
from .common import ImplementationAudit
from .release_checks import (
    check_clipping, check_clone_independence, check_overflow_row, check_row_count,
    check_seed_replay,
)
from .search_checks import check_search_private_steps
from .stored_state_checks import check_ledger_file_format
from .substitutes import SubstitutedKernelTraining, substituted_gradient_kernel
from .workflow_checks import (
    audit_implementation, check_error_messages, check_error_outcomes, check_ledger_continuity,
    check_rounding,
)

__all__ = [
    "audit_implementation",
    "check_category_representation",
    "check_clipping",
    "check_clone_independence",
    "check_error_messages",
    "check_error_outcomes",
    "check_ledger_continuity",
    "check_ledger_file_format",
    "check_overflow_row",
    "check_public_attributes",
    "check_rounding",
    "check_row_count",
    "check_search_private_steps",
    "check_seed_replay",
    "ImplementationAudit",
    "SubstitutedKernelTraining",
    "substituted_gradient_kernel",
]
