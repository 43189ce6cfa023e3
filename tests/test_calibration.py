"""Tests for the noise calibration's answers, its memo, and the use of dp-accounting.

* The noise multipliers are those of the previous implementation (whose PLD
  path transcribed dp-accounting's internals) to 0.3 %, and the epsilon a
  calibration reports is never below dp-accounting's own ``PLDAccountant``
  at a finer interval.
* Each setting is computed once per process (the in-memory memo).
* No module of the package reads a private name of dp-accounting.
"""

import ast
import math
from pathlib import Path

import dp_accounting
import pytest
from dp_accounting import pld as dp_pld

import sklearn_dplssgd
from sklearn_dplssgd import calibrate_noise
from sklearn_dplssgd._accounting import _calibration

PACKAGE = Path(sklearn_dplssgd.__file__).resolve().parent
RELATIONS = {"replace_one": dp_accounting.NeighboringRelation.REPLACE_ONE,
             "add_remove": dp_accounting.NeighboringRelation.ADD_OR_REMOVE_ONE}


def _direct_pld(z, q, T, interval, delta, neighboring):
    accountant = dp_pld.PLDAccountant(RELATIONS[neighboring],
                                      value_discretization_interval=interval)
    gaussian = dp_accounting.GaussianDpEvent(z)
    step = gaussian if q == 1.0 else dp_accounting.PoissonSampledDpEvent(q, gaussian)
    accountant.compose(dp_accounting.SelfComposedDpEvent(step, T))
    return float(accountant.get_epsilon(delta))


# ---------------------------------------------------------------------------
# The same answers as before, certified
# ---------------------------------------------------------------------------

# z of the implementation before this one (commit 842cfc4, its PLD path a
# transcription of dp-accounting's internals), computed on that tree with
# every cache cleared: (epsilon, delta, q, T, neighboring) -> z. The first is
# the slowest default (5 epochs of a million rows).
PREVIOUS_PLD_Z = {
    (1.0, 1e-5, 256 / 1e6, 19532, "replace_one"): 0.6009890273992317,
    (1.0, 1e-5, 256 / 60000, 4688, "replace_one"): 2.18712568256598,
    (1.0, 1e-5, 256 / 8000, 625, "replace_one"): 5.968031034950054,
    (1.0, 1e-5, 256 / 60000, 4688, "add_remove"): 1.3066088109339211,
    (1.0, 1e-5, 256 / 8000, 625, "add_remove"): 3.1300952295076594,
    (0.5, 1e-5, 256 / 60000, 4688, "replace_one"): 4.110003614553927,
    (4.0, 1e-5, 0.01, 1000, "replace_one"): 0.8219046040286477,
    (0.2, 1e-6, 0.05, 200, "replace_one"): 26.857851296928363,
    (1.0, 1e-5, 1.0, 100, "replace_one"): 74.62012648922314,
    (2.0, 1e-5, 0.1, 50, "add_remove"): 1.7505840684941723,
}


@pytest.mark.parametrize("setting", sorted(PREVIOUS_PLD_Z))
def test_pld_noise_as_before_and_never_under_a_finer_pld_accountant(setting):
    epsilon, delta, q, T, neighboring = setting
    calibrate_noise.cache_clear()
    cal, interval = _calibration._calibrate(epsilon, delta, q, T, "pld", neighboring, None)
    assert cal.accountant == "pld"
    assert cal.noise_multiplier == pytest.approx(PREVIOUS_PLD_Z[setting], rel=3e-3)
    # Finer than the finest interval the calibration may pick (epsilon / 10000).
    finer = _direct_pld(cal.noise_multiplier, q, T, epsilon / 20000, delta, neighboring)
    assert finer <= cal.epsilon <= epsilon
    # The interval returned is the one the epsilon was computed at.
    assert _direct_pld(cal.noise_multiplier, q, T, interval, delta, neighboring) == cal.epsilon


# ---------------------------------------------------------------------------
# The in-process memo
# ---------------------------------------------------------------------------

SETTING = dict(sample_rate=0.01, n_steps=200)


@pytest.fixture
def computations(monkeypatch):
    """The calibrations computed (not read from memory) during the test."""
    calls = []
    compute = _calibration._calibrate

    def counting(*args):
        calls.append(args)
        return compute(*args)

    calibrate_noise.cache_clear()
    monkeypatch.setattr(_calibration, "_calibrate", counting)
    yield calls
    calibrate_noise.cache_clear()


def test_each_setting_is_computed_once_per_process(computations):
    kwargs = [dict(), dict(accountant="rdp"), dict(neighboring="add_remove"),
              dict(accountant="pld", pld_discretization=1e-3)]
    first = [calibrate_noise(0.8, 1e-5, **SETTING, **kw) for kw in kwargs]
    assert len(computations) == len(kwargs)  # other settings are other entries
    again = [calibrate_noise(0.8, 1e-5, **SETTING, **kw) for kw in kwargs]
    assert len(computations) == len(kwargs)
    assert all(a is b for a, b in zip(again, first))  # the same objects
    # No privacy needs no search.
    assert calibrate_noise(math.inf, 1e-5, **SETTING).noise_multiplier == 0.0
    assert len(computations) == len(kwargs)
    calibrate_noise.cache_clear()
    assert calibrate_noise(0.8, 1e-5, **SETTING) == first[0]
    assert len(computations) == len(kwargs) + 1


# ---------------------------------------------------------------------------
# dp-accounting through its public API only
# ---------------------------------------------------------------------------

# The modules of dp-accounting the package may import; everything else in
# dp-accounting is reached as a public attribute of these.
PUBLIC_MODULES = {"dp_accounting", "dp_accounting.pld", "dp_accounting.rdp"}


def _dp_accounting_names(tree):
    """Names bound to dp-accounting modules or objects, and the modules imported."""
    names, modules = set(), set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                if alias.name.split(".")[0] == "dp_accounting":
                    modules.add(alias.name)
                    names.add((alias.asname or alias.name).split(".")[0])
        elif isinstance(node, ast.ImportFrom) and (node.module or "").startswith("dp_accounting"):
            for alias in node.names:
                modules.add(f"{node.module}.{alias.name}")
                names.add(alias.asname or alias.name)
    return names, modules


def test_no_private_name_of_dp_accounting_is_read():
    offences = []
    for path in sorted(PACKAGE.rglob("*.py")):
        tree = ast.parse(path.read_text(), filename=str(path))
        names, modules = _dp_accounting_names(tree)
        for module in modules:
            parts = module.split(".")
            if any(part.startswith("_") for part in parts):
                offences.append(f"{path.name}: imports {module}")
            elif module not in PUBLIC_MODULES and not parts[-1][:1].isupper():
                # Classes (PLDAccountant, RdpAccountant) may be imported by
                # name; modules other than the three public ones may not.
                offences.append(f"{path.name}: imports the module {module}")
        for node in ast.walk(tree):
            if isinstance(node, ast.Attribute) and node.attr.startswith("_"):
                root = node.value
                while isinstance(root, ast.Attribute):
                    root = root.value
                if isinstance(root, ast.Name) and root.id in names:
                    offences.append(f"{path.name}:{node.lineno}: reads {node.attr}")
    assert not offences
    # The accounting modules read no private attribute of any object but
    # their own (dp-accounting's objects are reached through local names).
    for name in ("_accounting/_events.py", "_accounting/_calibration.py"):
        tree = ast.parse((PACKAGE / name).read_text())
        for node in ast.walk(tree):
            if (isinstance(node, ast.Attribute) and node.attr.startswith("_")
                    and not node.attr.startswith("__")):
                root = node.value
                while isinstance(root, ast.Attribute):
                    root = root.value
                if not (isinstance(root, ast.Name) and root.id == "self"):
                    offences.append(f"{name}:{node.lineno}: reads {node.attr}")
    assert not offences
    # The removed transcriptions, and the removed disk store, stay removed.
    assert not list(PACKAGE.rglob("_pld_kernels.py"))
    assert not list(PACKAGE.rglob("_calibration_cache.py"))
