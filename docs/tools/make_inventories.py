"""Write the intersphinx inventories of docs/_inventories/ without network.

The documentation links scikit-learn, NumPy, SciPy, pandas and Python names
to their projects' documentation through intersphinx, which reads each
project's ``objects.inv``. The build must work without network (CI reaches
only the package index), so the inventories are kept in the repository. They
are not downloaded: this script builds them from the installed packages, by
introspecting each public module's ``__all__`` and mapping every public name
to the URL pattern its project documents it at, for example
``https://scikit-learn.org/stable/modules/generated/<name>.html#<name>``.

The files follow Sphinx's inventory format, version 2: four header lines,
then zlib-compressed lines ``name domain:role priority uri dispname``, where
a ``uri`` ending in ``$`` stands for the URI with that ``$`` replaced by the name
and a ``dispname`` of ``-`` for the name itself.

Run it again after upgrading the documented packages::

    python docs/tools/make_inventories.py
"""

import builtins
import importlib
import inspect
import pkgutil
import sys
import zlib
from pathlib import Path

OUT = Path(__file__).resolve().parent.parent / "_inventories"

# (inventory file, project name, top-level package, documentation URL pattern
# of a public name: "$" stands for the fully qualified name).
PROJECTS = [
    ("sklearn.inv", "scikit-learn", "sklearn", "modules/generated/$.html#$"),
    ("numpy.inv", "NumPy", "numpy", "reference/generated/$.html#$"),
    ("scipy.inv", "SciPy", "scipy", "reference/generated/$.html#$"),
    ("pandas.inv", "pandas", "pandas", "reference/api/$.html#$"),
]

# Public submodules whose names each project documents under its own pages.
SUBMODULES = {
    "numpy": ["numpy.random", "numpy.linalg", "numpy.fft"],
    "scipy": ["scipy.sparse", "scipy.sparse.linalg", "scipy.special", "scipy.stats",
              "scipy.optimize", "scipy.linalg", "scipy.fft"],
    "pandas": [],
}


# Public names of modules that define no ``__all__``.
EXTRA_NAMES = {
    "sklearn.utils.metadata_routing": ["MetadataRequest", "MetadataRouter", "MethodMapping",
                                       "get_routing_for_object", "process_routing"],
}


def _is_public(name):
    return not any(part.startswith("_") or part in ("tests", "conftest", "externals")
                   for part in name.split("."))


def _modules(package):
    """The public modules of ``package`` whose names it documents."""
    top = importlib.import_module(package)
    if package != "sklearn":
        return [top] + [importlib.import_module(name) for name in SUBMODULES[package]]
    modules = [top]
    for info in pkgutil.walk_packages(top.__path__, prefix="sklearn."):
        if not _is_public(info.name):
            continue
        try:
            modules.append(importlib.import_module(info.name))
        except Exception:  # an optional dependency missing: not documented here
            continue
    return modules


def _role(obj):
    if inspect.ismodule(obj):
        return "py:module"
    if inspect.isclass(obj):
        return "py:exception" if issubclass(obj, BaseException) else "py:class"
    if callable(obj):
        return "py:function"
    return "py:data"


# NumPy documents its random generator on pages of their own.
NUMPY_RANDOM_PAGES = {
    "numpy.random.Generator": "reference/random/generator.html#$",
    "numpy.random.default_rng": "reference/random/generator.html#$",
}


def _uri(full, pattern):
    if full in NUMPY_RANDOM_PAGES:
        return NUMPY_RANDOM_PAGES[full]
    if full.startswith("numpy.random."):
        return "reference/random/generated/$.html#$"
    return pattern


def _entries(package, pattern):
    """``(name, role, uri)`` of every public name of ``package``."""
    entries = {}
    for module in _modules(package):
        if package == "sklearn":
            entries[module.__name__] = ("py:module", "api/$.html#module-$")
        else:
            entries[module.__name__] = ("py:module", pattern)
        names = getattr(module, "__all__", None) or EXTRA_NAMES.get(module.__name__)
        if names is None:
            continue
        for name in names:
            if name.startswith("_"):
                continue
            try:
                obj = getattr(module, name)
            except AttributeError:
                continue
            if inspect.ismodule(obj):
                continue
            full = f"{module.__name__}.{name}"
            entries.setdefault(full, (_role(obj), _uri(full, pattern)))
    return entries


# The built-in types that the "Built-in Types" page documents; the functions
# page has only a pointer to them (an anchor ``func-dict``, not ``dict``).
PYTHON_STDTYPES = {
    "bytearray", "bytes", "dict", "frozenset", "list", "memoryview", "range", "set", "str",
    "tuple",
}


def _python_entries():
    """The standard library's modules and the built-in functions, types and exceptions."""
    entries = {}
    for name in sorted(sys.stdlib_module_names):
        if not name.startswith("_"):
            entries[name] = ("py:module", "library/$.html#module-$")
    for name in dir(builtins):
        obj = getattr(builtins, name)
        if name.startswith("_"):
            continue
        if inspect.isclass(obj) and issubclass(obj, BaseException):
            entries[name] = ("py:exception", "library/exceptions.html#$")
        elif inspect.isclass(obj) and name in PYTHON_STDTYPES:
            entries[name] = ("py:class", "library/stdtypes.html#$")
        elif inspect.isclass(obj):
            entries[name] = ("py:class", "library/functions.html#$")
        elif callable(obj):
            entries[name] = ("py:function", "library/functions.html#$")
    return entries


def _expand(uri, name):
    """``uri`` with each ``$`` but a final one replaced by ``name``.

    Sphinx expands only a ``$`` that ends the URI; the shorthand keeps the
    files small.
    """
    if uri.endswith("$"):
        return uri[:-1].replace("$", name) + "$"
    return uri.replace("$", name)


def write_inventory(path, project, version, entries):
    """Write ``entries`` (name -> (role, uri)) as an objects.inv version 2 file."""
    header = (
        "# Sphinx inventory version 2\n"
        f"# Project: {project}\n"
        f"# Version: {version}\n"
        "# The remainder of this file is compressed using zlib.\n"
    )
    lines = "".join(f"{name} {role} 1 {_expand(uri, name)} -\n"
                    for name, (role, uri) in sorted(entries.items()))
    path.write_bytes(header.encode() + zlib.compress(lines.encode(), 9))


def main():
    OUT.mkdir(exist_ok=True)
    for filename, project, package, pattern in PROJECTS:
        version = importlib.import_module(package).__version__
        entries = _entries(package, pattern)
        write_inventory(OUT / filename, project, version, entries)
        print(f"{filename}: {len(entries)} names of {project} {version}")
    version = f"{sys.version_info.major}.{sys.version_info.minor}"
    entries = _python_entries()
    write_inventory(OUT / "python.inv", "Python", version, entries)
    print(f"python.inv: {len(entries)} names of Python {version}")


if __name__ == "__main__":
    main()
