"""The exact mode's integer sum: each row's two factors on their grids, summed exactly."""

import math

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st
from hypothesis.extra import numpy as hnp
from oracles import factored_sum_reference

from sklearn_dplssgd.backends._discrete_gaussian import PROPOSAL_LIMIT_BITS
from sklearn_dplssgd.backends._grid_sum import (
    MAX_BATCH_ROWS,
    MAX_GEMM_ROWS,
    MAX_GRID_BITS,
    add_factored_rows,
    factored_norm_bound,
    grid_norm_bound,
    rounded_clipped_sum,
)

FINITE = st.floats(-1e6, 1e6, allow_nan=False, allow_infinity=False, allow_subnormal=False)


def clip_rows(rows, residuals, clip_norm, intercept_term):
    """Residuals scaled so that ||r_i|| sqrt(||x_i||^2 + b^2) <= C (the kernels' clip)."""
    norms = np.linalg.norm(residuals, axis=1) * np.sqrt(
        np.sum(rows.astype(np.float64) ** 2, axis=1) + intercept_term ** 2)
    factor = np.minimum(1.0, clip_norm / np.where(norms > 0, norms, 1.0))
    return residuals * factor[:, None]


def one_row_contribution(residual, row, clip_norm, residual_bits, row_bits, residual_bound,
                         row_bound):
    """A row's integer contribution as the kernel forms it, checks given (None: left out)."""
    norm = float(np.linalg.norm(row))
    b = np.rint(row * (2.0 ** row_bits / norm)) if norm > 0 else np.zeros_like(row)
    a = np.rint(residual * (norm * (2.0 ** residual_bits / clip_norm)))
    a_int, b_int = [int(v) for v in a], [int(v) for v in b]
    if residual_bound is not None and sum(v * v for v in a_int) > residual_bound:
        return None
    if row_bound is not None and sum(v * v for v in b_int) > row_bound:
        return None
    return [a_k * b_j for a_k in a_int for b_j in b_int]


SENSITIVITY = dict(
    residual=hnp.arrays(np.float64, st.integers(1, 6), elements=FINITE),
    row=hnp.arrays(np.float64, st.integers(2, 24), elements=FINITE),
    radius=st.floats(0.0, 1.0), clip_norm=st.floats(1e-3, 1e3),
    residual_bits=st.integers(0, MAX_GRID_BITS), row_bits=st.integers(0, MAX_GRID_BITS))


def clipped_pair(residual, row, radius, clip_norm):
    """The residual scaled so that ||r|| ||x|| = radius C (at most C)."""
    size = float(np.linalg.norm(residual)) * float(np.linalg.norm(row))
    return residual * (radius * clip_norm / size) if size > 0 else residual


@settings(max_examples=200, deadline=None)
@given(**SENSITIVITY)
def test_one_rows_contribution_is_within_the_product_bound(residual, row, radius, clip_norm,
                                                           residual_bits, row_bits):
    # The sensitivity, in exact integers: any one clipped row's a (x) b has
    # squared norm at most A Bb, and the kernel's sum of that row alone is it.
    residual = clipped_pair(residual, row, radius, clip_norm)
    K, D2 = residual.size, row.size
    bound = factored_norm_bound(residual_bits, row_bits, K, D2)
    contribution = one_row_contribution(
        residual, row, clip_norm, residual_bits, row_bits,
        grid_norm_bound(residual_bits, K), grid_norm_bound(row_bits, D2))
    assert contribution is not None  # a clipped row is never left out
    assert sum(v * v for v in contribution) <= bound
    if row[-1] != 0:
        # The last entry as the intercept's term: the kernel's own sum.
        total, left_out = rounded_clipped_sum(row[None, :-1], residual[None, :], clip_norm,
                                              residual_bits, row_bits, intercept_term=row[-1])
        assert left_out == 0
        assert [int(v) for v in total.ravel()] == contribution
    # The bound is the two factors' (2**k + sqrt(n) / 2)**2, each up to its slack.
    ideals = [(2.0 ** bits + math.sqrt(n) / 2) ** 2
              for bits, n in ((residual_bits, K), (row_bits, D2))]
    assert ideals[0] * ideals[1] <= bound
    assert bound <= (ideals[0] * (1 + 2.0 ** -28) + 5) * (ideals[1] * (1 + 2.0 ** -28) + 5)


def test_the_property_fails_for_broken_variants():
    # The property above can fail: on a bad rounding (every entry of both
    # factors moved up by 1/3), a bound without the sqrt(K) / 2 and
    # sqrt(D2) / 2 terms is exceeded, and a residual past the clip passes
    # only when the residual factor's check is skipped.
    K, D2, residual_bits, row_bits = 9, 9, 1, 1
    # Unit vectors of entries 1/3: on the grid 2**-1 each is 2/3, rounded to 1.
    residual, row = np.full(K, 1 / 3), np.full(D2, 1 / 3)
    bounds = grid_norm_bound(residual_bits, K), grid_norm_bound(row_bits, D2)
    exact = factored_norm_bound(residual_bits, row_bits, K, D2)
    worst = one_row_contribution(residual, row, 1.0, residual_bits, row_bits, *bounds)
    assert worst is not None and sum(v * v for v in worst) <= exact
    without_rounding_term = (2 ** residual_bits * 2 ** row_bits) ** 2
    assert sum(v * v for v in worst) > without_rounding_term
    stretched = residual * 3.0
    skipped = one_row_contribution(stretched, row, 1.0, residual_bits, row_bits, None, bounds[1])
    assert sum(v * v for v in skipped) > exact
    assert one_row_contribution(stretched, row, 1.0, residual_bits, row_bits, *bounds) is None


@settings(max_examples=60, deadline=None)
@given(seed=st.integers(0, 2 ** 32 - 1), n_rows=st.integers(1, 20), n_features=st.integers(1, 30),
       n_outputs=st.integers(1, 4), residual_bits=st.integers(0, MAX_GRID_BITS),
       row_bits=st.integers(0, MAX_GRID_BITS), intercept_term=st.sampled_from([0.0, 1.0]),
       dtype=st.sampled_from([np.float32, np.float64]),
       stretch=st.sampled_from([1.0, 1.0001, 1.01, 1.5, 1e30]))
def test_the_factored_sum_equals_the_integer_oracle(
        seed, n_rows, n_features, n_outputs, residual_bits, row_bits, intercept_term, dtype,
        stretch):
    # The GEMM of float-held integers against Python integers: the same
    # totals and the same rows left out, with rows near and past the bound
    # (stretch), half-way ties, NaN and infinite residuals, a NaN row.
    rng = np.random.default_rng(seed)
    clip_norm = float(rng.uniform(0.1, 10.0))
    rows = (rng.normal(size=(n_rows, n_features)) * rng.uniform(0.1, 10.0)).astype(dtype)
    rows[:, ::2] = np.round(rows[:, ::2] * 4) / 4
    residuals = clip_rows(rows, rng.normal(size=(n_rows, n_outputs)), clip_norm,
                          intercept_term) * stretch
    residuals[rng.random(n_rows) < 0.2] *= 0.5
    if n_rows > 3:
        residuals[1, 0], residuals[2, -1] = np.nan, np.inf
        rows[3, 0] = np.nan
    if n_rows > 4:
        rows[4] = 0.0
    total, left_out = rounded_clipped_sum(rows, residuals, clip_norm, residual_bits, row_bits,
                                          intercept_term)
    expected, expected_left_out = factored_sum_reference(
        rows, residuals, clip_norm, residual_bits, row_bits, intercept_term)
    np.testing.assert_array_equal(total, expected)
    assert left_out == expected_left_out
    if intercept_term == 0:
        assert not total[:, -1].any()


def test_the_factored_sum_equals_the_oracle_on_an_mnist_shaped_batch():
    rng = np.random.default_rng(7)
    rows = rng.random((64, 784), dtype=np.float32)
    residuals = clip_rows(rows, rng.normal(size=(64, 10)), 1.0, 1.0)
    # Residuals stretched past the clip by 0 to 30 %: the first within the
    # bound's slack sqrt(K) / 2, the later ones past it.
    residuals *= 1.0 + 0.005 * np.arange(64)[:, None]
    total, left_out = rounded_clipped_sum(rows, residuals, 1.0, 8, 16)
    expected, expected_left_out = factored_sum_reference(rows, residuals, 1.0, 8, 16)
    np.testing.assert_array_equal(total, expected)
    assert left_out == expected_left_out and 0 < left_out < 64


def test_a_batch_above_the_gemm_split_is_summed_exactly():
    # 2**19 + 3 rows, each one of two tables' rows (x' = [x, 1]), on the
    # finest grids: two GEMMs, whose sum is still the exact integer sum
    # (each row adds a (x) b with a near 2**16 and b's entries near 2**16 /
    # sqrt(2)), past 2**50 in magnitude.
    n_rows = MAX_GEMM_ROWS + 3
    X = np.array([[1.0], [-1.0]])
    norms = np.full(2, math.sqrt(2.0))
    rows = np.zeros(n_rows, dtype=np.int64)
    rows[::5] = 1
    scaled = np.full((n_rows, 1), 65535.0)
    scaled[::7] = -65531.0
    bounds = float(grid_norm_bound(MAX_GRID_BITS, 1)), float(grid_norm_bound(MAX_GRID_BITS, 2))
    total = np.zeros((1, 2), dtype=np.int64)
    left_out = add_factored_rows(X, rows, scaled, norms, 2.0 ** MAX_GRID_BITS, 1.0, *bounds, 0,
                                 n_rows, total)
    b = [[int(v) for v in np.rint(np.array([x, 1.0]) * (2.0 ** MAX_GRID_BITS / math.sqrt(2.0)))]
         for x in (1.0, -1.0)]
    a = [int(v) for v in scaled[:, 0]]
    expected = [sum(a_r * b[int(i)][j] for a_r, i in zip(a, rows)) for j in range(2)]
    assert left_out == 0 and [int(v) for v in total[0]] == expected
    assert abs(expected[1]) > 2 ** 50


def test_row_factors_are_held_to_their_bound_and_zero_rows_kept():
    # The rows' factors alone (a residual factor of 1): a zero row is kept
    # (its factor is 0), a row with an infinite entry or whose norm is wrong
    # (its factor beyond Bb) is left out; only the batch's rows are read.
    X = np.array([[3.0, 4.0], [0.0, 0.0], [np.inf, 1.0], [1.0, 1.0], [np.nan, 0.0]])
    norms = np.linalg.norm(X, axis=1)
    norms[3] = 0.5
    rows = np.arange(4, dtype=np.int64)
    total = np.zeros((1, 3), dtype=np.int64)
    left_out = add_factored_rows(X, rows, np.ones((4, 1)), norms, 16.0, 0.0,
                                 float(grid_norm_bound(0, 1)), float(grid_norm_bound(4, 2)), 0,
                                 4, total)
    assert left_out == 2
    np.testing.assert_array_equal(total, [[10, 13, 0]])  # rint(16 * (.6, .8))
    # The same rows as a slice of the batch: start and stop are honoured.
    total[:] = 0
    assert add_factored_rows(X, rows, np.ones((4, 1)), norms, 16.0, 0.0, 1.0,
                             float(grid_norm_bound(4, 2)), 1, 3, total) == 1
    assert not total.any()


def test_a_row_beyond_the_bound_or_not_finite_is_left_out():
    rows = np.array([[3.0, 4.0], [1.0, 0.0], [0.5, 0.5]])
    residuals = np.array([[0.1], [1e9], [np.nan]])
    total, left_out = rounded_clipped_sum(rows, residuals, 1.0, 10, 6)
    assert left_out == 2
    norm = math.sqrt(26.0)
    a = np.rint(0.1 * norm * 1024)
    np.testing.assert_array_equal(total, a * np.rint(64 * np.array([[3.0, 4.0, 1.0]]) / norm))


def test_overflow_is_impossible_at_the_public_limits():
    # Every kept factor entry is below 2**17, so a product is below 2**34; a
    # GEMM of 2**19 rows stays below 2**53 (exact in float64), the largest
    # batch's sum below 2**61, and with the sampler's largest noise in int64.
    largest_entry = math.isqrt(grid_norm_bound(MAX_GRID_BITS, 2 ** 32 - 1)) + 1
    assert largest_entry <= 2 ** 17
    assert largest_entry ** 2 * MAX_GEMM_ROWS <= 2 ** 53
    assert largest_entry ** 2 * MAX_BATCH_ROWS <= 2 ** 61
    assert 2 ** 61 + 2 ** PROPOSAL_LIMIT_BITS < 2 ** 63
    assert largest_entry < 2 ** 24  # the row factors are exact in float32


@pytest.mark.parametrize("grid_bits, n_coordinates, match", [
    (MAX_GRID_BITS + 1, 4, "grid_bits"), (-1, 4, "grid_bits"), (True, 4, "grid_bits"),
    (2.0, 4, "grid_bits"), (3, 0, "n_coordinates"), (3, 2 ** 32, "n_coordinates")])
def test_bad_grid_settings_are_refused(grid_bits, n_coordinates, match):
    with pytest.raises(ValueError, match=match):
        grid_norm_bound(grid_bits, n_coordinates)


@pytest.mark.parametrize("clip_norm", [0.0, -1.0, math.inf, math.nan])
def test_a_bad_clip_norm_is_refused(clip_norm):
    with pytest.raises(ValueError, match="clip_norm"):
        rounded_clipped_sum(np.ones((2, 2)), np.ones((2, 1)), clip_norm, 4, 4)


def test_half_way_entries_round_to_even_as_the_oracle_rounds_them():
    rng = np.random.default_rng(11)
    rows = rng.choice([-3.0, -1.0, 1.0, 3.0], size=(30, 3))
    residuals = rng.choice([-1 / 64, 1 / 64], size=(30, 3))
    total, left_out = rounded_clipped_sum(rows, residuals, 1.0, 5, 3)
    expected, _ = factored_sum_reference(rows, residuals, 1.0, 5, 3)
    assert left_out == 0
    np.testing.assert_array_equal(total, expected)
