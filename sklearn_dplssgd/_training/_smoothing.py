"""Laplacian smoothing: the operator A_sigma^{-1} of DP-LSSGD and its constants.

A_sigma = I - sigma * L, L the periodic discrete Laplacian on ``d`` points,
is circulant: the discrete Fourier transform diagonalises it, with
eigenvalues ``lambda_k = 1 + 2 sigma - 2 sigma cos(2 pi k / d) >= 1``, so
``A^{-1} v = irfft(rfft(v) / lambda_k)``. Smoothing the already-noised
gradient is post-processing. This FFT form is the reference; training runs
the exact O(d) solve :func:`sklearn_dplssgd._backends._kernels.smooth_rows`,
tested against it.
"""

import numpy as np

__all__ = [
    "smoothing_eigenvalues",
    "apply_smoothing",
    "smoothing_beta",
]


def smoothing_eigenvalues(n_features, sigma, dtype=np.float64):
    """The eigenvalues ``lambda_k`` of A_sigma, ``k = 0 .. d // 2`` (a real FFT's), in ``dtype``."""
    k = np.arange(n_features // 2 + 1, dtype=np.float64)
    eigenvalues = 1.0 + 2.0 * sigma * (1.0 - np.cos(2.0 * np.pi * k / n_features))
    return eigenvalues.astype(dtype, copy=False)


def apply_smoothing(v, eigenvalues, out=None):
    """``A_sigma^{-1} v`` along the last axis by real FFT, in ``v``'s dtype (into ``out`` if given).

    ``eigenvalues`` are :func:`smoothing_eigenvalues`'s for the same ``d``.
    """
    n_features = v.shape[-1]
    spectrum = np.fft.rfft(v, axis=-1)
    spectrum /= eigenvalues
    smoothed = np.fft.irfft(spectrum, n=n_features, axis=-1)
    if out is None:
        return smoothed.astype(v.dtype, copy=False)
    out[...] = smoothed
    return out


def smoothing_beta(n_features, sigma):
    """The mean of ``1 / lambda_i^2`` over the d eigenvalues (Wang et al., "DP-LSSGD", Prop. 2).

    Smoothing leaves each coordinate of Gaussian noise ``sqrt(beta)`` of its
    standard deviation.
    """
    i = np.arange(1, n_features + 1, dtype=np.float64)
    eigenvalues = 1.0 + 2.0 * sigma - 2.0 * sigma * np.cos(2.0 * np.pi * i / n_features)
    return float(np.mean(1.0 / eigenvalues**2))
