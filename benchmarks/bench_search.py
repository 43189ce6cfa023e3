"""Private hyperparameter search: defaults alone, DPRandomizedSearch, and the non-private bound.

For each epsilon in {0.5, 1, 2} (delta = 1e-5, replace-one adjacency, the
library defaults) and two data sets, the test accuracy of:

* **defaults**: ``DPLSSGDClassifier()`` with its default hyperparameters
  (fixed settings below), trained on all training rows at epsilon;
* **DPRandomizedSearch**: the private search over ``eta0`` and ``sigma`` with
  the whole budget epsilon (its trials, its noisy scores and the selection;
  mean 10 trials, logarithmic distribution), the released best model;
* **upper bound (not private)**: the same grid, each candidate trained on all
  training rows at epsilon, the best chosen on the TEST set. Selecting on the
  test set is not private and is optimistic: it is the ceiling of any tuning.

Data: the real MNIST digits (8,000 train / 2,000 test, pixels / 255; see
``_data.py``) and scikit-learn's breast-cancer table (75 / 25 split,
features scaled to [-1, 1] by :class:`BoundedScaler` with bounds 0 and 1.2
times each feature's maximum over the whole table, standing in for bounds a
user would take from the data's documentation). Everything not searched is
the estimator's default (``--quick`` trains MNIST for 5 epochs). Each
configuration is repeated 3 times (fresh noise: the fits are private, not
seeded) and the median, min and max are reported.

Run from the repository root::

    python benchmarks/bench_search.py            # full run (~10 min on 2 cores)
    python benchmarks/bench_search.py --quick    # a smoke run on a subset

Writes ``search.md`` to ``--out`` (default ``benchmarks/results``).
"""

import argparse
import sys
import tempfile
import time
import warnings
from pathlib import Path

import numpy as np
from sklearn.base import clone
from sklearn.datasets import load_breast_cancer
from sklearn.model_selection import train_test_split
from sklearn.pipeline import make_pipeline

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _data import machine_note, mnist_available, mnist_split  # noqa: E402

from sklearn_dplssgd import (  # noqa: E402
    BoundedScaler, DPLSSGDClassifier, DPRandomizedSearch, PrivacyLeakWarning,
)

EPSILONS = (0.5, 1.0, 2.0)
DELTA = 1e-5
ETA0_GRID = (0.03, 0.1, 0.3, 1.0, 3.0)
SIGMA_GRID = (0.0, 1.0, 3.0)
DEFAULT_ETA0 = DPLSSGDClassifier().eta0
DEFAULT_SIGMA = DPLSSGDClassifier().sigma


def _datasets(quick):
    X, y = load_breast_cancer(return_X_y=True)
    upper = 1.2 * X.max(axis=0)
    X_train, X_test, y_train, y_test = train_test_split(
        X, y, test_size=0.25, random_state=0, stratify=y)
    data = [("breast cancer", make_pipeline(
        BoundedScaler(lower=0.0, upper=upper),
        DPLSSGDClassifier(classes=[0, 1])),
        X_train, y_train, X_test, y_test)]
    if mnist_available():
        split = mnist_split()
        n_train = 2000 if quick else len(split["y_train"])
        data.append(("MNIST digits", make_pipeline(DPLSSGDClassifier(
            classes=list(range(10)), **({"max_iter": 5} if quick else {}))),
            split["X_train"][:n_train], split["y_train"][:n_train],
            split["X_test"], split["y_test"]))
    return data


def _prefix(pipeline):
    return pipeline.steps[-1][0] + "__"


def _run(name, pipeline, X_train, y_train, X_test, y_test, epsilon, repeats, rows, quick):
    prefix = _prefix(pipeline)
    grid = {prefix + "eta0": list(ETA0_GRID), prefix + "sigma": list(SIGMA_GRID)}
    started = time.perf_counter()
    pipeline = clone(pipeline).set_params(**{prefix + "epsilon": epsilon})
    defaults = [clone(pipeline).fit(X_train, y_train).score(X_test, y_test)
                for _ in range(repeats)]
    searched, chosen = [], []
    for _ in range(repeats):
        search = DPRandomizedSearch(pipeline, grid, epsilon=epsilon, delta=DELTA,
                                    n_trials=3 if quick else 10, n_jobs=2)
        search.fit(X_train, y_train)
        searched.append(search.score(X_test, y_test))
        chosen.append(search.best_params_)
        assert abs(search.epsilon_ - epsilon) < 1e-3 * epsilon, search.epsilon_
    bound = []
    for _ in range(repeats):
        best = -np.inf
        for eta0 in ETA0_GRID:
            for sigma in SIGMA_GRID:
                model = clone(pipeline).set_params(**{prefix + "eta0": eta0,
                                                      prefix + "sigma": sigma})
                best = max(best, model.fit(X_train, y_train).score(X_test, y_test))
        bound.append(best)
    rows.append((name, epsilon, defaults, searched, bound, chosen,
                 search.noise_multiplier_, search.score_noise_multiplier_,
                 time.perf_counter() - started))
    print(f"{name} eps={epsilon}: defaults {np.median(defaults):.4f} search "
          f"{np.median(searched):.4f} bound {np.median(bound):.4f} "
          f"({time.perf_counter() - started:.0f} s)", flush=True)


def _cell(values):
    return f"{np.median(values):.4f} ({min(values):.3f}-{max(values):.3f})"


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="a smoke run on a subset")
    parser.add_argument("--out", type=Path, default=None, help="folder of search.md")
    args = parser.parse_args(argv)
    out = args.out or (Path(tempfile.mkdtemp()) if args.quick else
                       Path(__file__).resolve().parent / "results")
    out.mkdir(parents=True, exist_ok=True)
    repeats = 1 if args.quick else 3
    epsilons = EPSILONS[1:2] if args.quick else EPSILONS
    warnings.simplefilter("ignore", PrivacyLeakWarning)
    started = time.perf_counter()
    note = machine_note()
    rows = []
    for name, pipeline, X_train, y_train, X_test, y_test in _datasets(args.quick):
        for epsilon in epsilons:
            _run(name, pipeline, X_train, y_train, X_test, y_test, epsilon, repeats, rows,
                 args.quick)
    lines = [
        "# Private hyperparameter search",
        "",
        f"Generated by `python benchmarks/bench_search.py{' --quick' if args.quick else ''}`"
        f" in {(time.perf_counter() - started) / 60:.1f} min; {note}.",
        "",
        "Test accuracy, median (min-max) over "
        f"{repeats} repeat{'s' if repeats > 1 else ''} with fresh noise; delta = 1e-5, "
        "replace-one adjacency. Grid searched: eta0 in "
        f"{list(ETA0_GRID)}, sigma in {list(SIGMA_GRID)}. The search spends the "
        "whole epsilon on its trials (each trains on about 80 % of the rows) and "
        "noisy scores (on the other 20 %); the defaults and the upper bound spend "
        "epsilon on one fit each.",
        "",
        f"| data | epsilon | defaults (eta0={DEFAULT_ETA0}, sigma={DEFAULT_SIGMA}) | "
        "DPRandomizedSearch, whole "
        "budget | upper bound: grid tuned on the TEST set (not private) | search's "
        "training / score noise multipliers | chosen (eta0, sigma) |",
        "|---|---|---|---|---|---|---|",
    ]
    for name, epsilon, defaults, searched, bound, chosen, z, z_score, _ in rows:
        picks = ", ".join(
            f"({p[next(k for k in p if k.endswith('eta0'))]:g}, "
            f"{p[next(k for k in p if k.endswith('sigma'))]:g})" for p in chosen)
        lines.append(f"| {name} | {epsilon:g} | {_cell(defaults)} | {_cell(searched)} | "
                     f"{_cell(bound)} | {z:.2f} / {z_score:.1f} | {picks} |")
    lines += [
        "",
        "How to read it: the upper bound is what a user who could tune for free "
        "would get; the search pays for its tuning with more training noise (its "
        "trials run at the search's noise multiplier above, against one fit's at "
        "the same epsilon) and with noisy scores. Run `python "
        "benchmarks/bench_search.py` to reproduce.",
    ]
    (out / "search.md").write_text("\n".join(lines) + "\n")
    print(f"wrote {out / 'search.md'}")


if __name__ == "__main__":
    main()
