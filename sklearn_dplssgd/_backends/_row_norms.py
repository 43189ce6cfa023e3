"""The rows' L2 norms that set each clip, computed once per fit (NumPy, any namespace).

A norm that came out too small would let the row's gradient escape the clip;
one that overflows is ``inf`` and the row contributes nothing. So the squares
are summed in a wide dtype, and the rows whose sum overflowed or came close to
underflowing are summed again divided by their largest absolute entry. Plain
array operations: a Numba kernel would add its compilation to a first fit.
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

    No branch on the values (no host synchronisation on a device); a row with
    a NaN or infinite entry never gets a finite norm.
    """
    largest = xp.max(xp.abs(block), axis=1)
    safe = xp.where(largest > 0, largest, xp.ones_like(largest))
    scaled = block / safe[:, None]
    return largest * xp.sqrt(xp.sum(scaled * scaled, axis=1))


def row_norms(xp, X, dtype):
    """L2 norm of every row of ``X`` in ``dtype``, without overflow or underflow.

    By blocks of rows, so the copy in ``dtype`` stays small (module docstring).
    """
    smallest_safe = _smallest_safe(xp, dtype)
    n_rows, n_features = X.shape
    block_rows = max(1, _NORM_BLOCK_VALUES // max(1, n_features))
    blocks = []
    for start in range(0, n_rows, block_rows):
        rows = X[start:min(start + block_rows, n_rows), :]
        # Overflow is expected: the sum of squares is rescaled, and a norm
        # past the dtype's largest value is infinite, as it should be.
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
    """``||x_i||`` in float64 for every row of a dense NumPy array (see :func:`row_norms`)."""
    xp = _numpy_namespace()
    return np.asarray(row_norms(xp, X, xp.float64))


def compute_sparse_row_norms(X):
    """L2 norm of every row of a canonical CSR matrix, in float64.

    As :func:`row_norms` computes a dense row's. Only valid when no entry is
    stored twice (``_sparse.as_canonical_csr`` first).
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
