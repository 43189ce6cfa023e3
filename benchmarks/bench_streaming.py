"""Streaming at the defaults: partial_fit over k blocks against fit on all rows.

Issue 32: ``partial_fit`` (and ``dask_ml.wrappers.Incremental``, which calls it
once per block) must be as dependable as ``fit``. For each table and number of
blocks k, the training rows are cut by position into k equal blocks, each
passed to one ``partial_fit`` call at ``epsilon`` with
``disjoint_batches=True`` (the blocks are disjoint, so ``epsilon_`` is one
call's epsilon, parallel composition), and compared with ``fit`` on all rows
at that same ``epsilon``:

* ``fit``: every ``"auto"`` left alone;
* ``stream, auto``: ``partial_fit`` with every ``"auto"`` left alone, as the
  estimator resolves them without the series rule (a call's batch as for a
  fit of its rows, often one full batch, and ``eta0`` for that one call);
* ``stream, series rule``: ``partial_fit`` with ``batch_size`` and ``eta0``
  set to what :func:`sklearn_dplssgd._defaults.resolve_schedule` and
  :func:`~sklearn_dplssgd._defaults.resolve_eta0` give for a call of a series
  (``partial=True``; from public quantities only: the call's row count,
  epsilon, delta, d), i.e. what ``"auto"`` resolves to
  once the estimator passes ``partial`` to them (see the report of issue 32);
* ``Incremental`` (``--dask``): ``dask_ml.wrappers.Incremental.fit`` over a
  dask array of the same blocks on a ``LocalCluster``, with the series rule's
  settings.

Mean and standard deviation of the test accuracy over ``SEEDS`` (a seed is a
75/25 split; the noise is fresh, the fits are private: with
``reproducible=True`` every ``partial_fit`` call would re-derive its generator
from the same seed and draw the same noise, which then adds up k-fold).
Why streaming costs accuracy even with a perfect rule: with k disjoint blocks
each block's noise protects only that block's rows, so the signal-to-noise of
the series is about ``1 / sqrt(k)`` of ``fit``'s at the same epsilon (see
the user guide, "Streaming").

Run from the repository root::

    NUMBA_NUM_THREADS=1 OMP_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1 \\
        python benchmarks/bench_streaming.py --dask   # about 1 min
    python benchmarks/bench_streaming.py --quick      # a smoke run (seconds)

Writes ``streaming.md`` to ``--out`` (default ``benchmarks/results``;
``--quick`` defaults to a temporary folder).
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
import bench_regime  # noqa: E402

EPSILON = 1.0
SEEDS = tuple(range(8))
# (table, scaling, numbers of blocks)
CASES = (
    ("breast_cancer", "[-1, 1]", (4, 10)),
    ("digits", "[-1, 1]", (4, 10)),
    ("linear 12000x16 K2", "[-1, 1]", (4, 10, 25, 50)),
    ("heavy tails 20000x64 K5", "[-1, 1]", (4, 50)),
)
QUICK_CASES = (("breast_cancer", "[-1, 1]", (4,)),)
DASK_CASE = ("linear 12000x16 K2", "[-1, 1]", 10)


def series_settings(n_rows, n_features, epsilon, delta):
    """``batch_size`` and ``eta0`` of the series rule for a call of ``n_rows`` rows.

    Public quantities only: the call's row count, d, epsilon, delta (C = 1,
    constant rate, SGD, the classifier's noise-free step).
    """
    from sklearn_dplssgd import calibrate_noise
    from sklearn_dplssgd._defaults import resolve_eta0, resolve_schedule

    batch_size, _ = resolve_schedule("auto", 1, n_rows, partial=True)
    n_steps = math.ceil(n_rows / batch_size)
    z = calibrate_noise(epsilon, delta, sample_rate=min(1.0, batch_size / n_rows),
                        n_steps=n_steps).noise_multiplier
    eta0 = resolve_eta0("auto", learning_rate="constant", power_t=0.5,
                        noise_multipliers=np.full(n_steps, z), clip_norm=1.0,
                        batch_size=batch_size, alpha=1e-4,
                        max_step=bench_regime.NOISE_FREE_STEP, n_features=n_features,
                        partial=True)
    return dict(batch_size=batch_size, eta0=eta0)


def model(n_classes, seed, delta, **settings):
    from sklearn_dplssgd import DPLSSGDClassifier

    # Private fits (fresh noise): a reproducible fit re-derives its generator
    # from the same seed at every partial_fit call, so every call would draw
    # the same noise, which then adds up k-fold instead of sqrt(k)-fold.
    return DPLSSGDClassifier(epsilon=EPSILON, delta=delta, classes=np.arange(n_classes),
                             **settings)


def stream(X, y, n_classes, k, seed, delta, settings):
    blocks = np.array_split(np.arange(len(y)), k)
    clf = model(n_classes, seed, delta, **settings)
    for block in blocks:
        clf.partial_fit(X[block], y[block], disjoint_batches=True)
    return clf


def incremental(client, X, y, n_classes, k, seed, delta, settings):
    import dask.array as da
    from dask_ml.wrappers import Incremental

    chunk = math.ceil(len(y) / k)
    wrapper = Incremental(model(n_classes, seed, delta, **settings))
    wrapper.fit(da.from_array(X, chunks=(chunk, X.shape[1])), da.from_array(y, chunks=chunk),
                classes=np.arange(n_classes), disjoint_batches=True)
    return wrapper.estimator_


def run(cases, seeds, use_dask, log):
    rows = []
    client = cluster = None
    if use_dask:
        import distributed

        cluster = distributed.LocalCluster(n_workers=1, threads_per_worker=1, processes=True,
                                           dashboard_address=None)
        client = distributed.Client(cluster)
    try:
        work = [(name, scaling, k, False) for name, scaling, ks in cases for k in ks]
        if use_dask:
            work.append((*DASK_CASE, True))
        for name, scaling, k, on_dask in work:
            began = time.perf_counter()
            scores = {}
            for seed in seeds:
                X_train, X_test, y_train, y_test = bench_regime.load_table(name, seed, scaling)
                n_classes = int(max(y_train.max() + 1, 2))
                # delta fixed for the series and the fit alike (public: the table's size).
                delta = min(1e-5, 1.0 / (10 * len(y_train)))
                call_rows = math.ceil(len(y_train) / k)
                rule = series_settings(call_rows, X_train.shape[1], EPSILON, delta)
                with warnings.catch_warnings():
                    warnings.simplefilter("ignore")  # reproducible=True: known here
                    runs = {}
                    if on_dask:
                        runs["Incremental, series rule"] = incremental(
                            client, X_train, y_train, n_classes, k, seed, delta, rule)
                    else:
                        runs["fit"] = model(n_classes, seed, delta).fit(X_train, y_train)
                        runs["stream, auto"] = stream(X_train, y_train, n_classes, k, seed,
                                                      delta, {})
                        runs["stream, series rule"] = stream(X_train, y_train, n_classes, k,
                                                             seed, delta, rule)
                for label, fitted in runs.items():
                    scores.setdefault(label, []).append(
                        (fitted.score(X_test, y_test), fitted.epsilon_,
                         fitted.batch_size_, fitted.eta0_))
            for label, values in scores.items():
                values = np.array(values, dtype=float)
                rows.append(dict(table=name, scaling=scaling, k=k, mode=label,
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


def write_report(out, rows, elapsed, quick, n_seeds):
    lines = [
        "# Streaming at the defaults: partial_fit over k blocks against fit",
        "",
        "Generated by `NUMBA_NUM_THREADS=1 OMP_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1 "
        "python benchmarks/bench_streaming.py --dask`"
        + (" --quick (a smoke run: NOT the reported figures)" if quick else "") + ".",
        f"{_data.machine_note()}; {elapsed:.0f} s in all.",
        "",
        f"Replace-one epsilon {EPSILON:g}; the training rows cut by position into k equal "
        "blocks, one `partial_fit(..., disjoint_batches=True)` per block (so `epsilon_` "
        "is one call's epsilon), against `fit` on all rows at the same epsilon; delta "
        f"min(1e-5, 1/(10 n)) of the whole table for both. Test accuracy, mean +- sd over "
        f"{n_seeds} seeds; batch and eta0 of the first call (of the fit for `fit`). "
        "`stream, auto`: every setting at \"auto\" as the estimator resolves it without "
        "the series rule (a call's batch as for a fit of its rows, eta0 for that call); "
        "`stream, series "
        "rule`: batch_size and eta0 set to the series rule's values (resolve_schedule / "
        "resolve_eta0 with partial=True). Gap: fit - mode.",
        "",
        "| table | k | rows a call | mode | accuracy | sd | gap to fit | epsilon_ | batch | "
        "eta0 |",
        "|---|---|---|---|---|---|---|---|---|---|",
    ]
    fits = {(r["table"], r["k"]): r for r in rows if r["mode"] == "fit"}
    for r in rows:
        reference = fits.get((r["table"], r["k"]))
        if reference is None:  # Incremental: the fit of the same table
            reference = next((f for f in fits.values() if f["table"] == r["table"]), None)
        gap = "" if reference is None else f"{reference['mean'] - r['mean']:+.3f}"
        lines.append(
            f"| {r['table']} | {r['k']} | {r['call_rows']} | {r['mode']} | {r['mean']:.3f} | "
            f"{r['sd']:.3f} | {gap} | {r['epsilon']:.3g} | {r['batch']} | {r['eta0']:.3g} |")
    (out / "streaming.md").write_text("\n".join(lines) + "\n")


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="a smoke run (seconds)")
    parser.add_argument("--dask", action="store_true",
                        help="also run dask_ml Incremental on a LocalCluster")
    parser.add_argument("--out", type=Path, default=None)
    args = parser.parse_args(argv)
    out = args.out or (Path(tempfile.mkdtemp()) if args.quick else
                       Path(__file__).resolve().parent / "results")
    out.mkdir(parents=True, exist_ok=True)
    seeds = SEEDS[:2] if args.quick else SEEDS
    start = time.perf_counter()
    rows = run(QUICK_CASES if args.quick else CASES, seeds, args.dask, print)
    write_report(out, rows, time.perf_counter() - start, args.quick, len(seeds))
    print(f"wrote {out / 'streaming.md'}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
