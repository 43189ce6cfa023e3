"""PrivacyLedger: complete across clone and joblib workers, capped before reading rows."""

import copy
import gc
import os
import pickle
import subprocess
import sys
import tempfile
from pathlib import Path

import dp_accounting
import numpy as np
import pytest
from dp_accounting import pld as dp_pld
from sklearn.base import clone
from sklearn.model_selection import GridSearchCV, cross_validate

from sklearn_dplssgd import (
    DPLSSGDClassifier,
    DPLSSGDRegressor,
    PrivacyBudgetExceededError,
    PrivacyLedger,
)

REPO_ROOT = Path(__file__).resolve().parent.parent


@pytest.fixture
def data():
    rng = np.random.default_rng(0)
    X = rng.uniform(-1, 1, size=(400, 5))
    return X, (X[:, 0] + X[:, 1] > 0).astype(int)


@pytest.fixture
def ledger(tmp_path):
    return PrivacyLedger(path=str(tmp_path / "ledger.records"))


def test_clone_and_deepcopy_keep_the_same_ledger(ledger):
    clf = DPLSSGDClassifier(classes=[0, 1], ledger=ledger)
    assert clone(clf).ledger is ledger
    assert copy.deepcopy(ledger) is ledger and copy.copy(ledger) is ledger
    # A pickled ledger (as in a joblib worker) writes to the same records.
    twin = pickle.loads(pickle.dumps(ledger))
    assert twin is not ledger and twin.path == ledger.path


def test_every_fit_of_a_parallel_grid_search_is_recorded(data, ledger):
    X, y = data
    search = GridSearchCV(
        DPLSSGDClassifier(classes=[0, 1], max_iter=2, ledger=ledger),
        {"sigma": [0.0, 1.0]}, cv=2, n_jobs=2,
    )
    search.fit(X, y)
    records = ledger.records
    assert len(records) == 2 * 2 + 1  # candidates x folds, plus the refit
    assert {record["estimator"] for record in records} == {"DPLSSGDClassifier"}


def test_total_is_the_composition_recomputed_with_dp_accounting(data, ledger):
    X, y = data
    fits = [DPLSSGDRegressor(epsilon=eps, max_iter=2, ledger=ledger,
                             target_bounds=(-5, 5)).fit(X, X[:, 0])
            for eps in (0.5, 1.0)]
    composed = dp_accounting.ComposedDpEvent([fit.dp_event_ for fit in fits])
    assert ledger.dp_event == composed
    accountant = dp_pld.PLDAccountant(dp_accounting.NeighboringRelation.REPLACE_ONE,
                                      value_discretization_interval=1e-4)
    direct = accountant.compose(composed).get_epsilon(1e-5)
    assert ledger.epsilon() == pytest.approx(direct, rel=5e-3)
    assert ledger.epsilon() >= direct - 1e-6  # a coarser grid is pessimistic
    assert 1.0 < ledger.epsilon() < 1.5


def test_cross_validate_is_counted(data, ledger):
    X, y = data
    cross_validate(DPLSSGDClassifier(classes=[0, 1], max_iter=2, ledger=ledger), X, y, cv=3)
    assert len(ledger.records) == 3


def test_cap_refuses_before_the_data_is_read(data, tmp_path):
    X, y = data
    ledger = PrivacyLedger(max_epsilon=1.2, path=str(tmp_path / "capped"))
    DPLSSGDClassifier(classes=[0, 1], max_iter=2, ledger=ledger).fit(X, y)

    class Untouchable:
        """Rows that fail if anything reads them; only their count is known."""

        shape = X.shape

        def __array__(self, *args, **kwargs):
            raise AssertionError("the data was read")

    with pytest.raises(PrivacyBudgetExceededError, match="max_epsilon=1.2"):
        DPLSSGDClassifier(classes=[0, 1], max_iter=2, ledger=ledger).fit(Untouchable(), y)
    assert len(ledger.records) == 1  # the refused fit recorded nothing
    assert ledger.epsilon() <= 1.0


def test_reproducible_fits_exhaust_a_capped_ledger(data, tmp_path):
    X, y = data
    ledger = PrivacyLedger(max_epsilon=10.0, path=str(tmp_path / "seeded"))
    with pytest.raises(PrivacyBudgetExceededError, match="inf"):
        DPLSSGDClassifier(classes=[0, 1], random_state=0, reproducible=True,
                          ledger=ledger).fit(X, y)


def test_adjacency_must_match(data, ledger):
    X, y = data
    with pytest.raises(ValueError, match="do not compose"):
        DPLSSGDClassifier(classes=[0, 1], neighboring="add_remove", public_n_samples=400,
                          ledger=ledger).fit(X, y)


@pytest.mark.parametrize("kwargs, match", [
    ({"max_epsilon": -1}, "max_epsilon"), ({"delta": 2.0}, "delta"),
    ({"neighboring": "swap"}, "neighboring")])
def test_invalid_ledgers_are_refused(kwargs, match):
    with pytest.raises(ValueError, match=match):
        PrivacyLedger(**kwargs)


def test_estimators_refuse_a_non_ledger(data):
    X, y = data
    with pytest.raises((TypeError, ValueError), match="ledger"):
        DPLSSGDClassifier(classes=[0, 1], ledger={"eps": 1}).fit(X, y)


def test_a_ledger_whose_records_file_is_missing_fails_closed(data, tmp_path):
    X, y = data
    path = tmp_path / "gone.records"
    ledger = PrivacyLedger(path=str(path))
    clf = DPLSSGDClassifier(classes=[0, 1], max_iter=2, ledger=ledger).fit(X, y)
    # A worker on a host that does not share the file gets a pickled copy.
    worker_copy = pickle.loads(pickle.dumps(clone(clf)))
    path.unlink()
    for attempt in (lambda: worker_copy.fit(X, y), lambda: clf.partial_fit(X, y),
                    lambda: ledger.records, ledger.epsilon, lambda: ledger.dp_event):
        with pytest.raises(FileNotFoundError, match="gone.records") as caught:
            attempt()
        assert "missing" in str(caught.value) and caught.value.__context__ is None
    assert not path.exists()  # nothing recreated an empty ledger


def test_a_closed_ledger_refuses_further_charges(data, tmp_path):
    X, y = data
    ledger = PrivacyLedger(path=str(tmp_path / "closed"))
    ledger.close()
    with pytest.raises(FileNotFoundError, match="closed"):
        DPLSSGDRegressor(max_iter=2, ledger=ledger).fit(X, X[:, 0])


def test_reopening_needs_the_file_unless_creation_is_asked_for(data, tmp_path):
    X, y = data
    path = str(tmp_path / "shared.records")
    with pytest.raises(FileNotFoundError, match="shared.records"):
        PrivacyLedger(path=path, create=False)
    first = PrivacyLedger(path=path)  # create=True: a new, empty ledger
    DPLSSGDClassifier(classes=[0, 1], max_iter=2, ledger=first).fit(X, y)
    reopened = PrivacyLedger(path=path, create=False)
    assert len(reopened.records) == 1
    assert reopened.epsilon() == first.epsilon()
    with pytest.raises(TypeError, match="create"):
        PrivacyLedger(path=path, create="yes")


@pytest.fixture
def temporary_folder(tmp_path, monkeypatch):
    """The folder where ledgers made without a path put their files (``tempfile``'s)."""
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
    return tmp_path


def test_temporary_ledgers_leave_no_file_behind(data, temporary_folder):
    X, y = data
    ledgers = [PrivacyLedger() for _ in range(3)]
    DPLSSGDClassifier(classes=[0, 1], max_iter=2, ledger=ledgers[0]).fit(X, y)
    assert len(list(temporary_folder.iterdir())) == 2 * 3  # records and head files
    ledgers[1].close()
    assert len(list(temporary_folder.iterdir())) == 2 * 2
    # A pickled copy loaded in the same process is the ledger itself.
    assert pickle.loads(pickle.dumps(ledgers[0])) is ledgers[0]
    del ledgers
    gc.collect()
    assert list(temporary_folder.iterdir()) == []


def test_a_temporary_ledger_is_removed_when_its_process_ends(temporary_folder):
    code = ("import dp_accounting, sklearn_dplssgd\n"
            "ledger = sklearn_dplssgd.PrivacyLedger()\n"
            "ledger.charge('A', dp_accounting.GaussianDpEvent(2.0), 'replace_one')\n"
            "print(ledger.path)\n")
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                            cwd=REPO_ROOT, env=dict(os.environ, TMPDIR=str(temporary_folder)),
                            timeout=300)
    assert result.returncode == 0, result.stderr
    assert Path(result.stdout.strip()).parent == temporary_folder
    assert list(temporary_folder.iterdir()) == []


def test_worker_copies_keep_a_temporary_ledger(data, temporary_folder):
    X, y = data
    # The estimators come back from the worker processes with pickled copies
    # of the ledger: in this process, they are the ledger itself, which lives
    # as long as any of them.
    fitted = cross_validate(DPLSSGDClassifier(classes=[0, 1], max_iter=2,
                                              ledger=PrivacyLedger()),
                            X, y, cv=2, n_jobs=2, return_estimator=True)["estimator"]
    gc.collect()
    assert fitted[0].ledger is fitted[1].ledger
    assert len(fitted[0].ledger.records) == 2
    fitted[0].partial_fit(X, y)  # charged to the same records
    assert len(fitted[1].ledger.records) == 3


@pytest.mark.skipif(not hasattr(os, "fork"), reason="os.fork")
def test_a_forked_child_never_removes_its_parents_ledger(temporary_folder):
    ledger = PrivacyLedger()
    child = os.fork()
    if child == 0:  # pragma: no cover - the child process
        try:
            ledger._removal()  # as when the child's copy of the object is collected
        finally:
            os._exit(0)
    os.waitpid(child, 0)
    assert ledger.records == [] and os.path.exists(ledger.path + ".head")
