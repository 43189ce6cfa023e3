"""Test-session setup shared by every test module.

scikit-learn's array API mode (``array_api_dispatch=True``, used by
tests/test_array_api.py and by the array API estimator checks of
tests/test_estimator_checks.py) requires SciPy's own array API support,
which SciPy reads from ``SCIPY_ARRAY_API`` when it is first imported: set it
here, before any test module imports SciPy. An explicit value in the
environment is kept.
"""

import os

import pytest

os.environ.setdefault("SCIPY_ARRAY_API", "1")


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
