"""Diabetes in raw units, nothing declared: the bounds' two mechanisms at one total budget.

The pipeline of ``bench_regime_heldout.py --diabetes``: a ``DPBoundedScaler``
on the ten features, one on the target (its ends become the regressor's
``target_bounds``), then ``DPLSSGDRegressor``, against the same regressor
with declared bounds (``BoundedScaler`` of the public ranges and
``target_bounds``) at the whole total. Total replace-one epsilon 3 at delta
1e-5, 75/25 splits (seeds from 700), every other setting ``"auto"``.

* ``above_threshold``: the scalers' pure epsilons and the regressor's epsilon
  add up to the total (basic composition: what the ledger does with them).
* ``gaussian_histogram``: each scaler is one Gaussian release calibrated to
  its own (epsilon, 1e-6); the regressor gets what ``epsilon="remaining"``
  leaves it: the epsilon for which one PLD accountant of all three events
  stays within the total (the ledger's composed total, reported). The regressor's event
  depends only on public quantities (the row count under replace-one, d,
  epsilon), so it is read from a fit of public random data of the same
  shape.

``--per-split`` judges the pipeline as a user writes it the way the target
is stated (at least 16 fits a cell over at least 3 splits): on each split,
``--fits`` fits of the private pipeline and of the declared one, each with
fresh noise (a ledger per private fit; scalers' ``epsilon`` from
``--scaler-epsilon``, the regressor's ``epsilon="remaining"``), their means
and the difference of the means with its standard error; and which ranges
the histograms found, per feature and for the target (where the remaining
gap comes from). ``--bins-per-octave k`` screens another grid than the
library's (bins ``2**(1/k)`` wide) in the same pipeline.

Run from the repository root, at one thread::

    PYTHONPATH=. NUMBA_NUM_THREADS=1 python benchmarks/bench_regime_diabetes.py --splits 16
    PYTHONPATH=. NUMBA_NUM_THREADS=1 python benchmarks/bench_regime_diabetes.py --per-split \\
        --splits 16 --fits 8 --scaler-epsilon auto 1
    PYTHONPATH=. python benchmarks/bench_regime_diabetes.py --quick      # seconds

Writes ``regime_heldout_diabetes_histogram.md`` (``--per-split``:
``regime_diabetes_per_split.md``) to ``--out`` (default
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
from bench_dp_preprocessing import DIABETES_BOUNDS, DIABETES_TARGET_BOUNDS  # noqa: E402

TOTAL, DELTA, SEED_BASE = 3.0, 1e-5, 700
# (mechanism, features' scaler epsilon, target scaler epsilon)
VARIANTS = (("above_threshold", 1.5, 0.5), ("gaussian_histogram", 1.0, 0.3),
            ("gaussian_histogram", 1.0, 0.5), ("gaussian_histogram", 0.7, 0.3),
            ("gaussian_histogram", 1.5, 0.5))


def _quiet(fit):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # reproducible=True and few rows: known here
        return fit()


def model_epsilon_within(scaler_events, n_samples, n_features):
    """The regressor's epsilon that spends what the scalers leave of TOTAL, and the total.

    The library's ``epsilon="remaining"`` on a ledger holding the scalers'
    events; the regressor's event depends only on public quantities (the row
    count under replace-one, d), so it is read from a fit of public random
    data of the same shape, then used by the seeded fits.
    """
    import sklearn_dplssgd as dp
    ledger = dp.PrivacyLedger(max_epsilon=TOTAL, delta=DELTA)
    for k, event in enumerate(scaler_events):
        ledger.charge(f"scaler {k}", event, "replace_one")
    rng = np.random.default_rng(0)
    X, y = rng.uniform(-1, 1, (n_samples, n_features)), rng.uniform(0, 1, n_samples)
    model = _quiet(lambda: dp.DPLSSGDRegressor(epsilon="remaining", ledger=ledger,
                                               target_bounds=(0, 1)).fit(X, y))
    total = ledger.epsilon()
    ledger.close()
    return float(model.epsilon_), total


def run(n_splits, variants):
    from sklearn.datasets import load_diabetes
    from sklearn.model_selection import train_test_split
    from sklearn.pipeline import make_pipeline
    import sklearn_dplssgd as dp
    X, y = load_diabetes(return_X_y=True, scaled=False)
    lines = ["", "| bounds | features / target epsilon | model epsilon | total (PLD) | private "
             "| declared | private - declared | worst split difference |",
             "|---|---|---|---|---|---|---|---|"]
    budgets = {}
    for mechanism, scaler_epsilon, target_epsilon in variants:
        private, declared = [], []
        for split in range(n_splits):
            seed = SEED_BASE + split
            X_train, X_test, y_train, y_test = train_test_split(
                X, y, test_size=0.25, random_state=seed)
            if (mechanism, scaler_epsilon, target_epsilon) not in budgets:
                if mechanism == "above_threshold":
                    model_epsilon = TOTAL - scaler_epsilon - target_epsilon
                    budgets[mechanism, scaler_epsilon, target_epsilon] = (model_epsilon, TOTAL)
                else:
                    events = [dp.DPBoundedScaler(epsilon=e, mechanism=mechanism).fit(
                        np.zeros((len(y_train), d))).dp_event_  # public shape only
                        for e, d in ((scaler_epsilon, X.shape[1]), (target_epsilon, 1))]
                    budgets[mechanism, scaler_epsilon, target_epsilon] = model_epsilon_within(
                        events, len(y_train), X.shape[1])
            model_epsilon, total = budgets[mechanism, scaler_epsilon, target_epsilon]
            declared.append(_quiet(lambda: make_pipeline(
                dp.BoundedScaler(*DIABETES_BOUNDS),
                dp.DPLSSGDRegressor(epsilon=TOTAL, target_bounds=DIABETES_TARGET_BOUNDS,
                                    random_state=seed, reproducible=True)
            ).fit(X_train, y_train).score(X_test, y_test)))
            target = _quiet(lambda: dp.DPBoundedScaler(
                epsilon=target_epsilon, mechanism=mechanism, random_state=seed,
                reproducible=True).fit(y_train.reshape(-1, 1)))
            private.append(_quiet(lambda: make_pipeline(
                dp.DPBoundedScaler(epsilon=scaler_epsilon, mechanism=mechanism,
                                   random_state=seed, reproducible=True),
                dp.DPLSSGDRegressor(epsilon=model_epsilon,
                                    target_bounds=(target.lower_[0], target.upper_[0]),
                                    random_state=seed, reproducible=True)
            ).fit(X_train, y_train).score(X_test, y_test)))
        difference = np.array(private) - np.array(declared)
        lines.append(
            f"| {mechanism} | {scaler_epsilon:g} / {target_epsilon:g} | {model_epsilon:.3g} | "
            f"{total:.3f} | {np.mean(private):.3f} | {np.mean(declared):.3f} | "
            f"{difference.mean():+.3f} | {difference.min():+.3f} |")
        print(lines[-1], flush=True)
    return lines


def _user_pipeline_fit(X_train, y_train, X_test, y_test, scaler_epsilon):
    """One fresh-noise fit of the pipeline as a user writes it; its R2 and the ranges found."""
    from sklearn.pipeline import make_pipeline
    import sklearn_dplssgd as dp
    ledger = dp.PrivacyLedger(max_epsilon=TOTAL, delta=DELTA)
    target = dp.DPBoundedScaler(epsilon=scaler_epsilon, ledger=ledger).fit(
        y_train.reshape(-1, 1))
    pipeline = make_pipeline(
        dp.DPBoundedScaler(epsilon=scaler_epsilon, ledger=ledger),
        dp.DPLSSGDRegressor(epsilon="remaining", ledger=ledger,
                            target_bounds=(target.lower_[0], target.upper_[0])))
    score = _quiet(lambda: pipeline.fit(X_train, y_train).score(X_test, y_test))
    ledger.close()
    scaler = pipeline[0]
    return score, (target.lower_[0], target.upper_[0]), (scaler.lower_, scaler.upper_)


def _declared_fit(X_train, y_train, X_test, y_test):
    """One fresh-noise fit with the public ranges declared and the whole budget."""
    from sklearn.pipeline import make_pipeline
    import sklearn_dplssgd as dp
    return _quiet(lambda: make_pipeline(
        dp.BoundedScaler(*DIABETES_BOUNDS),
        dp.DPLSSGDRegressor(epsilon=TOTAL, target_bounds=DIABETES_TARGET_BOUNDS)
    ).fit(X_train, y_train).score(X_test, y_test))


def _range_note(ranges):
    """The ranges a split's fits found, most frequent first: ``[32, 256] x5, [32, 512] x3``."""
    found = {}
    for low, high in ranges:
        key = f"[{low:g}, {high:g}]"
        found[key] = found.get(key, 0) + 1
    return ", ".join(f"{key} x{count}" for key, count in
                     sorted(found.items(), key=lambda item: -item[1]))


def run_per_split(n_splits, n_fits, scaler_epsilons):
    """Per-split mean R2 of both pipelines over fresh-noise fits, and their difference."""
    from sklearn.datasets import load_diabetes
    from sklearn.model_selection import train_test_split
    X, y = load_diabetes(return_X_y=True, scaled=False)
    lines = []
    for scaler_epsilon in scaler_epsilons:
        lines += ["", f"## Scalers' epsilon={scaler_epsilon!r}", "",
                  "| split | declared R2 | private R2 | private - declared | s.e. "
                  "| target ranges found |", "|---|---|---|---|---|---|"]
        differences, standard_errors, features = [], [], []
        for split in range(n_splits):
            X_train, X_test, y_train, y_test = train_test_split(
                X, y, test_size=0.25, random_state=SEED_BASE + split)
            declared = np.array([_declared_fit(X_train, y_train, X_test, y_test)
                                 for _ in range(n_fits)])
            fits = [_user_pipeline_fit(X_train, y_train, X_test, y_test, scaler_epsilon)
                    for _ in range(n_fits)]
            private = np.array([score for score, _, _ in fits])
            features += [ranges for _, _, ranges in fits]
            difference = private.mean() - declared.mean()
            se = math.sqrt(private.var(ddof=1) / n_fits + declared.var(ddof=1) / n_fits)
            differences.append(difference)
            standard_errors.append(se)
            lines.append(f"| {SEED_BASE + split} | {declared.mean():.3f} | {private.mean():.3f} "
                         f"| {difference:+.3f} | {se:.3f} | "
                         f"{_range_note([target for _, target, _ in fits])} |")
            print(lines[-1], flush=True)
        worst = int(np.argmin(differences))
        lines += ["", f"Mean difference {np.mean(differences):+.3f}; worst split "
                  f"{SEED_BASE + worst}: {differences[worst]:+.3f} ± "
                  f"{standard_errors[worst]:.3f} (s.e.); splits more than 0.1 below: "
                  f"{sum(d < -0.1 for d in differences)} of {n_splits}.", "",
                  "Feature ranges found (all splits and fits; public ranges in brackets):", "",
                  "| feature | declared | ranges found |", "|---|---|---|"]
        for j in range(X.shape[1]):
            lines.append(f"| {j} | [{DIABETES_BOUNDS[0][j]:g}, {DIABETES_BOUNDS[1][j]:g}] | "
                         f"{_range_note([(low[j], high[j]) for low, high in features])} |")
    return lines


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--splits", type=int, default=16)
    parser.add_argument("--per-split", action="store_true",
                        help="the pipeline as a user writes it, --fits fresh-noise fits a "
                             "split, per-split means (regime_diabetes_per_split.md)")
    parser.add_argument("--fits", type=int, default=8)
    parser.add_argument("--bins-per-octave", type=int, default=None,
                        help="with --per-split: a screen of another histogram grid than the "
                             "library's (bins 2**(1/k) wide; the same span, sensitivity and "
                             "threshold rule), written to regime_diabetes_per_split_grid<k>.md")
    parser.add_argument("--scaler-epsilon", nargs="+", default=["auto"])
    parser.add_argument("--out", type=Path, default=None)
    args = parser.parse_args(argv)
    out = args.out or (Path(tempfile.mkdtemp()) if args.quick else
                       Path(__file__).resolve().parent / "results")
    out.mkdir(parents=True, exist_ok=True)
    command = ("PYTHONPATH=. NUMBA_NUM_THREADS=1 python benchmarks/bench_regime_diabetes.py "
               + " ".join(argv if argv is not None else sys.argv[1:]))
    if args.per_split:
        return main_per_split(args, out, command)
    lines = ["# Diabetes in raw units: bounds by AboveThreshold or by one Gaussian histogram",
             "", f"Generated by `{command}`. {_data.machine_note()} (a shared machine).", "",
             f"Total replace-one epsilon {TOTAL:g} at delta {DELTA:g}; one fit on each of "
             f"{2 if args.quick else args.splits} 75/25 splits (seeds from {SEED_BASE}). "
             "`above_threshold`: scaler and model epsilons add up to the total. "
             "`gaussian_histogram`: each scaler's epsilon is its own at delta 1e-6; the model "
             "epsilon is what `epsilon=\"remaining\"` leaves it on a ledger capped at the "
             "total (the PLD composition with both scalers' events), shown as "
             "\"total (PLD)\". \"private - declared\": "
             "against the regressor with declared bounds at the whole total, same split and "
             "seed; \"worst split difference\": the lowest of those differences."]
    lines += run(2 if args.quick else args.splits, VARIANTS[:2] if args.quick else VARIANTS)
    (out / "regime_heldout_diabetes_histogram.md").write_text("\n".join(lines) + "\n")
    print(f"wrote {out / 'regime_heldout_diabetes_histogram.md'}")
    return 0


def use_other_grid(bins_per_octave):
    """Screen only: the histogram release on bins ``2**(1 / bins_per_octave)`` wide.

    Replaces the grid the library's range finder reads by the library's
    grid at another number of bins an octave (the same span, ``+-2**-20``
    to ``+-2**50``, and 0). The grid stays data-independent and a row still
    moves one count per feature, so the release's sensitivity and event are
    unchanged; the detection threshold's union bound counts the grid's bins
    (the library reads the grid's size from it).
    """
    from sklearn_dplssgd.preprocessing import _histogram_ranges

    library_grid = _histogram_ranges.histogram_grid
    _histogram_ranges.histogram_grid = lambda: library_grid(bins_per_octave)


def main_per_split(args, out, command):
    """``--per-split``: writes ``regime_diabetes_per_split.md``."""
    n_splits, n_fits = (3, 2) if args.quick else (args.splits, args.fits)
    grid_note = ""
    from sklearn_dplssgd.preprocessing._histogram_ranges import HISTOGRAM_BINS_PER_OCTAVE
    screen = args.bins_per_octave not in (None, HISTOGRAM_BINS_PER_OCTAVE)
    if screen:
        use_other_grid(args.bins_per_octave)
        grid_note = (f" **A screen**: the histograms' bins are 2**(1/{args.bins_per_octave}) "
                     f"wide instead of the library's 2**(1/{HISTOGRAM_BINS_PER_OCTAVE}) (same "
                     "span, sensitivity, event, threshold rule and fallback).")
    epsilons = [value if value == "auto" else float(value) for value in args.scaler_epsilon]
    lines = ["# Diabetes in raw units, nothing declared: per-split means over fresh-noise fits",
             "", f"Generated by `{command}`. {_data.machine_note()} (a shared machine; "
             "accuracies do not depend on the load).", "",
             f"Total replace-one epsilon {TOTAL:g} at delta {DELTA:g}; {n_splits} 75/25 splits "
             f"(seeds from {SEED_BASE}), {n_fits} fits of each pipeline a split, each with "
             "fresh noise. Private: the pipeline as a user writes it: `ledger = "
             "PrivacyLedger(max_epsilon=3)`, `DPBoundedScaler(epsilon=..., ledger=ledger)` on "
             "the target and on the features (the Gaussian histogram, every other parameter "
             "its default), `DPLSSGDRegressor(epsilon=\"remaining\", target_bounds=<the "
             "target scaler's ends>, ledger=ledger)`. Declared: `BoundedScaler` of the public "
             "ranges and `target_bounds=(25, 350)`, the regressor at epsilon 3. \"private - "
             "declared\": the difference of the split's two means; s.e.: its standard error "
             "(both pipelines' fit-to-fit spread)." + grid_note]
    lines += run_per_split(n_splits, n_fits, epsilons)
    path = out / ("regime_diabetes_per_split.md" if not screen else
                  f"regime_diabetes_per_split_grid{args.bins_per_octave}.md")
    path.write_text("\n".join(lines) + "\n")
    print(f"wrote {path}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
