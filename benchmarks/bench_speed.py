"""Speed and memory benchmark of DPLSSGDClassifier.

Measured side by side in one run (repetitions interleaved, medians reported):

1. Time per epoch against scikit-learn's ``SGDClassifier(loss="log_loss")``
   on MNIST-shaped dense synthetic data (n = 60,000, d = 784; 10 classes and
   2 classes), for DPLSSGDClassifier in float64 with 1 thread, with
   ``n_jobs=-1``, and with float32 input.
2. Against a floor: the time numpy BLAS needs for the two matrix products of
   one epoch (``X_B W^T`` and ``R^T X_B`` for all n/b batches of size b), with
   the batches pre-gathered and with the gather ``X[idx]`` included.
3. Against Opacus on CPU (same linear model, batch size, Poisson sampling)
   when torch and opacus are importable (optional; skipped otherwise).
4. Scaling of the time per epoch with n (d fixed) and with d (n fixed), with
   log-log slopes (``speed_scaling.png``).
5. Peak memory of a fit against the size of X (tracemalloc in this process;
   ``ru_maxrss`` in a fresh subprocess that loads X first and then fits).
6. First fit in a fresh process, with and without Numba's on-disk cache, and
   the noise calibration, cold (for the PLD accountant, the library default,
   and for RDP; the default replace-one adjacency) and cached.
7. Where the time of a fit goes (stage timings, per-step overhead, cProfile),
   and the Laplacian smoothing of one step's gradient alone: the compiled
   O(d) solver the fit uses (``_kernels.smooth_rows``) against the FFT
   reference (``_smoothing.apply_smoothing``).

What ``n_jobs`` buys is measured by ``benchmarks/bench_cores.py`` (one epoch
at 1, 2, 4, ... all cores, quiet and under load). The section that modelled
many cores from the pieces of a step (``--many-cores``) was dropped with the
per-step thread team it modelled, which the library no longer uses.

Run from the repository root::

    python benchmarks/bench_speed.py               # full run (under ~12 min)
    python benchmarks/bench_speed.py --quick       # seconds (smoke run)

Writes ``speed.md`` and ``speed_scaling.png`` to ``--out`` (default
``benchmarks/results``; ``--quick`` defaults to a temporary folder). All
timings are wall-clock medians; on a shared machine they move with the load,
which is recorded in the output.
"""

import argparse
import contextlib
import cProfile
import io
import json
import math
import os
import pstats
import subprocess
import sys
import tempfile
import time
import tracemalloc
import warnings
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
import _data  # noqa: E402

BATCH = 256
EPSILON = 1.0
DELTA = 1e-5
SIGMA = 1.0

TARGETS = {
    "multiclass_vs_sgd": 5.0,   # DPLSSGD epoch at least 5x faster than SGDClassifier
    "binary_vs_sgd": 1.0,       # no slower
    "vs_floor": 2.0,            # within 2x of the numpy matrix-product floor
    "peak_memory": 1.3,         # peak memory of a fit <= 1.3 x size of X
    "calibration_cold": 0.3,    # seconds
    "calibration_cached": 1e-3,  # seconds
    "first_fit_cached": 0.5,    # seconds
}


# ---------------------------------------------------------------------------
# Helpers
# ---------------------------------------------------------------------------


def log(message=""):
    print(message, flush=True)


def synthetic(n, d, n_classes, seed=0, dtype=np.float64):
    """Dense MNIST-like data: features uniform in [0, 1], labels from a linear model."""
    rng = np.random.default_rng(seed)
    X = rng.random((n, d))
    if dtype != np.float64:
        X = X.astype(dtype)
    W = rng.standard_normal((max(n_classes, 2), d))
    scores = X @ W.T.astype(X.dtype)
    if n_classes == 2:
        s = scores[:, 0]
        y = (s > np.median(s)).astype(np.int64)
    else:
        y = np.argmax(scores + rng.gumbel(size=scores.shape), axis=1)
    return X, y


def delta_for(n):
    """delta = 1e-5, or 1 / (10 n) where 1e-5 is not below 1 / n (n >= 1e5)."""
    return DELTA if n * DELTA < 1.0 else 0.1 / n


def dp_classifier(n_classes, max_iter, n_jobs=None, sigma=SIGMA, epsilon=EPSILON,
                  batch_size=BATCH, n=0):
    """The benchmarked estimator; ``n`` (rows it will see) sets delta."""
    from sklearn_dplssgd import DPLSSGDClassifier

    return DPLSSGDClassifier(
        loss="log_loss", epsilon=epsilon, delta=delta_for(n), sigma=sigma, clip_norm=1.0,
        batch_size=batch_size, max_iter=max_iter, learning_rate="constant", eta0=0.5,
        classes=range(n_classes), n_jobs=n_jobs,
    )


def warm_calibration(n, batch_size, max_iter, epsilon=EPSILON):
    """Fill the calibration cache for a fit, so timings exclude it."""
    from sklearn_dplssgd import calibrate_noise
    from sklearn_dplssgd.training._schedules import number_of_steps

    if math.isfinite(epsilon):
        calibrate_noise(epsilon, delta_for(n), sample_rate=min(1.0, batch_size / n),
                        n_steps=number_of_steps(n, batch_size, max_iter))


def timed(fn):
    t0 = time.perf_counter()
    fn()
    return time.perf_counter() - t0


def interleaved(methods, reps):
    """Run every method once per round, ``reps`` rounds; median seconds each."""
    times = {name: [] for name in methods}
    for _ in range(reps):
        for name, fn in methods.items():
            times[name].append(fn())
    return {name: float(np.median(values)) for name, values in times.items()}, times


def blas_threads(n):
    from threadpoolctl import threadpool_limits

    return threadpool_limits(limits=n, user_api="blas")


SECTION_LOADS = []  # (section, 1-minute load average when it started)


def loadavg(section=None):
    """The load averages as text; with ``section``, also recorded for the report."""
    load = os.getloadavg()
    if section is not None:
        SECTION_LOADS.append((section, load[0]))
    return "load {:.2f} / {:.2f} / {:.2f}".format(*load)


# ---------------------------------------------------------------------------
# 1-3. Time per epoch: DPLSSGD, SGDClassifier, numpy floor, Opacus
# ---------------------------------------------------------------------------


def numpy_floor_epoch(X, n_outputs, batch_size, gather, n_threads, seed=0):
    """Seconds for the two matrix products of one epoch in numpy BLAS.

    ``n // b`` batches of exactly ``b`` distinct rows (sorted, like the
    estimator's Poisson batches). With ``gather`` the copy ``X[idx]`` is in
    the timed loop; without it the batches are gathered beforehand.
    """
    rng = np.random.default_rng(seed)
    n, d = X.shape
    n_batches = n // batch_size
    perm = rng.permutation(n)[: n_batches * batch_size].reshape(n_batches, batch_size)
    perm.sort(axis=1)
    W = rng.standard_normal((n_outputs, d)).astype(X.dtype)
    R = rng.standard_normal((batch_size, n_outputs)).astype(X.dtype)
    margins = np.empty((batch_size, n_outputs), dtype=X.dtype)
    grad = np.empty((n_outputs, d), dtype=X.dtype)
    xb = np.empty((batch_size, d), dtype=X.dtype)
    with blas_threads(n_threads):
        if gather:
            t0 = time.perf_counter()
            for idx in perm:
                np.take(X, idx, axis=0, out=xb)
                np.dot(xb, W.T, out=margins)
                np.dot(R.T, xb, out=grad)
            return time.perf_counter() - t0
        # Pre-gathered in blocks (bounded memory): only the products are timed.
        total = 0.0
        block = max(1, (64 << 20) // (batch_size * d * X.itemsize))
        for start in range(0, n_batches, block):
            gathered = [X[idx] for idx in perm[start:start + block]]
            t0 = time.perf_counter()
            for xb in gathered:
                np.dot(xb, W.T, out=margins)
                np.dot(R.T, xb, out=grad)
            total += time.perf_counter() - t0
        return total


def opacus_epoch_fn(X, y, n_outputs, batch_size):
    """A function timing one Opacus epoch, or (None, reason) if unavailable."""
    try:
        import opacus  # noqa: F401
        import torch
        from opacus import PrivacyEngine
    except Exception as error:  # noqa: BLE001 - any import failure means "skip"
        return None, f"not importable ({type(error).__name__}: {error})"

    torch.set_num_threads(1)
    features = torch.from_numpy(np.ascontiguousarray(X, dtype=np.float32))
    if n_outputs == 1:
        targets = torch.from_numpy(y.astype(np.float32)).unsqueeze(1)
        loss_fn = torch.nn.BCEWithLogitsLoss()
    else:
        targets = torch.from_numpy(y.astype(np.int64))
        loss_fn = torch.nn.CrossEntropyLoss()
    dataset = torch.utils.data.TensorDataset(features, targets)

    def one_epoch():
        model = torch.nn.Linear(X.shape[1], n_outputs)
        optimizer = torch.optim.SGD(model.parameters(), lr=0.5)
        loader = torch.utils.data.DataLoader(dataset, batch_size=batch_size)
        engine = PrivacyEngine(accountant="rdp")
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            model, optimizer, loader = engine.make_private(
                module=model, optimizer=optimizer, data_loader=loader,
                noise_multiplier=1.0, max_grad_norm=1.0, poisson_sampling=True)
        t0 = time.perf_counter()
        for xb, yb in loader:
            if len(xb) == 0:
                continue
            optimizer.zero_grad()
            loss_fn(model(xb), yb).backward()
            optimizer.step()
        return time.perf_counter() - t0

    return one_epoch, f"opacus {opacus.__version__}, torch {torch.__version__}, 1 thread"


def epoch_comparison(n, d, n_classes, epochs, reps, with_sgd=True):
    """Median seconds per epoch of each method on one synthetic problem."""
    from sklearn.linear_model import SGDClassifier

    X, y = synthetic(n, d, n_classes)
    X32 = X.astype(np.float32)
    n_outputs = 1 if n_classes == 2 else n_classes
    warm_calibration(n, BATCH, epochs)
    # Compile / load every kernel variant before timing.
    for Xw, jobs in ((X, None), (X, -1), (X32, None)):
        dp_classifier(n_classes, 1, n_jobs=jobs).fit(Xw[:2000], y[:2000])

    methods = {
        "DPLSSGD float64, 1 thread": lambda: timed(
            lambda: dp_classifier(n_classes, epochs).fit(X, y)) / epochs,
        "DPLSSGD float64, n_jobs=-1": lambda: timed(
            lambda: dp_classifier(n_classes, epochs, n_jobs=-1).fit(X, y)) / epochs,
        "DPLSSGD float32, 1 thread": lambda: timed(
            lambda: dp_classifier(n_classes, epochs).fit(X32, y)) / epochs,
    }
    if with_sgd:
        methods["SGDClassifier(log_loss)"] = lambda: timed(
            lambda: SGDClassifier(loss="log_loss", max_iter=epochs, tol=None,
                                  random_state=0).fit(X, y)) / epochs
    floors = {
        "numpy floor, pre-gathered, 1 thread": lambda: numpy_floor_epoch(
            X, n_outputs, BATCH, False, 1),
        "numpy floor, with gather, 1 thread": lambda: numpy_floor_epoch(
            X, n_outputs, BATCH, True, 1),
        "numpy floor, pre-gathered, 2 threads": lambda: numpy_floor_epoch(
            X, n_outputs, BATCH, False, 2),
        "numpy floor, with gather, 2 threads": lambda: numpy_floor_epoch(
            X, n_outputs, BATCH, True, 2),
        "numpy floor float32, with gather, 1 thread": lambda: numpy_floor_epoch(
            X32, n_outputs, BATCH, True, 1),
    }
    opacus_fn, opacus_note = opacus_epoch_fn(X, y, n_outputs, BATCH)
    if opacus_fn is not None:
        methods["Opacus (torch, float32, 1 thread)"] = opacus_fn
    medians, raw = interleaved({**methods, **floors}, reps)
    return medians, raw, opacus_note


# ---------------------------------------------------------------------------
# 4. Scaling
# ---------------------------------------------------------------------------


def scaling(points, fixed_name, fixed_value, n_classes, reps, entries_per_fit):
    """Time per epoch for each point (n varying with d fixed, or vice versa).

    Each point is fitted with E and 3E epochs, E = round(entries_per_fit /
    (n d)) (at least 1), so that every fit does about the same work. Returns
    tuples (n, d, fit time / E, marginal seconds per epoch, per-fit cost): the
    marginal cost (t(3E) - t(E)) / (2E) is the training loop alone; the
    per-fit cost t(E) - E * marginal is validation, row norms and set-up.
    """
    out = []
    for value in points:
        n, d = (value, fixed_value) if fixed_name == "d" else (fixed_value, value)
        X, y = synthetic(n, d, n_classes, seed=1)
        epochs = max(1, int(round(entries_per_fit / (n * d))))
        dp_classifier(n_classes, 1).fit(X[:300], y[:300])
        medians = {}
        for e in (epochs, 3 * epochs):
            warm_calibration(n, BATCH, e)
            medians[e] = float(np.median([
                timed(lambda: dp_classifier(n_classes, e, n=n).fit(X, y))
                for _ in range(reps)]))
        marginal = max((medians[3 * epochs] - medians[epochs]) / (2 * epochs), 1e-9)
        per_fit = medians[epochs] - epochs * marginal
        # The hardware floor at this size: one epoch of the two products with
        # the gather, numpy BLAS, 1 thread.
        floor = float(np.median([numpy_floor_epoch(X, n_classes, BATCH, True, 1)
                                 for _ in range(reps)]))
        out.append((n, d, medians[epochs] / epochs, marginal, per_fit, floor))
        log(f"    n={n:>8d} d={d:>6d} epochs={epochs:>3d}: fit/epochs "
            f"{1e3 * out[-1][2]:9.2f} ms, marginal {1e3 * marginal:9.2f} ms/epoch, "
            f"per fit {1e3 * per_fit:8.2f} ms, numpy floor {1e3 * floor:8.2f} ms")
        # Free this point's data before the next is drawn (not `del`: the
        # timed lambda above refers to X and y).
        X = y = None
    return out


def slope(xs, ys):
    """Slope of log10(ys) against log10(xs) (nan with fewer than 3 points)."""
    if len(xs) < 3:
        return math.nan
    return float(np.polyfit(np.log10(xs), np.log10(ys), 1)[0])


# ---------------------------------------------------------------------------
# 5. Memory
# ---------------------------------------------------------------------------


def tracemalloc_peak(X, y, n_classes, n_jobs=None):
    """Peak of Python/numpy allocations during a (warm) fit, in bytes."""
    dp_classifier(n_classes, 1, n_jobs=n_jobs).fit(X[:1000], y[:1000])
    warm_calibration(X.shape[0], BATCH, 1)
    tracemalloc.start()
    try:
        dp_classifier(n_classes, 1, n_jobs=n_jobs).fit(X, y)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    return peak


_RSS_SCRIPT = r"""
import json, resource, sys
import numpy as np
sys.path.insert(0, {bench_dir!r})
from bench_speed import dp_classifier, synthetic, warm_calibration
n, d, k, dtype, which = {n}, {d}, {k}, np.dtype({dtype!r}), {which!r}
def status(field):  # VmRSS (resident now) and VmHWM (peak resident) of this process
    with open("/proc/self/status") as lines:
        for line in lines:
            if line.startswith(field + ":"):
                return int(line.split()[1]) * 1024
def reset_peak():  # Linux >= 4.0: writing 5 to clear_refs resets VmHWM
    try:
        with open("/proc/self/clear_refs", "w") as handle:
            handle.write("5")
        return True
    except OSError:
        return False
# Compile/load the kernels and calibrate first, on tiny data.
Xs, ys = synthetic(2000, d, k, seed=2, dtype=dtype)
dp_classifier(k, 1).fit(Xs, ys)
warm_calibration(n, {batch}, 1)
if which == "sgd":
    import warnings
    from sklearn.linear_model import SGDClassifier
    warnings.simplefilter("ignore")
    SGDClassifier(loss="log_loss", max_iter=1, tol=None).fit(Xs, ys)
del Xs, ys
# Load X without temporaries (generated in place, labels in chunks), so that
# the high-water mark before the fit is X itself.
rng = np.random.default_rng(0)
X = np.empty((n, d), dtype=dtype)
rng.random(out=X, dtype=dtype)
W = rng.standard_normal((k, d)).astype(dtype)
y = np.empty(n, dtype=np.int64)
for start in range(0, n, 4096):
    scores = X[start:start + 4096] @ W.T
    y[start:start + 4096] = (np.argmax(scores, axis=1) if k > 2
                             else scores[:, 0] > 0.25 * W[0].sum())
maxrss_before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024
reset = reset_peak()
before_current = status("VmRSS")
if which == "sgd":
    SGDClassifier(loss="log_loss", max_iter=1, tol=None).fit(X, y)
else:
    dp_classifier(k, 1).fit(X, y)
after = status("VmHWM")
print(json.dumps({{"before_current": before_current, "after": after, "reset": reset,
                   "maxrss_before": maxrss_before, "x_bytes": X.nbytes}}))
"""


def rss_peak(n, d, n_classes, dtype="float64", which="dp"):
    """(extra peak RSS of the fit over the RSS with X loaded, size of X), bytes."""
    script = _RSS_SCRIPT.format(bench_dir=str(Path(__file__).resolve().parent), n=n,
                                d=d, k=n_classes, dtype=dtype, which=which,
                                batch=BATCH)
    result = subprocess.run([sys.executable, "-c", script], capture_output=True,
                            text=True, check=True)
    values = json.loads(result.stdout.strip().splitlines()[-1])
    # Conservative: the peak during the fit over the resident size with X loaded.
    return values["after"] - values["before_current"], values["x_bytes"]


# ---------------------------------------------------------------------------
# 6. First fit in a fresh process; calibration
# ---------------------------------------------------------------------------


_FIRST_FIT_SCRIPT = r"""
import json, time
t0 = time.perf_counter()
import numpy as np
from sklearn_dplssgd import DPLSSGDClassifier
t1 = time.perf_counter()
rng = np.random.default_rng(0)
X = rng.random((2000, 64)); y = rng.integers(0, 10, 2000)
def fit():
    return DPLSSGDClassifier(epsilon={epsilon}, sigma=1.0, batch_size=64, max_iter=1,
                             classes=range(10)).fit(X, y)
t2 = time.perf_counter(); fit(); t3 = time.perf_counter(); fit(); t4 = time.perf_counter()
print(json.dumps({{"import": t1 - t0, "first_fit": t3 - t2, "second_fit": t4 - t3}}))
"""


def first_fit(cache_dir, epsilon):
    env = dict(os.environ, NUMBA_CACHE_DIR=str(cache_dir))
    script = _FIRST_FIT_SCRIPT.format(epsilon=repr(epsilon) if math.isfinite(epsilon)
                                      else 'float("inf")')
    result = subprocess.run([sys.executable, "-c", script], capture_output=True,
                            text=True, env=env, check=True)
    return json.loads(result.stdout.strip().splitlines()[-1])


def first_fit_times(reps_cached, reps_uncached):
    """Fresh-process first-fit times with an empty and with a warm Numba cache."""
    out = {}
    with tempfile.TemporaryDirectory(prefix="numba_cache_warm_") as warm:
        first_fit(warm, math.inf)  # populate the float64 serial kernels
        for epsilon in (math.inf, EPSILON):
            runs = [first_fit(warm, epsilon) for _ in range(reps_cached)]
            out[("cached", epsilon)] = {k: float(np.median([r[k] for r in runs]))
                                        for k in runs[0]}
    for epsilon in (math.inf,):
        runs = []
        for _ in range(reps_uncached):
            with tempfile.TemporaryDirectory(prefix="numba_cache_empty_") as empty:
                runs.append(first_fit(empty, epsilon))
        if runs:
            out[("uncached", epsilon)] = {k: float(np.median([r[k] for r in runs]))
                                          for k in runs[0]}
    return out


ACCOUNTANTS = ("pld", "rdp")  # the first is the library default


def calibration_times(reps, quick=False):
    """Cold (all caches cleared) calibration per accountant, and a cached call.

    Returns ({accountant: {(epsilon, q, T): seconds}}, cached seconds of the
    library default). The library's default adjacency (replace-one) throughout.
    """
    from sklearn_dplssgd import calibrate_noise
    from sklearn_dplssgd.training._schedules import number_of_steps

    clear = calibrate_noise.cache_clear  # every accounting cache in memory
    # Cold means cold: the disk cache is off while timing (the variable is
    # read at every call).
    saved = os.environ.get("SKLEARN_DPLSSGD_CACHE_DIR")
    os.environ["SKLEARN_DPLSSGD_CACHE_DIR"] = ""

    # Warm the imports and dp-accounting's own first-call costs.
    for accountant in ACCOUNTANTS:
        calibrate_noise(3.0, DELTA, sample_rate=0.01, n_steps=100, accountant=accountant)
    settings = []
    for n, epochs, epsilon in ((60000, 20, 1.0), (60000, 50, 0.25), (8000, 30, 4.0),
                               (8000, 30, 0.25), (1000000, 5, 1.0)):
        settings.append((epsilon, BATCH / n, number_of_steps(n, BATCH, epochs)))
    if quick:
        settings = settings[:1]
    cold = {accountant: {} for accountant in ACCOUNTANTS}
    for epsilon, q, steps in settings:
        for accountant in ACCOUNTANTS:
            times = []
            for _ in range(reps):
                clear()
                times.append(timed(lambda: calibrate_noise(
                    epsilon, DELTA, sample_rate=q, n_steps=steps, accountant=accountant)))
            cold[accountant][(epsilon, q, steps)] = float(np.median(times))
    epsilon, q, steps = settings[0]
    calibrate_noise(epsilon, DELTA, sample_rate=q, n_steps=steps)
    n_calls = 2000
    t0 = time.perf_counter()
    for _ in range(n_calls):
        calibrate_noise(epsilon, DELTA, sample_rate=q, n_steps=steps)
    cached = (time.perf_counter() - t0) / n_calls
    if saved is None:
        del os.environ["SKLEARN_DPLSSGD_CACHE_DIR"]
    else:
        os.environ["SKLEARN_DPLSSGD_CACHE_DIR"] = saved
    return cold, cached


# ---------------------------------------------------------------------------
# Where the time goes
# ---------------------------------------------------------------------------


class _TimedGenerator:
    """A numpy Generator whose ``standard_normal`` (the noise draw) is timed."""

    def __init__(self, rng, totals):
        self._rng = rng
        self._totals = totals

    def standard_normal(self, *args, **kwargs):
        t0 = time.perf_counter()
        try:
            return self._rng.standard_normal(*args, **kwargs)
        finally:
            self._totals["noise draw (rng.standard_normal)"][0] += time.perf_counter() - t0
            self._totals["noise draw (rng.standard_normal)"][1] += 1

    def __getattr__(self, name):
        return getattr(self._rng, name)


@contextlib.contextmanager
def step_timers():
    """Time every call of the fit's stages (module-level names patched).

    Only the names the package actually calls through its modules are
    wrapped, so the breakdown follows the code as it is.
    """
    from sklearn_dplssgd.linear_model import _base
    from sklearn_dplssgd.mechanisms import _gradient as _mechanism
    from sklearn_dplssgd.training import _optimizers
    from sklearn_dplssgd.backends import _numpy as _sgd, _row_passes
    candidates = [
        (_base, "validate_data", "input validation (validate_data)"),
        (_mechanism, "calibrate_noise", "calibrate_noise (cached)"),
        (_row_passes, "compute_row_norms", "row norms (compute_row_norms)"),
        (_sgd, "poisson_batches", "Poisson batches (poisson_batches)"),
        (_sgd, "noisy_clipped_gradient_sum", "clipped gradient sums + noise (kernel)"),
        (_sgd, "smooth_rows", "smoothing (smooth_rows)"),
        (_sgd, "apply_weight_decay", "weight decay (apply_weight_decay)"),
        (_optimizers, "sgd_update", "optimizer step (sgd_update)"),
    ]
    present = [(module, name, label) for module, name, label in candidates
               if callable(getattr(module, name, None))]
    totals = {label: [0.0, 0] for _, _, label in present}
    totals["noise draw (rng.standard_normal)"] = [0.0, 0]
    originals = [(module, name, getattr(module, name)) for module, name, _ in present]

    def wrap(label, fn):
        def wrapper(*args, **kwargs):
            t0 = time.perf_counter()
            try:
                return fn(*args, **kwargs)
            finally:
                totals[label][0] += time.perf_counter() - t0
                totals[label][1] += 1
        return wrapper

    for module, name, label in present:
        setattr(module, name, wrap(label, getattr(module, name)))
    # Where the training path looks make_generator up (the gradient
    # mechanism's module; the estimator base in trees before it).
    try:
        from sklearn_dplssgd.mechanisms import _gradient as generator_owner
    except ImportError:
        generator_owner = _base
    make_generator = getattr(generator_owner, "make_generator", None)
    if make_generator is not None:
        def timed_make_generator(*args, **kwargs):
            # make_generator returns (generator, seeded) since the seed fix.
            made = make_generator(*args, **kwargs)
            if isinstance(made, tuple):
                return (_TimedGenerator(made[0], totals),) + made[1:]
            return _TimedGenerator(made, totals)

        generator_owner.make_generator = timed_make_generator
    try:
        yield totals
    finally:
        for module, name, original in originals:
            setattr(module, name, original)
        if make_generator is not None:
            generator_owner.make_generator = make_generator


def breakdown(X, y, n_classes, epochs, n_jobs=None):
    """Stage timings of one fit (seconds, calls) and its total."""
    warm_calibration(X.shape[0], BATCH, epochs)
    with step_timers() as totals:
        total = timed(lambda: dp_classifier(n_classes, epochs, n_jobs=n_jobs).fit(X, y))
    return total, {k: tuple(v) for k, v in totals.items()}


def smoothing_times(n_features, n_outputs, sigma, calls):
    """Microseconds per smoothing of one step's ``(K, d + 1)`` gradient.

    The compiled O(d) solver the fit uses (``_kernels.smooth_rows``, in
    place) against the FFT reference it is tested with
    (``_smoothing.apply_smoothing``, O(d log d), allocating). Medians over
    ``calls`` calls each, interleaved in rounds of 100.
    """
    from sklearn_dplssgd.backends._kernels import smooth_rows, smoothing_omega
    from sklearn_dplssgd.training._smoothing import apply_smoothing, smoothing_eigenvalues

    rng = np.random.default_rng(4)
    grad = rng.standard_normal((n_outputs, n_features + 1))
    omega = smoothing_omega(sigma)
    eigenvalues = smoothing_eigenvalues(n_features, sigma)
    work = grad.copy()
    smooth_rows(work, n_features, omega, sigma)  # compile (or load) first
    coefficients = grad[:, :n_features]
    rounds = max(1, calls // 100)

    def compiled():
        t0 = time.perf_counter()
        for _ in range(100):
            smooth_rows(work, n_features, omega, sigma)
        return (time.perf_counter() - t0) / 100

    def fft():
        t0 = time.perf_counter()
        for _ in range(100):
            apply_smoothing(coefficients, eigenvalues)
        return (time.perf_counter() - t0) / 100

    medians, _ = interleaved({"compiled O(d) (smooth_rows)": compiled,
                              "FFT reference (apply_smoothing)": fft}, rounds)
    return {name: 1e6 * value for name, value in medians.items()}


def per_step_overhead(reps, quick=False):
    """Microseconds per step when the arithmetic is negligible (d=8, b=4)."""
    X, y = synthetic(2000 if quick else 20000, 8, 10, seed=3)
    out = {}
    for sigma in ((1.0,) if quick else (0.0, 1.0)):
        for epsilon in ((EPSILON,) if quick else (math.inf, EPSILON)):
            clf = dp_classifier(10, 2, sigma=sigma, epsilon=epsilon, batch_size=4)
            clf.fit(X[:100], y[:100])
            warm_calibration(X.shape[0], 4, 2, epsilon)
            times = [timed(lambda: dp_classifier(10, 2, sigma=sigma, epsilon=epsilon,
                                                 batch_size=4).fit(X, y))
                     for _ in range(reps)]
            clf = dp_classifier(10, 2, sigma=sigma, epsilon=epsilon, batch_size=4).fit(X, y)
            out[(sigma, epsilon)] = 1e6 * float(np.median(times)) / clf.n_steps_
    return out


def profile_fit(X, y, n_classes, epochs, top=14):
    warm_calibration(X.shape[0], BATCH, epochs)
    profiler = cProfile.Profile()
    profiler.enable()
    dp_classifier(n_classes, epochs).fit(X, y)
    profiler.disable()
    stream = io.StringIO()
    pstats.Stats(profiler, stream=stream).sort_stats("tottime").print_stats(top)
    lines = [line for line in stream.getvalue().splitlines() if line.strip()]
    start = next(i for i, line in enumerate(lines) if "ncalls" in line)
    return "\n".join(lines[start:start + top + 1])


# ---------------------------------------------------------------------------
# Report
# ---------------------------------------------------------------------------


# ---------------------------------------------------------------------------
# 9. Narrow tables (binary, 20 to 400 features): --narrow
# ---------------------------------------------------------------------------

NARROW_WIDTHS = (20, 100, 400)
NARROW_TARGETS = {"vs_floor": 1.3, "vs_sgd": 2.0, "step_overhead_us": 5.0}


def narrow_table(n, d, seed=0):
    """A binary table of ``n`` rows in ``[-1, 1]^d / sqrt(d)`` (norms at most 1)."""
    rng = np.random.default_rng(seed)
    X = rng.uniform(-1, 1, (n, d)) / math.sqrt(d)
    y = (X @ rng.standard_normal(d) + 0.1 * rng.standard_normal(n) > 0).astype(int)
    return X, y


def narrow_classifier(batch_size, epochs, sigma=0.0):
    from sklearn_dplssgd import DPLSSGDClassifier

    return DPLSSGDClassifier(epsilon=EPSILON, delta=1e-7, sigma=sigma, batch_size=batch_size,
                             max_iter=epochs, learning_rate="constant", eta0=0.5,
                             classes=[0, 1])


def narrow_times(quick, reps):
    """ns per row and epoch of a binary fit, SGDClassifier and the gather floor, by width."""
    from sklearn.linear_model import SGDClassifier

    n, epochs, batch = (20_000, 2, 1024) if quick else (500_000, 5, 1024)
    rows = {}
    for d in NARROW_WIDTHS[:1] if quick else NARROW_WIDTHS:
        X, y = narrow_table(n, d)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            narrow_classifier(batch, epochs).fit(X, y)  # compiles, fills the calibration cache

        def ours():
            return timed(lambda: narrow_classifier(batch, epochs).fit(X, y))

        def sgd():
            return timed(lambda: SGDClassifier(loss="log_loss", max_iter=epochs, tol=None,
                                               random_state=0).fit(X, y))

        def floor():
            return epochs * numpy_floor_epoch(X, 1, batch, True, 1)

        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            medians, _ = interleaved({"ours": ours, "sgd": sgd, "floor": floor}, reps)
        rows[d] = {name: 1e9 * value / (n * epochs) for name, value in medians.items()}
    return {"n": n, "epochs": epochs, "batch": batch, "widths": rows}


def narrow_step_costs(quick, reps):
    """Microseconds per step of binary fits: batch 64 (d = 20) and negligible arithmetic."""
    out = {}
    for d, batch in ((20, 64), (8, 4)):
        n = (8000 if quick else 64000) if batch == 64 else (2000 if quick else 20000)
        X, y = narrow_table(n, d, seed=1)
        model = narrow_classifier(batch, 2, sigma=SIGMA).fit(X, y)  # warms the caches
        times = [timed(lambda: narrow_classifier(batch, 2, sigma=SIGMA).fit(X, y))
                 for _ in range(reps)]
        out[(d, batch)] = 1e6 * float(np.median(times)) / model.n_steps_
    return out


def narrow_breakdown(quick, reps, d=20):
    """Where a d = 20 fit's time goes: ns per row of each part, medians of interleaved runs.

    The one-output kernel over the Poisson batches of five epochs as the
    compiled steps call it (each batch with the next one to prefetch), on the
    n-row table (out of cache) and on a 4,096-row one (in cache); the
    sampler (per sampled row, the whole draw of the five epochs at once as a
    fit makes it); the per-fit row and feature norms (per row and epoch).
    """
    from sklearn_dplssgd.backends._kernels import (
        COEFFICIENT_RANGE,
        compute_feature_norms,
        compute_row_norms,
        single_output_buffers,
        single_output_sum_into,
    )
    from sklearn_dplssgd.backends._numpy import poisson_batches

    n, epochs, batch = (20_000, 2, 1024) if quick else (500_000, 5, 1024)
    largest, tiny = COEFFICIENT_RANGE[np.dtype(np.float64)]

    def table(rows_in_table, seed):
        X, y = narrow_table(rows_in_table, d, seed)
        rng = np.random.default_rng(seed)
        n_steps = max(1, epochs * rows_in_table // batch)
        rows, offsets = poisson_batches(rng, rows_in_table, batch / rows_in_table, n_steps)
        return X, y.astype(np.float64), rows, offsets

    def kernel(X, y, rows, offsets):
        row_norms = compute_row_norms(X)
        feature_norms = compute_feature_norms(row_norms, 1.0)
        params = np.full((1, d + 1), 0.3)
        noise, grad = np.zeros_like(params), np.empty_like(params)
        buffers = single_output_buffers(params, X.shape[0])
        unweighted = np.empty(0)
        t0 = time.perf_counter()
        for t in range(offsets.shape[0] - 1):
            upcoming = rows[offsets[t + 1]:offsets[t + 2]] if t + 2 < offsets.shape[0] \
                else rows[:0]
            single_output_sum_into(X, y, rows[offsets[t]:offsets[t + 1]], params, row_norms,
                                   feature_norms, 0, 0.0, 1.0, True, largest, tiny, noise, grad,
                                   unweighted, *buffers, upcoming)
        return (time.perf_counter() - t0) / rows.shape[0]

    big, small = table(n, 0), table(min(n, 4096), 1)
    kernel(*small)  # compiled before timing

    def sampler():
        rng = np.random.default_rng(2)
        t0 = time.perf_counter()
        rows, _ = poisson_batches(rng, n, batch / n, epochs * n // batch)
        return (time.perf_counter() - t0) / rows.shape[0]

    def norms():
        t0 = time.perf_counter()
        compute_feature_norms(compute_row_norms(big[0]), 1.0)
        return (time.perf_counter() - t0) / (n * epochs)

    medians, _ = interleaved({"kernel, out of cache": lambda: kernel(*big),
                              "kernel, in cache": lambda: kernel(*small),
                              "sampler (per sampled row)": sampler,
                              "row and feature norms (per row and epoch)": norms}, reps)
    return {name: 1e9 * value for name, value in medians.items()}


def narrow_lines(quick, reps):
    """The narrow-table section (markdown lines) and its verdicts."""
    loadavg("narrow tables")
    times = narrow_times(quick, reps)
    steps = narrow_step_costs(quick, reps)
    parts = narrow_breakdown(quick, reps)
    n, epochs, batch = times["n"], times["epochs"], times["batch"]
    lines = [
        "## Narrow tables (binary)", "",
        f"n = {n:,} rows, d features in [-1, 1] / sqrt(d), two classes; DPLSSGDClassifier("
        f"epsilon={EPSILON:g}, delta=1e-7, sigma=0, batch_size={batch}, max_iter={epochs}, "
        "constant eta0=0.5), calibration cached and kernels compiled beforehand; "
        f"SGDClassifier(loss='log_loss', max_iter={epochs}, tol=None); the gather floor is "
        f"{epochs} epochs of `np.take` of each batch of {batch} sorted random rows and the "
        "two matrix-vector products of a step (one BLAS thread), the memory access pattern "
        "Poisson sampling forces. Nanoseconds per row and epoch, medians of "
        f"{reps} interleaved runs.", "",
        "| features | DPLSSGD | gather floor | SGDClassifier | DPLSSGD / floor | "
        "SGDClassifier / DPLSSGD |", "|---|---|---|---|---|---|"]
    verdicts = []
    for d, row in times["widths"].items():
        over_floor, vs_sgd = row["ours"] / row["floor"], row["sgd"] / row["ours"]
        lines.append(f"| {d} | {row['ours']:.0f} | {row['floor']:.0f} | {row['sgd']:.0f} | "
                     f"{over_floor:.2f} | {vs_sgd:.2f} |")
        verdicts.append((f"narrow d={d}: DPLSSGD / gather floor", f"{over_floor:.2f}",
                         f"<= {NARROW_TARGETS['vs_floor']}",
                         verdict(over_floor <= NARROW_TARGETS["vs_floor"])))
        verdicts.append((f"narrow d={d}: SGDClassifier / DPLSSGD", f"{vs_sgd:.2f}",
                         f">= {NARROW_TARGETS['vs_sgd']}",
                         verdict(vs_sgd >= NARROW_TARGETS["vs_sgd"])))
    small = steps[(8, 4)]
    lines += ["", "Microseconds per step of whole binary fits (sigma = 1, two epochs, "
              "calibration cached; everything a step costs: sampling, noise, gradient, "
              "smoothing, update, divided by the number of steps):", "",
              "| d | batch | us per step |", "|---|---|---|"]
    lines += [f"| {d} | {b} | {value:.2f} |" for (d, b), value in steps.items()]
    lines += ["", "With d = 8 and batch 4 the arithmetic is negligible: that row is the "
              "fixed cost of one step.", ""]
    d20 = times["widths"].get(20)
    lines += ["Where a d = 20 fit's time goes (nanoseconds per row; the kernel over the "
              "Poisson batches of the fit's epochs, each batch with the next one to prefetch, "
              "as the compiled steps run it; the in-cache table has 4,096 rows):", "",
              "| part | ns per row |", "|---|---|"]
    lines += [f"| {name} | {value:.1f} |" for name, value in parts.items()]
    if d20 is not None:
        lines += [f"| whole fit (table above) | {d20['ours']:.1f} |",
                  f"| gather floor (table above) | {d20['floor']:.1f} |"]
    lines.append("")
    verdicts.append(("per-step fixed cost (d=8, batch 4)", f"{small:.2f} us",
                     f"< {NARROW_TARGETS['step_overhead_us']:g} us",
                     verdict(small < NARROW_TARGETS["step_overhead_us"])))
    return lines, verdicts


def verdict(ok):
    return "PASS" if ok else "MISS"


def plot_scaling(path, n_points, d_points, n_fixed_d, d_fixed_n):
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(1, 2, figsize=(10, 4))
    for ax, points, key, label, fixed in (
            (axes[0], n_points, 0, "n (rows)", f"d = {n_fixed_d}"),
            (axes[1], d_points, 1, "d (features)", f"n = {d_fixed_n}")):
        xs = np.array([p[key] for p in points], dtype=float)
        for column, style, name in ((3, "o-", "marginal epoch (training loop)"),
                                    (2, "s--", "fit time / epochs"),
                                    (5, "^:", "numpy floor, with gather")):
            ys = np.array([p[column] for p in points])
            s_all = slope(xs, ys)
            upper = xs >= np.sqrt(xs.min() * xs.max())
            s_up = slope(xs[upper], ys[upper])
            ax.loglog(xs, ys, style, label=f"{name}: slope {s_all:.2f} (all), "
                                           f"{s_up:.2f} (upper half)")
        ax.set_xlabel(label)
        ax.set_ylabel("seconds per epoch")
        ax.set_title(f"time per epoch vs {label.split()[0]} ({fixed}, b = {BATCH})",
                     fontsize=10)
        ax.grid(alpha=0.3, which="both")
        ax.legend(fontsize=8)
    fig.suptitle("Scaling (medians; shared 2-core machine)", fontsize=11)
    fig.tight_layout()
    fig.savefig(path, dpi=90)
    plt.close(fig)


def main(argv=None):
    from sklearn_dplssgd.training._schedules import number_of_steps

    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="seconds-long smoke run")
    parser.add_argument("--out", default=None,
                        help="output folder (default benchmarks/results; a temporary "
                             "folder with --quick)")
    parser.add_argument("--reps", type=int, default=None,
                        help="repetitions per timing (default 5; 1 with --quick)")
    parser.add_argument("--narrow", action="store_true",
                        help="only section 9 (binary narrow tables and the cost of a step), "
                             "written to speed_narrow.md")
    args = parser.parse_args(argv)
    quick = args.quick
    out = Path(args.out) if args.out else (
        Path(tempfile.mkdtemp(prefix="bench_speed_")) if quick
        else _data.REPO_ROOT / "benchmarks" / "results")
    out.mkdir(parents=True, exist_ok=True)
    reps = args.reps or (1 if quick else 5)
    if args.narrow:
        t_start = time.perf_counter()
        load_start = os.getloadavg()
        lines, verdicts = narrow_lines(quick, args.reps or (1 if quick else 3))
        header = (f"Generated by `python benchmarks/bench_speed.py --narrow"
                  f"{' --quick' if quick else ''}` ({os.cpu_count()} cores; load average "
                  "{:.2f} / {:.2f} / {:.2f} at the start, ".format(*load_start)
                  + "{:.2f} / {:.2f} / {:.2f} at the end, 1 / 5 / 15 min)".format(
                      *os.getloadavg())
                  + f", in {(time.perf_counter() - t_start) / 60:.1f} min.")
        table = ["## Targets", "", "| target | measured | goal | |", "|---|---|---|---|"]
        table += [f"| {a} | {b} | {c} | **{v}** |" for a, b, c, v in verdicts]
        (out / "speed_narrow.md").write_text("\n".join(
            ["# Speed on narrow binary tables", "", header, ""] + table + [""] + lines))
        for a, b, c, v in verdicts:
            log(f"  {v}  {a}: {b} (goal {c})")
        log(f"Wrote {out / 'speed_narrow.md'}")
        return 0

    if quick:
        n, d, epochs = 3000, 784, 1
        n_points = [1000, 4000]
        d_points = [10, 100]
        scale_n_fixed_d, scale_d_fixed_n, entries_per_fit = 100, 3000, 1e6
        mem_n = 3000
    else:
        n, d, epochs = 60000, 784, 3
        n_points = [1000, 3000, 10000, 30000, 100000, 300000, 1000000]
        d_points = [10, 30, 100, 300, 1000, 3000, 10000]
        scale_n_fixed_d, scale_d_fixed_n, entries_per_fit = 100, 10000, 2e7
        mem_n = 60000

    t_start = time.perf_counter()
    load_start = os.getloadavg()
    log(f"Machine: {_data.machine_note()}")
    lines = []  # markdown body
    targets = []  # (target, measured, goal, verdict)

    # 1-3 -------------------------------------------------------------------
    epoch_results = {}
    opacus_note = ""
    for n_classes in (10, 2):
        log(f"Epoch times, n={n}, d={d}, {n_classes} classes, {epochs} epochs per fit, "
            f"{reps} interleaved repetitions ({loadavg(f'epoch times, {n_classes} classes')})")
        medians, raw, opacus_note = epoch_comparison(n, d, n_classes, epochs, reps)
        epoch_results[n_classes] = medians
        for name, value in medians.items():
            log(f"    {name:45s} {1e3 * value:9.1f} ms/epoch")
    log(f"    Opacus: {opacus_note}")

    # 4 ---------------------------------------------------------------------
    log(f"Scaling in n (d={scale_n_fixed_d}) ({loadavg('scaling in n')})")
    n_scaling = scaling(n_points, "d", scale_n_fixed_d, 10, max(1, min(reps, 3)),
                        entries_per_fit)
    log(f"Scaling in d (n={scale_d_fixed_n}) ({loadavg('scaling in d')})")
    d_scaling = scaling(d_points, "n", scale_d_fixed_n, 10, max(1, min(reps, 3)),
                        entries_per_fit)
    try:
        plot_scaling(out / "speed_scaling.png", n_scaling, d_scaling, scale_n_fixed_d,
                     scale_d_fixed_n)
    except ImportError:
        log("    matplotlib not installed: speed_scaling.png skipped")

    # 5 ---------------------------------------------------------------------
    log(f"Memory ({loadavg('memory')})")
    memory = {}
    for n_classes in (10, 2):
        for dtype in (np.float64, np.float32):
            X, y = synthetic(mem_n, d, n_classes, dtype=dtype)
            memory[("tracemalloc", n_classes, np.dtype(dtype).name)] = (
                tracemalloc_peak(X, y, n_classes), X.nbytes)
            del X, y
    if not quick:
        for n_classes in (10, 2):
            for dtype in ("float64", "float32"):
                memory[("rss", n_classes, dtype)] = rss_peak(mem_n, d, n_classes, dtype)
        memory[("rss-sgd", 10, "float64")] = rss_peak(mem_n, d, 10, "float64", "sgd")
    for key, (peak, x_bytes) in memory.items():
        log(f"    {key}: extra peak {peak / 2**20:8.1f} MiB, X {x_bytes / 2**20:7.1f} MiB")

    # 6 ---------------------------------------------------------------------
    log(f"Calibration ({loadavg('calibration')})")
    cold, cached = calibration_times(1 if quick else 2, quick)
    for accountant, values in cold.items():
        for key, value in values.items():
            log(f"    cold {accountant} {key}: {1e3 * value:.0f} ms")
    log(f"    cached: {1e6 * cached:.1f} us")
    if quick:
        first = {}
        log("First fit in a fresh process: skipped in --quick (subprocesses)")
    else:
        log(f"First fit in a fresh process ({loadavg('first fit in a fresh process')})")
        first = first_fit_times(reps_cached=3, reps_uncached=2)
        for key, value in first.items():
            log(f"    {key}: " + ", ".join(f"{k} {v:.3f} s" for k, v in value.items()))

    # Where the time goes -----------------------------------------------------
    log(f"Breakdown ({loadavg('breakdown')})")
    X, y = synthetic(n, d, 10)
    dp_classifier(10, 1).fit(X[:1000], y[:1000])
    total, stages = breakdown(X, y, 10, epochs)
    total_mt, stages_mt = breakdown(X, y, 10, epochs, n_jobs=-1)
    overhead = per_step_overhead(max(1, min(reps, 3)), quick)
    smoothing = smoothing_times(d, 10, SIGMA, 500 if quick else 5000)
    for name, value in smoothing.items():
        log(f"    smoothing one step, {name}: {value:.1f} us")
    profile_text = profile_fit(X, y, 10, epochs)
    del X, y
    elapsed = time.perf_counter() - t_start
    load_end = os.getloadavg()

    # Targets -------------------------------------------------------------------
    e10, e2 = epoch_results[10], epoch_results[2]
    dp10, dp2 = e10["DPLSSGD float64, 1 thread"], e2["DPLSSGD float64, 1 thread"]
    ratio10 = e10["SGDClassifier(log_loss)"] / dp10
    ratio2 = e2["SGDClassifier(log_loss)"] / dp2
    targets.append(("10-class epoch: SGDClassifier time / DPLSSGD time",
                    f"{ratio10:.2f}x", ">= 5x", verdict(ratio10 >= TARGETS["multiclass_vs_sgd"])))
    targets.append(("binary epoch: SGDClassifier time / DPLSSGD time",
                    f"{ratio2:.2f}x", ">= 1x", verdict(ratio2 >= TARGETS["binary_vs_sgd"])))
    for k, res in ((10, e10), (2, e2)):
        for floor_name in ("numpy floor, with gather, 1 thread",
                           "numpy floor, pre-gathered, 1 thread"):
            r = res["DPLSSGD float64, 1 thread"] / res[floor_name]
            targets.append((f"{k}-class: DPLSSGD (1 thread) / {floor_name}",
                            f"{r:.2f}x", "<= 2x", verdict(r <= TARGETS["vs_floor"])))
        floor2 = min(res["numpy floor, with gather, 1 thread"],
                     res["numpy floor, with gather, 2 threads"])
        r = res["DPLSSGD float64, n_jobs=-1"] / floor2
        targets.append((f"{k}-class: DPLSSGD (n_jobs=-1) / numpy floor, with gather, best "
                        "of 1 or 2 BLAS threads", f"{r:.2f}x", "<= 2x",
                        verdict(r <= TARGETS["vs_floor"])))
        r = res["DPLSSGD float32, 1 thread"] / res["numpy floor float32, with gather, 1 thread"]
        targets.append((f"{k}-class: DPLSSGD float32 / numpy floor float32, with gather, "
                        "1 thread", f"{r:.2f}x", "<= 2x", verdict(r <= TARGETS["vs_floor"])))
    for key, (peak, x_bytes) in memory.items():
        if key[0] == "rss-sgd":
            continue
        ratio = (x_bytes + peak) / x_bytes
        targets.append((f"peak memory / size of X ({key[0]}, {key[1]} classes, {key[2]})",
                        f"{ratio:.3f}", "<= 1.3", verdict(ratio <= TARGETS["peak_memory"])))
    for accountant, values in cold.items():
        name = accountant.upper() + (", the default" if accountant == ACCOUNTANTS[0] else "")
        worst_cold = max(values.values())
        median_cold = float(np.median(list(values.values())))
        targets.append((f"calibration, cold ({name}), median of settings",
                        f"{median_cold:.3f} s", "< 0.3 s",
                        verdict(median_cold < TARGETS["calibration_cold"])))
        targets.append((f"calibration, cold ({name}), worst setting",
                        f"{worst_cold:.3f} s", "< 0.3 s",
                        verdict(worst_cold < TARGETS["calibration_cold"])))
    targets.append(("calibration, cached", f"{1e6 * cached:.1f} us", "< 1 ms",
                    verdict(cached < TARGETS["calibration_cached"])))
    if first:
        for epsilon, label in ((math.inf, "epsilon=inf: kernels only"),
                               (EPSILON, f"epsilon={EPSILON:g}: incl. cold calibration")):
            value = first[("cached", epsilon)]["first_fit"]
            targets.append((f"first fit in a fresh process, warm Numba cache ({label})",
                            f"{value:.3f} s", "< 0.5 s",
                            verdict(value < TARGETS["first_fit_cached"])))

    # Markdown --------------------------------------------------------------------
    def ms(x):
        return f"{1e3 * x:.1f}"

    lines += [
        "# Speed and memory of DPLSSGDClassifier" + (" (QUICK smoke run)" if quick else ""),
        "",
        "Generated by `python benchmarks/bench_speed.py" + (" --quick" if quick else "")
        + "`. All timings are wall-clock medians over interleaved repetitions on a "
        "**shared 2-core machine** (other developers' tests may run at the same time): "
        f"load average {load_start[0]:.2f} / {load_start[1]:.2f} / {load_start[2]:.2f} "
        f"at the start, {load_end[0]:.2f} / {load_end[1]:.2f} / {load_end[2]:.2f} at the "
        f"end (1 / 5 / 15 min); 1-minute load when each section started: "
        + ", ".join(f"{name} {load:.2f}" for name, load in SECTION_LOADS)
        + f". Total run time {elapsed / 60:.1f} min.",
        "",
        f"Settings: DPLSSGDClassifier(loss='log_loss', epsilon={EPSILON:g}, "
        f"delta={DELTA:g}, sigma={SIGMA:g}, batch_size={BATCH}, constant eta0=0.5), "
        "calibration cached beforehand (it is timed separately below), kernels compiled "
        f"beforehand. Time per epoch = fit time / {epochs} epochs (the fit includes input "
        "validation). SGDClassifier(loss='log_loss', max_iter=epochs, tol=None): one-vs-"
        "rest for 10 classes (n_jobs=None). Data: synthetic dense, features uniform in "
        f"[0, 1], n = {n}, d = {d}.",
        "",
        "## Targets",
        "",
        "| target | measured | goal | |",
        "|---|---|---|---|",
    ]
    lines += [f"| {a} | {b} | {c} | **{v}** |" for a, b, c, v in targets]
    lines += ["", "## Time per epoch", ""]
    names = list(e10)
    lines += ["| method | 10 classes (ms/epoch) | ratio to DPLSSGD | 2 classes (ms/epoch) "
              "| ratio to DPLSSGD |", "|---|---|---|---|---|"]
    for name in names:
        lines.append(f"| {name} | {ms(e10[name])} | {e10[name] / dp10:.2f} | "
                     f"{ms(e2[name])} | {e2[name] / dp2:.2f} |")
    lines += ["", "Ratio = method time / DPLSSGD float64 1-thread time (above 1: slower "
              "than DPLSSGD). The numpy floor is only the two matrix products of each "
              f"step (n // b = {n // BATCH} batches of exactly b = {BATCH} rows; "
              "`np.dot` into preallocated outputs, BLAS threads limited with threadpoolctl): "
              "no loss, clipping, noise or smoothing. 'with gather' includes the copy "
              "`X[idx]` of each batch (which the estimator's kernel also has to read); "
              "'pre-gathered' does not.",
              "", f"Opacus: {opacus_note}.", ""]

    lines += ["## Scaling", "", "`speed_scaling.png`. 10 classes, b = 256, "
              f"each fit processes about {entries_per_fit:.0e} matrix entries (epochs = "
              f"round({entries_per_fit:.0e} / (n d)), at least 1); time per epoch = fit "
              "time / epochs. Each point is also fitted with 3x as many epochs: the "
              "marginal epoch (t(3E) - t(E)) / (2E) is the training loop alone, and "
              "t(E) - E * marginal is the per-fit cost (input validation, row norms, "
              "set-up).", "",
              "| n | d | epochs E | fit time / E (ms) | marginal epoch (ms) | "
              "per-fit cost (ms) | marginal ns per row x feature | numpy floor with "
              "gather, 1 thread: ns per row x feature | marginal / floor |",
              "|---|---|---|---|---|---|---|---|---|"]
    for n_, d_, t_, m_, f_, fl_ in n_scaling + d_scaling:
        e_ = max(1, int(round(entries_per_fit / (n_ * d_))))
        per_fit_text = f"{1e3 * f_:.2f}" if f_ > 0 else "~0 (below noise)"
        lines.append(f"| {n_} | {d_} | {e_} | {1e3 * t_:.2f} | {1e3 * m_:.2f} | "
                     f"{per_fit_text} | {1e9 * m_ / (n_ * d_):.3f} | "
                     f"{1e9 * fl_ / (n_ * d_):.3f} | {m_ / fl_:.2f} |")
    ns = np.array([p[0] for p in n_scaling], float)
    ds = np.array([p[1] for p in d_scaling], float)
    up_n = ns >= np.sqrt(ns.min() * ns.max())
    up_d = ds >= np.sqrt(ds.min() * ds.max())
    lines += ["", "Log-log slopes (all points / upper half of the range):", "",
              "| series | in n | in d |", "|---|---|---|"]
    for column, name in ((3, "marginal epoch"), (2, "fit time / epochs"),
                         (5, "numpy floor (with gather)")):
        tn = np.array([p[column] for p in n_scaling])
        td = np.array([p[column] for p in d_scaling])
        lines.append(f"| {name} | {slope(ns, tn):.2f} / {slope(ns[up_n], tn[up_n]):.2f} | "
                     f"{slope(ds, td):.2f} / {slope(ds[up_d], td[up_d]):.2f} |")
    lines.append("")

    lines += ["## Memory", "",
              "Extra peak over X during a fit (1 epoch) with X already in memory. "
              "tracemalloc: Python/numpy allocations only (not Numba's internal "
              "allocations), in this process. rss: a fresh subprocess compiles the kernels "
              "and calibrates on tiny data, then creates X in place (no temporaries), "
              "resets its peak-RSS counter (`/proc/self/clear_refs` = 5), then fits; extra = "
              "peak RSS during the fit (VmHWM) - RSS before it (VmRSS), which counts every "
              "byte the fit added at its peak, Numba's included. (`ru_maxrss` is not used: "
              "on Linux a child started by fork/vfork + exec inherits the parent's peak, "
              "which here is larger than anything the child does.)", "",
              "| method | classes | dtype | size of X (MiB) | extra peak (MiB) | "
              "(X + extra) / X |", "|---|---|---|---|---|---|"]
    for (method, k, dtype), (peak, x_bytes) in memory.items():
        lines.append(f"| {method} | {k} | {dtype} | {x_bytes / 2**20:.1f} | "
                     f"{peak / 2**20:.1f} | {(x_bytes + peak) / x_bytes:.3f} |")

    lines += ["", "## Calibration (PLD accountant, the default, and RDP; replace-one "
              "adjacency, the default)", "",
              "| epsilon | q | T | " + " | ".join(f"{a.upper()} cold (ms)" for a in cold)
              + " |", "|---|---|---|" + "---|" * len(cold)]
    for key in cold[ACCOUNTANTS[0]]:
        epsilon, q, steps = key
        lines.append(f"| {epsilon:g} | {q:.5f} | {steps} | "
                     + " | ".join(f"{1e3 * cold[a][key]:.0f}" for a in cold) + " |")
    lines += ["", f"Cold = `calibrate_noise.cache_clear()` (every calibration and per-z "
              f"epsilon forgotten), dp-accounting already imported; median of the cold "
              f"calls per setting. Cached call (the default accountant, first setting): "
              f"{1e6 * cached:.1f} us.", ""]

    lines += ["## First fit in a fresh process", ""]
    if first:
        lines += ["Subprocess: import, then two fits of DPLSSGDClassifier (2000 x 64, 10 "
                  "classes, 1 epoch, batch 64, 1 thread). NUMBA_CACHE_DIR points to a "
                  "temporary folder: warmed by one earlier subprocess ('cached') or empty "
                  "('uncached', i.e. compile).", "",
                  "| Numba cache | epsilon | import (s) | first fit (s) | second fit (s) |",
                  "|---|---|---|---|---|"]
        for (state, epsilon), value in first.items():
            lines.append(f"| {state} | {epsilon:g} | {value['import']:.3f} | "
                         f"{value['first_fit']:.3f} | {value['second_fit']:.3f} |")
        lines.append("")
    else:
        lines += ["Skipped in --quick.", ""]

    lines += ["## Where the time goes", "",
              f"Stage timings of one fit (10 classes, n = {n}, d = {d}, {epochs} epochs, "
              f"sigma = {SIGMA:g}, {number_of_steps(n, BATCH, epochs)} steps), measured by "
              "wrapping the functions the fit calls through module-level names "
              "(`_base.validate_data`, `_row_passes.compute_row_norms`, "
              "`_sgd.noisy_clipped_gradient_sum`, ...) and the generator's "
              "`standard_normal`; the stages do not overlap. Per-fit stages run once per "
              "fit whatever the number of epochs.", "",
              "| stage | calls | 1 thread: s | % of fit | us per call | n_jobs=-1: s | "
              "% of fit |", "|---|---|---|---|---|---|---|"]
    for name, (secs, calls) in stages.items():
        secs_mt = stages_mt.get(name, (math.nan, 0))[0]
        lines.append(f"| {name} | {calls} | {secs:.3f} | {100 * secs / total:.1f} | "
                     f"{1e6 * secs / max(calls, 1):.1f} | {secs_mt:.3f} | "
                     f"{100 * secs_mt / total_mt:.1f} |")
    rest = total - sum(v[0] for v in stages.values())
    rest_mt = total_mt - sum(v[0] for v in stages_mt.values())
    lines.append(f"| rest (Python loop, noise buffer, estimator glue) | | {rest:.3f} | "
                 f"{100 * rest / total:.1f} | | {rest_mt:.3f} | "
                 f"{100 * rest_mt / total_mt:.1f} |")
    lines.append(f"| total fit | | {total:.3f} | 100 | | {total_mt:.3f} | 100 |")
    per_fit = sum(v[0] for k, v in stages.items()
                  if k.startswith(("input validation", "row norms", "calibrate")))
    lines += ["", f"Per-fit costs (validation, row norms, cached calibration): "
              f"{1e3 * per_fit:.0f} ms, i.e. {1e3 * per_fit / epochs:.0f} ms of every "
              f"'epoch' in the table above at {epochs} epochs per fit; the training loop "
              f"alone costs {1e3 * (total - per_fit) / epochs:.0f} ms per epoch.", ""]
    lines += [f"Per-step overhead (n = {2000 if quick else 20000}, d = 8, 10 classes, "
              "b = 4: the arithmetic "
              "is negligible, so this is the fixed cost of one step):", "",
              "| sigma | epsilon | us per step |", "|---|---|---|"]
    for (sigma, epsilon), value in overhead.items():
        lines.append(f"| {sigma:g} | {epsilon:g} | {value:.1f} |")
    lines += ["", f"Smoothing of one step's gradient alone (10 classes, d = {d}, "
              f"sigma = {SIGMA:g}; median us per call):", "",
              "| implementation | us per call |", "|---|---|"]
    for name, value in smoothing.items():
        lines.append(f"| {name} | {value:.1f} |")
    lines += ["", "The fit uses the compiled solver (`smooth_rows`); the FFT version is "
              "the reference the tests compare it with."]
    lines += ["", "cProfile of one fit (1 thread, sorted by own time):", "", "```",
              profile_text, "```", ""]
    (out / "speed.md").write_text("\n".join(lines))
    log("")
    for a, b, c, v in targets:
        log(f"  {v}  {a}: {b} (goal {c})")
    log(f"Wrote {out / 'speed.md'} (and speed_scaling.png with matplotlib) in "
        f"{elapsed:.1f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
