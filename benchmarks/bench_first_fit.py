"""First fit in a fresh environment: the time Numba's compilation adds.

The estimators' per-sample loops are Numba kernels compiled on first use and
cached on disk (``cache=True``). A new environment has no cache, so its
first fit of each input kind (dense, sparse) compiles them. This script
measures, for dense and for sparse (CSR) input, in new Python processes:

* **cold**: an empty ``NUMBA_CACHE_DIR`` (a fresh environment): the import,
  the first fit (compiling) and a second fit of the same kind (compiled);
* **warm**: a second process on the now filled cache: the first fit, which
  loads the kernels from disk instead of compiling them;

and the same for a sparse fit in a process that fitted dense input first
(what the first sparse fit adds once the dense kernels exist).

The data are scikit-learn's digits (1,797 x 64, pixels scaled by their public
range 0..16, 10 declared classes), the library's defaults at epsilon = 1;
each process calibrates its noise as a new environment does, and every process
runs one thread (``NUMBA_NUM_THREADS=1``). The second fit's time is the cost
of a fit once compiled, so first minus second is the compilation.

Run from the repository root::

    python benchmarks/bench_first_fit.py           # 3 repetitions, ~3 min
    python benchmarks/bench_first_fit.py --quick   # one repetition (smoke run)

Writes ``first_fit.md`` to ``--out`` (default ``benchmarks/results``;
``--quick`` defaults to a temporary folder).
"""

import argparse
import json
import os
import platform
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parent.parent

# Run in a new process: times an import and two fits of one input kind
# (argv[1]), after untimed fits of the kinds argv[2:], and prints them as JSON.
_CHILD = """
import json, sys, time
start = time.perf_counter()
import numpy as np
import scipy.sparse as sp
from sklearn.datasets import load_digits
from sklearn_dplssgd import DPLSSGDClassifier
imported = time.perf_counter() - start
X, y = load_digits(return_X_y=True)
X = X / 16.0
inputs = {"dense": X, "sparse": sp.csr_matrix(X)}
for kind in sys.argv[2:]:  # kinds fitted (untimed) before the timed one
    DPLSSGDClassifier(epsilon=1.0, classes=range(10)).fit(inputs[kind], y)
times, cpu = [], []
for _ in range(2):
    start, start_cpu = time.perf_counter(), time.process_time()
    DPLSSGDClassifier(epsilon=1.0, classes=range(10)).fit(inputs[sys.argv[1]], y)
    times.append(time.perf_counter() - start)
    cpu.append(time.process_time() - start_cpu)
print(json.dumps({"import": imported, "first": times[0], "second": times[1],
                  "first_cpu": cpu[0], "second_cpu": cpu[1]}))
"""


# The timed input kind, and the kinds fitted before it in the same process.
CASES = {"dense": ("dense",), "sparse": ("sparse",), "sparse after dense": ("sparse", "dense")}


def _child(case, cache_dir):
    env = dict(os.environ)
    env.update(NUMBA_CACHE_DIR=str(cache_dir), NUMBA_NUM_THREADS="1", OMP_NUM_THREADS="1",
               OPENBLAS_NUM_THREADS="1")
    env["PYTHONPATH"] = os.pathsep.join(
        [str(REPO_ROOT)] + ([env["PYTHONPATH"]] if env.get("PYTHONPATH") else []))
    result = subprocess.run([sys.executable, "-c", _CHILD, *CASES[case]], capture_output=True,
                            text=True, cwd=REPO_ROOT, env=env, timeout=600, check=True)
    return json.loads(result.stdout.strip().splitlines()[-1])


def measure(case, repeats):
    """Cold and warm timings of a case of ``CASES``, one dict per repetition."""
    rows = []
    for _ in range(repeats):
        with tempfile.TemporaryDirectory() as cache_dir:
            cold = _child(case, cache_dir)
            warm = _child(case, cache_dir)
        rows.append({"cold": cold, "warm": warm})
        print(case, json.dumps(rows[-1]), flush=True)
    return rows


def _median(rows, state, key):
    return statistics.median(row[state][key] for row in rows)


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="one repetition (smoke run)")
    parser.add_argument("--repeats", type=int, default=3, help="repetitions per input kind")
    parser.add_argument("--out", type=Path, default=None, help="folder for first_fit.md")
    args = parser.parse_args(argv)
    repeats = 1 if args.quick else args.repeats
    out = args.out or (Path(tempfile.mkdtemp()) if args.quick
                       else REPO_ROOT / "benchmarks" / "results")
    out.mkdir(parents=True, exist_ok=True)

    load_before = os.getloadavg()
    results = {case: measure(case, repeats) for case in CASES}
    load_after = os.getloadavg()
    lines = [
        "# First fit in a fresh environment (Numba compilation)",
        "",
        f"`python benchmarks/bench_first_fit.py` ({repeats} repetitions, medians in seconds; "
        f"Python {platform.python_version()}, {platform.machine()}, one thread). "
        "DPLSSGDClassifier(epsilon=1, classes=range(10)) on scikit-learn's digits "
        "(1,797 x 64), dense or CSR; 'sparse after dense': the first sparse fit of a process "
        "that fitted dense input first. Cold: a new process with an empty NUMBA_CACHE_DIR; "
        "warm: a new process on the cache the cold one filled. Calibration cache off. "
        "Load average (1 / 5 / 15 min) "
        + " / ".join(f"{value:.2f}" for value in load_before) + " at the start, "
        + " / ".join(f"{value:.2f}" for value in load_after) + " at the end (a shared machine).",
        "",
        "Wall-clock seconds, and in brackets the process's CPU seconds (time.process_time; "
        "less sensitive to other work on a shared machine, as the compilation is "
        "single-threaded):",
        "",
        "| input | import | first fit, cold | second fit | compilation (first - second) "
        "| first fit, warm cache |",
        "|---|---|---|---|---|---|",
    ]
    for case, rows in results.items():
        first, second = _median(rows, "cold", "first"), _median(rows, "cold", "second")
        first_cpu = _median(rows, "cold", "first_cpu")
        second_cpu = _median(rows, "cold", "second_cpu")
        lines.append(
            f"| {case} | {_median(rows, 'cold', 'import'):.2f} | {first:.2f} ({first_cpu:.2f}) "
            f"| {second:.3f} ({second_cpu:.3f}) | {first - second:.2f} "
            f"({first_cpu - second_cpu:.2f}) | {_median(rows, 'warm', 'first'):.2f} "
            f"({_median(rows, 'warm', 'first_cpu'):.2f}) |")
    lines += ["", "Raw timings (seconds):", "", "```json",
              json.dumps(results, indent=1), "```", ""]
    (out / "first_fit.md").write_text("\n".join(lines))
    print("\n".join(lines[2:10 + len(results)]))
    print(f"wrote {out / 'first_fit.md'}")


if __name__ == "__main__":
    main()
