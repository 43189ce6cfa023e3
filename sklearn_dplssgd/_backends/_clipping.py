"""The per-sample clip of the compiled kernels, fail-closed (Numba).

A sample's gradient is ``r [x, 1]``, so clipping it is one scale factor on the
residual ``r``; :func:`clipped_residual` checks the bound on the coefficients
as stored, and is inlined into every gradient kernel.
"""

import math

import numpy as np
from numba import njit

__all__ = [
    "COEFFICIENT_RANGE",
    "NORM_SLACK",
    "clipped_residual",
    "compute_feature_norms",
    "feature_norm_of",
    "scaled_norm",
]

# The stored coefficients' norm may exceed its bound by this factor: a float64
# norm is exact only to a few units of 2**-53 (fused multiply-adds included).
# Larger overshoots (float32 rounding, subnormals) are corrected.
NORM_SLACK = 1.0 + 2.0 ** -48

# Largest and smallest normal magnitude of a clipped coefficient, per dtype.
COEFFICIENT_RANGE = {
    np.dtype(dtype): (float(np.finfo(dtype).max), float(np.finfo(dtype).smallest_normal))
    for dtype in (np.float32, np.float64)
}


@njit(cache=True, nogil=True)
def scaled_norm(x):
    """``||x||`` in float64 without overflow or underflow: scaled by the largest entry."""
    scale = 0.0
    for k in range(x.shape[0]):
        # Not the builtin max: compiling its generic form costs seconds.
        magnitude = abs(np.float64(x[k]))
        if magnitude > scale:
            scale = magnitude
    if scale == 0.0 or not math.isfinite(scale):
        return scale
    total = 0.0
    for k in range(x.shape[0]):
        ratio = np.float64(x[k]) / scale
        total += ratio * ratio
    return scale * math.sqrt(total)


@njit(cache=True, nogil=True)
def _rounding_unit(largest):
    """The machine epsilon of the dtype whose largest finite number is ``largest``.

    A comparison: ``np.finfo`` in a kernel is slow to compile.
    """
    return 2.0 ** -23 if largest < 1e39 else 2.0 ** -52


@njit(cache=True, nogil=True, inline="always")
def clipped_residual(residual, feature_norm, clip_norm, weight, largest, tiny, out):
    """``out = w r min(1, C / (||r|| ||[x, 1]||))``, as stored, within ``w C``.

    ``feature_norm`` is ``||[x, 1]||`` (:func:`feature_norm_of`). The test is
    ``||r|| > C / ||[x, 1]||`` with ``r / ||r||`` formed first, so nothing
    overflows or underflows (hence no reassociation). Fails closed: any row
    the checked bound does not hold for is zeroed whole; the argument is in
    docs/privacy_argument.rst ("The value that is used is the value whose
    norm was checked").
    """
    n_outputs = residual.shape[0]
    if n_outputs == 1:
        residual_norm = abs(residual[0])
    else:
        residual_sq = 0.0
        for k in range(n_outputs):
            residual_sq += residual[k] * residual[k]
        residual_norm = math.sqrt(residual_sq)
    # NaN or negative: ``feature_norm > 0`` would be False and leave no bound.
    kept = math.isfinite(residual_norm) and feature_norm >= 0.0
    # Stored: factor * residual, within bound. x = 0 without an intercept:
    # the gradient r [x, 1] is 0 whatever r, so any finite r is kept whole.
    factor, bound = weight, math.inf
    if kept and feature_norm > 0.0:
        allowed = clip_norm / feature_norm
        bound = weight * allowed
        if residual_norm > allowed:
            # In place: ``residual`` is the caller's scratch buffer.
            kept = allowed >= tiny
            if kept:
                for k in range(n_outputs):
                    residual[k] = residual[k] / residual_norm
                factor = bound
    if kept:
        # Below the smallest normal, 0 (it could round up to a subnormal).
        for k in range(n_outputs):
            value = residual[k] * factor
            magnitude = abs(value)
            if not magnitude <= largest:  # also NaN
                kept = False
                break
            out[k] = value if magnitude >= tiny else 0.0
    if kept:
        stored = abs(np.float64(out[0])) if n_outputs == 1 else scaled_norm(out)
        if not stored <= bound * NORM_SLACK:
            # Rounding overshot: scale down by the excess, then by four units.
            kept = False
            if math.isfinite(stored) and stored > 0.0:
                shrink = bound / stored
                for attempt in range(2):
                    for k in range(n_outputs):
                        shrunk = np.float64(out[k]) * shrink
                        out[k] = shrunk if abs(shrunk) >= tiny else 0.0
                    if scaled_norm(out) <= bound * NORM_SLACK:
                        kept = True
                        break
                    shrink = 1.0 - 4.0 * _rounding_unit(largest)
    if not kept:
        # Every coefficient, also those a failed store already wrote.
        for k in range(n_outputs):
            out[k] = 0.0


@njit(cache=True, nogil=True, inline="always")
def feature_norm_of(row_norms, feature_norms, i, intercept_term):
    """``||[x_i, 1]||`` (``||x_i||`` without an intercept) in float64.

    From ``feature_norms`` when a fit computed them once, else from the row norm.
    """
    if feature_norms.shape[0] > 0:
        return feature_norms[i]
    return _hypot_of_norm(row_norms[i], intercept_term)


@njit(cache=True, nogil=True, inline="always")
def _hypot_of_norm(row_norm, intercept_term):
    """``hypot(row_norm, intercept_term)``, NaN for a negative row norm.

    ``hypot`` would make an invalid negative norm positive; NaN makes the clip
    drop the row.
    """
    if row_norm < 0.0:
        return math.nan
    return math.hypot(row_norm, intercept_term)


@njit(cache=True, nogil=True)
def compute_feature_norms(row_norms, intercept_term):
    """``hypot(||x_i||, intercept_term)`` for every row: what each clip divides by."""
    norms = np.empty(row_norms.shape[0], dtype=np.float64)
    for i in range(row_norms.shape[0]):
        norms[i] = _hypot_of_norm(row_norms[i], intercept_term)
    return norms
