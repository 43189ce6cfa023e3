"""``fit`` on a Dask array: accounting, accuracy, memory and speed on a LocalCluster.

Three parts, each written to its own results file:

* ``dask_accuracy.md``: on a ``LocalCluster`` of two worker processes, ``fit``
  on a Dask array of the training rows (10 chunks) against ``fit`` on the same
  rows in memory, and ``dask_ml.wrappers.Incremental`` over the same chunks
  (one ``partial_fit`` per chunk): test accuracy, mean and sd over the seeds
  (a seed is a 75/25 split and fresh noise), every setting at its default.
  For each Dask fit the script checks that ``dp_event_`` and ``epsilon_`` are
  the in-memory fit's (same T, q, C, z: the same mechanism).
* ``dask_memory.md``: a client process whose address space is capped
  (``resource.setrlimit(RLIMIT_AS)``, in a subprocess) fits on a Dask array
  created on the workers with ``da.random`` and at least 4 times larger than
  the room the cap leaves the client; as a control, computing the array on
  that client fails.
* ``dask_speed.md``: n = 2,000,000, d = 100, binary, batch 4,096: the fit of
  one epoch on a 2-worker LocalCluster (one thread each) against the
  in-memory fit with ``n_jobs=2``, alternated: the loop on a worker (now),
  and the loop on the client (before) with the client as created (calls
  through the scheduler) and with ``direct_to_workers=True``; the time of a
  step from the difference between fits of 1 and 3 epochs, and the cluster's
  per-step overhead (the Dask step minus the in-memory step), and a fit's
  fixed part (the fit of one epoch minus its steps); then a step's round trip
  without compute, per way of calling the workers' actors (from the client,
  or from one worker to the other), and the one-way exchange an all-reduce
  would make instead (both workers sending their sums to each other at once).

Run from the repository root::

    python benchmarks/bench_dask.py          # about 15 min (n_jobs=2 needs 2 Numba threads)
    python benchmarks/bench_dask.py --quick  # a smoke run

Writes to ``--out`` (default ``benchmarks/results``; ``--quick`` defaults to
a temporary folder).
"""

import argparse
import math
import os
import subprocess
import sys
import tempfile
import textwrap
import time
import warnings
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
import _data  # noqa: E402

EPSILON = 1.0
N_CHUNKS = 10
# (table, seeds): 10 chunks each; "linear 12000x16 K2" has 9,000 training
# rows, so 10 chunks of 900.
CASES = (("breast_cancer", tuple(range(8))), ("digits", tuple(range(8))),
         ("linear 12000x16 K2", tuple(range(8))))
QUICK_CASES = (("breast_cancer", (0,)),)
# --quick: few steps (the defaults take 1,001 on breast cancer).
QUICK_SETTINGS = dict(max_iter=2, batch_size=64)
SPEED = dict(n=2_000_000, d=100, batch=4096, chunk=200_000, repeats=3,
             round_trip_calls=300)
QUICK_SPEED = dict(n=40_000, d=20, batch=1024, chunk=10_000, repeats=1,
                   round_trip_calls=5)
MEMORY = dict(room_mb=400, n=1_000_000, d=256, chunk=50_000)
QUICK_MEMORY = dict(room_mb=400, n=200_000, d=128, chunk=50_000)


def _model(n_classes, delta, **settings):
    from sklearn_dplssgd import DPLSSGDClassifier

    return DPLSSGDClassifier(epsilon=EPSILON, delta=delta, classes=np.arange(n_classes),
                             **settings)


def run_accuracy(client, cases, log, settings):
    import dask.array as da
    from dask_ml.wrappers import Incremental

    rows = []
    for name, seeds in cases:
        scores = {"in memory": [], "Dask array": [], "Incremental": []}
        began = time.perf_counter()
        for seed in seeds:
            X_train, X_test, y_train, y_test = _data.load_table(name, seed, "[-1, 1]")
            n_classes = int(max(y_train.max() + 1, 2))
            delta = min(1e-5, 1.0 / (10 * len(y_train)))
            chunk = math.ceil(len(y_train) / N_CHUNKS)
            X_dask = da.from_array(X_train, chunks=(chunk, X_train.shape[1]))
            y_dask = da.from_array(y_train, chunks=chunk)
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")  # the known privacy-workflow notes
                in_memory = _model(n_classes, delta, **settings).fit(X_train, y_train)
                on_dask = _model(n_classes, delta, **settings).fit(X_dask, y_dask)
                wrapper = Incremental(_model(n_classes, delta, **settings), shuffle_blocks=False)
                wrapper.fit(X_dask, y_dask, classes=np.arange(n_classes),
                            disjoint_batches=True)
            if (on_dask.dp_event_ != in_memory.dp_event_
                    or on_dask.epsilon_ != in_memory.epsilon_):
                raise AssertionError(f"{name}: the Dask fit's accounting differs")
            for label, model in (("in memory", in_memory), ("Dask array", on_dask),
                                 ("Incremental", wrapper.estimator_)):
                scores[label].append(model.score(X_test, y_test))
        for label, values in scores.items():
            rows.append(dict(table=name, n=len(y_train), chunk=chunk, mode=label,
                             seeds=len(seeds), mean=float(np.mean(values)),
                             sd=float(np.std(values)), epsilon=in_memory.epsilon_,
                             steps=in_memory.n_steps_))
        log(f"{name}: " + "; ".join(f"{r['mode']} {r['mean']:.3f}" for r in rows[-3:])
            + f" ({time.perf_counter() - began:.0f} s)")
    return rows


# The capped client: connects to the cluster, checks that X cannot be
# computed here, then fits on it.
_MEMORY_CLIENT = textwrap.dedent("""
    import resource, sys, time, warnings
    import numpy as np
    import dask.array as da
    import distributed
    from sklearn_dplssgd import DPLSSGDClassifier

    address, n, d, chunk, room = sys.argv[1], *map(int, sys.argv[2:6])
    warnings.simplefilter("ignore")
    client = distributed.Client(address)
    X = da.random.RandomState(0).uniform(-1, 1, size=(n, d), chunks=(chunk, d))
    y = (X[:, 0] + X[:, 1] > 0).astype(np.int64)
    X, y = client.persist([X, y])
    distributed.wait([X, y])
    # Warm the kernels before the cap (compiling needs room of its own).
    DPLSSGDClassifier(classes=[0, 1], max_iter=1).fit(np.zeros((8, d)), np.arange(8) % 2)
    used = int(open("/proc/self/statm").read().split()[0]) * resource.getpagesize()
    resource.setrlimit(resource.RLIMIT_AS, (used + room, used + room))
    try:
        X.compute()
        gathered = "completed"
    except MemoryError:
        gathered = "MemoryError"
    began = time.perf_counter()
    model = DPLSSGDClassifier(epsilon=1.0, classes=[0, 1], max_iter=1,
                              random_state=0).fit(X, y)
    elapsed = time.perf_counter() - began
    print("RESULT", gathered, X.nbytes, used, elapsed, model.n_steps_, model.epsilon_)
    client.close()
""")


def run_memory(cluster, settings, log):
    env = dict(os.environ, MALLOC_ARENA_MAX="2")
    command = [sys.executable, "-c", _MEMORY_CLIENT, cluster.scheduler_address,
               str(settings["n"]), str(settings["d"]), str(settings["chunk"]),
               str(settings["room_mb"] * 2**20)]
    done = subprocess.run(command, capture_output=True, text=True, env=env,
                          cwd=str(Path(__file__).resolve().parent.parent), timeout=1800)
    lines = [line for line in done.stdout.splitlines() if line.startswith("RESULT")]
    if done.returncode != 0 or not lines:
        raise RuntimeError("the capped client failed:\n" + done.stderr[-3000:])
    _, gathered, nbytes, used, elapsed, steps, epsilon = lines[-1].split()
    result = dict(gathered=gathered, nbytes=int(nbytes), used=int(used),
                  elapsed=float(elapsed), steps=int(steps), epsilon=float(epsilon),
                  room=settings["room_mb"] * 2**20, n=settings["n"], d=settings["d"])
    log(f"memory: X {result['nbytes'] / 2**30:.2f} GiB, room {settings['room_mb']} MiB, "
        f"compute on the client: {gathered}, fit {result['elapsed']:.1f} s")
    return result


def _timed_fit(X, y, settings, max_iter, n_jobs=None):
    from sklearn_dplssgd import DPLSSGDClassifier

    model = DPLSSGDClassifier(epsilon=1.0, classes=[0, 1], batch_size=settings["batch"],
                              max_iter=max_iter, random_state=0, n_jobs=n_jobs)
    began = time.perf_counter()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        model.fit(X, y)
    return time.perf_counter() - began, model.n_steps_


# The Dask fits of the speed part: (key, label, client reaches the workers
# directly, the loop on a worker).
DASK_MODES = (
    ("dask worker loop", "Dask, the loop on a worker", False, True),
)


def run_speed(client, settings, log):
    import dask.array as da
    import distributed

    n, d, chunk = settings["n"], settings["d"], settings["chunk"]
    X_dask = da.random.RandomState(0).uniform(-1, 1, size=(n, d), chunks=(chunk, d))
    y_dask = (X_dask[:, 0] + X_dask[:, 1] > 0).astype(np.int64)
    X_dask, y_dask = client.persist([X_dask, y_dask])
    distributed.wait([X_dask, y_dask])
    rng = np.random.default_rng(0)
    X = rng.uniform(-1, 1, size=(n, d))
    y = (X[:, 0] + X[:, 1] > 0).astype(np.int64)
    # Warm both paths (kernels, the cluster's imports) before timing.
    _timed_fit(X[:4096], y[:4096], settings, 1, n_jobs=2)
    _timed_fit(X_dask[:4 * chunk], y_dask[:4 * chunk], settings, 1)
    kinds = ("memory",) + tuple(mode for mode, *_ in DASK_MODES)
    times = {f"{kind} {epochs}": [] for kind in kinds for epochs in (1, 3)}
    steps = {}
    loads = []
    as_created = client.direct_to_workers
    try:
        for _ in range(settings["repeats"]):
            # Alternated: the machine is shared, its load drifts.
            for epochs in (1, 3):
                elapsed, steps[epochs] = _timed_fit(X, y, settings, epochs, n_jobs=2)
                times[f"memory {epochs}"].append(elapsed)
                for mode, _, direct, on_worker in DASK_MODES:
                    # Read by each actor call (the client's documented setting).
                    client.direct_to_workers = direct or as_created
                    elapsed, _ = _timed_fit(X_dask, y_dask, settings, epochs)
                    times[f"{mode} {epochs}"].append(elapsed)
                loads.append(os.getloadavg()[0])
    finally:
        client.direct_to_workers = as_created
    medians = {key: float(np.median(values)) for key, values in times.items()}
    extra_steps = steps[3] - steps[1]
    step = {kind: (medians[f"{kind} 3"] - medians[f"{kind} 1"]) / extra_steps
            for kind in kinds}
    result = dict(medians=medians, step=step, steps=steps[1], loads=loads,
                  round_trips=run_round_trips(client, settings, log), **settings)
    log(f"speed: fit of one epoch in memory {medians['memory 1']:.2f} s, on Dask "
        f"{medians['dask worker loop 1']:.2f} s; a step "
        f"{1e3 * step['memory']:.2f} ms against {1e3 * step['dask worker loop']:.2f} ms")
    return result


class _SumsStandIn:
    """An actor answering a step's call at once, with messages shaped as a fit's.

    It holds ``n_partitions`` sums of shape ``(1, d + 1)``: what a worker of
    the speed part sends back, without the compute, so that a call's time is
    the round trip alone (with the thread hops of each way of answering).
    """

    def __init__(self, n_partitions, d):
        import concurrent.futures
        import threading

        self.stacked = np.zeros((n_partitions, 1, d + 1))
        self.pairs = [(np.zeros((1, d + 1)), os.urandom(16)) for _ in range(n_partitions)]
        self.thread = concurrent.futures.ThreadPoolExecutor(1)
        # A peer's sums may arrive before this worker's loop starts: kept from the start.
        self._inbox, self._arrived = {}, threading.Condition()

    def pairs_on_thread(self, params, step):
        return self.pairs

    def stacked_on_thread(self, params, step):
        return self.stacked

    async def stacked_via_own_thread(self, params, step):
        import asyncio

        return await asyncio.get_running_loop().run_in_executor(
            self.thread, lambda: self.stacked)

    async def stacked_on_loop(self, params, step):
        return self.stacked

    async def store(self, step, value):
        """Keep a peer's sums for ``step`` (a one-way message: its answer is empty)."""
        with self._arrived:
            self._inbox[step] = value
            self._arrived.notify_all()

    def exchange_from_thread(self, other, calls):
        """Ms a step of an all-reduce: this worker's sums sent to ``other``, its own awaited.

        Both workers run this at once, each sending its sums without waiting
        for an answer (the one-way message a step of a loop run on every
        worker would need) and waiting for the other's.
        """
        # Started together: both workers are in the loop before the first step is sent.
        began, sent = time.perf_counter(), []
        for step in range(calls):
            sent.append(other.store(step, self.stacked))
            with self._arrived:
                while step not in self._inbox:
                    self._arrived.wait()
                del self._inbox[step]
        elapsed = 1e3 * (time.perf_counter() - began) / calls
        for call in sent:
            call.result()
        return elapsed

    def call_other_from_thread(self, other, method, calls):
        """Ms a call from this actor's thread to ``other``'s method, as the coordinator calls."""
        params = np.zeros(self.stacked.shape[1:])
        began = time.perf_counter()
        for step in range(calls):
            getattr(other, method)(params, step).result()
        return 1e3 * (time.perf_counter() - began) / calls


# (name, client reaches the workers directly, how the calls are made, the method):
# from the step's messages of an older loop on the client (two blocking calls,
# each answered by the actor's thread with a list of (sum, token) pairs) to
# its latest, what the worker's and the client's thread hops cost, then one
# worker calling the other (a step of the loop run on a worker).
ROUND_TRIPS = (
    ("two blocking calls; the actor's thread; (sum, token) pairs (before)", False,
     "blocking", "pairs_on_thread"),
    ("two blocking calls; the actor's thread; one array", False,
     "blocking", "stacked_on_thread"),
    ("both awaited in one hop to the client's loop; the actor's thread; one array", False,
     "together", "stacked_on_thread"),
    ("the same; the worker's loop, then the holder's thread (the loop on the client)", False,
     "together", "stacked_via_own_thread"),
    ("the same, the client reaching the workers directly (direct)", True,
     "together", "stacked_via_own_thread"),
    ("the same; answered on the worker's loop, no thread hop (direct)", True,
     "together", "stacked_on_loop"),
    ("all calls in one coroutine, no thread hop a step either side (direct)", True,
     "in_loop", "stacked_on_loop"),
    ("one worker's thread calls the other worker; the worker's loop, then the holder's "
     "thread", True, "worker", "stacked_via_own_thread"),
    ("the same; answered on the worker's loop, no thread hop (the loop on a worker: now)",
     True, "worker", "stacked_on_loop"),
    ("both workers send their sums to each other at once, one-way (an all-reduce: the loop "
     "on every worker), each waiting on its thread for the other's", True, "exchange",
     "store"),
)


def run_round_trips(client, settings, log):
    """A step's round trip to both workers' actors, without compute, per way of calling.

    Returns
    -------
    list of (name, list of ms per call, one per round)
    """
    import asyncio

    workers = sorted(client.scheduler_info()["workers"])
    n_partitions = settings["n"] // settings["chunk"] // len(workers)
    actors = [client.submit(_SumsStandIn, n_partitions, settings["d"], actor=True,
                            workers=[worker], pure=False).result() for worker in workers]
    params = np.zeros((1, settings["d"] + 1))
    calls = settings["round_trip_calls"]

    async def together(method, step):
        return await asyncio.gather(*[getattr(actor, method)(params, step)
                                      for actor in actors])

    async def in_loop(method):
        for step in range(calls):
            await together(method, step)

    def timed(how, method):
        if how == "worker":
            # One call a step, from worker to worker: the client is not involved.
            return actors[0].call_other_from_thread(actors[1], method, calls).result()
        if how == "exchange":
            # Both workers at once; a step ends when the slower has the other's sums.
            both = [actors[0].exchange_from_thread(actors[1], calls),
                    actors[1].exchange_from_thread(actors[0], calls)]
            return max(call.result() for call in both)
        began = time.perf_counter()
        if how == "in_loop":
            client.sync(in_loop, method, asynchronous=False)
        for step in range(calls if how != "in_loop" else 0):
            if how == "blocking":
                futures = [getattr(actor, method)(params, step) for actor in actors]
                [future.result() for future in futures]
            else:
                client.sync(together, method, step, asynchronous=False)
        return 1e3 * (time.perf_counter() - began) / calls

    as_created = client.direct_to_workers
    results = {name: [] for name, *_ in ROUND_TRIPS}
    try:
        for _ in range(settings["repeats"]):
            # Alternated, as the fits.
            for name, direct, how, method in ROUND_TRIPS:
                client.direct_to_workers = direct or as_created
                timed(how, method)  # warm this way's connections
                results[name].append(timed(how, method))
    finally:
        client.direct_to_workers = as_created
    for name, values in results.items():
        log(f"round trip: {np.median(values):.2f} ms: {name}")
    return list(results.items())


def write_reports(out, accuracy, memory, speed, elapsed, quick, only=()):
    header = ("Generated by `python benchmarks/bench_dask.py"
              + "".join(f" --only {part}" for part in only) + "`"
              + (" --quick (a smoke run: NOT the reported figures)" if quick else "") + ". "
              f"{_data.machine_note()} at the end; {elapsed:.0f} s in all. Measured on a "
              "shared machine (other people's jobs running): times are disturbed, "
              "accuracies are not.")
    if accuracy is not None:
        lines = [
            "# fit on a Dask array: accounting and accuracy", "", header, "",
            f"A LocalCluster of 2 worker processes (1 thread each). Epsilon {EPSILON:g}, "
            "delta min(1e-5, 1/(10 n)), every other setting at its default. The training "
            f"rows in {N_CHUNKS} chunks. `in memory`: `fit` on the NumPy rows; `Dask "
            "array`: `fit` on the Dask array of the same rows (for every seed its "
            "`dp_event_` and `epsilon_` equal the in-memory fit's: checked); "
            "`Incremental`: `dask_ml.wrappers.Incremental` over the same chunks, one "
            "`partial_fit(..., disjoint_batches=True)` per chunk (10 releases, each on a "
            "tenth of the rows). Test accuracy, mean and sd over the seeds (a seed: a 75/25 "
            "split and fresh noise).", "",
            "| table | training rows | rows a chunk | mode | fits | accuracy | sd "
            "| gap to in memory | epsilon_ | steps |",
            "|---|---|---|---|---|---|---|---|---|---|",
        ]
        reference = {r["table"]: r["mean"] for r in accuracy if r["mode"] == "in memory"}
        for r in accuracy:
            lines.append(
                f"| {r['table']} | {r['n']:,} | {r['chunk']:,} | {r['mode']} | {r['seeds']} "
                f"| {r['mean']:.3f} | {r['sd']:.3f} | {reference[r['table']] - r['mean']:+.3f} "
                f"| {r['epsilon']:.3g} | {r['steps']} |")
        (out / "dask_accuracy.md").write_text("\n".join(lines) + "\n")

    if memory is not None:
        lines = [
            "# fit on a Dask array larger than the client may hold", "", header, "",
            "A client process (a subprocess) connects to a LocalCluster of 2 workers, has "
            "the workers create X with `da.random` (uniform on [-1, 1]) and y from two of "
            "its columns, warms the kernels, then caps its own address space "
            "(`resource.setrlimit(RLIMIT_AS)`) at what it uses plus the room below, and "
            "fits one epoch at epsilon 1 on X.", "",
            "| X (rows x columns, float64) | X's size | room left to the client | X / room "
            "| X.compute() on the client | fit | steps | epsilon_ |",
            "|---|---|---|---|---|---|---|---|",
            f"| {memory['n']:,} x {memory['d']} | {memory['nbytes'] / 2**30:.2f} GiB "
            f"| {memory['room'] / 2**20:.0f} MiB | {memory['nbytes'] / memory['room']:.1f}x "
            f"| {memory['gathered']} | completed in {memory['elapsed']:.1f} s "
            f"| {memory['steps']} | {memory['epsilon']:.3g} |",
        ]
        (out / "dask_memory.md").write_text("\n".join(lines) + "\n")

    if speed is not None:
        m, step = speed["medians"], speed["step"]
        lines = [
            "# fit on a Dask array: speed", "", header, "",
            f"n = {speed['n']:,}, d = {speed['d']}, binary, batch {speed['batch']:,} "
            f"({speed['steps']} steps an epoch), epsilon 1. `in memory`: `fit` on a NumPy "
            "array with `n_jobs=2`; the Dask fits: `fit` on a Dask array persisted on a "
            f"LocalCluster of 2 worker processes (1 thread each), chunks of "
            f"{speed['chunk']:,} rows. `the loop on the client` (as before, the "
            "workers' actors as now): every step is a "
            "call from the client to each worker's actor, with the client as created "
            "(`direct_to_workers` unset: through the scheduler) or told to reach the "
            "workers itself; `the loop on a worker` (now): the fit's loop runs on one "
            "worker, which computes its own partitions' sums and calls the other worker's "
            f"actor directly. Medians of {speed['repeats']} fits each, all alternated. The "
            "fit's time includes its preparation (the finite check, the rows' norms: on "
            "the workers for Dask); a step's time is (fit of 3 epochs - fit of 1 epoch) / "
            "the extra steps; the cluster's per-step overhead is the Dask step minus the "
            "in-memory step; a fit's fixed part is the fit of 1 epoch minus its steps (the "
            "preparation, the actors, the result's return). Load average (1 min) during the runs: "
            + ", ".join(f"{load:.1f}" for load in speed["loads"]) + ".", "",
            "| | fit of 1 epoch (s) | / in memory | fit of 3 epochs (s) | a step (ms) "
            "| / in memory | the cluster's per-step overhead (ms) | a fit's fixed part (s) |",
            "|---|---|---|---|---|---|---|---|",
            f"| in memory (n_jobs=2) | {m['memory 1']:.2f} | 1.00x | {m['memory 3']:.2f} "
            f"| {1e3 * step['memory']:.2f} | 1.00x | - "
            f"| {m['memory 1'] - speed['steps'] * step['memory']:.2f} |",
        ]
        for mode, label, _, _ in DASK_MODES:
            lines.append(
                f"| {label} | {m[mode + ' 1']:.2f} | {m[mode + ' 1'] / m['memory 1']:.2f}x "
                f"| {m[mode + ' 3']:.2f} | {1e3 * step[mode]:.2f} "
                f"| {step[mode] / step['memory']:.2f}x "
                f"| {1e3 * (step[mode] - step['memory']):.2f} "
                f"| {m[mode + ' 1'] - speed['steps'] * step[mode]:.2f} |")
        lines += [
            "", "## A step's round trip, without compute", "",
            "Each worker holds an actor that answers at once with the messages of a step of "
            f"the fit above ({speed['n'] // speed['chunk'] // 2} partitions' sums of "
            f"{speed['d'] + 1} values a worker); the client calls both actors (or one "
            f"worker's actor calls the other's) {speed['round_trip_calls']} times a round, "
            f"in {speed['repeats']} rounds (the ways alternated). Milliseconds a step (all "
            "its calls answered): the median of the rounds, then each round.", "",
            "| how the step's calls are made and answered | the caller reaches the workers "
            "| ms a step | rounds |",
            "|---|---|---|---|",
        ]
        for (name, values), (_, direct, how, _) in zip(speed["round_trips"], ROUND_TRIPS):
            reach = ("worker to worker" if how in ("worker", "exchange")
                     else "directly" if direct else "through the scheduler")
            lines.append(f"| {name} | {reach} "
                         f"| {np.median(values):.2f} | "
                         + ", ".join(f"{value:.2f}" for value in values) + " |")
        (out / "dask_speed.md").write_text("\n".join(lines) + "\n")


# The parts of the benchmark, each written to its own results file.
PARTS = ("accuracy", "memory", "speed")


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="a smoke run (seconds)")
    parser.add_argument("--out", type=Path, default=None)
    parser.add_argument("--only", choices=PARTS, action="append", default=None,
                        help="run and write only this part (repeatable; default: all)")
    args = parser.parse_args(argv)
    parts = set(args.only or PARTS)
    out = args.out or (Path(tempfile.mkdtemp()) if args.quick
                       else Path(__file__).resolve().parent / "results")
    out.mkdir(parents=True, exist_ok=True)
    import distributed

    def log(message):
        print(message, flush=True)

    began = time.perf_counter()
    with distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True,
                                  dashboard_address=None) as cluster, \
            distributed.Client(cluster) as client:
        accuracy = memory = speed = None
        if "accuracy" in parts:
            accuracy = run_accuracy(client, QUICK_CASES if args.quick else CASES, log,
                                    QUICK_SETTINGS if args.quick else {})
        if "memory" in parts:
            memory = run_memory(cluster, QUICK_MEMORY if args.quick else MEMORY, log)
        if "speed" in parts:
            speed = run_speed(client, QUICK_SPEED if args.quick else SPEED, log)
    write_reports(out, accuracy, memory, speed, time.perf_counter() - began, args.quick,
                  args.only or ())
    log(f"written to {out}")


if __name__ == "__main__":
    main()
