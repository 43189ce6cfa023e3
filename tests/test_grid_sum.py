"""The integer sum of the exact-noise mode: per-row rounding onto the grid and its bound."""

import math

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st
from hypothesis.extra import numpy as hnp
from oracles import rounded_clipped_sum_reference

from sklearn_dplssgd.backends._discrete_gaussian import PROPOSAL_LIMIT_BITS
from sklearn_dplssgd.backends._grid_sum import (
    MAX_BATCH_ROWS,
    MAX_GRID_BITS,
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


def rounded_rows(rows, residuals, clip_norm, grid_bits, intercept_term):
    """Each row's contribution on the grid, as NumPy computes it (the oracle)."""
    scale = 2.0 ** grid_bits / clip_norm
    design = np.hstack([rows.astype(np.float64), np.full((rows.shape[0], 1), intercept_term)])
    return np.rint((residuals * scale)[:, :, None] * design[:, None, :]).astype(np.int64)


@settings(max_examples=150, deadline=None)
@given(vector=hnp.arrays(np.float64, st.integers(1, 64), elements=FINITE),
       radius=st.floats(0.0, 1.0), clip_norm=st.floats(1e-3, 1e3),
       grid_bits=st.integers(0, MAX_GRID_BITS))
def test_a_rounded_contribution_stays_within_the_bound(vector, radius, clip_norm, grid_bits):
    # Any vector of norm at most C, rounded coordinate by coordinate on the
    # grid 2**-k C, has squared norm at most grid_norm_bound(k, D), and the
    # bound is (2**k + sqrt(D) / 2)**2 up to its small slack.
    norm = np.linalg.norm(vector)
    contribution = vector * (radius * clip_norm / norm) if norm > 0 else vector
    rounded = np.rint(contribution * (2.0 ** grid_bits / clip_norm)).astype(np.int64)
    bound = grid_norm_bound(grid_bits, vector.size)
    assert int(np.sum(rounded * rounded)) <= bound
    ideal = (2.0 ** grid_bits + math.sqrt(vector.size) / 2.0) ** 2
    assert ideal <= bound <= ideal * (1 + 2.0 ** -28) + 5


def test_the_bound_is_reached_by_the_worst_rounding():
    # (0.5, 0.5, 0.5, 0.5) has norm 1 = 2**0; rounded up (as a float a hair
    # above one half is) every coordinate moves by 1/2 and the norm becomes
    # 2 = 2**k + sqrt(D) / 2: the bound's rounding term cannot be smaller.
    rounded = np.ceil(np.full(4, 0.5))
    assert np.sum(rounded ** 2) == 4 <= grid_norm_bound(0, 4) <= 4 + 5


@settings(max_examples=40, deadline=None)
@given(seed=st.integers(0, 2 ** 32 - 1), n_rows=st.integers(1, 12), n_features=st.integers(1, 9),
       n_outputs=st.integers(1, 4), grid_bits=st.integers(0, MAX_GRID_BITS),
       intercept_term=st.sampled_from([0.0, 1.0, 3.5]), dtype=st.sampled_from([np.float32,
                                                                               np.float64]))
def test_the_kernel_sums_the_rounded_rows_and_one_row_moves_it_by_the_bound(
        seed, n_rows, n_features, n_outputs, grid_bits, intercept_term, dtype):
    rng = np.random.default_rng(seed)
    clip_norm = float(rng.uniform(0.1, 10.0))
    rows = (rng.normal(size=(n_rows, n_features)) * rng.uniform(0.1, 100.0)).astype(dtype)
    residuals = clip_rows(rows, rng.normal(size=(n_rows, n_outputs)) * 50.0, clip_norm,
                          intercept_term)
    total, left_out = rounded_clipped_sum(rows, residuals, clip_norm, grid_bits, intercept_term)
    per_row = rounded_rows(rows, residuals, clip_norm, grid_bits, intercept_term)
    assert left_out == 0 and total.dtype == np.int64
    np.testing.assert_array_equal(total, per_row.sum(axis=0))
    # Remove-one neighbour: the sums differ by the removed row's contribution.
    without_first, _ = rounded_clipped_sum(rows[1:], residuals[1:], clip_norm, grid_bits,
                                           intercept_term)
    difference = total - without_first
    dimension = n_outputs * (n_features + (1 if intercept_term else 0))
    assert int(np.sum(difference * difference)) <= grid_norm_bound(grid_bits, dimension)
    if not intercept_term:
        assert not total[:, -1].any()


def test_a_row_beyond_the_bound_or_not_finite_is_left_out():
    # Fail-closed: a residual the clip did not bound (or a NaN) does not reach
    # the sum, whatever its value.
    rows = np.array([[3.0, 4.0], [1.0, 0.0], [0.5, 0.5]])
    residuals = np.array([[0.1], [1e9], [np.nan]])
    total, left_out = rounded_clipped_sum(rows, residuals, 1.0, 10)
    assert left_out == 2
    np.testing.assert_array_equal(total, np.rint(0.1 * 1024 * np.array([[3.0, 4.0, 1.0]])))


def test_overflow_is_impossible_at_the_public_limits():
    # The largest accepted entry times the largest batch, plus the largest
    # noise the sampler can return, fits int64.
    largest_entry = math.isqrt(grid_norm_bound(MAX_GRID_BITS, 2 ** 32 - 1)) + 1
    assert largest_entry * MAX_BATCH_ROWS <= 2 ** 61
    assert 2 ** 61 + 2 ** PROPOSAL_LIMIT_BITS < 2 ** 63


@pytest.mark.parametrize("grid_bits, n_coordinates, match", [
    (MAX_GRID_BITS + 1, 4, "grid_bits"), (-1, 4, "grid_bits"), (True, 4, "grid_bits"),
    (2.0, 4, "grid_bits"), (3, 0, "n_coordinates"), (3, 2 ** 32, "n_coordinates")])
def test_bad_grid_settings_are_refused(grid_bits, n_coordinates, match):
    with pytest.raises(ValueError, match=match):
        grid_norm_bound(grid_bits, n_coordinates)


@pytest.mark.parametrize("clip_norm", [0.0, -1.0, math.inf, math.nan])
def test_a_bad_clip_norm_is_refused(clip_norm):
    with pytest.raises(ValueError, match="clip_norm"):
        rounded_clipped_sum(np.ones((2, 2)), np.ones((2, 1)), clip_norm, 4)


@settings(max_examples=80, deadline=None)
@given(seed=st.integers(0, 2 ** 32 - 1), n_rows=st.integers(1, 20), n_features=st.integers(1, 40),
       n_outputs=st.integers(1, 4), grid_bits=st.integers(0, MAX_GRID_BITS),
       intercept_term=st.sampled_from([0.0, 1.0]),
       dtype=st.sampled_from([np.float32, np.float64]),
       stretch=st.sampled_from([1.0, 1.0001, 1.01, 1.5, 1e30]))
def test_the_vectorised_kernel_equals_the_integer_oracle(
        seed, n_rows, n_features, n_outputs, grid_bits, intercept_term, dtype, stretch):
    # The float64-held integers of the kernel against Python integers: the
    # same totals and the same rows left out, with rows near and past the
    # bound (stretch), half-way ties, NaN and infinite residuals.
    rng = np.random.default_rng(seed)
    clip_norm = float(rng.uniform(0.1, 10.0))
    rows = (rng.normal(size=(n_rows, n_features)) * rng.uniform(0.1, 10.0)).astype(dtype)
    # Entries on a coarse binary grid make exact half-way products common.
    rows[:, ::2] = np.round(rows[:, ::2] * 4) / 4
    residuals = clip_rows(rows, rng.normal(size=(n_rows, n_outputs)), clip_norm,
                          intercept_term) * stretch
    residuals[rng.random(n_rows) < 0.2] *= 0.5
    if n_rows > 2:
        residuals[1, 0], residuals[2, -1] = np.nan, np.inf
    total, left_out = rounded_clipped_sum(rows, residuals, clip_norm, grid_bits, intercept_term)
    expected, expected_left_out = rounded_clipped_sum_reference(rows, residuals, clip_norm,
                                                                grid_bits, intercept_term)
    np.testing.assert_array_equal(total, expected)
    assert left_out == expected_left_out


def test_the_vectorised_kernel_equals_the_oracle_on_an_mnist_shaped_batch():
    rng = np.random.default_rng(7)
    rows = rng.random((64, 784), dtype=np.float32)
    residuals = clip_rows(rows, rng.normal(size=(64, 10)), 1.0, 1.0)
    # Rows stretched past the clip by 0 to 3 %: the first within the bound's
    # slack sqrt(D) / 2, the later ones past it, some at its edge.
    residuals *= 1.0 + 0.0005 * np.arange(64)[:, None]
    for grid_bits in (12, 16):
        total, left_out = rounded_clipped_sum(rows, residuals, 1.0, grid_bits)
        expected, expected_left_out = rounded_clipped_sum_reference(rows, residuals, 1.0,
                                                                    grid_bits)
        np.testing.assert_array_equal(total, expected)
        assert left_out == expected_left_out
        assert 0 < left_out < 64


def test_half_way_entries_round_to_even_as_the_oracle_rounds_them():
    # s = (1/32) 2**4 = 1/2 times odd integers: every entry is a tie (the
    # intercept's 1/2 included), rounded half to even, negative ones too.
    rng = np.random.default_rng(11)
    rows = rng.choice([-7.0, -5.0, -3.0, -1.0, 1.0, 3.0, 5.0, 7.0], size=(30, 6))
    residuals = rng.choice([-1 / 32, 1 / 32], size=(30, 3))
    total, left_out = rounded_clipped_sum(rows, residuals, 1.0, 4)
    expected, _ = rounded_clipped_sum_reference(rows, residuals, 1.0, 4)
    assert left_out == 0
    np.testing.assert_array_equal(total, expected)
    design = np.hstack([rows, np.ones((30, 1))])
    np.testing.assert_array_equal(
        total, np.rint(residuals[:, :, None] * 16 * design[:, None, :]).sum(axis=0))
