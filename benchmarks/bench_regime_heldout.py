"""The defaults judged on tables and splits they were not fitted on.

``bench_regime.py`` fitted the step rule (the accumulated weight noise
``W = c sqrt(4 / d)``, ``c = 1.75``; ``training/_defaults.py``) on its map's
validation scores and reported the same map's test splits. This script judges
the rule the way a new table would meet it:

* **The map, widened.** ``bench_regime.py``'s tables (features scaled to
  ``[-1, 1]`` and ``[0, 1]`` by public bounds, MNIST on random 8,000 / 2,000
  draws of its 10,000 digits instead of the fixed split), UCI Adult at 500 to
  5,000 rows (99 one-hot columns of the declared categories and 6 numeric
  columns in ``[0, 1]`` by the documented ranges; read from ``--adult-dir``,
  never copied), and a synthetic table of 800 rows and 20 features in
  ``[0, 1]`` (nothing declared). Replace-one epsilon 1 unless ``--epsilons``.
* **Each cell**: the defaults (every ``"auto"`` left alone), the constant
  ``c`` of the step rule replaced by each of ``CANDIDATES`` (the rest of the
  defaults unchanged: ``eta0`` given explicitly, from the fit's own public
  calibration), and the validation-tuned setting (``bench_regime.py``'s grid,
  chosen on 2 validation splits of 80/20 that are not test splits, refitted on
  all training rows), scored on ``--splits`` test splits times ``--draws``
  noise draws (seeds from 700, none of which the rule was fitted on).
* **Fit on half, report the other half.** The cells are divided into two
  halves by table (alternately, in a fixed order); the constant that loses
  least against tuned on one half (mean shortfall, then misses of more than 2
  points) is chosen there and reported on the other, both ways round.
* **A non-image table of 100 columns.** 100 is 10 x 10, so ``sigma="auto"``
  smooths an unnamed dense table of 100 columns as an image; two synthetic
  tables of 100 unrelated columns, ``auto`` against ``sigma=0``.
* **Diabetes in raw units** (the regressor): a pipeline with
  ``DPBoundedScaler`` (features) and a ``DPBoundedScaler`` of the target, at a
  total replace-one epsilon of 3 over three budget splits, against the same
  pipeline with declared bounds, over ``--splits * --draws`` 75/25 splits.

Fits pass ``reproducible=True`` with the seed (the noise of the private fit;
the reported epsilon is inf). Run from the repository root, at one thread::

    NUMBA_NUM_THREADS=1 OMP_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1 \\
        python benchmarks/bench_regime_heldout.py --adult-dir PATH
    python benchmarks/bench_regime_heldout.py --quick --adult-dir PATH   # seconds

Writes ``regime_heldout.md`` and ``regime_heldout.json`` to ``--out``
(default ``benchmarks/results``; ``--quick`` defaults to a temporary folder).
Modes that write one section on its own, and stop::

    --square-widths      unnamed tables of an image's width, auto against sigma=0
                         (regime_heldout_square.md)
    --mnist-levers       MNIST on random splits, one lever of the defaults at a time
                         (regime_heldout_mnist.md)
    --diabetes           the raw-unit pipeline over six budget splits
                         (regime_heldout_diabetes.md)
    --selection-price S  the defaults at (1 - S) epsilon: what a private step
                         selection spending S would have to win back
                         (regime_heldout_selection.md; reads regime_heldout.json)
    --clip-sweep         the defaults at clip_norm 0.25 and 4 against 1
                         (regime_heldout_clip.md; reads regime_heldout.json)
"""

import argparse
import json
import math
import sys
import tempfile
import time
import warnings
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
import _data  # noqa: E402
from bench_dp_preprocessing import (  # noqa: E402
    ADULT_NUMERIC, DEFAULT_ADULT_DIR, DIABETES_BOUNDS, DIABETES_TARGET_BOUNDS, load_adult,
)
from bench_regime import (  # noqa: E402
    GRID, NOISE_FREE_STEP, REAL_BOUNDS, TABLES, TEST_SHARE, VAL_SHARE, generate,
    grid_settings, load_table,
)

CANDIDATES = (1.0, 1.75, 3.0)  # the constant c of W = c sqrt(4 / d); 1.75 today
CURRENT = 1.75
SEED_BASE = 700
VALIDATION_SPLITS = (950, 951)
ADULT_SIZES = (500, 1000, 2500, 5000)
UNIT_TABLE = ("linear", 800, 20, 2)  # the synthetic [0, 1] table
WIDE_TABLES = (("linear", 2000, 100, 2), ("heavy", 2000, 100, 2))
# (feature scaler epsilon, target scaler epsilon) of a total of 3.
# The full run reports the first three; --diabetes all of them.
BUDGET_SPLITS = ((1.5, 0.5), (1.0, 0.3), (2.0, 0.5), (1.0, 0.5), (0.75, 0.25), (0.5, 0.25))
MISS = 0.02


def _fit(X, y, X_eval, y_eval, n_classes, epsilon, seed, **settings):
    from sklearn_dplssgd import DPLSSGDClassifier
    model = DPLSSGDClassifier(epsilon=epsilon, classes=np.arange(n_classes),
                              random_state=seed, reproducible=True, **settings)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # reproducible=True is not private: known here
        model.fit(X, y)
    return model.score(X_eval, y_eval), model


def candidate_eta0(model, constant):
    """The step the rule would give with ``c = constant``, from the fit's public calibration.

    The defaults use a constant schedule: the accumulated noise on a weight is
    ``eta0 ||z|| C / b``; the step leaves ``min(2, max(m / 16, c sqrt(m / d)))``
    on it, capped at the noise-free ``m / C`` and at ``1 / alpha``.
    """
    d = model.n_features_in_
    target = min(2.0, max(NOISE_FREE_STEP / 16.0, constant * math.sqrt(NOISE_FREE_STEP / d)))
    z = np.broadcast_to(np.asarray(model.noise_multipliers_, dtype=float), (model.n_steps_,))
    accumulated = float(np.linalg.norm(z)) * model.clip_norm / model.batch_size_
    eta0 = NOISE_FREE_STEP / model.clip_norm
    if accumulated > 0:
        eta0 = min(eta0, target / accumulated)
    return min(eta0, 1.0 / model.alpha) if model.alpha > 0 else eta0


def _mnist_split(split):
    X, y = _data.load_mnist()
    order = np.random.default_rng(split).permutation(len(y))
    train, test = order[:_data.N_TRAIN], order[_data.N_TRAIN:]
    return X[train], X[test], y[train], y[test]


class Tables:
    """``(X_train, X_test, y_train, y_test)`` of a cell's table for a split seed."""

    def __init__(self, adult_dir):
        self.adult = load_adult(adult_dir) if adult_dir else None

    def names(self, quick):
        if quick:
            names = [("breast_cancer", "[0, 1]"), ("linear 200x4 K2", "[-1, 1]"),
                     ("unit 800x20 K2", "[0, 1]")]
            return names + ([("adult 500", "[0, 1]")] if self.adult else [])
        names = [(name, scaling) for name in list(REAL_BOUNDS) + list(TABLES)
                 for scaling in ("[-1, 1]", "[0, 1]")]
        if _data.mnist_available():
            names += [("MNIST", "[0, 1]"), ("MNIST", "[-1, 1]")]
        names.append(("unit 800x20 K2", "[0, 1]"))
        if self.adult:
            names += [(f"adult {n}", "[0, 1]") for n in ADULT_SIZES]
        return names

    def load(self, name, scaling, split):
        from sklearn.model_selection import train_test_split
        if name == "MNIST":
            X_train, X_test, y_train, y_test = _mnist_split(split)
            if scaling == "[-1, 1]":
                X_train, X_test = 2.0 * X_train - 1.0, 2.0 * X_test - 1.0
            return X_train, X_test, y_train, y_test
        if name.startswith("adult "):
            return self._adult(int(name.split()[1]), split)
        if name.startswith("unit "):
            kind, n, d, k = UNIT_TABLE
            X, (lower, upper), y = generate(kind, n, d, k, seed=45)
            X = (np.clip(X, lower, upper) - lower) / (upper - lower)
            return train_test_split(X, y, test_size=TEST_SHARE, random_state=split, stratify=y)
        return load_table(name, split, scaling)

    def _adult(self, n_rows, split):
        from bench_layout import _cell_table
        (train, test), _ = self.adult
        categorical = [c for c in train[0].columns if c not in ADULT_NUMERIC]
        categories = [sorted(set(train[0][c]) - {"?"}) for c in categorical]
        parts = _cell_table(train, test, split, categorical, categories, n_rows)
        X, y, X_test, y_test = (p.to_numpy() if hasattr(p, "to_numpy") else p for p in parts)
        return X, X_test, y, y_test


def run_cell(tables, name, scaling, epsilon, splits, draws, grid):
    """Defaults, candidates and tuned test scores of one cell, per fit."""
    from sklearn.model_selection import train_test_split
    validation = np.zeros(len(grid))
    for split in VALIDATION_SPLITS:
        X_train, _, y_train, _ = tables.load(name, scaling, split)
        n_classes = int(max(y_train.max() + 1, 2))
        X_fit, X_val, y_fit, y_val = train_test_split(
            X_train, y_train, test_size=VAL_SHARE, random_state=split, stratify=y_train)
        for i, setting in enumerate(grid):
            settings = grid_settings(*setting, len(y_fit), epsilon, "replace_one")
            validation[i] += _fit(X_fit, y_fit, X_val, y_val, n_classes, epsilon, split,
                                  **settings)[0]
    best = grid[int(np.argmax(validation))]
    scores = {"defaults": [], "tuned": [], **{f"c={c:g}": [] for c in CANDIDATES}}
    split_means = []
    for split in range(splits):
        X_train, X_test, y_train, y_test = tables.load(name, scaling, SEED_BASE + split)
        n_classes = int(max(y_train.max() + 1, 2))
        this_split = []
        for draw in range(draws):
            seed = SEED_BASE + 100 * split + draw
            score, model = _fit(X_train, y_train, X_test, y_test, n_classes, epsilon, seed)
            scores["defaults"].append(score)
            this_split.append(score)
            for c in CANDIDATES:
                scores[f"c={c:g}"].append(score if c == CURRENT else _fit(
                    X_train, y_train, X_test, y_test, n_classes, epsilon, seed,
                    eta0=candidate_eta0(model, c))[0])
            settings = grid_settings(*best, len(y_train), epsilon, "replace_one")
            scores["tuned"].append(_fit(X_train, y_train, X_test, y_test, n_classes, epsilon,
                                        seed, **settings)[0])
        split_means.append(float(np.mean(this_split)))
    return {"table": name, "scaling": scaling, "epsilon": epsilon, "d": int(X_train.shape[1]),
            "n_train": int(len(y_train)), "best": list(best), "scores": scores,
            "worst_split": min(split_means), "eta0": float(model.eta0_),
            "sigma": float(model.sigma_)}


def _loss(cells, key):
    gaps = np.array([np.mean(c["scores"][key]) - np.mean(c["scores"]["tuned"]) for c in cells])
    return float(np.mean(np.minimum(gaps, 0.0))), int(np.sum(gaps < -MISS))


def cross_fit(cells, keys, baseline):
    """Each half chooses one of ``keys`` (score columns) on its cells; the other half reports it.

    Tables alternate between the halves in the order they appear; a row per
    direction: ``(fitted half, chosen key, its (shortfall, misses) on the
    other half, the baseline column's there, cells there)``.
    """
    tables = sorted({c["table"] for c in cells}, key=[c["table"] for c in cells].index)
    halves = [{t for i, t in enumerate(tables) if i % 2 == h} for h in (0, 1)]
    rows = []
    for fit_half, report_half in ((0, 1), (1, 0)):
        fitted = [c for c in cells if c["table"] in halves[fit_half]]
        reported = [c for c in cells if c["table"] in halves[report_half]]
        if not fitted or not reported:
            continue
        chosen = max(keys, key=lambda k: _loss(fitted, k))
        rows.append((fit_half, chosen, _loss(reported, chosen), _loss(reported, baseline),
                     len(reported)))
    return halves, rows


def _synthetic_loader(kind, n, d, k):
    """Split seed -> train/test parts of a generated table, features in [-1, 1]."""
    from sklearn.model_selection import train_test_split
    X, (lower, upper), y = generate(kind, n, d, k, seed=100 + d)
    X = 2.0 * (X - lower) / (upper - lower) - 1.0
    return lambda split: train_test_split(X, y, test_size=TEST_SHARE, random_state=split,
                                          stratify=y)


def _auto_against_zero(label, load, n_classes, splits, draws, epsilon):
    """A table row: ``sigma="auto"`` (and the ``sigma_`` it chose) against ``sigma=0``."""
    scores, sigma = {"auto": [], 0.0: []}, None
    for split in range(splits):
        X_train, X_test, y_train, y_test = load(SEED_BASE + split)
        for draw in range(draws):
            seed = SEED_BASE + 100 * split + draw
            for value in scores:
                score, model = _fit(X_train, y_train, X_test, y_test, n_classes, epsilon,
                                    seed, sigma=value)
                scores[value].append(score)
                sigma = model.sigma_ if value == "auto" else sigma
    return (f"| {label} | {np.mean(scores['auto']):.3f} ({sigma:g}) | "
            f"{np.mean(scores[0.0]):.3f} | "
            f"{np.mean(scores['auto']) - np.mean(scores[0.0]):+.3f} |")


def wide_tables(splits, draws, epsilon, quick):
    """``sigma="auto"`` (10 x 10: smoothed) against 0 on non-image 100-column tables."""
    lines = ["", "## Non-image tables of 100 columns (unnamed, dense)", "",
             f"Replace-one epsilon {epsilon:g}; features in [-1, 1] by the generator's public "
             "bound; 100 unrelated columns, which `sigma=\"auto\"` reads as a 10 x 10 image.", "",
             "| table | auto (sigma_) | sigma=0 | auto - 0 |", "|---|---|---|---|"]
    for kind, n, d, k in WIDE_TABLES[:1] if quick else WIDE_TABLES:
        lines.append(_auto_against_zero(f"{kind} {n}x{d}", _synthetic_loader(kind, n, d, k),
                                        k, splits, draws, epsilon))
    return lines


# Unnamed dense tables of a square width: ordered (images) and not (a table's
# or an embedding's columns, whose widths are often powers of two).
SQUARE_WIDTHS = (
    ("not ordered", "linear 2000x64", ("linear", 2000, 64, 2)),
    ("not ordered", "heavy 2000x100", ("heavy", 2000, 100, 2)),
    ("not ordered", "linear 4000x256 K5", ("linear", 4000, 256, 5)),
    ("image", "digits, [-1, 1]", ("digits", "[-1, 1]")),
    ("image", "digits, [0, 1]", ("digits", "[0, 1]")),
    ("image", "pixel-like 2500x196 K10, [0, 1]", ("pixel-like 2500x196 K10", "[0, 1]")),
    ("image", "MNIST, pixels / 255", ("MNIST", "[0, 1]")),
)


def square_widths(splits, draws, epsilon, quick):
    """``sigma="auto"`` against 0 on unnamed tables whose width is an image's."""
    tables = Tables(None)
    lines = ["", f"## Square widths, unnamed: auto against sigma=0 (replace-one epsilon "
             f"{epsilon:g})", "",
             f"{splits} splits x {draws} noise draws (seeds from {SEED_BASE}); `sigma=\"auto\"` "
             "reads every one of these widths as an image's.", "",
             "| columns | table | auto (sigma_) | sigma=0 | auto - 0 |", "|---|---|---|---|---|"]
    for kind, label, spec in SQUARE_WIDTHS[:1] if quick else SQUARE_WIDTHS:
        if len(spec) == 4:
            load, n_classes = _synthetic_loader(*spec), spec[3]
        else:
            if spec[0] == "MNIST" and not _data.mnist_available():
                continue
            load = (lambda name, scaling: lambda split: tables.load(name, scaling, split))(*spec)
            n_classes = int(load(SEED_BASE)[2].max() + 1)
        lines.append(f"| {kind} " + _auto_against_zero(label, load, n_classes, splits, draws,
                                                       epsilon))
    return lines


def diabetes_raw(n_splits, quick, budget_splits=BUDGET_SPLITS[:3]):
    """R2 of the raw-unit pipeline: private bounds against declared, per budget split."""
    from sklearn.datasets import load_diabetes
    from sklearn.model_selection import train_test_split
    from sklearn.pipeline import make_pipeline
    import sklearn_dplssgd as dp
    X, y = load_diabetes(return_X_y=True, scaled=False)
    total = 3.0
    lines = ["", "## Diabetes in raw units: DPBoundedScaler against declared bounds", "",
             f"Total replace-one epsilon {total:g}; {n_splits} 75/25 splits (seeds from "
             f"{SEED_BASE}). Declared: `BoundedScaler` of the public ranges and "
             "`target_bounds` (bench_dp_preprocessing.py's), epsilon 3 to the regressor. "
             "Private: `DPBoundedScaler` (features) and a `DPBoundedScaler` of the target, "
             "the rest to the regressor, every other setting `\"auto\"`.", "",
             "Declared, same model epsilon: the declared pipeline with only the private "
             "one's model epsilon (the cost of the budget spent on bounds, not of the bounds "
             "themselves).", "",
             "| features / target epsilon | private | declared | private - declared | "
             "worst split difference | declared, same model epsilon |",
             "|---|---|---|---|---|---|"]
    for scaler_epsilon, target_epsilon in budget_splits[:1] if quick else budget_splits:
        private, declared, same_budget = [], [], []
        model_epsilon = total - scaler_epsilon - target_epsilon
        for split in range(n_splits):
            seed = SEED_BASE + split
            X_train, X_test, y_train, y_test = train_test_split(
                X, y, test_size=0.25, random_state=seed)
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                model = make_pipeline(
                    dp.BoundedScaler(*DIABETES_BOUNDS),
                    dp.DPLSSGDRegressor(epsilon=total, target_bounds=DIABETES_TARGET_BOUNDS,
                                        random_state=seed, reproducible=True))
                declared.append(model.fit(X_train, y_train).score(X_test, y_test))
                model.set_params(dplssgdregressor__epsilon=model_epsilon)
                same_budget.append(model.fit(X_train, y_train).score(X_test, y_test))
                # AboveThreshold: what regime_heldout_diabetes.md measured (the
                # scaler's default before bench_regime_scaler.py).
                target = dp.DPBoundedScaler(epsilon=target_epsilon, random_state=seed,
                                            mechanism="above_threshold",
                                            reproducible=True).fit(y_train.reshape(-1, 1))
                model = make_pipeline(
                    dp.DPBoundedScaler(epsilon=scaler_epsilon, random_state=seed,
                                       mechanism="above_threshold", reproducible=True),
                    dp.DPLSSGDRegressor(epsilon=model_epsilon,
                                        target_bounds=(target.lower_[0], target.upper_[0]),
                                        random_state=seed, reproducible=True))
                private.append(model.fit(X_train, y_train).score(X_test, y_test))
        difference = np.array(private) - np.array(declared)
        lines.append(f"| {scaler_epsilon:g} / {target_epsilon:g} | {np.mean(private):.3f} | "
                     f"{np.mean(declared):.3f} | {difference.mean():+.3f} | "
                     f"{difference.min():+.3f} | {np.mean(same_budget):.3f} |")
    return lines


MNIST_LEVERS = (("defaults", {}), ("sigma=3", {"sigma": 3.0}),
                ("eta0 x 2", {"eta0_scale": 2.0}), ("eta0 x 0.5", {"eta0_scale": 0.5}),
                ("last iterate", {"average": False}), ("sigma=0", {"sigma": 0.0}),
                ("sigma=3, eta0 x 2", {"sigma": 3.0, "eta0_scale": 2.0}))


def mnist_levers(splits, draws, epsilon):
    """MNIST (pixels / 255) on random splits: the defaults and one lever changed at a time."""
    lines = ["", f"## MNIST levers (pixels / 255, replace-one epsilon {epsilon:g})", "",
             f"Random 8,000 / 2,000 draws of the 10,000 digits (split seeds from {SEED_BASE}), "
             f"{splits} splits x {draws} noise draws; `eta0 x s`: the defaults' own `eta0_` "
             "times s (the weight-noise floor `m / 16` sets it from 196 features on).", "",
             "| variant | mean | worst split | lowest fit |", "|---|---|---|---|"]
    results = {name: [[] for _ in range(splits)] for name, _ in MNIST_LEVERS}
    for split in range(splits):
        X_train, X_test, y_train, y_test = _mnist_split(SEED_BASE + split)
        for draw in range(draws):
            seed = SEED_BASE + 100 * split + draw
            default_eta0 = None
            for name, lever in MNIST_LEVERS:
                settings = dict(lever)
                scale = settings.pop("eta0_scale", None)
                if scale is not None:
                    settings["eta0"] = default_eta0 * scale
                score, model = _fit(X_train, y_train, X_test, y_test, 10, epsilon, seed,
                                    **settings)
                if name == "defaults":
                    default_eta0 = model.eta0_
                results[name][split].append(score)
    for name, _ in MNIST_LEVERS:
        per_split = [np.mean(scores) for scores in results[name]]
        lowest = min(min(scores) for scores in results[name])
        lines.append(f"| {name} | {np.mean(per_split):.3f} | {min(per_split):.3f} | "
                     f"{lowest:.3f} |")
    return lines


def selection_price(tables, names, share, splits, draws, epsilon, cells):
    """What a private step selection must win back: the defaults at ``(1 - share) epsilon``.

    A selection inside ``fit`` that spends ``share`` of the budget can at best
    reach the tuned setting trained on what is left. With ``price`` the
    defaults' loss from ``epsilon`` to ``(1 - share) epsilon``, its gain over
    the defaults is about ``tuned - defaults - price`` per cell (an upper
    bound: a noisy selection also picks wrongly).
    """
    by_cell = {(cell["table"], cell["scaling"]): cell for cell in cells}
    lines = ["", f"## The price of a private step selection spending {share:g} of epsilon", "",
             f"The defaults at replace-one epsilon {(1 - share) * epsilon:g} against "
             f"{epsilon:g} on the same {splits} splits x {draws} noise draws; "
             "\"best case gain\": tuned - defaults - price (from `regime_heldout.json`).", "",
             "| table | features | defaults | defaults, less budget | price | tuned - defaults "
             "| best case gain |", "|---|---|---|---|---|---|---|"]
    gains = []
    for name, scaling in names:
        cell = by_cell.get((name, scaling))
        if cell is None:
            continue
        reduced = []
        for split in range(splits):
            X_train, X_test, y_train, y_test = tables.load(name, scaling, SEED_BASE + split)
            n_classes = int(max(y_train.max() + 1, 2))
            for draw in range(draws):
                # The sigma_ the reference fits used (the layout rule has since
                # changed for some widths): only the budget differs.
                reduced.append(_fit(X_train, y_train, X_test, y_test, n_classes,
                                    (1 - share) * epsilon, SEED_BASE + 100 * split + draw,
                                    sigma=cell["sigma"])[0])
        defaults = float(np.mean(cell["scores"]["defaults"][:splits * draws]))
        tuned = float(np.mean(cell["scores"]["tuned"][:splits * draws]))
        price = defaults - float(np.mean(reduced))
        gains.append(tuned - defaults - price)
        lines.append(f"| {name} | {scaling} | {defaults:.3f} | {np.mean(reduced):.3f} | "
                     f"{price:+.3f} | {tuned - defaults:+.3f} | {gains[-1]:+.3f} |")
        print(lines[-1], flush=True)
    if gains:
        lines += ["", f"Best case gain over {len(gains)} cells: mean {np.mean(gains):+.4f}, "
                  f"{int(np.sum(np.array(gains) > MISS))} cells above {MISS * 100:g} points, "
                  f"{int(np.sum(np.array(gains) < -MISS))} below -{MISS * 100:g}."]
    return lines


CLIP_NORMS = (0.25, 4.0)


def clip_sweep(tables, names, splits, draws, epsilon, cells):
    """The defaults with another fixed clip norm against ``clip_norm=1`` (oracle bound).

    A private adaptive clip (a noisy quantile of the per-sample gradient
    norms) can at best match the best fixed clip chosen after the fact, and
    pays for its quantile estimate; if no fixed clip beats 1 by more than a
    budget share costs (``--selection-price``), the adaptive clip cannot pay.
    """
    by_cell = {(cell["table"], cell["scaling"]): cell for cell in cells}
    lines = ["", f"## Fixed clip norms against clip_norm=1 (replace-one epsilon {epsilon:g})", "",
             f"The defaults (`eta0=\"auto\"` follows the clip) on the {splits} splits x "
             f"{draws} noise draws of each cell; `clip_norm=1` from `regime_heldout.json` "
             "(the same fits: run with the map's --splits and --draws).", "",
             "| table | features | clip 1 | " + " | ".join(f"clip {c:g}" for c in CLIP_NORMS)
             + " | best fixed - 1 |", "|---|---|---|" + "---|" * (len(CLIP_NORMS) + 1)]
    gains = []
    for name, scaling in names:
        cell = by_cell.get((name, scaling))
        if cell is None:
            continue
        scores = {clip: [] for clip in CLIP_NORMS}
        reference = []
        for split in range(splits):
            X_train, X_test, y_train, y_test = tables.load(name, scaling, SEED_BASE + split)
            n_classes = int(max(y_train.max() + 1, 2))
            for draw in range(draws):
                # The map's fits, in split-major order (same --splits, --draws).
                reference.append(cell["scores"]["defaults"][split * draws + draw])
                for clip in CLIP_NORMS:
                    scores[clip].append(_fit(X_train, y_train, X_test, y_test, n_classes,
                                             epsilon, SEED_BASE + 100 * split + draw,
                                             clip_norm=clip, sigma=cell["sigma"])[0])
        base = float(np.mean(reference))
        best = max(float(np.mean(values)) for values in scores.values())
        gains.append(max(best - base, 0.0))
        lines.append(f"| {name} | {scaling} | {base:.3f} | "
                     + " | ".join(f"{np.mean(scores[c]):.3f}" for c in CLIP_NORMS)
                     + f" | {best - base:+.3f} |")
        print(lines[-1], flush=True)
    if gains:
        lines += ["", f"Best fixed clip over {len(gains)} cells: mean gain over clip 1 "
                  f"{np.mean(gains):+.4f} (losses counted as 0), "
                  f"{int(np.sum(np.array(gains) > MISS))} cells above {MISS * 100:g} points."]
    return lines


def write_report(out, cells, extra_lines, command, elapsed, splits, draws):
    halves, rows = cross_fit(cells, [f"c={c:g}" for c in CANDIDATES], "defaults")
    lines = ["# The defaults on tables and splits they were not fitted on", "",
             f"Generated by `{command}`. {_data.machine_note()} (a shared machine: times "
             f"only are disturbed); {elapsed:.0f} s in all.", "",
             f"Each cell: {splits} test splits x {draws} noise draws = {splits * draws} fits "
             f"per column (seeds from {SEED_BASE}; tuned on validation splits "
             f"{VALIDATION_SPLITS}). `c=...`: the step rule's constant (today {CURRENT:g}). "
             f"Miss: more than {MISS * 100:g} points below tuned.", "",
             "| table | features | d | n | sigma_ | defaults | worst split | tuned (grid) | "
             + " | ".join(f"c={c:g}" for c in CANDIDATES) + " | defaults - tuned |",
             "|---|---|---|---|---|---|---|---|" + "---|" * len(CANDIDATES) + "---|"]
    for c in cells:
        mean = {key: np.mean(values) for key, values in c["scores"].items()}
        lines.append(
            f"| {c['table']} | {c['scaling']} | {c['d']} | {c['n_train']} | {c['sigma']:g} | "
            f"{mean['defaults']:.3f} | {c['worst_split']:.3f} | {mean['tuned']:.3f} "
            f"({c['best'][0]}, W {c['best'][1]:g}) | "
            + " | ".join(f"{mean[f'c={k:g}']:.3f}" for k in CANDIDATES)
            + f" | {mean['defaults'] - mean['tuned']:+.3f} |")
    shortfall, misses = _loss(cells, "defaults")
    lines += ["", f"Defaults over all {len(cells)} cells: mean shortfall against tuned "
              f"{shortfall:+.4f}, {misses} misses.", "",
              "## Fit on half, report the other half", "",
              "Halves by table, alternately in the order above: "
              + "; ".join(f"half {h}: " + ", ".join(sorted(halves[h])) for h in (0, 1)), "",
              "| fitted on | chosen c | held-out shortfall (chosen) | held-out misses (chosen) "
              "| held-out shortfall (today) | held-out misses (today) | held-out cells |",
              "|---|---|---|---|---|---|---|"]
    for fit_half, chosen, (fs, fm), (ds, dm), n_cells in rows:
        lines.append(f"| half {fit_half} | {chosen[len('c='):]} | {fs:+.4f} | {fm} | "
                     f"{ds:+.4f} | {dm} | {n_cells} |")
    lines += extra_lines
    (out / "regime_heldout.md").write_text("\n".join(lines) + "\n")
    (out / "regime_heldout.json").write_text(json.dumps(cells, indent=1))


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="a smoke run (seconds)")
    parser.add_argument("--out", type=Path, default=None)
    parser.add_argument("--adult-dir", default=str(DEFAULT_ADULT_DIR))
    parser.add_argument("--splits", type=int, default=4)
    parser.add_argument("--draws", type=int, default=4)
    parser.add_argument("--epsilon", type=float, default=1.0)
    parser.add_argument("--tables", nargs="*", default=None,
                        help="a subset of the tables (names as in the report)")
    parser.add_argument("--selection-price", type=float, metavar="SHARE", default=None,
                        help="the defaults at (1 - SHARE) epsilon against regime_heldout.json "
                        "in --out (regime_heldout_selection.md), and stop")
    parser.add_argument("--clip-sweep", action="store_true",
                        help="the defaults with clip_norm 0.25 and 4 against regime_heldout.json "
                        "in --out (regime_heldout_clip.md), and stop")
    parser.add_argument("--diabetes", action="store_true",
                        help="only diabetes in raw units (regime_heldout_diabetes.md), and stop")
    parser.add_argument("--square-widths", action="store_true",
                        help="only unnamed tables of a square width, auto against sigma=0 "
                        "(regime_heldout_square.md), and stop")
    parser.add_argument("--mnist-levers", action="store_true",
                        help="only the MNIST levers (regime_heldout_mnist.md), and stop")
    args = parser.parse_args(argv)
    out = args.out or (Path(tempfile.mkdtemp()) if args.quick else
                       Path(__file__).resolve().parent / "results")
    out.mkdir(parents=True, exist_ok=True)
    splits, draws = (1, 2) if args.quick else (args.splits, args.draws)
    command = "NUMBA_NUM_THREADS=1 python benchmarks/bench_regime_heldout.py " + " ".join(
        argv if argv is not None else sys.argv[1:])

    def report(name, title, body, show=True):
        # One mode's results file: its title, the command and the machine (the
        # load at the start), then the lines ``body()`` measures.
        lines = [f"# {title}", "",
                 f"Generated by `{command}`. {_data.machine_note()} (a shared machine)."]
        lines += body()
        if show:
            print("\n".join(lines))
        (out / name).write_text("\n".join(lines) + "\n")
        return 0

    if args.selection_price or args.clip_sweep:
        # Both compare with the tuned cells of the main run.
        cells = json.loads((out / "regime_heldout.json").read_text())
        tables = Tables(args.adult_dir)
    if args.selection_price:
        return report(
            "regime_heldout_selection.md", "Would a private step selection pay?",
            lambda: selection_price(tables, tables.names(args.quick), args.selection_price,
                                    splits, draws, args.epsilon, cells), show=False)
    if args.clip_sweep:
        return report(
            "regime_heldout_clip.md", "Would a private adaptive clip pay?",
            lambda: clip_sweep(tables, tables.names(args.quick), splits, draws, args.epsilon,
                               cells), show=False)
    if args.diabetes:
        return report(
            "regime_heldout_diabetes.md",
            "Diabetes in raw units: private bounds against declared ones",
            lambda: diabetes_raw(splits * draws, args.quick, BUDGET_SPLITS))
    if args.square_widths:
        return report(
            "regime_heldout_square.md", "Smoothing unnamed tables of an image's width",
            lambda: square_widths(splits, draws, args.epsilon, args.quick))
    if args.mnist_levers:
        return report(
            "regime_heldout_mnist.md",
            "MNIST: one lever of the defaults at a time, on random splits",
            lambda: mnist_levers(splits, draws, args.epsilon))
    grid = [GRID[1], GRID[7]] if args.quick else GRID
    tables = Tables(args.adult_dir)
    if tables.adult is None:
        print(f"Adult files not in {args.adult_dir}: its cells are skipped")
    start, cells = time.perf_counter(), []
    for name, scaling in tables.names(args.quick):
        if args.tables and name not in args.tables:
            continue
        began = time.perf_counter()
        cell = run_cell(tables, name, scaling, args.epsilon, splits, draws, grid)
        cells.append(cell)
        means = {key: np.mean(values) for key, values in cell["scores"].items()}
        print(f"{name:24s} {scaling} " + " ".join(f"{k} {v:.3f}" for k, v in means.items())
              + f" ({time.perf_counter() - began:.1f} s)", flush=True)
    extra = wide_tables(splits, draws, args.epsilon, args.quick)
    extra += diabetes_raw(splits * draws, args.quick)
    for line in extra:
        print(line)
    write_report(out, cells, extra, command, time.perf_counter() - start, splits, draws)
    print(f"wrote {out / 'regime_heldout.md'}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
