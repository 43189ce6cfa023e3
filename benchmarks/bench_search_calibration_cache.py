"""Does the on-disk calibration cache save time in a grid search with fresh workers?

Each search runs in a new Python process, so that its ``GridSearchCV(n_jobs=2)``
workers (joblib's loky) are fresh processes that pay their own cold noise
calibrations.  Twelve candidates of :class:`~sklearn_dplssgd.DPLSSGDClassifier`
(epsilon x batch_size x max_iter, so twelve distinct calibrations per fold size),
3-fold, on the digits table (1,797 rows, 64 features) or MNIST (10,000 rows).
Three conditions:

* ``off``: ``SKLEARN_DPLSSGD_CACHE_DIR=""`` (every worker calibrates each setting);
* ``empty``: a new, empty cache folder (a first search on this machine);
* ``filled``: the folder an earlier search filled (the cache's best case).

Then one in-process search (``n_jobs=1``, cache off) times its cold
calibrations: no cache can save a search more than that (each of the two
workers pays at most every setting once), whatever the machine's load.

Medians of ``--rounds`` rounds (the conditions interleaved), under whatever
``nice`` the caller uses.  Run from the repository root::

    nice -n 10 python benchmarks/bench_search_calibration_cache.py --data digits --rounds 3
"""

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parent.parent

_SEARCH = """
import json, sys, time, warnings
warnings.simplefilter("ignore")
t0 = time.perf_counter()
import numpy as np
from sklearn.model_selection import GridSearchCV
from sklearn_dplssgd import DPLSSGDClassifier
sys.path.insert(0, "benchmarks")
if sys.argv[1] == "digits":
    from sklearn.datasets import load_digits
    X, y = load_digits(return_X_y=True)
    X = X / 16.0
else:
    from _data import load_mnist
    X, y = load_mnist()
grid = {"epsilon": [0.5, 1.0, 2.0], "batch_size": [32, 64], "max_iter": [10, 20]}
n_jobs = int(sys.argv[2])
calibrating = [0.0]
if n_jobs == 1:
    # In-process search: time every cold calibration (the search of z), the
    # most that any cache could save a worker that meets every setting.
    from sklearn_dplssgd._accounting import _calibration
    cold = _calibration._calibrate

    def timed(*args):
        start = time.perf_counter()
        try:
            return cold(*args)
        finally:
            calibrating[0] += time.perf_counter() - start

    _calibration._calibrate = timed
search = GridSearchCV(DPLSSGDClassifier(classes=list(range(10))), grid, cv=3, n_jobs=n_jobs)
search.fit(X, y)
print(json.dumps({"wall_s": time.perf_counter() - t0, "best": search.best_score_,
                  "calibrating_s": calibrating[0]}))
"""


def run_search(data, cache_dir, n_jobs=2):
    env = dict(os.environ, SKLEARN_DPLSSGD_CACHE_DIR=cache_dir)
    env["PYTHONPATH"] = os.pathsep.join(
        [str(REPO_ROOT)] + ([env["PYTHONPATH"]] if env.get("PYTHONPATH") else []))
    result = subprocess.run([sys.executable, "-c", _SEARCH, data, str(n_jobs)], env=env,
                            cwd=REPO_ROOT, capture_output=True, text=True)
    if result.returncode != 0:
        raise RuntimeError(result.stderr[-3000:])
    return json.loads(result.stdout.strip().splitlines()[-1])


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--data", choices=("digits", "mnist"), default="digits")
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args(argv)
    times = {"off": [], "empty": [], "filled": []}
    loads = []
    for round_ in range(args.rounds):
        with tempfile.TemporaryDirectory(prefix="bench_cache_") as folder:
            for condition in ("off", "empty", "filled"):
                loads.append(os.getloadavg()[0])
                cache_dir = "" if condition == "off" else folder
                times[condition].append(run_search(args.data, cache_dir)["wall_s"])
                print(f"round {round_ + 1} {condition}: {times[condition][-1]:.2f} s "
                      f"(load {loads[-1]:.2f})", flush=True)
    # One in-process search with the cache off: its time in cold calibrations.
    serial = run_search(args.data, "", n_jobs=1)
    print(f"n_jobs=1, cache off: {serial['wall_s']:.2f} s, of which cold calibrations "
          f"{serial['calibrating_s']:.2f} s", flush=True)
    medians = {k: statistics.median(v) for k, v in times.items()}
    print(json.dumps({"data": args.data, "rounds": args.rounds, "medians_s": medians,
                      "runs_s": times, "load_1min": loads,
                      "saved_filled": 1 - medians["filled"] / medians["off"],
                      "saved_empty": 1 - medians["empty"] / medians["off"],
                      "serial_s": serial["wall_s"], "calibrating_s": serial["calibrating_s"],
                      "calibration_share": serial["calibrating_s"] / medians["off"]}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
