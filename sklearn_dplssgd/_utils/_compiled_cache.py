"""Numba's cache files of the package, kept in step with every source they were compiled from.

Numba checks a cache file only against the source file that defines the
cached function (its modification time and size, or its hash): a kernel
compiled into ``_kernels.py``'s cache with a residual of ``_losses.py``
inlined would keep the old residual after ``_losses.py`` changed, until the
cache files were deleted by hand. :func:`forget_stale_compiled_code` runs when
the package is imported, before anything is compiled: for each module that
holds cached compiled functions it hashes the sources that module imports
from the package (directly or through others, itself included), and where
the hash differs from the one recorded beside its cache files, removes that
module's cache files (only this package's, named after the module) so that
Numba compiles them again from the current sources.
"""

import hashlib
import os
import re
import sys
import tempfile
from pathlib import Path

from numba.extending import is_jitted

__all__ = ["forget_stale_compiled_code", "module_sources"]

# The suffix of the file that records, beside a module's cache files, the
# hash of the sources they were compiled from.
_STAMP_SUFFIX = ".sources-sha256"

# ``from .x import y``, ``from .. import x``, ``from package.x import (y, z)``,
# ``import package.x``: the package's imports, at any indentation (an import
# inside a function counts too). A regular expression rather than ``ast``:
# it runs at every import of the package, and parsing every module takes
# a large fraction of a second.
_FROM_IMPORT = re.compile(
    r"^[ \t]*from[ \t]+(\.*)([\w.]*)[ \t]+import[ \t]+(\([^)]*\)|[^\n#]*)", re.MULTILINE)
_PLAIN_IMPORT = re.compile(r"^[ \t]*import[ \t]+([\w.]+)", re.MULTILINE)


def _module_file(root, package, dotted):
    """The source file of the package's module ``dotted`` (a full name), or None."""
    if dotted != package and not dotted.startswith(package + "."):
        return None
    path = root.joinpath(*dotted.split(".")[1:])
    for candidate in (path / "__init__.py", path.with_suffix(".py")):
        if candidate.is_file():
            return candidate
    return None


def _imported_files(root, package, source_file, text):
    """The package's source files that ``source_file`` (whose text is ``text``) imports."""
    relative = source_file.relative_to(root).with_suffix("")
    parts = [package, *relative.parts]
    if parts[-1] == "__init__":
        parts.pop()
    here = parts[:-1] if source_file.name != "__init__.py" else parts
    found = set()
    for dots, name, names in _FROM_IMPORT.findall(text):
        if dots:
            base = here[:len(here) - (len(dots) - 1)] if len(dots) > 1 else list(here)
            module = ".".join(base + ([name] if name else []))
        else:
            module = name
        targets = [module] + [f"{module}.{alias.split()[0]}"
                              for alias in names.strip("()").replace("\n", " ").split(",")
                              if alias.strip()]
        found.update(_module_file(root, package, target) for target in targets)
    for module in _PLAIN_IMPORT.findall(text):
        found.add(_module_file(root, package, module))
    found.discard(None)
    return found


def module_sources(root, package, source_file):
    """The package's source files that ``source_file`` depends on, itself included.

    Parameters
    ----------
    root : pathlib.Path
        The package's folder.
    package : str
        The package's name.
    source_file : pathlib.Path
        A module of the package.

    Returns
    -------
    set of pathlib.Path
        ``source_file`` and every module of the package it imports, directly
        or through the modules it imports.
    """
    seen, pending = set(), [Path(source_file)]
    while pending:
        current = pending.pop()
        if current in seen:
            continue
        seen.add(current)
        text = current.read_text(encoding="utf-8")
        pending.extend(_imported_files(root, package, current, text) - seen)
    return seen


def _digest(root, files):
    digest = hashlib.sha256()
    for path in sorted(files):
        digest.update(path.relative_to(root).as_posix().encode())
        digest.update(b"\0")
        digest.update(path.read_bytes())
        digest.update(b"\0")
    return digest.hexdigest()


def _cache_folders(module):
    """The folders where Numba keeps the cache files of ``module``'s cached functions."""
    folders = set()
    for value in vars(module).values():
        if (is_jitted(value) and getattr(value.py_func, "__module__", None) == module.__name__
                and value.stats.cache_path):
            folders.add(Path(value.stats.cache_path))
    return folders


def _record(stamp, digest):
    # Written whole or not at all: another process importing the package at
    # the same time reads the old record or the new one.
    handle, temporary = tempfile.mkstemp(dir=stamp.parent, prefix=stamp.name, suffix=".tmp")
    with os.fdopen(handle, "w", encoding="ascii") as file:
        file.write(digest)
    os.replace(temporary, stamp)


def forget_stale_compiled_code(package):
    """Remove the package's Numba cache files compiled from sources that changed since.

    Called once, when the package is imported, after its modules are loaded
    and before anything is compiled. A folder that cannot be written is left
    as it is (Numba then keeps its own files elsewhere or compiles in memory).

    Parameters
    ----------
    package : str
        The package's name; its modules in ``sys.modules`` are checked.

    Returns
    -------
    list of pathlib.Path
        The cache files removed.
    """
    root = Path(sys.modules[package].__file__).resolve().parent
    removed = []
    for name, module in list(sys.modules.items()):
        if not name.startswith(package + ".") or module is None:
            continue
        folders = _cache_folders(module)
        if not folders:
            continue
        source_file = Path(module.__file__).resolve()
        digest = _digest(root, module_sources(root, package, source_file))
        stem = source_file.stem
        for folder in folders:
            stamp = folder / f"{stem}{_STAMP_SUFFIX}"
            try:
                if stamp.read_text(encoding="ascii") == digest:
                    continue
            except OSError:
                pass
            try:
                for cached in (*folder.glob(f"{stem}.*.nbi"), *folder.glob(f"{stem}.*.nbc")):
                    cached.unlink(missing_ok=True)
                    removed.append(cached)
                folder.mkdir(parents=True, exist_ok=True)
                _record(stamp, digest)
            except OSError:
                continue
    return removed
