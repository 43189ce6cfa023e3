"""The one-output kernel's prefetch (issue 31): it changes when data arrive, never a result."""

import numpy as np
import pytest
from numba import njit

from sklearn_dplssgd._backends._clipping import compute_feature_norms
from sklearn_dplssgd._backends._kernels import (
    COEFFICIENT_RANGE,
    compute_row_norms,
    single_output_buffers,
    single_output_sum_into,
)
from oracles import HUBER, LOG_LOSS_BINARY
from sklearn_dplssgd._backends._prefetch import prefetch_address


def _clipped_sum(X, y, rows, params, feature_norms, weights, code, upcoming):
    row_norms = compute_row_norms(X)
    largest, tiny = COEFFICIENT_RANGE[np.dtype(params.dtype)]
    noise = np.zeros_like(params)
    grad = np.full_like(params, np.nan)
    # Buffers sized for the whole table, as the compiled steps size them: the
    # blocks are then shorter than the batch and the rows of later blocks
    # are prefetched from within the batch, the first block's from upcoming.
    buffers = single_output_buffers(params, X.shape[0])
    single_output_sum_into(X, y, rows, params, row_norms, feature_norms, code, 1.345, 0.7, True,
                           largest, tiny, noise, grad, weights, *buffers, upcoming)
    return grad


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
@pytest.mark.parametrize("weighted", [False, True], ids=["unweighted", "weighted"])
@pytest.mark.parametrize("stored_norms", [False, True], ids=["row-norms", "feature-norms"])
def test_prefetching_rows_ahead_changes_no_bit(dtype, weighted, stored_norms):
    rng = np.random.default_rng(31)
    # 300 features: blocks of 54 (float64) or 108 (float32) rows, so a
    # batch of 400 rows has several blocks and every prefetch branch runs.
    n_samples, n_features = 1500, 300
    X = rng.normal(size=(n_samples, n_features)).astype(dtype)
    params = (0.05 * rng.normal(size=(1, n_features + 1))).astype(dtype)
    weights = rng.uniform(0, 2, n_samples) if weighted else np.empty(0)
    feature_norms = (compute_feature_norms(compute_row_norms(X), 1.0) if stored_norms
                     else np.empty(0))
    rows = np.sort(rng.choice(n_samples, 400, replace=False)).astype(np.int64)
    for code, y in ((LOG_LOSS_BINARY, rng.integers(0, 2, n_samples).astype(float)),
                    (HUBER, 3.0 * rng.normal(size=n_samples))):
        without = _clipped_sum(X, y, rows, params, feature_norms, weights, code, rows[:0])
        assert np.isfinite(without).all() and np.abs(without).max() > 0
        for upcoming in (np.sort(rng.choice(n_samples, 380, replace=False)).astype(np.int64),
                         np.arange(n_samples, dtype=np.int64), rows[:3]):
            with_prefetch = _clipped_sum(X, y, rows, params, feature_norms, weights, code,
                                         upcoming)
            np.testing.assert_array_equal(with_prefetch, without)


@njit
def _prefetch_then_add(addresses, a, b):
    for address in addresses:
        prefetch_address(address)
    return a + b


def test_a_prefetch_of_any_address_is_only_a_hint():
    # llvm.prefetch never faults: null, unmapped and misaligned addresses are
    # ignored by the processor (the kernel relies on it only for rows it
    # indexes itself, but a hint must never be able to crash a fit).
    data = np.arange(10.0)
    addresses = np.array([0, 1, 2**47 - 8, data.ctypes.data, data.ctypes.data + 3],
                         dtype=np.int64)
    assert _prefetch_then_add(addresses, 2, 3) == 5
    np.testing.assert_array_equal(data, np.arange(10.0))
