"""Tests of code paths that no other test reached.

- ``python -m sklearn_dplssgd`` (the demonstration in ``__main__.py``);
- the threaded gradient kernel (``n_jobs``), against the serial one;
- the top-up loop of the Poisson batch sampler, when the first batch of
  geometric gaps does not cover all the slots;
- the audit's canary direction for background data without a zero column
  (the smallest right singular vector), and an audit that uses it;
- the epsilon-insensitive loss inside its band (no gradient at all).
"""

import inspect
import math
import os
import re
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from sklearn_dplssgd import DPLSSGDRegressor
from sklearn_dplssgd._backends import _kernels
from sklearn_dplssgd.audit import audit_epsilon
from sklearn_dplssgd.audit._canary import _quietest_direction
from sklearn_dplssgd._backends._kernels import (
    PARALLEL_MIN_WORK,
    compute_row_norms,
    noisy_clipped_gradient_sum,
)
from oracles import (
    clipped_gradient_sum_reference,
    EPSILON_INSENSITIVE,
    LOG_LOSS_MULTINOMIAL,
    loss_derivative_reference,
    SQUARED_ERROR,
)
from sklearn_dplssgd._backends._numpy import poisson_batches

REPO_ROOT = Path(__file__).resolve().parent.parent


def _gradient_sum(X, y, rows, params, code, threshold, clip_norm, fit_intercept,
                  noise=None, n_threads=1, weights=None):
    """Call the kernel by parameter name (the names checked against its signature)."""
    arguments = dict(
        X=X, y=y, rows=rows, params=params, row_norms=compute_row_norms(X), code=code,
        threshold=threshold, clip_norm=clip_norm, fit_intercept=fit_intercept,
        noise=np.zeros_like(params) if noise is None else noise,
        grad=np.full_like(params, np.nan), n_threads=n_threads, weights=weights,
    )
    names = inspect.signature(noisy_clipped_gradient_sum).parameters
    assert set(arguments) <= set(names), sorted(set(arguments) - set(names))
    noisy_clipped_gradient_sum(**arguments)
    return arguments["grad"]


# ---------------------------------------------------------------------------
# python -m sklearn_dplssgd
# ---------------------------------------------------------------------------


def test_main_module_runs_and_prints_its_table():
    # One budget, the defaults' smoothing and two fixed ones, two fits each: a few seconds.
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(
        [str(REPO_ROOT)] + ([env["PYTHONPATH"]] if env.get("PYTHONPATH") else [])
    )
    result = subprocess.run(
        [sys.executable, "-m", "sklearn_dplssgd", "--epsilons", "1", "--sigmas", "ordered", "0",
         "1", "--seeds", "2"],
        capture_output=True, text=True, cwd=REPO_ROOT, env=env, timeout=120,
        stdin=subprocess.DEVNULL,
    )
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]
    lines = result.stdout.splitlines()
    header = next(i for i, line in enumerate(lines) if line.split()[:2] == ["epsilon", "sigma"])
    assert lines[header].split() == ["epsilon", "sigma", "accuracy", "epsilon_", "z", "eta0_",
                                     "fit", "(s)"]
    assert set(lines[header + 1]) == {"-"}
    number = r"[-+0-9.eEinf]+"
    row = re.compile(rf"^\s*({number})\s+(ordered \({number}\)|{number})\s+({number}) "
                     rf"\+- ({number})\s+({number})\s+({number})\s+({number})\s+({number})\s*$")
    rows = [row.match(line) for line in lines[header + 2:header + 5]]
    assert all(rows), lines[header + 2:header + 5]
    # The defaults' choice for the digits declared ordered (64 columns: a
    # table's width too, which "auto" alone does not smooth) is shown with the
    # value it resolved to, and why, before the table.
    assert [match[2] for match in rows] == ["ordered (0.25)", "0", "1"]
    assert re.search(r"^Smoothing chosen by the defaults: sigma='ordered' chose 0\.25 for "
                     r"ordered columns \(the columns were declared ordered", result.stdout, re.M)
    for match in rows:
        epsilon, accuracy, spread, reached, z, eta0, seconds = map(
            float, match.group(1, 3, 4, 5, 6, 7, 8))
        assert epsilon == 1.0
        assert 0.5 < accuracy <= 1.0 and spread >= 0.0
        assert 0.0 < reached <= 1.0 + 1e-9 and z > 0.0 and eta0 > 0.0 and seconds > 0.0
    # Each smoothing against plain DP-SGD, with a standard error and no
    # verdict: with two fits a setting, a verdict would flip between runs.
    differences = re.findall(r"^  epsilon 1, sigma (ordered \(0\.25\)|1): ([-+][0-9.]+) \+- "
                             r"([0-9.]+) points$", result.stdout, re.M)
    assert [found[0] for found in differences] == ["ordered (0.25)", "1"]
    for _, difference, error in differences:
        assert abs(float(difference)) <= 100.0 and float(error) >= 0.0
    for verdict in ("a gain", "a loss", "within the spread", "small beside"):
        assert verdict not in result.stdout, verdict
    # Explained columns, the non-private baseline, the compile notice before
    # the first fit, and a word on when smoothing helps.
    assert "columns:" in result.stdout and "non-private baseline" in result.stdout
    assert result.stdout.index("compiles the Numba kernels once") < header_position(result)
    # The first fit (the one that compiles) is timed apart, before the table.
    first = re.search(r"^first fit \(epsilon 1, sigma ordered\): ([0-9.]+) s, ", result.stdout,
                      re.M)
    assert first and float(first[1]) > 0.0 and first.start() < header_position(result)
    assert "When smoothing helps" in result.stdout


def header_position(result):
    """Offset of the table's header in the main job's output."""
    return re.search(r"^\s*epsilon\s+sigma\s+accuracy", result.stdout, re.M).start()


@pytest.mark.parametrize("arguments", [
    ["--seeds", "0"], ["--seeds", "x"], ["--epsilons", "0"], ["--epsilons", "-1"],
    ["--sigmas", "-1"], ["--sigmas", "inf"], ["--sigmas", "x"], ["--delta", "2"], ["--delta", "x"],
    ["--unknown"],
])
def test_main_module_bad_options_give_a_usage_error(arguments, capsys):
    from sklearn_dplssgd.__main__ import main

    with pytest.raises(SystemExit) as exit_info:
        main(arguments)
    assert exit_info.value.code == 2
    error = capsys.readouterr().err
    assert error.startswith("usage: python -m sklearn_dplssgd") and "Traceback" not in error


# ---------------------------------------------------------------------------
# The threaded kernel (n_jobs)
# ---------------------------------------------------------------------------


@pytest.mark.parametrize("n_outputs, code, n_rows", [
    (1, SQUARED_ERROR, 8000),
    (10, LOG_LOSS_MULTINOMIAL, 1000),
])
def test_threaded_kernel_matches_serial(monkeypatch, n_outputs, code, n_rows):
    n_features = 64
    assert n_rows * n_outputs * n_features >= PARALLEL_MIN_WORK
    rng = np.random.default_rng(11)
    X = rng.uniform(0.0, 1.0, size=(n_rows + 100, n_features))
    if code == SQUARED_ERROR:
        y = rng.normal(size=len(X)) * 3.0
    else:
        y = rng.integers(0, n_outputs, len(X)).astype(float)
    params = rng.normal(scale=0.3, size=(n_outputs, n_features + 1))
    noise = rng.normal(size=params.shape)
    # A Poisson-like batch: sorted, not contiguous, not starting at 0.
    rows = np.sort(rng.choice(len(X), size=n_rows, replace=False)).astype(np.int64)

    # The threads' chunks must really be used for n_threads=2 (and only then).
    calls = []
    threaded = _kernels.sum_over_chunks

    def counting(*args):
        calls.append(args[-2])
        return threaded(*args)

    monkeypatch.setattr(_kernels, "sum_over_chunks", counting)
    # clip_norm 1: the rows have norms near 4.6, so many are clipped.
    serial = _gradient_sum(X, y, rows, params, code, 0.0, 1.0, True, noise, n_threads=1)
    assert calls == []
    parallel = _gradient_sum(X, y, rows, params, code, 0.0, 1.0, True, noise, n_threads=2)
    assert calls == [2]
    assert np.isfinite(serial).all()
    # Only the order of the additions differs.
    np.testing.assert_allclose(parallel, serial, rtol=1e-10,
                               atol=1e-12 * np.abs(serial).max())
    assert not np.array_equal(serial, noise)  # the rows did contribute
    # Weighted rows: each thread weighs its own part of the batch.
    weights = rng.uniform(0.0, 2.0, len(X))
    serial = _gradient_sum(X, y, rows, params, code, 0.0, 1.0, True, noise, 1, weights)
    parallel = _gradient_sum(X, y, rows, params, code, 0.0, 1.0, True, noise, 2, weights)
    assert calls == [2, 2]
    np.testing.assert_allclose(parallel, serial, rtol=1e-10,
                               atol=1e-12 * np.abs(serial).max())
    reference = clipped_gradient_sum_reference(
        X, y, rows, params[:, :-1], params[:, -1], code, 0.0, 1.0, True, weights)
    np.testing.assert_allclose(serial - noise, np.column_stack(reference), rtol=1e-8,
                               atol=1e-10 * np.abs(serial).max())


# ---------------------------------------------------------------------------
# The Poisson sampler's top-up
# ---------------------------------------------------------------------------


class _ShortFirstDraw:
    """A generator whose first draw of gaps is too short to cover the slots.

    The gaps are drawn as ``geometric`` gaps, or (below a rate of 1/3) as
    the exponentials they are inverted from. ``mode="ones"``: the first draw
    is all gaps of 1 (every slot it reaches is taken); ``mode="truncated"``:
    it is a genuine draw cut to a quarter of the requested size, so the gaps
    stay an exact Bernoulli process and only the top-up has to finish it.
    Later draws are genuine.
    """

    def __init__(self, seed, mode):
        self._rng = np.random.default_rng(seed)
        self._mode = mode
        self.sizes = []

    def geometric(self, p, size):
        self.sizes.append(size)
        if len(self.sizes) > 1:
            return self._rng.geometric(p, size=size)
        if self._mode == "ones":
            return np.ones(size, dtype=np.int64)
        return self._rng.geometric(p, size=size // 4)

    def standard_exponential(self, size):
        self.sizes.append(size)
        if len(self.sizes) > 1:
            return self._rng.standard_exponential(size=size)
        if self._mode == "ones":
            # Inverted to a gap of 1 at any rate below 1.
            return np.full(size, 1e-300)
        return self._rng.standard_exponential(size=size // 4)


def _check_batches(rows, offsets, n_samples, n_steps):
    assert rows.dtype == np.int64 and offsets.dtype == np.int64
    assert offsets.shape == (n_steps + 1,)
    assert offsets[0] == 0 and offsets[-1] == len(rows)
    assert (np.diff(offsets) >= 0).all()
    assert ((rows >= 0) & (rows < n_samples)).all()
    for t in range(n_steps):
        batch = rows[offsets[t]:offsets[t + 1]]
        # Every (step, row) slot is decided once: no row twice in a batch,
        # and the rows of a batch come sorted.
        assert (np.diff(batch) > 0).all()


def test_poisson_top_up_keeps_a_valid_batch_structure():
    n_samples, sample_rate, n_steps = 100, 0.1, 50
    rng = _ShortFirstDraw(0, "ones")
    rows, offsets = poisson_batches(rng, n_samples, sample_rate, n_steps)
    assert len(rng.sizes) >= 2  # the top-up loop ran
    _check_batches(rows, offsets, n_samples, n_steps)
    # The first draw's gaps of 1 take its first sizes[0] slots, all of them:
    # full batches, then a partial one, then the genuine draws' batches.
    taken = rng.sizes[0]
    n_full = taken // n_samples
    for t in range(n_full):
        np.testing.assert_array_equal(rows[offsets[t]:offsets[t + 1]], np.arange(n_samples))
    partial = rows[offsets[n_full]:offsets[n_full + 1]]
    np.testing.assert_array_equal(partial[:taken % n_samples], np.arange(taken % n_samples))
    later = np.diff(offsets)[n_full + 1:]
    assert later.mean() < 3 * sample_rate * n_samples  # no longer taking everything


@pytest.mark.parametrize("short_first_draw", [False, True], ids=["normal", "topped-up"])
def test_poisson_batch_sizes_have_the_right_distribution(short_first_draw):
    n_samples, sample_rate, n_steps = 1000, 0.05, 2000
    if short_first_draw:
        rng = _ShortFirstDraw(12345, "truncated")
    else:
        rng = np.random.default_rng(12345)
    rows, offsets = poisson_batches(rng, n_samples, sample_rate, n_steps)
    if short_first_draw:
        assert len(rng.sizes) >= 2
    _check_batches(rows, offsets, n_samples, n_steps)
    sizes = np.diff(offsets)
    mean = sample_rate * n_samples
    variance = n_samples * sample_rate * (1 - sample_rate)
    standard_error = math.sqrt(variance / n_steps)
    assert abs(sizes.mean() - mean) < 4 * standard_error
    # The variance of a Binomial(n, q) batch size, within a loose band (the
    # sample variance of 2000 steps has a relative error of about 3 %).
    assert 0.85 * variance < sizes.var() < 1.15 * variance
    # Every row is taken about q T times.
    counts = np.bincount(rows, minlength=n_samples)
    per_row_sd = math.sqrt(n_steps * sample_rate * (1 - sample_rate))
    assert abs(counts.mean() - n_steps * sample_rate) < 4 * per_row_sd / math.sqrt(n_samples)


# ---------------------------------------------------------------------------
# The audit's SVD canary direction
# ---------------------------------------------------------------------------


def test_quietest_direction_without_a_zero_column():
    rng = np.random.default_rng(3)
    # Columns of very different spreads, correlated, none of them zero.
    X = rng.normal(size=(40, 5)) @ np.diag([3.0, 2.0, 1.0, 0.5, 2.0])
    X[:, 4] += X[:, 0]
    assert np.any(X != 0, axis=0).all()
    v = _quietest_direction(X)
    assert v.shape == (5,)
    assert math.isclose(np.linalg.norm(v), 1.0, rel_tol=1e-12)
    last = np.linalg.svd(X)[2][-1]
    assert min(np.linalg.norm(v - last), np.linalg.norm(v + last)) < 1e-10
    # No direction is quieter: ||X v|| is the smallest singular value.
    spread = np.linalg.norm(X @ v)
    assert math.isclose(spread, np.linalg.svd(X, compute_uv=False)[-1], rel_tol=1e-10)
    others = rng.normal(size=(200, 5))
    others /= np.linalg.norm(others, axis=1, keepdims=True)
    assert spread <= np.linalg.norm(others @ X.T, axis=1).min()
    # Every coordinate direction is louder too.
    assert spread < np.linalg.norm(X, axis=0).min()


def test_quietest_direction_prefers_a_zero_column():
    X = np.random.default_rng(4).normal(size=(10, 4))
    X[:, 2] = 0.0
    np.testing.assert_array_equal(_quietest_direction(X), [0.0, 0.0, 1.0, 0.0])


def test_audit_with_background_without_a_zero_column():
    rng = np.random.default_rng(5)
    X = rng.uniform(-1.0, 1.0, size=(30, 4))
    y = X @ np.array([0.5, -0.2, 0.1, 0.3])
    assert np.any(X != 0, axis=0).all()
    estimator = DPLSSGDRegressor(loss="huber", epsilon=1.0, batch_size=31, max_iter=2,
                                 alpha=0.0, eta0=0.5)
    result = audit_epsilon(estimator, X, y, n_runs=20, random_state=0)
    for name in ("epsilon_lower_bound", "mu_lower_bound", "claimed_epsilon"):
        assert math.isfinite(getattr(result, name)), name
    assert 0.0 <= result.epsilon_lower_bound <= result.claimed_epsilon
    assert result.mu_lower_bound >= 0.0
    assert result.scores_without.shape == result.scores_with.shape == (20,)
    assert np.isfinite(result.scores_without).all() and np.isfinite(result.scores_with).all()


# ---------------------------------------------------------------------------
# The epsilon-insensitive loss inside its band
# ---------------------------------------------------------------------------


def test_epsilon_insensitive_oracle_is_zero_inside_the_band():
    threshold = 0.5
    targets = np.zeros(7)
    margins = np.array([[-2.0], [-0.75], [-0.5], [0.0], [0.25], [0.5], [1.5]])
    residuals = loss_derivative_reference(EPSILON_INSENSITIVE, margins, targets, threshold)
    # |margin - target| <= threshold (the band's edges included): no residual.
    np.testing.assert_array_equal(residuals[:, 0], [-1.0, -1.0, 0.0, 0.0, 0.0, 0.0, 1.0])


@pytest.mark.parametrize("target, inside", [
    (1.0, True),    # margin 1.0 - target 1.0 = 0
    (0.75, True),   # 0.25
    (0.5, True),    # exactly the threshold: still inside
    (1.5, True),    # -0.5
    (0.0, False),   # 1.0 > 0.5: residual +1
    (2.0, False),   # -1.0 < -0.5: residual -1
])
def test_epsilon_insensitive_kernel_ignores_rows_inside_the_band(target, inside):
    threshold = 0.5
    X = np.array([[1.0, 2.0, 0.0]])
    params = np.array([[0.5, 0.25, 3.0, 0.0]])  # margin 0.5 + 0.5 + 0 + 0 = 1.0, exactly
    y = np.array([target])
    rows = np.array([0], dtype=np.int64)
    grad = _gradient_sum(X, y, rows, params, EPSILON_INSENSITIVE, threshold, 10.0, True)
    reference_coef, reference_intercept = clipped_gradient_sum_reference(
        X, y, rows, params[:, :-1], params[:, -1], EPSILON_INSENSITIVE, threshold, 10.0, True
    )
    np.testing.assert_array_equal(grad[:, :-1], reference_coef)
    np.testing.assert_array_equal(grad[:, -1], reference_intercept)
    if inside:
        assert not grad.any()  # exactly zero: the row contributes nothing
    else:
        sign = 1.0 if target < 1.0 else -1.0
        np.testing.assert_array_equal(grad, sign * np.array([[1.0, 2.0, 0.0, 1.0]]))


def test_epsilon_insensitive_band_in_a_batch():
    # A row inside the band adds nothing to a batch's sum; one outside does.
    threshold = 0.5
    X = np.array([[1.0, 2.0], [1.0, -1.0]])
    params = np.array([[0.5, 0.25, 0.0]])  # margins 1.0 and 0.25
    y = np.array([1.2, 2.0])  # row 0 inside the band, row 1 below it
    both = _gradient_sum(X, y, np.array([0, 1], dtype=np.int64), params,
                         EPSILON_INSENSITIVE, threshold, 10.0, True)
    outside_only = _gradient_sum(X, y, np.array([1], dtype=np.int64), params,
                                 EPSILON_INSENSITIVE, threshold, 10.0, True)
    inside_only = _gradient_sum(X, y, np.array([0], dtype=np.int64), params,
                                EPSILON_INSENSITIVE, threshold, 10.0, True)
    assert not inside_only.any()
    np.testing.assert_array_equal(both, outside_only)
    np.testing.assert_array_equal(outside_only, [[-1.0, 1.0, -1.0]])
