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

Safety:

* Concurrent processes: an entry is written to a temporary file in the same
  folder and moved into place with ``os.replace`` (atomic), so a reader sees
  either no file or a whole one.  Two processes that compute the same setting
  write the same answer; the last one wins.
* Never trusted blindly: an entry names its file by a hash of its key, and
  stores the key itself (every setting, the dp-accounting version and
  :data:`FORMAT_VERSION`) with its result and a SHA-256 digest of both.  A
  file that cannot be read, is not JSON, holds another key, or whose digest
  does not match is ignored (the caller recomputes and overwrites it); the
  caller also checks the result itself (see
  :func:`sklearn_dplssgd._calibration._calibrate_stored`).  This guards
  against truncated or damaged files and against entries of other versions
  or settings; like any cache under the user's home (Python's
  ``__pycache__``, Numba's cache), it does not guard against someone who can
  write there.
* A store that cannot be written (a read-only home, a full disk) is skipped
  silently: the cache only saves time.
"""

import functools
import hashlib
import importlib.metadata
import json
import os
import tempfile
from pathlib import Path

__all__ = ["FORMAT_VERSION", "cache_dir", "load", "store"]

# Bump whenever the calibration's answers change (the search, its
# tolerances, the interval rule, the meaning of a field): entries written
# under another version are then ignored.
FORMAT_VERSION = 1

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
        matching digest.
    """
    folder = cache_dir()
    key = _full_key(settings)
    if folder is None or key is None:
        return None
    try:
        entry = json.loads(_entry_path(folder, key).read_text(encoding="utf-8"))
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
    if folder is None or key is None:
        return
    path = _entry_path(folder, key)
    try:
        text = _canonical({"key": key, "result": result, "digest": _digest(key, result)})
    except (TypeError, ValueError):
        return  # not storable (a non-finite number): nothing is written
    tmp = None
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
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
