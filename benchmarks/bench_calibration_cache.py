"""Cost of a noise calibration in a new process: cold, and with the disk cache filled.

For each setting (the library's defaults, PLD and replace-one, epsilon 1,
delta 1e-5), a round runs two subprocesses on a fresh, empty cache folder
(``SKLEARN_DPLSSGD_CACHE_DIR``): the first calibrates cold (nothing on disk;
it writes the entry), the second calibrates the same setting again, as a
new session or a ``GridSearchCV(n_jobs=...)`` worker would, and reads the
entry.  Each subprocess imports the library and warms dp-accounting on
another setting first (with the disk cache off), then times the one
``calibrate_noise`` call; the import itself is reported apart.  The medians
over ``--rounds`` rounds are reported.

Run from the repository root::

    python benchmarks/bench_calibration_cache.py             # 3 settings, 5 rounds, ~1 min
    python benchmarks/bench_calibration_cache.py --quick     # 1 small setting, 1 round

Writes ``calibration_cache.md`` to ``--out`` (default ``benchmarks/results``;
``--quick``: a temporary folder).
"""

import argparse
import json
import os
import platform
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parent.parent
EPSILON, DELTA = 1.0, 1e-5
# (q, T): 20 epochs of 8,000 and of 60,000 rows, 5 epochs of a million rows
# (the slowest default), all with batches of 256.
SETTINGS = ((256 / 8000, 625), (256 / 60000, 4688), (256 / 1e6, 19532))
QUICK_SETTINGS = ((0.01, 200),)

_WORKER = """
import json, os, sys, time
t0 = time.perf_counter()
from sklearn_dplssgd import calibrate_noise
import_s = time.perf_counter() - t0
folder = os.environ["SKLEARN_DPLSSGD_CACHE_DIR"]
os.environ["SKLEARN_DPLSSGD_CACHE_DIR"] = ""  # the warm-up stays off the disk
calibrate_noise(3.0, 1e-5, sample_rate=0.01, n_steps=100)
calibrate_noise.cache_clear()
os.environ["SKLEARN_DPLSSGD_CACHE_DIR"] = folder
q, steps = float(sys.argv[1]), int(sys.argv[2])
t0 = time.perf_counter()
cal = calibrate_noise({epsilon!r}, {delta!r}, sample_rate=q, n_steps=steps)
call_s = time.perf_counter() - t0
print(json.dumps(dict(import_s=import_s, call_s=call_s, z=cal.noise_multiplier)))
"""


def run_once(folder, q, steps):
    env = dict(os.environ, SKLEARN_DPLSSGD_CACHE_DIR=str(folder))
    env["PYTHONPATH"] = os.pathsep.join(
        [str(REPO_ROOT)] + ([env["PYTHONPATH"]] if env.get("PYTHONPATH") else []))
    code = _WORKER.format(epsilon=EPSILON, delta=DELTA)
    result = subprocess.run([sys.executable, "-c", code, repr(q), str(steps)], env=env,
                            cwd=REPO_ROOT, capture_output=True, text=True)
    if result.returncode != 0:
        raise RuntimeError(result.stderr[-3000:])
    return json.loads(result.stdout.strip().splitlines()[-1])


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--rounds", type=int, default=None, help="default 5 (1 with --quick)")
    parser.add_argument("--quick", action="store_true", help="one small setting, one round")
    parser.add_argument("--out", type=Path, default=None, help="output folder")
    args = parser.parse_args(argv)
    rounds = args.rounds or (1 if args.quick else 5)
    settings = QUICK_SETTINGS if args.quick else SETTINGS
    out = args.out or (Path(tempfile.mkdtemp(prefix="bench_calibration_cache_")) if args.quick
                       else Path(__file__).resolve().parent / "results")
    out.mkdir(parents=True, exist_ok=True)

    start = time.perf_counter()
    loads = []
    runs = {setting: {"cold": [], "cached": []} for setting in settings}
    for round_ in range(rounds):
        for q, steps in settings:
            with tempfile.TemporaryDirectory(prefix="calibration_cache_") as folder:
                loads.append(" / ".join(f"{x:.2f}" for x in os.getloadavg()))
                cold = run_once(folder, q, steps)
                cached = run_once(folder, q, steps)
            if cached["z"] != cold["z"]:
                raise RuntimeError(f"the cached z {cached['z']!r} is not the computed "
                                   f"{cold['z']!r}")
            runs[q, steps]["cold"].append(cold)
            runs[q, steps]["cached"].append(cached)
            print(f"round {round_ + 1}, q = {q:.6g}, T = {steps}: cold {cold['call_s']:.3f} s, "
                  f"from disk {1e3 * cached['call_s']:.2f} ms (import {cached['import_s']:.2f} "
                  "s)", flush=True)
    elapsed = time.perf_counter() - start

    lines = [
        "# Noise calibration in a new process: cold, and from the disk cache",
        "",
        f"Produced by `python benchmarks/bench_calibration_cache.py"
        f"{' --quick' if args.quick else ''} --rounds {rounds}` in {elapsed / 60:.1f} min "
        f"(Python {platform.python_version()}, {platform.machine()}, {os.cpu_count()} cores, "
        "shared with other developers' work; load average at the start of each round: "
        f"{'; '.join(loads)}).",
        "",
        f"`calibrate_noise({EPSILON:g}, {DELTA:g}, sample_rate=q, n_steps=T)` (PLD, "
        "replace-one), timed alone in a fresh subprocess after the import and a warm-up on "
        "another setting. Cold: an empty cache folder. From disk: a second subprocess on the "
        "folder the first one filled (same z, checked). Medians over rounds.",
        "",
        "| q | T | cold (s) | from disk (ms) | import of the library (s) |",
        "|---|---|---|---|---|",
    ]
    for (q, steps), timing in runs.items():
        lines.append(
            f"| {q:.6g} | {steps} | {statistics.median(r['call_s'] for r in timing['cold']):.3f} "
            f"| {1e3 * statistics.median(r['call_s'] for r in timing['cached']):.2f} "
            f"| {statistics.median(r['import_s'] for r in timing['cached']):.2f} |")
    path = out / "calibration_cache.md"
    path.write_text("\n".join(lines) + "\n")
    print("\n".join(lines[-len(runs) - 2:]))
    print(f"Wrote {path}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
