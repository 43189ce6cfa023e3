"""The audit's checks of what the library reads back from disk, and broken variants."""

import json

import pytest

from sklearn_dplssgd import DPLSSGDClassifier, DPLSSGDRegressor
from sklearn_dplssgd._accounting import _calibration, _ledger
from sklearn_dplssgd._accounting._events import PrivacyCalibration

from implementation_checks import (
    audit_implementation, check_ledger_file_format, check_planted_cache_entry,
)
from implementation_checks import stored_state_checks as _stored_state_checks


@pytest.mark.parametrize("estimator", [DPLSSGDClassifier(max_iter=2),
                                       DPLSSGDRegressor(max_iter=2, accountant="rdp"),
                                       DPLSSGDClassifier(max_iter=2, mechanism="output",
                                                         alpha=0.01)])
def test_the_library_passes_the_planted_cache_check(estimator):
    result = check_planted_cache_entry(estimator)
    assert result.passed, result.detail


def test_a_loader_that_skips_verification_fails_the_check(monkeypatch):
    def unverified(settings):
        # The loader before verification on load: trusts the entry's claims.
        result = _calibration._calibration_cache.load(settings)
        if result is None:
            return None
        return PrivacyCalibration(result["noise_multiplier"], result["epsilon"],
                                  settings["delta"], settings["sample_rate"],
                                  settings["n_steps"], result["accountant"],
                                  settings["neighboring"])

    monkeypatch.setattr(_calibration, "_calibrate_stored", unverified)
    result = check_planted_cache_entry(DPLSSGDClassifier(max_iter=2))
    assert not result.passed
    assert result.measured == pytest.approx(20.0)


def test_the_check_is_part_of_audit_implementation(monkeypatch):
    names = []
    real = _stored_state_checks.check_planted_cache_entry

    def recording(*args):
        result = real(*args)
        names.append(result.name)
        return result

    monkeypatch.setattr("implementation_checks.workflow_checks.check_planted_cache_entry",
                        recording)
    audit = audit_implementation(DPLSSGDRegressor(max_iter=2))
    assert names == ["planted cache entry"]
    assert "planted cache entry" in str(audit)


def test_the_ledger_passes_the_file_format_check():
    result = check_ledger_file_format()
    assert result.passed, result.detail


def test_a_ledger_that_unpickles_fails_the_file_format_check(monkeypatch):
    import base64
    import pickle

    def trusting(self, handle):
        # The ledger before this format: every line a base64 pickle.
        handle.seek(0)
        records = []
        for line in handle.read().splitlines():
            try:
                records.append(pickle.loads(base64.b64decode(line)))
            except Exception:
                records.append({"estimator": "?", "dp_event": json.loads(line)})
        header = [r for r in records if isinstance(r["dp_event"], dict)
                  and "identity" in r["dp_event"]]
        return [r for r in records if r not in header], ""

    monkeypatch.setattr(_ledger.PrivacyLedger, "_verified", trusting)
    monkeypatch.setattr(_ledger.PrivacyLedger, "_total", lambda self, events, delta: 0.0)
    result = check_ledger_file_format()
    assert not result.passed
    assert "unpickled" in result.detail
