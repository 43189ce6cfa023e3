"""Array API training (PyTorch) against the compiled NumPy path: time per epoch.

The same ``DPLSSGDClassifier`` fit (multinomial logistic regression, epsilon
= 1, sigma = 1, one epoch) on MNIST-shaped synthetic data (n = 60,000,
d = 784, 10 classes; ``--quick``: n = 3,000, d = 64), batch sizes 256 and
4096, through

- the compiled NumPy path (NumPy input, 1 thread: ``n_jobs=None``), and
- the array API path on CPU PyTorch tensors (``array_api_dispatch=True``),
  with PyTorch held to 1 thread for a like-for-like comparison,

in float64 and float32, repetitions interleaved, medians reported. Each
timing is a whole one-epoch ``fit`` after the noise calibration is cached
(validation, row norms and the epoch's steps). A GPU row (n = 1,000,000,
d = 784, batch 4096, the issue's setting) is measured when
``torch.cuda.is_available()``; otherwise the report says it was not
measured.

Run from the repository root (the script sets ``SCIPY_ARRAY_API=1`` itself,
before SciPy is imported)::

    python benchmarks/bench_array_api.py           # about 2 minutes
    python benchmarks/bench_array_api.py --quick   # seconds (smoke run)

Writes ``array_api.md`` to ``--out`` (default ``benchmarks/results``;
``--quick`` defaults to a temporary folder).
"""

import os

# scikit-learn's array API mode needs SciPy's, which SciPy reads at import.
os.environ.setdefault("SCIPY_ARRAY_API", "1")

import argparse  # noqa: E402
import sys  # noqa: E402
import tempfile  # noqa: E402
import time  # noqa: E402
import warnings  # noqa: E402
from pathlib import Path  # noqa: E402

import numpy as np  # noqa: E402

sys.path.insert(0, str(Path(__file__).resolve().parent))
from bench_speed import dp_classifier, interleaved, loadavg, synthetic, warm_calibration  # noqa: E402,E501

GPU_SETTING = dict(n=1_000_000, d=784, n_classes=10, batch_size=4096)


def log(message=""):
    print(message, flush=True)


def fit_seconds(X, y, n_classes, batch_size, n, dispatch):
    """A function timing one one-epoch fit (seconds), and the fitted model's holder."""
    import sklearn

    def run():
        estimator = dp_classifier(n_classes, max_iter=1, batch_size=batch_size, n=n)
        start = time.perf_counter()
        with sklearn.config_context(array_api_dispatch=dispatch):
            estimator.fit(X, y)
        if dispatch and hasattr(estimator.coef_, "device") and "cuda" in str(
                estimator.coef_.device):
            import torch

            torch.cuda.synchronize()
        return time.perf_counter() - start

    return run


def noise_free_difference(X, y, n_classes, batch_size, n, X_torch, y_torch):
    """Largest |coef| difference between the two paths without noise, same batches.

    With ``epsilon=inf`` and ``reproducible=True`` both paths draw the same
    batches from the same generator and add no noise: the weights must agree
    to rounding (the device path is the same computation).
    """
    import sklearn

    def to_numpy(array):
        # A fitted attribute is in the input's namespace: a torch tensor or NumPy.
        return array.cpu().numpy() if hasattr(array, "cpu") else np.asarray(array)

    models = []
    for dispatch, X_in, y_in in ((False, X, y), (True, X_torch, y_torch)):
        estimator = dp_classifier(n_classes, max_iter=1, batch_size=batch_size, n=n).set_params(
            epsilon=float("inf"), random_state=0, reproducible=True)
        with sklearn.config_context(array_api_dispatch=dispatch):
            models.append(to_numpy(estimator.fit(X_in, y_in).coef_))
    return float(np.max(np.abs(models[0] - models[1]))), float(np.max(np.abs(models[0])))


def cpu_rows(n, d, n_classes, batches, reps):
    import torch

    torch.set_num_threads(1)
    rows = []
    for dtype, torch_dtype in ((np.float64, torch.float64), (np.float32, torch.float32)):
        X, y = synthetic(n, d, n_classes, seed=1, dtype=dtype)
        X_torch, y_torch = torch.asarray(X, dtype=torch_dtype), torch.asarray(y)
        for batch_size in batches:
            warm_calibration(n, batch_size, 1)
            methods = {
                "numpy": fit_seconds(X, y, n_classes, batch_size, n, False),
                "torch": fit_seconds(X_torch, y_torch, n_classes, batch_size, n, True),
            }
            for method in methods.values():  # compile, import, caches
                method()
            medians, _ = interleaved(methods, reps)
            difference = noise_free_difference(X, y, n_classes, batch_size, n, X_torch,
                                               y_torch)
            row = (np.dtype(dtype).name, batch_size, medians["numpy"], medians["torch"],
                   difference)
            log(f"{row[0]} batch {batch_size}: numpy {row[2] * 1e3:.0f} ms, "
                f"torch cpu {row[3] * 1e3:.0f} ms ({row[3] / row[2]:.2f}x), noise-free "
                f"max |coef diff| {difference[0]:.1e} (max |coef| {difference[1]:.2f})  "
                f"[{loadavg()}]")
            rows.append(row)
    return rows


def gpu_row(reps):
    """Seconds per epoch on the GPU at the issue's setting, or None without a GPU."""
    try:
        import torch
    except ImportError:
        return None
    if not torch.cuda.is_available():
        return None
    setting = GPU_SETTING
    X, y = synthetic(setting["n"], setting["d"], setting["n_classes"], seed=1,
                     dtype=np.float32)
    X_gpu = torch.asarray(X, device="cuda")
    y_gpu = torch.asarray(y, device="cuda")
    warm_calibration(setting["n"], setting["batch_size"], 1)
    run = fit_seconds(X_gpu, y_gpu, setting["n_classes"], setting["batch_size"], setting["n"],
                      True)
    run()
    return float(np.median([run() for _ in range(reps)])), torch.cuda.get_device_name()


def report(rows, gpu, n, d, n_classes, reps, out):
    lines = [
        "# Array API path (PyTorch) against the compiled NumPy path",
        "",
        f"`python benchmarks/bench_array_api.py` on a shared 2-core machine ({loadavg()} at "
        "the end: other jobs were running, so absolute times move with the load; "
        "the ratio of interleaved medians is the figure to read).",
        "",
        f"One-epoch `DPLSSGDClassifier` fits (multinomial log_loss, epsilon = 1, sigma = 1, "
        f"eta0 = 0.5) on synthetic MNIST-shaped data, n = {n:,}, d = {d}, {n_classes} "
        f"classes; medians of {reps} interleaved repetitions after a warm-up fit, noise "
        "calibration cached. NumPy: the compiled Numba path, 1 thread. torch cpu: the "
        "array API path on CPU tensors (`array_api_dispatch=True`), `torch.set_num_threads(1)`. "
        "Last column: the two paths without noise (epsilon = inf, `reproducible=True`: the "
        "same batches), largest difference of `coef_` (the same computation, to rounding).",
        "",
        "| dtype | batch | NumPy path (ms) | torch cpu (ms) | torch / NumPy "
        "| noise-free max abs coef difference (max abs coef) |",
        "|---|---|---|---|---|---|",
    ]
    for dtype, batch_size, numpy_s, torch_s, (difference, largest) in rows:
        lines.append(f"| {dtype} | {batch_size} | {numpy_s * 1e3:.0f} | {torch_s * 1e3:.0f} | "
                     f"{torch_s / numpy_s:.2f} | {difference:.1e} ({largest:.2f}) |")
    lines += ["", "## GPU", ""]
    setting = (f"n = {GPU_SETTING['n']:,}, d = {GPU_SETTING['d']}, "
               f"{GPU_SETTING['n_classes']} classes, batch {GPU_SETTING['batch_size']}, float32")
    if gpu is None:
        lines.append(f"| setting | device | seconds per epoch |\n|---|---|---|\n"
                     f"| {setting} | GPU | not measured (no GPU in this session) |")
    else:
        seconds, name = gpu
        lines.append(f"| setting | device | seconds per epoch |\n|---|---|---|\n"
                     f"| {setting} | {name} | {seconds:.3f} |")
    lines += [
        "",
        "On a CPU the array API path is a convenience (tensors in, tensors out), not a "
        "speed-up: each step is a dozen separate tensor operations, each with its own "
        "dispatch and memory traffic, where the compiled path fuses the per-sample work into "
        "one loop. Its purpose is the GPU, where the same operations run on the device.",
    ]
    out.mkdir(parents=True, exist_ok=True)
    (out / "array_api.md").write_text("\n".join(lines) + "\n")
    log(f"wrote {out / 'array_api.md'}")


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--quick", action="store_true", help="tiny sizes (smoke run)")
    parser.add_argument("--out", type=Path, default=None)
    args = parser.parse_args()
    try:
        import torch  # noqa: F401
    except ImportError:
        sys.exit("bench_array_api.py needs torch (pip install torch).")
    warnings.simplefilter("ignore")
    if args.quick:
        n, d, batches, reps = 3000, 64, (256,), 1
        out = args.out or Path(tempfile.mkdtemp())
    else:
        n, d, batches, reps = 60_000, 784, (256, 4096), 3
        out = args.out or Path(__file__).resolve().parent / "results"
    log(f"n = {n}, d = {d}, batches {batches}, {reps} reps  [{loadavg()}]")
    rows = cpu_rows(n, d, 10, batches, reps)
    gpu = None if args.quick else gpu_row(reps)
    report(rows, gpu, n, d, 10, reps, out)


if __name__ == "__main__":
    main()
