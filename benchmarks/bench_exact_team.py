"""The exact mode's steps on two threads: the team's shared row blocks against no team.

One epoch (``max_iter=1``, epsilon 1) of ``DPLSSGDClassifier`` on synthetic
float32 rows of MNIST's shape (60,000 x 784, 10 classes) at batch 256 and
4,096, alternated fit by fit: the ordinary mode with n_jobs 1 and 2, the
exact mode with n_jobs 1, with n_jobs 2 as the library runs it (each step's
row blocks shared by a compiled team where ``ExactNoiseTraining.team_blocks``
says so), and with n_jobs 2 without the team (the sums on the fit's thread
while the helper draws the noise ahead: the path before the team). The
median of ``--rounds`` rounds (after one round of warm-up) of the training
loop's seconds, and the ratios to the ordinary mode's loop with the same
n_jobs. Written to ``exact_noise_team.md``. The timings on a shared machine
are disturbed by others' work: the load average is recorded.

Run from the repository root::

    python benchmarks/bench_exact_team.py [--rounds 5] [--quick] [--out benchmarks/results]
"""

import argparse
import os
import sys
import tempfile
import warnings
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))

import _data  # noqa: E402
from bench_exact_noise import MODES, TrainingClock, speed_data  # noqa: E402

RESULTS = Path(__file__).resolve().parent / "results"
# (label, mechanism, n_jobs, team): the variants, in the order each round runs them.
VARIANTS = (
    ("ordinary, n_jobs 1", MODES[0], 1, True),
    ("ordinary, n_jobs 2", MODES[0], 2, True),
    ("exact, n_jobs 1", MODES[1], 1, True),
    ("exact, n_jobs 2 (team)", MODES[1], 2, True),
    ("exact, n_jobs 2 (no team)", MODES[1], 2, False),
)


def timed_rows(X, y, n_classes, batches, rounds):
    """Per batch: each variant's loop seconds over the rounds (the first round dropped)."""
    from sklearn_dplssgd import DPLSSGDClassifier
    from sklearn_dplssgd.backends import ExactNoiseTraining
    team_blocks = ExactNoiseTraining.team_blocks
    times = {}
    try:
        for batch in batches:
            for round_ in range(rounds + 1):
                for label, mechanism, n_jobs, team in VARIANTS:
                    ExactNoiseTraining.team_blocks = (
                        team_blocks if team else (lambda self, n_rows: 1))
                    model = DPLSSGDClassifier(
                        epsilon=1.0, mechanism=mechanism, batch_size=batch, max_iter=1,
                        n_jobs=n_jobs, classes=list(range(n_classes)))
                    with TrainingClock() as clock, warnings.catch_warnings():
                        warnings.simplefilter("ignore")
                        model.fit(X, y)
                    if round_ > 0:
                        times.setdefault((batch, label), []).append(sum(clock.seconds))
    finally:
        ExactNoiseTraining.team_blocks = team_blocks
    return times


def report(times, batches, rounds, quick, load_before):
    n_rows = f"{X_ROWS_QUICK:,}" if quick else "60,000"
    lines = [
        "# Exact noise on two threads: the team against no team",
        "",
        "Written by `python benchmarks/bench_exact_team.py"
        + (" --quick" if quick else "") + f" --rounds {rounds}`.",
        "",
        f"Measured on a shared machine (before: {load_before}; after: {_data.machine_note()}): "
        "the timings are disturbed by others' work; the variants were alternated fit by fit "
        f"and the medians of {rounds} rounds are given (after one round of warm-up).",
        "",
        f"DPLSSGDClassifier, epsilon 1, one epoch on synthetic float32 rows ({n_rows} x 784, "
        "10 classes); the training loop's seconds. Ratio: to the ordinary mode's loop with "
        "the same n_jobs. No team: the exact step's sums on the fit's thread while the helper "
        "draws the noise ahead (the path before the team).",
        "",
        "| batch | variant | loop s | ratio to ordinary |",
        "|---|---|---|---|",
    ]
    for batch in batches:
        medians = {label: float(np.median(times[(batch, label)])) for label, *_ in VARIANTS}
        for label, _, n_jobs, _ in VARIANTS:
            ordinary = medians[f"ordinary, n_jobs {n_jobs}"]
            lines.append(f"| {batch:,} | {label} | {medians[label]:.3f} | "
                         f"{medians[label] / ordinary:.2f}x |")
    return "\n".join(lines) + "\n"


X_ROWS_QUICK = 6_000


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="a smoke run: small and fast")
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--out", default=None)
    args = parser.parse_args(argv)
    out = Path(args.out) if args.out else (Path(tempfile.mkdtemp()) if args.quick
                                           else RESULTS)
    rounds = 1 if args.quick else args.rounds
    X, y, n_classes = speed_data(args.quick)
    batches = (256, 4096)
    load_before = _data.machine_note()
    times = timed_rows(X, y, n_classes, batches, rounds)
    text = report(times, batches, rounds, args.quick, load_before)
    out.mkdir(parents=True, exist_ok=True)
    (out / "exact_noise_team.md").write_text(text)
    print(text)
    return os.EX_OK


if __name__ == "__main__":
    sys.exit(main())
