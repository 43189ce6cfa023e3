"""The passes a fit makes once over every row of X, shared by the fit's threads.

The finiteness check of ``X``, the rows' norms (and the feature norms the
clips divide by), the share of rows clipped far down, and whether float
labels are integral: whole-array NumPy operations that release the GIL, cut
into blocks of rows (from the shape and the thread count only) that
:func:`._threads.blocks_on_threads` shares. A row's result does not depend on
its block, so the outcome is that of one thread.
"""

import numpy as np
import scipy.sparse as sp
from sklearn import get_config
from sklearn.utils import assert_all_finite

from ._clipping import compute_feature_norms
from ._row_norms import compute_row_norms, compute_sparse_row_norms
from ._threads import blocks_on_threads

__all__ = ["check_finite_rows", "feature_norms_of", "integral_labels", "on_row_blocks",
           "row_norms_of", "share_of_rows"]

# Values per block of a shared pass: enough that taking a block is small
# beside reading it, few enough for several blocks per thread.
_BLOCK_VALUES = 1 << 18
_BLOCKS_PER_THREAD = 8
# What a per-row computation of a few whole-array operations on one number a
# row (targets, norms) counts as, in values read, when its blocks are cut.
_PER_ROW_OPERATIONS = 8


def _row_blocks(n_rows, n_values, n_threads):
    """Boundaries of the blocks of rows of a pass (from the shape and thread count only)."""
    n_blocks = min(n_rows, _BLOCKS_PER_THREAD * n_threads,
                   max(1, n_values // _BLOCK_VALUES))
    return np.linspace(0, n_rows, max(1, n_blocks) + 1).astype(np.int64)


def on_row_blocks(function, n_rows, n_threads=1, values_per_row=1):
    """``[function(start, stop) for each block of rows]`` in row order, the blocks on the threads.

    A row's part of ``function``'s result must not depend on its block.
    ``values_per_row`` (a row's cost in values read) sets how many blocks pay.
    """
    if n_threads <= 1 or n_rows < 2:
        return [function(0, n_rows)]
    bounds = _row_blocks(n_rows, n_rows * values_per_row, n_threads)
    return blocks_on_threads(lambda b: function(bounds[b], bounds[b + 1]),
                             len(bounds) - 1, n_threads)


def check_finite_rows(X, n_threads=1, estimator_name=None):
    """scikit-learn's ``assert_all_finite`` on ``X`` (a sparse X's stored entries), on threads.

    The same message (naming no value) and ``assume_finite`` setting.
    """
    if get_config()["assume_finite"]:
        # The setting is the calling thread's (scikit-learn keeps it per
        # thread): the helpers would not see it.
        return
    values = X.data if sp.issparse(X) else X

    def check(start, stop):
        assert_all_finite(values[start:stop], allow_nan=False, estimator_name=estimator_name,
                          input_name="X")

    on_row_blocks(check, values.shape[0], n_threads, values.size // max(1, values.shape[0]))


def row_norms_of(X, n_threads=1):
    """``||x_i||`` in float64 for dense or canonical CSR ``X`` (what sets each clip), on threads."""
    if n_threads <= 1 or X.shape[0] < 2:
        return compute_sparse_row_norms(X) if sp.issparse(X) else compute_row_norms(X)
    norms = np.empty(X.shape[0], dtype=np.float64)
    if sp.issparse(X):
        def norms_of(start, stop):
            # The block's rows as a CSR matrix over X's own arrays (no copy).
            first, last = X.indptr[start], X.indptr[stop]
            rows = sp.csr_matrix(
                (X.data[first:last], X.indices[first:last], X.indptr[start:stop + 1] - first),
                shape=(stop - start, X.shape[1]))
            return compute_sparse_row_norms(rows)
        values_per_row = max(1, X.nnz // X.shape[0])
    else:
        def norms_of(start, stop):
            return compute_row_norms(X[start:stop])
        values_per_row = X.shape[1]

    def fill(start, stop):
        # Each block writes its own rows (a block computed twice writes the
        # same values): no serial concatenation of the blocks afterwards.
        norms[start:stop] = norms_of(start, stop)

    on_row_blocks(fill, X.shape[0], n_threads, values_per_row)
    return norms


def feature_norms_of(row_norms, intercept_term, n_threads=1):
    """``hypot(||x_i||, intercept_term)`` for every row (what each clip divides by), on threads."""
    if n_threads <= 1 or row_norms.shape[0] < 2:
        return compute_feature_norms(row_norms, intercept_term)
    norms = np.empty(row_norms.shape[0], dtype=np.float64)

    def fill(start, stop):
        norms[start:stop] = compute_feature_norms(row_norms[start:stop], intercept_term)

    on_row_blocks(fill, row_norms.shape[0], n_threads, _PER_ROW_OPERATIONS)
    return norms


def integral_labels(y, n_threads=1):
    """Whether ``y`` is a 1-D array of booleans, integers or integral floats, on threads.

    Such labels are ``"binary"`` or ``"multiclass"`` for scikit-learn's
    ``type_of_target``, whose float test (round trip through int64) this is.
    """
    if not isinstance(y, np.ndarray) or y.ndim != 1 or y.dtype.kind not in "biuf":
        return False
    if y.dtype.kind != "f":
        return True

    def integral(start, stop):
        block = y[start:stop]
        with np.errstate(invalid="ignore"):
            return not bool((block != block.astype(np.int64).astype(block.dtype)).any())

    return all(on_row_blocks(integral, y.shape[0], n_threads, _PER_ROW_OPERATIONS // 2))


def share_of_rows(selected, n_rows, n_threads=1):
    """The share of ``n_rows`` rows (0 for none) that ``selected(start, stop)``, a mask, picks."""
    if n_rows == 0:
        return 0.0
    # A few whole-array operations a row (residual, norm, product, test).
    counts = on_row_blocks(lambda start, stop: np.count_nonzero(selected(start, stop)),
                           n_rows, n_threads, _PER_ROW_OPERATIONS)
    return float(sum(counts)) / n_rows
