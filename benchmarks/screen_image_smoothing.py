"""Screen: does Laplacian smoothing along both axes of an image lift MNIST at epsilon 1?

The library's smoothing solves ``(I + sigma L) v = g`` with ``L`` the
periodic one-dimensional Laplacian along the flattened feature axis: on a
28 x 28 image a pixel's neighbours are its left and right pixels (and a jump
from one row's end to the next row's start). This screen runs the library's
own default fit (``DPLSSGDClassifier``, replace-one epsilon 1, every
``"auto"`` left alone but ``sigma``) through the NumPy backend's seam
(``use_numpy_backend``) with one change: the smoothing of each output's
noisy gradient row is the two-dimensional periodic Laplacian on the
``s x s`` image, whose eigenvalues are
``1 + 2 sigma (2 - cos(2 pi i / s) - cos(2 pi j / s))``, applied by a real
2-D FFT. Everything else (batches, clip, noise, step, decay, averaging, the
draws from the fit's generator) is the library's, so the rows compare the
smoothers alone. Smoothing is post-processing of the noisy gradient: every
variant has the same privacy.

Variants: no smoothing (``sigma=0``), the 1-D smoothing at the default
sigma and others, the 2-D smoothing at several sigmas. Tables: MNIST
(random 8,000 / 2,000 draws of the 10,000 digits, pixels / 255, split seeds
from 700 as the other MNIST screens), scikit-learn's 8 x 8 digits (pixels /
16, declared ordered: ``sigma="ordered"`` smooths them with 0.25), a
synthetic 14 x 14 image (``pixel-like``) and a non-image control (a linear
table of 256 = 16 x 16 unrelated columns). Run from the repository root, at
one thread::

    NUMBA_NUM_THREADS=1 OMP_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1 \\
        python benchmarks/screen_image_smoothing.py
    python benchmarks/screen_image_smoothing.py --quick   # seconds, digits only

Writes ``image_smoothing_screen.md`` to ``--out`` (default
``benchmarks/results``; ``--quick`` defaults to a temporary folder).
"""

import argparse
import contextlib
import math
import os
import sys
import tempfile
import time
import warnings
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
import _data  # noqa: E402
from bench_regime import load_table  # noqa: E402
from bench_regime_heldout import _synthetic_loader  # noqa: E402

SEED_BASE = 700
EPSILON = 1.0
BUILD_LIFT = 0.005  # 2-D over 1-D on average over MNIST's splits that would make it worth building
# (label, smoother, sigma): smoother None is the library's own (1-D) smoothing.
MNIST_VARIANTS = (("none", None, 0.0),
                  ("1-D sigma 0.25", None, 0.25),
                  ("1-D sigma 1 (default)", None, 1.0),
                  ("1-D sigma 3", None, 3.0),
                  ("2-D sigma 0.25", "2d", 0.25),
                  ("2-D sigma 0.5", "2d", 0.5),
                  ("2-D sigma 1", "2d", 1.0),
                  ("2-D sigma 3", "2d", 3.0))
SMALL_VARIANTS = (("none", None, 0.0),
                  ("1-D sigma 0.25", None, 0.25),
                  ("1-D sigma 1", None, 1.0),
                  ("2-D sigma 0.25", "2d", 0.25),
                  ("2-D sigma 1", "2d", 1.0))
# (label, loader of a split seed, number of classes, image side, the variant the others are
# paired with: what the defaults give it)
SMALL_TABLES = (
    ("digits 8 x 8, pixels / 16 (declared ordered: 1-D sigma 0.25)",
     lambda seed: load_table("digits", seed, "[0, 1]"), 10, 8, "1-D sigma 0.25"),
    ("pixel-like 2500 x 196 K10, 14 x 14 synthetic image (auto: 1-D sigma 1)",
     lambda seed: load_table("pixel-like 2500x196 K10", seed, "[0, 1]"), 10, 14, "1-D sigma 1"),
    ("linear 4000 x 256 K5, unrelated columns (control; auto: not smoothed)",
     _synthetic_loader("linear", 4000, 256, 5), 5, 16, "none"),
)


def noise_variance_kept(name, sigma, side):
    """gamma: the mean of ``1 / lambda`` over every eigenvalue of the variant's operator.

    The variance of each coordinate of the smoothed Gaussian noise, relative
    to the raw noise's (Wang et al., "DP-LSSGD", Proposition 1, for 1-D).
    """
    if name.startswith("2-D"):
        cosines = np.cos(2.0 * np.pi * np.arange(side) / side)
        eigenvalues = 1.0 + 2.0 * sigma * (2.0 - cosines[:, None] - cosines[None, :])
    else:
        d = side * side
        eigenvalues = 1.0 + 2.0 * sigma * (1.0 - np.cos(2.0 * np.pi * np.arange(d) / d))
    return float(np.mean(1.0 / eigenvalues))


def image_eigenvalues(side, sigma):
    """Eigenvalues of ``I + sigma L`` for the 2-D periodic Laplacian, in ``rfft2``'s layout."""
    rows = np.cos(2.0 * np.pi * np.arange(side) / side)[:, None]
    columns = np.cos(2.0 * np.pi * np.arange(side // 2 + 1) / side)[None, :]
    return 1.0 + 2.0 * sigma * (2.0 - rows - columns)


def check_image_operator(side=5, sigma=0.7):
    """The FFT form against a dense solve of ``(I + sigma L) v = g`` on a small image.

    ``L`` is built entry by entry: each pixel minus its four periodic
    neighbours (up, down, left, right). Raises if the two disagree.
    """
    d = side * side
    laplacian = np.zeros((d, d))
    for row in range(side):
        for column in range(side):
            pixel = row * side + column
            laplacian[pixel, pixel] += 4.0
            for up, right in ((1, 0), (-1, 0), (0, 1), (0, -1)):
                laplacian[pixel, ((row + up) % side) * side + (column + right) % side] -= 1.0
    gradient = np.random.default_rng(0).normal(size=(3, d))
    dense = np.linalg.solve(np.eye(d) + sigma * laplacian, gradient.T).T
    spectrum = np.fft.rfft2(gradient.reshape(3, side, side)) / image_eigenvalues(side, sigma)
    fast = np.fft.irfft2(spectrum, s=(side, side)).reshape(3, d)
    if not np.allclose(fast, dense, rtol=0, atol=1e-12):
        raise AssertionError("the 2-D smoothing does not solve (I + sigma L) v = g")


@contextlib.contextmanager
def image_smoothing(side):
    """Run the library's NumPy fits inside the block with the 2-D smoothing of an image."""
    from sklearn_dplssgd.backends import NumpyTraining, use_numpy_backend

    class ImageSmoothingTraining(NumpyTraining):
        # The compiled runs embed the 1-D solve: step from Python instead.
        supports_compiled_runs = False

        def __init__(self, *args, **kwargs):
            super().__init__(*args, **kwargs)
            if self.n_features != side * side:
                raise ValueError("not an image of the screened side")
            self._eigenvalues = image_eigenvalues(side, self.plan.sigma)
            self._smooth = self._smooth_image

        def _smooth_image(self, grad, n_features, omega, sigma):
            images = grad[:, :n_features].reshape(grad.shape[0], side, side)
            spectrum = np.fft.rfft2(images) / self._eigenvalues
            grad[:, :n_features] = np.fft.irfft2(spectrum, s=(side, side)).reshape(
                grad.shape[0], n_features)

    with use_numpy_backend(ImageSmoothingTraining):
        yield


def fit_score(X, y, X_test, y_test, n_classes, seed, smoother, sigma, side):
    """Test accuracy of the library's default fit with ``sigma`` and ``smoother``."""
    from sklearn_dplssgd import DPLSSGDClassifier
    model = DPLSSGDClassifier(epsilon=EPSILON, classes=np.arange(n_classes), sigma=sigma,
                              random_state=seed, reproducible=True)
    block = image_smoothing(side) if smoother == "2d" else contextlib.nullcontext()
    with warnings.catch_warnings(), block:
        warnings.simplefilter("ignore")  # reproducible=True is not private: known here
        model.fit(X, y)
    return model.score(X_test, y_test), model


def mnist_split(seed):
    X, y = _data.load_mnist()
    order = np.random.default_rng(seed).permutation(len(y))
    train, test = order[:_data.N_TRAIN], order[_data.N_TRAIN:]
    return X[train], X[test], y[train], y[test]


def screen_table(label, load, n_classes, side, variants, splits, draws):
    """``{variant: [[score per draw] per split]}`` and the last model (for its calibration)."""
    scores = {name: [[] for _ in range(splits)] for name, _, _ in variants}
    model = None
    for split in range(splits):
        X, X_test, y, y_test = load(SEED_BASE + split)
        for draw in range(draws):
            seed = SEED_BASE + 100 * split + draw
            for name, smoother, sigma in variants:
                score, fitted = fit_score(X, y, X_test, y_test, n_classes, seed, smoother,
                                          sigma, side)
                scores[name][split].append(score)
                model = fitted if sigma == 0 else model
            print(f"{label[:20]} split {split} draw {draw}: " + ", ".join(
                f"{name} {scores[name][split][-1]:.4f}" for name, _, _ in variants), flush=True)
    return scores, model


def table_lines(scores, reference, variants, side):
    """The variants' mean, worst split, lowest fit, and paired differences with ``reference``."""
    sigmas = {name: sigma for name, _, sigma in variants}
    lines = ["| variant | noise variance kept (gamma) | mean | worst split | lowest fit | vs "
             + reference + ": mean (s.e.) | vs " + reference + ": worst split | per split |",
             "|---|---|---|---|---|---|---|---|"]
    base = np.array(scores[reference])
    for name, per_split in scores.items():
        values = np.array(per_split)
        means = values.mean(axis=1)
        paired = (values - base).ravel()
        error = paired.std(ddof=1) / math.sqrt(paired.size) if paired.size > 1 else math.nan
        split_lift = means - base.mean(axis=1)
        gamma = noise_variance_kept(name, sigmas[name], side)
        lines.append(f"| {name} | {gamma:.3f} | {means.mean():.4f} | {means.min():.4f} | "
                     f"{values.min():.4f} | {paired.mean():+.4f} ({error:.4f}) | "
                     f"{split_lift.min():+.4f} | "
                     + " / ".join(f"{m:.4f}" for m in means) + " |")
    return lines


def verdict(scores, reference):
    """The best 2-D variant's average lift over ``reference`` and its worst split's."""
    base = np.array(scores[reference]).mean(axis=1)
    lifts = {name: np.array(per_split).mean(axis=1) - base
             for name, per_split in scores.items() if name.startswith("2-D")}
    best = max(lifts, key=lambda name: lifts[name].mean())
    built = lifts[best].mean() >= BUILD_LIFT and lifts[best].min() >= -BUILD_LIFT
    return (f"Best 2-D variant against {reference}: {best}, {lifts[best].mean():+.4f} on "
            f"average over the splits, worst split {lifts[best].min():+.4f} (the rule to build: "
            f"at least +{BUILD_LIFT:g} on average and no split below -{BUILD_LIFT:g}): "
            + ("BUILD." if built else "do not build."))


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--splits", type=int, default=4)
    parser.add_argument("--draws", type=int, default=4)
    parser.add_argument("--quick", action="store_true",
                        help="1 split x 1 draw of the 8 x 8 digits (a smoke run)")
    parser.add_argument("--out", default=None)
    args = parser.parse_args(argv)
    splits, draws = (1, 1) if args.quick else (args.splits, args.draws)
    out = args.out or (tempfile.mkdtemp() if args.quick else
                       str(Path(__file__).resolve().parent / "results"))
    if not args.quick and not _data.mnist_available():
        sys.exit("MNIST t10k files not found (see benchmarks/_data.py)")
    check_image_operator()
    load = os.getloadavg()
    start = time.perf_counter()
    command = "NUMBA_NUM_THREADS=1 python benchmarks/screen_image_smoothing.py" + (
        " --quick" if args.quick else "") + (
        f" --splits {args.splits} --draws {args.draws}"
        if not args.quick and (args.splits, args.draws) != (4, 4) else "")
    sections = []
    if not args.quick:
        scores, model = screen_table("MNIST", mnist_split, 10, 28, MNIST_VARIANTS,
                                     splits, draws)
        sections += [
            "", f"## MNIST: replace-one epsilon {EPSILON:g}", "",
            "Random 8,000 / 2,000 draws of the 10,000 digits, pixels / 255 (split seeds from "
            f"{SEED_BASE}), {splits} splits x {draws} noise draws, every variant on the same "
            f"draws. The defaults' calibration: batch {model.batch_size_}, {model.n_steps_} "
            f"steps, eta0 {model.eta0_:.4g} (the classifier's step does not depend on sigma), "
            f"noise multiplier {float(model.noise_multiplier_):.4f}. `vs 1-D sigma 1 "
            "(default)`: paired by split and draw.", ""]
        sections += table_lines(scores, "1-D sigma 1 (default)", MNIST_VARIANTS, 28)
        sections += ["", verdict(scores, "1-D sigma 1 (default)")]
    for label, loader, n_classes, side, reference in (SMALL_TABLES[:1] if args.quick
                                                      else SMALL_TABLES):
        scores, _ = screen_table(label, loader, n_classes, side, SMALL_VARIANTS, splits, draws)
        sections += ["", f"## {label}", "",
                     f"{splits} splits x {draws} noise draws (split seeds from {SEED_BASE}), "
                     f"replace-one epsilon {EPSILON:g}, the defaults otherwise.", ""]
        sections += table_lines(scores, reference, SMALL_VARIANTS, side)
    elapsed = time.perf_counter() - start
    lines = ["# Screen: Laplacian smoothing along both axes of an image", "",
             f"Generated by `{command}` in {elapsed:.0f} s. {os.cpu_count()} cores, load average "
             f"{load[0]:.2f} / {load[1]:.2f} / {load[2]:.2f} (1 / 5 / 15 min) at the start, a "
             "shared machine (accuracy does not depend on the load).", "",
             "The library's default fit with its smoothing replaced, through the NumPy "
             "backend's seam: `1-D` is the library's own smoothing along the flattened feature "
             "axis, `2-D` the periodic Laplacian on the s x s image, eigenvalues "
             "1 + 2 sigma (2 - cos(2 pi i / s) - cos(2 pi j / s)), per output's gradient row; "
             "both are post-processing of the same noisy gradient (same privacy)."] + sections
    path = Path(out) / "image_smoothing_screen.md"
    path.write_text("\n".join(lines) + "\n")
    print(path.read_text())


if __name__ == "__main__":
    main()
