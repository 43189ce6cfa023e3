"""The floating-point channel audit on every input path, at a thousand runs a side.

:func:`sklearn_dplssgd.audit.check_float_channel` crafts one noisy release
whose low bits would tell a canary apart if its noise were sampled and added
in floating point, fits it ``n_runs`` times on each of two neighbouring data
sets and bounds epsilon from below. This script runs it on the default
estimator for each input path (dense, CSR, float32, ``n_jobs=2``, add/remove
adjacency, a Dask array) and on output perturbation, and writes one table.

Usage::

    python benchmarks/bench_float_channel.py            # 1,000 runs a side
    python benchmarks/bench_float_channel.py --quick    # 20 runs a side (a smoke run)
"""

import argparse
import time
import warnings
from pathlib import Path

import numpy as np
import scipy.sparse as sp

from sklearn_dplssgd import DPLSSGDClassifier, DPLSSGDRegressor
from sklearn_dplssgd.audit import check_float_channel

RESULTS = Path(__file__).parent / "results"


def _dask_array(X):
    import dask.array as da

    return da.from_array(X, chunks=(2, X.shape[1]))


def cases():
    """``(name, estimator, as_input)`` of every path audited."""
    yield "dense, replace-one", DPLSSGDRegressor(epsilon=1.0), None
    yield "CSR", DPLSSGDRegressor(epsilon=1.0), sp.csr_matrix
    yield "float32", DPLSSGDRegressor(epsilon=1.0), lambda X: X.astype(np.float32)
    yield "n_jobs=2", DPLSSGDRegressor(epsilon=1.0, n_jobs=2), None
    yield ("add/remove (classifier)",
           DPLSSGDClassifier(epsilon=1.0, classes=[0, 1], neighboring="add_remove"), None)
    yield "Dask array", DPLSSGDRegressor(epsilon=1.0), _dask_array
    yield ("output perturbation (classifier)",
           DPLSSGDClassifier(mechanism="output", epsilon=1.0, classes=[0, 1]), None)


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="20 runs a side")
    parser.add_argument("--out", type=Path, default=RESULTS)
    args = parser.parse_args(argv)
    n_runs = 20 if args.quick else 1000
    rows = []
    for name, estimator, as_input in cases():
        start = time.perf_counter()
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            result = check_float_channel(estimator, n_runs=n_runs, random_state=0,
                                         as_input=as_input)
        seconds = time.perf_counter() - start
        print(f"{name}: {result}", flush=True)
        rows.append(f"| {name} | {result.measured:.3f} | {result.limit:g} | "
                    f"{'passed' if result.passed else 'FAILED'} | {seconds:.0f} s |")
    args.out.mkdir(parents=True, exist_ok=True)
    text = "\n".join([
        "# The floating-point channel audit on every input path",
        "",
        "Written by `benchmarks/bench_float_channel.py`: "
        f"`sklearn_dplssgd.audit.check_float_channel`, {n_runs:,} runs a side, "
        "95 % confidence, `random_state=0`. The epsilon lower bound is from the count of "
        "releases off the canary's floating-point grid on each side (the tests show the "
        "check refuting float64 noise on a float64 sum).",
        "",
        "| input | epsilon lower bound | claimed epsilon | check | time |",
        "|---|---|---|---|---|",
        *rows,
        "",
    ])
    (args.out / "float_channel.md").write_text(text, encoding="utf-8")


if __name__ == "__main__":
    main()
