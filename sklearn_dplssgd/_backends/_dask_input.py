"""A fit's Dask input, validated from its metadata: no row is computed on the client.

A Dask array (or a Dask DataFrame of numeric columns) is trained on where its
partitions are (:class:`~sklearn_dplssgd._backends.DaskTraining`). What the
fit needs before training comes from public metadata only: the shape (n and
d, known without computing a value), the dtype, the columns' names. The
targets are encoded and the weights validated partition by partition, on the
workers, by the fit's targets value (see :mod:`._selection`); the label set is
the declared ``classes`` (reading it from the labels, as for NumPy input,
computes only the set of labels, with the same warning).
"""

import numpy as np

from ._dask_rows import as_dask_array

__all__ = ["dask_arrays", "dask_training_rows"]


def dask_arrays(X, y, sample_weight):
    """X, y and the weights as Dask arrays aligned along the rows, from metadata only.

    Parameters
    ----------
    X : dask.array.Array or dask.dataframe.DataFrame of shape (n_samples, d)
    y : Dask array or Series, or array-like of shape (n_samples,)
    sample_weight : Dask array, array-like, number or None

    Returns
    -------
    X : dask.array.Array of shape (n_samples, d), float64 or float32, one chunk of columns
    y : dask.array.Array of shape (n_samples,), chunked as X's rows
    sample_weight : dask.array.Array, number or None
    feature_names : ndarray of str or None
        A DataFrame's column names (public metadata).
    """
    columns = getattr(X, "columns", None)
    feature_names = None
    if columns is not None and all(isinstance(name, str) for name in columns):
        feature_names = np.asarray(list(columns), dtype=object)
    X = as_dask_array(X, "X")
    if X.ndim != 2:
        raise ValueError(f"X must be 2-d (n_samples, n_features); got {X.ndim} dimensions.")
    if X.dtype not in (np.float64, np.float32):
        if not (np.issubdtype(X.dtype, np.number) or X.dtype == bool):
            raise TypeError("X must hold numbers (a float, int or bool dtype).")
        X = X.astype(np.float64)
    if X.numblocks[1] > 1:
        # A row's norm and gradient need all its features in one block.
        X = X.rechunk({1: -1})
    y = as_dask_array(y, "y", rows_like=X)
    if y.ndim == 2 and y.shape[1] == 1:
        y = y.reshape(-1)
    y = _one_per_row(y, X, "y must be 1-d with one target per row")
    if sample_weight is not None and not np.isscalar(sample_weight):
        sample_weight = _one_per_row(
            as_dask_array(sample_weight, "sample_weight", rows_like=X), X,
            "sample_weight must be a 1-d array with one weight per row")
    return X, y, sample_weight, feature_names


def _one_per_row(values, X, requirement):
    """``values`` (1-d, one per row of X) chunked as X's rows, or a ValueError."""
    if values.ndim != 1 or values.shape[0] != X.shape[0]:
        raise ValueError(f"{requirement} of X ({X.shape[0]}); got shape {values.shape}.")
    return values if values.chunks[0] == X.chunks[0] else values.rechunk((X.chunks[0],))


def _encode_block(y, targets):
    return targets.encode(y)[0].astype(np.float64)


def _weigh_block(y, *weights, targets, scalar):
    sample_weight = weights[0] if weights else scalar
    row_weights = targets.weights(sample_weight, y)
    return np.ones(len(y)) if row_weights is None else row_weights


def dask_training_rows(estimator, targets, X, y, sample_weight, reset, feature_names=None):
    """The encoded targets and validated weights of a Dask fit, as lazy Dask arrays.

    Parameters
    ----------
    estimator : BaseDPLSSGD
    targets : ClassTargets or RangeTargets
        The fit's target encoding (see :mod:`._selection`).
    X, y, sample_weight :
        As :func:`dask_arrays` returns them.
    reset : bool
        Whether this fit sets ``n_features_in_`` (else it must match).
    feature_names : ndarray or None

    Returns
    -------
    y_encoded : dask.array.Array of shape (n_samples,), float64
    n_outputs : int
    weights : dask.array.Array of shape (n_samples,), float64, or None
    """
    n_features = int(X.shape[1])
    if reset:
        estimator.n_features_in_ = n_features
        if feature_names is not None:
            estimator.feature_names_in_ = feature_names
        elif "feature_names_in_" in estimator.__dict__:
            del estimator.feature_names_in_
    elif n_features != estimator.n_features_in_:
        raise ValueError(
            f"X has {n_features} features, but {type(estimator).__name__} is expecting "
            f"{estimator.n_features_in_} features as input.")
    if targets.labels is None and not targets.y_numeric:
        import dask.array as da

        # Only the set of labels reaches the client.
        targets.read_labels(np.asarray(da.unique(y).compute()))
    if targets.y_numeric and not (np.issubdtype(y.dtype, np.number) or y.dtype == bool):
        raise ValueError("y must hold numbers (a regressor's targets).")
    # The label set (or nothing, for a regressor) gives the number of outputs
    # and classes_, as for NumPy input.
    probe = targets.labels if targets.labels is not None else np.zeros(0)
    _, n_outputs = targets.encode(probe)
    # The same encoding and weighting run on each partition, on the workers.
    y_encoded = y.map_blocks(_encode_block, targets, dtype=np.float64)
    weighted = sample_weight is not None or targets.weights(None, probe) is not None
    weights = None
    if weighted:
        scalar = sample_weight if np.isscalar(sample_weight) else None
        arrays = (y,) if scalar is not None or sample_weight is None else (y, sample_weight)
        weights = arrays[0].map_blocks(
            _weigh_block, *arrays[1:], targets=targets, scalar=scalar, dtype=np.float64)
    return y_encoded, n_outputs, weights
