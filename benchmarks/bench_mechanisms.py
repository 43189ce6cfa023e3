"""Other mechanisms of the literature against DP-LSSGD's defaults, on real data.

Two questions, answered with the library's defaults (everything
``"auto"``, replace-one adjacency, ``delta="auto"``; ``sigma="auto"``
smooths MNIST's 28 x 28 images with sigma 1 and leaves the other tables'
unnamed columns unsmoothed), mean and
standard deviation of the test accuracy over 3 seeds:

1. **Optimizers and noise schedules** (seeds 000 and 002): on the real MNIST
   digits (the fixed 8,000 / 2,000 split of ``_data.py``), ``optimizer`` in
   {sgd, momentum, adam} crossed with ``noise_schedule`` in {constant,
   exponential (``ExponentialNoise(per_epoch=0.95)``), step
   (``StepNoise(final_ratio=0.25)``: halved after half and after three
   quarters of the steps)}, at epsilon 0.5 and 1.
   Seed 002 claims that decaying noise beats constant noise at the same
   budget; this measures whether it does here.
2. **Output perturbation against gradient perturbation** (seed 004): on
   MNIST, scikit-learn's digits and breast cancer (75 / 25 splits, features
   scaled by public bounds as in ``_data.py``), at epsilon 0.5, 1, 2
   and inf. Output perturbation has one knob the defaults cannot set from
   public quantities, ``alpha`` (the strong convexity that bounds its
   sensitivity, about ``2 R / (n alpha)``): every value of a small grid is
   reported, none is picked on the test set. Rows are clipped to
   ``row_norm_bound=1``.

The fits pass ``reproducible=True`` with the seed so that a run can be
repeated exactly (such fits report ``epsilon_ = inf``); each configuration's
noise is the one a private fit calibrates to the column's epsilon. Run from
the repository root::

    python benchmarks/bench_mechanisms.py           # ~10 min on 2 cores
    python benchmarks/bench_mechanisms.py --quick   # a smoke run, seconds

Writes ``mechanisms.md`` to ``--out`` (default ``benchmarks/results``;
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

from sklearn_dplssgd import ExponentialNoise, OutputPerturbation, StepNoise

sys.path.insert(0, str(Path(__file__).resolve().parent))
import _data  # noqa: E402

SEEDS = (0, 1, 2)
OPTIMIZERS = ("sgd", "momentum", "adam")
SCHEDULES = {
    "constant": dict(noise_schedule="constant"),
    "exponential 0.95": dict(noise_schedule=ExponentialNoise(per_epoch=0.95)),
    "step 0.5": dict(noise_schedule=StepNoise(final_ratio=0.25)),
}
OPTIMIZER_EPSILONS = (0.5, 1.0)
TABLES = ("MNIST", "digits", "breast cancer")
MECHANISM_EPSILONS = (0.5, 1.0, 2.0, math.inf)
OUTPUT_ALPHAS = (1e-3, 1e-2, 1e-1)


def _classifier(n_classes, seed, **params):
    from sklearn_dplssgd import DPLSSGDClassifier

    return DPLSSGDClassifier(classes=np.arange(n_classes), random_state=seed,
                             reproducible=True, **params)


def _score(model, data):
    X_train, X_test, y_train, y_test, _ = data
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        model.fit(X_train, y_train)
    return model.score(X_test, y_test), model


def optimizers_and_schedules(quick, log):
    """{(optimizer, schedule, epsilon): [accuracy per seed]}."""
    results = {}
    seeds = SEEDS[:1] if quick else SEEDS
    for seed in seeds:
        data = _data.load_scaled("MNIST", seed, quick)
        for epsilon in OPTIMIZER_EPSILONS:
            for optimizer in OPTIMIZERS:
                for schedule, params in SCHEDULES.items():
                    start = time.perf_counter()
                    accuracy, _ = _score(
                        _classifier(10, seed, epsilon=epsilon, optimizer=optimizer, **params),
                        data)
                    results.setdefault((optimizer, schedule, epsilon), []).append(accuracy)
                    log(f"MNIST eps={epsilon} {optimizer:8s} {schedule:15s} seed={seed} "
                        f"acc={accuracy:.4f} ({time.perf_counter() - start:.1f} s)")
    return results


def output_against_gradient(quick, log):
    """{(table, method, epsilon): [accuracy per seed]}; method 'gradient' or alpha."""
    results = {}
    seeds = SEEDS[:1] if quick else SEEDS
    tables = TABLES[1:] if quick else TABLES
    for table in tables:
        for seed in seeds:
            data = _data.load_scaled(table, seed, quick)
            n_classes = len(np.unique(np.concatenate([data[2], data[3]])))
            for epsilon in MECHANISM_EPSILONS:
                configurations = [("gradient", {})] + [
                    (f"output, alpha={alpha:g}",
                     dict(mechanism=OutputPerturbation(row_norm_bound=1.0), alpha=alpha))
                    for alpha in OUTPUT_ALPHAS]
                for method, params in configurations:
                    start = time.perf_counter()
                    accuracy, model = _score(
                        _classifier(n_classes, seed, epsilon=epsilon, **params), data)
                    results.setdefault((table, method, epsilon), []).append(accuracy)
                    log(f"{table} eps={epsilon} {method:22s} seed={seed} acc={accuracy:.4f} "
                        f"({time.perf_counter() - start:.1f} s)")
    return results


def _cell(values):
    values = np.asarray(values)
    if values.size == 1:
        return f"{values[0]:.3f}"
    return f"{values.mean():.3f} ± {values.std(ddof=1):.3f}"


def _epsilon_header(epsilon):
    return "eps = inf" if math.isinf(epsilon) else f"eps = {epsilon:g}"


def write_report(path, optimizer_results, mechanism_results, elapsed, quick):
    lines = [
        "# Optimizers, noise schedules and output perturbation",
        "",
        "Produced by `python benchmarks/bench_mechanisms.py`"
        + (" --quick (a smoke run: subsets, one seed; not a result)" if quick else "")
        + f" in {elapsed / 60:.1f} min. {_data.machine_note()}",
        "",
        "Test accuracy, mean ± standard deviation over "
        f"{1 if quick else len(SEEDS)} seeds; replace-one adjacency, delta='auto', "
        "every other setting at its default (`\"auto\"`; sigma='auto' is 1 on MNIST's "
        "28 x 28 images, 0 on the other tables' unnamed columns).",
        "",
        "## 1. Optimizers and noise schedules on MNIST (8,000 / 2,000)",
        "",
        "| optimizer | noise schedule | "
        + " | ".join(_epsilon_header(e) for e in OPTIMIZER_EPSILONS) + " |",
        "|---|---|" + "---|" * len(OPTIMIZER_EPSILONS),
    ]
    for optimizer in OPTIMIZERS:
        for schedule in SCHEDULES:
            cells = [_cell(optimizer_results[(optimizer, schedule, e)])
                     for e in OPTIMIZER_EPSILONS]
            lines.append(f"| {optimizer} | {schedule} | " + " | ".join(cells) + " |")
    best = {
        epsilon: max(((o, s) for o in OPTIMIZERS for s in SCHEDULES),
                     key=lambda key: np.mean(optimizer_results[(*key, epsilon)]))
        for epsilon in OPTIMIZER_EPSILONS}
    lines += ["", "Best mean: " + "; ".join(
        f"{_epsilon_header(e)}: {o} with {s} noise "
        f"({np.mean(optimizer_results[(o, s, e)]):.3f})" for e, (o, s) in best.items()) + "."]
    for epsilon in OPTIMIZER_EPSILONS:
        constant = np.mean(optimizer_results[("sgd", "constant", epsilon)])
        decaying = max(np.mean(optimizer_results[("sgd", s, epsilon)])
                       for s in SCHEDULES if s != "constant")
        lines.append(
            f"At {_epsilon_header(epsilon)} with plain SGD, the best decaying schedule gives "
            f"{decaying:.3f} against {constant:.3f} for constant noise "
            f"({decaying - constant:+.3f}).")
    lines += [
        "",
        "## 2. Output perturbation against gradient perturbation",
        "",
        "`gradient`: the defaults (DP-LSSGD). `output, alpha=a`: `mechanism=\"output\"` with "
        "that L2 strength and `row_norm_bound=1`, batch size and passes `\"auto\"`. The "
        "alpha grid is shown whole: picking its best value on private data would cost "
        "budget.",
        "",
        "| table | method | " + " | ".join(_epsilon_header(e) for e in MECHANISM_EPSILONS)
        + " |",
        "|---|---|" + "---|" * len(MECHANISM_EPSILONS),
    ]
    tables = [t for t in TABLES if (t, "gradient", MECHANISM_EPSILONS[0]) in mechanism_results]
    methods = ["gradient"] + [f"output, alpha={alpha:g}" for alpha in OUTPUT_ALPHAS]
    for table in tables:
        for method in methods:
            cells = [_cell(mechanism_results[(table, method, e)]) for e in MECHANISM_EPSILONS]
            lines.append(f"| {table} | {method} | " + " | ".join(cells) + " |")
    lines += ["", "Which wins, per table and epsilon (best output alpha in hindsight, "
              "which flatters output perturbation):", ""]
    for table in tables:
        verdicts = []
        for epsilon in MECHANISM_EPSILONS[:-1]:
            gradient = np.mean(mechanism_results[(table, "gradient", epsilon)])
            output = max(np.mean(mechanism_results[(table, m, epsilon)]) for m in methods[1:])
            winner = "gradient" if gradient >= output else "output"
            verdicts.append(f"{_epsilon_header(epsilon)}: {winner} "
                            f"({gradient:.3f} vs {output:.3f})")
        lines.append(f"* {table}: " + "; ".join(verdicts) + ".")
    path.write_text("\n".join(lines) + "\n")


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", default=None, help="folder of mechanisms.md")
    parser.add_argument("--quick", action="store_true", help="a smoke run on subsets")
    args = parser.parse_args(argv)
    out = Path(args.out) if args.out else (
        Path(tempfile.mkdtemp()) if args.quick else Path(__file__).parent / "results")
    out.mkdir(parents=True, exist_ok=True)
    start = time.perf_counter()
    log = print
    optimizer_results = optimizers_and_schedules(args.quick, log)
    mechanism_results = output_against_gradient(args.quick, log)
    path = out / "mechanisms.md"
    write_report(path, optimizer_results, mechanism_results, time.perf_counter() - start,
                 args.quick)
    print(f"wrote {path}")
    return path


if __name__ == "__main__":
    main()
