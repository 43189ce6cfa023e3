"""A persistent, per-machine store of noise calibrations (one JSON file per setting).

A calibration depends only on public settings (epsilon, delta, q, T, the
accountant, the neighbouring relation, ...) and on the dp-accounting release
that computed it, yet a cold one costs up to a few seconds.  So each result is
kept on disk, and every later process on the machine (a new session, the
workers of ``GridSearchCV(n_jobs=...)`` or Dask) reads it instead.

Where: the folder named by the environment variable
``SKLEARN_DPLSSGD_CACHE_DIR``; set to the empty string, the store is off (no
file is read or written).  Unset: ``$XDG_CACHE_HOME/sklearn-dplssgd``, or
``~/.cache/sklearn-dplssgd`` without ``XDG_CACHE_HOME``.  The variable is read
at every call, so it can be changed while a process runs.  Entries live in
the folder's ``calibrations`` subfolder; deleting the folder is always safe.

What it trusts, and what it does not:

* The folder: only one that no one else can write.  On POSIX systems the
  folder and its ``calibrations`` subfolder must be owned by the user
  running the process and not be writable by its group or others (an entry
  file likewise); otherwise the store is off for that folder (nothing is
  read or written) and a warning says so.  The store
  creates its folders with mode 0o700.  On platforms without POSIX
  ownership and modes (Windows) this check is not made: the default folder
  lies in the user's own profile, and the check below still holds.
* Never the values: an entry only saves the search.  Its key and an
  (unkeyed) SHA-256 digest guard against damaged files and entries of other
  settings or versions, not against someone who can write the folder; so
  the caller recomputes the epsilon of the stored noise multiplier with the
  accountant the calibration used (one evaluation, far cheaper than the
  search) and uses the entry only if that epsilon meets the target (see
  :func:`sklearn_dplssgd._accounting._calibration._calibrate_stored`).  A planted entry
  can therefore never lower the noise; at worst it costs the search again.
* Concurrent processes: an entry is written to a temporary file in the same
  folder and moved into place with ``os.replace`` (atomic), so a reader sees
  either no file or a whole one.  Two processes that compute the same setting
  write the same answer; the last one wins.
* A store that cannot be written (a read-only home, a full disk) is skipped
  silently: the cache only saves time.
"""

import functools
import hashlib
import importlib.metadata
import json
import os
import stat
import tempfile
import warnings
from pathlib import Path

__all__ = ["FORMAT_VERSION", "cache_dir", "load", "store"]

# Bump whenever the calibration's answers change (the search, its
# tolerances, the interval rule, the meaning of a field): entries written
# under another version are then ignored.
FORMAT_VERSION = 2

_ENV_VAR = "SKLEARN_DPLSSGD_CACHE_DIR"
_SUBFOLDER = "calibrations"


def cache_dir():
    """The folder of the store, or None when the store is off.

    Returns
    -------
    pathlib.Path or None
        ``$SKLEARN_DPLSSGD_CACHE_DIR`` if set (None if it is the empty
        string), else ``$XDG_CACHE_HOME/sklearn-dplssgd`` or
        ``~/.cache/sklearn-dplssgd``.
    """
    configured = os.environ.get(_ENV_VAR)
    if configured is not None:
        return Path(configured).expanduser() if configured else None
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return Path(base) / "sklearn-dplssgd"


@functools.lru_cache(maxsize=1)
def _dp_accounting_version():
    """dp-accounting's installed version, or None where it cannot be told."""
    try:
        return importlib.metadata.version("dp-accounting")
    except importlib.metadata.PackageNotFoundError:
        return None


def _full_key(settings):
    """The settings with the versions that the answer also depends on."""
    version = _dp_accounting_version()
    if version is None:
        return None  # no reliable key: do not use the store
    return {"format": FORMAT_VERSION, "dp_accounting": version, **settings}


def _canonical(value):
    # Python's json writes floats by repr, which reads back to the same float.
    return json.dumps(value, sort_keys=True, separators=(",", ":"), allow_nan=False)


def _digest(key, result):
    return hashlib.sha256(_canonical({"key": key, "result": result}).encode()).hexdigest()


def _others_can_write(status):
    """Whether a file or folder of this ``os.stat`` result is open to others' writes.

    True when it is owned by another user or writable by its group or by
    others.  Always False where there are no POSIX owners (no ``os.geteuid``).
    """
    if not hasattr(os, "geteuid"):
        return False
    return status.st_uid != os.geteuid() or bool(status.st_mode & (stat.S_IWGRP | stat.S_IWOTH))


def _private_folder(folder):
    """The store's folder if no one else can write it (nor its subfolder), else None.

    A folder that does not exist yet is fine (the store creates it, mode
    0o700).  A folder others can write is refused with a warning: its entries
    would only cost a verification each, but the store is meant to be the
    user's own.
    """
    for path in (folder, folder / _SUBFOLDER):
        try:
            status = path.stat()
        except OSError:
            return folder  # absent (or unreadable: reading and writing then fail anyway)
        if _others_can_write(status):
            warnings.warn(
                f"The calibration cache folder {str(path)!r} is owned by another user or "
                "writable by others, so sklearn-dplssgd neither reads nor writes it "
                "(noise calibrations are computed each time). Make it yours and not "
                "group- or world-writable (chmod go-w), or set SKLEARN_DPLSSGD_CACHE_DIR "
                "to a private folder ('' turns the cache off).", UserWarning)
            return None
    return folder


def _entry_path(folder, key):
    name = hashlib.sha256(_canonical(key).encode()).hexdigest()
    return folder / _SUBFOLDER / f"{name}.json"


def load(settings):
    """The stored result for ``settings``, or None (store off, no entry, entry refused).

    Parameters
    ----------
    settings : dict
        JSON-serialisable settings (str keys; floats, ints, str or None).

    Returns
    -------
    dict or None
        The result stored by :func:`store` under exactly this key, with a
        matching digest, in a folder and file no one else can write.  The
        caller must still verify the values (the digest is not a signature).
    """
    folder = cache_dir()
    key = _full_key(settings)
    if folder is None or key is None or _private_folder(folder) is None:
        return None
    try:
        with open(_entry_path(folder, key), "rb") as handle:
            if _others_can_write(os.fstat(handle.fileno())):
                return None  # the store overwrites it with a file of its own
            entry = json.loads(handle.read().decode("utf-8"))
    except (OSError, UnicodeDecodeError, ValueError):
        return None  # absent, unreadable or not JSON
    if not (isinstance(entry, dict) and set(entry) == {"key", "result", "digest"}
            and entry["key"] == key and isinstance(entry["result"], dict)):
        return None
    try:
        if entry["digest"] != _digest(key, entry["result"]):
            return None
    except ValueError:  # a non-finite number: never written by store
        return None
    return entry["result"]


def store(settings, result):
    """Write ``result`` for ``settings`` atomically; skip silently if that fails.

    Parameters
    ----------
    settings : dict
        As for :func:`load`.
    result : dict
        JSON-serialisable, finite numbers only.
    """
    folder = cache_dir()
    key = _full_key(settings)
    if folder is None or key is None or _private_folder(folder) is None:
        return
    path = _entry_path(folder, key)
    try:
        text = _canonical({"key": key, "result": result, "digest": _digest(key, result)})
    except (TypeError, ValueError):
        return  # not storable (a non-finite number): nothing is written
    tmp = None
    try:
        # Created private (the mode is masked by the umask, which only removes bits).
        folder.mkdir(mode=0o700, parents=True, exist_ok=True)
        path.parent.mkdir(mode=0o700, exist_ok=True)
        fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=".", suffix=".tmp")
        with os.fdopen(fd, "w", encoding="utf-8") as handle:
            handle.write(text)
        os.replace(tmp, path)
        tmp = None
    except OSError:
        pass
    finally:
        if tmp is not None:
            try:
                os.unlink(tmp)
            except OSError:
                pass
