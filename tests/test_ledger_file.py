"""Tests for what a PrivacyLedger reads back from its records file.

* The file holds JSON data, never a pickle: an older file of pickled records
  (or a pickle planted in a current one) is refused and never unpickled.
* Every event type the library produces survives the round trip (equal
  event, equal epsilon); unknown types are refused.
* Records removed from the end, an edited record, an emptied file or a
  lost head file are detected: the ledger fails closed.
"""

import base64
import json
import math
import os
import pickle

import dp_accounting
import pytest

from sklearn_dplssgd import PrivacyLedger
from sklearn_dplssgd._accounting._events import EpsilonDeltaDpEvent, event_epsilon
from sklearn_dplssgd._accounting._event_json import event_from_json, event_to_json
from sklearn_dplssgd._accounting._ledger import LedgerFileError, _canonical, _chained

GAUSSIAN = dp_accounting.GaussianDpEvent(1.3)
STEPS = dp_accounting.SelfComposedDpEvent(
    dp_accounting.PoissonSampledDpEvent(0.01, GAUSSIAN), 200)
# One of each event the library produces (dp_event_ of the estimators, the
# private transformers and the search), and the Laplace event.
EVENTS = {
    "gradient perturbation": STEPS,
    "full batch": dp_accounting.SelfComposedDpEvent(GAUSSIAN, 20),
    "noise schedule": dp_accounting.ComposedDpEvent([
        dp_accounting.SelfComposedDpEvent(dp_accounting.PoissonSampledDpEvent(
            0.01, dp_accounting.GaussianDpEvent(z)), 100) for z in (2.0, 1.5)]),
    "output perturbation": dp_accounting.GaussianDpEvent(2 * 0.7),
    "not private": dp_accounting.NonPrivateDpEvent(),
    "nothing released": dp_accounting.NoOpDpEvent(),
    "encoder": dp_accounting.SelfComposedDpEvent(EpsilonDeltaDpEvent(0.25, 1e-7), 3),
    "scaler": dp_accounting.SelfComposedDpEvent(EpsilonDeltaDpEvent(0.5, 0.0), 2),
    "search": dp_accounting.dp_event.RepeatAndSelectDpEvent(
        dp_accounting.ComposedDpEvent([STEPS, dp_accounting.GaussianDpEvent(4.0)]),
        10.0, math.inf),
    "search, geometric": dp_accounting.dp_event.RepeatAndSelectDpEvent(STEPS, 5.0, 1.0),
    "laplace": dp_accounting.LaplaceDpEvent(2.0),
}


@pytest.mark.parametrize("name", sorted(EVENTS))
def test_every_event_of_the_library_survives_the_round_trip(name):
    event = EVENTS[name]
    rebuilt = event_from_json(json.loads(_canonical(event_to_json(event))))
    assert rebuilt == event and type(rebuilt) is type(event)
    if name not in ("laplace", "not private", "nothing released"):
        assert event_epsilon(rebuilt, 1e-5) == event_epsilon(event, 1e-5)


def test_records_read_back_by_another_ledger_object_are_equal(tmp_path):
    path = str(tmp_path / "ledger.records")
    ledger = PrivacyLedger(path=path)
    for name, event in EVENTS.items():
        if name != "not private":
            ledger.charge(name, event, "replace_one")
    reopened = PrivacyLedger(path=path, create=False)
    assert reopened.records == ledger.records
    assert [r["dp_event"] for r in reopened.records] == [
        e for n, e in EVENTS.items() if n != "not private"]
    assert reopened.epsilon() == ledger.epsilon()
    # The file is JSON lines: no pickle anywhere.
    for line in open(path, "rb").read().splitlines():
        assert isinstance(json.loads(line), dict)


@pytest.mark.parametrize("event", [dp_accounting.ZCDpEvent(0.1),
                                   dp_accounting.RandomizedResponseDpEvent(0.5, 2)])
def test_an_unknown_event_is_refused_before_anything_is_written(tmp_path, event):
    ledger = PrivacyLedger(path=str(tmp_path / "ledger.records"))
    before = open(ledger.path, "rb").read()
    with pytest.raises(ValueError, match="cannot be recorded in a PrivacyLedger"):
        ledger.charge("X", event, "replace_one")
    assert open(ledger.path, "rb").read() == before
    with pytest.raises(ValueError, match="unknown type"):
        event_from_json({"type": "zcdp", "xi": 0.0})


class _Marker:
    """A pickle whose loading creates a file (stands for any code)."""

    def __init__(self, path):
        self.path = path

    def __reduce__(self):
        return (open, (self.path, "w"))


def _pickle_line(marker):
    record = {"estimator": "X", "dp_event": _Marker(str(marker))}
    return base64.b64encode(pickle.dumps(record)) + b"\n"


def test_an_old_file_of_pickles_is_refused_and_never_unpickled(tmp_path):
    path, marker = tmp_path / "old.records", tmp_path / "code-ran"
    path.write_bytes(_pickle_line(marker))
    for kwargs in (dict(create=False), dict()):
        with pytest.raises(LedgerFileError, match="never unpickles") as error:
            PrivacyLedger(path=str(path), **kwargs)
        assert "charge(name, event, neighboring)" in str(error.value)  # how to migrate
    assert not marker.exists()


def test_a_pickle_appended_to_a_ledger_is_refused_and_never_unpickled(tmp_path):
    marker = tmp_path / "code-ran"
    ledger = PrivacyLedger(path=str(tmp_path / "ledger.records"))
    ledger.charge("X", STEPS, "replace_one")
    with open(ledger.path, "ab") as handle:
        handle.write(_pickle_line(marker))
    for read in (lambda: ledger.records, lambda: ledger.epsilon(),
                 lambda: ledger.charge("X", STEPS, "replace_one"),
                 lambda: PrivacyLedger(path=ledger.path).records):
        with pytest.raises(LedgerFileError):
            read()
    assert not marker.exists()


@pytest.fixture
def charged(tmp_path):
    ledger = PrivacyLedger(path=str(tmp_path / "ledger.records"), max_epsilon=10.0)
    ledger.charge("A", EVENTS["encoder"], "replace_one")
    ledger.charge("B", EVENTS["scaler"], "replace_one")
    return ledger


def _lines(ledger):
    return open(ledger.path, "rb").read().splitlines(keepends=True)


def _rewrite_consistently(ledger, lines):
    """Rewrite the records and the head file with a valid chain: a forger who knows the format."""
    entries = [json.loads(line) for line in lines]
    digest = ""
    for entry in entries:
        content = {k: v for k, v in entry.items() if k != "digest"}
        entry["digest"] = digest = _chained(digest, content)
    with open(ledger.path, "wb") as handle:
        handle.writelines((_canonical(entry) + "\n").encode() for entry in entries)
    with open(ledger.path + ".head", "w") as handle:
        handle.write(_canonical({"identity": entries[0]["identity"],
                                 "count": len(entries) - 1, "digest": digest}))


def test_removing_the_last_record_is_detected(charged):
    lines = _lines(charged)
    with open(charged.path, "wb") as handle:
        handle.writelines(lines[:-1])
    for ledger in (lambda: charged, lambda: PrivacyLedger(path=charged.path, create=False)):
        with pytest.raises(LedgerFileError, match="records were removed"):
            ledger().epsilon()
    # A forger who also rewrites the head file: this ledger (and its copies)
    # still remembers what it saw.
    _rewrite_consistently(charged, lines[:-1])
    with pytest.raises(LedgerFileError, match="records were removed"):
        charged.charge("C", STEPS, "replace_one")
    assert len(_lines(charged)) == len(lines) - 1  # nothing charged


def test_editing_an_epsilon_is_detected(charged):
    lines = _lines(charged)
    edited = json.loads(lines[1])
    edited["dp_event"]["event"]["epsilon"] = 0.0025  # a hundred times less spent
    lines[1] = (_canonical(edited) + "\n").encode()
    with open(charged.path, "wb") as handle:
        handle.writelines(lines)
    for ledger in (lambda: charged, lambda: PrivacyLedger(path=charged.path, create=False)):
        with pytest.raises(LedgerFileError, match="digests break on line 2"):
            ledger().records
    _rewrite_consistently(charged, lines)
    with pytest.raises(LedgerFileError, match="edited"):
        charged.epsilon()


@pytest.mark.parametrize("damage", ["emptied", "head file removed", "header removed",
                                    "another ledger's file"])
def test_a_ledger_that_lost_its_file_fails_closed(charged, tmp_path, damage):
    if damage == "emptied":
        open(charged.path, "wb").close()
    elif damage == "head file removed":
        os.remove(charged.path + ".head")
    elif damage == "header removed":
        with open(charged.path, "wb") as handle:
            handle.writelines(_lines(charged)[1:])
    else:
        other = PrivacyLedger(path=str(tmp_path / "other.records"))
        os.replace(other.path, charged.path)  # its head file stays behind
    with pytest.raises(LedgerFileError):
        charged.epsilon()
    with pytest.raises(LedgerFileError):
        PrivacyLedger(path=charged.path).epsilon()


def test_a_ledger_remembers_its_identity(charged, tmp_path):
    # Both files swapped for a new ledger's: a new object cannot tell (the
    # documented limit), this one can.
    other = PrivacyLedger(path=str(tmp_path / "other.records"))
    os.replace(other.path, charged.path)
    os.replace(other.path + ".head", charged.path + ".head")
    assert PrivacyLedger(path=charged.path).records == []
    with pytest.raises(LedgerFileError, match="another ledger"):
        charged.records


def test_a_pickled_copy_carries_what_it_saw(charged):
    twin = pickle.loads(pickle.dumps(charged))
    lines = _lines(charged)
    _rewrite_consistently(charged, lines[:-1])
    with pytest.raises(LedgerFileError):
        twin.records


def test_the_adjacency_of_a_file_is_kept(charged):
    with pytest.raises(ValueError, match="cannot be opened with neighboring='add_remove'"):
        PrivacyLedger(path=charged.path, neighboring="add_remove")
    # Reopened under its own adjacency: every record is there.
    assert len(PrivacyLedger(path=charged.path).records) == 2
