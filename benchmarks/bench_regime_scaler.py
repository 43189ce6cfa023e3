"""DPBoundedScaler's two mechanisms at one scaler epsilon, composed by hand or in a ledger.

The raw-unit tables of ``bench_dp_preprocessing.py`` (UCI Adult's six numeric
columns, the synthetic heavy-tailed tables of 30,000 and 5,000 rows, each
with ``DPOneHotEncoder(epsilon=0.1, delta=1e-6)`` on the categories and a
classifier with ``sigma=0``, total epsilon 1 at delta 1e-5; diabetes in raw
units, a scaler on the features and one on the target whose ends become
``target_bounds``, total epsilon 3), every scaler at the same epsilon with
``mechanism="above_threshold"`` (pure epsilon) and ``"gaussian_histogram"``
(``delta=1e-6``), and the model's budget found two ways:

* ``basic``: the model's epsilon is the total less the preprocessing's
  epsilons (less a hundredth per unit of total for the ledger's pessimistic
  grid), its delta the total's less the preprocessing's deltas: what adding
  epsilons (basic composition) allows;
* ``ledger``: the model is fitted with ``epsilon="remaining"`` and one
  ``PrivacyLedger(max_epsilon=total)`` composes every event under PLD.

Then the diabetes pipeline as a user writes it with nothing declared: both
scalers with every default (``DPBoundedScaler(ledger=ledger)``), or with
``epsilon="auto"``, and
``DPLSSGDRegressor(epsilon="remaining", ledger=ledger)`` under
``PrivacyLedger(max_epsilon=3)``, against declared bounds with the whole
budget on each split.

Every private fit draws fresh noise (a ledger refuses a reproducible fit:
its noise is not private), so each figure is a mean over fits with its
standard error. Run from the repository root, at one thread::

    PYTHONPATH=. NUMBA_NUM_THREADS=1 python benchmarks/bench_regime_scaler.py --adult-dir PATH
    PYTHONPATH=. python benchmarks/bench_regime_scaler.py --quick      # seconds

Writes ``regime_scaler_mechanisms.md`` to ``--out`` (default
``benchmarks/results``; ``--quick``: a temporary folder).
"""

import argparse
import math
import sys
import tempfile
import warnings
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
import _data  # noqa: E402
from bench_dp_preprocessing import (  # noqa: E402
    ADULT_NUMERIC, DEFAULT_ADULT_DIR, DIABETES_BOUNDS, DIABETES_TARGET_BOUNDS,
    ENCODER_DELTA, ENCODER_EPSILON, TOTAL_DELTA, load_adult, synthetic_table,
)

MECHANISMS = ("above_threshold", "gaussian_histogram")
SCALER_DELTA = 1e-6
CLASSIFIER_TOTAL, CLASSIFIER_SCALER_EPSILON = 1.0, 0.1
DIABETES_TOTAL = 3.0
# (features, target) scaler epsilons on diabetes: the best split of each
# mechanism in regime_heldout_diabetes_histogram.md.
DIABETES_SCALER_EPSILONS = ((1.5, 0.5), (1.0, 0.5))
SPLIT_SEED_BASE = 700


def _mean_se(values):
    values = np.asarray(values, dtype=float)
    se = values.std(ddof=1) / np.sqrt(values.size) if values.size > 1 else float("nan")
    if abs(values.mean()) >= 1e3:  # a range far from the data: say how far, not 20 digits
        return f"{values.mean():.3g} ± {se:.3g}"
    return f"{values.mean():.3f} ± {se:.3f}"


def _model_budget(composition, total, preprocessing):
    """The model's (epsilon, delta): what basic composition leaves, or the ledger's remainder.

    ``preprocessing``: the (epsilon, delta) of each preprocessing release.
    """
    if composition == "ledger":
        return "remaining", "auto"
    epsilon = total * 0.99 - sum(e for e, _ in preprocessing)
    return epsilon, TOTAL_DELTA - sum(d for _, d in preprocessing)


def classifier_cell(mechanism, composition, categorical, numeric, train, test, repeats):
    """Test accuracies and ledger totals of the private classifier pipeline."""
    from sklearn.compose import ColumnTransformer
    from sklearn.pipeline import make_pipeline
    import sklearn_dplssgd as dp
    scaler_delta = SCALER_DELTA if mechanism == "gaussian_histogram" else 0.0
    epsilon, delta = _model_budget(composition, CLASSIFIER_TOTAL, [
        (ENCODER_EPSILON, ENCODER_DELTA), (CLASSIFIER_SCALER_EPSILON, scaler_delta)])
    scores, totals = [], []
    for _ in range(repeats):
        ledger = dp.PrivacyLedger(max_epsilon=CLASSIFIER_TOTAL, delta=TOTAL_DELTA)
        pipeline = make_pipeline(
            ColumnTransformer([
                ("categories", dp.DPOneHotEncoder(epsilon=ENCODER_EPSILON, delta=ENCODER_DELTA,
                                                  ledger=ledger), categorical),
                ("numbers", dp.DPBoundedScaler(epsilon=CLASSIFIER_SCALER_EPSILON,
                                               mechanism=mechanism, delta=SCALER_DELTA,
                                               ledger=ledger), numeric),
            ]),
            dp.DPLSSGDClassifier(epsilon=epsilon, delta=delta, sigma=0.0, classes=[0, 1],
                                 ledger=ledger))
        scores.append(pipeline.fit(*train).score(*test))
        totals.append(ledger.epsilon())
        ledger.close()
    return scores, totals, epsilon if composition == "basic" else pipeline[-1].epsilon_


def diabetes_private(X_train, y_train, X_test, y_test, scaler_kwargs, target_kwargs,
                     model_epsilon, model_delta):
    """Test R2 of the private diabetes pipeline, the ledger total and the model's epsilon_."""
    from sklearn.pipeline import make_pipeline
    import sklearn_dplssgd as dp
    ledger = dp.PrivacyLedger(max_epsilon=DIABETES_TOTAL, delta=TOTAL_DELTA)
    try:
        target = dp.DPBoundedScaler(ledger=ledger, **target_kwargs).fit(
            y_train.reshape(-1, 1))
        pipeline = make_pipeline(
            dp.DPBoundedScaler(ledger=ledger, **scaler_kwargs),
            dp.DPLSSGDRegressor(epsilon=model_epsilon, delta=model_delta, ledger=ledger,
                                target_bounds=(target.lower_[0], target.upper_[0])))
        score = pipeline.fit(X_train, y_train).score(X_test, y_test)
    except ValueError as error:
        if "stood out of the noise" not in str(error):
            raise
        # The scaler refused (nothing of a feature stood out): no model.
        ledger.close()
        return math.nan, math.nan, math.nan
    total = ledger.epsilon()
    ledger.close()
    return score, total, pipeline[-1].epsilon_


def diabetes_splits(n_splits):
    from sklearn.datasets import load_diabetes
    from sklearn.model_selection import train_test_split
    X, y = load_diabetes(return_X_y=True, scaled=False)
    return [train_test_split(X, y, test_size=0.25, random_state=SPLIT_SEED_BASE + split)
            for split in range(n_splits)]


def diabetes_declared(splits):
    """Test R2 with declared bounds and the whole budget, one fresh-noise fit per split."""
    from sklearn.pipeline import make_pipeline
    import sklearn_dplssgd as dp
    return [make_pipeline(
        dp.BoundedScaler(*DIABETES_BOUNDS),
        dp.DPLSSGDRegressor(epsilon=DIABETES_TOTAL, target_bounds=DIABETES_TARGET_BOUNDS),
    ).fit(X_train, y_train).score(X_test, y_test)
        for X_train, X_test, y_train, y_test in splits]


def run(args):
    lines = ["", "## 1. The classifier tables, total epsilon 1 (scaler epsilon 0.1)", "",
             "| table | scaler mechanism | model budget | model epsilon | test accuracy "
             "| ledger total |", "|---|---|---|---|---|---|"]
    tables = []
    adult = load_adult(args.adult_dir)
    if adult is None:
        lines.insert(2, f"Adult skipped: `adult.data` and `adult.test` not found in "
                        f"`{args.adult_dir}`.\n")
    else:
        (train, test), _ = adult
        if args.quick:
            train = (train[0].iloc[:3000], train[1][:3000])
            test = (test[0].iloc[:1000], test[1][:1000])
        categorical = [c for c in train[0].columns if c not in ADULT_NUMERIC]
        tables.append(("Adult", categorical, ADULT_NUMERIC, train, test))
    for n_rows in ((3000,) if args.quick else (30_000, 5_000)):
        people, label, _ = synthetic_table(n_rows, seed=n_rows)
        cut = int(0.75 * n_rows)
        tables.append((f"synthetic {n_rows}", ["education", "workclass", "country"],
                       ["age", "hours_per_week", "income", "capital_gain"],
                       (people.iloc[:cut], label[:cut]), (people.iloc[cut:], label[cut:])))
    for name, categorical, numeric, train, test in tables:
        for mechanism in MECHANISMS:
            for composition in ("basic", "ledger"):
                scores, totals, epsilon = classifier_cell(
                    mechanism, composition, categorical, numeric, train, test, args.repeats)
                lines.append(f"| {name} | {mechanism} | {composition} | {epsilon:.3f} | "
                             f"{_mean_se(scores)} | {np.mean(totals):.4f} |")
                print(lines[-1], flush=True)

    splits = diabetes_splits(args.splits)
    declared = np.array(diabetes_declared(splits))
    lines += ["", f"## 2. Diabetes in raw units, total epsilon 3 ({len(splits)} splits)", "",
              f"Declared bounds, model epsilon 3: R2 {_mean_se(declared)}.", "",
              "| scaler mechanism | features / target epsilon | model budget | model epsilon "
              "| private R2 | private - declared | worst split difference | ledger total |",
              "|---|---|---|---|---|---|---|---|"]
    for mechanism in MECHANISMS:
        scaler_delta = SCALER_DELTA if mechanism == "gaussian_histogram" else 0.0
        for features, target in DIABETES_SCALER_EPSILONS:
            for composition in ("basic", "ledger"):
                epsilon, delta = _model_budget(composition, DIABETES_TOTAL, [
                    (features, scaler_delta), (target, scaler_delta)])
                results = [diabetes_private(
                    X_train, y_train, X_test, y_test,
                    dict(epsilon=features, mechanism=mechanism, delta=SCALER_DELTA),
                    dict(epsilon=target, mechanism=mechanism, delta=SCALER_DELTA),
                    epsilon, delta) for X_train, X_test, y_train, y_test in splits]
                scores, totals, epsilons = map(np.array, zip(*results))
                difference = scores - declared
                lines.append(
                    f"| {mechanism} | {features:g} / {target:g} | {composition} | "
                    f"{np.mean(epsilons):.3f} | {_mean_se(scores)} | {difference.mean():+.3f} "
                    f"| {difference.min():+.3f} | {np.mean(totals):.4f} |")
                print(lines[-1], flush=True)

    lines += ["", "## 3. Diabetes as a user writes it: every scaler default, "
              "epsilon=\"remaining\"", "",
              "`ledger = PrivacyLedger(max_epsilon=3)`; `DPBoundedScaler(ledger=ledger)` on the "
              "target and on the features (every other parameter its default); "
              "`DPLSSGDRegressor(epsilon=\"remaining\", target_bounds=<the target scaler's "
              "ends>, ledger=ledger)`. Also with `epsilon=\"auto\"` for both scalers, and "
              "with their epsilons set (1 / 0.5), their mechanism the default.", "",
              "| scalers | model epsilon | private R2 | median R2 | private - declared | worst "
              "split difference | ledger total |", "|---|---|---|---|---|---|---|"]
    above = {"mechanism": "above_threshold"}
    for label, scaler_kwargs, target_kwargs in (
            ("all defaults", {}, {}),
            ("defaults but mechanism=\"above_threshold\"", above, above),
            ("epsilon=\"auto\"", {"epsilon": "auto"}, {"epsilon": "auto"}),
            ("epsilon 1 / 0.5", {"epsilon": 1.0}, {"epsilon": 0.5})):
        results = [diabetes_private(X_train, y_train, X_test, y_test, scaler_kwargs,
                                    target_kwargs, "remaining", "auto")
                   for X_train, X_test, y_train, y_test in splits]
        scores, totals, epsilons = map(np.array, zip(*results))
        refused = np.isnan(scores)
        if refused.all():
            lines.append(f"| {label} | the scaler refused on every split | | | | | |")
            print(lines[-1], flush=True)
            continue
        scores, totals, epsilons = scores[~refused], totals[~refused], epsilons[~refused]
        difference = scores - np.asarray(declared)[~refused]
        note = f" (refused on {refused.sum()} of {refused.size} splits)" if refused.any() else ""
        lines.append(f"| {label}{note} | {np.mean(epsilons):.3f} | {_mean_se(scores)} | "
                     f"{np.median(scores):.3f} | {difference.mean():+.3g} | "
                     f"{difference.min():+.3g} | {np.mean(totals):.4f} |")
        print(lines[-1], flush=True)
    return lines


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--adult-dir", default=str(DEFAULT_ADULT_DIR))
    parser.add_argument("--repeats", type=int, default=8)
    parser.add_argument("--splits", type=int, default=16)
    parser.add_argument("--out", type=Path, default=None)
    args = parser.parse_args(argv)
    if args.quick:
        args.repeats, args.splits = 1, 2
    out = args.out or (Path(tempfile.mkdtemp()) if args.quick else
                       Path(__file__).resolve().parent / "results")
    out.mkdir(parents=True, exist_ok=True)
    warnings.simplefilter("ignore")  # small-table warnings: known here
    command = ("PYTHONPATH=. NUMBA_NUM_THREADS=1 python benchmarks/bench_regime_scaler.py "
               + " ".join(argv if argv is not None else sys.argv[1:]))
    lines = ["# DPBoundedScaler's mechanisms at one scaler epsilon: basic composition or a "
             "ledger", "", f"Generated by `{command}`. {_data.machine_note()} (a shared "
             "machine; accuracies do not depend on the load).", "",
             f"Mean ± standard error over fresh-noise fits ({args.repeats} a cell on the "
             f"classifier tables; one a split on diabetes, split seeds from {SPLIT_SEED_BASE}). "
             "\"basic\": the model's epsilon is the total less the preprocessing's (less 1 "
             "percent of the total), its delta 1e-5 less theirs; \"ledger\": "
             "`epsilon=\"remaining\"` with one `PrivacyLedger(max_epsilon=total, delta=1e-5)` "
             "composing every event under PLD; \"model epsilon\": the model's own epsilon_ "
             "(mean). The Gaussian-histogram scalers are at delta 1e-6."]
    lines += run(args)
    path = out / "regime_scaler_mechanisms.md"
    path.write_text("\n".join(lines) + "\n")
    print(f"wrote {path}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
