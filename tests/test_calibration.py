"""Tests for the noise calibration's answers, its disk cache, and the use of dp-accounting.

* The noise multipliers are those of the previous implementation (whose PLD
  path transcribed dp-accounting's internals) to 0.3 %, and the epsilon a
  calibration reports is never below dp-accounting's own ``PLDAccountant``
  at a finer interval.
* The disk cache (:mod:`sklearn_dplssgd._accounting._calibration_cache`): shared across
  processes, atomic, refuses damaged or foreign entries, off with
  ``SKLEARN_DPLSSGD_CACHE_DIR=""``.
* No module of the package reads a private name of dp-accounting.
"""

import ast
import json
import math
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import dp_accounting
import pytest
from dp_accounting import pld as dp_pld

import sklearn_dplssgd
from sklearn_dplssgd import calibrate_noise
from sklearn_dplssgd._accounting import _calibration, _calibration_cache

REPO_ROOT = Path(__file__).resolve().parent.parent
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
# The disk cache
# ---------------------------------------------------------------------------

SETTING = dict(sample_rate=0.01, n_steps=200)


def _entries(folder):
    return sorted((Path(folder) / "calibrations").glob("*.json"))


def _run_python(code, cache_dir):
    env = dict(os.environ, SKLEARN_DPLSSGD_CACHE_DIR=str(cache_dir),
               PYTHONPATH=os.pathsep.join([str(REPO_ROOT)] + (
                   [os.environ["PYTHONPATH"]] if os.environ.get("PYTHONPATH") else [])))
    return subprocess.Popen([sys.executable, "-c", textwrap.dedent(code)], cwd=REPO_ROOT,
                            env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


def _result(process):
    stdout, stderr = process.communicate(timeout=300)
    assert process.returncode == 0, stderr[-3000:]
    return json.loads(stdout.strip().splitlines()[-1])


_CALIBRATE = """
import json
from sklearn_dplssgd import calibrate_noise
from sklearn_dplssgd._accounting import _calibration
calls = []
compute = _calibration._calibrate
def counting(*args):
    calls.append(args)
    return compute(*args)
_calibration._calibrate = counting
cal = calibrate_noise(0.8, 1e-5, sample_rate=0.01, n_steps=200)
print(json.dumps({"z": cal.noise_multiplier, "epsilon": cal.epsilon, "computed": len(calls)}))
"""


def test_disk_cache_is_shared_by_processes(tmp_path):
    # Two processes start together on an empty cache: each computes (unless
    # the other's entry is already there) and writes the same entry
    # atomically. A third process reads it, computing nothing.
    first = [_run_python(_CALIBRATE, tmp_path) for _ in range(2)]
    results = [_result(process) for process in first]
    assert sorted(r["computed"] for r in results) in ([0, 1], [1, 1])
    assert (results[0]["z"], results[0]["epsilon"]) == (results[1]["z"], results[1]["epsilon"])
    entries = _entries(tmp_path)
    assert len(entries) == 1
    assert not list((tmp_path / "calibrations").glob(".*.tmp"))  # no temporary file left

    third = _result(_run_python(_CALIBRATE, tmp_path))
    assert third["computed"] == 0
    assert (third["z"], third["epsilon"]) == (results[0]["z"], results[0]["epsilon"])


@pytest.fixture
def cache_dir(tmp_path, monkeypatch):
    monkeypatch.setenv("SKLEARN_DPLSSGD_CACHE_DIR", str(tmp_path))
    calibrate_noise.cache_clear()
    yield tmp_path
    calibrate_noise.cache_clear()


@pytest.fixture
def computations(monkeypatch):
    """The calibrations computed (not read from memory or disk) during the test."""
    calls = []
    compute = _calibration._calibrate

    def counting(*args):
        calls.append(args)
        return compute(*args)

    monkeypatch.setattr(_calibration, "_calibrate", counting)
    return calls


def test_disk_cache_hit_in_process(cache_dir, computations):
    first = calibrate_noise(0.8, 1e-5, **SETTING)
    assert len(computations) == 1 and len(_entries(cache_dir)) == 1
    calibrate_noise.cache_clear()  # memory only
    second = calibrate_noise(0.8, 1e-5, **SETTING)
    assert len(computations) == 1
    assert second == first
    # Other settings are other entries.
    calibrate_noise(0.8, 1e-5, accountant="rdp", **SETTING)
    calibrate_noise(0.8, 1e-5, neighboring="add_remove", **SETTING)
    assert len(computations) == 3 and len(_entries(cache_dir)) == 3


def _rewrite(path, change):
    entry = json.loads(path.read_text())
    change(entry)
    path.write_text(json.dumps(entry))


def _with_digest(change):
    """A change to an entry that also recomputes its digest (a well-formed lie)."""
    def apply(entry):
        change(entry)
        entry["digest"] = _calibration_cache._digest(entry["key"], entry["result"])
    return apply


def _halve_z(entry):
    entry["result"]["noise_multiplier"] /= 2


def _claim_target_missed(entry):
    entry["result"]["epsilon"] = 1.5 * entry["key"]["epsilon"]


def _claim_other_accountant(entry):
    entry["result"]["accountant"] = "paper"


CORRUPTIONS = {
    "truncated": lambda path: path.write_text(path.read_text()[:40]),
    "empty": lambda path: path.write_text(""),
    "not json": lambda path: path.write_bytes(b"\xff\xfe garbage"),
    "a list": lambda path: path.write_text("[1, 2, 3]"),
    "z changed, digest not": lambda path: _rewrite(path, _halve_z),
    "another setting's key": lambda path: _rewrite(
        path, _with_digest(lambda e: e["key"].update(n_steps=201))),
    "another dp-accounting": lambda path: _rewrite(
        path, _with_digest(lambda e: e["key"].update(dp_accounting="0.0.1"))),
    "z not a number": lambda path: _rewrite(
        path, _with_digest(lambda e: e["result"].update(noise_multiplier="0.1"))),
    "z zero": lambda path: _rewrite(
        path, _with_digest(lambda e: e["result"].update(noise_multiplier=0.0))),
    "epsilon above the target": lambda path: _rewrite(path, _with_digest(_claim_target_missed)),
    "another accountant": lambda path: _rewrite(path, _with_digest(_claim_other_accountant)),
    "an extra field": lambda path: _rewrite(
        path, _with_digest(lambda e: e["result"].update(extra=1))),
}


@pytest.mark.parametrize("corruption", sorted(CORRUPTIONS))
def test_damaged_or_foreign_entry_is_recomputed_and_overwritten(cache_dir, computations,
                                                                corruption):
    expected = calibrate_noise(0.8, 1e-5, **SETTING)
    (path,) = _entries(cache_dir)
    good = path.read_bytes()
    CORRUPTIONS[corruption](path)
    assert path.read_bytes() != good
    calibrate_noise.cache_clear()
    again = calibrate_noise(0.8, 1e-5, **SETTING)
    assert len(computations) == 2  # not used: computed again
    assert again == expected
    assert path.read_bytes() == good  # and the entry rewritten


def test_entry_from_another_file_is_refused(cache_dir, computations):
    # A whole, valid entry of one setting copied over another setting's file.
    calibrate_noise(0.8, 1e-5, **SETTING)
    calibrate_noise(2.0, 1e-5, **SETTING)
    first, second = _entries(cache_dir)
    second.write_text(first.read_text())
    calibrate_noise.cache_clear()
    calibrate_noise(0.8, 1e-5, **SETTING)
    calibrate_noise(2.0, 1e-5, **SETTING)
    assert len(computations) == 3  # exactly one of the two was refused and recomputed


def test_empty_variable_turns_the_disk_cache_off(tmp_path, monkeypatch, computations):
    monkeypatch.setenv("SKLEARN_DPLSSGD_CACHE_DIR", "")
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    assert _calibration_cache.cache_dir() is None
    calibrate_noise.cache_clear()
    calibrate_noise(0.8, 1e-5, **SETTING)
    calibrate_noise.cache_clear()
    calibrate_noise(0.8, 1e-5, **SETTING)
    assert len(computations) == 2
    assert not list(tmp_path.rglob("*"))  # nothing written anywhere
    calibrate_noise.cache_clear()


def test_default_folder(tmp_path, monkeypatch):
    monkeypatch.delenv("SKLEARN_DPLSSGD_CACHE_DIR")
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    assert _calibration_cache.cache_dir() == tmp_path / "xdg" / "sklearn-dplssgd"
    monkeypatch.delenv("XDG_CACHE_HOME")
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    assert _calibration_cache.cache_dir() == tmp_path / "home" / ".cache" / "sklearn-dplssgd"


def test_unwritable_folder_is_skipped(tmp_path, monkeypatch, computations):
    # The "folder" is a file: nothing can be stored, the calibration still works.
    blocker = tmp_path / "not-a-folder"
    blocker.write_text("")
    monkeypatch.setenv("SKLEARN_DPLSSGD_CACHE_DIR", str(blocker))
    calibrate_noise.cache_clear()
    cal = calibrate_noise(0.8, 1e-5, **SETTING)
    assert cal.epsilon <= 0.8 and len(computations) == 1
    assert blocker.read_text() == "" and list(tmp_path.iterdir()) == [blocker]
    calibrate_noise.cache_clear()


def test_every_accountant_is_stored_and_read_back(cache_dir, computations):
    kwargs = [dict(accountant="rdp"), dict(accountant="pld", neighboring="add_remove"),
              dict(accountant="pld", pld_discretization=1e-3)]
    first = [calibrate_noise(1.0, 1e-5, **SETTING, **kw) for kw in kwargs]
    # A huge target under PLD is answered by RDP (and says so).
    huge = calibrate_noise(30.0, 1e-5, **SETTING)
    assert huge.accountant == "rdp"
    n_computed = len(computations)
    calibrate_noise.cache_clear()
    assert [calibrate_noise(1.0, 1e-5, **SETTING, **kw) for kw in kwargs] == first
    assert calibrate_noise(30.0, 1e-5, **SETTING) == huge
    assert len(computations) == n_computed
    # No privacy is never stored: nothing to compute.
    assert calibrate_noise(math.inf, 1e-5, **SETTING).noise_multiplier == 0.0
    assert len(_entries(cache_dir)) == len(kwargs) + 1


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
    for name in ("_accounting/_events.py", "_accounting/_calibration.py",
                 "_accounting/_calibration_cache.py"):
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
    # The removed transcriptions stay removed.
    assert not list(PACKAGE.rglob("_pld_kernels.py"))


# ---------------------------------------------------------------------------
# The disk cache can never lower the noise
# ---------------------------------------------------------------------------


def _plant(folder, factor):
    """Divide the noise multiplier of every entry in ``folder`` by ``factor``.

    The entries stay well formed, with their claimed epsilon and a valid
    digest: what anyone who can write the folder can do.
    """
    paths = _entries(folder)
    for path in paths:
        _rewrite(path, _with_digest(
            lambda e: e["result"].update(noise_multiplier=e["result"]["noise_multiplier"]
                                         / factor)))
    return paths


@pytest.mark.parametrize("kwargs", [dict(), dict(accountant="rdp"),
                                    dict(neighboring="add_remove", pld_discretization=1e-3)])
def test_a_planted_entry_with_less_noise_is_not_used(cache_dir, computations, kwargs):
    expected = calibrate_noise(0.8, 1e-5, **SETTING, **kwargs)
    assert _plant(cache_dir, 20.0)
    calibrate_noise.cache_clear()
    again = calibrate_noise(0.8, 1e-5, **SETTING, **kwargs)
    assert len(computations) == 2  # refused: searched again
    assert again == expected


def test_a_planted_pld_interval_is_not_trusted(cache_dir, computations):
    # A coarser interval than the calibration may choose (cheaper to plant a
    # z for) or a finer one (a slow verification) is refused unevaluated.
    expected = calibrate_noise(0.8, 1e-5, **SETTING)
    (path,) = _entries(cache_dir)
    for interval in (1.0, 1e-9, "0.001"):
        _rewrite(path, _with_digest(lambda e: e["result"].update(pld_interval=interval)))
        calibrate_noise.cache_clear()
        assert calibrate_noise(0.8, 1e-5, **SETTING) == expected
    assert len(computations) == 4


def test_more_noise_than_the_calibration_chooses_is_refused(cache_dir, computations):
    expected = calibrate_noise(0.8, 1e-5, **SETTING)
    (path,) = _entries(cache_dir)
    z_twice = 2.0 * expected.noise_multiplier

    def double_z(entry):
        entry["result"]["noise_multiplier"] = z_twice
        entry["result"]["epsilon"] = _calibration.cached_epsilon(
            z_twice, 1e-5, 0.01, 200, "pld", "replace_one", entry["result"]["pld_interval"])
    _rewrite(path, _with_digest(double_z))
    calibrate_noise.cache_clear()
    assert calibrate_noise(0.8, 1e-5, **SETTING) == expected
    assert len(computations) == 2


def test_a_fit_does_not_use_a_planted_entry(cache_dir):
    import numpy as np

    from sklearn_dplssgd import DPLSSGDClassifier, compute_epsilon

    rng = np.random.default_rng(0)
    X = rng.uniform(-1.0, 1.0, size=(300, 4))
    y = (X[:, 0] > 0).astype(int)
    params = dict(epsilon=1.0, classes=[0, 1], feature_bounds=(-1.0, 1.0), max_iter=3,
                  batch_size=30)
    fresh = DPLSSGDClassifier(**params).fit(X, y)
    assert _plant(cache_dir, 20.0)
    calibrate_noise.cache_clear()
    planted = DPLSSGDClassifier(**params).fit(X, y)
    assert planted.noise_multiplier_ == fresh.noise_multiplier_
    assert planted.epsilon_ == fresh.epsilon_ <= 1.0
    # epsilon_ is true: the accountant finds it again for the z that was used.
    assert compute_epsilon(planted.noise_multiplier_, planted.delta_,
                           sample_rate=planted.sample_rate_, n_steps=planted.n_steps_) <= 1.0001


@pytest.mark.parametrize("accountant", ["pld", "rdp"])
def test_checking_an_entry_costs_one_accountant_evaluation(cache_dir, computations,
                                                           monkeypatch, accountant):
    expected = calibrate_noise(0.8, 1e-5, accountant=accountant, **SETTING)
    calibrate_noise.cache_clear()
    evaluations = []
    evaluate = _calibration.cached_epsilon.__wrapped__  # not the in-memory cache

    def counting(*args):
        evaluations.append(args)
        return evaluate(*args)

    counting.cache_clear = _calibration.cached_epsilon.cache_clear  # for the fixture's end
    monkeypatch.setattr(_calibration, "cached_epsilon", counting)
    assert calibrate_noise(0.8, 1e-5, accountant=accountant, **SETTING) == expected
    assert len(computations) == 1  # the first call only
    assert len(evaluations) == 1 and evaluations[0][0] == expected.noise_multiplier


def _stored_folder(tmp_path):
    """A cache folder holding one valid entry of ``SETTING``."""
    folder = tmp_path / "cache"
    os.environ["SKLEARN_DPLSSGD_CACHE_DIR"] = str(folder)
    calibrate_noise.cache_clear()
    calibrate_noise(0.8, 1e-5, **SETTING)
    calibrate_noise.cache_clear()
    assert len(_entries(folder)) == 1
    return folder


@pytest.mark.skipif(not hasattr(os, "geteuid"), reason="POSIX permissions")
@pytest.mark.parametrize("where", ["folder", "subfolder"])
def test_a_folder_others_can_write_is_neither_read_nor_written(tmp_path, monkeypatch,
                                                               computations, where):
    monkeypatch.setenv("SKLEARN_DPLSSGD_CACHE_DIR", "")
    folder = _stored_folder(tmp_path)
    assert folder.stat().st_mode & 0o777 == 0o700  # created private
    (folder if where == "folder" else folder / "calibrations").chmod(0o777)
    with pytest.warns(UserWarning, match="writable by others"):
        calibrate_noise(0.8, 1e-5, **SETTING)
    assert len(computations) == 2  # the valid entry was not read
    calibrate_noise.cache_clear()
    with pytest.warns(UserWarning, match="writable by others"):  # said at every call
        calibrate_noise(0.8, 1e-5, sample_rate=0.02, n_steps=200)
    assert len(_entries(folder)) == 1  # and nothing was written
    calibrate_noise.cache_clear()


@pytest.mark.skipif(not hasattr(os, "geteuid"), reason="POSIX permissions")
def test_a_folder_of_another_user_is_not_used(tmp_path, monkeypatch, computations):
    monkeypatch.setenv("SKLEARN_DPLSSGD_CACHE_DIR", "")
    _stored_folder(tmp_path)
    uid = os.geteuid()
    monkeypatch.setattr(os, "geteuid", lambda: uid + 1)
    with pytest.warns(UserWarning, match="owned by another user"):
        calibrate_noise(0.8, 1e-5, **SETTING)
    assert len(computations) == 2
    calibrate_noise.cache_clear()


@pytest.mark.skipif(not hasattr(os, "geteuid"), reason="POSIX permissions")
def test_an_entry_others_can_write_is_not_read(tmp_path, monkeypatch, computations):
    monkeypatch.setenv("SKLEARN_DPLSSGD_CACHE_DIR", "")
    folder = _stored_folder(tmp_path)
    (path,) = _entries(folder)
    path.chmod(0o666)
    calibrate_noise(0.8, 1e-5, **SETTING)
    assert len(computations) == 2
    assert path.stat().st_mode & 0o022 == 0  # replaced by a file of the store's own
    calibrate_noise.cache_clear()
