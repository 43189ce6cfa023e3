"""The per-sample clip of the compiled kernels, fail-closed (Numba).

One sample's gradient of a linear model is ``r [x, 1]`` for its residual
``r`` (one entry per output), so clipping it to C is one scale factor:
:func:`clipped_residual` computes the clipped residual as it will be stored
in the parameters' dtype and checks the bound on the stored numbers. Every
gradient kernel (dense, BLAS, CSR) calls it; it is inlined into them (a call
per row passing arrays costs as much as the clip itself on a narrow row).
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
]

# The stored coefficients' norm may exceed its bound by this factor: the
# float64 evaluation of a norm is itself exact only to a few units of 2**-53
# (and fused multiply-adds change the last bit from one compiled variant to
# another). Rounding to float32 (2**-24) or up to a subnormal (up to 2x) is
# far above it and is corrected (see clipped_residual).
NORM_SLACK = 1.0 + 2.0 ** -48

# Largest and smallest normal magnitude of a clipped coefficient, per dtype.
COEFFICIENT_RANGE = {
    np.dtype(dtype): (float(np.finfo(dtype).max), float(np.finfo(dtype).smallest_normal))
    for dtype in (np.float32, np.float64)
}


@njit(cache=True, nogil=True, inline="always")
def _stored_norm(out):
    """``||out||`` in float64, without overflow: the norm of what will be added."""
    if out.shape[0] == 1:
        return abs(np.float64(out[0]))
    scale = 0.0
    for k in range(out.shape[0]):
        # A comparison, not the builtin max: the same result (a NaN never
        # wins), without compiling max's generic implementation (seconds of
        # the first fit).
        magnitude = abs(np.float64(out[k]))
        if magnitude > scale:
            scale = magnitude
    if scale == 0.0 or not math.isfinite(scale):
        return scale
    total = 0.0
    for k in range(out.shape[0]):
        ratio = np.float64(out[k]) / scale
        total += ratio * ratio
    return scale * math.sqrt(total)


@njit(cache=True, nogil=True, inline="always")
def _store_coefficients(values, factor, bound, largest, tiny, out):
    """``out = values * factor`` rounded to ``out``'s dtype; False if it cannot be kept.

    A coefficient whose magnitude, in float64, is below ``tiny`` (the dtype's
    smallest normal number) is stored as 0: it could round *up* to a
    subnormal, and a zero never raises the norm. A non-finite coefficient or
    one above ``largest`` makes the sample unusable.
    """
    for k in range(values.shape[0]):
        value = values[k] * factor
        magnitude = abs(value)
        if not magnitude <= largest:  # also NaN
            return False
        out[k] = value if magnitude >= tiny else 0.0
    return _stored_norm(out) <= bound * NORM_SLACK


@njit(cache=True, nogil=True, inline="always")
def clipped_residual(residual, feature_norm, clip_norm, weight, largest, tiny, out):
    """``out = w r min(1, C / (||r|| ||[x, 1]||))``, as stored, within ``w C``.

    Within ``w C`` up to ``NORM_SLACK`` (2**-48 relative), the float64
    evaluation of a norm.

    The sample's gradient is ``r [x, 1]``, so its norm is ``||r|| ||[x, 1]||``;
    ``feature_norm`` is ``||[x, 1]||`` (``||x||`` without an intercept), from
    :func:`feature_norm_of`.
    It is compared as ``||r|| > C / ||[x, 1]||`` and ``r / ||r||`` is formed
    before multiplying by ``C / ||[x, 1]||``: the product of the norms can
    overflow (a regression target of 1e200) and the combined factor underflow,
    which would drop a row that should have been clipped. The weight ``w``
    multiplies the *clipped* gradient (norm at most ``w C``; 1 unweighted).
    Compiled, and inlined into callers compiled, without reassociation for
    that reason.

    **The value that is used is the value whose norm was checked.** The
    coefficients are rounded to ``out``'s dtype (float32 for float32 input)
    and the bound is checked on the stored numbers, in float64: rounding may
    push a clipped coefficient over the bound (by an ulp for a normal number,
    by up to a factor 2 for one rounded up to the smallest subnormal). A
    coefficient below the dtype's smallest normal number ``tiny`` is stored
    as 0; a stored vector still over the bound is scaled down by the excess
    (and by four units of rounding more if rounding pushes it over again).

    The clip fails closed: a sample whose contribution cannot be kept within
    the bound in the parameters' dtype contributes nothing (a zero
    contribution never exceeds it). That is a non-finite residual
    (``NaN > bound`` is False, so it would otherwise skip clipping), a
    coefficient above ``largest`` (it would become ``inf`` when stored), or
    a clipped vector that two rescalings do not bring within the bound.
    """
    if residual.shape[0] == 1:
        residual_norm = abs(residual[0])
    else:
        residual_sq = 0.0
        for k in range(residual.shape[0]):
            residual_sq += residual[k] * residual[k]
        residual_norm = math.sqrt(residual_sq)
    kept = math.isfinite(residual_norm)
    if kept and feature_norm > 0.0:
        allowed = clip_norm / feature_norm
        bound = weight * allowed
        if residual_norm > allowed:
            # r / ||r|| first: the combined factor allowed / ||r|| may underflow.
            for k in range(residual.shape[0]):
                out[k] = 0.0
            kept = allowed >= tiny
            if kept:
                # In place (``residual`` is the caller's scratch buffer); the
                # factor w * allowed is applied as the coefficients are stored.
                for k in range(residual.shape[0]):
                    residual[k] = residual[k] / residual_norm
                kept = _store_within(residual, bound, bound, largest, tiny, out)
        else:
            kept = _store_within(residual, weight, bound, largest, tiny, out)
    elif kept:
        # x = 0 without an intercept: the gradient r [x, 1] is 0 whatever r.
        kept = _store_coefficients(residual, weight, math.inf, largest, tiny, out)
    if not kept:
        for k in range(residual.shape[0]):
            out[k] = 0.0


@njit(cache=True, nogil=True, inline="always")
def feature_norm_of(row_norms, feature_norms, i, intercept_term):
    """``||[x_i, 1]||`` (``||x_i||`` without an intercept) in float64.

    From ``feature_norms`` when a fit computed them once
    (:func:`compute_feature_norms`), else from the row norm: ``hypot`` costs
    about 20 ns, as much as the rest of a narrow row's clip.
    """
    if feature_norms.shape[0] > 0:
        return feature_norms[i]
    return math.hypot(row_norms[i], intercept_term)


@njit(cache=True, nogil=True)
def compute_feature_norms(row_norms, intercept_term):
    """``hypot(||x_i||, intercept_term)`` for every row: what each clip divides by."""
    norms = np.empty(row_norms.shape[0], dtype=np.float64)
    for i in range(row_norms.shape[0]):
        norms[i] = math.hypot(row_norms[i], intercept_term)
    return norms


@njit(cache=True, nogil=True, inline="always")
def _store_within(values, factor, bound, largest, tiny, out):
    """Store ``factor * values`` in ``out`` with ``||out|| <= bound``; False if impossible.

    Shrinks the stored vector where rounding to ``out``'s dtype overshoots.
    """
    if _store_coefficients(values, factor, bound, largest, tiny, out):
        return True
    stored = _stored_norm(out)
    if not math.isfinite(stored) or stored == 0.0:
        return False
    # Rounding overshot by an ulp or so: scale down by the excess, then, if
    # rounding overshoots again, by a few units of the dtype's rounding error.
    shrink = bound / stored
    for attempt in range(2):
        for k in range(out.shape[0]):
            values_k = np.float64(out[k]) * shrink
            out[k] = values_k if abs(values_k) >= tiny else 0.0
        if _stored_norm(out) <= bound * NORM_SLACK:
            return True
        shrink = 1.0 - 4.0 * np.finfo(out.dtype).eps
    return False
