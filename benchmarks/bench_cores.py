"""What ``n_jobs`` buys on this machine: one epoch at 1, 2, 4, ... all cores.

For each table (dense synthetic rows: MNIST-shaped with 10 classes, and
binary narrow tables of 20 and 100 features), one epoch (a ``max_iter=1``
fit of ``DPLSSGDClassifier``: log loss, epsilon 1, sigma 1, clip 1, a
constant step, the calibration cached beforehand) is timed with
``n_jobs = 1, 2, 4, ...`` up to the number of cores. The thread counts are
alternated round by round (the order flips every round), so that a shared
machine's changing load hits all alike; the medians are kept. Each row also
gives the speed-up over ``n_jobs=1`` and the serial fraction it implies by
Amdahl's law (``s = (p / S - 1) / (p - 1)`` for a speed-up ``S`` on ``p``
threads).

The timed region is the whole fit, as a user waits for it: the validation
of ``X`` and ``y`` (with its finiteness check), the encoding of the targets,
the rows' norms and the warning about clipped rows (passes over every row,
once a fit) as well as the steps. With ``max_iter=1`` they are a large part of
the epoch on narrow tables, and they are on the fit's threads too.

``--load`` repeats the measurement with one busy process per core beside the
benchmark (pure Python loops, started before and stopped after), the case of
a user who runs several jobs at once: there ``n_jobs = k`` should never be
much slower than ``n_jobs = 1``.

``--tables`` picks some of the tables (``mnist``, ``d20``, ``d100``, and
``csr``: CSR rows of 1,000 features with 1 % stored, not among the default
ones); the results then go to ``cores_<p>cores_<tables>.md``. To compare two
trees on a shared machine, run each tree's own copy of the script in turn
(each times its own tree's package), e.g.
``python benchmarks/bench_cores.py --n-narrow 500000 --tables d100 --rounds 7``.

Run from the repository root::

    python benchmarks/bench_cores.py                      # the default tables
    python benchmarks/bench_cores.py --n 200000 --load    # a smaller machine
    python benchmarks/bench_cores.py --quick              # a smoke run
    python benchmarks/bench_cores.py --tables d100 csr    # some tables only

Writes ``cores_<p>cores.md`` to ``--out`` (default ``benchmarks/results``;
``--quick`` defaults to a temporary folder), ``p`` the number of cores.
"""

import argparse
import multiprocessing
import os
import platform
import statistics
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

# This tree's package first: run from a worktree, a plain ``python
# benchmarks/bench_cores.py`` would otherwise time the copy an editable
# install points at (the script's folder, not the working directory, heads
# sys.path).
sys.path[:0] = [str(Path(__file__).resolve().parent.parent),
                str(Path(__file__).resolve().parent)]

import sklearn_dplssgd  # noqa: E402
from bench_speed import dp_classifier, synthetic, timed, warm_calibration  # noqa: E402

RESULTS = Path(__file__).resolve().parent / "results"

# key: (name, n, d, classes, batch, dtype, stored share or None for dense
# rows); n is set by --n for the first table and by --n-narrow for the others.
TABLES = {
    "mnist": ("MNIST-shaped", 1_000_000, 784, 10, 4096, np.float32, None),
    "d20": ("binary, 20 features", 1_000_000, 20, 2, 4096, np.float32, None),
    "d100": ("binary, 100 features", 1_000_000, 100, 2, 4096, np.float32, None),
    "csr": ("CSR, 1,000 features, 1 % stored", 1_000_000, 1000, 2, 4096, np.float32, 0.01),
}
DEFAULT_TABLES = ("mnist", "d20", "d100")


def sparse_synthetic(n, d, n_classes, density, seed=0, dtype=np.float32):
    """CSR rows of ``d`` features in [0, 1], ``density`` of them stored; linear-model labels."""
    import scipy.sparse as sp

    rng = np.random.default_rng(seed)
    X = sp.random(n, d, density=density, format="csr", random_state=rng, dtype=dtype)
    scores = X @ rng.standard_normal((d, max(n_classes, 2)))
    if n_classes == 2:
        y = (scores[:, 0] > np.median(scores[:, 0])).astype(np.int64)
    else:
        y = np.argmax(scores + rng.gumbel(size=scores.shape), axis=1)
    return X, y


def thread_counts(cores):
    """1, 2, 4, ... and the number of cores."""
    counts, p = [], 1
    while p < cores:
        counts.append(p)
        p *= 2
    counts.append(cores)
    return counts


def serial_fraction(speed_up, threads):
    """Amdahl's serial fraction implied by a speed-up on ``threads`` threads."""
    if threads <= 1 or speed_up <= 0:
        return float("nan")
    return (threads / speed_up - 1.0) / (threads - 1.0)


def _busy(stop):
    while not stop.is_set():
        for _ in range(100_000):
            pass


class BusyCores:
    """One busy process per core while the ``with`` block runs."""

    def __init__(self, processes):
        self.processes = processes

    def __enter__(self):
        context = multiprocessing.get_context("spawn")
        self.stop = context.Event()
        self.workers = [context.Process(target=_busy, args=(self.stop,), daemon=True)
                        for _ in range(self.processes)]
        for worker in self.workers:
            worker.start()
        time.sleep(1.0)  # let them reach the cores
        return self

    def __exit__(self, *exc):
        self.stop.set()
        for worker in self.workers:
            worker.join(timeout=10)
            if worker.is_alive():
                worker.terminate()
        return False


def epoch_medians(X, y, classes, batch, counts, rounds):
    """Median seconds of one epoch for each ``n_jobs`` in ``counts`` (alternated)."""
    n = X.shape[0]
    warm_calibration(n, batch, 1)
    for jobs in counts:  # compiles each team's kernels (and loads the cache)
        dp_classifier(classes, 1, n_jobs=jobs, batch_size=batch, n=n).fit(X[:5000], y[:5000])
    times = {jobs: [] for jobs in counts}
    for round_index in range(rounds):
        order = counts if round_index % 2 == 0 else counts[::-1]
        for jobs in order:
            times[jobs].append(timed(lambda: dp_classifier(
                classes, 1, n_jobs=jobs, batch_size=batch, n=n).fit(X, y)))
    return {jobs: statistics.median(values) for jobs, values in times.items()}


def table_lines(name, shape, medians, counts):
    n, d, classes, batch = shape
    base = medians[1]
    lines = [f"### {name}: n = {n:,}, d = {d}, {classes} classes, batch {batch:,}", "",
             "| n_jobs | epoch (ms) | speed-up over n_jobs=1 | serial fraction implied |",
             "|---|---|---|---|"]
    for jobs in counts:
        speed_up = base / medians[jobs]
        fraction = serial_fraction(speed_up, jobs)
        lines.append(f"| {jobs} | {1e3 * medians[jobs]:.1f} | {speed_up:.2f}x | "
                     + ("-" if jobs == 1 else f"{fraction:.2f}") + " |")
    return lines + [""]


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=None,
                        help="rows of the MNIST-shaped table (default 1,000,000)")
    parser.add_argument("--n-narrow", type=int, default=None,
                        help="rows of the narrow tables (default 1,000,000)")
    parser.add_argument("--rounds", type=int, default=5, help="timed epochs per n_jobs")
    parser.add_argument("--load", action="store_true",
                        help="also measure with one busy process per core beside")
    parser.add_argument("--quick", action="store_true", help="a smoke run: tiny tables")
    parser.add_argument("--tables", nargs="+", choices=sorted(TABLES), default=None,
                        help="the tables to time (default: " + " ".join(DEFAULT_TABLES) + ")")
    parser.add_argument("--out", type=Path, default=None)
    args = parser.parse_args(argv)
    cores = os.cpu_count() or 1
    counts = thread_counts(cores)
    if args.quick:
        args.n, args.n_narrow, args.rounds = 20_000, 20_000, 1
    out = args.out or (Path(tempfile.mkdtemp()) if args.quick else RESULTS)
    started = time.perf_counter()
    load_before = os.getloadavg()
    sections = [("quiet", False)] + ([("under load", True)] if args.load else [])
    lines = ["# What n_jobs buys", "",
             "Generated by `" + " ".join(["python", f"benchmarks/{Path(__file__).name}",
                                          *(sys.argv[1:] if argv is None else argv)])
             + "` on "
             f"{platform.machine()}, {cores} cores, Python {platform.python_version()}, "
             f"NumPy {np.__version__}; load average {load_before[0]:.2f} at the start; "
             f"package timed: `{Path(sklearn_dplssgd.__file__).parent}`.", "",
             "One epoch (a `max_iter=1` fit, calibration cached) of `DPLSSGDClassifier` "
             "(log loss, epsilon 1, sigma 1, clip 1, constant step), float32 rows; "
             f"medians of {args.rounds} epochs per `n_jobs`, the thread counts alternated.", ""]
    keys = args.tables or DEFAULT_TABLES
    for key in keys:
        name, n, d, classes, batch, dtype, density = TABLES[key]
        index = list(TABLES).index(key)
        n = (args.n if key == "mnist" else args.n_narrow) or n
        batch = min(batch, max(n // 8, 1))
        if density is None:
            X, y = synthetic(n, d, classes, seed=index, dtype=dtype)
        else:
            X, y = sparse_synthetic(n, d, classes, density, seed=index, dtype=dtype)
        for section, loaded in sections:
            print(f"{name}, n = {n:,} ({section}, load average "
                  f"{os.getloadavg()[0]:.2f}) ...", flush=True)
            if loaded:
                with BusyCores(cores):
                    medians = epoch_medians(X, y, classes, batch, counts, args.rounds)
            else:
                medians = epoch_medians(X, y, classes, batch, counts, args.rounds)
            lines += table_lines(f"{name} ({section})", (n, d, classes, batch), medians, counts)
            print("\n".join(lines[-len(counts) - 4:]), flush=True)
        del X, y
    lines.append(f"Load average {os.getloadavg()[0]:.2f} at the end (1 minute; other "
                 "people's processes share the machine unless it says otherwise). "
                 f"Took {(time.perf_counter() - started) / 60:.1f} min.")
    out.mkdir(parents=True, exist_ok=True)
    suffix = "" if args.tables is None else "_" + "_".join(keys)
    path = out / f"cores_{cores}cores{suffix}.md"
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    print(f"wrote {path}")


if __name__ == "__main__":
    main()
