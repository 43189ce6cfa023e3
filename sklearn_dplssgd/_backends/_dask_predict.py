"""Predictions and scores of a fitted model on Dask input: blockwise, where the rows are.

The fitted weights (public) travel to the workers; the rows never come back.
Each partition is predicted by the model's own in-memory method, giving a lazy
Dask array aligned with X's rows; a score brings back only a few sums per
partition. The method first runs on the client on one row of zeros shaped by
X's public metadata, which checks the width and feature names and tells the
output's shape and dtype.
"""

import copy
import warnings

import numpy as np
from sklearn.exceptions import UndefinedMetricWarning
from sklearn.metrics import accuracy_score
from sklearn.utils import check_array

from .._utils import validate_hiding_values
from ._dask_rows import as_dask_array, has_unknown_sizes

__all__ = ["predict_blockwise", "score_blockwise"]

UNKNOWN_COLUMNS_MESSAGE = (
    "X has unknown chunk sizes (nan) along its columns, so its number of features is "
    "not known: give X with known column chunks (for example by "
    "X.compute_chunk_sizes())."
)


def _probe(X_frame, X):
    """One row of zeros with X's public metadata: width, dtype and column names."""
    if hasattr(X_frame, "columns"):
        import pandas as pd

        return pd.DataFrame(np.zeros((1, len(X_frame.columns))),
                            columns=X_frame.columns).astype(dict(X_frame.dtypes))
    return np.zeros((1, X.shape[1]), dtype=X.dtype)


def _rows(X_frame, lengths=False):
    """X as a Dask array of whole rows (one chunk of columns), from metadata only."""
    # A DataFrame's partition lengths are counted only where ``lengths`` asks;
    # an array keeps its chunks (unknown sizes along the rows are fine here).
    X = as_dask_array(X_frame, "X", lengths=lengths and hasattr(X_frame, "to_dask_array"))
    if X.ndim != 2:
        raise ValueError(f"X must be 2-d (n_samples, n_features); got {X.ndim} dimensions.")
    if has_unknown_sizes(X.chunks[1]):
        raise ValueError(UNKNOWN_COLUMNS_MESSAGE)
    if X.numblocks[1] > 1:
        # A row's prediction needs all its features in one block.
        X = X.rechunk({1: -1})
    return X


def _worker_model(model):
    """A copy of the model without ``feature_names_in_`` (the probe checked the names)."""
    worker_model = copy.copy(model)
    vars(worker_model).pop("feature_names_in_", None)
    return worker_model


def _predict_block(X_block, model, method, empty):
    if X_block.shape[0] == 0:
        return empty
    return getattr(model, method)(X_block)


def predict_blockwise(model, method, X_frame):
    """``model.<method>`` on every partition of ``X_frame``, on its worker: a lazy Dask array.

    Row chunks of ``X_frame`` (array or DataFrame) may have unknown sizes,
    column chunks may not; nothing is computed.
    """
    X = _rows(X_frame)
    # On the client, on zeros: the width and names checked, the output's form known.
    template = getattr(model, method)(_probe(X_frame, X))
    empty = np.empty((0,) + template.shape[1:], dtype=template.dtype)
    arguments = {"model": _worker_model(model), "method": method, "empty": empty,
                 "dtype": template.dtype}
    if template.ndim == 1:
        return X.map_blocks(_predict_block, drop_axis=1, chunks=(X.chunks[0],), **arguments)
    return X.map_blocks(_predict_block, chunks=(X.chunks[0], template.shape[1:]),
                        **arguments)


def _row_weights(sample_weight, n_rows):
    if sample_weight is None:
        return np.ones(n_rows)
    return validate_hiding_values(
        {"sample_weight": sample_weight}, check_array, np.broadcast_to(
            np.asarray(sample_weight, dtype=float), (n_rows,)),
        ensure_2d=False, dtype=np.float64, ensure_min_samples=0, input_name="sample_weight")


def _accuracy_sums(y_true, y_pred, weights):
    """The weight of the correct predictions and the total weight of a block."""
    correct = validate_hiding_values(
        {"y": y_true}, accuracy_score, y_true, y_pred, normalize=False, sample_weight=weights)
    return np.array([float(correct), float(weights.sum())])


def _accuracy(sums):
    correct, total = sums.sum(axis=0)
    if total == 0:
        raise ValueError("The sample weights are all zero.")
    return float(correct / total)


def _r2_sums(y_true, y_pred, weights):
    """A block's total weight, weighted target mean, centred sum of squares, error and rows."""
    y_true = validate_hiding_values(
        {"y": y_true}, check_array, y_true, ensure_2d=False, dtype=np.float64,
        input_name="y")
    total = float(weights.sum())
    mean = float(weights @ y_true / total) if total > 0 else 0.0
    spread = float(weights @ (y_true - mean) ** 2)
    error = float(weights @ (y_true - y_pred) ** 2)
    return np.array([total, mean, spread, error, float(y_true.shape[0])])


def _r2(sums):
    # The blocks' centred sums combined pairwise (Chan, Golub and LeVeque's
    # update): no cancellation from raw second moments.
    n_rows = int(sums[:, 4].sum())
    if n_rows == 0:
        raise ValueError("Found array with 0 sample(s): there are no rows to score.")
    if n_rows == 1:
        # As scikit-learn's r2_score: undefined on one row (whatever its weight).
        warnings.warn("R^2 score is not well-defined with less than two samples.",
                      UndefinedMetricWarning, stacklevel=4)
        return float("nan")
    total, mean, spread, error = 0.0, 0.0, 0.0, 0.0
    for block_total, block_mean, block_spread, block_error, _ in sums:
        if block_total == 0:
            error += block_error
            continue
        combined = total + block_total
        delta = block_mean - mean
        mean += delta * block_total / combined
        spread += block_spread + delta ** 2 * total * block_total / combined
        total, error = combined, error + block_error
    if total == 0:
        raise ValueError("The sample weights are all zero.")
    if spread == 0:
        # scikit-learn's r2_score for constant targets.
        return 1.0 if error == 0 else 0.0
    return float(1.0 - error / spread)


#: What a score adds up on each partition (how many sums), and how the client
#: combines the partitions' sums.
SCORE_SUMS = {"accuracy": (_accuracy_sums, 2, _accuracy), "r2": (_r2_sums, 5, _r2)}


def _score_block(X_block, y_block, *weights, model, block_sums, n_sums, scalar_weight):
    if y_block.shape[0] != X_block.shape[0]:
        raise ValueError(
            "Found input variables with inconsistent numbers of samples: "
            f"[{X_block.shape[0]}, {y_block.shape[0]}]")
    weights = _row_weights(weights[0] if weights else scalar_weight, X_block.shape[0])
    if X_block.shape[0] == 0:
        return np.zeros((1, n_sums))
    return block_sums(y_block, model.predict(X_block), weights)[None, :]


def score_blockwise(model, X_frame, y, sample_weight, metric):
    """A score of ``model`` on Dask rows from each partition's sums: one float.

    ``y`` and ``sample_weight`` (also a number) may be Dask or in memory;
    ``metric`` is a key of ``SCORE_SUMS``.
    """
    import dask.array as da

    from ._dask import is_dask_collection

    if y is None:
        raise ValueError("score needs the true targets y.")
    block_sums, n_sums, combine = SCORE_SUMS[metric]
    scalar_weight = sample_weight if np.isscalar(sample_weight) else None
    weight_array = None if scalar_weight is not None else sample_weight
    # The partitions' lengths are needed only to cut a NumPy y or weights as X.
    lengths = any(value is not None and not is_dask_collection(value)
                  for value in (y, weight_array))
    X = _rows(X_frame, lengths=lengths)
    # The width and names checked on the client, before anything is scheduled.
    model.predict(_probe(X_frame, X))
    aligned = []
    for name, value in (("y", y), ("sample_weight", weight_array)):
        if value is None:
            continue
        value = as_dask_array(value, name, rows_like=X, lengths=False)
        if value.ndim == 2 and value.shape[1] == 1:
            value = value.reshape(-1)
        if value.ndim != 1:
            raise ValueError(f"{name} must be 1-d; got shape {value.shape}.")
        if value.chunks[0] != X.chunks[0] and value.shape[0] == X.shape[0] and (
                not has_unknown_sizes(value.chunks[0] + X.chunks[0])):
            value = value.rechunk((X.chunks[0],))
        if value.numblocks[0] != X.numblocks[0]:
            raise ValueError(
                f"{name} must have one value per row of X, in partitions that line "
                "up with X's (the same number of rows in each).")
        aligned.append(value)
    arrays = [X, "ij"] + [part for value in aligned for part in (value, "i")]
    sums = da.blockwise(
        _score_block, "ij", *arrays, model=_worker_model(model), block_sums=block_sums,
        n_sums=n_sums, scalar_weight=scalar_weight, dtype=np.float64, concatenate=True,
        adjust_chunks={"i": 1, "j": n_sums})
    # Only the partitions' sums (a few numbers each) reach the client.
    return combine(np.asarray(sums.compute()))
