"""Demonstration: DP-SGD against DP-LSSGD on scikit-learn's digits.

``python -m sklearn_dplssgd`` (or ``dplssgd-demo``) trains multinomial
logistic regression with the library's defaults, with the smoothing the
defaults choose for columns declared ordered (``sigma='ordered'``), with
sigma = 0 (plain DP-SGD) and sigma = 1, at several budgets on a fixed split of
the 8x8 digits. It prints test accuracy (mean and spread over fits with fresh
noise), the epsilon reached and the time per fit beside a non-private
``LogisticRegression``, then each smoothing's difference to plain DP-SGD with
its standard error, without a verdict (a few fits per setting would flip it).
"""

import argparse
import math
import time
import warnings

import numpy as np
from sklearn.datasets import load_digits
from sklearn.linear_model import LogisticRegression
from sklearn.model_selection import train_test_split

from ._linear_model import DPLSSGDClassifier
from ._training import AUTO, ORDERED, explain_sigma
from ._preprocessing import BoundedScaler

__all__ = ["main"]

_COLUMNS = """\
columns: epsilon  the privacy budget asked for (inf: no noise, the non-private
                  reference with clipping kept)
         sigma    Laplacian smoothing strength (0: plain DP-SGD; ordered or
                  auto: the defaults' choice for columns declared ordered or
                  not, the value it resolved to in brackets)
         accuracy test accuracy, mean +- standard deviation over the fits
         epsilon_ the epsilon the accountant certifies for the fit (replace-one
                  neighbours, delta_ below)
         z        noise multiplier: noise std on each step's clipped gradient sum
                  is z * clip_norm
         eta0_    the step size chosen by eta0='auto' from z and d (not from the data)
         fit (s)  median wall time of one fit (the first fit of the run, which
                  compiles the kernels, is timed apart above the table)"""


def _parse_args(argv):
    parser = argparse.ArgumentParser(
        prog="python -m sklearn_dplssgd",
        description="Train DP-SGD (sigma=0) and DP-LSSGD with the library's defaults on "
                    "scikit-learn's digits, beside non-private logistic regression.")
    parser.add_argument("--epsilons", type=_epsilon, nargs="+",
                        default=[0.25, 0.5, 1.0, 2.0, math.inf],
                        help="privacy budgets to try (inf is the non-private reference)")
    parser.add_argument(
        "--sigmas", type=_sigma, nargs="+", default=[ORDERED, 0.0, 1.0],
        help="smoothing strengths: numbers >= 0 (0 is plain DP-SGD), 'ordered' (the "
             "defaults for columns declared ordered, such as pixels) or 'auto' (the defaults)")
    parser.add_argument("--delta", type=_delta, default="auto",
                        help="delta in (0, 1), or 'auto' (the default: min(1e-5, 1/(10 n)))")
    parser.add_argument("--seeds", type=_positive_int, default=5,
                        help="fits per setting, each with fresh noise (mean and spread reported)")
    return parser.parse_args(argv)


def _option(convert, valid, expected, words=()):
    """An argparse type: one of ``words`` as given, or ``convert(text)`` when ``valid``."""
    def parse(text):
        if text in words:
            return text
        try:
            value = convert(text)
        except ValueError:
            value = None
        if value is None or not valid(value):
            raise argparse.ArgumentTypeError(f"must be {expected}, got {text!r}")
        return value
    return parse


_epsilon = _option(float, lambda value: value > 0,
                   "a positive number (inf is the non-private reference)")
_sigma = _option(float, lambda value: value >= 0 and math.isfinite(value),
                 "a finite number >= 0, 'ordered' or 'auto'", (AUTO, ORDERED))
_positive_int = _option(int, lambda value: value >= 1, "an integer >= 1")
_delta = _option(float, lambda value: 0 < value < 1, "a number in (0, 1) or 'auto'", ("auto",))


def _timed_fit(X, y, epsilon, delta, sigma):
    """A fitted DPLSSGDClassifier with the library's defaults and its fit's wall time."""
    # Fresh noise for every fit (random_state is left at None).
    clf = DPLSSGDClassifier(epsilon=epsilon, delta=delta, sigma=sigma, classes=np.arange(10))
    start = time.perf_counter()
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # a privacy warning here is a bug
        clf.fit(X, y)
    return clf, time.perf_counter() - start


def _sigma_label(sigma, resolved):
    return f"{sigma} ({resolved:g})" if sigma in (AUTO, ORDERED) else f"{sigma:g}"


def _difference_line(epsilon, label, accuracies, reference):
    """One smoothing's mean difference to plain DP-SGD, with its standard error.

    The fits are independent, so the two means' variances add.
    """
    difference = (np.mean(accuracies) - np.mean(reference)) * 100
    error = 100 * math.sqrt(np.var(accuracies, ddof=1) / len(accuracies)
                            + np.var(reference, ddof=1) / len(reference))
    return f"  epsilon {epsilon:g}, sigma {label}: {difference:+.1f} +- {error:.1f} points"


def main(argv=None):
    """Entry point of ``python -m sklearn_dplssgd``.

    Parameters
    ----------
    argv : list of str, optional
        Command-line arguments (``sys.argv[1:]`` when None).
    """
    args = _parse_args(argv)
    X, y = load_digits(return_X_y=True)
    # Pixels lie in 0..16 by construction of the data set: public bounds, so
    # the scaling costs no privacy (the scaler reads only the shape of X).
    X = BoundedScaler(lower=0.0, upper=16.0).fit_transform(X)
    X_train, X_test, y_train, y_test = train_test_split(
        X, y, test_size=0.2, random_state=0, stratify=y
    )
    baseline = LogisticRegression(max_iter=1000).fit(X_train, y_train).score(X_test, y_test)
    print(
        f"digits: {X_train.shape[0]} training rows, {X_test.shape[0]} test rows, "
        f"{X.shape[1]} features scaled from their public range 0..16, 10 classes; "
        f"mean of {args.seeds} fits per row; the library's defaults otherwise (batch size, "
        "epochs, step size and delta 'auto'; replace-one neighbours, PLD accountant)"
    )
    print(f"non-private baseline: scikit-learn LogisticRegression, test accuracy {baseline:.3f}")
    print(_COLUMNS)
    print("The first fit compiles the Numba kernels once (several seconds; later runs load "
          "them from the on-disk cache). It is timed on its own, before the table.", flush=True)
    # Timed apart, so that the table's medians are those of compiled fits.
    first_seconds = _timed_fit(X_train, y_train, args.epsilons[0], args.delta,
                               args.sigmas[0])[1]
    print(f"first fit (epsilon {args.epsilons[0]:g}, sigma {args.sigmas[0]}): "
          f"{first_seconds:.2f} s, including compiling or loading the kernels and calibrating "
          "the noise; the table's times leave it out.", flush=True)
    chosen = next((sigma for sigma in args.sigmas if sigma in (AUTO, ORDERED)), AUTO)
    reason = explain_sigma(chosen, X_train.shape[1], False,
                           DPLSSGDClassifier._auto_sigma_levels)
    print(f"Smoothing chosen by the defaults: {reason}.")
    header = (f"{'epsilon':>8} {'sigma':>14} {'accuracy':>14} {'epsilon_':>9} {'z':>8} "
              f"{'eta0_':>7} {'fit (s)':>8}")
    print(header)
    print("-" * len(header))
    scores, labels = {}, {}
    for epsilon in args.epsilons:
        for sigma in args.sigmas:
            accuracies, times = [], []
            for _ in range(args.seeds):
                clf, seconds = _timed_fit(X_train, y_train, epsilon, args.delta, sigma)
                times.append(seconds)
                accuracies.append(clf.score(X_test, y_test))
            scores[epsilon, sigma] = accuracies
            labels[sigma] = _sigma_label(sigma, clf.sigma_)
            print(
                f"{epsilon:>8g} {labels[sigma]:>14} {np.mean(accuracies):>7.3f} "
                f"+- {np.std(accuracies):.3f} "
                f"{clf.epsilon_:>9.4g} {clf.noise_multiplier_:>8.3f} {clf.eta0_:>7.3g} "
                f"{np.median(times):>8.3f}",
                flush=True,
            )
    print(f"delta_ = {clf.delta_:g}; fit (s) of each row includes calibrating the noise for "
          "its setting the first time (then cached).")
    print(
        "When smoothing helps: it acts along the feature axis, so it pays where "
        "neighbouring features are related (pixels, time series) and where the noise is "
        "large (small epsilon); without noise it can only blur the gradient. The "
        "documentation's benchmarks page compares the defaults with sigma=0 on larger "
        "tables, the real MNIST digits among them."
    )
    smoothed = [sigma for sigma in args.sigmas if sigma != 0.0]
    if 0.0 in args.sigmas and smoothed and args.seeds >= 2:
        print(f"This run's estimates, each smoothing minus sigma=0 (mean over {args.seeds} "
              "fits each, +- one standard error). On these 8x8 images (64 pixels, ~1,400 "
              "rows) they change from run to run, at small epsilon by several points, so "
              "they are no verdict: rerun, or raise --seeds, to see how far they move.")
        for epsilon in args.epsilons:
            for sigma in smoothed:
                print(_difference_line(epsilon, labels[sigma], scores[epsilon, sigma],
                                       scores[epsilon, 0.0]))


if __name__ == "__main__":
    main()
