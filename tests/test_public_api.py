"""The public API is a decision: what ``docs/api.rst`` lists, and nothing else.

A name is public when a module without a leading underscore exports it in
``__all__``: the top-level package and ``sklearn_dplssgd.audit``. Every such
name is listed in the API reference, every listed name is exported, and no
other module of the package is public, so a new public name fails here until
it is documented (scikit-learn's rule: private modules, public re-exports).
"""

import importlib
import pkgutil
import re
from pathlib import Path

import sklearn_dplssgd

DOCS = Path(__file__).resolve().parent.parent / "docs"
API_PAGE = DOCS / "api.rst"
HYPERPARAMETERS_PAGE = DOCS / "user_guide" / "hyperparameters.rst"
PUBLIC_MODULES = ("sklearn_dplssgd", "sklearn_dplssgd.audit")
# The most names the public surface may hold: the estimators, the
# transformers, the search, the ledger, the errors and warnings, the
# accounting functions, what a parameter accepts, and the audit.
MAX_PUBLIC_NAMES = 60
# The audits a user runs on their own configuration; the library's own
# regression checks live in tests/implementation_checks.
MAX_AUDIT_NAMES = 10


def documented_names(text):
    """``{module: [names]}`` of the autosummary entries of an API page."""
    documented, module, in_summary = {}, None, False
    for line in text.splitlines():
        directive = re.match(r"\.\. currentmodule:: (\S+)", line)
        if directive:
            module = directive[1]
            continue
        if line.startswith(".. autosummary::"):
            in_summary = True
            continue
        if in_summary:
            entry = re.match(r"   (\w+)$", line)
            if entry:
                documented.setdefault(module, []).append(entry[1])
            elif line.strip() and not line.startswith("   :"):
                in_summary = False
    return documented


def public_module_names():
    """Every module or package of sklearn_dplssgd whose dotted path has no private part."""
    found = set()
    for info in pkgutil.walk_packages(sklearn_dplssgd.__path__, "sklearn_dplssgd."):
        parts = info.name.split(".")[1:]
        if not any(part.startswith("_") for part in parts):
            found.add(info.name)
    return found


def test_only_the_audit_subpackage_is_public():
    assert public_module_names() == {"sklearn_dplssgd.audit"}


def test_every_public_name_is_documented_and_every_documented_name_exported():
    documented = documented_names(API_PAGE.read_text(encoding="utf-8"))
    assert set(documented) == set(PUBLIC_MODULES)
    for module_name in PUBLIC_MODULES:
        exported = set(importlib.import_module(module_name).__all__) - {"__version__"}
        listed = documented[module_name]
        assert len(listed) == len(set(listed)), f"{module_name}: a name listed twice"
        assert exported == set(listed), (
            f"{module_name}: exported, not listed: {sorted(exported - set(listed))}; "
            f"listed, not exported: {sorted(set(listed) - exported)}")


def test_the_public_surface_stays_small():
    total = sum(len(set(importlib.import_module(name).__all__) - {"__version__"})
                for name in PUBLIC_MODULES)
    assert total <= MAX_PUBLIC_NAMES
    assert len(importlib.import_module("sklearn_dplssgd.audit").__all__) <= MAX_AUDIT_NAMES


def test_every_constructor_parameter_says_when_to_change_it():
    # The section "Every parameter, and when to change it": a new parameter
    # fails here until a user is told when to set it.
    text = HYPERPARAMETERS_PAGE.read_text(encoding="utf-8")
    section = text.split("Every parameter, and when to change it", 1)[1].split(
        ".. _defaults:", 1)[0]
    named = set(re.findall(r"``(\w+)``", section))
    for estimator in (sklearn_dplssgd.DPLSSGDClassifier(), sklearn_dplssgd.DPLSSGDRegressor()):
        assert set(estimator.get_params()) <= named, sorted(set(estimator.get_params()) - named)


def test_the_api_page_parser_finds_what_it_looks_for():
    page = (".. currentmodule:: pkg\n\nText\n\n.. autosummary::\n   :toctree: generated\n\n"
            "   First\n   second\n\nMore text\n\n   indented prose, not an entry\n"
            ".. currentmodule:: pkg.sub\n\n.. autosummary::\n\n   third\n")
    assert documented_names(page) == {"pkg": ["First", "second"], "pkg.sub": ["third"]}
