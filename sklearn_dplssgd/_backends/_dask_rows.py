"""Dask collections as Dask arrays of rows, from their metadata only.

A Dask DataFrame (or Series) becomes a Dask array; a NumPy array given
beside a Dask X becomes a Dask array chunked as X's rows. Nothing here
computes a value: at most a DataFrame's partition lengths, when the caller
needs the number of rows.
"""

import math

import numpy as np

from ._dask import is_dask_collection

__all__ = ["UNKNOWN_CHUNKS_MESSAGE", "as_dask_array", "has_unknown_sizes"]

UNKNOWN_CHUNKS_MESSAGE = (
    "{name} has unknown chunk sizes (nan), so its number of rows, a public quantity "
    "that fixes the sample rate and the number of steps, is not known. Call "
    "{name}.compute_chunk_sizes() (or to_dask_array(lengths=True) on a DataFrame) "
    "before the fit."
)

UNALIGNED_ROWS_MESSAGE = (
    "{name} cannot be lined up with the partitions of X, whose chunk sizes along the "
    "rows are unknown (nan): give {name} as a Dask array or Series partitioned as X, "
    "or call X.compute_chunk_sizes() first."
)


def has_unknown_sizes(sizes):
    """Whether a tuple of chunk sizes holds an unknown one (nan)."""
    return any(math.isnan(size) for size in sizes)


def as_dask_array(value, name, rows_like=None, lengths=True):
    """A Dask array from a Dask array, DataFrame or Series (or a NumPy array, with ``rows_like``).

    Parameters
    ----------
    value : Dask array, DataFrame or Series, array-like or None
    name : str
        The parameter's name, for the messages (``"X"`` must have numeric
        columns).
    rows_like : dask.array.Array or None, default=None
        X: an array-like ``value`` is chunked as its rows (whose sizes must
        then be known); None refuses anything but a Dask collection.
    lengths : bool, default=True
        Whether the row chunks' sizes must be known: a DataFrame's partition
        lengths are then computed (counts only), and an array with unknown
        sizes is refused. Blockwise prediction does without them.

    Returns
    -------
    dask.array.Array or None
    """
    import dask.array as da

    if value is None:
        return None
    if hasattr(value, "to_dask_array"):
        # A Dask DataFrame comes with pandas, whose test takes its extension dtypes.
        from pandas.api.types import is_numeric_dtype

        if name == "X" and not all(is_numeric_dtype(kind) for kind in value.dtypes):
            raise TypeError(
                "A Dask DataFrame X must have numeric columns only: encode the others "
                "first (for example with DPOneHotEncoder's public categories).")
        # The partitions' lengths: the row count, public (it sets q and T).
        value = value.to_dask_array(lengths=True if lengths else None)
    elif not is_dask_collection(value):
        if rows_like is None:
            raise TypeError(f"{name} must be a Dask array or DataFrame.")
        if has_unknown_sizes(rows_like.chunks[0]):
            raise ValueError(UNALIGNED_ROWS_MESSAGE.format(name=name))
        value = np.asarray(value)
        chunks = (rows_like.chunks[0],) + tuple((size,) for size in value.shape[1:])
        return da.from_array(value, chunks=chunks)
    if not isinstance(value, da.Array):
        raise TypeError(f"{name} must be a Dask array, DataFrame or Series.")
    if lengths and value.ndim and has_unknown_sizes(value.chunks[0]):
        raise ValueError(UNKNOWN_CHUNKS_MESSAGE.format(name=name))
    return value
