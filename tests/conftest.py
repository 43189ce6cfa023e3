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

Numba checks a cached kernel only against the file that defines it, not
against the compiled functions it inlines from other files (a residual of
``_training/_losses.py`` inside a kernel of ``_backends/``), so an edit there
would leave stale kernels in the cache. Unless ``NUMBA_CACHE_DIR`` is set,
the session's Numba cache is a folder of ``.numba-cache/`` (ignored by git)
named by a hash of the package's sources: any edit to them starts from an
empty cache, and an unchanged tree reuses its compiled kernels. It is set
here, before anything imports Numba; the subprocesses that tests start
inherit it.
"""

import hashlib
import os
import shutil
import tempfile
from pathlib import Path

import pytest

os.environ.setdefault("SCIPY_ARRAY_API", "1")

_REPO_ROOT = Path(__file__).resolve().parent.parent


def _sources_digest(package):
    """A hash of the names and contents of the package's Python sources."""
    digest = hashlib.sha256()
    for path in sorted(package.rglob("*.py")):
        digest.update(path.relative_to(package).as_posix().encode())
        digest.update(b"\0")
        digest.update(path.read_bytes())
        digest.update(b"\0")
    return digest.hexdigest()[:16]


if not os.environ.get("NUMBA_CACHE_DIR"):
    os.environ["NUMBA_CACHE_DIR"] = str(
        _REPO_ROOT / ".numba-cache" / _sources_digest(_REPO_ROOT / "sklearn_dplssgd"))

_CALIBRATION_CACHE_DIR = tempfile.mkdtemp(prefix="sklearn-dplssgd-test-cache-")
os.environ["SKLEARN_DPLSSGD_CACHE_DIR"] = _CALIBRATION_CACHE_DIR


def pytest_addoption(parser):
    parser.addoption(
        "--run-slow", action="store_true", default=False,
        help="also run the tests marked slow (the benchmark scripts' quick runs and the "
             "documentation's examples); CI runs them with -m slow --run-slow")


def pytest_configure(config):
    config.addinivalue_line(
        "markers", "slow: a test that runs a whole script or page; skipped without --run-slow")


def pytest_collection_modifyitems(config, items):
    if config.getoption("--run-slow"):
        return
    skip = pytest.mark.skip(reason="slow: run with --run-slow (CI does)")
    for item in items:
        if "slow" in item.keywords:
            item.add_marker(skip)


def pytest_sessionfinish(session, exitstatus):
    shutil.rmtree(_CALIBRATION_CACHE_DIR, ignore_errors=True)
