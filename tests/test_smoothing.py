"""Laplacian smoothing: FFT operator, dense solve, and the paper's constants."""

import numpy as np
import pytest

from sklearn_dplssgd._backends._kernels import smooth_rows, smoothing_omega
from sklearn_dplssgd._training._smoothing import (
    apply_smoothing,
    smoothing_beta,
    smoothing_eigenvalues,
)


def laplacian_smoothing_matrix(n_features, sigma):
    """Dense A_sigma: 1 + 2 sigma on the diagonal, -sigma on both (periodic) neighbours."""
    A = np.eye(n_features) * (1.0 + 2.0 * sigma)
    for offset in (1, -1):
        A[np.arange(n_features), (np.arange(n_features) + offset) % n_features] -= sigma
    return A


def smoothing_gamma(n_features, sigma):
    """The paper's gamma: the mean of 1 / lambda_i over the d eigenvalues."""
    i = np.arange(1, n_features + 1, dtype=np.float64)
    eigenvalues = 1.0 + 2.0 * sigma - 2.0 * sigma * np.cos(2.0 * np.pi * i / n_features)
    return float(np.mean(1.0 / eigenvalues))


def smoothing_gamma_closed_form(n_features, sigma):
    """Wang et al.'s Proposition 1: gamma = (1 + w^d) / ((1 - w^d) sqrt(4 sigma + 1))."""
    root = np.sqrt(4.0 * sigma + 1.0)
    w_d = ((2.0 * sigma + 1.0 - root) / (2.0 * sigma)) ** n_features
    return float((1.0 + w_d) / ((1.0 - w_d) * root))


@pytest.mark.parametrize("n_features", [1, 2, 3, 8, 31, 100])
@pytest.mark.parametrize("sigma", [0.0, 0.5, 1.0, 3.0, 50.0])
def test_fft_smoothing_equals_dense_solve(n_features, sigma):
    rng = np.random.default_rng(n_features)
    v = rng.normal(size=(3, n_features))
    A = laplacian_smoothing_matrix(n_features, sigma)
    expected = np.linalg.solve(A, v.T).T
    got = apply_smoothing(v, smoothing_eigenvalues(n_features, sigma))
    np.testing.assert_allclose(got, expected, rtol=1e-10, atol=1e-12)


@pytest.mark.parametrize("n_features", [1, 2, 3, 8, 31, 784])
@pytest.mark.parametrize("sigma", [1e-6, 0.5, 1.0, 3.0, 100.0, 1e6])
@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_compiled_factorised_solve_equals_fft(n_features, sigma, dtype):
    """The training loop's O(d) solve against the FFT operator."""
    rng = np.random.default_rng(n_features)
    grad = rng.normal(size=(4, n_features + 1)).astype(dtype)
    expected = apply_smoothing(grad[:, :n_features].astype(np.float64),
                               smoothing_eigenvalues(n_features, sigma))
    intercepts = grad[:, -1].copy()
    smooth_rows(grad, n_features, smoothing_omega(sigma), sigma)
    tol = 1e-10 if dtype == np.float64 else 1e-5
    np.testing.assert_allclose(grad[:, :n_features], expected, rtol=tol,
                               atol=tol * np.abs(expected).max())
    np.testing.assert_array_equal(grad[:, -1], intercepts)


def test_omega_is_the_papers_w():
    for sigma in (0.1, 1.0, 7.0):
        root = np.sqrt(4 * sigma + 1)
        assert smoothing_omega(sigma) == pytest.approx((2 * sigma + 1 - root) / (2 * sigma))


def test_dense_matrix_structure():
    A = laplacian_smoothing_matrix(5, 2.0)
    assert A[0, 0] == 5.0 and A[0, 1] == -2.0 and A[0, 4] == -2.0 and A[0, 2] == 0.0
    np.testing.assert_allclose(A, A.T)


def test_sigma_zero_is_identity():
    v = np.random.default_rng(0).normal(size=(4, 17))
    np.testing.assert_allclose(apply_smoothing(v, smoothing_eigenvalues(17, 0.0)), v,
                               atol=1e-14)


def test_in_place_on_a_view_and_float32():
    params = np.random.default_rng(1).normal(size=(2, 11)).astype(np.float32)
    expected = apply_smoothing(params[:, :10].astype(np.float64), smoothing_eigenvalues(10, 1.0))
    view = params[:, :10]
    out = apply_smoothing(view, smoothing_eigenvalues(10, 1.0, np.float32), out=view)
    assert out.dtype == np.float32
    np.testing.assert_allclose(params[:, :10], expected, rtol=1e-5, atol=1e-6)


def test_smoothing_preserves_the_mean_and_shrinks_the_norm():
    v = np.random.default_rng(2).normal(size=64)
    smoothed = apply_smoothing(v, smoothing_eigenvalues(64, 2.0))
    assert np.isclose(smoothed.sum(), v.sum())
    assert np.linalg.norm(smoothed) < np.linalg.norm(v)


# The paper's gamma and beta (Wang et al., "DP-LSSGD", Tables 3-4).
GAMMA = {1: 0.447, 2: 0.333, 3: 0.277, 4: 0.243, 5: 0.218}
BETA = {1: 0.268, 2: 0.185, 3: 0.149, 4: 0.128, 5: 0.114}


@pytest.mark.parametrize("n_features", [1000, 10000, 100000])
@pytest.mark.parametrize("sigma", [1, 2, 3, 4, 5])
def test_paper_gamma_and_beta(n_features, sigma):
    assert smoothing_gamma(n_features, sigma) == pytest.approx(GAMMA[sigma], abs=6e-4)
    assert smoothing_beta(n_features, sigma) == pytest.approx(BETA[sigma], abs=6e-4)


@pytest.mark.parametrize("n_features", [5, 16, 100, 1000])
@pytest.mark.parametrize("sigma", [0.5, 1, 3, 10])
def test_proposition_1_closed_form(n_features, sigma):
    assert smoothing_gamma_closed_form(n_features, sigma) == pytest.approx(
        smoothing_gamma(n_features, sigma), rel=1e-10
    )


def test_meaning_of_gamma_and_beta_on_gaussian_noise():
    """For n ~ N(0, I): E[n^T A^{-1} n] / d = gamma and Var[(A^{-1} n)_j] = beta."""
    rng = np.random.default_rng(3)
    noise = rng.normal(size=(4000, 256))
    smoothed = apply_smoothing(noise, smoothing_eigenvalues(256, 2.0))
    assert smoothed.var() == pytest.approx(smoothing_beta(256, 2.0), rel=0.02)
    quadratic = np.mean(np.sum(noise * smoothed, axis=1)) / 256
    assert quadratic == pytest.approx(smoothing_gamma(256, 2.0), rel=0.02)
