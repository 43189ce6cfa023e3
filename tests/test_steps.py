"""The compiled runs of steps (_steps) and the gathered one-output kernel.

A compiled run of steps must do exactly what the Python steps do: the fits
below are repeated with the gradient kernel wrapped (which sends every step
through Python, as the audits do) and compared bit for bit. The gathered
kernel is checked against the oracle across several gathered blocks, and the
scalar residuals against the row form of every one-output loss.
"""

import warnings

import numpy as np
import pytest
import scipy.sparse as sp

from sklearn_dplssgd import DPLSSGDClassifier, DPLSSGDRegressor
from sklearn_dplssgd._backends import _numpy as _sgd
from sklearn_dplssgd._backends._kernels import (
    compute_row_norms,
    gathered_block_rows,
    noisy_clipped_gradient_sum,
)
from sklearn_dplssgd._training._losses import LOSSES, residual, single_output_residual
from oracles import clipped_gradient_sum_reference

from implementation_checks import substituted_gradient_kernel


def _coefficients(model):
    return np.hstack([np.ravel(model.coef_), np.ravel(model.intercept_)])


def _fit_both_ways(monkeypatch, make, X, y, **fit_params):
    """The model of the compiled steps and of one Python call a step."""
    name = "noisy_clipped_gradient_sum" + ("_sparse" if sp.issparse(X) else "")
    standard = getattr(_sgd, name)
    calls = []

    def one_step_at_a_time(*args, **kwargs):
        calls.append(1)
        return standard(*args, **kwargs)

    # These fits are small: the compiled run is forced (it is the one tested).
    monkeypatch.setattr(_sgd, "COMPILED_RUN_MIN_STEPS", 0)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        compiled = make().fit(X, y, **fit_params)
        kind = "sparse" if sp.issparse(X) else "dense"
        with substituted_gradient_kernel(**{kind: one_step_at_a_time}):
            stepped = make().fit(X, y, **fit_params)
    assert len(calls) == stepped.n_steps_  # the wrapped fit really stepped from Python
    return _coefficients(compiled), _coefficients(stepped)


def _data(seed=0, n=400, d=7):
    rng = np.random.default_rng(seed)
    X = rng.uniform(-1, 1, (n, d))
    return X, (X[:, 0] + 0.5 * rng.standard_normal(n) > 0).astype(int), rng


FITS = {
    "binary": lambda: DPLSSGDClassifier(epsilon=1.0, max_iter=3),
    "binary_no_intercept_sigma0": lambda: DPLSSGDClassifier(
        epsilon=1.0, sigma=0.0, fit_intercept=False, max_iter=3),
    "binary_averaged_decay_momentum": lambda: DPLSSGDClassifier(
        epsilon=1.0, average=True, alpha=0.01, optimizer="momentum", max_iter=4),
    "binary_full_batch_hinge": lambda: DPLSSGDClassifier(
        epsilon=1.0, loss="hinge", batch_size=400, max_iter=3),
    "multiclass": lambda: DPLSSGDClassifier(epsilon=1.0, max_iter=3),
    "regression_huber_invscaling": lambda: DPLSSGDRegressor(
        epsilon=1.0, loss="huber", learning_rate="invscaling", max_iter=3),
}


@pytest.mark.parametrize("name", sorted(FITS))
@pytest.mark.parametrize("sparse", [False, True])
@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_compiled_steps_are_the_python_steps(monkeypatch, name, sparse, dtype):
    X, y, rng = _data(seed=len(name))
    if name == "multiclass":
        y = rng.integers(0, 3, len(y))
    if name.startswith("regression"):
        y = X @ rng.standard_normal(X.shape[1])
    X = X.astype(dtype)
    if sparse:
        X = sp.csr_matrix(np.where(np.abs(X) > 0.5, X, 0.0))

    def make():
        return FITS[name]().set_params(random_state=3, reproducible=True)

    compiled, stepped = _fit_both_ways(monkeypatch, make, X, y)
    np.testing.assert_array_equal(compiled, stepped)


def test_compiled_steps_with_weights_and_reported_epochs(monkeypatch, capsys):
    X, y, rng = _data(seed=5)
    weights = rng.uniform(0, 2, len(y))

    def make():
        return DPLSSGDClassifier(epsilon=1.0, max_iter=3, max_sample_weight=2.0, verbose=1,
                                 random_state=1, reproducible=True)

    compiled, stepped = _fit_both_ways(monkeypatch, make, X, y, sample_weight=weights)
    np.testing.assert_array_equal(compiled, stepped)
    # Segments end at every epoch: each fit reports its three epochs in order.
    lines = [line for line in capsys.readouterr().out.splitlines() if line.startswith("-- Epoch")]
    assert [line.split(":")[0] for line in lines] == [
        f"-- Epoch {epoch}" for epoch in (1, 2, 3, 1, 2, 3)]


@pytest.mark.parametrize("n_steps, min_rows, compiled", [
    (150, None, False), (2_000, None, True), (150, 150 * 400, True)])
def test_compiled_runs_only_for_large_fits(monkeypatch, n_steps, min_rows, compiled):
    # Small fits step in Python (nothing more to compile); fits of many steps
    # or many rows visited run compiled.
    X, y, _ = _data(seed=6)
    if min_rows is not None:
        monkeypatch.setattr(_sgd, "COMPILED_RUN_MIN_ROWS", min_rows)
    runs = []
    standard = _sgd.dense_single_output_steps

    def counted(*args):
        runs.append(1)
        return standard(*args)

    monkeypatch.setattr(_sgd, "dense_single_output_steps", counted)
    model = DPLSSGDClassifier(epsilon=1.0, batch_size=400, max_iter=n_steps,
                              random_state=0).fit(X, y)
    assert model.n_steps_ == n_steps
    assert bool(runs) == compiled


@pytest.mark.parametrize("loss_name", ["log_loss", "squared_error", "huber"])
@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_gathered_kernel_across_blocks_matches_oracle(loss_name, dtype):
    # 2,000 features: blocks of 8 rows, so a batch of 45 rows spans six.
    n_features = 2000
    assert gathered_block_rows(n_features, np.dtype(dtype).itemsize) < 45
    loss = LOSSES[loss_name]
    rng = np.random.default_rng(11)
    X = (rng.standard_normal((120, n_features)) / 30).astype(dtype)
    y = (rng.choice(loss.binary_targets, 120) if loss.task == "classification"
         else rng.standard_normal(120))
    params = (rng.standard_normal((1, n_features + 1)) / 10).astype(dtype)
    rows = np.sort(rng.choice(120, 45, replace=False)).astype(np.int64)
    grad = np.empty_like(params)
    noisy_clipped_gradient_sum(X, y, rows, params, compute_row_norms(X), loss.code, 0.3, 0.5,
                               True, np.zeros_like(params), grad)
    ref_coef, ref_intercept = clipped_gradient_sum_reference(
        X, y, rows, params[:, :n_features], params[:, n_features], loss.code, 0.3, 0.5, True)
    tol = 1e-10 if dtype == np.float64 else 2e-4
    np.testing.assert_allclose(grad[:, :n_features], ref_coef, rtol=tol, atol=tol)
    np.testing.assert_allclose(grad[:, n_features], ref_intercept, rtol=tol, atol=tol)


@pytest.mark.parametrize("loss", [entry for entry in LOSSES.values()], ids=lambda e: e.name)
def test_scalar_residual_is_the_row_residual(loss):
    rng = np.random.default_rng(2)
    margins = np.concatenate([rng.standard_normal(50) * 4, [0.0, -1.0, 1.0, 800.0, -800.0]])
    targets = (rng.choice(loss.binary_targets, len(margins)) if loss.task == "classification"
               else rng.standard_normal(len(margins)))
    out = np.empty(1)
    for margin, target in zip(margins, targets):
        residual(loss.code, np.array([margin]), target, 0.7, out)
        assert single_output_residual(loss.code, margin, target, 0.7) == out[0]


def test_scalar_residual_of_a_multiclass_code_is_nan():
    # A code without a one-output form gives NaN, which the clip drops.
    code = LOSSES["log_loss"].multiclass_code
    assert np.isnan(single_output_residual(code, 0.5, 1.0, 0.0))


def test_rounding_unit_is_the_dtypes_epsilon():
    from sklearn_dplssgd._backends._clipping import COEFFICIENT_RANGE, _rounding_unit

    for dtype in (np.float32, np.float64):
        largest = COEFFICIENT_RANGE[np.dtype(dtype)][0]
        assert _rounding_unit(largest) == np.finfo(dtype).eps


def _counted_team_runs(monkeypatch):
    runs = []
    standard = _sgd.team_steps

    def counted(*args):
        runs.append(1)
        return standard(*args)

    monkeypatch.setattr(_sgd, "team_steps", counted)
    return runs


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
@pytest.mark.parametrize("batch_size", [64, 400])
@pytest.mark.parametrize("n_classes", [2, 3])
def test_team_compiled_steps_are_the_python_steps(monkeypatch, dtype, batch_size, n_classes):
    # With n_jobs=2, a dense fit runs its steps compiled, the helper joining
    # the whole run (one output or several); each step's chunks are those of
    # the Python step, added in chunk order, so the models agree bit for bit.
    from sklearn_dplssgd._backends import _kernels
    monkeypatch.setattr(_kernels, "PARALLEL_MIN_WORK", 200)
    X, y, rng = _data(seed=11, n=400, d=9)
    X = X.astype(dtype)
    if n_classes > 2:
        y = rng.integers(0, n_classes, len(y))
    runs = _counted_team_runs(monkeypatch)

    def make():
        return DPLSSGDClassifier(epsilon=1.0, max_iter=3, batch_size=batch_size, n_jobs=2,
                                 random_state=4, reproducible=True)

    compiled, stepped = _fit_both_ways(monkeypatch, make, X, y)
    assert runs
    np.testing.assert_array_equal(compiled, stepped)
    # Reproducible mode repeats for a fixed n_jobs, however the threads ran.
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        np.testing.assert_array_equal(_coefficients(make().fit(X, y)), compiled)


@pytest.mark.parametrize("min_work, n_classes, sparse, team", [
    (200, 2, False, True),      # a typical batch is split: the team run, even for a short fit
    (10**9, 2, False, False),   # no batch is split: a short fit steps from Python
    (200, 3, False, True),      # several outputs too
    (200, 2, True, False),      # CSR rows step from Python (their team run gained nothing)
])
def test_team_runs_where_a_typical_batch_is_split(monkeypatch, min_work, n_classes, sparse,
                                                  team):
    from sklearn_dplssgd._backends import _kernels
    monkeypatch.setattr(_kernels, "PARALLEL_MIN_WORK", min_work)
    X, _, rng = _data(seed=12, n=400, d=9)
    y = rng.integers(0, n_classes, X.shape[0])
    if sparse:
        X = sp.csr_matrix(np.where(np.abs(X) > 0.4, X, 0.0))
    runs = _counted_team_runs(monkeypatch)
    model = DPLSSGDClassifier(epsilon=1.0, batch_size=200, max_iter=3, n_jobs=2,
                              random_state=0).fit(X, y)
    assert model.n_steps_ < _sgd.COMPILED_RUN_MIN_STEPS  # a short fit
    assert bool(runs) == team
