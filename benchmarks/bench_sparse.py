"""Sparse input: speed, memory and smoothing of DPLSSGDClassifier on sparse X.

Three synthetic data sets, built from public generators (no real data is
needed: the UCI Adult table is not on disk, and scikit-learn's fetchers are
offline here):

1. **Adult-like one-hot table**: 48,842 rows with Adult's eight categorical
   columns (workclass 9 levels, education 16, marital status 7, occupation
   15, relationship 6, race 5, sex 2, native country 42), drawn with skewed
   frequencies, and five numeric columns with public bounds; the label comes
   from a logistic model on them, its intercept set for a quarter of positive
   labels (as in Adult).
   Encoded as a user would: a ColumnTransformer with ``OneHotEncoder`` (its
   default sparse output, declared categories) and ``BoundedScaler``: CSR,
   d = 107, 13 stored entries per row.
2. **Text-like hashed matrix**: 100,000 rows x 2^18 hashed features, 48
   token draws per row (about 26 distinct) from a Zipf vocabulary of 50,000
   words hashed into the columns, log term frequencies, rows scaled to unit norm
   (as TF-IDF with ``norm="l2"``): density 1e-4.
3. **Full size**: 200,000 x 100,000 at density 1e-4 (2 million stored
   entries; 160 GB if dense), for one time and memory measurement.

Measured: time per epoch of DPLSSGDClassifier (fit time / epochs, kernels
compiled and the noise calibrated beforehand; one thread: the batches here
are below the size at which the gradient threads engage) against
scikit-learn's ``SGDClassifier(loss="log_loss", tol=None)`` for the same
number of epochs (medians of interleaved repetitions, ratios); the dense fit
of the one-hot table for comparison; where the time of a step goes (the
sparse gradients against the dense noise and smoothing); the peak of the
fit's allocations (tracemalloc); and on the one-hot table the test accuracy
at epsilon = 1 with Laplacian smoothing off (sigma = 0, DP-SGD) and on, over
several seeds.

Run from the repository root::

    python benchmarks/bench_sparse.py           # full run (a few minutes)
    python benchmarks/bench_sparse.py --quick   # seconds (smoke run)

Writes ``sparse.md`` to ``--out`` (default ``benchmarks/results``;
``--quick`` defaults to a temporary folder).
"""

import argparse
import json
import math
import os
import subprocess
import sys
import tempfile
import time
import tracemalloc
import warnings
from pathlib import Path

import numpy as np
import scipy.sparse as sp
from scipy.special import expit
from sklearn.preprocessing import normalize

sys.path.insert(0, str(Path(__file__).resolve().parent))
import _data  # noqa: E402
from bench_speed import delta_for, interleaved, log, timed  # noqa: E402

EPSILON = 1.0

# Adult's categorical columns and their numbers of levels.
ADULT_CATEGORIES = {
    "workclass": 9, "education": 16, "marital_status": 7, "occupation": 15,
    "relationship": 6, "race": 5, "sex": 2, "native_country": 42,
}
# Numeric columns and public bounds (the ranges of Adult's documentation).
ADULT_NUMERIC = {
    "age": (17, 90), "education_num": (1, 16), "capital_gain": (0, 99999),
    "capital_loss": (0, 4356), "hours_per_week": (1, 99),
}


# ---------------------------------------------------------------------------
# Data
# ---------------------------------------------------------------------------


def adult_like(n, seed=0):
    """Adult-shaped rows (a pandas DataFrame), labels, and the encoder of a user.

    The categories of every column are declared (they are public), so the
    encoder learns nothing from the rows.
    """
    import pandas as pd
    from sklearn.compose import ColumnTransformer
    from sklearn.preprocessing import OneHotEncoder

    from sklearn_dplssgd import BoundedScaler

    rng = np.random.default_rng(seed)
    columns, logits = {}, np.zeros(n)
    categories = []
    for name, levels in ADULT_CATEGORIES.items():
        frequencies = rng.dirichlet(np.full(levels, 0.7))
        codes = rng.choice(levels, size=n, p=frequencies)
        effects = rng.normal(0.0, 0.8, levels)
        logits += effects[codes]
        labels = [f"{name}_{level}" for level in range(levels)]
        columns[name] = np.asarray(labels, dtype=object)[codes]
        categories.append(labels)
    for name, (low, high) in ADULT_NUMERIC.items():
        unit = rng.beta(2.0, 5.0, n)
        columns[name] = low + (high - low) * unit
        logits += rng.normal(0.0, 1.0) * (unit - 0.3)
    frame = pd.DataFrame(columns)
    # The intercept that gives a quarter of positive labels (bisection).
    low, high = -20.0, 20.0
    for _ in range(60):
        middle = (low + high) / 2
        low, high = (middle, high) if expit(logits + middle).mean() < 0.25 else (low, middle)
    y = (rng.random(n) < expit(logits + low)).astype(np.int64)
    encoder = ColumnTransformer([
        ("categorical", OneHotEncoder(categories=categories), list(ADULT_CATEGORIES)),
        ("numeric", BoundedScaler(lower=[b[0] for b in ADULT_NUMERIC.values()],
                                  upper=[b[1] for b in ADULT_NUMERIC.values()]),
         list(ADULT_NUMERIC)),
    ])
    return frame, y, encoder


def text_like(n, n_features, tokens_per_row=48, vocabulary=50_000, seed=0):
    """Hashed log-TF rows of unit norm (CSR) and labels from a sparse linear model."""
    rng = np.random.default_rng(seed)
    n_tokens = rng.poisson(tokens_per_row, n)
    indptr = np.concatenate([[0], np.cumsum(n_tokens)])
    words = np.minimum(rng.zipf(1.3, indptr[-1]), vocabulary) - 1
    # A fixed public hash of the words into the columns.
    columns = (words.astype(np.int64) * 2_654_435_761 + 12_345) % n_features
    rows = np.repeat(np.arange(n), n_tokens)
    counts = sp.csr_matrix((np.ones(indptr[-1]), (rows, columns)), shape=(n, n_features))
    counts.sum_duplicates()
    counts.data = 1.0 + np.log(counts.data)
    X = normalize(counts)  # keeps the canonical CSR structure
    weights = rng.normal(size=vocabulary) * (rng.random(vocabulary) < 0.05)
    word_scores = np.zeros(n_features)
    np.add.at(word_scores, (np.arange(vocabulary) * 2_654_435_761 + 12_345) % n_features,
              weights)
    scores = X @ word_scores
    y = (scores > np.median(scores)).astype(np.int64)
    return X, y


def uniform_sparse(n, n_features, density, seed=0):
    """Rows of about ``density * n_features`` uniform columns, unit norm; random labels."""
    rng = np.random.default_rng(seed)
    n_entries = rng.poisson(density * n_features, n)
    indptr = np.concatenate([[0], np.cumsum(n_entries)]).astype(np.int64)
    rows = np.repeat(np.arange(n), n_entries)
    columns = rng.integers(0, n_features, indptr[-1])
    X = sp.csr_matrix((np.ones(indptr[-1]), (rows, columns)), shape=(n, n_features))
    X.sum_duplicates()
    return normalize(X), rng.integers(0, 2, n)


def nbytes(X):
    """Memory held by a CSR matrix's three arrays."""
    return X.data.nbytes + X.indices.nbytes + X.indptr.nbytes


# ---------------------------------------------------------------------------
# Estimators
# ---------------------------------------------------------------------------


def dp_model(n, max_iter, sigma=1.0, epsilon=EPSILON, random_state=None):
    """DPLSSGDClassifier with the library defaults except the epochs and the seed."""
    from sklearn_dplssgd import DPLSSGDClassifier

    return DPLSSGDClassifier(epsilon=epsilon, delta=delta_for(n), sigma=sigma,
                             max_iter=max_iter, classes=[0, 1],
                             random_state=random_state,
                             reproducible=random_state is not None)


def sgd_model(max_iter):
    from sklearn.linear_model import SGDClassifier

    return SGDClassifier(loss="log_loss", max_iter=max_iter, tol=None, random_state=0)


def quiet_fit(model, X, y):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return model.fit(X, y)


def warm(X, y, epochs):
    """Compile the kernels for X's types and calibrate the fits' noise (cached)."""
    quiet_fit(dp_model(X.shape[0], epochs), X, y)


def epoch_times(X, y, epochs, reps, extra=None):
    """Median seconds per epoch of each method, fits interleaved."""
    n = X.shape[0]
    warm(X, y, epochs)
    quiet_fit(sgd_model(1), X[:1000], y[:1000])
    methods = {
        "DPLSSGDClassifier": lambda: timed(
            lambda: quiet_fit(dp_model(n, epochs), X, y)),
        "SGDClassifier (log_loss)": lambda: timed(
            lambda: quiet_fit(sgd_model(epochs), X, y)),
    }
    for name, (X_other, y_other) in (extra or {}).items():
        warm(X_other, y_other, epochs)
        methods[name] = (lambda X_other=X_other, y_other=y_other: timed(
            lambda: quiet_fit(dp_model(n, epochs), X_other, y_other)))
    medians, _ = interleaved(methods, reps)
    return {name: value / epochs for name, value in medians.items()}


def peak_allocation(fit):
    """Peak of the Python/numpy allocations made by ``fit()`` (bytes)."""
    tracemalloc.start()
    try:
        fit()
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    return peak


def memory(X, y, epochs):
    warm(X, y, epochs)
    n = X.shape[0]
    return {
        "DPLSSGDClassifier": peak_allocation(lambda: quiet_fit(dp_model(n, epochs), X, y)),
        "SGDClassifier": peak_allocation(lambda: quiet_fit(sgd_model(epochs), X, y)),
    }


def step_parts(X, y, batch_size, reps, calls=50):
    """Milliseconds per step of each part of a step, each timed alone.

    The clipped gradients of one batch of ``batch_size`` rows (the CSR kernel,
    O(stored entries * K)), drawing the d + 1 noise values, and smoothing the
    d coefficients (both O(d K), dense whatever the data).
    """
    from sklearn_dplssgd.backends._kernels import smooth_rows, smoothing_omega
    from sklearn_dplssgd.training._losses import LOG_LOSS_BINARY
    from sklearn_dplssgd.backends._numpy import gaussian_noise
    from sklearn_dplssgd.backends._sparse import (
        compute_sparse_row_norms,
        noisy_clipped_gradient_sum_sparse,
    )

    n, d = X.shape
    rng = np.random.default_rng(0)
    rows = np.sort(rng.choice(n, size=min(batch_size, n), replace=False)).astype(np.int64)
    params = np.zeros((1, d + 1))
    grad, noise = np.empty_like(params), np.zeros_like(params)
    norms, targets = compute_sparse_row_norms(X), y.astype(np.float64)
    omega = smoothing_omega(1.0)

    def gradients():
        noisy_clipped_gradient_sum_sparse(X, targets, rows, params, norms, LOG_LOSS_BINARY,
                                          0.0, 1.0, True, noise, grad)

    def repeated(part):
        part()  # compiled and warm
        return lambda: timed(lambda: [part() for _ in range(calls)]) / calls

    medians, _ = interleaved({
        f"clipped gradients of one batch ({len(rows)} rows, "
        f"{int(np.diff(X.indptr)[rows].sum())} stored entries)": repeated(gradients),
        f"drawing the noise ({d + 1} values)": repeated(
            lambda: gaussian_noise(rng, (1, d + 1), np.float64)),
        f"smoothing ({d} coefficients, sigma = 1)": repeated(
            lambda: smooth_rows(grad, d, omega, 1.0)),
    }, reps)
    return medians


_RSS_SCRIPT = r"""
import gc, json, sys, warnings
sys.path.insert(0, {bench_dir!r})
warnings.simplefilter("ignore")
from bench_sparse import dp_model, uniform_sparse
def status(field):  # VmRSS (resident now) and VmHWM (peak resident), bytes
    with open("/proc/self/status") as lines:
        for line in lines:
            if line.startswith(field + ":"):
                return int(line.split()[1]) * 1024
dp_model(1000, 1).fit(*uniform_sparse(1000, {d}, {density}))  # compile or load the kernels
X, y = uniform_sparse({n}, {d}, {density})
gc.collect()
try:  # Linux >= 4.0: writing 5 to clear_refs resets the peak (VmHWM)
    with open("/proc/self/clear_refs", "w") as handle:
        handle.write("5")
    reset = True
except OSError:
    reset = False
before = status("VmRSS")
dp_model({n}, 1).fit(X, y)
print(json.dumps({{"before": before, "peak": status("VmHWM"), "reset": reset}}))
"""


def process_rss(n, d, density):
    """Resident memory of a fresh process: with X loaded, and its peak during one fit.

    Everything counts: the interpreter, NumPy, SciPy, scikit-learn, Numba and
    the compiled kernels, X, then the calibration and the fit. Returns
    ``(before, peak, reset)`` in bytes; ``reset`` False means the peak could
    not be reset after X was built (it then includes building X).
    """
    script = _RSS_SCRIPT.format(bench_dir=str(Path(__file__).resolve().parent), n=n, d=d,
                                density=density)
    result = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                            check=True)
    values = json.loads(result.stdout.strip().splitlines()[-1])
    return values["before"], values["peak"], values["reset"]


def smoothing_accuracy(X_train, y_train, X_test, y_test, sigmas, seeds):
    """Test accuracy at epsilon = 1 per sigma (one fit per seed), and references."""
    n = X_train.shape[0]
    results = {}
    for sigma in sigmas:
        results[sigma] = [
            quiet_fit(dp_model(n, "auto", sigma=sigma, random_state=seed),
                      X_train, y_train).score(X_test, y_test)
            for seed in seeds
        ]
    reference = quiet_fit(dp_model(n, "auto", sigma=0.0, epsilon=math.inf, random_state=0),
                          X_train, y_train).score(X_test, y_test)
    majority = max(np.mean(y_test), 1.0 - np.mean(y_test))
    return results, reference, majority


# ---------------------------------------------------------------------------
# Report
# ---------------------------------------------------------------------------


def ms(seconds):
    return f"{1e3 * seconds:.1f}"


def mib(n_bytes):
    return f"{n_bytes / 2**20:.1f}"


def size(n_bytes):
    return f"{n_bytes / 2**30:.1f} GiB" if n_bytes >= 2**30 else f"{mib(n_bytes)} MiB"


def epoch_table(title, times, sgd_name="SGDClassifier (log_loss)"):
    sgd = times[sgd_name]
    lines = [f"### {title}", "", "| method | ms / epoch | SGDClassifier time / this |",
             "|---|---|---|"]
    for name, value in times.items():
        lines.append(f"| {name} | {ms(value)} | {sgd / value:.2f}x |")
    return lines + [""]


def main(argv=None):
    from sklearn.model_selection import train_test_split

    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="seconds-long smoke run")
    parser.add_argument("--out", default=None,
                        help="output folder (default benchmarks/results; a temporary "
                             "folder with --quick)")
    parser.add_argument("--reps", type=int, default=None,
                        help="repetitions per timing (default 5; 1 with --quick)")
    args = parser.parse_args(argv)
    quick = args.quick
    out = Path(args.out) if args.out else (
        Path(tempfile.mkdtemp(prefix="bench_sparse_")) if quick
        else _data.REPO_ROOT / "benchmarks" / "results")
    out.mkdir(parents=True, exist_ok=True)
    reps = args.reps or (1 if quick else 5)
    if quick:
        n_adult, n_text, d_text, full = 4000, 4000, 2**16, (20_000, 100_000)
        epochs, seeds = 1, [0, 1]
    else:
        n_adult, n_text, d_text, full = 48_842, 100_000, 2**18, (200_000, 100_000)
        epochs, seeds = 3, [0, 1, 2, 3, 4]

    started = time.perf_counter()
    load_start = os.getloadavg()
    log(f"Machine: {_data.machine_note()}")

    # 1. One-hot table ---------------------------------------------------------
    frame, y_adult, encoder = adult_like(n_adult)
    X_adult = encoder.fit_transform(frame).tocsr()
    assert sp.issparse(X_adult)
    X_adult_dense = X_adult.toarray()
    log(f"One-hot table: {X_adult.shape}, {X_adult.nnz / X_adult.shape[0]:.1f} entries "
        f"per row, {np.mean(y_adult):.2f} positive")
    adult_times = epoch_times(X_adult, y_adult, epochs, reps,
                              extra={"DPLSSGDClassifier, dense X":
                                     (X_adult_dense, y_adult)})
    for name, value in adult_times.items():
        log(f"    {name:42s} {ms(value):>8s} ms/epoch")
    adult_memory = memory(X_adult, y_adult, epochs)

    X_train, X_test, y_train, y_test = train_test_split(
        X_adult, y_adult, test_size=0.2, random_state=0, stratify=y_adult)
    sigmas = [0.0, 1.0, 3.0]
    accuracy, reference, majority = smoothing_accuracy(X_train, y_train, X_test, y_test,
                                                       sigmas, seeds)
    for sigma, values in accuracy.items():
        log(f"    sigma={sigma:g}: accuracy {np.mean(values):.4f} +- {np.std(values):.4f}")
    log(f"    non-private reference {reference:.4f}, majority class {majority:.4f}")
    del X_adult_dense

    # 2. Text-like -----------------------------------------------------------------
    X_text, y_text = text_like(n_text, d_text)
    log(f"Text-like: {X_text.shape}, density {X_text.nnz / np.prod(X_text.shape):.2e}")
    text_times = epoch_times(X_text, y_text, epochs, reps)
    for name, value in text_times.items():
        log(f"    {name:42s} {ms(value):>8s} ms/epoch")
    text_memory = memory(X_text, y_text, epochs)
    text_fit = quiet_fit(dp_model(n_text, epochs), X_text, y_text)
    text_parts = step_parts(X_text, y_text, text_fit.batch_size_, reps)
    for name, value in text_parts.items():
        log(f"    per step: {name}: {ms(value)} ms")
    text_bytes = nbytes(X_text)
    del X_text

    # 3. Full size -------------------------------------------------------------------
    n_full, d_full = full
    X_full, y_full = uniform_sparse(n_full, d_full, 1e-4)
    log(f"Full size: {X_full.shape}, {X_full.nnz} entries, X {mib(nbytes(X_full))} MiB")
    full_times = epoch_times(X_full, y_full, 1, reps)
    full_memory = memory(X_full, y_full, 1)
    full_fit = quiet_fit(dp_model(n_full, 1), X_full, y_full)
    full_parts = step_parts(X_full, y_full, full_fit.batch_size_, reps)
    for name, value in full_parts.items():
        log(f"    per step: {name}: {ms(value)} ms")
    for name, value in full_times.items():
        log(f"    {name:42s} {ms(value):>8s} ms/epoch")
    for name, value in full_memory.items():
        log(f"    peak allocation of the fit, {name}: {mib(value)} MiB")
    rss_before, rss_peak, rss_reset = process_rss(n_full, d_full, 1e-4)
    log(f"    fresh process, resident with X loaded {mib(rss_before)} MiB, peak during the "
        f"fit {mib(rss_peak)} MiB{'' if rss_reset else ' (peak not reset after building X)'}")

    # Report -------------------------------------------------------------------------
    load_end = os.getloadavg()
    elapsed = time.perf_counter() - started
    best = max(accuracy, key=lambda sigma: np.mean(accuracy[sigma]))
    lines = [
        "# Sparse input", "",
        f"Generated by `python benchmarks/bench_sparse.py{' --quick' if quick else ''}`. "
        "Timings are wall-clock medians over "
        f"{reps} interleaved repetitions on a **shared, loaded 2-core machine** (other "
        "workers' tests and benchmarks ran at the same time): load average "
        f"{load_start[0]:.2f} / {load_start[1]:.2f} / {load_start[2]:.2f} at the start, "
        f"{load_end[0]:.2f} / {load_end[1]:.2f} / {load_end[2]:.2f} at the end (1 / 5 / 15 "
        f"min). Total run time {elapsed / 60:.1f} min.", "",
        "Settings: DPLSSGDClassifier with the library defaults (epsilon=1, delta 1e-5 or "
        "1/(10 n), sigma=1, clip_norm=1, batch_size 'auto' = ceil(n / 32) here, eta0 "
        f"'auto', PLD accountant, replace-one) and max_iter={epochs} epochs; time per "
        f"epoch = fit time / {epochs} (the fit includes input validation, the sparse "
        "structure check and the row norms; kernels compiled and the noise calibrated "
        "beforehand). SGDClassifier(loss='log_loss', tol=None) for the same number of "
        "epochs (one sample per update, no privacy). Each step of DPLSSGD costs "
        "O(stored entries of the batch * K) for the clipped gradients plus O(d K) for the "
        "dense noise, smoothing and update, whatever the density.", "",
        "## Time per epoch", "",
    ]
    lines += epoch_table(
        f"Adult-like one-hot table: n = {n_adult}, d = {X_train.shape[1]}, "
        f"{X_adult.nnz / X_adult.shape[0]:.1f} stored entries per row (CSR from "
        "OneHotEncoder + BoundedScaler)", adult_times)
    lines += epoch_table(
        f"Text-like hashed features: n = {n_text}, d = 2^{int(math.log2(d_text))}, "
        f"{text_fit.batch_size_} rows per batch, {text_fit.n_steps_ // epochs} steps per epoch",
        text_times)
    lines += epoch_table(
        f"Full size: n = {n_full}, d = {d_full}, density 1e-4 ({X_full.nnz} stored "
        f"entries; dense float64 would be {size(n_full * d_full * 8)}), 1 epoch",
        full_times)
    lines += [
        "Where the time of a step goes (each part timed alone, milliseconds per step):",
        "", "| part | text-like | full size |", "|---|---|---|",
    ]
    for (name, text_value), (full_name, full_value) in zip(
            text_parts.items(), full_parts.items()):
        label = name.split(" (")[0]
        lines.append(f"| {label} | {ms(text_value)} ({name[len(label) + 2:-1]}) | "
                     f"{ms(full_value)} ({full_name[len(label) + 2:-1]}) |")
    dense_share = {
        label: sum(v for k, v in parts.items() if not k.startswith("clipped"))
        / sum(parts.values())
        for label, parts in (("text", text_parts), ("full", full_parts))
    }
    lines += [
        "",
        f"The clipped gradients cost what the batch stores; the dense part of a step "
        f"(noise and smoothing, O(d)) is {100 * dense_share['text']:.0f} % of these "
        f"parts on the text-like data and {100 * dense_share['full']:.0f} % at full "
        "size. The noise cannot be sparse (it must cover every coordinate, or the "
        "release is not private), so on wide sparse data the time per epoch is about "
        "(steps per epoch) x d x (cost of one Gaussian draw and one smoothing "
        "coordinate): SGDClassifier, which adds no noise, takes "
        f"{text_times['SGDClassifier (log_loss)'] / text_times['DPLSSGDClassifier']:.2f} "
        "times DPLSSGD's time per epoch on the text-like data. Fewer, larger batches "
        "(a larger batch_size) cut the number of dense steps per epoch. On the one-hot table (d = "
        f"{X_train.shape[1]}) the dense part is small and the sparse fit takes "
        f"{adult_times['DPLSSGDClassifier'] / adult_times['DPLSSGDClassifier, dense X']:.2f}"
        " times the time of the dense fit of the same rows.", "",
        "## Peak memory of a fit", "",
        "tracemalloc peak of the allocations made during a warm fit (X itself excluded: "
        "it exists before the fit; the fit never copies or densifies a canonical CSR "
        "matrix).", "",
        "| data | X (CSR arrays) | dense X would be | DPLSSGDClassifier peak | "
        "SGDClassifier peak |", "|---|---|---|---|---|",
    ]
    for name, X_shape, x_bytes, peaks in (
        ("Adult-like one-hot", (n_adult, X_train.shape[1]), nbytes(X_adult), adult_memory),
        ("text-like", (n_text, d_text), text_bytes, text_memory),
        ("full size", (n_full, d_full), nbytes(X_full), full_memory),
    ):
        dense = X_shape[0] * X_shape[1] * 8
        lines.append(
            f"| {name} {X_shape[0]} x {X_shape[1]} | "
            f"{mib(x_bytes)} MiB | {size(dense)} | "
            f"{mib(peaks['DPLSSGDClassifier'])} MiB | {mib(peaks['SGDClassifier'])} MiB |")
    lines += [
        "", "The DPLSSGD peak is the model-sized buffers (weights, gradient, the averaged "
        "iterate, a chunk of dense noise of at most 2^20 values): O(d K), not O(b d) and "
        "not O(n d).", "",
        f"Whole process at full size: a fresh Python process that imports the library, "
        "loads the compiled kernels and builds the "
        f"{n_full} x {d_full} matrix is {mib(rss_before)} MiB resident (the "
        "interpreter, NumPy, SciPy, scikit-learn, Numba and X); during the fit "
        f"(calibration included) its resident memory peaks at {mib(rss_peak)} MiB "
        "(VmHWM, reset after X was built"
        f"{'' if rss_reset else ': the reset failed, so this includes building X'}).", "",
        "## Laplacian smoothing on one-hot columns", "",
        f"Test accuracy on a stratified 20 % split of the Adult-like table (training "
        f"{X_train.shape[0]} rows), epsilon = 1, library defaults otherwise, "
        f"{len(seeds)} seeds (reproducible fits: each seed draws its own noise and "
        "batches).", "",
        "| sigma | mean accuracy | std | per seed |", "|---|---|---|---|",
    ]
    for sigma, values in accuracy.items():
        lines.append(f"| {sigma:g}{' (DP-SGD)' if sigma == 0 else ''} | "
                     f"{np.mean(values):.4f} | {np.std(values):.4f} | "
                     + ", ".join(f"{v:.4f}" for v in values) + " |")
    lines += [
        f"| non-private reference (epsilon = inf, sigma = 0) | {reference:.4f} | | |",
        f"| majority class | {majority:.4f} | | |", "",
        f"Best mean here: sigma = {best:g}. Laplacian smoothing averages each "
        "coefficient's noisy gradient with its neighbours in column order. One-hot "
        "columns have no such order: neighbours are levels of the same category (or the "
        "last level of one and the first of the next), so smoothing mixes the "
        "gradients of unrelated indicators. See the user guide's section on sparse "
        "input for the advice drawn from this table.", "",
        f"Machine: {_data.machine_note()}.", "",
        "Reproduce: `python benchmarks/bench_sparse.py` (add `--quick` for a smoke run).",
    ]
    path = out / "sparse.md"
    path.write_text("\n".join(lines) + "\n")
    log(f"Wrote {path} in {elapsed:.0f} s")


if __name__ == "__main__":
    main()
