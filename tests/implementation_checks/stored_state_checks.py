"""Implementation checks of what the library reads back from disk.

A value read back from outside the fit that sets the noise or the budget
must not be trusted because it is there: a planted calibration cache entry
must not lower the noise of a fit (:func:`check_planted_cache_entry`), and
a ledger's records file must hold data, refuse a pickle and notice records
removed from it (:func:`check_ledger_file_format`).
"""

import base64
import contextlib
import json
import os
import pickle
import tempfile
from pathlib import Path

import dp_accounting
from sklearn.base import clone

from sklearn_dplssgd._accounting import (
    calibrate_noise, LedgerFileError, PrivacyLedger, store_calibration,
)
from sklearn_dplssgd._utils import public_row_count
from .common import CheckResult, declare_public_n, default_data, private_clone, quietly

__all__ = ["check_ledger_file_format", "check_planted_cache_entry"]

# How much the planted entries lower the noise multiplier.
_PLANTED_FACTOR = 20.0


@contextlib.contextmanager
def _cache_folder(folder):
    """Point the calibration cache at ``folder``, with empty memory caches, for the block."""
    previous = os.environ.get("SKLEARN_DPLSSGD_CACHE_DIR")
    os.environ["SKLEARN_DPLSSGD_CACHE_DIR"] = folder
    calibrate_noise.cache_clear()
    try:
        yield
    finally:
        if previous is None:
            del os.environ["SKLEARN_DPLSSGD_CACHE_DIR"]
        else:
            os.environ["SKLEARN_DPLSSGD_CACHE_DIR"] = previous
        calibrate_noise.cache_clear()  # nothing read in the block stays in memory


def _plant_lower_noise(folder):
    """Rewrite every entry under ``folder`` with its noise multiplier lowered.

    Through the store itself, so each entry keeps its claimed epsilon, a
    valid key and digest: what anyone who can write the folder can do.
    Returns the number of entries planted.
    """
    planted = 0
    for path in sorted((folder / "calibrations").glob("*.json")):
        entry = json.loads(path.read_text(encoding="utf-8"))
        settings = {name: value for name, value in entry["key"].items()
                    if name not in ("format", "dp_accounting")}
        result = dict(entry["result"])
        result["noise_multiplier"] = result["noise_multiplier"] / _PLANTED_FACTOR
        store_calibration(settings, result)
        planted += 1
    return planted


def check_planted_cache_entry(estimator, X=None, y=None):
    """A planted calibration cache entry does not lower a fit's noise.

    In a temporary cache folder of its own: fit a clone (a fresh
    calibration, stored there), replace every stored noise multiplier by a
    twentieth of it (entries well formed, digests valid, the claimed epsilon
    kept), empty the in-memory caches and fit again. The second fit must use
    the same noise multiplier and report the same epsilon as the first. A
    mechanism that stores no calibration (nothing to plant) passes.

    Returns
    -------
    CheckResult
        ``measured`` is the ratio of the fresh noise multiplier to the one
        used after planting (1 when the entry was refused).
    """
    if X is None:
        X, y = default_data(estimator)
    model = declare_public_n(private_clone(estimator), public_row_count(X))
    with tempfile.TemporaryDirectory(prefix="dplssgd-audit-cache-") as folder:
        with _cache_folder(folder):
            fresh = quietly(clone(model).fit, X, y)
            planted = _plant_lower_noise(Path(folder))
            calibrate_noise.cache_clear()
            refit = quietly(clone(model).fit, X, y)
    if not planted:
        return CheckResult("planted cache entry", True, 1.0, 1.0,
                           "no calibration was stored for this estimator: nothing to plant")
    ratio = (fresh.noise_multiplier_ / refit.noise_multiplier_
             if refit.noise_multiplier_ > 0 else float("inf"))
    passed = ratio == 1.0 and refit.epsilon_ == fresh.epsilon_
    return CheckResult(
        "planted cache entry", passed, float(ratio), 1.0,
        "fresh noise multiplier over the one used after planting entries with "
        f"1/{_PLANTED_FACTOR:g} of it (epsilon_ {fresh.epsilon_:.4g} fresh, "
        f"{refit.epsilon_:.4g} after)")


class _CodeMarker:
    """A pickle whose loading creates a file: stands for any code."""

    def __init__(self, path):
        self.path = path

    def __reduce__(self):
        return (open, (self.path, "w"))


def check_ledger_file_format():
    """A ledger's records file holds data, refuses a pickle and notices lost records.

    With a ledger of its own in a temporary folder: charge two events; the
    file must be JSON lines (no pickle); a line holding a pickle whose
    loading would create a file must be refused without the file appearing;
    and the file with its last record removed must be refused, by the
    ledger and by a new ledger object reopening the path.

    Returns
    -------
    CheckResult
        ``measured`` is the number of failures.
    """
    failures = []
    event = dp_accounting.SelfComposedDpEvent(dp_accounting.PoissonSampledDpEvent(
        0.01, dp_accounting.GaussianDpEvent(2.0)), 100)
    with tempfile.TemporaryDirectory(prefix="dplssgd-audit-ledger-") as folder:
        ledger = PrivacyLedger(path=os.path.join(folder, "ledger.records"))
        ledger.charge("first", event, ledger.neighboring)
        ledger.charge("second", event, ledger.neighboring)
        with open(ledger.path, "rb") as handle:
            lines = handle.read().splitlines(keepends=True)
        try:
            for line in lines:
                json.loads(line)
        except ValueError:
            failures.append("the records file is not JSON lines")

        marker = os.path.join(folder, "code-ran")
        record = {"estimator": "planted", "dp_event": _CodeMarker(marker)}
        with open(ledger.path, "ab") as handle:
            handle.write(base64.b64encode(pickle.dumps(record)) + b"\n")
        for name, read in (("the ledger", lambda: ledger.records),
                           ("a reopened ledger", lambda: PrivacyLedger(path=ledger.path))):
            try:
                read()
                failures.append(f"{name} accepted a pickled record")
            except LedgerFileError:
                pass
        if os.path.exists(marker):
            failures.append("a pickled record was unpickled (its code ran)")

        with open(ledger.path, "wb") as handle:
            handle.writelines(lines[:-1])
        for name, read in (("the ledger", lambda: ledger.epsilon()),
                           ("a reopened ledger",
                            lambda: PrivacyLedger(path=ledger.path).epsilon())):
            try:
                read()
                failures.append(f"{name} did not notice a removed record")
            except LedgerFileError:
                pass
    detail = "ways the ledger's file was trusted"
    if failures:
        detail += ": " + "; ".join(failures)
    return CheckResult("ledger file format", not failures, float(len(failures)), 0.0, detail)
