"""Screen: would private adaptive clipping, or normalised gradients, lift MNIST at epsilon 1?

A NumPy prototype of the library's default fit (``DPLSSGDClassifier`` with
every ``"auto"`` left alone: Poisson batches, per-sample clipping of the
multinomial log-loss gradient ``r [x, 1]``, Gaussian noise on the clipped
sum, Laplacian smoothing of the noisy sum along the features, the constant
step, the weight decay, the mean of the last iterates), driven by the
public calibration of the library's own fit on the same rows (``eta0_``,
``noise_multiplier_``, ``batch_size_``, ``sample_rate_``, ``n_steps_``,
``average_start_``, ``sigma_``), with one change at a time:

* ``fixed clip``: nothing changed. Its accuracy is checked against the
  library's fit (``library``) on the same splits: the prototype is faithful
  when the two agree.
* ``quantile g``: private adaptive clipping (Andrew, Thakkar, McMahan,
  Ramaswamy, "Differentially private learning with adaptive clipping",
  NeurIPS 2021). Each step also releases the count of sampled rows whose
  gradient norm is at most ``C_t``, as the sum of the centred indicators
  ``b_i - 1/2`` (sensitivity 1/2, as the gradient sum's is ``C_t``) with
  Gaussian noise ``sigma_b``; ``C_{t+1} = C_t exp(-eta_C (count / b - g))``.
  The pair is one Gaussian mechanism of multiplier
  ``z_eff = (z^-2 + (2 sigma_b)^-2)^(-1/2)`` (their Theorem 1), so the
  gradient's multiplier is raised to ``z = (z_eff^-2 - (2 sigma_b)^-2)^(-1/2)``
  with ``z_eff`` the library's calibrated multiplier: the same epsilon. The
  step is relative to the clip, ``eta_t = eta0 C_0 / C_t``, so the noise on
  the weights is the library's at every step.
* ``normalised``: every sample's gradient scaled to norm exactly ``C``
  instead of clipped (normalised SGD; the same sensitivity, so the same
  noise).

Random 8,000 / 2,000 draws of the 10,000 digits (pixels / 255; split seeds
from 700, as ``bench_regime_heldout.py --mnist-levers``), 4 splits x 4
noise draws, replace-one epsilon 1. Run from the repository root, at one thread::

    NUMBA_NUM_THREADS=1 OMP_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1 \\
        python benchmarks/screen_adaptive_clipping.py
    python benchmarks/screen_adaptive_clipping.py --quick   # seconds, scikit-learn's digits

Writes ``adaptive_clipping_screen.md`` to ``--out`` (default
``benchmarks/results``; ``--quick`` defaults to a temporary folder).
"""

import argparse
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

SEED_BASE = 700
EPSILON = 1.0
ETA_CLIP = 0.2  # eta_C, the geometric rate of the clip's update
COUNT_NOISE_SHARE = 1.0 / 20.0  # sigma_b = b / 20, at least z_eff (see count_noise)
BUILD_LIFT = 0.008  # the worst split's lift that would make a variant worth building
# (name, how the clip is set, target quantile)
VARIANTS = (("fixed clip", "fixed", None),
            ("quantile 0.5", "adaptive", 0.5),
            ("quantile 0.7", "adaptive", 0.7),
            ("quantile 0.9", "adaptive", 0.9),
            ("normalised", "normalised", None))


def gradient_multiplier(effective, count_noise):
    """The gradient's z such that ``(z^-2 + (2 sigma_b)^-2)^(-1/2)`` is ``effective``."""
    remaining = effective**-2 - (2.0 * count_noise) ** -2
    if remaining <= 0:
        raise ValueError("the count's noise alone spends more than the calibrated budget")
    return remaining**-0.5


def count_noise(model):
    """sigma_b: ``b / 20``, and at least ``z_eff`` (the count then takes at most a quarter).

    On MNIST's defaults ``b / 20 = 12.8`` is above ``z_eff``; the floor only
    matters for the quick run's small batches.
    """
    return max(COUNT_NOISE_SHARE * model.batch_size_, float(model.noise_multiplier_))


def library_fit(X, y, X_test, y_test, n_classes, seed):
    """The library's default fit: its test accuracy and the model (for its public calibration)."""
    from sklearn_dplssgd import DPLSSGDClassifier
    model = DPLSSGDClassifier(epsilon=EPSILON, classes=np.arange(n_classes),
                              random_state=seed, reproducible=True)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # reproducible=True is not private: known here
        model.fit(X, y)
    return model.score(X_test, y_test), model


def prototype_fit(X, y, X_test, y_test, n_classes, model, clip_mode, quantile, seed):
    """The default fit re-run in NumPy with the clip of ``clip_mode``.

    Returns the test accuracy and the clip norm of the last step.
    """
    from sklearn_dplssgd.training import smoothing_eigenvalues
    rng = np.random.default_rng(seed)
    n, d = X.shape
    rows = np.hstack([X, np.ones((n, 1))])
    row_norms = np.linalg.norm(rows, axis=1)
    b, q, n_steps = model.batch_size_, model.sample_rate_, model.n_steps_
    eta0, alpha, clip0 = model.eta0_, model.alpha, model.clip_norm
    effective = float(model.noise_multiplier_)
    count_sigma = count_noise(model)
    z = gradient_multiplier(effective, count_sigma) if clip_mode == "adaptive" else effective
    eigenvalues = smoothing_eigenvalues(d, model.sigma_) if model.sigma_ > 0 else None
    params = np.zeros((n_classes, d + 1))
    averaged, average_start = None, model.average_start_
    clip = clip0
    for step in range(n_steps):
        batch = np.flatnonzero(rng.random(n) < q)
        gathered = rows[batch]
        margins = gathered @ params.T
        margins -= margins.max(axis=1, keepdims=True)
        residual = np.exp(margins)
        residual /= residual.sum(axis=1, keepdims=True)
        residual[np.arange(len(batch)), y[batch]] -= 1.0
        norms = np.linalg.norm(residual, axis=1) * row_norms[batch]
        if clip_mode == "normalised":
            factors = np.divide(clip, norms, out=np.zeros_like(norms), where=norms > 0)
        else:
            factors = np.minimum(1.0, clip / np.maximum(norms, 1e-300))
        grad = (residual * factors[:, None]).T @ gathered
        grad += rng.normal(0.0, z * clip, grad.shape)
        if eigenvalues is not None:
            grad[:, :d] = np.fft.irfft(np.fft.rfft(grad[:, :d], axis=1) / eigenvalues, n=d,
                                       axis=1)
        eta = eta0 * clip0 / clip
        params *= 1.0 - eta * alpha
        params -= (eta / b) * grad
        if average_start is not None and step >= average_start:
            count = step - average_start + 1
            averaged = params.copy() if averaged is None else averaged + (params - averaged) / count
        if clip_mode == "adaptive":
            # The centred indicators' noisy sum, then the fraction of b at or below the clip.
            below = np.count_nonzero(norms <= clip) - 0.5 * len(batch)
            fraction = (below + rng.normal(0.0, count_sigma)) / b + 0.5
            clip *= math.exp(-ETA_CLIP * (fraction - quantile))
    final = averaged if averaged is not None else params
    predicted = np.argmax(X_test @ final[:, :d].T + final[:, d], axis=1)
    return float(np.mean(predicted == y_test)), clip


def _split(split, quick):
    if quick:
        from sklearn.datasets import load_digits
        X, y = load_digits(return_X_y=True)
        X = X / 16.0
        order = np.random.default_rng(split).permutation(len(y))
        train, test = order[:1400], order[1400:]
    else:
        X, y = _data.load_mnist()
        order = np.random.default_rng(split).permutation(len(y))
        train, test = order[:_data.N_TRAIN], order[_data.N_TRAIN:]
    return X[train], X[test], y[train], y[test]


def screen(splits, draws, quick):
    """Accuracy of every variant: ``{name: [[score per draw] per split]}``, and final clips."""
    names = ["library"] + [name for name, _, _ in VARIANTS]
    scores = {name: [[] for _ in range(splits)] for name in names}
    clips = {name: [] for name, mode, _ in VARIANTS if mode == "adaptive"}
    for split in range(splits):
        X, X_test, y, y_test = _split(SEED_BASE + split, quick)
        for draw in range(draws):
            seed = SEED_BASE + 100 * split + draw
            score, model = library_fit(X, y, X_test, y_test, 10, seed)
            scores["library"][split].append(score)
            for name, mode, quantile in VARIANTS:
                score, clip = prototype_fit(X, y, X_test, y_test, 10, model, mode, quantile,
                                            seed)
                scores[name][split].append(score)
                if name in clips:
                    clips[name].append(clip)
            print(f"split {split} draw {draw}: " + ", ".join(
                f"{name} {scores[name][split][-1]:.4f}" for name in names), flush=True)
    return scores, clips, model


def accounting_lines(model):
    """The adaptive variants' epsilon, from dp-accounting: the screen compares at one budget.

    One step's pair (the gradient sum at multiplier ``z``, the centred count
    at ``2 sigma_b`` in the same units) is one Gaussian mechanism of
    multiplier ``z_eff``: composing the two Gaussian events gives the
    epsilon of ``z_eff`` alone; T Poisson-sampled steps at ``z_eff`` give the
    library's epsilon.
    """
    import dp_accounting
    from sklearn_dplssgd.accounting import compute_epsilon, event_epsilon
    effective = float(model.noise_multiplier_)
    gradient = gradient_multiplier(effective, count_noise(model))
    pair = dp_accounting.ComposedDpEvent([dp_accounting.GaussianDpEvent(gradient),
                                          dp_accounting.GaussianDpEvent(2 * count_noise(model))])
    one = dp_accounting.GaussianDpEvent(effective)
    delta = model.delta_
    run = compute_epsilon(effective, delta, sample_rate=model.sample_rate_,
                          n_steps=model.n_steps_)
    return [f"Accounting (dp-accounting, replace-one, delta {delta:g}): one step's pair "
            f"(gradient z {gradient:.4f}, count 2 sigma_b {2 * count_noise(model):g}) composed: "
            f"epsilon {event_epsilon(pair, delta):.4f}; one Gaussian of z_eff {effective:.4f}: "
            f"{event_epsilon(one, delta):.4f}; the {model.n_steps_} Poisson-sampled steps "
            f"(q {model.sample_rate_:g}) at z_eff: epsilon {run:.4f}.", ""]


def write_report(out, scores, clips, model, splits, draws, quick, command, elapsed, load):
    lines = ["# Screen: private adaptive clipping and normalised gradients on MNIST", "",
             f"Generated by `{command}` in {elapsed:.0f} s. {os.cpu_count()} cores, load average "
             f"{load[0]:.2f} / {load[1]:.2f} / {load[2]:.2f} (1 / 5 / 15 min) at the start, a "
             "shared machine (accuracy does not depend on the load).", "",
             f"## {'Digits (quick)' if quick else 'MNIST'}: replace-one epsilon {EPSILON:g}", "",
             ("scikit-learn's 1,797 digits / 16, 1,400 / 397 random splits"
              if quick else "Random 8,000 / 2,000 draws of the 10,000 digits, pixels / 255")
             + f" (split seeds from {SEED_BASE}), {splits} splits x {draws} noise draws. "
             "`library`: `DPLSSGDClassifier` defaults; the other rows are the NumPy prototype "
             f"of that fit with its public calibration (batch {model.batch_size_}, "
             f"{model.n_steps_} steps, eta0 {model.eta0_:.4g}, sigma {model.sigma_:g}, "
             f"z_eff {float(model.noise_multiplier_):.4f}, initial clip {model.clip_norm:g}). "
             f"Adaptive: eta_C {ETA_CLIP:g}, sigma_b {count_noise(model):g} (b / 20, at least "
             f"z_eff), gradient multiplier z "
             f"{gradient_multiplier(float(model.noise_multiplier_), count_noise(model)):.4f}, "
             "step eta0 C_0 / C_t.", ""] + accounting_lines(model) + [
             "`vs fixed`: paired by split and draw against the prototype's fixed clip (the "
             "lever alone), mean difference and its standard error.", "",
             "| variant | mean | worst split | lowest fit | vs fixed: mean (s.e.) | "
             "vs fixed: worst split | final clip (mean) |", "|---|---|---|---|---|---|---|"]
    fixed = np.array(scores["fixed clip"])
    for name, per_split in scores.items():
        means = [np.mean(s) for s in per_split]
        lowest = min(min(s) for s in per_split)
        paired = (np.array(per_split) - fixed).ravel()
        error = paired.std(ddof=1) / math.sqrt(paired.size) if paired.size > 1 else math.nan
        final = f"{np.mean(clips[name]):.3g}" if name in clips else "-"
        lines.append(f"| {name} | {np.mean(means):.3f} | {min(means):.3f} | {lowest:.3f} | "
                     f"{paired.mean():+.4f} ({error:.4f}) | "
                     f"{min(means) - fixed.mean(axis=1).min():+.3f} | {final} |")
    lifts = {name: min(np.mean(s) for s in per_split) - fixed.mean(axis=1).min()
             for name, per_split in scores.items() if name not in ("library", "fixed clip")}
    best = max(lifts, key=lifts.get)
    lines += ["", f"Largest lift of the worst split over the fixed clip: {best}, "
              f"{lifts[best]:+.3f} (a variant is built into the library from +{BUILD_LIFT:g})."]
    lines += ["", "Per split (mean of the draws):", "",
              "| variant | " + " | ".join(f"split {s}" for s in range(splits)) + " |",
              "|---|" + "---|" * splits]
    for name, per_split in scores.items():
        lines.append(f"| {name} | " + " | ".join(f"{np.mean(s):.4f}" for s in per_split) + " |")
    path = Path(out) / "adaptive_clipping_screen.md"
    path.write_text("\n".join(lines) + "\n")
    return path


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--splits", type=int, default=4)
    parser.add_argument("--draws", type=int, default=4)
    parser.add_argument("--quick", action="store_true",
                        help="1 split x 1 draw of scikit-learn's digits (a smoke run)")
    parser.add_argument("--out", default=None)
    args = parser.parse_args(argv)
    splits, draws = (1, 1) if args.quick else (args.splits, args.draws)
    out = args.out or (tempfile.mkdtemp() if args.quick else
                       str(Path(__file__).resolve().parent / "results"))
    if not args.quick and not _data.mnist_available():
        sys.exit("MNIST t10k files not found (see benchmarks/_data.py)")
    load = os.getloadavg()
    start = time.perf_counter()
    scores, clips, model = screen(splits, draws, args.quick)
    command = "NUMBA_NUM_THREADS=1 python benchmarks/screen_adaptive_clipping.py" + (
        " --quick" if args.quick else "") + (
        f" --splits {args.splits} --draws {args.draws}"
        if not args.quick and (args.splits, args.draws) != (4, 4) else "")
    path = write_report(out, scores, clips, model, splits, draws, args.quick, command,
                        time.perf_counter() - start, load)
    print(path.read_text())


if __name__ == "__main__":
    main()
