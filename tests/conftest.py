"""Test-session setup shared by every test module.

scikit-learn's array API mode (``array_api_dispatch=True``, used by
tests/test_array_api.py and by the array API estimator checks of
tests/test_estimator_checks.py) requires SciPy's own array API support,
which SciPy reads from ``SCIPY_ARRAY_API`` when it is first imported: set it
here, before any test module imports SciPy. An explicit value in the
environment is kept.

The calibration cache on disk (``SKLEARN_DPLSSGD_CACHE_DIR``) points to a
temporary folder for the whole session, removed at its end, so that the tests
neither write into the user's cache nor read calibrations from it; the
subprocesses that tests start inherit it. A test that needs another folder
sets the variable itself (``monkeypatch.setenv``).
"""

import os
import shutil
import tempfile

os.environ.setdefault("SCIPY_ARRAY_API", "1")

_CALIBRATION_CACHE_DIR = tempfile.mkdtemp(prefix="sklearn-dplssgd-test-cache-")
os.environ["SKLEARN_DPLSSGD_CACHE_DIR"] = _CALIBRATION_CACHE_DIR


def pytest_sessionfinish(session, exitstatus):
    shutil.rmtree(_CALIBRATION_CACHE_DIR, ignore_errors=True)
