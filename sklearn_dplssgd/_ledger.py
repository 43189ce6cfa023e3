"""PrivacyLedger: the budget spent on a data set, across every fit that saw it.

scikit-learn copies estimators freely (``clone`` deep-copies parameters,
joblib pickles them into worker processes), so a budget record held in an
estimator's state is lost or duplicated (diffprivlib's accountant is, inside
``GridSearchCV``). The ledger is one object that ``clone`` returns as itself,
and whose records live in a file it owns: a pickled ledger in a worker
process appends to the same file, so the parent sees every fit.

The records file is the ledger's memory, so a ledger whose file is missing
fails closed: only the constructor creates a records file, and a ledger (or a
pickled copy in a worker process on a host that does not share the file)
that cannot find it raises ``FileNotFoundError`` naming it, rather than
starting again from zero.

A fit charges the ledger before it reads any row: the mechanism depends only
on public quantities, so its event, and the composed total with it, are
known in advance, and a fit that would exceed ``max_epsilon`` is refused
before the data is touched. The charge and the cap check are one atomic step
under a file lock, so parallel fits cannot overrun the cap together.
"""

import base64
import contextlib
import math
import os
import pickle
import tempfile

import dp_accounting

from ._accounting import NEIGHBORING_RELATIONS, event_epsilon
from ._report import ledger_report

try:  # POSIX file locks; elsewhere the records are appended unlocked.
    import fcntl
except ImportError:  # pragma: no cover - Windows
    fcntl = None

__all__ = ["PrivacyLedger", "PrivacyBudgetExceededError", "ledger_error"]

# PLD grid of the ledger's totals, relative to the epsilon scale: a
# pessimistic (sound) estimate within about 0.1 percent.
_INTERVAL_PER_EPSILON = 1e-3


class PrivacyBudgetExceededError(ValueError):
    """A fit would take a ledger's composed epsilon above its ``max_epsilon``."""


class PrivacyLedger:
    """Budget record of every private fit on one data set, shared by all copies.

    Pass it as ``ledger=`` to the estimators. Every fit that uses it records
    its ``dp_event_`` (under the ledger's adjacency) before training; the
    ledger reports the composition of all records. It survives ``clone``
    (a clone gets the same ledger, not a copy) and joblib worker processes
    (records go to a file the ledger owns).

    Parameters
    ----------
    max_epsilon : float or None, default=None
        Cap on the composed epsilon at ``delta``: a fit that would exceed it
        is refused with :class:`PrivacyBudgetExceededError` before it reads
        any row. None records without a cap.
    delta : float, default=1e-5
        Delta at which the total is reported and capped.
    neighboring : {"replace_one", "add_remove"}, default="replace_one"
        Adjacency of the records: a fit under another adjacency is refused
        (its event would be accounted under the wrong relation).
    path : str or None, default=None
        File holding the records. None creates a new temporary file (kept
        until :meth:`close` is called). Give a path to keep a ledger across
        processes and sessions; an existing file's records are kept.
    create : bool, default=True
        Whether the constructor may create the records file at ``path`` when
        there is none (a new ledger). False reopens an existing ledger: a
        missing file raises ``FileNotFoundError`` instead of starting a new,
        empty one (use it where a path on a shared file system may not be
        mounted). Only the constructor creates a file: once constructed, a
        ledger, its clones and its pickled copies raise
        ``FileNotFoundError`` on their next charge or read if the file has
        gone, so a fit is never charged to a ledger that forgot the past.

    Attributes
    ----------
    path : str
        The file of the records.

    Notes
    -----
    The ledger covers the processes that share its records file: those on
    one machine, or on several that mount it from one shared file system
    (with working ``flock`` locks). A worker that cannot see the file fails
    closed. It is the user's bookkeeping of what was released, not a
    guarantee across hosts that do not share it: fits on the same rows
    elsewhere, with another ledger or none, are not counted.

    Fits on subsets of the rows (cross-validation folds) are recorded as if
    each saw every row: sequential composition, a valid upper bound. A fit
    refused by the cap records nothing; a fit that fails after its charge
    (invalid data, divergence) keeps its charge.

    Examples
    --------
    >>> from sklearn.datasets import load_digits
    >>> from sklearn.model_selection import cross_validate
    >>> from sklearn_dplssgd import DPLSSGDClassifier, PrivacyLedger
    >>> X, y = load_digits(return_X_y=True)
    >>> ledger = PrivacyLedger(max_epsilon=5.0)
    >>> clf = DPLSSGDClassifier(epsilon=1.0, classes=range(10), ledger=ledger)
    >>> _ = cross_validate(clf, X / 16, y, cv=3)
    >>> len(ledger.records), 1.0 < ledger.epsilon() <= 3.0
    (3, True)
    """

    def __init__(self, max_epsilon=None, delta=1e-5, neighboring="replace_one", path=None,
                 create=True):
        if max_epsilon is not None and not (
                isinstance(max_epsilon, (int, float)) and max_epsilon > 0):
            raise ValueError(f"max_epsilon must be None or a positive number; got {max_epsilon!r}.")
        if not (isinstance(delta, float) and 0 < delta < 1):
            raise ValueError(f"delta must be a float in (0, 1); got {delta!r}.")
        if neighboring not in NEIGHBORING_RELATIONS:
            raise ValueError(
                f"neighboring must be one of {NEIGHBORING_RELATIONS}; got {neighboring!r}.")
        if not isinstance(create, bool):
            raise TypeError(f"create must be True or False; got {create!r}.")
        self.max_epsilon = None if max_epsilon is None else float(max_epsilon)
        self.delta = delta
        self.neighboring = neighboring
        if path is None:
            handle, path = tempfile.mkstemp(prefix="dplssgd-ledger-", suffix=".records")
            os.close(handle)
        elif create:
            open(path, "ab").close()
        elif not os.path.isfile(path):
            raise FileNotFoundError(
                f"No ledger records file at {os.path.abspath(path)!r}, and create=False: "
                "there is no ledger to reopen there. Check the path (is the shared file "
                "system mounted?), or pass create=True to start a new, empty ledger.")
        self.path = os.path.abspath(path)

    # clone() deep-copies parameters: the ledger must stay one ledger.
    def __copy__(self):
        return self

    def __deepcopy__(self, memo):
        return self

    def __repr__(self):
        cap = "" if self.max_epsilon is None else f"max_epsilon={self.max_epsilon:g}, "
        return f"PrivacyLedger({cap}delta={self.delta:g}, neighboring={self.neighboring!r})"

    def _missing_records(self):
        return FileNotFoundError(
            f"This PrivacyLedger's records file {self.path!r} is missing (deleted, closed, "
            "or not shared with this process's host). Without it the ledger cannot know "
            "what was already spent, so it refuses to charge or report rather than start "
            "again from zero. Restore the file or run where it is visible; to start a new "
            "ledger deliberately, construct PrivacyLedger(path=...).")

    @contextlib.contextmanager
    def _locked(self):
        # "r+b" opens only an existing file: appending mode would create an
        # empty one and the ledger would silently restart from zero.
        try:
            handle = open(self.path, "r+b")
        except FileNotFoundError:
            handle = None
        if handle is None:
            raise self._missing_records()  # outside the handler: no chained OS error
        with handle:
            if fcntl is not None:
                fcntl.flock(handle, fcntl.LOCK_EX)
            try:
                yield handle
            finally:
                if fcntl is not None:
                    fcntl.flock(handle, fcntl.LOCK_UN)

    @staticmethod
    def _read(handle):
        handle.seek(0)
        return [pickle.loads(base64.b64decode(line)) for line in handle.read().splitlines()
                if line.strip()]

    @property
    def records(self):
        """The records so far: dicts with the estimator's name and its ``dp_event``."""
        with self._locked() as handle:
            return self._read(handle)

    @property
    def dp_event(self):
        """All records composed, as one dp-accounting event."""
        return dp_accounting.ComposedDpEvent([record["dp_event"] for record in self.records])

    def _total(self, events, delta):
        if not events:
            return 0.0
        composed = dp_accounting.ComposedDpEvent(events)
        if any(isinstance(event, dp_accounting.NonPrivateDpEvent) for event in events):
            return math.inf
        scale = self.max_epsilon if self.max_epsilon is not None else 1.0
        # PLD where dp-accounting supports every record, RDP otherwise (a
        # private search's RepeatAndSelectDpEvent).
        return event_epsilon(composed, delta, self.neighboring,
                             pld_interval=_INTERVAL_PER_EPSILON * scale)

    def epsilon(self, delta=None):
        """Composed epsilon of all records at ``delta`` (default: the ledger's).

        dp-accounting's PLD accountant under the ledger's adjacency (a
        pessimistic, hence sound, estimate), or its RDP accountant where a
        record is a private search (PLD does not support those); see
        :func:`sklearn_dplssgd._accounting.event_epsilon`.
        """
        return self._total([record["dp_event"] for record in self.records],
                           self.delta if delta is None else delta)

    def charge(self, name, event, neighboring):
        """Record ``event`` if the composed total stays within the cap.

        Called by the estimators before they read any row.

        Raises
        ------
        PrivacyBudgetExceededError
            When the total with ``event`` would exceed ``max_epsilon``
            (nothing is recorded then).
        ValueError
            When ``neighboring`` is not the ledger's adjacency.
        """
        if neighboring != self.neighboring:
            raise ValueError(
                f"{name} is fitted under neighboring={neighboring!r}, but this ledger "
                f"records {self.neighboring!r} events: their epsilons do not compose."
            )
        with self._locked() as handle:
            events = [record["dp_event"] for record in self._read(handle)] + [event]
            if self.max_epsilon is not None:
                total = self._total(events, self.delta)
                if total > self.max_epsilon:
                    raise PrivacyBudgetExceededError(
                        f"Fitting {name} would take this ledger's epsilon to {total:.4g} at "
                        f"delta={self.delta:g}, above max_epsilon={self.max_epsilon:g}; "
                        "the fit was refused before reading any row."
                    )
            handle.seek(0, os.SEEK_END)
            record = {"estimator": name, "dp_event": event}
            handle.write(base64.b64encode(pickle.dumps(record)) + b"\n")
            handle.flush()

    def privacy_report(self):
        """What this ledger's total means, in plain words.

        Returns
        -------
        report : str
        """
        return ledger_report(self)

    def close(self):
        """Delete the records file.

        The ledger cannot be charged or read afterwards (it raises
        ``FileNotFoundError``): construct a new one to start again.
        """
        with contextlib.suppress(FileNotFoundError):
            os.remove(self.path)


def ledger_error(value):
    """The ``ledger`` constraint: a message, or None when valid."""
    if value is None or isinstance(value, PrivacyLedger):
        return None
    return f"must be None or a PrivacyLedger; got {type(value).__name__}."
