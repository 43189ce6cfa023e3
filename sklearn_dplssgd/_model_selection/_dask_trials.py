"""A search's trial on a Dask array: trained and scored on the cluster, nothing gathered.

The secret split's indices travel to the cluster; only the sum of the
validation rows' scores (what the search adds its noise to) comes back.
"""

import time

import numpy as np

from .._backends import check_cluster_network

__all__ = ["check_dask_search_input", "fit_trial_on_cluster"]


def check_dask_search_input(estimator, n_jobs):
    """Refuse what a search cannot run on the cluster without gathering rows or exposing them.

    A Pipeline, ``n_jobs`` other than None or 1 (the trials run one after the
    other, each parallel on the cluster), and a plaintext network not
    declared trusted (the score sums would cross it) are refused.
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
    """``(model, score sum, fit time)`` of one trial on Dask ``X`` (one chunk of columns).

    ``train`` and ``validation`` are sorted row indices; ``per_row_scores``
    is the search's ``(scoring, y_true, y_pred, bound)``.
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
