"""Privacy against utility: the one accuracy runner of the benchmarks.

For each table and epsilon, every variant is fitted on the training part of
several random held-out splits (stratified for the classifiers, 75 % / 25 %)
and scored on the test part: the mean and its standard error over the
splits. The variants:

* ``defaults``: the estimator at its defaults, features mapped to [-1, 1]
  from bounds known in advance (``feature_bounds``);
* ``dp-sgd``: the same without Laplacian smoothing (``sigma=0``);
* ``output``: ``mechanism="output"`` (output perturbation) with
  ``alpha=0.01``, classifiers only;
* ``tuned``: a reference, not a private procedure: ``eta0`` chosen from a
  small grid on a validation quarter of the training part (that choice is
  not accounted), then refitted on the whole training part;
* ``non-private``: scikit-learn's ``LogisticRegression`` or ``Ridge`` on the
  same mapped features, the same for every epsilon.

The tables: scikit-learn's digits (bounds [0, 16]), breast cancer (each
feature's range over the whole bundled data set, rounded outward, standing
for a data owner's declared bounds) and diabetes in raw units (the
regressor, R2; ranges of the measurements known in advance); the 10,000
real MNIST test digits from ``../shared/data/mnist-t10k`` where present
(pixels in [0, 1]); UCI Adult where ``--adult-dir`` holds ``adult.data``
(its numeric columns' ranges as ``adult.names`` states them, its categories
one-hot encoded as ``adult.names`` lists them). Replace-one adjacency, delta
1e-5, the PLD accountant: the library's defaults.

Run from the repository root::

    python benchmarks/accuracy.py            # accuracy.md, about 30 min on a busy 2-core machine
    python benchmarks/accuracy.py --quick    # a smoke run on small settings
    python benchmarks/accuracy.py --tables digits --epsilons 1 --splits 8 --variants defaults tuned

It writes ``benchmarks/results/accuracy.md`` (``--out`` to change the folder,
``--name`` the file). To compare two revisions of the package on the same
splits, run the script once with each on ``PYTHONPATH``: the first with
``--save-scores base.json``, the second with ``--baseline base.json``, which
adds each cell's paired difference (this run minus the baseline's, same
splits) and its standard error.
"""

import argparse
import json
import math
import os
import sys
import time
import warnings
from pathlib import Path

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from _data import DEFAULT_MNIST_DIR, load_mnist, machine_note, mnist_available  # noqa: E402

REPO_ROOT = Path(__file__).resolve().parent.parent
RESULTS = REPO_ROOT / "benchmarks" / "results"
DEFAULT_ADULT_DIR = (REPO_ROOT / ".." / "shared" / "data" / "adult").resolve()

VARIANTS = ("defaults", "dp-sgd", "output", "tuned", "non-private")
TABLES = ("diabetes", "breast_cancer", "digits", "mnist", "adult")  # smallest first
# eta0 candidates of the tuned reference besides the default rule's (which
# gives the classifier values in [0.25, 2], the regressor a quarter of those).
ETA0_GRID = ("auto", 0.05, 0.15, 0.5, 1.5)

# Ranges of the diabetes measurements known in advance: age, sex (coded 1, 2),
# BMI, mean blood pressure, six blood serum measurements; the target's range.
DIABETES_BOUNDS = ([18, 1, 15, 50, 90, 40, 20, 1, 3, 55],
                   [80, 2, 50, 150, 310, 250, 100, 10, 7, 130])
DIABETES_TARGET_BOUNDS = (25.0, 350.0)
OUTPUT_ALPHA = 0.01
ADULT_COLUMNS = [
    "age", "workclass", "fnlwgt", "education", "education-num", "marital-status",
    "occupation", "relationship", "race", "sex", "capital-gain", "capital-loss",
    "hours-per-week", "native-country", "income",
]
ADULT_NUMERIC = ["age", "fnlwgt", "education-num", "capital-gain", "capital-loss",
                 "hours-per-week"]
ADULT_BOUNDS = ([17, 12285, 1, 0, 0, 1], [90, 1490400, 16, 99999, 4356, 99])


def _outward(values, decimals=0):
    scale = 10.0 ** decimals
    return np.floor(values.min(axis=0) * scale) / scale, np.ceil(values.max(axis=0) * scale) / scale


def load_table(name, mnist_dir, adult_dir):
    """``(X, y, bounds, task)`` of a table, or None where its files are absent."""
    from sklearn import datasets

    if name == "digits":
        X, y = datasets.load_digits(return_X_y=True)
        return X, y, (0.0, 16.0), "classification"
    if name == "breast_cancer":
        X, y = datasets.load_breast_cancer(return_X_y=True)
        return X, y, _outward(X, 1), "classification"
    if name == "diabetes":
        X, y = datasets.load_diabetes(return_X_y=True, scaled=False)
        return X, y, tuple(np.asarray(b, float) for b in DIABETES_BOUNDS), "regression"
    if name == "mnist":
        if not mnist_available(mnist_dir):
            return None
        X, y = load_mnist(mnist_dir)
        return X, y, (0.0, 1.0), "classification"
    if name == "adult":
        return _load_adult(Path(adult_dir))
    raise ValueError(f"unknown table {name!r}; tables are {', '.join(TABLES)}")


def _load_adult(adult_dir):
    path = adult_dir / "adult.data"
    if not path.is_file():
        return None
    import pandas as pd

    frame = pd.read_csv(path, header=None, names=ADULT_COLUMNS, skipinitialspace=True,
                        comment="|").dropna(subset=["income"])
    y = frame.pop("income").str.startswith(">50K").astype(int).to_numpy()
    numeric = frame[ADULT_NUMERIC].to_numpy(float)
    categorical = frame.drop(columns=ADULT_NUMERIC)
    # One column per category adult.names lists (all appear in adult.data);
    # one-hot columns are in [0, 1] already.
    onehot = pd.get_dummies(categorical.astype(str)).to_numpy(float)
    X = np.hstack([numeric, onehot])
    lower = np.concatenate([ADULT_BOUNDS[0], np.zeros(onehot.shape[1])])
    upper = np.concatenate([ADULT_BOUNDS[1], np.ones(onehot.shape[1])])
    return X, y, (lower, upper), "classification"


def _estimator(task, variant, epsilon, bounds, eta0="auto"):
    import sklearn_dplssgd as dp

    params = dict(epsilon=epsilon, feature_bounds=bounds, eta0=eta0)
    if variant == "dp-sgd":
        params["sigma"] = 0.0
    elif variant == "output":
        # Output perturbation's sensitivity falls as the regularization grows.
        params["mechanism"], params["alpha"] = "output", OUTPUT_ALPHA
    if task == "regression":
        return dp.DPLSSGDRegressor(target_bounds=DIABETES_TARGET_BOUNDS, **params)
    return dp.DPLSSGDClassifier(**params)


def _score(task, model, X, y):
    from sklearn.metrics import accuracy_score, r2_score

    prediction = model.predict(X)
    return r2_score(y, prediction) if task == "regression" else accuracy_score(y, prediction)


def _non_private(task, bounds, X_train, y_train, X_test, y_test):
    from sklearn.linear_model import LogisticRegression, Ridge
    from sklearn.pipeline import make_pipeline

    from sklearn_dplssgd import BoundedScaler

    model = Ridge(alpha=1.0) if task == "regression" else LogisticRegression(max_iter=2000)
    pipeline = make_pipeline(BoundedScaler(*bounds), model).fit(X_train, y_train)
    return _score(task, pipeline, X_test, y_test)


def _tuned(task, epsilon, bounds, X_train, y_train, X_test, y_test, seed):
    from sklearn.model_selection import train_test_split

    stratify = y_train if task == "classification" else None
    X_fit, X_val, y_fit, y_val = train_test_split(
        X_train, y_train, test_size=0.25, random_state=seed, stratify=stratify)
    scale = 0.25 if task == "regression" else 1.0
    grid = [eta0 if eta0 == "auto" else eta0 * scale for eta0 in ETA0_GRID]
    scores = []
    for eta0 in grid:
        model = _estimator(task, "defaults", epsilon, bounds, eta0)
        scores.append(_score(task, model.fit(X_fit, y_fit), X_val, y_val))
    best = grid[int(np.argmax(scores))]
    model = _estimator(task, "defaults", epsilon, bounds, best)
    return _score(task, model.fit(X_train, y_train), X_test, y_test)


def run_cell(table, data, epsilon, variant, split):
    """One fit's test score of ``variant`` on ``split`` of ``table``."""
    from sklearn.model_selection import train_test_split

    X, y, bounds, task = data
    stratify = y if task == "classification" else None
    X_train, X_test, y_train, y_test = train_test_split(
        X, y, test_size=0.25, random_state=split, stratify=stratify)
    with warnings.catch_warnings():
        # Advice the library gives the user (a slow fit, clipped rows) is
        # not a result of this benchmark.
        warnings.simplefilter("ignore")
        if variant == "non-private":
            return _non_private(task, bounds, X_train, y_train, X_test, y_test)
        if variant == "tuned":
            return _tuned(task, epsilon, bounds, X_train, y_train, X_test, y_test, split)
        model = _estimator(task, variant, epsilon, bounds).fit(X_train, y_train)
        return _score(task, model, X_test, y_test)


def summarize(scores):
    """``(mean, standard error)`` of a list of scores (s.e. 0 for one score)."""
    scores = np.asarray(scores, dtype=float)
    if scores.size < 2:
        return float(scores.mean()), 0.0
    return float(scores.mean()), float(scores.std(ddof=1) / math.sqrt(scores.size))


def _difference_rows(table, results, baseline, args):
    """Rows of paired differences (this run minus ``baseline``) for ``table``."""
    rows = []
    for variant in args.variants:
        before = baseline.get(table, {}).get(variant)
        if (table, variant) not in results or before is None:
            continue
        cells = []
        for epsilon in args.epsilons:
            after = results[(table, variant)][epsilon]
            paired = before.get(f"{epsilon:g}", [])[:len(after)]
            if len(paired) != len(after):
                cells.append("-")
                continue
            mean, error = summarize(np.subtract(after, paired))
            cells.append(f"{mean:+.3f} +- {error:.3f}")
        rows.append(f"| {variant} minus baseline | " + " | ".join(cells) + " |")
    return rows


def scores_json(results):
    """Every split's score, by table, variant and epsilon (``--save-scores``)."""
    saved = {}
    for key, scores in results.items():
        if key[1] != "shape":
            saved.setdefault(key[0], {})[key[1]] = {f"{e:g}": s for e, s in scores.items()}
    return saved


def render(results, args, tables, seconds, baseline=None):
    """The markdown of the results file."""
    lines = [
        "# Accuracy against epsilon",
        "",
        "Written by `benchmarks/accuracy.py` (its docstring describes the tables, the splits "
        "and the variants). Each cell: the mean test score over "
        f"{args.splits} random held-out splits (75 % train, 25 % test) and its standard "
        "error, `mean +- s.e.`; accuracy for the classifiers, R2 for diabetes (the "
        "regressor). Replace-one adjacency, delta 1e-5, the PLD accountant. `tuned` is a "
        "reference whose choice of `eta0` on a validation part is not accounted; "
        "`non-private` does not depend on epsilon.",
        "",
    ]
    if baseline is not None:
        lines += [
            f"Baseline: {args.baseline_label}. A `minus baseline` row is the mean paired "
            "difference (this run's score minus the baseline run's on the same split) and "
            "its standard error.",
            "",
        ]
    lines += [
        "Command: `python benchmarks/accuracy.py " + " ".join(args.argv) + "`",
        "",
        f"Machine: {machine_note()}; {seconds / 60:.1f} min.",
        "",
    ]
    for table in tables:
        rows = [variant for variant in args.variants if (table, variant) in results]
        if not rows:
            continue
        n_rows, n_features = results[(table, "shape")]
        lines += [f"## {table} ({n_rows:,} rows, {n_features} features)", "",
                  "| variant | " + " | ".join(f"epsilon {e:g}" for e in args.epsilons) + " |",
                  "|---|" + "---|" * len(args.epsilons)]
        for variant in rows:
            cells = []
            for epsilon in args.epsilons:
                mean, error = summarize(results[(table, variant)][epsilon])
                cells.append(f"{mean:.3f} +- {error:.3f}")
            lines.append(f"| {variant} | " + " | ".join(cells) + " |")
        if baseline is not None:
            lines += _difference_rows(table, results, baseline, args)
        lines.append("")
    return "\n".join(lines)


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--tables", nargs="+", choices=TABLES, default=list(TABLES),
                        help="tables (mnist and adult where their files are present)")
    parser.add_argument("--epsilons", nargs="+", type=float, default=[0.5, 1.0, 4.0])
    parser.add_argument("--splits", type=int, default=3, help="held-out splits per cell")
    parser.add_argument("--variants", nargs="+", choices=VARIANTS, default=list(VARIANTS))
    parser.add_argument("--mnist-dir", default=str(DEFAULT_MNIST_DIR))
    parser.add_argument("--adult-dir", default=str(DEFAULT_ADULT_DIR))
    parser.add_argument("--out", default=str(RESULTS), help="folder of accuracy.md")
    parser.add_argument("--name", default="accuracy.md", help="name of the results file")
    parser.add_argument("--save-scores", help="write every split's score to this JSON file")
    parser.add_argument("--baseline", help="JSON of --save-scores from another run: "
                        "add paired differences against it")
    parser.add_argument("--baseline-label", default="another run",
                        help="what the baseline run was, for the results file")
    parser.add_argument("--quick", action="store_true",
                        help="a smoke run: digits and diabetes, epsilon 1, 2 splits")
    argv = sys.argv[1:] if argv is None else argv
    args = parser.parse_args(argv)
    args.argv = argv
    if args.quick:
        args.tables, args.epsilons, args.splits = ["diabetes", "digits"], [1.0], 2
    if args.splits < 1:
        parser.error("--splits must be at least 1")

    baseline = None
    if args.baseline:
        baseline = json.loads(Path(args.baseline).read_text(encoding="utf-8"))
    start = time.perf_counter()
    results = {}
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    for table in args.tables:
        data = load_table(table, args.mnist_dir, args.adult_dir)
        if data is None:
            print(f"{table}: its files are not present, skipping it")
            continue
        results[(table, "shape")] = data[0].shape
        for variant in args.variants:
            if variant == "output" and data[3] == "regression":
                continue  # the regressor's output perturbation needs a weight radius
            fixed = None  # the non-private model's scores do not depend on epsilon
            for epsilon in args.epsilons:
                scores = fixed or [run_cell(table, data, epsilon, variant, split)
                                   for split in range(args.splits)]
                fixed = scores if variant == "non-private" else None
                results.setdefault((table, variant), {})[epsilon] = scores
                mean, error = summarize(scores)
                print(f"{table} {variant} epsilon {epsilon:g}: {mean:.3f} +- {error:.3f}",
                      flush=True)
        # Written after each table: a long run's finished tables are kept.
        text = render(results, args, args.tables, time.perf_counter() - start, baseline)
        (out / args.name).write_text(text + "\n", encoding="utf-8")
        if args.save_scores:
            Path(args.save_scores).write_text(json.dumps(scores_json(results)), encoding="utf-8")
        print(f"wrote {out / args.name}")


if __name__ == "__main__":
    main()
