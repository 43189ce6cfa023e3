"""Smoke test of the benchmark scripts: each ``--quick`` mode runs and writes its files.

The scripts are run as a user would (``python benchmarks/<script> --quick``)
in a subprocess, writing into a temporary folder. The utility benchmark needs
the real MNIST digits in ``../shared/data/mnist-t10k`` (relative to the
repository root) and is skipped where they are absent.
"""

import os
import subprocess
import sys
from pathlib import Path

import pytest

try:  # the figures need matplotlib (the "benchmark" extra); the rest does not
    import matplotlib  # noqa: F401

    HAVE_MATPLOTLIB = True
except ImportError:
    HAVE_MATPLOTLIB = False

# Each test runs a whole script in its own process (about 6 minutes together on
# two cores): CI runs them (--run-slow), the everyday command does not.
pytestmark = pytest.mark.slow

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


@pytest.mark.skipif(not _mnist_present(), reason="MNIST t10k files not in ../shared/data")
def test_bench_utility_quick(tmp_path):
    _run("bench_utility.py", tmp_path)
    names = ["utility.md"] + (["utility.png", "loss_curves.png"] if HAVE_MATPLOTLIB else [])
    for name in names:
        assert (tmp_path / name).stat().st_size > 0
    text = (tmp_path / "utility.md").read_text()
    assert "sigma=0 (DP-SGD)" in text and "log_loss" in text and "hinge" in text
    assert "PLD accountant, replace-one adjacency" in text  # the library defaults


@pytest.mark.skipif(not _mnist_present(), reason="MNIST t10k files not in ../shared/data")
def test_bench_utility_quick_old_setting(tmp_path):
    # A non-default adjacency and accountant: named in the files and stated in the text.
    _run("bench_utility.py", tmp_path, "--neighboring", "add_remove", "--accountant", "rdp")
    assert not (tmp_path / "utility.md").exists()
    text = (tmp_path / "utility_add_remove_rdp.md").read_text()
    assert "RDP accountant, add/remove adjacency" in text
    if HAVE_MATPLOTLIB:
        for name in ("utility_add_remove_rdp.png", "loss_curves_add_remove_rdp.png"):
            assert (tmp_path / name).stat().st_size > 0


def test_bench_utility_skips_without_data(tmp_path):
    stdout = _run("bench_utility.py", tmp_path / "out", "--data", str(tmp_path / "absent"))
    assert "skipping" in stdout
    assert not (tmp_path / "out" / "utility.md").exists()


def test_bench_speed_narrow_quick(tmp_path):
    stdout = _run("bench_speed.py", tmp_path, "--narrow")
    text = (tmp_path / "speed_narrow.md").read_text()
    assert "| 20 |" in text and "gather floor" in text and "| 8 | 4 |" in text
    assert "per-step fixed cost" in stdout


def test_bench_speed_quick(tmp_path):
    stdout = _run("bench_speed.py", tmp_path)
    names = ["speed.md"] + (["speed_scaling.png"] if HAVE_MATPLOTLIB else [])
    for name in names:
        assert (tmp_path / name).stat().st_size > 0
    text = (tmp_path / "speed.md").read_text()
    assert "## Targets" in text
    assert "compiled O(d) (smooth_rows)" in text and "FFT reference" in text
    assert "PASS" in stdout or "MISS" in stdout


def test_bench_array_api_quick(tmp_path):
    pytest.importorskip("torch")
    _run("bench_array_api.py", tmp_path)
    text = (tmp_path / "array_api.md").read_text()
    assert "| float32 | 256 |" in text and "not measured (no GPU" in text


def test_bench_search_quick(tmp_path):
    _run("bench_search.py", tmp_path)
    text = (tmp_path / "search.md").read_text()
    assert "DPRandomizedSearch" in text and "breast cancer" in text
    assert "tuned on the TEST set (not private)" in text


def test_bench_width_rules_quick(tmp_path):
    _run("bench_width_rules.py", tmp_path)
    text = (tmp_path / "width_rules.md").read_text()
    assert "| digits | 64 |" in text and "| iris | 4 | 1 |" in text
    assert "synthetic n=150, regression (R2)" in text


@pytest.mark.skipif(not _mnist_present(), reason="MNIST t10k files not in ../shared/data")
def test_bench_mechanisms_quick(tmp_path):
    _run("bench_mechanisms.py", tmp_path)
    text = (tmp_path / "mechanisms.md").read_text()
    for fragment in ("| adam | step 0.5 |", "| momentum | constant |",
                     "| breast cancer | output, alpha=0.01 |", "| digits | gradient |",
                     "Which wins"):
        assert fragment in text


def test_bench_sparse_quick(tmp_path):
    _run("bench_sparse.py", tmp_path)
    text = (tmp_path / "sparse.md").read_text()
    assert "Adult-like one-hot table" in text and "Text-like hashed features" in text
    assert "SGDClassifier" in text and "Laplacian smoothing on one-hot columns" in text
    assert "shared, loaded 2-core machine" in text


def test_check_calibration_against_pld_quick(tmp_path):
    # Exit status 0: no calibration below dp-accounting's finer PLDAccountant.
    stdout = _run("check_calibration_against_pld.py", tmp_path)
    text = (tmp_path / "check_calibration_against_pld.md").read_text()
    assert "| settings evaluated | 6 |" in text
    assert "the target) | 0 |" in text
    assert "VIOLATION" not in stdout


def test_bench_calibration_cache_quick(tmp_path):
    _run("bench_calibration_cache.py", tmp_path)
    text = (tmp_path / "calibration_cache.md").read_text()
    assert "| q | T | cold (s) | from disk (ms) |" in text and "| 0.01 | 200 |" in text


def test_bench_dp_preprocessing_quick(tmp_path):
    # Without the Adult files (--adult-dir pointing at an empty folder) that
    # part is skipped and says so; the synthetic and diabetes parts run.
    _run("bench_dp_preprocessing.py", tmp_path, "--adult-dir", str(tmp_path / "none"))
    text = (tmp_path / "dp_preprocessing.md").read_text()
    assert "Skipped: `adult.data`" in text
    assert "## 2. Synthetic" in text and "## 3. Diabetes" in text
    assert "| 1.5 / 0.5 / 0.97 |" in text


def test_bench_layout_quick(tmp_path):
    # Without the Adult files that part says so; the map's tables and the
    # regressor run.
    _run("bench_layout.py", tmp_path, "--adult-dir", str(tmp_path / "none"))
    text = (tmp_path / "regime_layout.md").read_text()
    assert "Skipped: `adult.data`" in text and "| auto, DataFrame |" not in text
    assert "| wine | [0, 1] | 13 |" in text and "## The regressor on diabetes" in text


def test_bench_regime_quick(tmp_path):
    _run("bench_regime.py", tmp_path)
    text = (tmp_path / "regime.md").read_text()
    assert "| breast_cancer | 426 | 30 | 2 | [0, 1] | RO eps 1 |" in text
    assert "| linear 200x4 K2 | 150 | 4 | 2 | [-1, 1] | AR eps 1 |" in text
    cells = __import__("json").loads((tmp_path / "regime.json").read_text())
    assert len(cells) == 8 and all(0 <= cell["defaults"] <= 1 for cell in cells)


def test_bench_regime_heldout_quick(tmp_path):
    # Without the Adult files its cells are skipped; the rest runs.
    stdout = _run("bench_regime_heldout.py", tmp_path, "--adult-dir", str(tmp_path / "none"))
    assert "cells are skipped" in stdout
    text = (tmp_path / "regime_heldout.md").read_text()
    assert "| unit 800x20 K2 | [0, 1] | 20 |" in text and "adult 500" not in text
    assert "## Fit on half, report the other half" in text and "| half 0 |" in text
    assert "## Diabetes in raw units" in text and "| 1.5 / 0.5 |" in text
    cells = __import__("json").loads((tmp_path / "regime_heldout.json").read_text())
    assert len(cells) == 3 and all(len(cell["scores"]["tuned"]) == 2 for cell in cells)
    # The price of a private step selection, against the cells just written.
    _run("bench_regime_heldout.py", tmp_path, "--adult-dir", str(tmp_path / "none"),
         "--selection-price", "0.2")
    text = (tmp_path / "regime_heldout_selection.md").read_text()
    assert "| unit 800x20 K2 | [0, 1] |" in text and "Best case gain over 3 cells" in text
    _run("bench_regime_heldout.py", tmp_path, "--adult-dir", str(tmp_path / "none"),
         "--clip-sweep")
    text = (tmp_path / "regime_heldout_clip.md").read_text()
    assert "| unit 800x20 K2 | [0, 1] |" in text and "Best fixed clip over 3 cells" in text


def test_bench_regime_diabetes_quick(tmp_path):
    _run("bench_regime_diabetes.py", tmp_path)
    text = (tmp_path / "regime_heldout_diabetes_histogram.md").read_text()
    assert "| above_threshold | 1.5 / 0.5 | 1 | 3.000 |" in text
    assert "| gaussian_histogram | 1 / 0.3 |" in text


def test_bench_regime_diabetes_per_split_quick(tmp_path):
    _run("bench_regime_diabetes.py", tmp_path, "--per-split")
    text = (tmp_path / "regime_diabetes_per_split.md").read_text()
    assert "## Scalers' epsilon='auto'" in text and "| 702 |" in text
    assert "worst split" in text and "| 9 | [55, 130] |" in text


def test_bench_regime_small_quick(tmp_path):
    _run("bench_regime_small.py", tmp_path, "--large-sample", "--candidates", "today", "n/32")
    text = (tmp_path / "regime_small.md").read_text()
    assert "| iris | [0, 1] | 112 | 4 |" in text and "| n/32 |" in text
    assert "## Full batches against 16-row batches" in text


def test_bench_regime_scaler_quick(tmp_path):
    _run("bench_regime_scaler.py", tmp_path, "--adult-dir", str(tmp_path / "none"))
    text = (tmp_path / "regime_scaler_mechanisms.md").read_text()
    assert "Adult skipped" in text and "| synthetic 3000 | gaussian_histogram | ledger |" in text
    assert "| above_threshold | 1.5 / 0.5 | basic | 0.970 |" in text
    assert "| all defaults |" in text and '| epsilon="auto" |' in text


def test_bench_regime_heldout_square_widths_and_diabetes_quick(tmp_path):
    _run("bench_regime_heldout.py", tmp_path, "--square-widths")
    text = (tmp_path / "regime_heldout_square.md").read_text()
    assert "| not ordered | linear 2000x64 | " in text and "(0)" in text
    _run("bench_regime_heldout.py", tmp_path, "--diabetes")
    text = (tmp_path / "regime_heldout_diabetes.md").read_text()
    assert "| 1.5 / 0.5 |" in text and "declared, same model epsilon" in text


def test_screen_image_smoothing_quick(tmp_path):
    _run("screen_image_smoothing.py", tmp_path)
    text = (tmp_path / "image_smoothing_screen.md").read_text()
    for variant in ("none", "1-D sigma 0.25", "1-D sigma 1", "2-D sigma 0.25", "2-D sigma 1"):
        assert f"| {variant} | " in text
    # The noise variance each operator keeps: the 1-D one is the paper's gamma
    # (0.447 at sigma 1); the 2-D one at the same sigma keeps less.
    assert "| 1-D sigma 1 | 0.447 |" in text and "| 2-D sigma 1 | 0.254 |" in text


def test_bench_regime_sigma_quick(tmp_path):
    _run("bench_regime.py", tmp_path, "--sigma")
    text = (tmp_path / "regime_sigma.md").read_text()
    assert "| linear 4000x256 K5 | 256 | [-1, 1] | RO eps 1 |" in text
    assert "sigma 0 | sigma 1 | sigma 3 |" in text


def test_bench_regime_before_and_recheck_quick(tmp_path):
    _run("bench_regime.py", tmp_path, "--before", "3")
    text = (tmp_path / "regime_against_before.md").read_text()
    assert "| iris | [-1, 1] | RO eps 1 |" in text and "| before | today |" in text
    _run("bench_regime.py", tmp_path, "--recheck", "3")
    text = (tmp_path / "regime_recheck.md").read_text()
    assert "| map gap | defaults | tuned | gap +- s.e. |" in text


def test_bench_regime_declared_quick(tmp_path):
    _run("bench_regime.py", tmp_path, "--declared", "3")
    text = (tmp_path / "regime_declared.md").read_text()
    assert "| linear 200x4 K2 | 150 | 4 | 2 | RO eps 1 |" in text
    assert "| breast_cancer | [0, 1] | (0.0, 1.0) |" in text
    # Declared (0, 1) trains on the [-1, 1] table's rows: the same scores.
    assert "largest |declared - [-1, 1] defaults|: 0.000." in text


def test_bench_averaging_quick(tmp_path):
    _run("bench_averaging.py", tmp_path)
    text = (tmp_path / "averaging.md").read_text()
    assert "| breast_cancer | [-1, 1] | 0.5 |" in text
    assert "| last 1/16 | last 1/8 | last 1/4 | last 1/2 | auto (the rule) |" in text


def test_bench_streaming_quick(tmp_path):
    _run("bench_streaming.py", tmp_path)
    text = (tmp_path / "streaming.md").read_text()
    for mode in ("| fit |", "| fit at epsilon/sqrt(k) |", "| stream, averaging per call |",
                 "| stream, defaults |"):
        assert mode in text


def test_bench_cores_quick(tmp_path):
    _run("bench_cores.py", tmp_path, "--load")
    text = (tmp_path / f"cores_{os.cpu_count()}cores.md").read_text()
    assert "| n_jobs | epoch (ms) | speed-up over n_jobs=1 | serial fraction implied |" in text
    for table in ("MNIST-shaped", "binary, 20 features", "binary, 100 features"):
        for section in ("quiet", "under load"):
            assert f"### {table} ({section}): n = 20,000" in text
    assert "| 1 | " in text and "| 1.00x | - |" in text
    # The results say which copy of the package they timed.
    assert f"package timed: `{REPO_ROOT / 'sklearn_dplssgd'}`" in text


def test_bench_cores_quick_some_tables(tmp_path):
    _run("bench_cores.py", tmp_path, "--tables", "d100", "csr")
    text = (tmp_path / f"cores_{os.cpu_count()}cores_d100_csr.md").read_text()
    assert "### binary, 100 features (quiet): n = 20,000" in text
    assert "### CSR, 1,000 features, 1 % stored (quiet): n = 20,000" in text
    assert "MNIST-shaped" not in text


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
