"""Check the fast PLD path against dp-accounting's own accountant.

With ``0 < q < 1`` (under both neighbouring relations), ``_accounting._epsilon``
does not call dp-accounting's ``PLDAccountant``: it builds the one-step
privacy loss distribution itself (``_subsampled_step_pld``, a vectorised
copy of dp-accounting's construction), composes it, and walks the result
with a compiled copy of dp-accounting's loop.  That is only
acceptable if it never reports a smaller epsilon than dp-accounting would.
This script compares, over a seeded grid of configurations

* z in [0.4, 20] (log-uniform, plus the ends), q in {1e-4, 1e-3, 4.27e-3,
  0.01, 0.032, 0.1, 0.5, 0.99}, T in {1, 10, 100, 1000, 20000},
  interval in {1e-2, 1e-3, 1e-4}, delta in {1e-5, 1e-8},

``_epsilon(z, delta, q, T, "pld", neighboring, interval)`` with
``PLDAccountant(relation, interval)`` composed with
``SelfComposedDpEvent(PoissonSampledDpEvent(q, GaussianDpEvent(z)), T)``,
and, for a few configurations, the one-step distributions themselves
(``_subsampled_step_pld`` against ``from_gaussian_mechanism``).  A
configuration whose dp-accounting evaluation would take more than
``--timeout`` seconds (or whose one-step grid exceeds 1.5 million points) is
skipped and counted as such.

Run from the repository root::

    python benchmarks/check_fast_pld.py           # 160 configurations, ~2-3 min
    python benchmarks/check_fast_pld.py --quick   # 20 configurations, ~20 s
    python benchmarks/check_fast_pld.py --neighboring add_remove

It prints one line per configuration and a summary table; the exit status is
1 if the library's epsilon is below dp-accounting's by more than 1e-9
relative anywhere (a soundness violation), 0 otherwise.  Since the fast path
reproduces dp-accounting's operations exactly, every epsilon should be
bit-identical; the first, all-numpy version of it was up to 2e-6 relative
below dp-accounting (42 of 320 comparisons beyond 1e-9, seed 0).
"""

import argparse
import importlib.metadata
import math
import signal
import sys
import time

import numpy as np

import dp_accounting
from dp_accounting.pld import privacy_loss_distribution as dp_pld_distribution
from dp_accounting.pld import privacy_loss_mechanism as dp_pld_mechanism

from sklearn_dplssgd import _accounting

RELATIONS = {
    "replace_one": dp_accounting.NeighboringRelation.REPLACE_ONE,
    "add_remove": dp_accounting.NeighboringRelation.ADD_OR_REMOVE_ONE,
}
QS = (1e-4, 1e-3, 4.27e-3, 0.01, 0.032, 0.1, 0.5, 0.99)
TS = (1, 10, 100, 1000, 20000)
INTERVALS = (1e-2, 1e-3, 1e-4)
DELTAS = (1e-5, 1e-8)
Z_RANGE = (0.4, 20.0)
VIOLATION_RTOL = 1e-9
MAX_GRID_POINTS = 1.5e6


class _Timeout(Exception):
    pass


def _alarm(signum, frame):
    raise _Timeout


def _one_step_points(z, q, interval):
    # The replace-one grid, the wider of the relations' (a generous bound).
    loss = dp_pld_mechanism.GaussianPrivacyLoss(
        z, sampling_prob=q, adjacency_type=dp_pld_mechanism.AdjacencyType.REPLACE)
    bounds = loss.connect_dots_bounds()
    return (bounds.epsilon_upper - bounds.epsilon_lower) / interval


def configurations(quick, seed):
    """Seeded grid: per (q, T), ``per_cell`` random (z, interval), ends included."""
    rng = np.random.default_rng(seed)
    per_cell = 1 if quick else 4
    configs = []
    cells = [(q, T) for q in QS for T in TS]
    if quick:
        cells = [cells[i] for i in rng.choice(len(cells), 20, replace=False)]
    for k, (q, T) in enumerate(cells):
        for j in range(per_cell):
            if j == 0 and not quick:
                z = Z_RANGE[k % 2]  # every cell has one end of the z range
            else:
                z = float(np.exp(rng.uniform(*np.log(Z_RANGE))))
                z = float(f"{z:.4g}")
            interval = INTERVALS[rng.integers(len(INTERVALS))]
            configs.append((z, q, T, interval))
    return configs


def dp_accounting_epsilons(z, q, T, interval, neighboring):
    accountant = dp_accounting.pld.PLDAccountant(
        neighboring_relation=RELATIONS[neighboring], value_discretization_interval=interval)
    accountant.compose(dp_accounting.SelfComposedDpEvent(
        dp_accounting.PoissonSampledDpEvent(q, dp_accounting.GaussianDpEvent(z)), T))
    return [float(accountant.get_epsilon(d)) for d in DELTAS]


def library_epsilons(z, q, T, interval, neighboring):
    return [_accounting._epsilon(z, d, q, T, "pld", neighboring, interval)
            for d in DELTAS]


def compare_one_step(z, q, interval, neighboring):
    """(bit-identical?, max |p_ours - p_theirs|, max relative) of the step PMFs.

    Under add/remove, the REMOVE and the ADD distributions both count.
    """
    ours = _accounting._subsampled_step_pld(z, q, interval, neighboring)
    theirs = dp_pld_distribution.from_gaussian_mechanism(
        z, sampling_prob=q, neighboring_relation=RELATIONS[neighboring],
        value_discretization_interval=interval)
    names = ["_pmf_remove"] if neighboring == "replace_one" else ["_pmf_remove", "_pmf_add"]
    results = [_compare_pmfs(getattr(ours, name), getattr(theirs, name)) for name in names]
    return (all(r[0] for r in results), max(r[1] for r in results),
            max(r[2] for r in results))


def _compare_pmfs(ours, theirs):
    if type(ours) is not type(theirs):
        return False, math.inf, math.inf
    ours, theirs = ours.to_dense_pmf(), theirs.to_dense_pmf()
    same_support = (ours._lower_loss == theirs._lower_loss
                    and ours._probs.shape == theirs._probs.shape)
    if not same_support:
        return False, math.inf, math.inf
    diff = np.abs(ours._probs - theirs._probs)
    identical = (np.array_equal(ours._probs, theirs._probs)
                 and ours._infinity_mass == theirs._infinity_mass)
    rel = diff / np.maximum(np.abs(theirs._probs), 1e-300)
    return identical, float(diff.max()), float(rel.max())


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--quick", action="store_true",
                        help="20 configurations instead of 160")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--neighboring", choices=sorted(RELATIONS), default="replace_one")
    parser.add_argument("--timeout", type=float, default=20.0,
                        help="skip a configuration whose evaluation takes longer (s)")
    parser.add_argument("--pmf-checks", type=int, default=None,
                        help="how many configurations also compare the one-step "
                             "PMFs (default 6, 3 with --quick)")
    args = parser.parse_args(argv)
    n_pmf = args.pmf_checks if args.pmf_checks is not None else (3 if args.quick else 6)

    print(f"sklearn_dplssgd from {_accounting.__file__}; neighboring={args.neighboring}")
    print(f"dp-accounting {importlib.metadata.version('dp-accounting')}, "
          f"numpy {np.__version__}")
    signal.signal(signal.SIGALRM, _alarm)
    configs = configurations(args.quick, args.seed)
    rows, skipped = [], []
    start = time.perf_counter()
    print(f"{'z':>7} {'q':>8} {'T':>6} {'interval':>8} {'delta':>6} "
          f"{'eps dp-accounting':>20} {'eps library':>20} {'rel diff':>10}")
    for z, q, T, interval in configs:
        points = _one_step_points(z, q, interval)
        if points > MAX_GRID_POINTS:
            skipped.append((z, q, T, interval, f"{points:.2g} grid points"))
            continue
        try:
            signal.setitimer(signal.ITIMER_REAL, args.timeout)
            t0 = time.perf_counter()
            theirs = dp_accounting_epsilons(z, q, T, interval, args.neighboring)
            t_theirs = time.perf_counter() - t0
            signal.setitimer(signal.ITIMER_REAL, args.timeout)
            t0 = time.perf_counter()
            ours = library_epsilons(z, q, T, interval, args.neighboring)
            t_ours = time.perf_counter() - t0
        except _Timeout:
            skipped.append((z, q, T, interval, f"over {args.timeout:g} s"))
            continue
        finally:
            signal.setitimer(signal.ITIMER_REAL, 0)
        _accounting._epsilon.cache_clear()
        for delta, e_theirs, e_ours in zip(DELTAS, theirs, ours):
            if e_theirs == e_ours:
                rel = 0.0
            elif math.isfinite(e_theirs) and e_theirs > 0:
                rel = (e_ours - e_theirs) / e_theirs
            else:
                rel = math.inf if e_ours > e_theirs else -math.inf
            rows.append(dict(z=z, q=q, T=T, interval=interval, delta=delta,
                             theirs=e_theirs, ours=e_ours, rel=rel,
                             t_theirs=t_theirs, t_ours=t_ours))
            flag = "  VIOLATION" if rel < -VIOLATION_RTOL else ""
            print(f"{z:7.4g} {q:8.3g} {T:6d} {interval:8.0e} {delta:6.0e} "
                  f"{e_theirs:20.15g} {e_ours:20.15g} {rel:10.2e}{flag}", flush=True)
    sweep_time = time.perf_counter() - start

    # One-step PMFs, directly (the configurations with the largest z range
    # first: small z means the widest grids and the most rounding).
    evaluated = sorted({(r["z"], r["q"], r["interval"]) for r in rows})
    pmf_rows = [(z, q, h) + compare_one_step(z, q, h, args.neighboring)
                for z, q, h in evaluated[:n_pmf]]

    n_configs = len({(r["z"], r["q"], r["T"], r["interval"]) for r in rows})
    rels = np.array([r["rel"] for r in rows]) if rows else np.zeros(0)
    violations = [r for r in rows if r["rel"] < -VIOLATION_RTOL]
    print()
    print("Summary (rel diff = (library - dp-accounting) / dp-accounting)")
    print("| quantity | value |")
    print("|---|---|")
    print(f"| configurations evaluated (x {len(DELTAS)} deltas) | {n_configs} "
          f"({len(rows)} comparisons) |")
    print(f"| configurations skipped | {len(skipped)} |")
    print(f"| bit-identical epsilons | {int(np.sum(rels == 0))} / {len(rows)} |")
    if rows:
        print(f"| max relative difference, library above | {max(rels.max(), 0.0):.3e} |")
        print(f"| max relative difference, library below | {max(-rels.min(), 0.0) + 0.0:.3e} |")
        print(f"| max absolute relative difference | {np.abs(rels).max():.3e} |")
    print(f"| violations (library below by > {VIOLATION_RTOL:g}) | {len(violations)} |")
    print(f"| dp-accounting / library time, summed | "
          f"{sum(r['t_theirs'] for r in rows[::2]):.1f} s / "
          f"{sum(r['t_ours'] for r in rows[::2]):.1f} s |")
    print(f"| sweep wall time | {sweep_time:.0f} s |")
    for r in violations:
        print(f"VIOLATION z={r['z']} q={r['q']} T={r['T']} interval={r['interval']:g} "
              f"delta={r['delta']:g}: library {r['ours']!r} < dp-accounting "
              f"{r['theirs']!r} (rel {r['rel']:.2e})")
    for z, q, T, h, why in skipped:
        print(f"skipped z={z} q={q} T={T} interval={h:g}: {why}")
    print()
    print("One-step PMFs (_subsampled_step_pld vs from_gaussian_mechanism)")
    print("| z | q | interval | bit-identical | max abs diff | max rel diff |")
    print("|---|---|---|---|---|---|")
    for z, q, h, identical, dmax, rmax in pmf_rows:
        print(f"| {z:g} | {q:g} | {h:g} | {identical} | {dmax:.2e} | {rmax:.2e} |")
    return 1 if violations else 0


if __name__ == "__main__":
    sys.exit(main())
