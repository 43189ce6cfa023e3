"""The lattice every gradient sum is released on: its figures, its error bound, its release."""

import math
from fractions import Fraction

import numpy as np
import pytest
import scipy.sparse as sp
from scipy import stats

from sklearn_dplssgd import DPLSSGDClassifier, DPLSSGDRegressor
from sklearn_dplssgd._backends import NumpyTraining, use_numpy_backend
from sklearn_dplssgd._backends._numpy import check_chunk_batches
from sklearn_dplssgd._training import (
    LATTICE_BITS, batch_rows_bound, lattice_for, release_on_lattice, summation_error_factor,
)


def release_reference(grad, noise, step):
    """The release in exact rational arithmetic, rounded half to even like ``np.rint``."""
    out = np.empty(grad.shape, dtype=np.float64)
    for index, value in np.ndenumerate(grad):
        ratio = Fraction(float(value)) / Fraction(step)
        rounded = round(ratio)  # Python rounds half to even
        out[index] = float((int(noise[index]) + rounded) * Fraction(step))
    return out


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_the_release_is_the_rounded_sum_plus_the_noise_exactly(dtype):
    rng = np.random.default_rng(0)
    step = 2.0 ** -20
    grad = (rng.normal(size=(3, 50)) * 40).astype(dtype)
    # Exact half-steps and a coordinate far above the step.
    grad[0, 0], grad[0, 1], grad[0, 2] = 2.5 * step, -3.5 * step, 123.0
    noise = rng.integers(-2 ** 30, 2 ** 30, size=grad.shape).astype(np.float64)
    expected = release_reference(grad, noise, step).astype(dtype)
    released = grad.copy()
    release_on_lattice(released, noise, step)
    np.testing.assert_array_equal(released, expected)
    if dtype == np.float64:
        assert np.all(released / step == np.round(released / step))


def test_a_release_without_noise_leaves_the_sum_as_computed():
    grad = np.random.default_rng(1).normal(size=(2, 5))
    released = grad.copy()
    release_on_lattice(released, np.ones_like(grad), 0.0)
    np.testing.assert_array_equal(released, grad)


def test_the_lattice_figures_from_public_quantities():
    z, bound, width, rows = np.array([1.3, 1.3, 0.7]), 3.0, 7850, 600
    lattice = lattice_for(z, bound, width, rows)
    # gamma: a power of two with 2**20 to 2**21 steps per contribution bound.
    assert math.frexp(lattice.step)[0] == 0.5
    assert 2 ** LATTICE_BITS <= bound / lattice.step < 2 ** (LATTICE_BITS + 1)
    # The widening: sqrt(p) for the roundings, and a floating-point part far smaller.
    widened = lattice.sensitivity - bound / lattice.step
    assert math.sqrt(width) < widened < math.sqrt(width) + 1.0
    assert lattice.sensitivity * lattice.step / bound - 1 < math.sqrt(width) * 2.0 ** -20 * 1.001
    np.testing.assert_array_equal(lattice.scales, np.ceil(z * lattice.sensitivity))
    assert lattice.scales.dtype == np.int64 and lattice.max_batch_rows == rows


def test_the_summation_error_factor():
    assert summation_error_factor(10, np.float64) == pytest.approx(11 * 2.0 ** -53, rel=1e-12)
    assert summation_error_factor(10, np.float32) == pytest.approx(11 * 2.0 ** -24, rel=1e-5)
    assert summation_error_factor(2 ** 23, np.float32) == math.inf
    with pytest.raises(ValueError, match="float64"):
        lattice_for(np.ones(3), 1.0, 10, 2 ** 23, dtype=np.float32)


def test_a_scale_past_the_samplers_range_is_refused():
    with pytest.raises(ValueError, match="2\\*\\*52"):
        lattice_for(np.array([2.0 ** 33]), 1.0, 10, 100)


@pytest.mark.parametrize("order", ["forward", "reversed", "pairwise", "blas"])
def test_the_float_error_of_a_sum_is_within_the_bound(order):
    # Contributions at the bound (the worst case), summed in several orders;
    # the exact sum from fractions. The bound gamma_N N W must cover each.
    rng = np.random.default_rng(2)
    n_rows, width, bound = 3000, 40, 1.0
    directions = rng.normal(size=(n_rows, width)) + 3.0  # all alike: partial sums grow
    rows = directions / np.linalg.norm(directions, axis=1, keepdims=True) * bound
    if order == "forward":
        computed = np.zeros(width)
        for row in rows:
            computed += row
    elif order == "reversed":
        computed = np.zeros(width)
        for row in rows[::-1]:
            computed += row
    elif order == "pairwise":
        computed = rows.sum(axis=0)
    else:
        computed = np.ones(n_rows) @ rows
    exact = np.array([float(sum(Fraction(v) for v in rows[:, j])) for j in range(width)])
    error = np.linalg.norm(computed - exact)
    allowed = summation_error_factor(n_rows, np.float64) * n_rows * bound
    # A real rounding error, within the bound.
    assert 0.0 < error <= allowed


@pytest.mark.parametrize("q, n, steps", [(256 / 60000, 60000, 2000), (0.01, 10 ** 6, 10 ** 4),
                                         (0.5, 100, 50), (1e-4, 10 ** 5, 10 ** 5)])
def test_the_batch_bound_fails_with_probability_below_2_to_the_minus_64(q, n, steps):
    bound = batch_rows_bound(q, n, steps)
    assert bound <= n
    if bound < n:
        # log of the union bound over the steps, from the exact binomial tail.
        log_failure = math.log(steps) + stats.binom.logsf(bound, n, q)
        assert log_failure < -64 * math.log(2)
    # Not far above the mean either (the error bound grows with it).
    assert bound < q * n + 20 * math.sqrt(q * n) + 70


def test_a_full_batch_is_bounded_by_its_rows():
    assert batch_rows_bound(1.0, 1234, 10) == 1234


def test_a_batch_past_the_bound_fails_the_fit_closed():
    lattice = lattice_for(np.ones(2), 1.0, 5, 10)
    check_chunk_batches(lattice, np.array([0, 10, 20]), 100)
    check_chunk_batches(None, np.array([0, 50]), 100)
    with pytest.raises(RuntimeError, match="public_n_samples"):
        check_chunk_batches(lattice, np.array([0, 4, 15]), 100)
    with pytest.raises(RuntimeError, match="11 rows"):
        check_chunk_batches(lattice, None, 11)


def _one_step(estimator, X, y, seed):
    return estimator.set_params(
        batch_size=len(y), max_iter=1, eta0=1.0, learning_rate="constant", alpha=0.0,
        sigma=0.0, average=False, random_state=seed, reproducible=True).fit(X, y)


@pytest.mark.parametrize("as_input", [np.asarray, sp.csr_matrix,
                                      lambda X: X.astype(np.float32)])
def test_a_fitted_step_releases_integers_on_the_lattice(as_input):
    # One full-batch step of size 1 from zero weights: coef = -released / b,
    # so b * coef / gamma is an integer on every input path.
    rng = np.random.default_rng(3)
    X, y = rng.uniform(-1, 1, (64, 6)), rng.uniform(-1, 1, 64)
    model = _one_step(DPLSSGDRegressor(epsilon=1.0, target_bounds=(-1, 1), fit_intercept=True),
                      as_input(X), y, 0)
    step = model._noise_added.grid_step
    released = -np.append(model.coef_.astype(np.float64), model.intercept_) * 64 / step
    assert step == 2.0 ** -20
    if as_input(X).dtype == np.float64:
        np.testing.assert_array_equal(released, np.round(released))
    else:
        # float32 coefficients hold the released value rounded (post-processing).
        np.testing.assert_allclose(released, np.round(released), rtol=2e-7)


def test_reproducible_fits_agree_whatever_the_threads():
    rng = np.random.default_rng(4)
    X = rng.normal(size=(3000, 30))
    y = (X[:, 0] > 0).astype(int)
    fits = [DPLSSGDClassifier(classes=[0, 1], random_state=5, reproducible=True, n_jobs=n_jobs,
                              batch_size=512, max_iter=2).fit(X, y) for n_jobs in (1, 2)]
    np.testing.assert_array_equal(fits[0].coef_, fits[1].coef_)


class UnroundedTraining(NumpyTraining):
    """A broken release: the integer noise added to the sum without rounding it."""

    supports_compiled_runs = False

    def gradient_sum(self, params, draws, local_step):
        step, self._lattice_step = self._lattice_step, 0.0
        grad = super().gradient_sum(params, draws, local_step)
        self._lattice_step = step
        rows, offsets, noise = draws
        return grad + step * noise[local_step]


def test_a_release_that_skips_the_rounding_leaves_the_lattice():
    rng = np.random.default_rng(6)
    X, y = rng.uniform(-1, 1, (64, 6)), rng.uniform(-1, 1, 64)
    with use_numpy_backend(UnroundedTraining):
        model = _one_step(DPLSSGDRegressor(epsilon=1.0, target_bounds=(-1, 1)), X, y, 0)
    released = -np.append(model.coef_, model.intercept_) * 64 / model._noise_added.grid_step
    assert not np.array_equal(released, np.round(released))
