"""The audit loop: many seeded fits without and with the canary, scored."""

import dataclasses
import numbers
import time

import numpy as np
import scipy.sparse as sp
from sklearn.base import clone, is_classifier

from .._training import nominal_batch_size
from ._canary import (
    CanaryStatistic, auto_canary, canary_direction, make_canary_dataset, smoothing_strength,
)
from ._fits import append_label, check_estimator, seeded_fit, steps_on_targets_as_given
from ._result import audit_scores
from ._statistics import check_confidence

__all__ = ["audit_epsilon"]


def _background(estimator, X, y, random_state):
    """Dense ``(X, y)``, by default ``batch_size - 1`` rows: with the canary, one full batch.

    A sample rate of 1 on both data sets is the strongest final-model audit
    (no subsampling hides the canary).
    """
    if X is None:
        n_samples = max(nominal_batch_size(estimator.batch_size) - 1, 2)
        classes = estimator.get_params().get("classes")
        X, y, _, _ = make_canary_dataset(
            n_samples, 5, task="classification" if is_classifier(estimator) else "regression",
            classes=np.unique(np.asarray((0, 1) if classes is None else classes)),
            random_state=random_state)
    if sp.issparse(X):
        raise TypeError(
            "audit_epsilon needs dense background rows X: it appends the canary "
            "row and finds its direction with an SVD of X. The audit measures the "
            "mechanism, which is the same for sparse rows; pass X.toarray() (a "
            "background of about batch_size rows is enough)."
        )
    X = np.asarray(X)
    # float32 data keeps float32 training; anything else becomes float64.
    X = np.ascontiguousarray(X, dtype=X.dtype if X.dtype == np.float32 else np.float64)
    y = np.asarray(y)
    if X.ndim != 2 or y.shape != (X.shape[0],):
        raise ValueError(f"X must be 2-D and y 1-D with as many rows; got {X.shape} and {y.shape}.")
    return X, y


def _neighbouring_pair(estimator, X, y, canary):
    """``(D, D')`` and the canary's statistic; the size and labels of D' are declared if not.

    Under replace-one, D holds the mirrored canary ``(-x, y)``: the two rows'
    clipped gradients differ by the full ``2 C``.
    """
    if estimator.neighboring == "add_remove" and estimator.public_n_samples is None:
        estimator.set_params(public_n_samples=X.shape[0] + 1)
    classes = None
    if is_classifier(estimator):
        classes = estimator.classes
        if classes is None:
            label = None if canary is None else canary[1]
            classes = y if label is None else append_label(y, label)
        classes = np.unique(np.asarray(classes))
        estimator.set_params(classes=classes)
    if canary is None:
        x_canary, y_canary = auto_canary(estimator, X, y, classes)
    else:
        x_canary, y_canary = np.asarray(canary[0], dtype=np.float64), canary[1]
        if x_canary.shape != (X.shape[1],):
            raise ValueError(f"x_canary must have shape ({X.shape[1]},); got {x_canary.shape}.")
    direction, push, _, _ = canary_direction(estimator, x_canary, y_canary, classes)
    statistic = CanaryStatistic(direction, push,
                                smoothing_strength(estimator, x_canary.shape[0]))
    with_canary = (np.ascontiguousarray(np.vstack([X, x_canary.astype(X.dtype)])),
                   append_label(y, y_canary))
    if estimator.neighboring == "replace_one":
        X = np.ascontiguousarray(np.vstack([X, -x_canary.astype(X.dtype)]))
        y = append_label(y, y_canary)
    return (X, y), with_canary, statistic


def _fit_scores(estimator, X, y, statistic, seeds):
    """Fit a fresh clone per seed and score it; also return the last model."""
    scores = np.empty(len(seeds))
    for i, seed in enumerate(seeds):
        model = seeded_fit(estimator, seed, X, y)
        scores[i] = statistic(model)
    return scores, model


def _audit_of_runs(estimator, without, with_canary, statistic, seeds, confidence):
    """Fit and score ``len(seeds) / 2`` runs on each data set; bound epsilon from the scores."""
    n_runs = len(seeds) // 2
    start = time.perf_counter()
    scores_without, fitted_without = _fit_scores(estimator, *without, statistic, seeds[:n_runs])
    scores_with, fitted_with = _fit_scores(estimator, *with_canary, statistic, seeds[n_runs:])
    seconds_per_fit = (time.perf_counter() - start) / (2 * n_runs)
    # The seeded fits report inf: the claim is what a private fit of each data
    # set would report (equal under add/remove, whose public_n_samples is declared).
    mechanism, settings = estimator._release_mechanism(), estimator._fit_settings()
    claimed = max(mechanism.claimed_epsilon(settings, fitted, X.shape[0])
                  for fitted, (X, _) in ((fitted_without, without), (fitted_with, with_canary)))
    result = audit_scores(scores_without, scores_with, delta=float(fitted_with.delta_),
                          claimed_epsilon=claimed, confidence=confidence)
    return dataclasses.replace(
        result, estimator_name=type(estimator).__name__,
        noise_multiplier=float(fitted_with.noise_multiplier_),
        sample_rate=float(fitted_with.sample_rate_), n_steps=int(fitted_with.n_steps_),
        seconds_per_fit=seconds_per_fit)


def audit_epsilon(estimator, X=None, y=None, *, canary=None, n_runs=1000, confidence=0.95,
                  random_state=None):
    """Audit the differential privacy of a configured estimator by training it many times.

    Fits ``n_runs`` clones of ``estimator`` on a background data set D and
    ``n_runs`` on D plus one canary row, each with its own seed, scores every
    model with :func:`canary_score`, and bounds epsilon from below with
    :func:`audit_scores`. Under ``neighboring="replace_one"`` the two data
    sets have the same size: D plus the mirrored canary ``(-x, y)`` against
    D plus the canary ``(x, y)``.

    Parameters
    ----------
    estimator : DPLSSGDClassifier or DPLSSGDRegressor
        The configuration to audit (cloned, ``verbose=0``). Each run is a
        ``reproducible=True`` fit with its own seed; the claim is the epsilon
        of a private fit. Undeclared ``public_n_samples`` (add/remove) and
        ``classes`` are those of D plus the canary; a regressor without
        ``target_bounds`` trains on the targets as given.
    X : array-like of shape (n_samples, n_features), default=None
        Background data D, dense. By default, ``batch_size - 1`` rows from
        :func:`make_canary_dataset` (5 features, one of them zero), so that
        with the canary every step uses the full batch.
    y : array-like of shape (n_samples,), default=None
        Background targets; required with ``X``.
    canary : tuple (x_canary, y_canary), default=None
        The row that is added. By default it points where the background is
        smallest, with the last class or a target beyond any prediction, and
        a size tuned so that its clipped gradient keeps the full clip norm.
    n_runs : int, default=1000
        Fits on each data set: half choose the threshold, half bound the
        error rates. Thousands are needed for bounds close to the truth.
    confidence : float, default=0.95
        Confidence level of the bounds.
    random_state : int, numpy.random.SeedSequence or None, default=None
        Seeds the background (when generated) and the per-run seeds.

    Returns
    -------
    result : AuditResult
        The bounds, the attack's rates on held-out runs, the raw scores, the
        claimed epsilon and the mechanism's settings.

    Examples
    --------
    >>> from sklearn_dplssgd import DPLSSGDRegressor
    >>> from sklearn_dplssgd.audit import audit_epsilon
    >>> reg = DPLSSGDRegressor(epsilon=1.0, batch_size=20, max_iter=5, sigma=1.0, alpha=0.0)
    >>> result = audit_epsilon(reg, n_runs=200, random_state=0)
    >>> result.epsilon_lower_bound <= result.claimed_epsilon
    True
    """
    check_estimator(estimator)
    check_confidence(confidence)
    if not (isinstance(n_runs, numbers.Integral) and n_runs >= 2):
        raise ValueError(f"n_runs must be an int >= 2; got {n_runs!r}.")
    if (X is None) != (y is None):
        raise ValueError("Pass both X and y (the background data), or neither.")
    if not isinstance(random_state, np.random.SeedSequence):
        random_state = np.random.SeedSequence(random_state)
    background_seed, run_seeds = random_state.spawn(2)
    estimator = steps_on_targets_as_given(clone(estimator).set_params(verbose=0))
    X, y = _background(estimator, X, y, np.random.default_rng(background_seed))
    without, with_canary, statistic = _neighbouring_pair(estimator, X, y, canary)
    seeds = run_seeds.generate_state(2 * n_runs, dtype=np.uint64)
    return _audit_of_runs(estimator, without, with_canary, statistic, seeds, confidence)
