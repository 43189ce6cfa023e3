"""The fixed part of a fit on a Dask array, in two code trees, timed side by side.

A fit of one epoch on a 2-worker ``LocalCluster`` (n = 2,000,000, d = 100,
binary, batch 4,096, chunks of 200,000 rows, persisted on the workers) spends
its steps and a fixed part: the partitions' preparation (made C-contiguous,
checked finite, their norms), the actors, shipping the generator, the
result's return. The preparation is timed as the construction of the Dask
training backend (``DaskTraining``), the fit as a whole around it.

Both trees define a package named ``sklearn_dplssgd``, so each runs in its own
subprocess (``--worker``, its cluster's workers started from it) with the tree
first on ``PYTHONPATH``; the parent alternates the trees for ``--rounds``
rounds (the order flips every round), so that a shared machine's load hits
both alike. Each subprocess times ``--fits`` fits after one warm-up fit (the
workers' first fit loads the compiled kernels); the medians over all rounds
are reported, with the load average.

Run from the repository root::

    python benchmarks/bench_dask_fixed.py --old /tmp/oldmain --new .
    python benchmarks/bench_dask_fixed.py --quick  # a smoke run, this tree only

Writes ``dask_fixed.md`` to ``--out`` (default ``benchmarks/results``;
``--quick`` defaults to a temporary folder).
"""

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
import warnings
from pathlib import Path

import numpy as np

SETTINGS = dict(n=2_000_000, d=100, batch=4096, chunk=200_000, rounds=3, fits=3)
QUICK_SETTINGS = dict(n=40_000, d=20, batch=1024, chunk=10_000, rounds=1, fits=2)


def run_worker(settings):
    """Time ``fits`` one-epoch fits in this tree; print one JSON line per fit."""
    from unittest import mock

    import dask.array as da
    import distributed

    from sklearn_dplssgd import DPLSSGDClassifier
    from sklearn_dplssgd.backends import DaskTraining

    n, d, chunk = settings["n"], settings["d"], settings["chunk"]
    preparation = []
    construct = DaskTraining.__init__

    def timed_construction(self, *args, **kwargs):
        began = time.perf_counter()
        construct(self, *args, **kwargs)
        preparation.append(time.perf_counter() - began)

    with distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True,
                                  dashboard_address=None) as cluster, \
            distributed.Client(cluster) as client, \
            mock.patch.object(DaskTraining, "__init__", timed_construction), \
            warnings.catch_warnings():
        warnings.simplefilter("ignore")
        X = da.random.RandomState(0).uniform(-1, 1, size=(n, d), chunks=(chunk, d))
        y = (X[:, 0] + X[:, 1] > 0).astype(np.int64)
        X, y = client.persist([X, y])
        distributed.wait([X, y])
        for fit in range(settings["fits"] + 1):
            model = DPLSSGDClassifier(epsilon=1.0, classes=[0, 1],
                                      batch_size=settings["batch"], max_iter=1,
                                      random_state=0)
            began = time.perf_counter()
            model.fit(X, y)
            elapsed = time.perf_counter() - began
            if fit:  # the first is the warm-up
                print(json.dumps(dict(fit=elapsed, preparation=preparation[-1],
                                      steps=int(model.n_steps_))), flush=True)


def _time_tree(tree, settings):
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(
        [str(tree)] + ([env["PYTHONPATH"]] if env.get("PYTHONPATH") else []))
    result = subprocess.run(
        [sys.executable, str(Path(__file__).resolve()), "--worker",
         json.dumps(settings)], capture_output=True, text=True, cwd=tree, env=env,
        check=True)
    return [json.loads(line) for line in result.stdout.splitlines()
            if line.startswith("{")]


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--old", type=Path, help="the 'before' tree (repository root)")
    parser.add_argument("--new", type=Path, default=Path("."), help="the 'after' tree")
    parser.add_argument("--rounds", type=int, default=None)
    parser.add_argument("--quick", action="store_true", help="a smoke run")
    parser.add_argument("--out", type=Path, default=None, help="output folder")
    parser.add_argument("--worker", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.worker:
        run_worker(json.loads(args.worker))
        return
    settings = dict(QUICK_SETTINGS if args.quick else SETTINGS)
    if args.rounds:
        settings["rounds"] = args.rounds
    out = args.out or (Path(tempfile.mkdtemp()) if args.quick
                       else Path(__file__).parent / "results")
    out.mkdir(parents=True, exist_ok=True)
    trees = {"new": args.new.resolve()}
    if args.old is not None:
        trees = {"old": args.old.resolve(), **trees}
    times, loads, began = {name: [] for name in trees}, [], time.perf_counter()
    by_round = []
    for round_ in range(settings["rounds"]):
        # Alternated, the order flipping every round.
        by_round.append({})
        for name in (list(trees) if round_ % 2 == 0 else list(trees)[::-1]):
            by_round[-1][name] = _time_tree(trees[name], settings)
            times[name] += by_round[-1][name]
            loads.append(os.getloadavg()[0])
            print(f"round {round_ + 1}, {name}: " + ", ".join(
                f"{row['fit']:.2f} s ({row['preparation']:.2f} s)" for row in times[name][
                    -settings["fits"]:]), flush=True)
    lines = [
        "# fit on a Dask array: the fixed part, two trees side by side", "",
        "Generated by `python benchmarks/bench_dask_fixed.py"
        + (" --old OLD --new NEW" if args.old is not None else "")
        + (" --quick" if args.quick else "") + "`. 2-worker LocalCluster (1 thread "
        f"each), n = {settings['n']:,}, d = {settings['d']}, binary, batch "
        f"{settings['batch']:,}, chunks of {settings['chunk']:,} rows, one epoch; "
        f"{settings['rounds']} rounds of {settings['fits']} fits a tree (after a warm-up "
        "fit), the trees alternated. `preparation`: the construction of the Dask training "
        "backend (the partitions prepared and checked, the actors); the rest of the fit "
        "is its steps, the loop's start on the cluster and the result's return. "
        f"{os.cpu_count()} cores, load average (1 min) after each tree's run: "
        + ", ".join(f"{load:.1f}" for load in loads) + f"; {time.perf_counter() - began:.0f} s "
        "in all. On a shared machine the times are disturbed: compare the trees, "
        "not the absolute times.", "",
        "| tree | fit of 1 epoch (s), median | preparation (s), median | each fit (s) |",
        "|---|---|---|---|",
    ]
    for name, rows in times.items():
        lines.append(
            f"| {name} (`{trees[name].name}`) | {np.median([row['fit'] for row in rows]):.2f} "
            f"| {np.median([row['preparation'] for row in rows]):.2f} | "
            + ", ".join(f"{row['fit']:.2f}" for row in rows) + " |")
    if len(trees) == 2:
        # A load that drifts between rounds moves both trees of a round alike.
        lines += [
            "", "Each round's two trees ran next to each other: the round's medians, new / old.",
            "", "| round | fit, old (s) | fit, new (s) | new / old | preparation, old (s) "
            "| preparation, new (s) | new / old |", "|---|---|---|---|---|---|---|"]
        for number, rounds in enumerate(by_round, 1):
            medians = {name: {key: np.median([row[key] for row in rows])
                              for key in ("fit", "preparation")}
                       for name, rows in rounds.items()}
            old, new = medians["old"], medians["new"]
            lines.append(
                f"| {number} | {old['fit']:.2f} | {new['fit']:.2f} "
                f"| {new['fit'] / old['fit']:.2f} | {old['preparation']:.2f} "
                f"| {new['preparation']:.2f} | {new['preparation'] / old['preparation']:.2f} |")
    (out / "dask_fixed.md").write_text("\n".join(lines) + "\n")
    print(f"written to {out}")


if __name__ == "__main__":
    main()
