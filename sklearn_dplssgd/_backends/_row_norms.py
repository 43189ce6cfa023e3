"""The rows' L2 norms that set each clip, computed once per fit (NumPy, any namespace).

The gradient of sample i is ``r_i [x_i, 1]``: its norm, and so its clip, is
set by ``||x_i||``. A norm that came out too small would let the row's
gradient escape the clip (float32 rows of entries 2.5e-23, squared in
float32, did); a norm that overflows comes out ``inf``, and such a row
contributes nothing (clipped to zero, never kept whole). So the squares are
summed in a wide dtype (float32 entries squared in float64 can neither
underflow nor overflow), and the rows whose sum overflowed or came close to
underflowing are summed again divided by their largest absolute entry.

These are whole-array operations, not Numba kernels: a fit computes them
once, at memory speed either way, and a kernel would add its compilation
(about 0.4 s) to a fresh environment's first fit.
"""

import math

import numpy as np

__all__ = ["compute_row_norms", "compute_sparse_row_norms", "row_norms",
           "scaled_row_norms"]

# Values per block when the row norms are computed (bounds the wide copy and
# its temporaries to 32 MiB each).
_NORM_BLOCK_VALUES = 1 << 22


def _numpy_namespace():
    # NumPy through the array API (astype, concat, ... on every supported NumPy).
    from array_api_compat import numpy as numpy_namespace

    return numpy_namespace


def _smallest_safe(xp, dtype):
    """Above this a sum of squares in ``dtype`` has lost nothing that matters to underflow."""
    info = xp.finfo(dtype)
    return float(info.smallest_normal) / float(info.eps) ** 2


def _sum_of_squares(xp, rows, dtype):
    """Each row's sum of squares in ``dtype``."""
    if isinstance(rows, np.ndarray):
        # One pass, widening as it reads: no widened copy of the rows.
        return np.einsum("ij,ij->i", rows, rows, dtype=dtype)
    block = xp.astype(rows, dtype)
    return xp.sum(block * block, axis=1)


def _rescaled_norms(xp, rows, unsafe, norms, dtype):
    """``norms`` with the ``unsafe`` rows' recomputed, each divided by its largest entry."""
    if isinstance(rows, np.ndarray):
        # Only the flagged rows (often none, or a few rows of zeros).
        block = rows[unsafe].astype(dtype)
    else:
        block = xp.astype(rows, dtype)
    rescaled = scaled_row_norms(xp, block)
    if isinstance(rows, np.ndarray):
        norms[unsafe] = rescaled
        return norms
    return xp.where(unsafe, rescaled, norms)


def scaled_row_norms(xp, block):
    """Each row's L2 norm in ``block``'s dtype, the row divided by its largest entry first.

    Neither the squares of tiny entries (float32 squares of 1e-23 are 0)
    nor those of huge ones can underflow or overflow: the largest scaled
    entry is 1. A whole-array computation with no branch on the values (no
    host synchronisation on a device). A row with a NaN entry gets NaN, one
    with an infinite entry NaN or inf: never a finite norm.

    Parameters
    ----------
    xp : namespace
    block : array of shape (n, k), with k >= 1

    Returns
    -------
    norms : array of shape (n,)
    """
    largest = xp.max(xp.abs(block), axis=1)
    safe = xp.where(largest > 0, largest, xp.ones_like(largest))
    scaled = block / safe[:, None]
    return largest * xp.sqrt(xp.sum(scaled * scaled, axis=1))


def row_norms(xp, X, dtype):
    """L2 norm of every row of ``X`` in ``dtype``, without overflow or underflow.

    A plain sum of squares in ``dtype``, and for the rows whose sum
    overflowed or came close to underflowing, the sum of squares of the row
    divided by its largest absolute entry. Computed by blocks of rows, so the
    copy in ``dtype`` stays small; a row's norm does not depend on the block
    it falls in.

    Parameters
    ----------
    xp : namespace
    X : array of shape (n, d)
    dtype : dtype of xp
        float64 where the device has it.

    Returns
    -------
    norms : array of shape (n,), ``dtype``
    """
    smallest_safe = _smallest_safe(xp, dtype)
    n_rows, n_features = X.shape
    block_rows = max(1, _NORM_BLOCK_VALUES // max(1, n_features))
    blocks = []
    for start in range(0, n_rows, block_rows):
        rows = X[start:min(start + block_rows, n_rows), :]
        # Overflow is expected (NumPy-backed namespaces would warn about it):
        # of the sum of squares, handled by rescaling; and of a rescaled
        # norm past the dtype's largest value, which is infinite, as it is
        # (the hostile-input tests saw NumPy 2.0 warn there).
        with np.errstate(over="ignore"):
            total = _sum_of_squares(xp, rows, dtype)
            norms = xp.sqrt(total)
            unsafe = ~((total > smallest_safe) & (total < math.inf))
            if bool(xp.any(unsafe)) and n_features > 0:
                norms = _rescaled_norms(xp, rows, unsafe, norms, dtype)
        blocks.append(norms)
    if not blocks:
        return xp.zeros(0, dtype=dtype, device=getattr(X, "device", None))
    return xp.concat(blocks) if len(blocks) > 1 else blocks[0]


def compute_row_norms(X):
    """``||x_i||`` in float64 for every row of a dense NumPy array (see :func:`row_norms`).

    Parameters
    ----------
    X : ndarray of shape (n_samples, d), float64 or float32

    Returns
    -------
    norms : ndarray of shape (n_samples,), float64
    """
    xp = _numpy_namespace()
    return np.asarray(row_norms(xp, X, xp.float64))


def compute_sparse_row_norms(X):
    """L2 norm of every row of a canonical CSR matrix, in float64.

    The norm of the stored entries, computed as :func:`row_norms` computes a
    dense row's. Only valid when no entry is stored twice: pass X through
    ``_sparse.as_canonical_csr`` first.

    Parameters
    ----------
    X : scipy sparse CSR matrix or array of shape (n_samples, d)

    Returns
    -------
    norms : ndarray of shape (n_samples,), float64
    """
    n_rows = X.shape[0]
    counts = np.diff(X.indptr)
    row_of_entry = np.repeat(np.arange(n_rows), counts)
    values = np.asarray(X.data, dtype=np.float64)
    with np.errstate(over="ignore"):
        total = np.bincount(row_of_entry, weights=values * values, minlength=n_rows)
    norms = np.sqrt(total)
    unsafe = ~((total > _smallest_safe(np, np.float64)) & (total < math.inf)) & (counts > 0)
    if unsafe.any():
        largest = np.zeros(n_rows)
        np.maximum.at(largest, row_of_entry, np.abs(values))
        safe = np.where(largest > 0, largest, 1.0)
        scaled = values / safe[row_of_entry]
        scaled_total = np.bincount(row_of_entry, weights=scaled * scaled, minlength=n_rows)
        norms = np.where(unsafe, largest * np.sqrt(scaled_total), norms)
    return norms
