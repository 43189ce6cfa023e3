"""Demonstration: DP-SGD against DP-LSSGD on scikit-learn's digits.

Run ``python -m sklearn_dplssgd`` (or ``dplssgd-demo``). It trains
multinomial logistic regression with sigma = 0 (plain DP-SGD) and with
Laplacian smoothing at several privacy budgets on a fixed 80/20 split of the
8x8 digits, and prints test accuracy, the epsilon actually reached and the
time of each fit.
"""

import argparse
import math
import time
import warnings

import numpy as np
from sklearn.datasets import load_digits
from sklearn.model_selection import train_test_split

from ._classifier import DPLSSGDClassifier

__all__ = ["main"]


def _parse_args(argv):
    parser = argparse.ArgumentParser(
        prog="python -m sklearn_dplssgd",
        description="Train DP-SGD (sigma=0) and DP-LSSGD on the digits data set.",
    )
    parser.add_argument(
        "--epsilons", type=float, nargs="+", default=[0.25, 0.5, 1.0, 2.0, math.inf],
        help="privacy budgets to try (inf is the non-private reference)",
    )
    parser.add_argument(
        "--sigmas", type=float, nargs="+", default=[0.0, 1.0],
        help="smoothing strengths (0 is plain DP-SGD)",
    )
    parser.add_argument("--delta", type=float, default=1e-5)
    parser.add_argument("--seeds", type=_positive_int, default=3,
                        help="fits per setting, each with fresh noise (mean reported)")
    args = parser.parse_args(argv)
    if any(not epsilon > 0 for epsilon in args.epsilons):
        parser.error("--epsilons must all be positive (inf is the non-private reference)")
    if any(not (sigma >= 0 and math.isfinite(sigma)) for sigma in args.sigmas):
        parser.error("--sigmas must all be finite and >= 0")
    if not 0 < args.delta < 1:
        parser.error("--delta must lie in (0, 1)")
    return args


def _positive_int(text):
    value = int(text)
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be an integer >= 1, got {text!r}")
    return value


def main(argv=None):
    """Entry point of ``python -m sklearn_dplssgd``.

    Parameters
    ----------
    argv : list of str, optional
        Command-line arguments (``sys.argv[1:]`` when None).
    """
    args = _parse_args(argv)
    X, y = load_digits(return_X_y=True)
    # Pixels lie in 0..16 by construction of the data set: dividing by 16 is
    # a data-independent rescaling, so it costs no privacy.
    X = X / 16.0
    X_train, X_test, y_train, y_test = train_test_split(
        X, y, test_size=0.2, random_state=0, stratify=y
    )
    print(
        f"digits: {X_train.shape[0]} training rows, {X_test.shape[0]} test rows, "
        f"{X.shape[1]} features, 10 classes; delta={args.delta:g}; "
        f"mean of {args.seeds} fits per row; default settings otherwise "
        "(replace-one neighbours, PLD accountant)"
    )
    header = f"{'epsilon':>8} {'sigma':>6} {'accuracy':>14} {'epsilon_':>9} {'z':>8} {'fit (s)':>8}"
    print(header)
    print("-" * len(header))
    first_fit = None
    for epsilon in args.epsilons:
        for sigma in args.sigmas:
            accuracies, times = [], []
            for _ in range(args.seeds):
                # Fresh noise for every fit (random_state is left at None).
                clf = DPLSSGDClassifier(
                    epsilon=epsilon, delta=args.delta, sigma=sigma, classes=np.arange(10),
                )
                start = time.perf_counter()
                with warnings.catch_warnings():
                    warnings.simplefilter("error")  # a privacy warning here is a bug
                    clf.fit(X_train, y_train)
                times.append(time.perf_counter() - start)
                first_fit = times[0] if first_fit is None else first_fit
                accuracies.append(clf.score(X_test, y_test))
            print(
                f"{epsilon:>8g} {sigma:>6g} {np.mean(accuracies):>7.3f} "
                f"+- {np.std(accuracies):.3f} "
                f"{clf.epsilon_:>9.4g} {clf.noise_multiplier_:>8.3f} {np.median(times):>8.3f}"
            )
    print(
        f"fit (s) is the median over fits. The very first fit took {first_fit:.3f} s: it "
        "compiles the Numba kernels (or loads them from the on-disk cache) and calibrates "
        "the noise (each new (epsilon, delta, q, T) once, then cached)."
    )


if __name__ == "__main__":
    main()
