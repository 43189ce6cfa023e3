"""The library's defaults, untuned, on small tables and on real MNIST digits.

Issue 12 asks that ``fit`` with the defaults alone (``batch_size``,
``max_iter``, ``eta0``, ``average`` and ``delta`` left at ``"auto"``,
``sigma="auto"``) give a useful model. This script measures it: test accuracy (R2
for diabetes) of the defaults at epsilon 0.5, 1, 2 and inf under replace-one
adjacency (the library default), and at epsilon 0.5 and 1 under add/remove
adjacency with ``public_n_samples`` = the number of training rows, beside
scikit-learn's ``LogisticRegression`` / ``LinearRegression`` on the same
scaled features. Mean over 3 seeds; each seed is a different 75/25 split
(MNIST: the fixed 8,000 / 2,000 split of ``_data.py``, so the seeds differ
only in the noise and the batches) and a different noise draw.

Features are scaled by public bounds with :class:`BoundedScaler`, never by
statistics of the rows:

* iris, wine, breast cancer: the feature ranges printed in scikit-learn's
  documentation of each data set (``load_*().DESCR``, "Summary Statistics").
* digits: pixels lie in 0..16 by construction; MNIST: pixels / 255.
* diabetes: scikit-learn's features are centred and scaled so that every
  column has unit norm over its 442 rows, i.e. a standard deviation of
  ``1 / sqrt(442) = 0.048`` (DESCR); the bound is +-0.2 (about 4 standard
  deviations, clipped beyond). Target bounds (0, 400): the documented range
  of the disease-progression score is 25..346.

The fits pass ``reproducible=True`` with the seed so that a run can be
repeated exactly; such fits report ``epsilon_ = inf``, and the table shows
the epsilon a private fit of the same configuration claims (the noise is the
same). Run from the repository root::

    python benchmarks/bench_defaults.py            # ~6 min on 2 cores
    python benchmarks/bench_defaults.py --quick    # seconds: a smoke run

Writes ``defaults.md`` to ``--out`` (default ``benchmarks/results``;
``--quick`` defaults to a temporary folder).
"""

import argparse
import math
import sys
import tempfile
import time
import warnings
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
import _data  # noqa: E402

EPSILONS = (0.5, 1.0, 2.0, math.inf)
ADD_REMOVE_EPSILONS = (0.5, 1.0)
# The small tables' targets: replace-one epsilon 2 and add/remove epsilon 1.
TARGET_SETTINGS = (("replace_one", 2.0), ("add_remove", 1.0))
SEEDS = (0, 1, 2)
# The small tables' test parts are tiny (38 rows for iris): one seed's
# accuracy varies by several points with the noise draw and the split, so the
# mean of 3 seeds is itself noisy (about +-0.03 for iris).  They are also
# measured over this many seeds, at the targets' settings only.
MANY_SEEDS = 100
DELTA_NOTE = "delta='auto' (min(1e-5, 1/(10 n)): 1e-5 for every data set here)"

# Documented feature ranges (scikit-learn's DESCR, "Summary Statistics").
IRIS_BOUNDS = ([4.3, 2.0, 1.0, 0.1], [7.9, 4.4, 6.9, 2.5])
WINE_BOUNDS = (
    [11.0, 0.74, 1.36, 10.6, 70.0, 0.98, 0.34, 0.13, 0.41, 1.3, 0.48, 1.27, 278.0],
    [14.8, 5.80, 3.23, 30.0, 162.0, 3.88, 5.08, 0.66, 3.58, 13.0, 1.71, 4.00, 1680.0],
)
BREAST_CANCER_BOUNDS = (
    [6.981, 9.71, 43.79, 143.5, 0.053, 0.019, 0.0, 0.0, 0.106, 0.05, 0.112, 0.36, 0.757,
     6.802, 0.002, 0.002, 0.0, 0.0, 0.008, 0.001, 7.93, 12.02, 50.41, 185.2, 0.071, 0.027,
     0.0, 0.0, 0.156, 0.055],
    [28.11, 39.28, 188.5, 2501.0, 0.163, 0.345, 0.427, 0.201, 0.304, 0.097, 2.873, 4.885,
     21.98, 542.2, 0.031, 0.135, 0.396, 0.053, 0.079, 0.03, 36.04, 49.54, 251.2, 4254.0,
     0.223, 1.058, 1.252, 0.291, 0.664, 0.208],
)
TARGET_BOUNDS = (0.0, 400.0)

# name: (loader name, public bounds, regression?, target, target at epsilon 2
# replace-one / 1 add-remove; MNIST's at epsilon 1 replace-one / 0.5 add-remove)
DATASETS = {
    "breast cancer": ("load_breast_cancer", BREAST_CANCER_BOUNDS, False, 0.93),
    "wine": ("load_wine", WINE_BOUNDS, False, 0.90),
    "iris": ("load_iris", IRIS_BOUNDS, False, 0.88),
    "digits": ("load_digits", (0.0, 16.0), False, 0.91),
    "diabetes": ("load_diabetes", (-0.2, 0.2), True, 0.35),
    "MNIST": (None, None, False, 0.87),
}


def load(name, seed, quick):
    """Scaled (X_train, X_test, y_train, y_test, regression) for one seed."""
    import sklearn.datasets
    from sklearn.model_selection import train_test_split

    from sklearn_dplssgd import BoundedScaler

    loader, bounds, regression, _ = DATASETS[name]
    if loader is None:
        split = _data.mnist_split()
        data = [split["X_train"], split["X_test"], split["y_train"], split["y_test"]]
        if quick:
            data = [data[0][:2000], data[1][:500], data[2][:2000], data[3][:500]]
        return (*data, False)
    X, y = getattr(sklearn.datasets, loader)(return_X_y=True)
    # Public bounds: the scaler's fit reads only the shape of X.
    X = BoundedScaler(lower=bounds[0], upper=bounds[1]).fit_transform(X)
    X_train, X_test, y_train, y_test = train_test_split(
        X, y, test_size=0.25, random_state=seed, stratify=None if regression else y)
    return X_train, X_test, y_train, y_test, regression


def private_model(regression, n_classes, epsilon, neighboring, n_train, seed):
    """The estimator with its defaults; only the privacy setting is given."""
    from sklearn_dplssgd import DPLSSGDClassifier, DPLSSGDRegressor

    public = n_train if neighboring == "add_remove" else None
    common = dict(epsilon=epsilon, neighboring=neighboring, public_n_samples=public,
                  random_state=seed, reproducible=True)
    if regression:
        return DPLSSGDRegressor(target_bounds=TARGET_BOUNDS, **common)
    return DPLSSGDClassifier(classes=np.arange(n_classes), **common)


def baseline_score(name, regression, X_train, X_test, y_train, y_test):
    """scikit-learn's non-private model on the same scaled features."""
    from sklearn.linear_model import LinearRegression, LogisticRegression

    if regression:
        model = LinearRegression()
    else:
        model = LogisticRegression(max_iter=2000)
    return model.fit(X_train, y_train).score(X_test, y_test)


def run(quick, log):
    """All fits; returns {(name, neighboring, epsilon): [(score, model), ...]}."""
    from sklearn_dplssgd import calibrate_noise

    seeds = SEEDS[:1] if quick else SEEDS
    names = [n for n in DATASETS if n != "MNIST" or _data.mnist_available()]
    settings = [("replace_one", e) for e in EPSILONS]
    settings += [("add_remove", e) for e in ADD_REMOVE_EPSILONS]
    results, baselines, claims, details = {}, {}, {}, {}
    for name in names:
        for seed in seeds:
            X_train, X_test, y_train, y_test, regression = load(name, seed, quick)
            baselines.setdefault(name, []).append(
                baseline_score(name, regression, X_train, X_test, y_train, y_test))
            n_classes = len(np.unique(np.concatenate([y_train, y_test])))
            for neighboring, epsilon in settings:
                start = time.perf_counter()
                model = private_model(regression, n_classes, epsilon, neighboring,
                                      X_train.shape[0], seed)
                with warnings.catch_warnings():
                    # reproducible=True says it is not private: known here.
                    warnings.simplefilter("ignore")
                    model.fit(X_train, y_train)
                score = model.score(X_test, y_test)
                results.setdefault((name, neighboring, epsilon), []).append(score)
                if math.isfinite(epsilon):
                    claims[name, neighboring, epsilon] = calibrate_noise(
                        epsilon, model.delta_, sample_rate=model.sample_rate_,
                        n_steps=model.n_steps_, neighboring=neighboring).epsilon
                model.n_train_rows = X_train.shape[0]  # for the report only
                details[name, neighboring, epsilon] = model
                log(f"  {name:14s} seed {seed} {neighboring:11s} eps={epsilon:<4g} "
                    f"score {score:.3f} ({time.perf_counter() - start:.1f} s)")
    return names, results, baselines, claims, details


def many_seeds(names, n_seeds, log):
    """Scores of the small tables over ``n_seeds`` seeds at the targets' settings.

    Returns {(name, neighboring, epsilon): array of scores}; MNIST is left out
    (its split is fixed, its test part is 2,000 rows).
    """
    scores = {}
    for name in names:
        if name == "MNIST":
            continue
        start = time.perf_counter()
        for seed in range(n_seeds):
            X_train, X_test, y_train, y_test, regression = load(name, seed, False)
            n_classes = len(np.unique(np.concatenate([y_train, y_test])))
            for neighboring, epsilon in TARGET_SETTINGS:
                model = private_model(regression, n_classes, epsilon, neighboring,
                                      X_train.shape[0], seed)
                with warnings.catch_warnings():
                    warnings.simplefilter("ignore")
                    model.fit(X_train, y_train)
                scores.setdefault((name, neighboring, epsilon), []).append(
                    model.score(X_test, y_test))
        log(f"  {name:14s} {n_seeds} seeds ({time.perf_counter() - start:.0f} s)")
    return {key: np.array(value) for key, value in scores.items()}


def write_report(path, names, results, baselines, claims, details, elapsed, quick,
                 many=None):
    mean = lambda values: float(np.mean(values))  # noqa: E731
    lines = [
        "# Defaults that need no tuning",
        "",
        "Generated by `python benchmarks/bench_defaults.py`"
        + (" --quick (a smoke run: NOT the reported figures)" if quick else "") + ".",
        f"{_data.machine_note()}; {elapsed:.0f} s in all.",
        "",
        "Every fit uses the estimators' defaults (`batch_size`, `max_iter`, `eta0`, "
        "`average`: 'auto'; `sigma`: 'auto', which smooths only columns whose order "
        "public facts imply (an image's width, numbered names), by width for the "
        "classifier: 0 below 10 features, 0.25 below 100, 1 from 100 (`sigma_` below); "
        "`clip_norm=1`, `alpha=1e-4`, "
        "PLD accountant; "
        f"{DELTA_NOTE}); only `epsilon`, `neighboring` (with `public_n_samples` = the "
        "number of training rows under add/remove), `classes` and, for diabetes, "
        "`target_bounds=(0, 400)` are given. Features are scaled by public bounds with "
        "`BoundedScaler`: the ranges documented in scikit-learn's DESCR for iris, wine "
        "and breast cancer, 0..16 for digits, +-0.2 for diabetes (about 4 of its "
        "documented standard deviations, 1/sqrt(442)), pixels / 255 for MNIST. "
        "Accuracy (R2 for diabetes) on the test part, mean of "
        f"{len(next(iter(results.values())))} seeds (75/25 splits; MNIST: the fixed "
        "8,000 / 2,000 split, seeds differ in noise and batches only). The baseline is "
        "scikit-learn's `LogisticRegression` / `LinearRegression` on the same features.",
        "",
        "## Replace-one adjacency (the default)",
        "",
        "| data | n train | d | " + " | ".join(f"eps {e:g}" for e in EPSILONS)
        + " | baseline |",
        "|---|---|---|" + "---|" * len(EPSILONS) + "---|",
    ]
    for name in names:
        model = details[name, "replace_one", EPSILONS[0]]
        lines.append(
            f"| {name} | {model.n_train_rows} | {model.n_features_in_} | "
            + " | ".join(f"{mean(results[name, 'replace_one', e]):.3f}" for e in EPSILONS)
            + f" | {mean(baselines[name]):.3f} |")
    lines += [
        "",
        "## Add/remove adjacency (`public_n_samples` declared)",
        "",
        "| data | " + " | ".join(f"eps {e:g}" for e in ADD_REMOVE_EPSILONS) + " |",
        "|---|" + "---|" * len(ADD_REMOVE_EPSILONS),
    ]
    for name in names:
        lines.append(f"| {name} | " + " | ".join(
            f"{mean(results[name, 'add_remove', e]):.3f}" for e in ADD_REMOVE_EPSILONS) + " |")
    lines += [
        "",
        "## Targets of issue 12",
        "",
        "Small tables: the target at add/remove epsilon 1 and at replace-one epsilon 2 "
        "(replace-one needs about twice the noise); MNIST: at add/remove epsilon 0.5 and "
        "replace-one epsilon 1.",
        "",
        "| data | target | replace-one | add/remove | met | mean over many seeds |",
        "|---|---|---|---|---|---|",
    ]
    many = many or {}
    for name in names:
        target = DATASETS[name][3]
        eps_ro, eps_ar = (1.0, 0.5) if name == "MNIST" else (2.0, 1.0)
        ro = mean(results[name, "replace_one", eps_ro])
        ar = mean(results[name, "add_remove", eps_ar])
        met = "yes" if min(ro, ar) >= target else (
            "one of two" if max(ro, ar) >= target else "**no**")
        over_many = " / ".join(f"{many[name, nb, e].mean():.3f}" for nb, e in TARGET_SETTINGS
                               if (name, nb, e) in many) or "(fixed split)"
        lines.append(f"| {name} | >= {target:.2f} | {ro:.3f} (eps {eps_ro:g}) | "
                     f"{ar:.3f} (eps {eps_ar:g}) | {met} | {over_many} |")
    if many:
        n_seeds = len(next(iter(many.values())))
        lines += [
            "",
            f"## Small tables over {n_seeds} seeds",
            "",
            "The test parts of the small tables are tiny (38 rows for iris, 34 for wine), so "
            "one seed's score moves by several points with its split and noise draw, and the "
            "3-seed mean above moves by about +-0.03 for iris. The same defaults and "
            f"settings over seeds 0 to {n_seeds - 1} (each its own split and noise): mean "
            "+- standard error, the smallest and largest seed, and the share of the "
            f"{n_seeds // 3} disjoint groups of 3 consecutive seeds whose mean reaches the "
            "target.",
            "",
            "| data | target | setting | mean +- s.e. | min / max | 3-seed groups at target |",
            "|---|---|---|---|---|---|",
        ]
        for name in names:
            target = DATASETS[name][3]
            for neighboring, epsilon in TARGET_SETTINGS:
                values = many.get((name, neighboring, epsilon))
                if values is None:
                    continue
                groups = values[: len(values) // 3 * 3].reshape(-1, 3).mean(axis=1)
                lines.append(
                    f"| {name} | >= {target:.2f} | {neighboring}, eps {epsilon:g} | "
                    f"{values.mean():.3f} +- {values.std(ddof=1) / math.sqrt(len(values)):.3f}"
                    f" | {values.min():.3f} / {values.max():.3f} | "
                    f"{np.mean(groups >= target):.0%} |")
    lines += [
        "",
        "## Resolved settings (replace-one)",
        "",
        "What 'auto' resolved to, from the public row and feature counts, the target "
        "epsilon and the calibrated noise (the same for every seed). L = eta0 * T is the "
        "total step length.",
        "",
        "| data | epsilon | batch_size_ | n_iter_ (epochs) | n_steps_ | noise z | eta0_ | L "
        "| averaged from step | sigma_ | epsilon claimed |",
        "|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for name in names:
        for epsilon in EPSILONS:
            m = details[name, "replace_one", epsilon]
            claim = claims.get((name, "replace_one", epsilon), math.inf)
            lines.append(
                f"| {name} | {epsilon:g} | {m.batch_size_} | {m.n_iter_} | {m.n_steps_} | "
                f"{m.noise_multiplier_:.2f} | {m.eta0_:.3g} | {m.eta0_ * m.n_steps_:.3g} | "
                f"{m.average_start_} | {getattr(m, 'sigma_', 0.0):g} | {claim:.4g} |")
    path.write_text("\n".join(lines) + "\n")


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="one seed, MNIST subset")
    parser.add_argument("--out", type=Path, default=None, help="folder for defaults.md")
    parser.add_argument("--many-seeds", type=int, default=None,
                        help=f"seeds of the small tables' many-seed section (default "
                             f"{MANY_SEEDS}; 3 with --quick; 0 skips it)")
    args = parser.parse_args(argv)
    out = args.out or (Path(tempfile.mkdtemp()) if args.quick
                       else _data.REPO_ROOT / "benchmarks" / "results")
    out.mkdir(parents=True, exist_ok=True)
    start = time.perf_counter()
    names, results, baselines, claims, details = run(args.quick, print)
    many = many_seeds(names, args.many_seeds if args.many_seeds is not None
                      else (3 if args.quick else MANY_SEEDS), print)
    write_report(out / "defaults.md", names, results, baselines, claims, details,
                 time.perf_counter() - start, args.quick, many)
    print(f"wrote {out / 'defaults.md'}")


if __name__ == "__main__":
    main()
