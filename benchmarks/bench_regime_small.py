"""Small tables: batch rules for ``batch_size="auto"`` against the tuned setting.

The cells of ``bench_regime_heldout.py``'s map with at most ``MAX_ROWS``
training rows (the map's misses are small tables whose validation-tuned
setting is the small-batch schedule), at replace-one epsilon 1, on the same
held-out test splits and noise draws (4 splits x 4 draws, seeds from 700):

* ``today``: every ``"auto"`` left alone;
* each of ``CANDIDATES``: ``batch_size`` and ``max_iter`` from a candidate
  rule (a function of the public row count only), ``eta0`` and everything
  else ``"auto"`` (so the step leaves the rule's accumulated weight noise
  for the candidate's own calibration).

The tuned scores are ``regime_heldout.json``'s (the same splits and draws).
The candidates are judged as ``bench_regime_heldout.py`` judges the step
rule: the cells are divided into two halves by table (alternately, in the
map's order), the rule that loses least against tuned on one half (mean
shortfall, then misses of more than 2 points) is chosen there and reported
on the other, both ways round.

``--large-sample`` adds the control: the tables today's rule trains on full
batches (iris, wine, the 150-row synthetic table), full batches against
16-row batches on 10 fresh splits x 20 fresh noise draws, paired. Both leave
the same noise on the weights over the same steps (the accounting fixes
``q sqrt(T) / z``), so a difference on the map's 4 splits that this control
does not repeat is the noise of those splits and draws. Run from the
repository root, at one thread::

    PYTHONPATH=. NUMBA_NUM_THREADS=1 python benchmarks/bench_regime_small.py --draws 8 \\
        --large-sample --candidates today "16 rows" n/8 n/32 "grid small batch"
    PYTHONPATH=. python benchmarks/bench_regime_small.py --quick     # seconds

Writes ``regime_small.md`` to ``--out`` (default ``benchmarks/results``;
``--quick``: a temporary folder).
"""

import argparse
import json
import math
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
import _data  # noqa: E402
from bench_regime_heldout import (  # noqa: E402
    MISS, SEED_BASE, Tables, _fit, _loss, cross_fit)

MAX_ROWS = 1500
RESULTS = Path(__file__).resolve().parent / "results"


def _today(n_rows):
    return {}


def _fixed_batch(rows):
    """A batch of ``rows`` rows (at most n), at least 1,000 steps."""
    def rule(n_rows):
        return {"batch_size": min(n_rows, rows)}
    return rule


def _grid_small(n_rows):
    """``bench_regime.py``'s small-batch schedule: ``max(16, n / 64)`` rows, 20 epochs."""
    return {"batch_size": min(n_rows, max(16, math.ceil(n_rows / 64))), "max_iter": 20}


def _share(share):
    """``share`` of the rows a batch (at least 16), at least 1,000 steps."""
    def rule(n_rows):
        return {"batch_size": min(n_rows, max(16, math.ceil(n_rows * share)))}
    return rule


CANDIDATES = {"today": _today, "16 rows": _fixed_batch(16), "64 rows": _fixed_batch(64),
              "n/8": _share(1 / 8), "n/32": _share(1 / 32), "grid small batch": _grid_small}


def run_cell(tables, name, scaling, epsilon, splits, draws, candidates):
    scores = {key: [] for key in candidates}
    for split in range(splits):
        X_train, X_test, y_train, y_test = tables.load(name, scaling, SEED_BASE + split)
        n_classes = int(max(y_train.max() + 1, 2))
        for draw in range(draws):
            seed = SEED_BASE + 100 * split + draw
            for key, rule in candidates.items():
                scores[key].append(_fit(X_train, y_train, X_test, y_test, n_classes, epsilon,
                                        seed, **rule(len(y_train)))[0])
    return scores


# --large-sample: the tables today's rule trains on full batches, on fresh
# splits and draws none of the map's other figures use.
LARGE_SAMPLE_TABLES = ("iris", "wine", "linear 200x4 K2")
LARGE_SAMPLE_SEEDS = (2000, 5000)  # split seeds, noise seeds


def large_sample(splits, draws):
    """Full batches against 16-row batches at equal W and T, paired by split and seed.

    Both fits resolve ``eta0`` from their own calibration, so they leave the
    same accumulated noise on the weights over the same number of steps; the
    accounting depends on ``q sqrt(T) / z`` only, so theory expects no
    difference beyond the gradient's sampling noise.
    """
    tables = Tables(None)
    lines = ["", "## Full batches against 16-row batches, many fits", "",
             f"{splits} fresh splits (seeds from {LARGE_SAMPLE_SEEDS[0]}) x {draws} noise draws "
             f"(seeds from {LARGE_SAMPLE_SEEDS[1]}), replace-one epsilon 1; every other setting "
             "`\"auto\"`. Difference: 16 rows less full batch, paired by split and seed, "
             "with its standard error.", "",
             "| table | features | n | full batch | 16 rows | difference | s.e. |",
             "|---|---|---|---|---|---|---|"]
    for name in LARGE_SAMPLE_TABLES:
        for scaling in ("[-1, 1]", "[0, 1]"):
            full, small = [], []
            for split in range(splits):
                X_train, X_test, y_train, y_test = tables.load(
                    name, scaling, LARGE_SAMPLE_SEEDS[0] + split)
                n_classes = int(max(y_train.max() + 1, 2))
                for draw in range(draws):
                    seed = LARGE_SAMPLE_SEEDS[1] + 100 * split + draw
                    for scores, batch in ((full, len(y_train)), (small, 16)):
                        scores.append(_fit(X_train, y_train, X_test, y_test, n_classes, 1.0,
                                           seed, batch_size=batch)[0])
            difference = np.array(small) - np.array(full)
            se = difference.std(ddof=1) / math.sqrt(difference.size)
            lines.append(f"| {name} | {scaling} | {len(y_train)} | {np.mean(full):.3f} | "
                         f"{np.mean(small):.3f} | {difference.mean():+.3f} | {se:.3f} |")
            print(lines[-1], flush=True)
    return lines


def heldout_gap_errors(heldout):
    """Each held-out cell's gap (defaults less tuned) with its standard error, from the JSON.

    Both columns are 16 fits on the same splits and seeds; the standard error
    is that of the paired differences' mean (it counts both columns' noise).
    """
    lines = ["", "## The held-out map's gaps and their standard errors", "",
             "From `regime_heldout.json` (16 fits a column, paired by split and seed): the "
             "cells more than 2 points below tuned or with a gap beyond 2 standard errors.", "",
             "| table | features | n | defaults - tuned | s.e. |", "|---|---|---|---|---|"]
    for (name, scaling), cell in heldout.items():
        gaps = (np.array(cell["scores"]["defaults"]) - np.array(cell["scores"]["tuned"]))
        se = gaps.std(ddof=1) / math.sqrt(gaps.size)
        if gaps.mean() < -MISS or abs(gaps.mean()) > max(2 * se, 0.001):
            lines.append(f"| {name} | {scaling} | {cell['n_train']} | {gaps.mean():+.3f} | "
                         f"{se:.3f} |")
    return lines


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--splits", type=int, default=4)
    parser.add_argument("--draws", type=int, default=4)
    parser.add_argument("--max-rows", type=int, default=MAX_ROWS)
    parser.add_argument("--large-sample", action="store_true",
                        help="also full batches against 16-row batches, 10 splits x 20 draws")
    parser.add_argument("--candidates", nargs="+", default=list(CANDIDATES),
                        choices=list(CANDIDATES))
    parser.add_argument("--adult-dir", default=None)
    parser.add_argument("--out", type=Path, default=None)
    args = parser.parse_args(argv)
    out = args.out or (Path(tempfile.mkdtemp()) if args.quick else RESULTS)
    out.mkdir(parents=True, exist_ok=True)
    splits, draws = (1, 1) if args.quick else (args.splits, args.draws)
    heldout = {(c["table"], c["scaling"]): c
               for c in json.loads((RESULTS / "regime_heldout.json").read_text())}
    tables = Tables(args.adult_dir)
    names = [key for key in heldout if heldout[key]["n_train"] <= args.max_rows
             and (tables.adult or not key[0].startswith("adult"))]
    candidates = {key: CANDIDATES[key] for key in args.candidates}
    if args.quick:
        names = names[:2]
    started = time.time()
    cells = []
    for name, scaling in names:
        reference = heldout[name, scaling]
        scores = run_cell(tables, name, scaling, reference["epsilon"], splits, draws,
                          candidates)
        # The held-out map's tuned fits (same splits and draws) as a column.
        scores["tuned"] = reference["scores"]["tuned"]
        cells.append({"table": name, "scaling": scaling, "n_train": reference["n_train"],
                      "d": reference["d"], "scores": scores, "best": reference["best"]})
        print(name, scaling, {k: round(float(np.mean(v)), 3) for k, v in scores.items()},
              flush=True)
    command = ("PYTHONPATH=. NUMBA_NUM_THREADS=1 python benchmarks/bench_regime_small.py "
               + " ".join(argv if argv is not None else sys.argv[1:]))
    keys = list(candidates)
    lines = ["# Small tables: batch rules for batch_size=\"auto\"", "",
             f"Generated by `{command}`. {_data.machine_note()} (a shared machine; accuracies "
             f"do not depend on the load); the screen {time.time() - started:.0f} s.", "",
             f"The held-out map's cells of at most {MAX_ROWS} training rows (Adult aside), "
             f"replace-one epsilon 1, {splits} test splits x {draws} noise draws (the held-out "
             "map's seeds); tuned: `regime_heldout.json`'s, same splits and draws. Each "
             "candidate sets `batch_size` (and `max_iter` where said) from the row count; "
             "every other setting `\"auto\"`. Miss: more than 2 points below tuned.", "",
             "| table | features | n | d | tuned (grid) | " + " | ".join(keys) + " |",
             "|---|---|---|---|---|" + "---|" * len(keys)]
    for c in cells:
        lines.append(f"| {c['table']} | {c['scaling']} | {c['n_train']} | {c['d']} | "
                     f"{np.mean(c['scores']['tuned']):.3f} ({c['best'][0]}, W {c['best'][1]:g}) | "
                     + " | ".join(f"{np.mean(c['scores'][k]):.3f}" for k in keys) + " |")
    lines += ["", "| rule | mean shortfall against tuned | misses | mean accuracy |",
              "|---|---|---|---|"]
    for k in keys:
        shortfall, misses = _loss(cells, k)
        lines.append(f"| {k} | {shortfall:+.4f} | {misses} of {len(cells)} | "
                     f"{np.mean([np.mean(c['scores'][k]) for c in cells]):.4f} |")
    halves, rows = cross_fit(cells, keys, "today")
    lines += ["", "Fitted on one half, reported on the other: "
              + "; ".join(f"half {h}: " + ", ".join(sorted(halves[h])) for h in (0, 1)), "",
              "| fitted on | chosen | reported half: shortfall, misses | today there |",
              "|---|---|---|---|"]
    for fit_half, chosen, (loss, misses), (today, today_misses), n_cells in rows:
        lines.append(f"| half {fit_half} | {chosen} | {loss:+.4f}, {misses} of {n_cells} | "
                     f"{today:+.4f}, {today_misses} of {n_cells} |")
    lines += heldout_gap_errors(heldout)
    if args.large_sample:
        lines += large_sample(*((1, 2) if args.quick else (10, 20)))
    path = out / "regime_small.md"
    path.write_text("\n".join(lines) + "\n")
    print(f"wrote {path}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
