"""The passes a fit makes once over every row of X, shared by the fit's threads.

Passes read every row before the first step: the check that ``X`` holds no
NaN or infinity, the rows' L2 norms that set each clip (and the feature norms
the clips divide by), the share of rows whose first gradient would be clipped
far down (a warning to the data holder), and whether float labels are all
integral (scikit-learn's label-type check then needs no count). Each is a
whole-array NumPy operation that releases the GIL, run on one thread it is
serial time that ``n_jobs`` cannot shorten (on a table of 500,000 rows of 100
features, about a third of a one-epoch fit). With ``n_threads > 1`` the rows
are cut into blocks that the calling thread and the steps' helper threads
take one at a time (:func:`._threads.blocks_on_threads`); a block a stalled
helper holds is computed again by the calling thread. The block boundaries
come from the array's shape and the thread count only, and a row's result
does not depend on the block it falls in: the outcome is that of one thread.
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

# Values per block of a shared pass: enough that taking a block (a Python
# call, a lock) is small beside reading it, few enough for several blocks
# per thread. With b blocks per thread and p threads, helpers that take a
# block each and never finish it cost the pass 1.5 / (b p) of its serial time
# beyond computing it alone: the calling thread's wait (blocks_on_threads).
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
    """``[function(start, stop) for each block of rows]``, the blocks on the threads.

    Parameters
    ----------
    function : callable
        ``function(start, stop)`` for the rows ``[start, stop)``; the same
        result on any thread, and a row's part of it independent of the
        block it falls in (so that the outcome is that of one block).
    n_rows : int
    n_threads : int, default=1
        One call over all the rows when 1.
    values_per_row : int, default=1
        What a row costs, in values read (its width for a pass over ``X``,
        a few for a per-row computation on several arrays): sets how many
        blocks are worth their overhead.

    Returns
    -------
    values : list
        One per block, in row order.
    """
    if n_threads <= 1 or n_rows < 2:
        return [function(0, n_rows)]
    bounds = _row_blocks(n_rows, n_rows * values_per_row, n_threads)
    return blocks_on_threads(lambda b: function(bounds[b], bounds[b + 1]),
                             len(bounds) - 1, n_threads)


def check_finite_rows(X, n_threads=1, estimator_name=None):
    """Raise scikit-learn's ``ValueError`` if ``X`` holds a NaN or an infinite value.

    The check scikit-learn's validation makes (``assert_all_finite``: the
    same message, which names the problem and never a value, and the same
    ``assume_finite`` setting), over blocks of rows on ``n_threads``
    threads; the stored entries of a sparse ``X``.

    Parameters
    ----------
    X : ndarray of shape (n_samples, d), or scipy sparse matrix
        Validated (a float dtype).
    n_threads : int, default=1
    estimator_name : str or None, default=None
        Named in the message about NaN (as scikit-learn does).
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
    """``||x_i||`` in float64 for dense or canonical CSR ``X``: what sets each clip.

    With ``n_threads > 1``, the blocks of rows (dense, or CSR: each block
    the rows' stored entries) are shared by that many threads (NumPy
    releases the GIL while it sums): a pass over every row, once a fit, that
    would otherwise run on one core. A row's norm does not depend on the
    block it falls in.
    """
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
    """``hypot(||x_i||, intercept_term)`` for every row, the blocks on ``n_threads`` threads.

    What each clip divides by (:func:`._clipping.compute_feature_norms`),
    once a fit; a row's value does not depend on the block it falls in.

    Parameters
    ----------
    row_norms : ndarray of shape (n_samples,), float64
    intercept_term : float
        1 with an intercept, else 0.
    n_threads : int, default=1

    Returns
    -------
    feature_norms : ndarray of shape (n_samples,), float64
    """
    if n_threads <= 1 or row_norms.shape[0] < 2:
        return compute_feature_norms(row_norms, intercept_term)
    norms = np.empty(row_norms.shape[0], dtype=np.float64)

    def fill(start, stop):
        norms[start:stop] = compute_feature_norms(row_norms[start:stop], intercept_term)

    on_row_blocks(fill, row_norms.shape[0], n_threads, _PER_ROW_OPERATIONS)
    return norms


def integral_labels(y, n_threads=1):
    """Whether ``y`` is a 1-D NumPy array of booleans, integers or integral floats.

    For such labels scikit-learn's ``type_of_target`` can only answer
    ``"binary"`` or ``"multiclass"`` (it tells the two apart by counting the
    distinct labels, a sort or a hash of every label): a classifier's check
    of its labels passes whatever their values, except for its warning about
    more distinct labels than half the rows, which needs their number. The
    floats' test is scikit-learn's own (each value equal to its conversion to
    int64 and back), over blocks of labels on ``n_threads`` threads.

    Parameters
    ----------
    y : object
        Validated labels.
    n_threads : int, default=1

    Returns
    -------
    integral : bool
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
    """The share of ``n_rows`` rows that ``selected`` picks, the blocks on the threads.

    Parameters
    ----------
    selected : callable
        ``selected(start, stop)``: a boolean array, one entry per row of the
        block ``[start, stop)``.
    n_rows : int
    n_threads : int, default=1

    Returns
    -------
    share : float
        In ``[0, 1]``; 0 for no rows.
    """
    if n_rows == 0:
        return 0.0
    # A few whole-array operations a row (residual, norm, product, test).
    counts = on_row_blocks(lambda start, stop: np.count_nonzero(selected(start, stop)),
                           n_rows, n_threads, _PER_ROW_OPERATIONS)
    return float(sum(counts)) / n_rows
