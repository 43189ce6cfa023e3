"""Declared feature bounds against the same rows given undeclared, and against Opacus.

Two questions, on held-out splits:

1. Does declaring public bounds (``feature_bounds=(lower, upper)``) cost
   accuracy against giving the same rows, undeclared, in ``[0, 1]`` (a range
   the defaults suit)? For each table, epsilon and split, three fits of the
   defaults, paired (``reproducible=True`` with the split's seed: the same
   batches and noise draws): the rows in ``[0, 1]`` undeclared, the raw rows
   with their bounds declared, and the rows mapped to ``[-1, 1]`` by
   ``BoundedScaler(keep_zero=False)`` (what the declaration trained on before
   image columns kept their zero). Replace-one adjacency, the library's default. Paired
   fits are not private themselves (they report ``epsilon_ = inf``); their
   calibration is that of the private fit.
2. The peers' table: the defaults with the bounds declared and
   ``neighboring="add_remove"`` (private fits) against Opacus (a linear
   model, Poisson batches of 256, clip 1, about the library's 1,000 steps,
   its own accountant at the same epsilon and delta) whose learning rate is
   chosen per epsilon on a validation split (the first split's training rows,
   the last 1,000 held out; a factor-2 grid widened until the best rate is
   inside it), then trained on each split's training rows.
   Tuning on the rows spends privacy that Opacus' epsilon does not count:
   the peer is favoured. The same defaults at replace-one adjacency (the
   stronger guarantee) are set against the same Opacus fits too.
3. With ``--adult-variants``, the diagnosis on Adult: undeclared fits on
   the rows in ``[0, 1]`` with the one-hot columns and the numeric ones
   each kept or mapped to ``[-1, 1]``.

Tables: MNIST (the 10,000 digits of ``../shared/data/mnist-t10k``, 8,000 /
2,000 random splits, pixels / 255, bounds (0, 1); read in place), digits
(bounds (0, 16)), breast cancer and diabetes (regression, R2; bounds: the
table's range, standing in for the ranges a data holder would state), 75 /
25 splits, and UCI Adult when ``adult.data`` / ``adult.test`` are found
(``--adult-dir``; offline without them the table is skipped and the results
say so): its four numeric columns as recorded, declared by stated ranges,
and its categories one-hot encoded by ``pandas.get_dummies``, declared
``(0, 1)``; the declared fits get a DataFrame with those public names.

Usage::

    python benchmarks/bench_declared_bounds.py                 # both parts
    python benchmarks/bench_declared_bounds.py --splits 3 --quick
"""

import argparse
import gzip
import os
import sys
import time
import warnings
from pathlib import Path

import numpy as np
from sklearn.datasets import load_breast_cancer, load_diabetes, load_digits
from sklearn.model_selection import train_test_split

from sklearn_dplssgd import BoundedScaler, DPLSSGDClassifier, DPLSSGDRegressor

ROOT = Path(__file__).resolve().parent.parent
MNIST_DIR = (ROOT / ".." / "shared" / "data" / "mnist-t10k").resolve()
ADULT_DIR = (ROOT / ".." / "shared" / "data" / "adult").resolve()
RESULT = ROOT / "benchmarks" / "results" / "declared_bounds.md"
EPSILONS = (0.5, 1.0, 3.0)
DELTA = 1e-5
OPACUS_RATES = (0.125, 0.25, 0.5, 1.0, 2.0)
OPACUS_BATCH = 256


def _idx(path, offset):
    with gzip.open(path, "rb") as handle:
        return np.frombuffer(handle.read(), dtype=np.uint8, offset=offset)


def load_mnist():
    """The 10,000 digits, pixels / 255, labels."""
    X = _idx(MNIST_DIR / "t10k-images-idx3-ubyte.gz", 16).reshape(-1, 784) / 255.0
    return X, _idx(MNIST_DIR / "t10k-labels-idx1-ubyte.gz", 8).astype(np.int64)


# Adult's numeric columns and the ranges a data holder would state for them.
ADULT_STATED = {"age": (17, 90), "capital-gain": (0, 99999), "capital-loss": (0, 4356),
                "hours-per-week": (1, 99)}


def load_adult(adult_dir):
    """(rows, labels, lower, upper, names), or None without the files.

    The numeric columns as recorded, bounded by the ranges in
    ``ADULT_STATED``, then the categories one-hot encoded by
    ``pandas.get_dummies`` (named ``<column>_<category>``), bounded by
    ``(0, 1)``.
    """
    paths = [Path(adult_dir) / name for name in ("adult.data", "adult.test")]
    if not all(path.is_file() for path in paths):
        return None
    import pandas as pd

    names = ["age", "workclass", "fnlwgt", "education", "education-num", "marital-status",
             "occupation", "relationship", "race", "sex", "capital-gain", "capital-loss",
             "hours-per-week", "native-country", "income"]
    frame = pd.concat([pd.read_csv(path, header=None, names=names, skipinitialspace=True,
                                   comment="|") for path in paths]).dropna(subset=["income"])
    y = frame.pop("income").str.startswith(">50K").to_numpy().astype(int)
    frame = frame.drop(columns=["fnlwgt", "education-num"])
    dummies = pd.get_dummies(frame.drop(columns=list(ADULT_STATED)), dtype=float)
    rows = np.column_stack([frame[list(ADULT_STATED)].to_numpy(float), dummies.to_numpy()])
    lower = np.r_[[lo for lo, _ in ADULT_STATED.values()], np.zeros(dummies.shape[1])]
    upper = np.r_[[hi for _, hi in ADULT_STATED.values()], np.ones(dummies.shape[1])]
    return rows, y, lower, upper, list(ADULT_STATED) + list(dummies.columns)


class Table:
    """A table: rows in [0, 1] (undeclared), the raw rows and their declared bounds.

    ``columns``: the public column names, given to the declared fits (a
    DataFrame) where the table has them.
    """

    def __init__(self, name, raw, y, lower, upper, regression=False, n_test=None, columns=None):
        self.name, self.raw, self.y = name, raw, y
        self.lower, self.upper = np.asarray(lower, float), np.asarray(upper, float)
        self.unit = (raw - self.lower) / (self.upper - self.lower)
        self.regression, self.n_test, self.columns = regression, n_test, columns

    def named(self, index):
        """The raw rows at ``index``, as a DataFrame with the table's names if it has them."""
        if self.columns is None:
            return self.raw[index]
        import pandas as pd

        return pd.DataFrame(self.raw[index], columns=self.columns)

    def split(self, seed):
        stratify = None if self.regression else self.y
        size = self.n_test if self.n_test else 0.25
        return train_test_split(np.arange(len(self.y)), test_size=size, random_state=seed,
                                stratify=stratify)

    def estimator(self, **params):
        if self.regression:
            return DPLSSGDRegressor(target_bounds=(float(self.y.min()), float(self.y.max())),
                                    **params)
        return DPLSSGDClassifier(classes=np.unique(self.y), **params)


def tables(names, adult_dir):
    found, missing = [], []
    if "mnist" in names:
        X, y = load_mnist()
        found.append(Table("MNIST", X, y, 0.0, 1.0, n_test=2000))
    if "digits" in names:
        X, y = load_digits(return_X_y=True)
        found.append(Table("digits", X, y, 0.0, 16.0))
    if "breast_cancer" in names:
        X, y = load_breast_cancer(return_X_y=True)
        found.append(Table("breast cancer", X, y, X.min(axis=0), X.max(axis=0)))
    if "diabetes" in names:
        X, y = load_diabetes(return_X_y=True, scaled=False)
        found.append(Table("diabetes (R2)", X, y, X.min(axis=0), X.max(axis=0),
                           regression=True))
    if "adult" in names:
        adult = load_adult(adult_dir)
        if adult is None:
            missing.append(f"UCI Adult: no adult.data / adult.test under {adult_dir} "
                           "(and no network to fetch it): skipped")
        else:
            found.append(Table("Adult", *adult[:4], columns=adult[4]))
    return found, missing


def declared_against_undeclared(table, epsilons, n_splits, first_split=0):
    """{epsilon: (undeclared, declared, BoundedScaler rows) scores, one row per split}."""
    scores = {eps: [] for eps in epsilons}
    for seed in range(first_split, first_split + n_splits):
        train, test = table.split(seed)
        for eps in epsilons:
            params = dict(epsilon=eps, random_state=seed, reproducible=True)
            row = []
            for rows, extra in ((table.unit, {}),
                                ("declared", {"feature_bounds": (table.lower, table.upper)}),
                                (None, {})):
                if isinstance(rows, str):
                    X_train, X_test = table.named(train), table.named(test)
                elif rows is None:
                    scaler = BoundedScaler(table.lower, table.upper, keep_zero=False).fit(
                        table.raw[train])
                    X_train, X_test = scaler.transform(table.raw[train]), scaler.transform(
                        table.raw[test])
                else:
                    X_train, X_test = rows[train], rows[test]
                model = table.estimator(**params, **extra).fit(X_train, table.y[train])
                row.append(model.score(X_test, table.y[test]))
            scores[eps].append(row)
    return {eps: np.array(rows) for eps, rows in scores.items()}


def adult_variants(table, epsilons, n_splits, first_split=0):
    """The diagnosis on Adult: which columns' map to [-1, 1] costs?

    {epsilon: rows of scores}, one row per split, one score per entry of
    ``VARIANTS``: the rows in [0, 1] with the one-hot columns and the
    numeric ones each kept in [0, 1] or mapped to [-1, 1] (``2 x - 1``),
    undeclared, paired seeds.
    """
    numeric = np.arange(table.unit.shape[1]) < len(ADULT_STATED)
    out = {eps: [] for eps in epsilons}
    for seed in range(first_split, first_split + n_splits):
        train, test = table.split(seed)
        for eps in epsilons:
            row = []
            for one_hot_mapped, numeric_mapped in VARIANTS:
                mapped = np.where(numeric, numeric_mapped, one_hot_mapped)
                rows = np.where(mapped, 2 * table.unit - 1, table.unit)
                model = table.estimator(epsilon=eps, random_state=seed, reproducible=True).fit(
                    rows[train], table.y[train])
                row.append(model.score(rows[test], table.y[test]))
            out[eps].append(row)
    return {eps: np.array(rows) for eps, rows in out.items()}


# (one-hot columns mapped to [-1, 1], numeric columns mapped): kept in [0, 1] otherwise.
VARIANTS = ((False, False), (True, True), (False, True), (True, False))


def levers(table, n_splits, first_split=0):
    """The diagnosis: does a step, a clip or less noise close the old map's gap on MNIST?

    {(setting, epsilon): rows of (undeclared [0, 1], [-1, 1] rows)}: the
    defaults' ``eta0`` times a factor, or another ``clip_norm``, on both
    scalings (paired seeds), at epsilon 1 and 1000.
    """
    settings = [(f"eta0 x{m:g}", 1.0, {"eta0": m}) for m in (0.25, 0.5, 1.0, 2.0, 4.0)]
    settings += [(f"clip_norm {c:g}", 1.0, {"clip_norm": c}) for c in (0.1, 30.0)]
    settings += [(f"eta0 x{m:g}", 1000.0, {"eta0": m}) for m in (0.5, 2.0)]
    out = {}
    for seed in range(first_split, first_split + n_splits):
        train, test = table.split(seed)
        scaler = BoundedScaler(table.lower, table.upper, keep_zero=False).fit(table.raw[train])
        pairs = ((table.unit[train], table.unit[test]),
                 (scaler.transform(table.raw[train]), scaler.transform(table.raw[test])))
        for name, eps, change in settings:
            row = []
            for X_train, X_test in pairs:
                params = dict(epsilon=eps, random_state=seed, reproducible=True)
                params.update({k: v for k, v in change.items() if k != "eta0"})
                model = table.estimator(**params).fit(X_train, table.y[train])
                if "eta0" in change and change["eta0"] != 1.0:
                    model = table.estimator(eta0=model.eta0_ * change["eta0"], **params).fit(
                        X_train, table.y[train])
                row.append(model.score(X_test, table.y[test]))
            out.setdefault((name, eps), []).append(row)
    return {key: np.array(rows) for key, rows in out.items()}


def opacus_fit(X, y, X_test, y_test, eps, lr, seed, epochs):
    """Test accuracy of a linear softmax model trained by Opacus at (eps, DELTA)."""
    import torch
    from opacus import PrivacyEngine

    torch.set_num_threads(1)
    torch.manual_seed(seed)
    data = torch.utils.data.TensorDataset(torch.tensor(X, dtype=torch.float32),
                                          torch.tensor(y, dtype=torch.long))
    loader = torch.utils.data.DataLoader(data, batch_size=OPACUS_BATCH)
    model = torch.nn.Linear(X.shape[1], int(y.max()) + 1)
    torch.nn.init.zeros_(model.weight)
    torch.nn.init.zeros_(model.bias)
    optimizer = torch.optim.SGD(model.parameters(), lr=lr)
    engine = PrivacyEngine()
    generator = torch.Generator().manual_seed(seed)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        model, optimizer, loader = engine.make_private_with_epsilon(
            module=model, optimizer=optimizer, data_loader=loader, target_epsilon=eps,
            target_delta=DELTA, epochs=epochs, max_grad_norm=1.0, poisson_sampling=True,
            noise_generator=generator)
        loss = torch.nn.CrossEntropyLoss()
        for _ in range(epochs):
            for xb, yb in loader:
                if len(yb) == 0:
                    continue
                optimizer.zero_grad()
                loss(model(xb), yb).backward()
                optimizer.step()
    with torch.no_grad():
        predicted = model(torch.tensor(X_test, dtype=torch.float32)).argmax(1).numpy()
    return float(np.mean(predicted == y_test))


def peers(table, epsilons, n_splits, rates, n_validation=1000):
    """{epsilon: rows of (library, Opacus, library at replace-one)}, and Opacus' chosen rates.

    Opacus' rate is chosen once per epsilon, on the first split: trained on
    its training rows but the last ``n_validation``, scored on those.
    """
    chosen = {}
    train, _ = table.split(0)
    epochs = max(1, round(1000 * OPACUS_BATCH / len(train)))
    fit_part, val_part = train[:-n_validation], train[-n_validation:]
    X, y = table.unit, table.y
    for eps in epsilons:
        # The factor-2 grid, widened until the best rate is inside it.
        tried = {lr: opacus_fit(X[fit_part], y[fit_part], X[val_part], y[val_part], eps, lr,
                                100, epochs) for lr in rates}
        while True:
            best = max(tried, key=tried.get)
            edge = best / 2 if best == min(tried) else best * 2 if best == max(tried) else None
            if edge is None or not 1 / 64 <= edge <= 64:
                break
            tried[edge] = opacus_fit(X[fit_part], y[fit_part], X[val_part], y[val_part], eps,
                                     edge, 100, epochs)
        chosen[eps] = (best, tried)
    out = {eps: [] for eps in epsilons}
    for seed in range(n_splits):
        train, test = table.split(seed)
        n = len(train)
        for eps in epsilons:
            scores = []
            for neighboring in ("add_remove", "replace_one"):
                library = table.estimator(
                    epsilon=eps, neighboring=neighboring, public_n_samples=n,
                    feature_bounds=(table.lower, table.upper)).fit(table.named(train),
                                                                   table.y[train])
                scores.append(library.score(table.named(test), table.y[test]))
            peer = opacus_fit(X[train], y[train], X[test], y[test], eps, chosen[eps][0], seed,
                              epochs)
            out[eps].append((scores[0], peer, scores[1]))
    return {eps: np.array(rows) for eps, rows in out.items()}, chosen


def _mean_se(values, scale=100.0):
    values = np.asarray(values, float) * scale
    se = values.std(ddof=1) / np.sqrt(len(values)) if len(values) > 1 else float("nan")
    return f"{values.mean():+.2f} +- {se:.2f}"


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--splits", type=int, default=10)
    parser.add_argument("--peer-splits", type=int, default=5)
    parser.add_argument("--epsilons", default=",".join(str(e) for e in EPSILONS))
    parser.add_argument("--tables", default="mnist,digits,breast_cancer,diabetes,adult")
    parser.add_argument("--skip-peers", action="store_true")
    parser.add_argument("--quick", action="store_true", help="2 splits, 2 Opacus rates")
    parser.add_argument("--skip-declared", action="store_true",
                        help="only the peers' table")
    parser.add_argument("--levers", action="store_true",
                        help="MNIST: the step, the clip and epsilon against the map to [-1, 1]")
    parser.add_argument("--adult-variants", action="store_true",
                        help="Adult: the one-hot and the numeric columns each kept in [0, 1] "
                             "or mapped to [-1, 1]")
    parser.add_argument("--adult-dir", default=str(ADULT_DIR))
    parser.add_argument("--out", default=str(RESULT))
    parser.add_argument("--first-split", type=int, default=0,
                        help="the first split's seed (other splits of the same protocol)")
    parser.add_argument("--append", action="store_true",
                        help="append the tables to --out instead of writing a new file")
    args = parser.parse_args()
    epsilons = [float(e) for e in args.epsilons.split(",")]
    n_splits, peer_splits, rates = args.splits, args.peer_splits, OPACUS_RATES
    if args.quick:
        n_splits, peer_splits, rates = 2, 2, (0.25, 0.5)
    started = time.time()
    warnings.simplefilter("ignore")
    found, missing = tables(args.tables.split(","), args.adult_dir)
    load = os.getloadavg()
    command = "python benchmarks/bench_declared_bounds.py " + " ".join(sys.argv[1:])
    lines = [] if args.append else [
        "# Declared feature bounds against undeclared rows, and against Opacus", ""]
    lines += [f"Generated by `{command.strip()}`.",
              f"{os.cpu_count()} cores, load average {load[0]:.2f} / {load[1]:.2f} / "
              f"{load[2]:.2f}.", ""]
    lines += [f"* {line}" for line in missing] + ([""] if missing else [])
    first = args.first_split
    if not args.skip_declared:
        lines += ["## Declaring the bounds against the rows given in [0, 1], replace-one"
                  + (f" (splits {first} to {first + n_splits - 1})" if first else ""), "",
                  f"Points (R2 x 100 for diabetes), mean +- standard error over {n_splits} "
                  "paired splits (the same batches and noise in each pair). declared: the "
                  "raw rows with `feature_bounds`; [-1, 1] rows: "
                  "`BoundedScaler(keep_zero=False)` (the map the declaration used before "
                  "image columns kept their zero).", "",
                  "| table | epsilon | undeclared [0, 1] | declared - undeclared | "
                  "[-1, 1] rows - undeclared |", "|---|---|---|---|---|"]
    for table in [] if args.skip_declared else found:
        scores = declared_against_undeclared(table, epsilons, n_splits, first)
        for eps in epsilons:
            s = scores[eps]
            lines.append(f"| {table.name} | {eps:g} | {100 * s[:, 0].mean():.2f} | "
                         f"{_mean_se(s[:, 1] - s[:, 0])} | {_mean_se(s[:, 2] - s[:, 0])} |")
        print("\n".join(lines[-len(epsilons):]), flush=True)
    if args.levers:
        lines += ["## What closes the gap of the map to [-1, 1] on MNIST", "",
                  f"Points, mean +- standard error over {n_splits} paired splits: the "
                  "defaults with one setting changed, on the pixels in [0, 1] (undeclared) "
                  "and on `BoundedScaler(0, 1, keep_zero=False)`'s rows (the background at "
                  "-1). eta0 xk: k times the defaults' eta0 for that fit.", "",
                  "| setting | epsilon | undeclared [0, 1] | [-1, 1] rows | difference |",
                  "|---|---|---|---|---|"]
        mnist = [table for table in found if table.name == "MNIST"]
        for (name, eps), r in (levers(mnist[0], n_splits, first).items() if mnist else []):
            lines.append(f"| {name} | {eps:g} | {100 * r[:, 0].mean():.2f} | "
                         f"{100 * r[:, 1].mean():.2f} | {_mean_se(r[:, 1] - r[:, 0])} |")
            print(lines[-1], flush=True)
    adult = [table for table in found if table.name == "Adult"]
    if args.adult_variants and adult:
        names = ["one-hot and numeric in [0, 1] (undeclared)", "both mapped to [-1, 1]",
                 "one-hot in [0, 1], numeric mapped", "one-hot mapped, numeric in [0, 1]"]
        lines += ["", "## Which of Adult's columns the map to [-1, 1] costs", "",
                  f"Points, mean +- standard error over {n_splits} paired splits, "
                  "replace-one, undeclared fits of the defaults on the rows in [0, 1] with "
                  "the one-hot columns and the numeric ones each kept or mapped by "
                  "`2 x - 1` (the map a declaration of (0, 1) makes).", "",
                  "| epsilon | variant | accuracy | - undeclared |", "|---|---|---|---|"]
        for eps, r in adult_variants(adult[0], epsilons, n_splits, first).items():
            for k, name in enumerate(names):
                lines.append(f"| {eps:g} | {name} | {100 * r[:, k].mean():.2f} | "
                             f"{_mean_se(r[:, k] - r[:, 0])} |")
            print("\n".join(lines[-len(names):]), flush=True)
    if not args.skip_peers:
        lines += ["", "## The defaults (bounds declared, add/remove) against Opacus tuned "
                  "on validation", "",
                  f"Points, paired over {peer_splits} splits (mean +- standard error of "
                  "the paired difference); Opacus' learning rate chosen per epsilon from "
                  f"{', '.join(f'{r:g}' for r in rates)} on a validation split (the first "
                  "split's training rows: the last 1,000 held out; the grid widened by "
                  "factors of 2 until the best rate is inside it), then used on every split.",
                  "",
                  "library replace-one: the same defaults at replace-one adjacency (the "
                  "stronger guarantee), against the same Opacus at add/remove.", "",
                  "| table | epsilon | library | Opacus | library - Opacus | library "
                  "replace-one - Opacus | Opacus' rate (validation accuracy per rate) |",
                  "|---|---|---|---|---|---|---|"]
        for table in found:
            if table.name not in ("MNIST", "Adult"):
                continue
            result, chosen = peers(table, epsilons, peer_splits, rates)
            for eps in epsilons:
                r = result[eps]
                rate, validation = chosen[eps]
                lines.append(
                    f"| {table.name} | {eps:g} | {100 * r[:, 0].mean():.2f} | "
                    f"{100 * r[:, 1].mean():.2f} | {_mean_se(r[:, 0] - r[:, 1])} | "
                    f"{_mean_se(r[:, 2] - r[:, 1])} | {rate:g} ("
                    + ", ".join(f"{lr:g}: {100 * v:.1f}" for lr, v in sorted(validation.items()))
                    + ") |")
                print(lines[-1], flush=True)
    lines += ["", f"{time.time() - started:.0f} s in all."]
    text = "\n".join(lines) + "\n"
    if args.append:
        text = Path(args.out).read_text() + "\n" + text
    Path(args.out).write_text(text)


if __name__ == "__main__":
    main()
