"""Speed of two code trees of sklearn_dplssgd, timed side by side.

Both trees define a package named ``sklearn_dplssgd``, so each is imported in
its own subprocess (``--worker``), with the tree first on ``sys.path`` and
``PYTHONPATH``. The parent alternates old and new subprocesses for
``--rounds`` rounds (the order flips every round), so that a shared machine's
changing load hits both alike, and reports the medians and the new / old
ratios.

What each subprocess times (1 thread: ``n_jobs=None`` and single-threaded
BLAS / numba):

* one epoch (a ``max_iter=1`` fit) of ``DPLSSGDClassifier(loss="log_loss")``
  on n = 60,000 synthetic rows, d = 784 (uniform features, labels of a random
  linear model), batch 256, sigma 1, epsilon 1, for 10 classes
  (``classes=range(10)``) and 2 classes, float64 and float32 input. The same
  settings in both trees; each tree's default adjacency and accountant (the
  value of the noise multiplier does not change the cost, the noise draw
  itself is timed); no random_state. A warm-up fit compiles the kernels and
  fills the calibration cache first, so an epoch excludes the calibration;
  ``--epochs`` timed epochs per configuration, the median is kept;
* the noise calibration, cold (``calibrate_noise.cache_clear()`` first, and
  the disk cache of trees that have one turned off), at
  epsilon 1, delta 1e-5, q = 256/60000, T = 4688 (20 epochs of 60,000 rows),
  q = 256/8000, T = 625 (20 epochs of 8,000 rows) and q = 256/1e6, T = 19532
  (5 epochs of a million rows), for the tree's default accountant and for
  each of "rdp" and "pld" explicitly under each adjacency; with
  ``--calibration-only``, that alone, in every round.

Run from the repository root::

    python benchmarks/compare_revisions.py --old /tmp/oldmain --new .
    python benchmarks/compare_revisions.py --old /tmp/oldmain --new . --quick
    python benchmarks/compare_revisions.py --old /tmp/oldmain --calibration-only \
        --rounds 3 --calibration-reps 3 --name speed_revisions_calibration.md

Writes ``speed_revisions.md`` to ``--out`` (default ``benchmarks/results``;
``--quick`` defaults to a temporary folder).
"""

import argparse
import hashlib
import inspect
import json
import math
import os
import platform
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

N, D, BATCH, EPSILON, SIGMA = 60000, 784, 256, 1.0, 1.0
DELTA = 1e-5
# The last: 5 epochs of a million rows, the slowest PLD calibration of
# bench_speed.py (the finest interval, the widest grids).
CALIBRATION_SETTINGS = ((256 / 60000, 4688), (256 / 8000, 625), (256 / 1000000, 19532))
EPOCH_CONFIGS = ((10, "float64"), (10, "float32"), (2, "float64"), (2, "float32"))


# ---------------------------------------------------------------------------
# Worker: runs inside one tree
# ---------------------------------------------------------------------------


def synthetic(n, d, n_classes, dtype):
    import numpy as np

    rng = np.random.default_rng(0)
    X = rng.random((n, d))
    W = rng.standard_normal((max(n_classes, 2), d))
    scores = X @ W.T
    if n_classes == 2:
        y = (scores[:, 0] > np.median(scores[:, 0])).astype(np.int64)
    else:
        y = np.argmax(scores + rng.gumbel(size=scores.shape), axis=1)
    return np.ascontiguousarray(X, dtype=dtype), y


def worker(n, epochs, calibration_reps, epoch_configs=EPOCH_CONFIGS):
    import numpy as np
    import sklearn_dplssgd
    from sklearn_dplssgd import DPLSSGDClassifier, calibrate_noise

    def classifier(n_classes):
        return DPLSSGDClassifier(
            loss="log_loss", epsilon=EPSILON, delta=DELTA, sigma=SIGMA, clip_norm=1.0,
            batch_size=BATCH, max_iter=1, learning_rate="constant", eta0=0.5,
            classes=range(n_classes),
        )

    out = {"package": str(Path(sklearn_dplssgd.__file__).resolve().parent), "epoch": {},
           "calibration": {}}
    for n_classes, dtype in epoch_configs:
        X, y = synthetic(n, D, n_classes, dtype)
        classifier(n_classes).fit(X[:2000], y[:2000])  # compile the kernels
        classifier(n_classes).fit(X, y)  # fill the calibration cache
        times = []
        for _ in range(epochs):
            t0 = time.perf_counter()
            classifier(n_classes).fit(X, y)
            times.append(time.perf_counter() - t0)
        out["epoch"][f"{n_classes}-class {dtype}"] = float(np.median(times))
        del X, y

    default = inspect.signature(calibrate_noise).parameters["accountant"].default
    out["default_accountant"] = default
    out["default_neighboring"] = inspect.signature(
        calibrate_noise).parameters["neighboring"].default
    # Warm the imports and dp-accounting's first-call costs on another setting.
    for accountant in ("rdp", "pld") if calibration_reps > 0 else ():
        calibrate_noise(3.0, DELTA, sample_rate=0.01, n_steps=100, accountant=accountant)
    cases = [("tree default", {})] + [
        (f"{accountant}, {neighboring}", dict(accountant=accountant, neighboring=neighboring))
        for neighboring in ("add_remove", "replace_one") for accountant in ("rdp", "pld")]
    for label, kwargs in cases if calibration_reps > 0 else ():
        for q, steps in CALIBRATION_SETTINGS:
            times = []
            for _ in range(calibration_reps):
                calibrate_noise.cache_clear()
                t0 = time.perf_counter()
                calibrate_noise(EPSILON, DELTA, sample_rate=q, n_steps=steps, **kwargs)
                times.append(time.perf_counter() - t0)
            out["calibration"][f"{label}, q = {q:.5f}, T = {steps}"] = float(
                np.median(times))
    return out


# ---------------------------------------------------------------------------
# Parent: alternates the trees
# ---------------------------------------------------------------------------


def run_worker(tree, n, epochs, calibration_reps, calibration_only=False):
    tree = str(Path(tree).resolve())
    env = dict(os.environ)
    env["PYTHONPATH"] = tree
    for name in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS",
                 "NUMBA_NUM_THREADS"):
        env[name] = "1"
    # Cold means cold: no calibration read from the disk cache (trees that
    # have one; an empty value turns it off).
    env["SKLEARN_DPLSSGD_CACHE_DIR"] = ""
    # Each tree compiles into its own numba cache (an old tree may be read-only).
    digest = hashlib.sha1(tree.encode()).hexdigest()[:12]
    env["NUMBA_CACHE_DIR"] = str(Path(tempfile.gettempdir()) / f"numba_cache_{digest}")
    command = [sys.executable, str(Path(__file__).resolve()), "--worker", tree, "--n", str(n),
               "--epochs", str(epochs), "--calibration-reps", str(calibration_reps)]
    if calibration_only:
        command.append("--calibration-only")
    result = subprocess.run(command, capture_output=True, text=True, env=env, cwd=tree)
    if result.returncode != 0:
        raise RuntimeError(f"worker for {tree} failed:\n{result.stderr[-3000:]}")
    return json.loads(result.stdout.strip().splitlines()[-1])


def loadavg():
    try:
        return " / ".join(f"{x:.2f}" for x in os.getloadavg())
    except OSError:
        return "n/a"


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--old", help="the 'before' tree (repository root)")
    parser.add_argument("--new", default=".", help="the 'after' tree (default: .)")
    parser.add_argument("--rounds", type=int, default=None,
                        help="old/new subprocess pairs (default 5; 1 with --quick)")
    parser.add_argument("--epochs", type=int, default=None,
                        help="timed epochs per configuration and subprocess (default 3)")
    parser.add_argument("--calibration-reps", type=int, default=None,
                        help="cold calibrations per setting and subprocess (default 1)")
    parser.add_argument("--calibration-rounds", type=int, default=2,
                        help="rounds (the first ones) that also time the calibration "
                             "(default 2)")
    parser.add_argument("--quick", action="store_true",
                        help="smoke run: n = 5,000, 1 round, 1 epoch, 1 calibration")
    parser.add_argument("--calibration-only", action="store_true",
                        help="time the noise calibration only (every round), no epochs")
    parser.add_argument("--name", default="speed_revisions.md",
                        help="file name of the report (default speed_revisions.md)")
    parser.add_argument("--out", type=Path, default=None, help="output folder")
    parser.add_argument("--worker", help=argparse.SUPPRESS)
    parser.add_argument("--n", type=int, default=N, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)

    if args.worker:
        sys.path.insert(0, args.worker)
        print(json.dumps(worker(args.n, args.epochs, args.calibration_reps,
                                () if args.calibration_only else EPOCH_CONFIGS)))
        return 0
    if not args.old:
        parser.error("--old is required")
    rounds = args.rounds or (1 if args.quick else 5)
    epochs = args.epochs or (1 if args.quick else 3)
    calibration_reps = args.calibration_reps or 1
    n = 5000 if args.quick else N
    out = args.out or (Path(tempfile.mkdtemp(prefix="compare_revisions_")) if args.quick
                       else Path(__file__).resolve().parent / "results")
    out.mkdir(parents=True, exist_ok=True)

    trees = {"old": args.old, "new": args.new}
    runs = {"old": [], "new": []}
    start = time.perf_counter()
    loads = []
    for round_ in range(rounds):
        order = ("old", "new") if round_ % 2 == 0 else ("new", "old")
        for which in order:
            loads.append(loadavg())
            reps = (calibration_reps if round_ < args.calibration_rounds
                    or args.calibration_only else 0)
            result = run_worker(trees[which], n, epochs, reps, args.calibration_only)
            runs[which].append(result)
            print(f"[{time.perf_counter() - start:6.0f} s] round {round_ + 1} {which}: "
                  + ", ".join(f"{k} {v:.3f} s" for k, v in result["epoch"].items()),
                  flush=True)
    elapsed = time.perf_counter() - start

    def medians(kind):
        keys = {key for which in runs for r in runs[which] for key in r[kind]}
        table = {}
        for key in sorted(keys):
            table[key] = {which: statistics.median(r[kind][key] for r in runs[which]
                                                   if key in r[kind])
                          if any(key in r[kind] for r in runs[which]) else math.nan
                          for which in ("old", "new")}
        return table

    epoch, calibration = medians("epoch"), medians("calibration")
    lines = [
        "# Speed: old tree against new tree, interleaved",
        "",
        f"Produced by `python benchmarks/compare_revisions.py --old {args.old} --new {args.new}"
        + (" --quick" if args.quick else "")
        + (" --calibration-only" if args.calibration_only else "")
        + f"` in {elapsed / 60:.1f} min "
        f"(Python {platform.python_version()}, {platform.machine()}, {os.cpu_count()} cores, "
        "shared with other developers' test runs; load average at the start of each "
        f"subprocess: {'; '.join(loads)}).",
        "",
        f"- old: `{runs['old'][0]['package']}` (default accountant "
        f"{runs['old'][0]['default_accountant']}, adjacency "
        f"{runs['old'][0]['default_neighboring']}); new: `{runs['new'][0]['package']}` "
        f"(default accountant {runs['new'][0]['default_accountant']}, adjacency "
        f"{runs['new'][0]['default_neighboring']}).",
    ]
    if args.calibration_only:
        lines.append(f"- {rounds} rounds; each round runs one subprocess per tree, the order "
                     "flipping every round, that times the calibrations below (1 thread).")
    else:
        lines += [
            f"- {rounds} rounds; each round runs one subprocess per tree, the order flipping "
            "every round. A subprocess imports its tree, compiles (warm-up fit), fills the "
            f"calibration cache, then times {epochs} epoch(s) per configuration and keeps "
            "the median; the table gives the median over rounds of those medians, and the "
            "ratio of the two.",
            f"- One epoch = a `max_iter=1` fit of `DPLSSGDClassifier(loss='log_loss', "
            f"epsilon={EPSILON:g}, delta={DELTA:g}, sigma={SIGMA:g}, batch_size={BATCH}, "
            f"classes=range(K))` on n = {n:,} synthetic rows, d = {D}, 1 thread; each "
            "tree's default adjacency and accountant, no random_state (the noise is drawn in "
            "both; its scale does not change the cost). Calibration excluded (cached).",
        ]
    if epoch:
        lines += ["", "## One epoch", "", "| configuration | old (s) | new (s) | new / old |",
                  "|---|---|---|---|"]
    for key, value in epoch.items():
        lines.append(f"| {key} | {value['old']:.3f} | {value['new']:.3f} | "
                     f"**{value['new'] / value['old']:.3f}** |")
    if epoch:
        lines += [
            "",
            "Per-round epoch times (s), old / new:",
            "",
            "| round | " + " | ".join(epoch) + " |",
            "|---" * (len(epoch) + 1) + "|",
        ]
    for round_ in range(rounds if epoch else 0):
        lines.append(f"| {round_ + 1} | " + " | ".join(
            f"{runs['old'][round_]['epoch'][k]:.3f} / {runs['new'][round_]['epoch'][k]:.3f}"
            for k in epoch) + " |")
    lines += [
        "",
        "## Noise calibration, cold",
        "",
        f"`calibrate_noise({EPSILON:g}, {DELTA:g}, sample_rate=q, n_steps=T, accountant=...)` "
        "after `calibrate_noise.cache_clear()` (every calibration and per-z cache), each "
        "tree, with `SKLEARN_DPLSSGD_CACHE_DIR=''` (no disk cache); dp-accounting warmed "
        "on another setting first; "
        f"{calibration_reps} call(s) per setting in each of the first "
        f"{rounds if args.calibration_only else min(rounds, args.calibration_rounds)} "
        "round(s), median. 'tree default' is each tree's default accountant and adjacency, "
        "so its ratio compares what a user of each tree pays; the other rows compare like "
        "with like.",
        "",
        "| accountant, setting | old (ms) | new (ms) | new / old |",
        "|---|---|---|---|",
    ]
    for key, value in calibration.items():
        lines.append(f"| {key} | {1e3 * value['old']:.0f} | {1e3 * value['new']:.0f} | "
                     f"{value['new'] / value['old']:.2f} |")
    path = out / args.name
    path.write_text("\n".join(lines) + "\n")
    print("\n".join(lines[-len(calibration) - 2:]))
    for key, value in epoch.items():
        print(f"{key}: old {value['old']:.3f} s, new {value['new']:.3f} s, "
              f"new/old {value['new'] / value['old']:.3f}")
    print(f"Wrote {path}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
