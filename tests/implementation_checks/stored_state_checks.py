"""Implementation checks of what the library reads back from disk.

A value read back from outside the fit that sets the budget must not be
trusted because it is there: a ledger's records file must hold data, refuse
a pickle and notice records removed from it (:func:`check_ledger_file_format`).
"""

import base64
import json
import os
import pickle
import tempfile

import dp_accounting

from sklearn_dplssgd._accounting import LedgerFileError, PrivacyLedger
from .common import CheckResult

__all__ = ["check_ledger_file_format"]


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
