"""The minimum versions' test environment pins exactly the bounds pyproject.toml declares.

``.ci/run-minimums`` runs the suite with the releases of ``.ci/minimums.txt``;
this test keeps that file equal to the lower bounds of ``pyproject.toml``
(the dependencies and the extras the suite installs), so that raising or
adding a bound without testing it, or a pin that tests another release
than the one declared, fails here.
"""

import re
from pathlib import Path

import pytest

requirements = pytest.importorskip("packaging.requirements")
version = pytest.importorskip("packaging.version")
tomllib = pytest.importorskip("tomllib")

ROOT = Path(__file__).resolve().parent.parent
# The extras installed in the minimums' environment, and those that name
# some of the same packages (which must declare the same bounds). The docs
# extra builds the documentation, which the minimums' run does not.
TESTED_EXTRAS = ("test",)
OVERLAPPING_EXTRAS = ("dask", "array-api", "benchmark")


def _name(name):
    return re.sub(r"[-_.]+", "-", name).lower()


def _lower_bounds(lines):
    """``{package: minimum}`` of the ``>=`` bounds in ``lines`` of requirements."""
    bounds = {}
    for line in lines:
        requirement = requirements.Requirement(line)
        minima = [spec.version for spec in requirement.specifier if spec.operator == ">="]
        assert len(minima) == 1, f"{line!r} declares no single lower bound"
        bounds[_name(requirement.name)] = version.Version(minima[0])
    return bounds


def _declared():
    project = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]
    extras = project["optional-dependencies"]
    tested = _lower_bounds(project["dependencies"])
    for extra in TESTED_EXTRAS:
        tested.update(_lower_bounds(extras[extra]))
    others = {extra: _lower_bounds(extras[extra]) for extra in OVERLAPPING_EXTRAS}
    return tested, others


def _pinned():
    pins = {}
    for line in (ROOT / ".ci" / "minimums.txt").read_text(encoding="utf-8").splitlines():
        line = line.split("#", 1)[0].strip()
        if not line:
            continue
        requirement = requirements.Requirement(line)
        specifiers = list(requirement.specifier)
        assert len(specifiers) == 1 and specifiers[0].operator == "==", (
            f"{line!r} is not an exact pin")
        name = _name(requirement.name)
        assert name not in pins, f"{name} is pinned twice"
        pins[name] = version.Version(specifiers[0].version)
    return pins


def test_the_constraints_pin_exactly_the_declared_minimums():
    tested, _ = _declared()
    assert _pinned() == tested


def test_extras_naming_the_same_package_declare_the_same_minimum():
    tested, others = _declared()
    for extra, bounds in others.items():
        for name, minimum in bounds.items():
            if name in tested:
                assert minimum == tested[name], (extra, name)


def test_a_drifted_bound_is_caught():
    # The comparison can fail: a bound raised in pyproject without its pin.
    tested, _ = _declared()
    drifted = dict(tested, numpy=version.Version("2.1"))
    assert _pinned() != drifted


def test_ci_runs_the_minimums_on_test_files_that_exist():
    """``.ci/run`` names the version-sensitive test files it runs at the minimums."""
    script = (ROOT / ".ci" / "run").read_text()
    assert "bash .ci/run-minimums" in script
    named = re.findall(r"tests/test_\w+\.py", script.split("bash .ci/run-minimums", 1)[1])
    assert named and "tests/test_minimums.py" in named
    for name in named:
        assert (ROOT / name).is_file(), name
