"""The exact-noise mode's foundation: sampler speed and the epsilon it costs.

Two measurements, written to ``exact_noise.md``:

1. The exact samplers (``backends.sample_discrete_gaussian`` and
   ``backends.sample_rounded_gaussian``): nanoseconds per sample, one
   thread, at several scales, with os.urandom words and on words drawn
   beforehand (the sampler alone), the 64-bit words a sample uses and the
   time os.urandom takes to make them. Timings on a shared machine are
   disturbed by the others' load: the load average is recorded.
2. The accounting: for a fit calibrated by the ordinary mode to epsilon 1
   (PLD, the library's default), the epsilon that the discrete Gaussian's
   bound (``accounting.exact_noise_epsilon``: RDP of the subsampled
   multivariate discrete Gaussian at integer orders, grid 2**-k C,
   sensitivity 2**k + sqrt(D)/2) certifies for the same noise, beside it
   Zhu and Wang's general subsampling bound (factor 3), and the rounded
   Gaussian's epsilon at the same noise (``s = ceil(z 2**k)`` grid units:
   the ordinary PLD accounting at the multiplier ``s / sqrt(B)``),
   MNIST-shaped (K = 10, d = 784) and Adult-shaped (K = 1, d = 104), at
   batch 256, 4,096 and the ``"auto"`` batch. Not disturbed by load.

With ``--accuracy``, instead, ``exact_noise_accuracy.md``: the test accuracy
of the ordinary and the exact mode at the estimator's defaults (epsilon 1,
replace-one), the same number of fits on the same split, the modes
alternated (each fit private: its batches and noise fresh from the operating
system), on MNIST (8,000 training and 2,000
test digits of ``benchmarks/_data.py``) and UCI Adult (the 32,561 training
rows, 4,000 test rows, encoded as ``bench_layout.py`` encodes them; from
``--adult-dir``): mean, standard deviation, the difference of the means with
its standard error, and each mode's ``epsilon_`` and ``noise_multiplier_``.
Accuracy is not disturbed by load; run it with ``NUMBA_NUM_THREADS=1``.

With ``--speed``, instead, ``exact_noise_speed.md``: one epoch of each mode
(epsilon 1) on synthetic float32 rows of MNIST's shape (60,000 x 784, 10
classes) at batch 256 and 4,096, n_jobs 1 and 2, the modes alternated, the
median of ``--rounds`` rounds of the training loop's time and of the whole
fit's, with their ratio exact / ordinary; a profile of one exact step's parts
(noise words, sampler, gather with the margins, the clip, rounding with the
integer sum, smoothing); and the sampler's cost per draw at which the targets
(1.5x at batch 256, 1.2x at 4,096) would be met.

Run from the repository root::

    python benchmarks/bench_exact_noise.py [--quick] [--out benchmarks/results]
    NUMBA_NUM_THREADS=1 python benchmarks/bench_exact_noise.py --accuracy \
        [--fits 16] [--adult-dir PATH] [--quick]
    python benchmarks/bench_exact_noise.py --speed [--rounds 3] [--quick]
"""

import argparse
import math
import os
import time
import sys
import threading
import warnings
from pathlib import Path

import numpy as np
from threadpoolctl import threadpool_limits

from sklearn_dplssgd.accounting import calibrate_noise, compute_epsilon, exact_noise_epsilon
from sklearn_dplssgd.backends import (
    MAX_ROUNDED_SCALE, ChaChaWords, DiscreteGaussianScale, RoundedGaussianScale, SecureWords,
    factored_norm_bound, sample_discrete_gaussian, sample_rounded_gaussian,
)
from sklearn_dplssgd.mechanisms import RoundedGaussianGradientPerturbation, grid_bits_for

sys.path.insert(0, str(Path(__file__).resolve().parent))
import _data  # noqa: E402
from bench_dp_preprocessing import ADULT_NUMERIC, DEFAULT_ADULT_DIR, load_adult  # noqa: E402
from bench_exact_sampler import PregeneratedWords, words_per_draw  # noqa: E402

RESULTS = Path(__file__).resolve().parent / "results"
DELTA = 1e-5
MODES = ("gradient", "gradient_exact")


def sampler_rows(n_samples, scales, repeats, rounded=False):
    """Per scale of one exact sampler: (std, ns per sample with os.urandom words, ns per
    sample on words drawn beforehand, words per sample, ns of os.urandom for those words)."""
    rows = []
    source = SecureWords()
    if rounded:
        # The rounded Gaussian's scale is an integer: the std rounded up.
        sample, scale_of = sample_rounded_gaussian, (
            lambda std: RoundedGaussianScale(math.ceil(std)))
    else:
        sample, scale_of = sample_discrete_gaussian, DiscreteGaussianScale.at_least
    sample(100, scale_of(1.0))  # compile / load
    for std in scales:
        scale = scale_of(std)
        words = words_per_draw(sample, scale, source, min(n_samples, 100_000))
        stock = source.words(int(1.2 * words * n_samples) + 4096)
        best = best_pregenerated = math.inf
        for _ in range(repeats):  # the two timings alternated
            start = time.perf_counter()
            sample(n_samples, scale, source=source)
            best = min(best, time.perf_counter() - start)
            start = time.perf_counter()
            sample(n_samples, scale, source=PregeneratedWords(stock, source))
            best_pregenerated = min(best_pregenerated, time.perf_counter() - start)
        start = time.perf_counter()
        source.words(round(words * n_samples))
        words_time = time.perf_counter() - start
        rows.append((std, 1e9 * best / n_samples, 1e9 * best_pregenerated / n_samples, words,
                     1e9 * words_time / n_samples))
    return rows


def word_source_rows(n_words, repeats):
    """MB/s of each secure word source, alternated (the machine's load moves between runs)."""
    sources = {"os.urandom (SecureWords)": SecureWords(), "ChaCha20 (ChaChaWords)": ChaChaWords()}
    best = dict.fromkeys(sources, 0.0)
    for source in sources.values():
        source.words(1024)  # compile / load
    for _ in range(repeats):
        for name, source in sources.items():
            start = time.perf_counter()
            source.words(n_words)
            best[name] = max(best[name], 8e-6 * n_words / (time.perf_counter() - start))
    return list(best.items())


def accounting_rows(settings):
    rows = []
    for name, n_rows, n_features, n_outputs, batch, epochs in settings:
        sample_rate = batch / n_rows
        n_steps = math.ceil(epochs * n_rows / batch)
        for neighboring in ("replace_one", "add_remove"):
            calibration = calibrate_noise(1.0, DELTA, sample_rate=sample_rate, n_steps=n_steps,
                                          neighboring=neighboring)
            z = calibration.noise_multiplier
            # The continuous Gaussian's RDP epsilon at the same noise: what the
            # exact mode would cost with a tight subsampling bound (no factor 3).
            gaussian_rdp = compute_epsilon(z, DELTA, sample_rate=sample_rate, n_steps=n_steps,
                                           accountant="rdp", neighboring=neighboring)
            # Each noise law on its mechanism's own factored grid (k1, k2).
            discrete_bits = grid_bits_for(z, n_outputs, n_features + 1)
            rounded_bits = grid_bits_for(z, n_outputs, n_features + 1,
                                         largest_scale=MAX_ROUNDED_SCALE // 2, headroom=1.0)
            discrete_bound = factored_norm_bound(*discrete_bits, n_outputs, n_features + 1)
            scale = DiscreteGaussianScale.at_least(z * math.sqrt(discrete_bound))
            epsilon = exact_noise_epsilon(
                variance=scale.variance_at_most(), sensitivity_squared=discrete_bound,
                sample_rate=sample_rate, n_steps=n_steps, delta=DELTA, neighboring=neighboring)
            general = exact_noise_epsilon(
                variance=scale.variance_at_most(), sensitivity_squared=discrete_bound,
                sample_rate=sample_rate, n_steps=n_steps, delta=DELTA, neighboring=neighboring,
                symmetric=False)
            bound = factored_norm_bound(*rounded_bits, n_outputs, n_features + 1)
            rounded = compute_epsilon(
                RoundedGaussianGradientPerturbation.effective_multiplier(
                    math.ceil(z * math.sqrt(bound)), bound),
                DELTA, sample_rate=sample_rate, n_steps=n_steps, neighboring=neighboring)
            grids = f"{discrete_bits} / {rounded_bits}".replace(", ", "+")
            rows.append((name, batch, n_steps, neighboring, z, grids,
                         calibration.epsilon, gaussian_rdp, epsilon, general, rounded))
    return rows


def accuracy_tables(adult_dir, quick):
    """(name, X_train, y_train, X_test, y_test, classes) of MNIST and Adult, where present."""
    tables = []
    if _data.mnist_available():
        split = _data.mnist_split()
        n_train, n_test = (1000, 500) if quick else (len(split["y_train"]), len(split["y_test"]))
        tables.append(("MNIST", split["X_train"][:n_train], split["y_train"][:n_train],
                       split["X_test"][:n_test], split["y_test"][:n_test], list(range(10))))
    adult = load_adult(adult_dir) if adult_dir else None
    if adult is not None:
        from bench_layout import _cell_table
        (train, test), _ = adult
        categorical = [c for c in train[0].columns if c not in ADULT_NUMERIC]
        categories = [sorted(set(train[0][c]) - {"?"}) for c in categorical]
        n_rows = 2000 if quick else len(train[1])
        X, y, X_test, y_test = _cell_table(train, test, 0, categorical, categories, n_rows)
        tables.append(("Adult", X.to_numpy(), y, X_test.to_numpy(), y_test, [0, 1]))
    return tables


def accuracy_rows(tables, n_fits):
    """Per table and mode: test accuracies and epsilon_ of ``n_fits`` private fits.

    The modes alternate; no seed is given (a private fit draws its batches
    and noise from the operating system).
    """
    from sklearn_dplssgd import DPLSSGDClassifier
    rows = []
    for name, X, y, X_test, y_test, classes in tables:
        scores = {mode: [] for mode in MODES}
        epsilons = {mode: [] for mode in MODES}
        for fit in range(n_fits):
            for mode in MODES:
                model = DPLSSGDClassifier(epsilon=1.0, mechanism=mode, classes=classes,
                                          neighboring="replace_one")
                with warnings.catch_warnings():
                    warnings.simplefilter("ignore")
                    model.fit(X, y)
                scores[mode].append(model.score(X_test, y_test))
                epsilons[mode].append((model.epsilon_, model.noise_multiplier_))
                print(f"{name} fit {fit + 1} {mode}: accuracy {scores[mode][-1]:.4f}",
                      flush=True)
        rows.append((name, len(y), len(y_test), scores, epsilons))
    return rows


def accuracy_report(rows, n_fits, quick):
    lines = [
        "# Exact noise: test accuracy against the ordinary mode",
        "",
        "Written by `NUMBA_NUM_THREADS=1 python benchmarks/bench_exact_noise.py --accuracy"
        + (" --quick" if quick else "") + f"` ({n_fits} fits per mode and data set).",
        "",
        "DPLSSGDClassifier at its defaults, epsilon 1, replace-one adjacency; "
        "`mechanism=\"gradient\"` (ordinary) and `mechanism=\"gradient_exact\"` (exact: the "
        "rounded Gaussian, accounted as the ordinary mode) "
        "fitted on the same split, the modes alternated, each fit private (its batches and "
        "noise fresh from the operating system). Accuracy in percent on the held-out rows; "
        "difference = exact mean - ordinary mean, with its standard error "
        "sqrt(sd_ordinary^2 / fits + sd_exact^2 / fits). Accuracy is not disturbed by the "
        "load of the shared machine it ran on (" + _data.machine_note() + ").",
        "",
        "| data | train / test rows | ordinary mean (sd) | exact mean (sd) "
        "| difference (s.e.) | ordinary epsilon_ | exact epsilon_ "
        "| noise_multiplier_ ordinary / exact |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for name, n_train, n_test, scores, epsilons in rows:
        ordinary, exact = (100 * np.asarray(scores[mode]) for mode in MODES)
        spread = [float(np.std(values, ddof=1)) if len(values) > 1 else 0.0
                  for values in (ordinary, exact)]
        standard_error = math.sqrt((spread[0] ** 2 + spread[1] ** 2) / len(exact))
        eps = [max(epsilon for epsilon, _ in epsilons[mode]) for mode in MODES]
        noise = [epsilons[mode][0][1] for mode in MODES]
        lines.append(
            f"| {name} | {n_train:,} / {n_test:,} | {ordinary.mean():.2f} ({spread[0]:.2f}) "
            f"| {exact.mean():.2f} ({spread[1]:.2f}) | {exact.mean() - ordinary.mean():+.2f} "
            f"({standard_error:.2f}) | {eps[0]:.4f} | {eps[1]:.4f} "
            f"| {noise[0]:.4f} / {noise[1]:.4f} |")
    if not rows:
        lines.append("| (no data: MNIST and Adult absent) | | | | | | | |")
    return lines


# --- Speed: one epoch of each mode, and where an exact step's time goes ---

SPEED_SHAPE = (60_000, 784, 10)  # MNIST-shaped: n, d, K
SPEED_BATCHES = (256, 4096)
SPEED_JOBS = (1, 2)


class TrainingClock:
    """Seconds spent in the training loop of each fit (calibration and checks left out).

    Wall-clock seconds, and the process's processor seconds (all its threads:
    on a loaded machine, less disturbed by the time others take); and the
    seconds of the exact noise's draws within it, added over the threads that
    drew them.

    The loop is the one ``run_training`` of both backends: wrapped where
    each backend module looks it up, for the duration of the benchmark.
    """

    def __init__(self):
        from sklearn_dplssgd.backends import _exact, _numpy
        self.modules, self.seconds, self.cpu_seconds = (_numpy, _exact), [], []
        self.noise_class, self.noise_seconds = _exact.ExactNoise, []
        self.noise_on_fit_thread = []

    def __enter__(self):
        self.originals = [module.run_training for module in self.modules]
        self.original_sample = self.noise_class.sample
        lock = threading.Lock()

        def timed_sample(noise, *args, **kwargs):
            # A block of noise, on whichever thread draws it (the fit's own
            # or a helper drawing ahead): the seconds add up over threads.
            start = time.perf_counter()
            try:
                return self.original_sample(noise, *args, **kwargs)
            finally:
                with lock:
                    self.noise_seconds.append(time.perf_counter() - start)
                    self.noise_on_fit_thread.append(
                        threading.current_thread() is threading.main_thread())

        self.noise_class.sample = timed_sample

        def timed(original):
            def run(*args, **kwargs):
                start, cpu_start = time.perf_counter(), time.process_time()
                try:
                    return original(*args, **kwargs)
                finally:
                    self.seconds.append(time.perf_counter() - start)
                    self.cpu_seconds.append(time.process_time() - cpu_start)
            return run

        for module, original in zip(self.modules, self.originals):
            module.run_training = timed(original)
        return self

    def __exit__(self, *exc):
        for module, original in zip(self.modules, self.originals):
            module.run_training = original
        self.noise_class.sample = self.original_sample


def speed_data(quick):
    n_rows, n_features, n_classes = SPEED_SHAPE
    if quick:
        n_rows = 6_000
    rng = np.random.default_rng(0)
    X = rng.random((n_rows, n_features), dtype=np.float32)
    return X, rng.integers(0, n_classes, n_rows), n_classes


def speed_rows(X, y, n_classes, batches, jobs, rounds):
    """Per (batch, n_jobs): each mode's one-epoch times (training loop; whole fit), alternated.

    A first fit of each setting compiles the kernels and caches the
    ordinary mode's calibration (the exact mode's is recomputed every fit:
    it shows in the whole fit's time, not in the loop's).
    """
    from sklearn_dplssgd import DPLSSGDClassifier
    rows = []
    for batch in batches:
        for n_jobs in jobs:
            loop = {mode: [] for mode in MODES}
            cpu = {mode: [] for mode in MODES}
            noise = []
            whole = {mode: [] for mode in MODES}
            for round_ in range(rounds + 1):
                for mode in MODES:
                    model = DPLSSGDClassifier(
                        epsilon=1.0, mechanism=mode, batch_size=batch, max_iter=1,
                        n_jobs=n_jobs, classes=list(range(n_classes)))
                    with TrainingClock() as clock, warnings.catch_warnings():
                        warnings.simplefilter("ignore")
                        start = time.perf_counter()
                        model.fit(X, y)
                        elapsed = time.perf_counter() - start
                    if round_ > 0:  # the first round warms up
                        loop[mode].append(sum(clock.seconds))
                        cpu[mode].append(sum(clock.cpu_seconds))
                        whole[mode].append(elapsed)
                        if mode == MODES[1]:
                            noise.append((sum(clock.noise_seconds),
                                          np.mean(clock.noise_on_fit_thread)))
            rows.append((batch, n_jobs, model.n_steps_, loop, whole, cpu, noise))
            print(f"batch {batch} n_jobs {n_jobs}: " + ", ".join(
                f"{mode} {np.median(loop[mode]):.3f} s" for mode in MODES), flush=True)
    return rows


def step_profile_rows(X, y, n_classes, batches, repeats):
    """Milliseconds of each part of one exact step (one thread), and of an ordinary step.

    The parts: the step's noise as the fit draws it (``ExactNoise.draw``,
    one thread), split into its words (ChaCha20, the 16 words a draw the
    sampler asks for) and the sampler (the rest); the gather with the
    margins; the clip; the rounding with the bound's check and the
    integer sum; the smoothing. Median of ``repeats``.
    """
    from sklearn_dplssgd.backends import ExactNoise, _exact, _exact_kernels
    from sklearn_dplssgd.backends._grid_sum import add_factored_rows, grid_norm_bound
    from sklearn_dplssgd.backends._clipping import COEFFICIENT_RANGE
    from sklearn_dplssgd.backends._kernels import (
        compute_feature_norms, noisy_clipped_gradient_sum, smooth_rows, smoothing_omega,
    )
    from sklearn_dplssgd.training import loss_code
    n_rows, n_features = X.shape
    dimension = n_classes * (n_features + 1)
    sigma = 0.25
    # The default mode's noise (mechanism="gradient_exact"): the rounded
    # Gaussian, on the factored grid its mechanism picks for z = 8.
    residual_bits, row_bits = grid_bits_for(8.0, n_classes, n_features + 1,
                                            largest_scale=MAX_ROUNDED_SCALE // 2, headroom=1.0)
    scale = RoundedGaussianScale(math.ceil(8.0 * math.sqrt(factored_norm_bound(
        residual_bits, row_bits, n_classes, n_features + 1))))
    rng = np.random.default_rng(1)
    params = (rng.normal(size=(n_classes, n_features + 1)) * 0.01).astype(np.float32)
    labels = y.astype(np.float64)
    row_norms = np.linalg.norm(X.astype(np.float64), axis=1)
    feature_norms = compute_feature_norms(row_norms, 1.0)
    bounds = (float(grid_norm_bound(residual_bits, n_classes)),
              float(grid_norm_bound(row_bits, n_features + 1)))
    largest, tiny = COEFFICIENT_RANGE[np.dtype(np.float64)]
    code = loss_code("log_loss", n_classes)
    omega = smoothing_omega(sigma)
    no_weights = np.empty(0, dtype=np.float64)
    rows = []
    for batch_size in batches:
        batch = np.sort(rng.choice(n_rows, min(batch_size, n_rows), replace=False))
        design = np.empty((batch.size, n_features + 1), dtype=np.float32)
        margins = _exact_kernels.gather_margins(X, batch, params, 1.0, design)
        scaled = np.empty((batch.size, n_classes))
        total = np.zeros((n_classes, n_features + 1), dtype=np.int64)
        grad = np.zeros((n_classes, n_features + 1), dtype=np.float32)
        noise = np.zeros_like(grad)
        source = ChaChaWords()
        exact_noise = ExactNoise(residual_bits, row_bits, scale, ChaChaWords())
        # The words a step's noise asks its blocks' streams for (a draw may ask for more than
        # it uses), replayed alone: the sampler's share is the noise's time less theirs.
        requests = _word_requests(exact_noise, dimension, _exact.NOISE_BLOCK_SAMPLES)
        parts = {
            "noise words (ChaCha20)": lambda: [
                source.substream(b).words(count) for b, counts in enumerate(requests)
                for count in counts],
            "sampler": lambda: exact_noise.draw(dimension),
            "gather + margins": lambda: _exact_kernels.gather_margins(
                X, batch, params, 1.0, design),
            "clip": lambda: _exact_kernels.scaled_clipped_residuals(
                X, labels, batch, params, margins, feature_norms, code, 0.0, 1.0, 1.0,
                no_weights, largest, tiny, 2.0 ** residual_bits, 0, batch.size, scaled),
            "rounding + bound + integer sum": lambda: add_factored_rows(
                X, batch, scaled, feature_norms, 2.0 ** row_bits, 1.0, *bounds, 0, batch.size,
                total),
            "the step's sum in one call (gather to integer sum)": lambda: (
                _exact_kernels.exact_blocks_sum)(
                X, labels, batch, params, feature_norms, code, 0.0, 1.0, 1.0, no_weights,
                largest, tiny, 2.0 ** residual_bits, 2.0 ** row_bits, *bounds, 0,
                -(-batch.size // _exact.ROWS_PER_STEP_BLOCK), total),
            "smoothing": lambda: smooth_rows(grad, n_features, omega, sigma),
            "ordinary step's noisy clipped sum": lambda: noisy_clipped_gradient_sum(
                X, labels, batch, params, row_norms, code, 0.0, 1.0, True, noise, grad,
                feature_norms=feature_norms),
        }
        timings = {}
        # One BLAS thread, as in a fit (its context holds BLAS to one).
        with threadpool_limits(limits=1, user_api="blas"):
            timings.update(_median_milliseconds(parts, repeats))
        # The noise's time includes its words: the sampler is the rest.
        timings["sampler"] -= timings["noise words (ChaCha20)"]
        rows.append((batch.size, dimension, timings))
    return rows


class _CountingWords:
    """A word source that records how many words each request asks for."""

    def __init__(self, source):
        self.source, self.counts = source, []

    def words(self, count):
        self.counts.append(int(count))
        return self.source.words(count)


def _word_requests(exact_noise, count, block):
    """Per noise block of ``block`` draws, the word counts its stream is asked for."""
    requests = []
    for start in range(0, count, block):
        counting = _CountingWords(ChaChaWords().substream(len(requests)))
        exact_noise.sample(min(block, count - start), counting)
        requests.append(counting.counts)
    return requests


def _median_milliseconds(parts, repeats):
    """``{name: median milliseconds of part()}`` after one call to compile or load it."""
    timings = {}
    for name, part in parts.items():
        part()
        runs = []
        for _ in range(repeats):
            start = time.perf_counter()
            part()
            runs.append(time.perf_counter() - start)
        timings[name] = 1e3 * float(np.median(runs))
    return timings


def grid_cost_lines(n_outputs, row_width, multipliers=(1.0, 8.0)):
    """The factored grid each noise law's mechanism picks, and its sensitivity over the clip."""
    lines = ["", "## The factored grid's cost (computed, not timed)", "",
             f"The grid (k1, k2) each law's mechanism picks at K = {n_outputs}, "
             f"D2 = {row_width} for the noise multiplier z, and the sensitivity sqrt(A Bb) / "
             "2**(k1 + k2) over the clip, less 1: the noise the grid adds.", "",
             "| law | z | grid (k1, k2) | sensitivity over the clip, less 1 |",
             "|---|---|---|---|"]
    for law, settings in (("rounded", dict(largest_scale=MAX_ROUNDED_SCALE // 2, headroom=1.0)),
                          ("discrete", {})):
        for z in multipliers:
            bits = grid_bits_for(z, n_outputs, row_width, **settings)
            excess = math.sqrt(factored_norm_bound(*bits, n_outputs, row_width)) * 2.0 ** -sum(
                bits) - 1.0
            lines.append(f"| {law} | {z:g} | ({bits[0]}, {bits[1]}) | {100 * excess:.2f} % |")
    return lines


def speed_report(rows, profile, quick, rounds):
    n_rows, n_features, n_classes = SPEED_SHAPE
    lines = [
        "# Exact noise: time per epoch against the ordinary mode",
        "",
        "Written by `python benchmarks/bench_exact_noise.py --speed"
        + (" --quick" if quick else "") + "`.",
        "",
        f"Measured on a shared machine ({_data.machine_note()}): the timings are disturbed "
        "by others' work; the modes were alternated fit by fit and the medians of "
        f"{rounds} rounds are given (after one round of warm-up).",
        "",
        f"DPLSSGDClassifier, epsilon 1, one epoch (max_iter=1) on synthetic float32 rows of "
        f"MNIST's shape ({'6,000' if quick else f'{n_rows:,}'} rows, d = {n_features}, "
        f"K = {n_classes}). Loop: the training loop alone (the steps, their batches and "
        "noise; its processor seconds, all threads, are less disturbed by the load); fit: the "
        "whole fit (validation, calibration: the ordinary mode's is "
        "cached after the first fit, the exact mode's computed every fit). Ratio = exact / "
        "ordinary.",
        "",
        "| batch | n_jobs | steps | ordinary loop s | exact loop s | ratio (loop) "
        "| ratio (loop, processor s) | ordinary fit s | exact fit s | ratio (fit) |",
        "|---|---|---|---|---|---|---|---|---|---|",
    ]
    for batch, n_jobs, n_steps, loop, whole, cpu, _ in rows:
        ordinary, exact = (float(np.median(loop[mode])) for mode in MODES)
        ordinary_cpu, exact_cpu = (float(np.median(cpu[mode])) for mode in MODES)
        ordinary_fit, exact_fit = (float(np.median(whole[mode])) for mode in MODES)
        lines.append(
            f"| {batch} | {n_jobs} | {n_steps} | {ordinary:.3f} | {exact:.3f} "
            f"| {exact / ordinary:.2f} | {exact_cpu / ordinary_cpu:.2f} | {ordinary_fit:.3f} "
            f"| {exact_fit:.3f} | {exact_fit / ordinary_fit:.2f} |")
    lines += [
        "",
        "## Where an exact step's time goes (one thread, milliseconds, median)",
        "",
        "One step's parts timed alone on the same data: the noise of a step is "
        "K (d + 1) draws of the rounded Gaussian (the default exact noise) at the scale "
        "of z = 8 on the factored grid "
        "the mechanism chooses for it, drawn as the fit draws it (blocks of 4,096 draws), "
        "less its words. The rounding is of both factors of each row (K + d + 1 entries), "
        "the integer sum an exact compiled float64 sum of their outer products; the "
        "step's sum in one call is gather, margins, clip, rounding and sum together, as a "
        "step on one thread calls them. The ordinary "
        "step's noisy clipped sum is given for comparison (its noise is drawn per chunk "
        "by NumPy, not counted).",
        "",
        "| batch | draws | " + " | ".join(profile[0][2]) + " | ns per draw (words + sampler) |",
        "|---|---|" + "---|" * (len(profile[0][2]) + 1),
    ]
    for batch, dimension, timings in profile:
        per_draw = 1e6 * (timings["noise words (ChaCha20)"]
                          + timings["sampler"]) / dimension
        lines.append(f"| {batch} | {dimension} | "
                     + " | ".join(f"{value:.3f}" for value in timings.values())
                     + f" | {per_draw:.0f} |")
    return lines


def noise_budget_lines(rows, dimension):
    """The noise's cost per draw at which the exact loop would meet the targets (one thread)."""
    lines = [
        "",
        "## The noise's budget",
        "",
        "From the loop's own times (medians), on one thread: the exact loop less its noise's "
        "draws is what the rest of the exact steps costs; the noise may take what is left of "
        "the ordinary loop's time times the target ratio. Per draw: that budget / (steps x "
        "K (d + 1) draws), words and sampler together. With two threads the helper draws "
        "the noise ahead beside the sums of the fit's thread (the noise's seconds, added "
        "over both threads, are given; the loop is not their sum with the rest).",
        "",
        "| batch | n_jobs | target | noise in the exact loop s | ns per draw now "
        "| exact loop less noise s | ns per draw needed |",
        "|---|---|---|---|---|---|---|",
    ]
    for batch, n_jobs, n_steps, loop, _, _, noise in rows:
        target = 1.5 if batch <= 256 else 1.2
        ordinary, exact = (float(np.median(loop[mode])) for mode in MODES)
        noise_seconds = float(np.median([seconds for seconds, _ in noise]))
        draws = n_steps * dimension
        if n_jobs > 1:
            on_fit_thread = float(np.median([share for _, share in noise]))
            lines.append(f"| {batch} | {n_jobs} | {target}x | {noise_seconds:.3f} "
                         f"| {1e9 * noise_seconds / draws:.0f} | (drawn beside the sums: "
                         f"{100 * on_fit_thread:.0f} % of the blocks on the fit's thread) "
                         "| - |")
            continue
        rest = exact - noise_seconds
        budget = target * ordinary - rest
        needed = f"{1e9 * budget / draws:.0f}" if budget > 0 else (
            "out of reach (the rest alone is over the target)")
        lines.append(f"| {batch} | {n_jobs} | {target}x | {noise_seconds:.3f} "
                     f"| {1e9 * noise_seconds / draws:.0f} | {rest:.3f} | {needed} |")
    return lines


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="a smoke run: small and fast")
    parser.add_argument("--out", default=str(RESULTS))
    parser.add_argument("--accuracy", action="store_true",
                        help="the accuracy of both modes on MNIST and Adult instead")
    parser.add_argument("--fits", type=int, default=16, help="fits per mode (--accuracy)")
    parser.add_argument("--adult-dir", default=str(DEFAULT_ADULT_DIR))
    parser.add_argument("--speed", action="store_true",
                        help="time one epoch of each mode and profile an exact step instead")
    parser.add_argument("--rounds", type=int, default=3, help="rounds per setting (--speed)")
    args = parser.parse_args(argv)
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    if args.speed:
        X, y, n_classes = speed_data(args.quick)
        batches, jobs, rounds = ((256,), (1,), 1) if args.quick else (
            SPEED_BATCHES, SPEED_JOBS, args.rounds)
        rows = speed_rows(X, y, n_classes, batches, jobs, rounds)
        profile = step_profile_rows(X, y, n_classes, batches, 3 if args.quick else 9)
        lines = speed_report(rows, profile, args.quick, rounds) + noise_budget_lines(
            rows, n_classes * (X.shape[1] + 1)) + grid_cost_lines(n_classes, X.shape[1] + 1)
        (out / "exact_noise_speed.md").write_text("\n".join(lines) + "\n")
        print("\n".join(lines))
        return 0
    if args.accuracy:
        n_fits = 2 if args.quick else args.fits
        rows = accuracy_rows(accuracy_tables(args.adult_dir, args.quick), n_fits)
        lines = accuracy_report(rows, n_fits, args.quick)
        (out / "exact_noise_accuracy.md").write_text("\n".join(lines) + "\n")
        print("\n".join(lines))
        return 0
    if args.quick:
        sampler = sampler_rows(20_000, [1.0, 1000.0], 1)
        rounded_sampler = sampler_rows(20_000, [1.0, 1000.0], 1, rounded=True)
        sources = word_source_rows(100_000, 1)
        settings = [("MNIST-shaped", 60_000, 784, 10, 256, 2)]
    else:
        sampler = sampler_rows(1_000_000, [0.5, 1.0, 3.0, 1000.0, 2.0 ** 20], 3)
        rounded_sampler = sampler_rows(1_000_000, [1.0, 3.0, 1000.0, 2.0 ** 20], 3,
                                       rounded=True)
        sources = word_source_rows(2_000_000, 5)
        settings = [("MNIST-shaped", 60_000, 784, 10, 256, 20),
                    ("MNIST-shaped", 60_000, 784, 10, 4096, 20),
                    ("MNIST-shaped", 60_000, 784, 10, 1875, 32),
                    ("Adult-shaped", 32_561, 104, 1, 256, 10),
                    ("Adult-shaped", 32_561, 104, 1, 1018, 32)]
    load = os.getloadavg()
    accounting = accounting_rows(settings)
    lines = [
        "# Exact noise: sampler speed and epsilon cost",
        "",
        "Written by `benchmarks/bench_exact_noise.py`" + (" --quick" if args.quick else "") + ".",
        "",
        "## The exact discrete Gaussian sampler (one thread, os.urandom words)",
        "",
        f"Measured on a shared machine (load average {load[0]:.1f}, {load[1]:.1f}, "
        f"{load[2]:.1f} over 1, 5, 15 minutes): the timings are disturbed by others' work. "
        "Best of the repeats.",
        "",
        "Columns: ns per sample drawing its words from os.urandom; ns per sample on words "
        "drawn beforehand (the sampler alone); the 64-bit words a sample uses on average; "
        "the ns that os.urandom takes to make that many words.",
        "",
        "| std s | ns per sample | ns per sample, words drawn before | words per sample "
        "| os.urandom ns for them |",
        "|---|---|---|---|---|",
    ]
    lines += [f"| {std:g} | {total:.0f} | {alone:.0f} | {words:.2f} | {words_ns:.0f} |"
              for std, total, alone, words, words_ns in sampler]
    lines += ["", "## The exact rounded Gaussian sampler (one thread, os.urandom words)", "",
              "Measured as the discrete Gaussian's, in the same run (integer scale s).", "",
              "| scale s | ns per sample | ns per sample, words drawn before | words per sample "
              "| os.urandom ns for them |", "|---|---|---|---|---|"]
    lines += [f"| {std:g} | {total:.0f} | {alone:.0f} | {words:.2f} | {words_ns:.0f} |"
              for std, total, alone, words, words_ns in rounded_sampler]
    lines += ["", "Word sources (best of the runs, alternated):", "",
              "| source | MB/s |", "|---|---|"]
    lines += [f"| {name} | {rate:.0f} |" for name, rate in sources]
    lines += [
        "",
        "## Epsilon of the exact mode at the ordinary mode's noise (target epsilon 1, "
        f"delta {DELTA:g})",
        "",
        "The ordinary mode's epsilon is the PLD accountant's (the library's default); the "
        "exact mode's is the bound of docs/privacy_argument.rst (RDP of the subsampled "
        "discrete Gaussian at integer orders, on the factored grid (k1, k2) its mechanism "
        "chooses for the noise z, shown as k1+k2 for the discrete / the rounded law). "
        "Ratio = exact / ordinary. "
        "Gaussian RDP: the continuous Gaussian's epsilon at the same noise by dp-accounting's "
        "RDP accountant (its own orders, fractional ones included; group-of-two under "
        "replace-one). Zhu-Wang: the exact mode's epsilon with Zhu and Wang's general "
        "subsampling bound (factor 3) in place of the symmetric-pair one. Rounded: the "
        "rounded Gaussian's epsilon (mechanism=\"gradient_exact\") at the same noise, s = "
        "ceil(z sqrt(B)) grid units: the ordinary PLD accounting at the multiplier s / sqrt(B), "
        "B = factored_norm_bound(k1, k2, K, d + 1); its ratio = rounded / ordinary.",
        "",
        "| data | batch | steps | adjacency | z | grids | ordinary epsilon (PLD) | Gaussian RDP "
        "| exact epsilon | ratio | Zhu-Wang | rounded epsilon (PLD) | rounded ratio |",
        "|---|---|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    lines += [f"| {name} | {batch} | {steps} | {neighboring} | {z:.4f} | {k} | {ordinary:.4f} "
              f"| {rdp:.4f} | {exact:.4f} | {exact / ordinary:.3f} | {general:.4f} "
              f"| {rounded:.4f} | {rounded / ordinary:.4f} |"
              for name, batch, steps, neighboring, z, k, ordinary, rdp, exact, general, rounded
              in accounting]
    (out / "exact_noise.md").write_text("\n".join(lines) + "\n")
    print("\n".join(lines))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
