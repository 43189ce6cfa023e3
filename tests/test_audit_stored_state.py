"""The implementation check of what the ledger reads back from disk, and a broken variant."""

import json

from sklearn_dplssgd._accounting import _ledger

from implementation_checks import check_ledger_file_format


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
