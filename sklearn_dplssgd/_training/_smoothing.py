"""Laplacian smoothing: the operator A_sigma^{-1} of DP-LSSGD and its constants.

A_sigma = I - sigma * L, where L is the periodic one-dimensional discrete
Laplacian on ``d`` points. A_sigma is circulant, so it is diagonalised by the
discrete Fourier transform and its inverse is applied in O(d log d) by a real
FFT: ``A^{-1} v = irfft(rfft(v) / lambda_k)`` with eigenvalues
``lambda_k = 1 + 2 sigma - 2 sigma cos(2 pi k / d)``. Smoothing is applied to
the already-noised gradient, so it is post-processing and costs no privacy.

The FFT form here is the reference. Training uses the exact O(d) solve of
:func:`sklearn_dplssgd._backends._kernels.smooth_rows` (A_sigma factors into two
first-order periodic recursions), compiled into the step; the tests check the
two against each other and against a dense solve.
"""

import numpy as np

__all__ = [
    "smoothing_eigenvalues",
    "laplacian_smoothing_matrix",
    "apply_smoothing",
    "smoothing_gamma",
    "smoothing_beta",
    "smoothing_gamma_closed_form",
]


def smoothing_eigenvalues(n_features, sigma, dtype=np.float64):
    """Eigenvalues of A_sigma for the frequencies of a real FFT.

    Parameters
    ----------
    n_features : int
        Length ``d`` of the vector being smoothed.
    sigma : float
        Smoothing strength, ``sigma >= 0``. ``sigma = 0`` gives all ones.
    dtype : numpy dtype, default=np.float64
        Dtype of the returned array (float32 keeps float32 training in float32).

    Returns
    -------
    eigenvalues : ndarray of shape (n_features // 2 + 1,)
        ``1 + 2 sigma - 2 sigma cos(2 pi k / d)`` for ``k = 0 .. d // 2``;
        every entry is at least 1, so dividing by it never amplifies noise.
    """
    k = np.arange(n_features // 2 + 1, dtype=np.float64)
    eigenvalues = 1.0 + 2.0 * sigma * (1.0 - np.cos(2.0 * np.pi * k / n_features))
    return eigenvalues.astype(dtype, copy=False)


def laplacian_smoothing_matrix(n_features, sigma):
    """Dense matrix A_sigma = I - sigma L (for tests and explanation only).

    Parameters
    ----------
    n_features : int
        Size ``d`` of the square matrix.
    sigma : float
        Smoothing strength.

    Returns
    -------
    A : ndarray of shape (n_features, n_features)
        ``1 + 2 sigma`` on the diagonal and ``-sigma`` on both neighbours,
        with periodic wrap-around in the two corners.
    """
    A = np.eye(n_features) * (1.0 + 2.0 * sigma)
    for offset in (1, -1):
        A[np.arange(n_features), (np.arange(n_features) + offset) % n_features] -= sigma
    # For d = 1 both neighbours are the point itself and for d = 2 both are the
    # other point; the index arithmetic above covers both (A = I for d = 1).
    return A


def apply_smoothing(v, eigenvalues, out=None):
    """Apply A_sigma^{-1} along the last axis of ``v`` by real FFT (the reference).

    Training runs the equivalent O(d) solve
    :func:`sklearn_dplssgd._backends._kernels.smooth_rows`; this is what it is tested
    against.

    Parameters
    ----------
    v : ndarray of shape (..., d)
        Vector or stack of vectors (for example one coefficient row per
        class); each row is smoothed independently along the feature axis.
    eigenvalues : ndarray of shape (d // 2 + 1,)
        Output of :func:`smoothing_eigenvalues` for the same ``d``;
        precomputed once per fit.
    out : ndarray of shape (..., d), optional
        Where to write the result; may be ``v`` itself.

    Returns
    -------
    smoothed : ndarray of shape (..., d)
        ``A_sigma^{-1} v`` in the dtype of ``v``.
    """
    n_features = v.shape[-1]
    spectrum = np.fft.rfft(v, axis=-1)
    spectrum /= eigenvalues
    smoothed = np.fft.irfft(spectrum, n=n_features, axis=-1)
    if out is None:
        return smoothed.astype(v.dtype, copy=False)
    out[...] = smoothed
    return out


def smoothing_gamma(n_features, sigma):
    """The paper's gamma: mean of 1 / lambda_i over the ``d`` eigenvalues.

    Wang et al., "DP-LSSGD", Proposition 1: the variance of the
    smoothed Gaussian noise is gamma times that of the raw noise.

    Parameters
    ----------
    n_features : int
        Dimension ``d``.
    sigma : float
        Smoothing strength.

    Returns
    -------
    gamma : float
        ``(1/d) sum_{i=1..d} 1 / (1 + 2 sigma - 2 sigma cos(2 pi i / d))``.
    """
    i = np.arange(1, n_features + 1, dtype=np.float64)
    eigenvalues = 1.0 + 2.0 * sigma - 2.0 * sigma * np.cos(2.0 * np.pi * i / n_features)
    return float(np.mean(1.0 / eigenvalues))


def smoothing_beta(n_features, sigma):
    """The paper's beta: mean of 1 / lambda_i^2 (Wang et al., "DP-LSSGD", Proposition 2).

    Parameters
    ----------
    n_features : int
        Dimension ``d``.
    sigma : float
        Smoothing strength.

    Returns
    -------
    beta : float
        ``(1/d) sum_{i=1..d} 1 / (1 + 2 sigma - 2 sigma cos(2 pi i / d))^2``.
    """
    i = np.arange(1, n_features + 1, dtype=np.float64)
    eigenvalues = 1.0 + 2.0 * sigma - 2.0 * sigma * np.cos(2.0 * np.pi * i / n_features)
    return float(np.mean(1.0 / eigenvalues**2))


def smoothing_gamma_closed_form(n_features, sigma):
    """Proposition 1 of Wang et al., "DP-LSSGD": gamma in closed form.

    ``gamma = (1 + w^d) / ((1 - w^d) sqrt(4 sigma + 1))`` with
    ``w = (2 sigma + 1 - sqrt(4 sigma + 1)) / (2 sigma)``.

    Parameters
    ----------
    n_features : int
        Dimension ``d``.
    sigma : float
        Smoothing strength, ``sigma > 0``.

    Returns
    -------
    gamma : float
    """
    if sigma <= 0:
        raise ValueError(f"sigma must be > 0 for the closed form, got {sigma!r}.")
    root = np.sqrt(4.0 * sigma + 1.0)
    w = (2.0 * sigma + 1.0 - root) / (2.0 * sigma)
    w_d = w**n_features
    return float((1.0 + w_d) / ((1.0 - w_d) * root))
