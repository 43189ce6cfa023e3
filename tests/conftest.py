"""Test-session setup shared by every test module.

scikit-learn's array API mode (``array_api_dispatch=True``, used by
tests/test_array_api.py and by the array API estimator checks of
tests/test_estimator_checks.py) requires SciPy's own array API support,
which SciPy reads from ``SCIPY_ARRAY_API`` when it is first imported: set it
here, before any test module imports SciPy. An explicit value in the
environment is kept.
"""

import os

os.environ.setdefault("SCIPY_ARRAY_API", "1")
