"""Smoothing by the columns' layout: a dense one-hot table, the rule before and after.

Issue 45 found the classifier's ``sigma="auto"`` smoothing a dense one-hot
table (the rule read "dense, at least 100 columns" as "ordered columns") and
predicting the majority class. This script measures the issue's cell: **UCI
Adult, 2,500 training rows**, its 8 categorical fields one-hot encoded with
the 99 categories of the data set's documentation (the values of
``adult.data`` but ``?``) and its 6 numeric columns scaled to ``[0, 1]`` by
the ranges ``adult.names`` states (105 dense columns), replace-one epsilon
0.5 and 1, scored on 4,000 rows of ``adult.test``. Each cell is 16 fits:
4 splits (the 2,500 training rows and the 4,000 test rows drawn afresh) times
4 noise draws, with every other hyperparameter left at ``"auto"``:

* ``auto, DataFrame``: the table as a ColumnTransformer passes it with
  ``set_output(transform="pandas")`` (one-hot names such as
  ``cat__sex_Male``): the rule reads the names;
* ``auto, array``: the same columns as a NumPy array (no names, not an
  image's width);
* ``sigma=1``: what ``"auto"`` chose before (dense, at least 100 columns);
* ``sigma=0``.

Then, on seeds none of the rules were fitted on (split and noise seeds from
500), what the change costs where ``"auto"`` used to smooth lightly:

* **the regime map's tables whose ``sigma_`` changed** (``bench_regime.py``'s
  tables of 10 to 99 columns that are not an image's width: sigma 0.25
  before, 0 now), features in ``[-1, 1]`` and ``[0, 1]`` by public bounds,
  replace-one epsilon 1, 16 fits a cell (4 splits x 4 noise draws);
* **Adult at 500, 1,000, 2,500 and 5,000 rows** (epsilon 1): the defaults
  against the best of ``bench_regime.py``'s grid chosen on validation
  splits, and against a step from the table's public structure (the row
  norm of 8 one-hot fields and 6 features in ``[0, 1]``, not its width);
* **the regressor on diabetes** (10 columns, features scaled by the public
  +-0.2, ``target_bounds=(0, 400)`` as in ``bench_defaults.py``): sigma 1
  before, 0 now, replace-one epsilon 1 and 3, 16 splits.

The files are read from ``--adult-dir`` (never copied into the repository);
without them the script says so and writes no figures. Run from the
repository root::

    NUMBA_NUM_THREADS=1 python benchmarks/bench_layout.py --adult-dir PATH   # ~5 min
    python benchmarks/bench_layout.py --quick --adult-dir PATH              # seconds

Writes ``regime_layout.md`` to ``--out`` (default ``benchmarks/results``;
``--quick`` defaults to a temporary folder).
"""

import argparse
import os
import sys
import tempfile
import time
import warnings
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from bench_dp_preprocessing import (  # noqa: E402
    ADULT_BOUNDS, ADULT_NUMERIC, DEFAULT_ADULT_DIR, load_adult,
)
from bench_regime import GRID, fit_score, grid_settings, load_table, run_cell  # noqa: E402

REPO_ROOT = Path(__file__).resolve().parent.parent
TRAIN_ROWS, TEST_ROWS = 2500, 4000
EPSILONS = (0.5, 1.0)
VARIANTS = ("auto, DataFrame", "auto, array", "sigma=1", "sigma=0")
# The map's tables whose sigma_ changed: 10 to 99 columns, not an image's width.
CHANGED_TABLES = ("wine", "breast_cancer", "linear 800x16 K3", "linear 12000x16 K2",
                  "non-linear 6000x32 K3", "heavy tails 1000x30 K2", "imbalanced 4000x20 K2")
HELD_OUT_SEED = 500
# Adult at other sizes, against validation-tuned settings (replace-one epsilon 1).
ADULT_SIZES = (500, 1000, 2500, 5000)
ADULT_FIELDS = 8  # one-hot fields: each row has one 1 in each (or none: unknown value)


def adult_sizes(train, test, categorical, categories, splits, seeds, quick):
    """Defaults, tuned and the one-hot structure's step on Adult at several sizes."""
    from sklearn.model_selection import train_test_split
    lines = ["", "## UCI Adult at 500 to 5,000 rows against tuned settings (epsilon 1)", "",
             "Tuned: the best of `bench_regime.py`'s grid (2 schedules x 5 step sizes) by "
             "the mean validation accuracy of 2 splits (80/20 of the training rows; split "
             "seeds 900, 901, not among the test splits), refitted on all training rows. "
             "Structure: the defaults with `eta0` scaled by `sqrt(d / 14)`, the step the "
             "width rule would give a table whose rows have squared norm at most 14 (8 "
             "one-hot fields and 6 features in [0, 1]) instead of d = 105.", "",
             "| n | defaults | tuned | structure | defaults - tuned | worst split (defaults) |",
             "|---|---|---|---|---|---|"]
    for n_rows in (ADULT_SIZES[:1] if quick else ADULT_SIZES):
        validation = np.zeros(len(GRID))
        for split in (900, 901):
            X, y = _cell_table(train, test, split, categorical, categories, n_rows)[:2]
            X_fit, X_val, y_fit, y_val = train_test_split(
                X.to_numpy(), y, test_size=0.2, random_state=split, stratify=y)
            for i, setting in enumerate(GRID):
                settings = grid_settings(*setting, len(y_fit), 1.0, "replace_one")
                validation[i] += fit_score(X_fit, y_fit, X_val, y_val, 2, "replace_one", 1.0,
                                           split, **settings)[0] / 2
        best = GRID[int(np.argmax(validation))]
        scores = {"defaults": [], "tuned": [], "structure": []}
        by_split = []
        for split in range(splits):
            X, y, X_test, y_test = (part.to_numpy() if hasattr(part, "to_numpy") else part
                                    for part in _cell_table(train, test, split, categorical,
                                                            categories, n_rows))
            split_scores = []
            for seed in range(seeds):
                seed = HELD_OUT_SEED + 100 * split + seed
                score, model = fit_score(X, y, X_test, y_test, 2, "replace_one", 1.0, seed)
                scores["defaults"].append(score)
                split_scores.append(score)
                settings = grid_settings(*best, len(y), 1.0, "replace_one")
                scores["tuned"].append(fit_score(X, y, X_test, y_test, 2, "replace_one", 1.0,
                                                 seed, **settings)[0])
                structure = model.eta0_ * np.sqrt(X.shape[1] / (ADULT_FIELDS + 6))
                scores["structure"].append(fit_score(X, y, X_test, y_test, 2, "replace_one",
                                                     1.0, seed, eta0=structure)[0])
            by_split.append(np.mean(split_scores))
        gap = np.mean(scores["defaults"]) - np.mean(scores["tuned"])
        lines.append(f"| {n_rows} | {_mean_se(scores['defaults'])} | "
                     f"{_mean_se(scores['tuned'])} ({best[0]}, W {best[1]:g}) | "
                     f"{_mean_se(scores['structure'])} | {gap:+.3f} | {min(by_split):.3f} |")
    return lines


def _mean_se(values):
    values = np.asarray(values, dtype=float)
    se = values.std(ddof=1) / np.sqrt(values.size) if values.size > 1 else float("nan")
    return f"{values.mean():.3f} ± {se:.3f}"


def changed_tables(splits, seeds, quick):
    """Test accuracy with sigma 0.25 (the rule before) and "auto" (0), alternated."""
    lines = ["", "## The regime map's tables whose sigma_ changed (replace-one epsilon 1)", "",
             "| table | scaling | d | sigma=0.25 (before) | auto (sigma_ 0) | difference |",
             "|---|---|---|---|---|---|"]
    tables = CHANGED_TABLES[:1] if quick else CHANGED_TABLES
    for name in tables:
        for scaling in ("[-1, 1]", "[0, 1]"):
            scores = {0.25: [], "auto": []}
            for split in range(splits):
                X_train, X_test, y_train, y_test = load_table(
                    name, HELD_OUT_SEED + split, scaling)
                n_classes = int(max(y_train.max() + 1, 2))
                for seed in range(seeds):
                    for sigma in scores:
                        score, model = fit_score(
                            X_train, y_train, X_test, y_test, n_classes, "replace_one", 1.0,
                            HELD_OUT_SEED + 100 * split + seed, sigma=sigma)
                        scores[sigma].append(score)
            difference = np.mean(scores["auto"]) - np.mean(scores[0.25])
            lines.append(f"| {name} | {scaling} | {X_train.shape[1]} | {_mean_se(scores[0.25])} "
                         f"| {_mean_se(scores['auto'])} | {difference:+.3f} |")
    return lines


def changed_against_tuned(n_seeds, quick):
    """The changed cells' defaults against validation-tuned settings, on held-out seeds."""
    lines = ["", "## The same cells against tuned settings (replace-one epsilon 1)", "",
             f"`bench_regime.py`'s `run_cell` with its grid and validation seeds, scored on "
             f"{n_seeds} held-out splits (seeds from {HELD_OUT_SEED}, one fit each; the map "
             "was fitted on seeds 0 to 3).", "",
             "| table | scaling | defaults | tuned | defaults - tuned |", "|---|---|---|---|---|"]
    for name in (CHANGED_TABLES[:1] if quick else CHANGED_TABLES):
        for scaling in ("[-1, 1]", "[0, 1]"):
            cell = run_cell(name, scaling, "replace_one", 1.0, (100, 101),
                            tuple(range(HELD_OUT_SEED, HELD_OUT_SEED + n_seeds)), GRID)
            lines.append(f"| {name} | {scaling} | {cell['defaults']:.3f} | {cell['tuned']:.3f} "
                         f"| {cell['defaults'] - cell['tuned']:+.3f} |")
    return lines


def diabetes_regressor(splits, quick):
    """Test R2 of the regressor with sigma 1 (the rule before) and "auto" (0)."""
    from sklearn.datasets import load_diabetes
    from sklearn.model_selection import train_test_split
    from sklearn_dplssgd import BoundedScaler, DPLSSGDRegressor
    X, y = load_diabetes(return_X_y=True)
    X = BoundedScaler(lower=-0.2, upper=0.2).fit_transform(X)
    lines = ["", "## The regressor on diabetes (10 columns)", "",
             "| epsilon | sigma=1 (before) | auto (sigma_ 0) | difference |", "|---|---|---|---|"]
    for epsilon in ((1.0,) if quick else (1.0, 3.0)):
        scores = {1.0: [], "auto": []}
        for split in range(splits):
            X_train, X_test, y_train, y_test = train_test_split(
                X, y, test_size=0.25, random_state=HELD_OUT_SEED + split)
            for sigma in scores:
                model = DPLSSGDRegressor(epsilon=epsilon, sigma=sigma, target_bounds=(0, 400),
                                         random_state=HELD_OUT_SEED + split, reproducible=True)
                scores[sigma].append(model.fit(X_train, y_train).score(X_test, y_test))
        difference = np.mean(scores["auto"]) - np.mean(scores[1.0])
        lines.append(f"| {epsilon:g} | {_mean_se(scores[1.0])} | {_mean_se(scores['auto'])} "
                     f"| {difference:+.3f} |")
    return lines


def _encoder(categorical, categories):
    from sklearn.compose import ColumnTransformer
    from sklearn.preprocessing import OneHotEncoder
    from sklearn_dplssgd import BoundedScaler
    return ColumnTransformer([
        ("cat", OneHotEncoder(categories=categories, handle_unknown="ignore",
                              sparse_output=False), categorical),
        # [0, 1] from the documented ranges: BoundedScaler maps to [-1, 1].
        ("num", BoundedScaler(*ADULT_BOUNDS), ADULT_NUMERIC),
    ]).set_output(transform="pandas")


def _cell_table(train, test, split, categorical, categories, n_rows=TRAIN_ROWS):
    rng = np.random.default_rng(1000 + split)
    rows = rng.choice(len(train[1]), n_rows, replace=False)
    test_rows = rng.choice(len(test[1]), TEST_ROWS, replace=False)
    encoder = _encoder(categorical, categories).fit(train[0].iloc[rows])
    numeric = [f"num__{name}" for name in ADULT_NUMERIC]

    def encode(frame):
        X = encoder.transform(frame)
        X[numeric] = (X[numeric] + 1.0) / 2.0  # [-1, 1] -> [0, 1]
        return X

    return (encode(train[0].iloc[rows]), train[1][rows],
            encode(test[0].iloc[test_rows]), test[1][test_rows])


def _fit_score(variant, epsilon, seed, table):
    from sklearn_dplssgd import DPLSSGDClassifier
    X_train, y_train, X_test, y_test = table
    sigma = {"sigma=1": 1.0, "sigma=0": 0.0}.get(variant, "auto")
    if variant != "auto, DataFrame":
        X_train, X_test = X_train.to_numpy(), X_test.to_numpy()
    model = DPLSSGDClassifier(epsilon=epsilon, sigma=sigma, classes=[0, 1],
                              random_state=seed, reproducible=True)
    model.fit(X_train, y_train)
    return model.score(X_test, y_test), model.sigma_


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--adult-dir", default=str(DEFAULT_ADULT_DIR))
    parser.add_argument("--splits", type=int, default=4)
    parser.add_argument("--seeds", type=int, default=4)
    parser.add_argument("--quick", action="store_true", help="a smoke run (seconds)")
    parser.add_argument("--out", default=None)
    args = parser.parse_args(argv)
    if args.quick:
        args.splits, args.seeds = 1, 1
    out = Path(args.out) if args.out else (
        Path(tempfile.mkdtemp()) if args.quick else REPO_ROOT / "benchmarks" / "results")
    out.mkdir(parents=True, exist_ok=True)
    warnings.simplefilter("ignore")  # reproducible=True's warning, once per fit
    lines = [
        "# Smoothing by the columns' layout: a dense one-hot table, the rule before and after",
        "",
        f"Generated by `benchmarks/bench_layout.py` (`--splits {args.splits} --seeds "
        f"{args.seeds}`{' --quick' if args.quick else ''}). Mean ± standard error over "
        f"{args.splits} splits x {args.seeds} noise draws (fits with `reproducible=True`: "
        "the noise of the private fit, reported epsilon inf); replace-one epsilon as "
        "shown, every hyperparameter but sigma `\"auto\"`. `sigma_` is the value the fits "
        "used.",
        "",
    ]
    started = time.perf_counter()
    lines += ["## UCI Adult, 2,500 rows: 99 one-hot + 6 numeric columns", ""]
    lines += adult_cell(args)
    lines += changed_tables(args.splits, args.seeds, args.quick)
    lines += changed_against_tuned(args.splits * args.seeds, args.quick)
    lines += diabetes_regressor(args.splits * args.seeds, args.quick)
    lines += ["", f"{time.perf_counter() - started:.0f} s with "
              f"NUMBA_NUM_THREADS={os.environ.get('NUMBA_NUM_THREADS', 'unset')} (accuracy "
              "figures; the machine was shared, which changes times only)."]
    (out / "regime_layout.md").write_text("\n".join(lines) + "\n")
    print("\n".join(lines))


def adult_cell(args):
    """The issue's Adult cell: the rows of the table, or why it was skipped."""
    adult = load_adult(args.adult_dir)
    if adult is None:
        return [f"Skipped: `adult.data` and `adult.test` not found in `{args.adult_dir}`."]
    (train, test), _ = adult
    categorical = [c for c in train[0].columns if c not in ADULT_NUMERIC]
    categories = [sorted(set(train[0][c]) - {"?"}) for c in categorical]
    tables = [_cell_table(train, test, split, categorical, categories)
              for split in range(args.splits)]
    lines = [f"Accuracy on {TEST_ROWS} rows of `adult.test`; 99 one-hot columns (declared "
             "categories) + 6 numeric columns in [0, 1] (documented ranges).", "",
             "| epsilon | variant | sigma_ | accuracy | worst split |",
             "|---|---|---|---|---|"]
    for epsilon in EPSILONS:
        # The variants alternate within each (split, seed).
        scores = {variant: [] for variant in VARIANTS}
        sigmas = {}
        for split, table in enumerate(tables):
            for seed in range(args.seeds):
                for variant in VARIANTS:
                    score, sigmas[variant] = _fit_score(variant, epsilon, 100 * split + seed,
                                                        table)
                    scores[variant].append((split, score))
        for variant in VARIANTS:
            values = np.array([score for _, score in scores[variant]])
            by_split = [np.mean([s for k, s in scores[variant] if k == split])
                        for split in range(args.splits)]
            se = values.std(ddof=1) / np.sqrt(values.size) if values.size > 1 else float("nan")
            lines.append(f"| {epsilon:g} | {variant} | {sigmas[variant]:g} | "
                         f"{values.mean():.3f} ± {se:.3f} | {min(by_split):.3f} |")
    majority = np.mean([max(t[3].mean(), 1 - t[3].mean()) for t in tables])
    lines += ["", f"Majority class on the test rows: {majority:.3f}."]
    return lines + adult_sizes(train, test, categorical, categories, args.splits, args.seeds,
                               args.quick)


if __name__ == "__main__":
    main()
