"""Streaming at the defaults: partial_fit over k blocks against fit on all rows.

Issue 32: ``partial_fit`` (and ``dask_ml.wrappers.Incremental``, which calls it
once per block) must be as dependable as ``fit``. For each table and number of
blocks k, the training rows are cut by position into k equal blocks, each
passed to one ``partial_fit`` call at ``epsilon`` with
``disjoint_batches=True`` (the blocks are disjoint, so ``epsilon_`` is one
call's epsilon, parallel composition), and compared with ``fit`` on all rows
at that same ``epsilon``:

* ``fit``: every ``"auto"`` left alone;
* ``fit at epsilon/sqrt(k)``: ``fit`` on all rows at ``epsilon / sqrt(k)``,
  about the noise the series carries (each call is a DP-SGD run on ``n / k``
  rows: its gradient noise relative to the signal is about k times
  ``fit``'s, and averaging the k independent calls' noise brings that down
  to ``sqrt(k)`` times at best); a reference for what a series can reach, not
  a mode of the library;
* ``stream, averaging per call``: ``partial_fit`` with ``average=True``,
  every other setting ``"auto"`` (the series rule of ``_defaults``): each
  call publishes the mean of the last half of its own steps and the next
  call starts from it (what ``average="auto"`` did before the series
  average);
* ``stream, defaults``: ``partial_fit`` with every setting ``"auto"``: the
  series rule and the series average (each call trains without averaging of
  its own, the next continues from its last iterate, ``coef_`` is the mean of
  the calls' last iterates weighted by ``s_j t_j^2``; see
  ``sklearn_dplssgd/_training/_streaming.py``);
* ``Incremental`` (``--dask``): ``dask_ml.wrappers.Incremental.fit`` over a
  dask array of the same blocks on a ``LocalCluster``, at the defaults.

Mean and standard deviation of the test accuracy over ``SEEDS`` (a seed is a
75/25 split; the noise is fresh, the fits are private: with
``reproducible=True`` every ``partial_fit`` call would re-derive its generator
from the same seed and draw the same noise, which then adds up k-fold).
Why streaming costs accuracy even with a perfect rule: with k disjoint blocks
each block's noise protects only that block's rows, so the signal-to-noise of
the series is about ``1 / sqrt(k)`` of ``fit``'s at the same epsilon (see
the user guide, "Streaming"), which ``fit at epsilon/sqrt(k)`` measures.

Run from the repository root::

    NUMBA_NUM_THREADS=1 OMP_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1 \\
        python benchmarks/bench_streaming.py --dask   # about 5 min
    python benchmarks/bench_streaming.py --quick      # a smoke run (seconds)
    python benchmarks/bench_streaming.py --levers     # other series settings

Writes ``streaming.md`` (``streaming_levers.md`` with ``--levers``) to
``--out`` (default ``benchmarks/results``; ``--quick`` defaults to a temporary
folder).
"""

import argparse
import math
import sys
import tempfile
import time
import warnings
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
import _data  # noqa: E402

EPSILON = 1.0
# (table, scaling, numbers of blocks, seeds): more seeds on the small tables,
# whose runs spread more.
KS = (4, 10, 25, 50)
CASES = (
    ("breast_cancer", "[-1, 1]", KS, tuple(range(16))),
    ("digits", "[-1, 1]", KS, tuple(range(16))),
    ("linear 12000x16 K2", "[-1, 1]", KS, tuple(range(8))),
    ("heavy tails 20000x64 K5", "[-1, 1]", KS, tuple(range(8))),
)
QUICK_CASES = (("breast_cancer", "[-1, 1]", (4,), (0, 1)),)
# Incremental: small blocks of a real table, and a synthetic one.
DASK_CASES = (("breast_cancer", "[-1, 1]", 10, tuple(range(16))),
              ("linear 12000x16 K2", "[-1, 1]", 10, tuple(range(8))))
# The series modes: their settings (every other one "auto").
STREAMS = {"stream, averaging per call": dict(average=True), "stream, defaults": {}}
# --levers: the other settings measured for a series (the series average
# kept), as explicit settings from public quantities: a call's row count
# (batch size) and the defaults' own eta0 (the first call's, from public
# quantities only) times a factor.
LEVERS = {
    "last iterate (average=False)": lambda n_call, eta0: dict(average=False),
    "eta0 x0.5": lambda n_call, eta0: dict(eta0=0.5 * eta0),
    "eta0 x2": lambda n_call, eta0: dict(eta0=2.0 * eta0),
    "16 steps a call": lambda n_call, eta0: dict(batch_size=math.ceil(n_call / 16)),
    "one full batch a call": lambda n_call, eta0: dict(batch_size=n_call),
}


def model(n_classes, delta, epsilon=EPSILON, **settings):
    from sklearn_dplssgd import DPLSSGDClassifier

    # Private fits (fresh noise): a reproducible fit re-derives its generator
    # from the same seed at every partial_fit call, so every call would draw
    # the same noise, which then adds up k-fold instead of sqrt(k)-fold.
    return DPLSSGDClassifier(epsilon=epsilon, delta=delta, classes=np.arange(n_classes),
                             **settings)


def stream(X, y, n_classes, k, delta, settings):
    blocks = np.array_split(np.arange(len(y)), k)
    clf = model(n_classes, delta, **settings)
    for block in blocks:
        clf.partial_fit(X[block], y[block], disjoint_batches=True)
    return clf


def incremental(client, X, y, n_classes, k, delta):
    import dask.array as da
    from dask_ml.wrappers import Incremental

    chunk = math.ceil(len(y) / k)
    # The blocks in order, as partial_fit gets them in the other modes.
    wrapper = Incremental(model(n_classes, delta), shuffle_blocks=False)
    wrapper.fit(da.from_array(X, chunks=(chunk, X.shape[1])), da.from_array(y, chunks=chunk),
                classes=np.arange(n_classes), disjoint_batches=True)
    return wrapper.estimator_


def run(cases, use_dask, log, levers=False):
    rows = []
    client = cluster = None
    if use_dask:
        import distributed

        cluster = distributed.LocalCluster(n_workers=1, threads_per_worker=1, processes=True,
                                           dashboard_address=None)
        client = distributed.Client(cluster)
    try:
        work = [(name, scaling, k, seeds, False) for name, scaling, ks, seeds in cases
                for k in ks]
        if use_dask:
            work += [(*case, True) for case in DASK_CASES]
        for name, scaling, k, seeds, on_dask in work:
            began = time.perf_counter()
            scores = {}
            for seed in seeds:
                X_train, X_test, y_train, y_test = _data.load_table(name, seed, scaling)
                n_classes = int(max(y_train.max() + 1, 2))
                # delta fixed for the series and the fit alike (public: the table's size).
                delta = min(1e-5, 1.0 / (10 * len(y_train)))
                with warnings.catch_warnings():
                    warnings.simplefilter("ignore")  # the known privacy-workflow notes
                    runs = {}
                    if on_dask:
                        runs["Incremental, defaults"] = incremental(
                            client, X_train, y_train, n_classes, k, delta)
                    else:
                        runs["fit"] = model(n_classes, delta).fit(X_train, y_train)
                        runs["fit at epsilon/sqrt(k)"] = model(
                            n_classes, delta, epsilon=EPSILON / math.sqrt(k)).fit(
                                X_train, y_train)
                        for label, settings in STREAMS.items():
                            runs[label] = stream(X_train, y_train, n_classes, k, delta,
                                                 settings)
                        n_call = math.ceil(len(y_train) / k)
                        for label, lever in (LEVERS.items() if levers else ()):
                            runs[label] = stream(
                                X_train, y_train, n_classes, k, delta,
                                lever(n_call, runs["stream, defaults"].eta0_))
                for label, fitted in runs.items():
                    scores.setdefault(label, []).append(
                        (fitted.score(X_test, y_test), fitted.epsilon_,
                         fitted.batch_size_, fitted.eta0_))
            for label, values in scores.items():
                values = np.array(values, dtype=float)
                rows.append(dict(table=name, scaling=scaling, k=k, mode=label,
                                 n_seeds=len(seeds),
                                 call_rows=math.ceil(len(y_train) / k),
                                 mean=values[:, 0].mean(), sd=values[:, 0].std(),
                                 epsilon=values[0, 1], batch=int(values[0, 2]),
                                 eta0=values[0, 3]))
            log(f"{name:24s} k={k:<3d} " + "; ".join(
                f"{r['mode']} {r['mean']:.3f}+-{r['sd']:.3f}" for r in rows[-len(scores):])
                + f" ({time.perf_counter() - began:.0f} s)")
    finally:
        if client is not None:
            client.close()
            cluster.close()
    return rows


def write_report(out, rows, elapsed, quick, levers=False):
    lines = [
        "# Streaming at the defaults: partial_fit over k blocks against fit",
        "",
        "Generated by `NUMBA_NUM_THREADS=1 OMP_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1 "
        "python benchmarks/bench_streaming.py "
        + ("--levers" if levers else "--dask") + "`"
        + (" --quick (a smoke run: NOT the reported figures)" if quick else "") + ".",
        f"{_data.machine_note()}; {elapsed:.0f} s in all.",
        "",
        f"Replace-one epsilon {EPSILON:g}; the training rows cut by position into k equal "
        "blocks, one `partial_fit(..., disjoint_batches=True)` per block (so `epsilon_` "
        "is one call's epsilon), against `fit` on all rows at the same epsilon; delta "
        "min(1e-5, 1/(10 n)) of the whole table for all. Test accuracy, mean +- sd over "
        "the seeds (a seed: a 75/25 split and fresh noise); batch and eta0 of the first "
        "call (of the fit for the fits). `fit at epsilon/sqrt(k)`: about the noise a "
        "series of k disjoint calls carries (a reference, not a mode). `stream, "
        "averaging per call`: `average=True` (each call averages the last half of its "
        "own steps; the previous default). `stream, defaults`: every setting \"auto\" "
        "(the series rule and the series average). Gap: fit - mode."
        + (" The other modes: the defaults with one setting changed (explicit, from "
           "public quantities: the call's row count, the defaults' eta0): "
           "`last iterate`: average=False (the same trajectory, no series average); "
           "`eta0 x0.5`, `eta0 x2`: the defaults' eta0 times that; `16 steps a call`: "
           "batch_size ceil(n_call / 16); `one full batch a call`: batch_size n_call."
           if levers else ""),
        "",
        "| table | k | rows a call | mode | seeds | accuracy | sd | gap to fit | epsilon_ "
        "| batch | eta0 |",
        "|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    fits = {(r["table"], r["k"]): r for r in rows if r["mode"] == "fit"}
    for r in rows:
        reference = fits.get((r["table"], r["k"]))
        if reference is None:  # Incremental: the fit of the same table
            reference = next((f for f in fits.values() if f["table"] == r["table"]), None)
        gap = "" if reference is None else f"{reference['mean'] - r['mean']:+.3f}"
        lines.append(
            f"| {r['table']} | {r['k']} | {r['call_rows']} | {r['mode']} | {r['n_seeds']} | "
            f"{r['mean']:.3f} | "
            f"{r['sd']:.3f} | {gap} | {r['epsilon']:.3g} | {r['batch']} | {r['eta0']:.3g} |")
    name = "streaming_levers.md" if levers else "streaming.md"
    (out / name).write_text("\n".join(lines) + "\n")
    return out / name


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="a smoke run (seconds)")
    parser.add_argument("--dask", action="store_true",
                        help="also run dask_ml Incremental on a LocalCluster")
    parser.add_argument("--levers", action="store_true",
                        help="the other series settings measured (streaming_levers.md)")
    parser.add_argument("--out", type=Path, default=None)
    args = parser.parse_args(argv)
    out = args.out or (Path(tempfile.mkdtemp()) if args.quick else
                       Path(__file__).resolve().parent / "results")
    out.mkdir(parents=True, exist_ok=True)
    start = time.perf_counter()
    rows = run(QUICK_CASES if args.quick else CASES, args.dask, print, levers=args.levers)
    path = write_report(out, rows, time.perf_counter() - start, args.quick,
                        levers=args.levers)
    print(f"wrote {path}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
