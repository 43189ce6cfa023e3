"""A search's trial on a Dask array: trained and scored on the cluster, nothing gathered.

The trial's training rows are selected from X's partitions by the search's
secret split (the indices travel to the cluster, as the fit's sampling seeds
do) and trained on there by the estimator's Dask path; its validation rows
are predicted and scored partition by partition, on the workers, and only
the sum of the per-row scores (one number, the quantity the search adds its
noise to) comes back to the client.
"""

import time

import numpy as np

from .._backends import check_cluster_network

__all__ = ["check_dask_search_input", "fit_trial_on_cluster"]


def check_dask_search_input(estimator, n_jobs):
    """Refuse what a search cannot run on the cluster without gathering rows or exposing them.

    A cluster reached in plaintext over a network not declared trusted is
    refused (:func:`~sklearn_dplssgd._backends.check_cluster_network`): the
    trials' noise-free sums, and the search's score sums, would cross it.

    Parameters
    ----------
    estimator : the search's estimator
    n_jobs : int or None
        The search's ``n_jobs``: trials on a cluster run one after the other
        (the cluster parallelizes each), never in other local processes that
        would compute the rows without the cluster's client.
    """
    from sklearn.pipeline import Pipeline

    if isinstance(estimator, Pipeline):
        raise TypeError(
            "DPRandomizedSearch on Dask input searches an estimator, not a Pipeline "
            "(its steps would compute the rows on the client): transform X first.")
    if n_jobs not in (None, 1):
        raise ValueError(
            "n_jobs must be None or 1 for a search on Dask input: each trial trains "
            "on the cluster, one after the other.")
    check_cluster_network()


def _block_scores(X_block, y_block, model, per_row_scores, scoring, bound):
    """Per-row scores of one partition's validation rows (run on its worker)."""
    if X_block.shape[0] == 0:
        return np.zeros(0)
    return per_row_scores(scoring, y_block, model.predict(X_block), bound)


def fit_trial_on_cluster(estimator, X, y, train, validation, scoring, bound, per_row_scores):
    """Fit one trial on its training rows of ``X``; return the model and its score sum.

    Parameters
    ----------
    estimator : estimator
        The trial's estimator (its Dask path trains on the partitions).
    X : dask.array.Array of shape (n_samples, d)
        One chunk along the columns.
    y : dask.array.Array of shape (n_samples,)
        Chunked as X's rows.
    train, validation : ndarray of int64
        Sorted row indices of the trial's split.
    scoring : str
    bound : float or None
    per_row_scores : callable
        The search's per-row score ``(scoring, y_true, y_pred, bound)``.

    Returns
    -------
    model, total, fit_time
    """
    import dask.array as da

    started = time.perf_counter()
    model = estimator.fit(X[train], y[train])
    total = 0.0
    if len(validation):
        X_validation, y_validation = X[validation], y[validation]
        scores = da.blockwise(
            _block_scores, "i", X_validation, "ij", y_validation, "i",
            model=model, per_row_scores=per_row_scores, scoring=scoring, bound=bound,
            dtype=np.float64, concatenate=True)
        # The one number that leaves the cluster: the sum of the per-row scores.
        total = float(scores.sum().compute())
    return model, total, time.perf_counter() - started
