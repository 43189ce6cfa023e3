"""Smoke test of the benchmark scripts: each ``--quick`` mode runs and writes its files.

The scripts are run as a user would (``python benchmarks/<script> --quick``)
in a subprocess, writing into a temporary folder. The mechanisms benchmark
needs the real MNIST digits in ``../shared/data/mnist-t10k`` (relative to the
repository root) and is skipped where they are absent. The asv benchmark
classes of ``benchmarks/asv_bench`` run here on tiny shapes.
"""

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

try:  # the figures need matplotlib (the "benchmark" extra); the rest does not
    import matplotlib  # noqa: F401

    HAVE_MATPLOTLIB = True
except ImportError:
    HAVE_MATPLOTLIB = False

# A test that runs a whole script in its own process is marked slow (minutes
# together on two cores): CI runs them (--run-slow), the everyday command does
# not. The asv classes run in this process on tiny shapes, in the default run.

REPO_ROOT = Path(__file__).resolve().parent.parent
BENCHMARKS = REPO_ROOT / "benchmarks"
MNIST_DIR = REPO_ROOT / ".." / "shared" / "data" / "mnist-t10k"


def _run(script, out, *extra):
    # A script's own folder comes first on its sys.path, not the repository
    # root: put this checkout's package ahead of any installed copy.
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(
        [str(REPO_ROOT)] + ([env["PYTHONPATH"]] if env.get("PYTHONPATH") else [])
    )
    result = subprocess.run(
        [sys.executable, str(BENCHMARKS / script), "--quick", "--out", str(out), *extra],
        capture_output=True, text=True, cwd=REPO_ROOT, timeout=600, env=env,
    )
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]
    return result.stdout


def _mnist_present():
    return all((MNIST_DIR / name).is_file() for name in (
        "t10k-images-idx3-ubyte.gz", "t10k-labels-idx1-ubyte.gz"))


@pytest.mark.slow
def test_bench_search_quick(tmp_path):
    _run("bench_search.py", tmp_path)
    text = (tmp_path / "search.md").read_text()
    assert "DPRandomizedSearch" in text and "breast cancer" in text
    assert "tuned on the TEST set (not private)" in text


@pytest.mark.slow
@pytest.mark.skipif(not _mnist_present(), reason="MNIST t10k files not in ../shared/data")
def test_bench_mechanisms_quick(tmp_path):
    _run("bench_mechanisms.py", tmp_path)
    text = (tmp_path / "mechanisms.md").read_text()
    for fragment in ("| adam | step 0.5 |", "| momentum | constant |",
                     "| breast cancer | output, alpha=0.01 |", "| digits | gradient |",
                     "Which wins"):
        assert fragment in text


@pytest.mark.slow
def test_check_calibration_against_pld_quick(tmp_path):
    # Exit status 0: no calibration below dp-accounting's finer PLDAccountant.
    stdout = _run("check_calibration_against_pld.py", tmp_path)
    text = (tmp_path / "check_calibration_against_pld.md").read_text()
    assert "| settings evaluated | 6 |" in text
    assert "the target) | 0 |" in text
    assert "VIOLATION" not in stdout


@pytest.mark.slow
def test_bench_dp_preprocessing_quick(tmp_path):
    # Without the Adult files (--adult-dir pointing at an empty folder) that
    # part is skipped and says so; the synthetic and diabetes parts run.
    _run("bench_dp_preprocessing.py", tmp_path, "--adult-dir", str(tmp_path / "none"))
    text = (tmp_path / "dp_preprocessing.md").read_text()
    assert "Skipped: `adult.data`" in text
    assert "## 2. Synthetic" in text and "## 3. Diabetes" in text
    assert "| 1.5 / 0.5 / 0.97 |" in text


@pytest.mark.slow
def test_bench_streaming_quick(tmp_path):
    _run("bench_streaming.py", tmp_path)
    text = (tmp_path / "streaming.md").read_text()
    for mode in ("| fit |", "| fit at epsilon/sqrt(k) |", "| stream, averaging per call |",
                 "| stream, defaults |"):
        assert mode in text


@pytest.mark.slow
def test_bench_dask_quick(tmp_path):
    pytest.importorskip("distributed")
    pytest.importorskip("dask_ml")
    _run("bench_dask.py", tmp_path)
    accuracy = (tmp_path / "dask_accuracy.md").read_text()
    for mode in ("| in memory |", "| Dask array |", "| Incremental |"):
        assert mode in accuracy
    assert "| X.compute() on the client | fit |" in (tmp_path / "dask_memory.md").read_text()
    speed = (tmp_path / "dask_speed.md").read_text()
    assert "| the cluster's per-step overhead (ms) | a fit's fixed part (s) |" in speed
    assert "one-way (an all-reduce" in speed


@pytest.mark.slow
def test_accuracy_quick(tmp_path):
    stdout = _run("accuracy.py", tmp_path)
    text = (tmp_path / "accuracy.md").read_text()
    assert "## digits (1,797 rows, 64 features)" in text and "## diabetes (442 rows" in text
    for variant in ("defaults", "dp-sgd", "tuned", "non-private"):
        assert f"| {variant} | " in text
    # Output perturbation is measured on the classifiers only.
    assert text.count("| output | ") == 1
    rows = re.findall(r"^\| defaults \| (-?\d\.\d{3}) \+- (\d\.\d{3}) \|$", text, re.M)
    assert len(rows) == 2 and "digits defaults epsilon 1:" in stdout


@pytest.mark.slow
def test_peers_quick(tmp_path):
    _run("peers.py", tmp_path)
    text = (tmp_path / "peers.md").read_text()
    assert "| DPLSSGDClassifier | " in text and "## breast_cancer" in text
    for peer, module in (("Opacus", "opacus"), ("diffprivlib", "diffprivlib")):
        try:
            __import__(module)
            assert f"| {peer} | " in text
        except ImportError:
            assert f"| {peer} | " not in text and peer in text.split("skipped:")[1]


def _asv_benchmarks(monkeypatch):
    monkeypatch.setenv("DPLSSGD_ASV_ROWS", "300")
    monkeypatch.syspath_prepend(str(BENCHMARKS / "asv_bench"))
    import importlib

    import bench_estimators
    return importlib.reload(bench_estimators)  # reads the rows cap when imported


def _cases(cls):
    import itertools

    params = getattr(cls, "params", None)
    if params is None:
        return [()]
    if isinstance(params[0], list):
        return list(itertools.product(*params))
    return [(value,) for value in params]


@pytest.mark.parametrize("name", ["MNISTShaped", "BinaryNarrow", "SparseCSR", "Regression"])
def test_asv_classes_run_on_tiny_shapes(monkeypatch, name):
    cls = getattr(_asv_benchmarks(monkeypatch), name)
    for case in _cases(cls):
        benchmark = cls()
        benchmark.setup(*case)
        assert benchmark.X.shape[0] == 300
        benchmark.time_fit_epoch(*case)
        benchmark.time_predict(*case)
        assert benchmark.model.predict(benchmark.X).shape == (300,)


@pytest.mark.slow
def test_asv_first_fit_and_dask_run(monkeypatch):
    module = _asv_benchmarks(monkeypatch)
    assert 0 < module.FirstFit().track_first_fit_cold() < 600
    pytest.importorskip("distributed")
    benchmark = module.DaskFit()
    benchmark.setup()
    try:
        assert benchmark.track_fit_epoch() > 0
    finally:
        benchmark.teardown()


@pytest.mark.slow
def test_bench_float_channel_quick(tmp_path):
    _run("bench_float_channel.py", tmp_path)
    text = (tmp_path / "float_channel.md").read_text()
    assert "20 runs a side" in text
    for path in ("| dense, replace-one |", "| CSR |", "| float32 |", "| n_jobs=2 |",
                 "| add/remove (classifier) |", "| Dask array |",
                 "| output perturbation (classifier) |"):
        assert path in text
    assert "FAILED" not in text
