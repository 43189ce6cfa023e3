"""Check the calibrations against dp-accounting's PLDAccountant at a finer interval.

``calibrate_noise`` (PLD, the default) searches on coarse discretization
intervals and certifies its answer with dp-accounting's public
``PLDAccountant`` at an interval between ``epsilon / 500`` and
``epsilon / 10000`` (see ``sklearn_dplssgd._accounting._calibration``).  The PLD estimate
is pessimistic at any interval, so a finer interval should report a smaller
(or equal) epsilon for the same noise.  This script checks, over a seeded
grid of settings,

* epsilon in {0.25, 0.5, 1, 2, 4, 8}, delta in {1e-5, 1e-7},
  q in {1e-3, 4.27e-3, 0.01, 0.032, 0.1, 0.5, 1}, T in {10, 100, 1000, 5000},
  both neighbouring relations (plus the slowest default, eps 1, delta 1e-5,
  q = 256/1e6, T = 19532, replace-one, without ``--quick``),

that the epsilon the calibration reports for its ``z``, and the epsilon
``compute_epsilon(z)`` reports (its own automatic interval), are never below
``PLDAccountant(relation, value_discretization_interval=epsilon / 20000)``
at that ``z`` (twice finer than the finest interval the library uses), and
that this finer value meets the target.  A setting whose finer evaluation
takes more than ``--timeout`` seconds is skipped and counted.  Every
calibration is cold (memory cleared, disk cache off).

Run from the repository root::

    python benchmarks/check_calibration_against_pld.py           # 40 settings, ~2-4 min
    python benchmarks/check_calibration_against_pld.py --quick   # 6 settings, ~10 s

It prints one line per setting, writes ``check_calibration_against_pld.md``
to ``--out`` (default ``benchmarks/results``; ``--quick``: a temporary
folder), and exits with status 1 if a reported epsilon is below the finer
accountant's by more than 1e-9 relative, or the finer one misses the target.
"""

import argparse
import importlib.metadata
import math
import signal
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

import dp_accounting

import sklearn_dplssgd
from sklearn_dplssgd import calibrate_noise, compute_epsilon

RELATIONS = {
    "replace_one": dp_accounting.NeighboringRelation.REPLACE_ONE,
    "add_remove": dp_accounting.NeighboringRelation.ADD_OR_REMOVE_ONE,
}
EPSILONS = (0.25, 0.5, 1.0, 2.0, 4.0, 8.0)
DELTAS = (1e-5, 1e-7)
QS = (1e-3, 4.27e-3, 0.01, 0.032, 0.1, 0.5, 1.0)
TS = (10, 100, 1000, 5000)
DEFAULT_LARGEST = (1.0, 1e-5, 256 / 1e6, 19532, "replace_one")
FINER = 20000.0  # the check's interval is epsilon / FINER
VIOLATION_RTOL = 1e-9


class _Timeout(Exception):
    pass


def _alarm(signum, frame):
    raise _Timeout


def settings(quick, seed):
    """Seeded settings (epsilon, delta, q, T, neighboring)."""
    rng = np.random.default_rng(seed)
    n = 6 if quick else 40
    chosen = [(float(rng.choice(EPSILONS)), float(rng.choice(DELTAS)), float(rng.choice(QS)),
               int(rng.choice(TS)), str(rng.choice(sorted(RELATIONS)))) for _ in range(n)]
    return chosen if quick else [DEFAULT_LARGEST] + chosen


def finer_epsilon(z, epsilon, delta, q, T, neighboring):
    accountant = dp_accounting.pld.PLDAccountant(
        RELATIONS[neighboring], value_discretization_interval=epsilon / FINER)
    gaussian = dp_accounting.GaussianDpEvent(z)
    step = gaussian if q == 1.0 else dp_accounting.PoissonSampledDpEvent(q, gaussian)
    accountant.compose(dp_accounting.SelfComposedDpEvent(step, T))
    return float(accountant.get_epsilon(delta))


def _relative(ours, theirs):
    if ours == theirs:
        return 0.0
    if math.isfinite(theirs) and theirs > 0:
        return (ours - theirs) / theirs
    return math.inf if ours > theirs else -math.inf


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--quick", action="store_true", help="6 settings instead of 41")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--timeout", type=float, default=30.0,
                        help="skip a setting whose finer evaluation takes longer (s)")
    parser.add_argument("--out", type=Path, default=None, help="output folder")
    args = parser.parse_args(argv)
    out = args.out or (Path(tempfile.mkdtemp(prefix="check_calibration_")) if args.quick
                       else Path(__file__).resolve().parent / "results")
    out.mkdir(parents=True, exist_ok=True)

    header = (f"sklearn_dplssgd from {Path(sklearn_dplssgd.__file__).parent}; dp-accounting "
              f"{importlib.metadata.version('dp-accounting')}, numpy {np.__version__}")
    print(header)
    signal.signal(signal.SIGALRM, _alarm)
    rows, skipped = [], []
    start = time.perf_counter()
    for epsilon, delta, q, T, neighboring in settings(args.quick, args.seed):
        calibrate_noise.cache_clear()
        t0 = time.perf_counter()
        cal = calibrate_noise(epsilon, delta, sample_rate=q, n_steps=T, neighboring=neighboring)
        t_cal = time.perf_counter() - t0
        z = cal.noise_multiplier
        auto = compute_epsilon(z, delta, sample_rate=q, n_steps=T, neighboring=neighboring)
        try:
            signal.setitimer(signal.ITIMER_REAL, args.timeout)
            t0 = time.perf_counter()
            finer = finer_epsilon(z, epsilon, delta, q, T, neighboring)
            t_finer = time.perf_counter() - t0
        except _Timeout:
            skipped.append((epsilon, delta, q, T, neighboring, z))
            print(f"skipped eps={epsilon:g} delta={delta:g} q={q:g} T={T} {neighboring}: "
                  f"the finer evaluation takes over {args.timeout:g} s", flush=True)
            continue
        finally:
            signal.setitimer(signal.ITIMER_REAL, 0)
        row = dict(epsilon=epsilon, delta=delta, q=q, T=T, neighboring=neighboring, z=z,
                   accountant=cal.accountant, reported=cal.epsilon, auto=auto, finer=finer,
                   rel_reported=_relative(cal.epsilon, finer), rel_auto=_relative(auto, finer),
                   t_cal=t_cal, t_finer=t_finer)
        row["violation"] = (row["rel_reported"] < -VIOLATION_RTOL
                            or row["rel_auto"] < -VIOLATION_RTOL or finer > epsilon)
        rows.append(row)
        print(f"eps={epsilon:<5g} delta={delta:<6g} q={q:<8.4g} T={T:<6d} {neighboring:<12} "
              f"z={z:<10.6g} reported={cal.epsilon:.8f} finer={finer:.8f} "
              f"rel={row['rel_reported']:9.2e} auto rel={row['rel_auto']:9.2e} "
              f"({t_cal:.2f} s / {t_finer:.2f} s){'  VIOLATION' if row['violation'] else ''}",
              flush=True)
    elapsed = time.perf_counter() - start

    violations = [r for r in rows if r["violation"]]
    rel = np.array([r["rel_reported"] for r in rows]) if rows else np.zeros(1)
    rel_auto = np.array([r["rel_auto"] for r in rows]) if rows else np.zeros(1)
    lines = [
        "# Calibrations against dp-accounting's PLDAccountant at a finer interval",
        "",
        f"Generated by `python benchmarks/check_calibration_against_pld.py"
        f"{' --quick' if args.quick else ''} --seed {args.seed}` in {elapsed:.0f} s ({header}). "
        "Every calibration cold (memory cleared, disk cache off), the library's defaults (PLD, "
        "and the adjacency of the row). 'finer' is `PLDAccountant(relation, "
        "value_discretization_interval=epsilon / 20000)` at the calibrated z, twice finer than "
        "the finest interval the library uses; rel = (library - finer) / finer.",
        "",
        "| quantity | value |",
        "|---|---|",
        f"| settings evaluated | {len(rows)} |",
        f"| settings skipped (finer evaluation over {args.timeout:g} s) | {len(skipped)} |",
        f"| reported epsilon: min / median / max rel | {rel.min():.2e} / "
        f"{np.median(rel):.2e} / {rel.max():.2e} |",
        f"| compute_epsilon(z): min / median / max rel | {rel_auto.min():.2e} / "
        f"{np.median(rel_auto):.2e} / {rel_auto.max():.2e} |",
        f"| violations (below the finer value by > {VIOLATION_RTOL:g}, or finer value above "
        f"the target) | {len(violations)} |",
        "",
        "| epsilon | delta | q | T | neighboring | z | accountant | reported | finer | rel "
        "| compute_epsilon rel | calibration (s) |",
        "|---|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for r in rows:
        lines.append(
            f"| {r['epsilon']:g} | {r['delta']:g} | {r['q']:g} | {r['T']} | {r['neighboring']} "
            f"| {r['z']:.6g} | {r['accountant']} | {r['reported']:.8f} | {r['finer']:.8f} "
            f"| {r['rel_reported']:.2e} | {r['rel_auto']:.2e} | {r['t_cal']:.2f} |")
    for epsilon, delta, q, T, neighboring, z in skipped:
        lines.append(f"\nSkipped: eps={epsilon:g} delta={delta:g} q={q:g} T={T} {neighboring} "
                     f"(z = {z:.6g}).")
    path = out / "check_calibration_against_pld.md"
    path.write_text("\n".join(lines) + "\n")
    print("\n".join(lines[:12]))
    print(f"Wrote {path}")
    return 1 if violations else 0


if __name__ == "__main__":
    sys.exit(main())
