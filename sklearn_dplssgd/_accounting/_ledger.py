"""PrivacyLedger: the budget spent on a data set, across every fit that saw it.

scikit-learn copies estimators freely (``clone``, joblib's pickles), so a budget held
in an estimator's state is lost or duplicated. The ledger is one object that ``clone``
returns as itself, whose records live in a file it owns, appended to by its pickled
copies in worker processes. It fails closed: only the constructor creates a records
file, and a ledger whose file is missing raises ``FileNotFoundError``. The file holds
JSON data, never code (:mod:`._event_json`), chained by SHA-256 digests with a
``.head`` file; what a read refuses, and what it cannot detect, are in
docs/privacy_argument.rst ("What the ledger reads back"). A fit charges the ledger
before it reads any row, the charge and the cap check one atomic step under a file lock.
"""

import contextlib
import hashlib
import json
import math
import os
import secrets
import tempfile
import weakref

import dp_accounting

from ._calibration import calibrate_noise, smallest_noise_for
from ._events import NEIGHBORING_RELATIONS, event_epsilon
from ._event_json import event_from_json, event_to_json
from ._report import ledger_report

try:  # POSIX file locks; elsewhere the records are appended unlocked.
    import fcntl
except ImportError:  # pragma: no cover - Windows
    fcntl = None

__all__ = ["LedgerFileError", "PrivacyLedger", "PrivacyBudgetExceededError", "ledger_error",
           "remaining_budget_error"]

# The first line of every records file names the format with this key.
_FORMAT_KEY = "sklearn_dplssgd_ledger"
_FORMAT_VERSION = 1
_HEAD_SUFFIX = ".head"

# PLD grid of the ledger's totals, relative to the epsilon scale: a
# pessimistic (sound) estimate within about 0.1 percent.
_INTERVAL_PER_EPSILON = 1e-3

# The ledgers made without a path in this process, by records file: a pickled
# copy loaded here is the ledger itself (see _unpickled).
_OWNED = weakref.WeakValueDictionary()


class PrivacyBudgetExceededError(ValueError):
    """A fit would take a ledger's composed epsilon above its ``max_epsilon``."""


class LedgerFileError(ValueError):
    """A ledger's records file cannot be trusted: the ledger refuses to charge or report.

    A file not of this format (pickled records included), whose digests do not chain,
    of another ledger, or that lost records this ledger or its head file had seen.
    """


def _canonical(value):
    return json.dumps(value, sort_keys=True, separators=(",", ":"), allow_nan=False)


def _chained(previous, content):
    """The chain digest of a line: SHA-256 of the previous digest and the line's content."""
    return hashlib.sha256((previous + _canonical(content)).encode()).hexdigest()


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
        File holding the records. None creates a temporary file, removed with
        its head file when this object is collected, at the end of the process,
        or by :meth:`close` (its workers' copies fail closed then). Give a path
        to keep a ledger across sessions; an existing file's records are kept.
    create : bool, default=True
        Whether the constructor may create the records file at ``path``. False
        only reopens an existing ledger (a missing file raises
        ``FileNotFoundError``). Once constructed, a ledger and its copies raise
        ``FileNotFoundError`` on their next charge or read if the file has gone.

    Attributes
    ----------
    path : str
        The file of the records (JSON lines; a ``.head`` file beside it).

    Notes
    -----
    The ledger covers the processes that share its records file (one machine, or
    a shared file system with working ``flock`` locks), not fits elsewhere or with
    another ledger. A file that was edited, cut short or swapped for another
    ledger's is refused with :class:`~sklearn_dplssgd.LedgerFileError` (see the
    privacy page). Fits on subsets of the rows are recorded as if each saw every
    row. A fit refused by the cap records nothing; one that fails after its charge
    keeps it.

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
            path = os.path.abspath(path)
            # Left out of pickles (__reduce__): no copy elsewhere removes the files.
            self._removal = weakref.finalize(self, _remove_records, path, os.getpid())
            _OWNED[path] = self
        elif create:
            open(path, "ab").close()
        elif not os.path.isfile(path):
            raise FileNotFoundError(
                f"No ledger records file at {os.path.abspath(path)!r}, and create=False: "
                "there is no ledger to reopen there. Check the path (is the shared file "
                "system mounted?), or pass create=True to start a new, empty ledger.")
        self.path = os.path.abspath(path)
        # What this object has seen of the file: its identity, the number of
        # records and the last chain digest (see _verified).
        self._identity, self._seen = None, (0, None)
        with self._locked() as handle:
            if not handle.read(1):
                self._start(handle, create)
            self._verified(handle)

    # clone() deep-copies parameters: the ledger must stay one ledger.
    def __copy__(self):
        return self

    def __deepcopy__(self, memo):
        return self

    def __reduce__(self):
        state = {key: value for key, value in self.__dict__.items() if key != "_removal"}
        return _unpickled, (state,)

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

    def _refuse(self, problem):
        return LedgerFileError(
            f"This PrivacyLedger's records file {self.path!r} {problem}. The ledger cannot "
            "know what was already spent, so it refuses to charge or report rather than "
            "start again from zero. Restore the file from a copy you trust; to start a new "
            "ledger deliberately, construct PrivacyLedger with a new path.")

    def _head_path(self):
        return self.path + _HEAD_SUFFIX

    def _read_head(self):
        """The head file's (identity, count, digest), or None where there is none."""
        try:
            with open(self._head_path(), "rb") as handle:
                head = json.loads(handle.read().decode("utf-8"))
        except FileNotFoundError:
            return None
        except (OSError, UnicodeDecodeError, ValueError):
            raise self._refuse("has a head file that cannot be read") from None
        if not (isinstance(head, dict) and set(head) == {"identity", "count", "digest"}
                and isinstance(head["count"], int) and head["count"] >= 0):
            raise self._refuse("has a damaged head file")
        return head["identity"], head["count"], head["digest"]

    def _write_head(self, count, digest):
        """Replace the head file atomically (called under the records file's lock)."""
        folder = os.path.dirname(self.path)
        handle, tmp = tempfile.mkstemp(dir=folder, prefix=".dplssgd-ledger-", suffix=".tmp")
        try:
            with os.fdopen(handle, "w", encoding="utf-8") as stream:
                stream.write(_canonical({"identity": self._identity, "count": count,
                                         "digest": digest}))
            os.replace(tmp, self._head_path())
        except BaseException:
            with contextlib.suppress(OSError):
                os.unlink(tmp)
            raise

    def _start(self, handle, create):
        """Write the header of a new ledger into the empty records file."""
        head = self._read_head()
        if head is not None and head[1] > 0:
            raise self._refuse(f"is empty, but its head file says it held {head[1]} records")
        if not create:
            raise self._refuse("is empty (not a ledger), and create=False")
        header = {_FORMAT_KEY: _FORMAT_VERSION, "identity": secrets.token_hex(16),
                  "neighboring": self.neighboring}
        handle.seek(0)
        handle.write((_canonical({**header, "digest": _chained("", header)}) + "\n").encode())
        handle.flush()

    def _verified(self, handle):
        """The records (dicts with ``estimator`` and ``dp_event``) and the last digest.

        Raises :class:`~sklearn_dplssgd.LedgerFileError` unless the file is a ledger of
        this format and adjacency whose lines chain and which extends both what this
        object saw last and what the head file says.
        """
        handle.seek(0)
        lines = handle.read().split(b"\n")
        if lines and lines[-1] == b"":
            lines.pop()
        if not lines:
            raise self._refuse("is empty: its header and records are gone")
        try:
            entries = [json.loads(line.decode("utf-8")) for line in lines]
        except (UnicodeDecodeError, ValueError):
            raise self._refuse(
                "is not a ledger file of this version: a line is not JSON. Earlier versions "
                "of sklearn-dplssgd stored pickled records, which this version never "
                "unpickles (loading a pickle runs code chosen by whoever wrote the "
                "file). To carry such a ledger over, only if you trust everyone who could "
                "write it: with the version that wrote it print repr(record['dp_event']) "
                "for each of its records, then charge each event to a new ledger of this "
                "version with new_ledger.charge(name, event, neighboring)") from None
        records, digests = self._chained_records(entries)
        head = self._checked_head(len(records), digests)
        self._seen = (len(records), digests[-1])
        if head is None or head[1] != len(records):
            self._write_head(len(records), digests[-1])
        return records, digests[-1]

    def _checked_header(self, header):
        """The header's digest, once it is this ledger's header of this format."""
        if not (isinstance(header, dict) and header.get(_FORMAT_KEY) == _FORMAT_VERSION
                and set(header) == {_FORMAT_KEY, "identity", "neighboring", "digest"}):
            raise self._refuse("does not start with a ledger header of this version")
        digest = _chained("", {key: header[key] for key in header if key != "digest"})
        if header["digest"] != digest:
            raise self._refuse("has a damaged header")
        if self._identity is None:
            self._identity = header["identity"]
        elif header["identity"] != self._identity:
            raise self._refuse("now belongs to another ledger")
        if header["neighboring"] != self.neighboring:
            raise ValueError(
                f"The ledger at {self.path!r} records {header['neighboring']!r} events; "
                f"it cannot be opened with neighboring={self.neighboring!r}.")
        return digest

    def _chained_records(self, entries):
        """The records after the header, each checked against the chain: and every digest."""
        digest = self._checked_header(entries[0])
        records, digests = [], [digest]
        for number, entry in enumerate(entries[1:], start=2):
            if not (isinstance(entry, dict) and set(entry) == {"estimator", "dp_event", "digest"}
                    and isinstance(entry["estimator"], str)):
                raise self._refuse(f"has a damaged record on line {number}")
            digest = _chained(digest, {"estimator": entry["estimator"],
                                       "dp_event": entry["dp_event"]})
            if entry["digest"] != digest:
                raise self._refuse(f"was edited: the digests break on line {number}")
            try:
                event = event_from_json(entry["dp_event"])
            except ValueError as error:
                raise self._refuse(f"holds an event it cannot read on line {number} "
                                   f"({error})") from None
            records.append({"estimator": entry["estimator"], "dp_event": event})
            digests.append(digest)
        return records, digests

    def _checked_head(self, count_now, digests):
        """The head file's entry, once the file extends what it and this object saw."""
        head = self._read_head()
        for source, (count, expected) in (("this ledger", self._seen),
                                          ("its head file", (head or (None, 0, None))[1:])):
            if count > count_now:
                raise self._refuse(
                    f"holds {count_now} records, but {source} saw {count}: records "
                    "were removed")
            if expected is not None and digests[count] != expected:
                raise self._refuse(f"no longer holds the records {source} saw: it was edited")
        if head is not None and head[0] != self._identity:
            raise self._refuse("has the head file of another ledger")
        if head is None and count_now:
            raise self._refuse("has lost its head file")
        return head

    @property
    def records(self):
        """The records so far: dicts with the estimator's name and its ``dp_event``."""
        with self._locked() as handle:
            return self._verified(handle)[0]

    @property
    def dp_event(self):
        """All records composed, as one dp-accounting event."""
        return dp_accounting.ComposedDpEvent([record["dp_event"] for record in self.records])

    @property
    def pld_interval(self):
        """The PLD discretization interval of the ledger's totals (``max_epsilon / 1000``)."""
        scale = self.max_epsilon if self.max_epsilon is not None else 1.0
        return _INTERVAL_PER_EPSILON * scale

    def _total(self, events, delta):
        if not events:
            return 0.0
        composed = dp_accounting.ComposedDpEvent(events)
        if any(isinstance(event, dp_accounting.NonPrivateDpEvent) for event in events):
            return math.inf
        # PLD where dp-accounting supports every record, RDP otherwise (a
        # private search's RepeatAndSelectDpEvent).
        return event_epsilon(composed, delta, self.neighboring, pld_interval=self.pld_interval)

    def epsilon(self, delta=None):
        """Composed epsilon of all records at ``delta`` (default: the ledger's).

        dp-accounting's PLD accountant under the ledger's adjacency, or its RDP
        accountant where a record is a private search (PLD does not support those).
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
        line = {"estimator": name, "dp_event": event_to_json(event)}  # refuses unknown types
        with self._locked() as handle:
            records, digest = self._verified(handle)
            events = [record["dp_event"] for record in records] + [event]
            if self.max_epsilon is not None:
                total = self._total(events, self.delta)
                if total > self.max_epsilon:
                    raise PrivacyBudgetExceededError(
                        f"Fitting {name} would take this ledger's epsilon to {total:.4g} at "
                        f"delta={self.delta:g}, above max_epsilon={self.max_epsilon:g}; "
                        "the fit was refused before reading any row."
                    )
            digest = _chained(digest, line)
            handle.seek(0, os.SEEK_END)
            handle.write((_canonical({**line, "digest": digest}) + "\n").encode())
            handle.flush()
            os.fsync(handle.fileno())
            self._seen = (len(events), digest)
            self._write_head(len(events), digest)

    def noise_within_cap(self, name, event_of_noise, *, sample_rate, n_steps):
        """The smallest noise multiplier whose event keeps the composed total within the cap.

        For ``epsilon="remaining"``: the records composed with ``event_of_noise(z)``
        (as :meth:`charge` composes them) stay within ``max_epsilon``, certified by
        evaluation; public quantities only. The fit's :meth:`charge` checks the cap
        again (another fit may have charged meanwhile).

        ``event_of_noise`` maps ``z`` to the fit's event (privacy loss non-increasing
        in ``z``; None for a ``z`` too small to account, treated as over the cap);
        ``sample_rate`` and ``n_steps`` set where the search starts. Raises
        :class:`PrivacyBudgetExceededError` when the records leave less than
        :attr:`pld_interval` (the totals' resolution).
        """
        if self.max_epsilon is None:
            raise ValueError(remaining_budget_error(self))
        records = [record["dp_event"] for record in self.records]
        spent = self._total(records, self.delta)
        # A remainder below the totals' PLD grid step is within their resolution.
        if not self.max_epsilon - spent > self.pld_interval:
            raise PrivacyBudgetExceededError(
                f"{name} was asked to spend the remaining budget (epsilon='remaining'), but "
                f"this ledger's records already take {spent:.4g} of max_epsilon="
                f"{self.max_epsilon:g} at delta={self.delta:g}: nothing remains. The fit "
                "was refused before reading any row.")

        def total_with(noise_multiplier):
            event = event_of_noise(noise_multiplier)
            return math.inf if event is None else self._total(records + [event], self.delta)

        # The noise that meets the remainder alone (cached): the search's start.
        guess = calibrate_noise(self.max_epsilon - spent, self.delta, sample_rate=sample_rate,
                                n_steps=n_steps, neighboring=self.neighboring).noise_multiplier
        return smallest_noise_for(total_with, self.max_epsilon, self.delta,
                                  guess=max(guess, 1e-3))

    def privacy_report(self):
        """What this ledger's total means, in plain words.

        Returns
        -------
        report : str
        """
        return ledger_report(self)

    def close(self):
        """Delete the records file and its head file.

        The ledger cannot be charged or read afterwards (it raises
        ``FileNotFoundError``): construct a new one to start again.
        """
        removal = self.__dict__.get("_removal")
        if removal is not None:
            # Once only: a later temporary ledger may be given the same name.
            removal.detach()
        _remove_records(self.path)


def _remove_records(path, owner_pid=None):
    """Delete a records file and its head file; a finalizer only in the process that made it."""
    if owner_pid is not None and os.getpid() != owner_pid:
        return  # a forked child's copy of the object: the file is its parent's
    for name in (path, path + _HEAD_SUFFIX):
        with contextlib.suppress(FileNotFoundError):
            os.remove(name)


def _unpickled(state):
    """A pickled ledger: the live object where it owns the file, else a copy of ``state``."""
    owner = _OWNED.get(state["path"])
    if owner is not None and owner._identity == state["_identity"]:
        return owner
    ledger = PrivacyLedger.__new__(PrivacyLedger)
    ledger.__dict__.update(state)
    return ledger


def remaining_budget_error(ledger):
    """Why ``epsilon="remaining"`` cannot be used with ``ledger``: a message, or None."""
    if ledger is not None and ledger.max_epsilon is not None:
        return None
    return ("epsilon='remaining' spends what remains of a PrivacyLedger's budget: it needs "
            "ledger=PrivacyLedger(max_epsilon=...); "
            + ("got ledger=None." if ledger is None else "this ledger has no max_epsilon."))


def ledger_error(value):
    """The ``ledger`` constraint: a message, or None when valid."""
    if value is None or isinstance(value, PrivacyLedger):
        return None
    return f"must be None or a PrivacyLedger; got {type(value).__name__}."
