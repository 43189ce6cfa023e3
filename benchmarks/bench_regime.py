"""A map of the privacy regime: the defaults against validation-tuned settings.

Issue 30 asks whether the ``"auto"`` defaults (``batch_size``, ``max_iter``,
``eta0``, ``average``) are as good as tuning across the whole regime, not
only where they were first measured. This script measures it on many tables:

* real ones: iris, wine, breast cancer, digits (scikit-learn's copies, scaled
  by their documented ranges) and MNIST (8,000 training digits of
  ``_data.py``, pixels / 255);
* synthetic ones from the generators below (linear and non-linear
  boundaries, heavy tails, class imbalance, sparse non-negative
  "pixel-like" features), n from 150 to 60,000 rows, d from 4 to 784
  features, K from 2 to 10 classes;

each with its features scaled to ``[-1, 1]`` and to ``[0, 1]`` by PUBLIC
bounds (the generator's declared range, the documented ranges), at
replace-one epsilon 0.25, 1 and 8 and add/remove epsilon 1 (with
``public_n_samples``).

For each table, scaling and privacy setting ("cell"):

* **defaults**: the classifier with every ``"auto"`` left alone, fitted on
  all training rows, scored on the test part;
* **tuned**: the best of a grid of (batch size, epochs, eta0), chosen by
  the mean validation accuracy over ``VAL_SEEDS`` fits on 80 % of the
  training rows (the other 20 % are the validation part; the test part is
  never looked at), then refitted on all training rows and scored on the
  test part like the defaults.

The grid (``GRID``): two schedules, the default one (batch
``min(n, max(256, n/32))``, at least 1,000 steps) and a small-batch one
(batch ``max(16, n/64)``, 20 epochs), times five step sizes given by the
noise they leave on each weight (``eta0 = W b / (z C sqrt(T))``, capped at
the noise-free 4 / C, for W = 0.25, 0.5, 1, 2, 4). The step size is where
the defaults were wrong (see the user guide, "How the defaults are chosen");
for the batch/epoch split, the accounting makes it nearly irrelevant
whenever the noise multiplier stays above about 1 (printed by
``--efficiency``).

Each test score is the mean over ``TEST_SEEDS`` seeds (a seed is a split of
the rows and a noise draw). Fits pass ``reproducible=True`` with the seed (a
reproducible fit reports epsilon = inf; the noise is that of the private fit).
Run from the repository root, at one thread::

    NUMBA_NUM_THREADS=1 OMP_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1 \\
        python benchmarks/bench_regime.py          # 6 to 12 min on a loaded 2-core machine
    python benchmarks/bench_regime.py --quick      # a smoke run (seconds)
    python benchmarks/bench_regime.py --recheck 16 # the cells > 2 points from tuned, 16 seeds
    python benchmarks/bench_regime.py --before 40  # against the rule before issue 30
    python benchmarks/bench_regime.py --sigma      # sigma 0 / 1 / 3 on wide tables
    python benchmarks/bench_regime.py --declared 16  # [0, 1] cells, feature_bounds=(0, 1)

Writes ``regime.md`` and ``regime.json`` (every cell's figures) to ``--out``
(default ``benchmarks/results``; ``--quick`` defaults to a temporary folder);
the other modes write ``regime_recheck.md`` (from ``regime.json`` in
``--out``), ``regime_against_before.md``, ``regime_sigma.md`` and
``regime_declared.md`` (the map's ``[0, 1]`` cells refitted with the
defaults and ``feature_bounds=(0, 1)`` declared; from ``regime.json``).
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

SETTINGS = (("replace_one", 0.25), ("replace_one", 1.0), ("replace_one", 8.0),
            ("add_remove", 1.0))
WEIGHT_NOISES = (0.25, 0.5, 1.0, 2.0, 4.0)
SCHEDULES = ("default", "small batch")
GRID = [(schedule, w) for schedule in SCHEDULES for w in WEIGHT_NOISES]
VAL_SEEDS = (100, 101)
TEST_SEEDS = (0, 1, 2, 3)
NOISE_FREE_STEP = 4.0  # the classifier's step length eta0 * C without noise
TEST_SHARE = 0.25
VAL_SHARE = 0.2

# Real tables: documented feature ranges (scikit-learn's DESCR).
REAL_BOUNDS = {
    "iris": ([4.3, 2.0, 1.0, 0.1], [7.9, 4.4, 6.9, 2.5]),
    "wine": (
        [11.0, 0.74, 1.36, 10.6, 70.0, 0.98, 0.34, 0.13, 0.41, 1.3, 0.48, 1.27, 278.0],
        [14.8, 5.80, 3.23, 30.0, 162.0, 3.88, 5.08, 0.66, 3.58, 13.0, 1.71, 4.00, 1680.0]),
    "breast_cancer": (
        [6.981, 9.71, 43.79, 143.5, 0.053, 0.019, 0.0, 0.0, 0.106, 0.05, 0.112, 0.36,
         0.757, 6.802, 0.002, 0.002, 0.0, 0.0, 0.008, 0.001, 7.93, 12.02, 50.41, 185.2,
         0.071, 0.027, 0.0, 0.0, 0.156, 0.055],
        [28.11, 39.28, 188.5, 2501.0, 0.163, 0.345, 0.427, 0.201, 0.304, 0.097, 2.873,
         4.885, 21.98, 542.2, 0.031, 0.135, 0.396, 0.053, 0.079, 0.03, 36.04, 49.54,
         251.2, 4254.0, 0.223, 1.058, 1.252, 0.291, 0.664, 0.208]),
    "digits": (0.0, 16.0),
}

# Synthetic tables: (name, generator, n rows in all, d, K).
SYNTHETIC = (
    ("linear", "linear", 200, 4, 2),
    ("linear", "linear", 800, 16, 3),
    ("linear", "linear", 3000, 64, 10),
    ("linear", "linear", 12000, 16, 2),
    ("linear", "linear", 80000, 8, 2),
    ("non-linear", "nonlinear", 1200, 4, 2),
    ("non-linear", "nonlinear", 6000, 32, 3),
    ("heavy tails", "heavy", 1000, 30, 2),
    ("heavy tails", "heavy", 20000, 64, 5),
    ("imbalanced", "imbalanced", 500, 8, 2),
    ("imbalanced", "imbalanced", 4000, 20, 2),
    ("pixel-like", "pixels", 2500, 196, 10),
)
QUICK_TABLES = ("breast_cancer", "linear 200x4 K2")


def _labels(scores, rng, temperature):
    """Labels drawn from a softmax of the scores (so classes overlap)."""
    noisy = scores / temperature + rng.gumbel(size=scores.shape)
    return np.argmax(noisy, axis=1)


def generate(kind, n, d, n_classes, seed):
    """Raw features, their PUBLIC bounds (by construction) and labels.

    The bounds come from the generator's declared range, never from the rows:
    Gaussian features are bounded by +-3 (clipped beyond), Student-t ones
    (2 degrees of freedom) by +-6, pixel-like ones lie in [0, 1].
    """
    rng = np.random.default_rng(seed)
    if kind == "heavy":
        X = rng.standard_t(2.0, size=(n, d))
        bound = 6.0
    elif kind == "pixels":
        # Non-negative, mostly zero, spatially smooth: a blob per class.
        side = int(round(math.sqrt(d)))
        grid = np.stack(np.meshgrid(np.arange(side), np.arange(side)), -1).reshape(-1, 2)
        centres = rng.uniform(0, side, size=(n_classes, 2))
        y = rng.integers(n_classes, size=n)
        jitter = rng.normal(scale=side / 6, size=(n, 2))
        distance = np.linalg.norm(grid[None, :, :] - (centres[y] + jitter)[:, None, :], axis=2)
        X = np.exp(-(distance / (side / 5)) ** 2) + rng.uniform(0, 0.3, size=(n, d))
        X[X < 0.35] = 0.0
        return np.clip(X, 0.0, 1.0), (0.0, 1.0), y
    else:
        X = rng.normal(size=(n, d))
        bound = 3.0
    weights = rng.normal(size=(d, n_classes))
    if kind == "nonlinear":
        # A quadratic boundary: a linear model sees part of it only.
        scores = np.stack([(X[:, k % d] ** 2 - 1.0) + 0.5 * X @ weights[:, k]
                           for k in range(n_classes)], axis=1)
    else:
        scores = X @ weights / math.sqrt(d)
    if kind == "imbalanced":
        scores[:, 0] += 2.5  # about 85-90 % in class 0
    y = _labels(scores, rng, temperature=0.3)
    return np.clip(X, -bound, bound), (-bound, bound), y


def load_table(name, seed, scaling):
    """``(X_train, X_test, y_train, y_test)`` of one table for one seed.

    ``scaling`` is ``"[-1, 1]"`` or ``"[0, 1]"``: BoundedScaler's map of the
    public bounds to [-1, 1], then ``(x + 1) / 2`` for the latter (MNIST:
    pixels / 255, then ``2 x - 1`` for the former).
    """
    import sklearn.datasets
    from sklearn.model_selection import train_test_split

    from sklearn_dplssgd import BoundedScaler

    if name == "MNIST":
        split = _data.mnist_split()
        X_train, X_test = split["X_train"], split["X_test"]
        y_train, y_test = split["y_train"], split["y_test"]
        if scaling == "[-1, 1]":
            X_train, X_test = 2.0 * X_train - 1.0, 2.0 * X_test - 1.0
        # The fixed split; the seed shuffles the training rows only.
        order = np.random.default_rng(seed).permutation(len(y_train))
        return X_train[order], X_test, y_train[order], y_test
    if name in REAL_BOUNDS:
        X, y = getattr(sklearn.datasets, f"load_{name}")(return_X_y=True)
        lower, upper = REAL_BOUNDS[name]
    else:
        kind, n, d, n_classes = TABLES[name]
        X, (lower, upper), y = generate(kind, n, d, n_classes, seed=_stable_hash(name))
    X = BoundedScaler(lower=lower, upper=upper).fit_transform(X)
    if scaling == "[0, 1]":
        X = (X + 1.0) / 2.0
    return train_test_split(X, y, test_size=TEST_SHARE, random_state=seed, stratify=y)


TABLES = {f"{label} {n}x{d} K{k}": (kind, n, d, k) for label, kind, n, d, k in SYNTHETIC}


def _stable_hash(text):
    return int.from_bytes(text.encode(), "little") % 2**31


def schedule_for(schedule, n_rows):
    """``(batch_size, max_iter)`` of a grid schedule for ``n_rows`` rows."""
    from sklearn_dplssgd.training._defaults import resolve_schedule

    if schedule == "default":
        return resolve_schedule("auto", "auto", n_rows)
    return min(n_rows, max(16, math.ceil(n_rows / 64))), 20


def eta0_for(weight_noise, batch_size, max_iter, n_rows, epsilon, neighboring):
    """The constant step that leaves ``weight_noise`` on each weight (C = 1)."""
    from sklearn_dplssgd import calibrate_noise
    from sklearn_dplssgd.training._defaults import resolve_delta

    sample_rate = min(1.0, batch_size / n_rows)
    n_steps = math.ceil(max_iter * n_rows / batch_size)
    z = calibrate_noise(epsilon, resolve_delta("auto", n_rows), sample_rate=sample_rate,
                        n_steps=n_steps, neighboring=neighboring).noise_multiplier
    return min(NOISE_FREE_STEP, weight_noise * min(batch_size, n_rows) / (z * math.sqrt(n_steps)))


def fit_score(X, y, X_eval, y_eval, n_classes, neighboring, epsilon, seed, **settings):
    """Test accuracy and model of one fit (``settings`` go to the classifier)."""
    from sklearn_dplssgd import DPLSSGDClassifier

    public = X.shape[0] if neighboring == "add_remove" else None
    model = DPLSSGDClassifier(epsilon=epsilon, neighboring=neighboring,
                              public_n_samples=public, classes=np.arange(n_classes),
                              random_state=seed, reproducible=True, **settings)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # reproducible=True is not private: known here
        model.fit(X, y)
    return model.score(X_eval, y_eval), model


def grid_settings(schedule, weight_noise, n_rows, epsilon, neighboring):
    batch_size, max_iter = schedule_for(schedule, n_rows)
    eta0 = eta0_for(weight_noise, batch_size, max_iter, n_rows, epsilon, neighboring)
    return dict(batch_size=batch_size, max_iter=max_iter, eta0=eta0)


def run_cell(name, scaling, neighboring, epsilon, val_seeds, test_seeds, grid):
    """Defaults and tuned test scores of one cell (see the module docstring)."""
    from sklearn.model_selection import train_test_split

    validation = np.zeros(len(grid))
    for seed in val_seeds:
        X_train, _, y_train, _ = load_table(name, seed, scaling)
        n_classes = int(max(y_train.max() + 1, 2))
        X_fit, X_val, y_fit, y_val = train_test_split(
            X_train, y_train, test_size=VAL_SHARE, random_state=seed, stratify=y_train)
        for i, (schedule, weight_noise) in enumerate(grid):
            settings = grid_settings(schedule, weight_noise, len(y_fit), epsilon, neighboring)
            validation[i] += fit_score(X_fit, y_fit, X_val, y_val, n_classes, neighboring,
                                       epsilon, seed, **settings)[0] / len(val_seeds)
    best = int(np.argmax(validation))
    defaults, tuned, resolved = [], [], None
    for seed in test_seeds:
        X_train, X_test, y_train, y_test = load_table(name, seed, scaling)
        n_classes = int(max(y_train.max() + 1, 2))
        score, model = fit_score(X_train, y_train, X_test, y_test, n_classes, neighboring,
                                 epsilon, seed)
        defaults.append(score)
        resolved = model
        settings = grid_settings(*grid[best], len(y_train), epsilon, neighboring)
        tuned.append(fit_score(X_train, y_train, X_test, y_test, n_classes, neighboring,
                               epsilon, seed, **settings)[0])
    return {
        "table": name, "scaling": scaling, "neighboring": neighboring, "epsilon": epsilon,
        "n_train": int(len(y_train)), "d": int(X_train.shape[1]), "K": int(n_classes),
        "defaults": float(np.mean(defaults)), "defaults_sd": float(np.std(defaults)),
        "tuned": float(np.mean(tuned)), "tuned_sd": float(np.std(tuned)),
        "best": list(grid[best]), "validation": validation.tolist(),
        "resolved": {"batch_size": int(resolved.batch_size_), "max_iter": int(resolved.n_iter_),
                     "eta0": float(resolved.eta0_),
                     "noise_multiplier": float(np.max(resolved.noise_multiplier_))},
    }


def table_names(quick):
    if quick:
        return list(QUICK_TABLES)
    names = list(REAL_BOUNDS) + list(TABLES)
    if _data.mnist_available():
        names.append("MNIST")
    return names


def write_report(out, cells, elapsed, quick):
    gaps = np.array([cell["tuned"] - cell["defaults"] for cell in cells])
    lines = [
        "# The privacy regime: defaults against validation-tuned settings",
        "",
        "Generated by `NUMBA_NUM_THREADS=1 OMP_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1 "
        "python benchmarks/bench_regime.py`"
        + (" --quick (a smoke run: NOT the reported figures)" if quick else "") + ".",
        f"{_data.machine_note()}; {elapsed:.0f} s in all.",
        "",
        "Test accuracy of `DPLSSGDClassifier` with every `\"auto\"` left alone "
        "(defaults) and with the best of the grid chosen on a validation split of the "
        f"training rows (tuned; grid: schedules {', '.join(SCHEDULES)} x accumulated "
        f"weight noise W in {', '.join(f'{w:g}' for w in WEIGHT_NOISES)}, see the "
        f"script's docstring), mean over {len(TEST_SEEDS)} seeds (validation: "
        f"{len(VAL_SEEDS)} other seeds). gap = tuned - defaults: positive where tuning "
        "beats the defaults. Features scaled to [-1, 1] or [0, 1] by public bounds.",
        "",
        f"Cells: {len(cells)}; gap mean {gaps.mean():+.3f}, largest {gaps.max():+.3f}; "
        f"cells with gap > 0.02: {int((gaps > 0.02).sum())}.",
        "",
        "| table | n train | d | K | scaling | setting | defaults | tuned | gap | tuned's "
        "schedule, W | defaults' batch, epochs, eta0, z |",
        "|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for cell in cells:
        setting = ("RO" if cell["neighboring"] == "replace_one" else "AR") + \
            f" eps {cell['epsilon']:g}"
        gap = cell["tuned"] - cell["defaults"]
        mark = "**" if gap > 0.02 else ""
        r = cell["resolved"]
        lines.append(
            f"| {cell['table']} | {cell['n_train']} | {cell['d']} | {cell['K']} | "
            f"{cell['scaling']} | {setting} | {cell['defaults']:.3f} | {cell['tuned']:.3f} | "
            f"{mark}{gap:+.3f}{mark} | {cell['best'][0]}, {cell['best'][1]:g} | "
            f"{r['batch_size']}, {r['max_iter']}, {r['eta0']:.3g}, "
            f"{r['noise_multiplier']:.3g} |")
    (out / "regime.md").write_text("\n".join(lines) + "\n")
    (out / "regime.json").write_text(json.dumps(cells, indent=1) + "\n")


def efficiency_table(log):
    """q sqrt(T) / z over batch sizes and epochs: the split barely matters."""
    from sklearn_dplssgd import calibrate_noise

    for n, epsilon in ((426, 1.0), (8000, 1.0), (60000, 1.0), (60000, 0.25)):
        delta = min(1e-5, 1 / (10 * n))
        for batch_size in (16, 64, 256, min(n, 2048)):
            row = []
            for epochs in (5, 20, 100):
                q, steps = batch_size / n, math.ceil(epochs * n / batch_size)
                z = calibrate_noise(epsilon, delta, sample_rate=q,
                                    n_steps=steps).noise_multiplier
                row.append(f"E{epochs}: z {z:.2f}, q sqrt(T)/z {q * math.sqrt(steps) / z:.3f}")
            log(f"n {n} eps {epsilon:g} b {batch_size}: " + "; ".join(row))


# Wide tables for --sigma: MNIST (ordered pixels) against wide synthetic ones
# whose columns have no order (smoothing along them is a bias only).
WIDE_TABLES = {"linear 4000x256 K5": ("linear", 4000, 256, 5),
               "heavy tails 3000x128 K2": ("heavy", 3000, 128, 2)}
WIDE_SIGMAS = (0.0, 1.0, 3.0)


def sigma_table(out, seeds, log, quick=False):
    """``sigma`` 0, 1 (the default from 100 features) and 3 on wide tables.

    The larger default smoothing that MNIST would like cannot come from the
    width alone: the same width with unordered columns pays for it.
    """
    TABLES.update(WIDE_TABLES)
    names = list(WIDE_TABLES)[:1] if quick else (
        (["MNIST"] if _data.mnist_available() else []) + list(WIDE_TABLES))
    settings = SETTINGS[1:2] if quick else SETTINGS[:3]
    lines = [
        "# Smoothing strength on wide tables: ordered pixels against unordered columns",
        "",
        "Generated by `NUMBA_NUM_THREADS=1 OMP_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1 "
        "python benchmarks/bench_regime.py --sigma`"
        + (" --quick (a smoke run: NOT the reported figures)" if quick else "") + ".",
        f"{_data.machine_note()}.",
        "",
        "Test accuracy of `DPLSSGDClassifier` with every other `\"auto\"` left alone and "
        f"`sigma` set, mean of {len(seeds)} seeds (MNIST: the fixed split, seeds differ in "
        "batches and noise). `sigma=\"auto\"` is 1 for all of these (d >= 100).",
        "",
        "| table | d | scaling | setting | " + " | ".join(f"sigma {s:g}" for s in WIDE_SIGMAS)
        + " |",
        "|---|---|---|---|" + "---|" * len(WIDE_SIGMAS),
    ]
    for name in names:
        for scaling in ("[-1, 1]", "[0, 1]"):
            for neighboring, epsilon in settings:
                scores = np.zeros(len(WIDE_SIGMAS))
                for seed in seeds:
                    X_train, X_test, y_train, y_test = load_table(name, seed, scaling)
                    n_classes = int(max(y_train.max() + 1, 2))
                    for i, sigma in enumerate(WIDE_SIGMAS):
                        scores[i] += fit_score(X_train, y_train, X_test, y_test, n_classes,
                                               neighboring, epsilon, seed,
                                               sigma=sigma)[0] / len(seeds)
                row = (f"| {name} | {X_train.shape[1]} | {scaling} | RO eps {epsilon:g} | "
                       + " | ".join(f"{score:.3f}" for score in scores) + " |")
                log(row)
                lines.append(row)
    (out / "regime_sigma.md").write_text("\n".join(lines) + "\n")


def recheck_gaps(out, n_seeds, log, quick=False, tables=None):
    """The map's cells with a gap above 2 points, over more seeds.

    The tuned setting is the one the map chose (``regime.json`` in ``out``);
    defaults and tuned are fitted on the same ``n_seeds`` seeds (splits and
    noise) and compared seed by seed. ``tables``: only these tables' cells.
    """
    cells = [cell for cell in json.loads((out / "regime.json").read_text())
             if cell["tuned"] - cell["defaults"] > 0.02
             and (tables is None or cell["table"] in tables)][:1 if quick else None]
    subset = "" if tables is None else " --tables " + " ".join(f'"{t}"' for t in tables)
    lines = [
        "# The map's cells more than 2 points from tuned, over more seeds",
        "",
        "Generated by `NUMBA_NUM_THREADS=1 OMP_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1 "
        f"python benchmarks/bench_regime.py --recheck {n_seeds}{subset}`"
        + (" --quick (a smoke run: NOT the reported figures)" if quick else "") + ".",
        f"{_data.machine_note()}.",
        "",
        f"Each cell of `regime.md` whose gap exceeds 0.02, re-measured over seeds 0 to "
        f"{n_seeds - 1} with the tuned setting the map chose: mean test accuracy and the "
        "paired gap (tuned - defaults) with its standard error.",
        "",
        "| table | n train | scaling | setting | map gap | defaults | tuned | gap +- s.e. |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for cell in cells:
        defaults, tuned = [], []
        for seed in range(n_seeds):
            X_train, X_test, y_train, y_test = load_table(cell["table"], seed, cell["scaling"])
            args = (X_train, y_train, X_test, y_test, cell["K"], cell["neighboring"],
                    cell["epsilon"], seed)
            defaults.append(fit_score(*args)[0])
            settings = grid_settings(*cell["best"], len(y_train), cell["epsilon"],
                                     cell["neighboring"])
            tuned.append(fit_score(*args, **settings)[0])
        gaps = np.array(tuned) - np.array(defaults)
        setting = ("RO" if cell["neighboring"] == "replace_one" else "AR") + \
            f" eps {cell['epsilon']:g}"
        row = (f"| {cell['table']} | {cell['n_train']} | {cell['scaling']} | {setting} | "
               f"{cell['tuned'] - cell['defaults']:+.3f} | {np.mean(defaults):.3f} | "
               f"{np.mean(tuned):.3f} | {gaps.mean():+.3f} +- "
               f"{gaps.std() / math.sqrt(n_seeds):.3f} |")
        log(row)
        lines.append(row)
    (out / "regime_recheck.md").write_text("\n".join(lines) + "\n")


# The rule before issue 30: accumulated weight noise 1 below 10 features, 0.5
# from there on, and the mean of the last half of the steps.
def before_settings(n_rows, n_features, epsilon, neighboring):
    batch_size, max_iter = schedule_for("default", n_rows)
    n_steps = math.ceil(max_iter * n_rows / batch_size)
    weight_noise = 1.0 if n_features < 10 else 0.5
    return dict(eta0=eta0_for(weight_noise, batch_size, max_iter, n_rows, epsilon,
                              neighboring), average=n_steps // 2)


BEFORE_TABLES = (("iris", SETTINGS), ("wine", SETTINGS), ("breast_cancer", SETTINGS),
                 ("linear 200x4 K2", SETTINGS), ("linear 3000x64 K10", SETTINGS[:1]),
                 ("heavy tails 1000x30 K2", SETTINGS[:1]))


def against_before(out, n_seeds, log, quick=False):
    """Today's defaults against the rule before issue 30, seed by seed."""
    tables = BEFORE_TABLES[:1] if quick else BEFORE_TABLES
    lines = [
        "# The defaults against the rule before issue 30, over more seeds",
        "",
        "Generated by `NUMBA_NUM_THREADS=1 OMP_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1 "
        f"python benchmarks/bench_regime.py --before {n_seeds}`"
        + (" --quick (a smoke run: NOT the reported figures)" if quick else "") + ".",
        f"{_data.machine_note()}.",
        "",
        "The rule before issue 30 (`regime_before.md`): accumulated weight noise 1 below "
        "10 features and 0.5 from there on, the mean of the last half of the steps; "
        "today's: every `\"auto\"` left alone. The same seeds 0 to "
        f"{n_seeds - 1} (splits and noise) for both; the difference is paired.",
        "",
        "| table | scaling | setting | before | today | today - before +- s.e. |",
        "|---|---|---|---|---|---|",
    ]
    for name, settings in tables:
        for scaling in ("[-1, 1]", "[0, 1]"):
            for neighboring, epsilon in (settings[1:2] if quick else settings):
                before, today = [], []
                for seed in range(n_seeds):
                    X_train, X_test, y_train, y_test = load_table(name, seed, scaling)
                    n_classes = int(max(y_train.max() + 1, 2))
                    args = (X_train, y_train, X_test, y_test, n_classes, neighboring,
                            epsilon, seed)
                    before.append(fit_score(*args, **before_settings(
                        *X_train.shape, epsilon, neighboring))[0])
                    today.append(fit_score(*args)[0])
                diff = np.array(today) - np.array(before)
                setting = ("RO" if neighboring == "replace_one" else "AR") + \
                    f" eps {epsilon:g}"
                row = (f"| {name} | {scaling} | {setting} | {np.mean(before):.3f} | "
                       f"{np.mean(today):.3f} | {diff.mean():+.3f} +- "
                       f"{diff.std() / math.sqrt(n_seeds):.3f} |")
                log(row)
                lines.append(row)
    (out / "regime_against_before.md").write_text("\n".join(lines) + "\n")


def _setting_label(cell):
    return ("RO" if cell["neighboring"] == "replace_one" else "AR") + f" eps {cell['epsilon']:g}"


def declared_bounds(out, n_seeds, log, quick=False):
    """The map's ``[0, 1]`` cells with ``feature_bounds=(0, 1)`` declared.

    The defaults are refitted on the same seeds as the map with the bounds
    declared, and compared with the map's figures: the undeclared defaults,
    the tuned setting on the ``[0, 1]`` rows (undeclared), and the same
    table's ``[-1, 1]`` cell. The declared fit trains on ``(x - 0.5) / 0.5``,
    the ``[-1, 1]`` table's rows up to rounding, so its figures should be
    that cell's defaults (a check of the map). Cells still more than 2
    points below the ``[0, 1]`` tuned setting are re-measured over
    ``n_seeds`` seeds, paired (declared defaults against that setting).
    """
    start = time.perf_counter()
    cells = json.loads((out / "regime.json").read_text())
    by_key = {(c["table"], c["scaling"], c["neighboring"], c["epsilon"]): c for c in cells}
    unit = [c for c in cells if c["scaling"] == "[0, 1]"][:2 if quick else None]
    seeds = TEST_SEEDS[:1] if quick else TEST_SEEDS
    lines = [
        "# Declared feature bounds: the map's [0, 1] cells with feature_bounds=(0, 1)",
        "",
        "Generated by `NUMBA_NUM_THREADS=1 OMP_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1 "
        f"python benchmarks/bench_regime.py --declared {n_seeds}`"
        + (" --quick (a smoke run: NOT the reported figures)" if quick else "") + ".",
        f"{_data.machine_note()}.",
        "",
        "Each `[0, 1]` cell of `regime.md`: test accuracy of `DPLSSGDClassifier` with every "
        "`\"auto\"` left alone and `feature_bounds=(0, 1)` declared (declared), mean over "
        f"the map's {len(seeds)} seeds, against the map's figures for the same cell "
        "(undeclared defaults; tuned: the grid's best on a validation split, features "
        "undeclared) and for the same table in `[-1, 1]` (defaults; tuned). With the "
        "bounds declared the estimator trains on `(x - 0.5) / 0.5`, the `[-1, 1]` "
        "table's rows: tuning with the bounds declared is the `[-1, 1]` cell's tuning. "
        "gap = tuned `[0, 1]` - declared (positive where tuning the undeclared `[0, 1]` "
        "rows beats declaring the bounds).",
        "",
        "| table | n train | d | K | setting | undeclared | declared | tuned [0, 1] | gap | "
        "[-1, 1] defaults | [-1, 1] tuned |",
        "|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    results = []
    for cell in unit:
        scores = []
        for seed in seeds:
            X_train, X_test, y_train, y_test = load_table(cell["table"], seed, "[0, 1]")
            scores.append(fit_score(X_train, y_train, X_test, y_test, cell["K"],
                                    cell["neighboring"], cell["epsilon"], seed,
                                    feature_bounds=(0.0, 1.0))[0])
        other = by_key[(cell["table"], "[-1, 1]", cell["neighboring"], cell["epsilon"])]
        declared = float(np.mean(scores))
        gap = cell["tuned"] - declared
        results.append((cell, declared, gap, other))
        mark = "**" if gap > 0.02 else ""
        row = (f"| {cell['table']} | {cell['n_train']} | {cell['d']} | {cell['K']} | "
               f"{_setting_label(cell)} | {cell['defaults']:.3f} | {declared:.3f} | "
               f"{cell['tuned']:.3f} | {mark}{gap:+.3f}{mark} | {other['defaults']:.3f} | "
               f"{other['tuned']:.3f} |")
        log(row)
        lines.append(row)
    gaps = np.array([gap for _, _, gap, _ in results])
    gains = np.array([declared - cell["defaults"] for cell, declared, _, _ in results])
    same = np.array([abs(declared - other["defaults"]) for _, declared, _, other in results])
    lines[7:7] = [
        f"Cells: {len(results)}; declared - undeclared defaults: mean {gains.mean():+.3f}, "
        f"lowest {gains.min():+.3f}, highest {gains.max():+.3f}; gap mean {gaps.mean():+.3f}, "
        f"largest {gaps.max():+.3f}, cells with gap > 0.02: {int((gaps > 0.02).sum())} "
        f"(undeclared: {sum(c['tuned'] - c['defaults'] > 0.02 for c, *_ in results)}); "
        f"largest |declared - [-1, 1] defaults|: {same.max():.3f}.",
        "",
    ]
    recheck = [(cell, gap) for cell, _, gap, _ in results if gap > 0.02]
    lines += [
        "",
        f"## The cells with gap > 0.02, over {n_seeds} seeds",
        "",
        f"Seeds 0 to {n_seeds - 1} (splits and noise), the same for both: the declared "
        "defaults against the `[0, 1]` cell's tuned setting (undeclared); the paired gap "
        "with its standard error.",
        "",
        "| table | setting | declared | tuned [0, 1] | gap +- s.e. |",
        "|---|---|---|---|---|",
    ]
    for cell, _ in recheck[:1 if quick else None]:
        declared, tuned = [], []
        for seed in range(n_seeds):
            X_train, X_test, y_train, y_test = load_table(cell["table"], seed, "[0, 1]")
            args = (X_train, y_train, X_test, y_test, cell["K"], cell["neighboring"],
                    cell["epsilon"], seed)
            declared.append(fit_score(*args, feature_bounds=(0.0, 1.0))[0])
            tuned.append(fit_score(*args, **grid_settings(
                *cell["best"], len(y_train), cell["epsilon"], cell["neighboring"]))[0])
        diff = np.array(tuned) - np.array(declared)
        row = (f"| {cell['table']} | {_setting_label(cell)} | {np.mean(declared):.3f} | "
               f"{np.mean(tuned):.3f} | {diff.mean():+.3f} +- "
               f"{diff.std() / math.sqrt(n_seeds):.3f} |")
        log(row)
        lines.append(row)
    lines += target_rows(n_seeds, log, quick)
    lines.insert(4, f"{time.perf_counter() - start:.0f} s in all.")
    (out / "regime_declared.md").write_text("\n".join(lines) + "\n")


# Issue 30's targets, with and without declared bounds: (table, scaling,
# epsilon, feature_bounds) at replace-one adjacency.
TARGETS = (("breast_cancer", "[0, 1]", 1.0, None), ("breast_cancer", "[0, 1]", 1.0, (0.0, 1.0)),
           ("MNIST", "[0, 1]", 1.0, None), ("MNIST", "[0, 1]", 1.0, (0.0, 1.0)),
           ("MNIST", "[-1, 1]", 1.0, None))


def target_rows(n_seeds, log, quick=False):
    """Issue 30's targets over ``n_seeds`` seeds, the bounds declared or not."""
    targets = [t for t in TARGETS if t[0] != "MNIST" or _data.mnist_available()]
    lines = [
        "",
        f"## Issue 30's targets over {n_seeds} seeds",
        "",
        "Replace-one epsilon 1, every `\"auto\"` left alone; seeds 0 to "
        f"{n_seeds - 1} (MNIST: the fixed split of `_data.py`, seeds differ in the "
        "order of the rows and the noise). Targets: breast cancer with `[0, 1]` features "
        ">= 0.90, MNIST (pixels / 255) >= 0.885.",
        "",
        "| table | features | feature_bounds | mean | s.e. | lowest |",
        "|---|---|---|---|---|---|",
    ]
    for name, scaling, epsilon, bounds in targets[:2 if quick else None]:
        scores = []
        for seed in range(n_seeds):
            X_train, X_test, y_train, y_test = load_table(name, seed, scaling)
            n_classes = int(max(y_train.max() + 1, 2))
            extra = {} if bounds is None else {"feature_bounds": bounds}
            scores.append(fit_score(X_train, y_train, X_test, y_test, n_classes,
                                    "replace_one", epsilon, seed, **extra)[0])
        row = (f"| {name} | {scaling} | {bounds} | {np.mean(scores):.3f} | "
               f"{np.std(scores) / math.sqrt(n_seeds):.3f} | {np.min(scores):.3f} |")
        log(row)
        lines.append(row)
    return lines


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="a smoke run (seconds)")
    parser.add_argument("--out", type=Path, default=None)
    parser.add_argument("--efficiency", action="store_true",
                        help="print q sqrt(T)/z over batch sizes and epochs, and stop")
    parser.add_argument("--tables", nargs="*", default=None, help="a subset of the tables")
    parser.add_argument("--sigma", action="store_true",
                        help="sigma 0, 1 and 3 on wide tables (regime_sigma.md), and stop")
    parser.add_argument("--recheck", type=int, metavar="SEEDS", default=None,
                        help="re-measure the cells of regime.json with a gap above 2 points "
                        "over SEEDS seeds (regime_recheck.md), and stop")
    parser.add_argument("--before", type=int, metavar="SEEDS", default=None,
                        help="today's defaults against the rule before issue 30 over SEEDS "
                        "seeds on the small tables (regime_against_before.md), and stop")
    parser.add_argument("--declared", type=int, metavar="SEEDS", default=None,
                        help="the [0, 1] cells of regime.json with feature_bounds=(0, 1) "
                        "declared, then those still > 2 points below tuned over SEEDS seeds "
                        "(regime_declared.md), and stop")
    args = parser.parse_args(argv)
    if args.efficiency:
        efficiency_table(print)
        return 0
    out = args.out or (Path(tempfile.mkdtemp()) if args.quick else
                       Path(__file__).resolve().parent / "results")
    out.mkdir(parents=True, exist_ok=True)
    if args.sigma:
        sigma_table(out, range(1 if args.quick else 6), print, args.quick)
        return 0
    if args.recheck:
        if args.quick:
            # The smoke run re-measures a map of its own.
            main(["--quick", "--out", str(out), "--tables", "linear 200x4 K2"])
        recheck_gaps(out, 2 if args.quick else args.recheck, print, args.quick,
                     tables=None if args.quick else args.tables)
        return 0
    if args.declared:
        if args.quick:
            main(["--quick", "--out", str(out), "--tables", "linear 200x4 K2"])
        declared_bounds(out, 2 if args.quick else args.declared, print, args.quick)
        return 0
    if args.before:
        against_before(out, 1 if args.quick else args.before, print, args.quick)
        return 0
    names = args.tables or table_names(args.quick)
    settings = SETTINGS[1:2] + SETTINGS[3:] if args.quick else SETTINGS
    grid = [GRID[1], GRID[7]] if args.quick else GRID
    val_seeds, test_seeds = (VAL_SEEDS[:1], TEST_SEEDS[:1]) if args.quick else (
        VAL_SEEDS, TEST_SEEDS)
    start, cells = time.perf_counter(), []
    for name in names:
        for scaling in ("[-1, 1]", "[0, 1]"):
            for neighboring, epsilon in settings:
                began = time.perf_counter()
                cell = run_cell(name, scaling, neighboring, epsilon, val_seeds, test_seeds,
                                grid)
                cells.append(cell)
                print(f"{name:24s} {scaling} {neighboring:11s} eps {epsilon:<4g} defaults "
                      f"{cell['defaults']:.3f} tuned {cell['tuned']:.3f} {cell['best']} "
                      f"({time.perf_counter() - began:.1f} s)", flush=True)
    write_report(out, cells, time.perf_counter() - start, args.quick)
    print(f"wrote {out / 'regime.md'}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
