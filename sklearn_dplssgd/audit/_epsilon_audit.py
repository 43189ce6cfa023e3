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

# ---------------------------------------------------------------------------
# The audit
# ---------------------------------------------------------------------------


def _default_background(estimator, random_state):
    """Background of ``batch_size - 1`` rows: with the canary, one full batch.

    A sample rate of 1 on both data sets is the strongest setting for a
    final-model audit (no subsampling to hide the canary) and keeps the
    number of steps and the sample rate equal with and without the canary.
    """
    n_samples = max(nominal_batch_size(estimator.batch_size) - 1, 2)
    task = "classification" if is_classifier(estimator) else "regression"
    classes = (0, 1) if estimator.get_params().get("classes") is None else estimator.classes
    X, y, _, _ = make_canary_dataset(
        n_samples, 5, task=task, classes=np.unique(np.asarray(classes)), random_state=random_state
    )
    return X, y


def _fit_scores(estimator, X, y, statistic, seeds):
    """Fit a fresh clone per seed and score it; also return the last model."""
    scores = np.empty(len(seeds))
    for i, seed in enumerate(seeds):
        model = seeded_fit(estimator, seed, X, y)
        scores[i] = statistic(model)
    return scores, model


def _claimed_epsilon(estimator, model, n_rows):
    """The epsilon a non-reproducible fit of ``model``'s mechanism reports.

    The audit's own fits are seeded (``epsilon_`` is then ``inf``); the
    claim is what the same configuration states when fitted privately,
    recomputed from the configuration and the public settings the fit
    reports (its sensitivity and noise for output perturbation, its sample
    rate, steps and noise schedule for gradient perturbation).
    """
    return estimator._release_mechanism().claimed_epsilon(estimator._fit_settings(), model,
                                                          n_rows)


def audit_epsilon(
    estimator,
    X=None,
    y=None,
    *,
    canary=None,
    n_runs=1000,
    confidence=0.95,
    random_state=None,
):
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
        The configuration to audit (unfitted or fitted; it is cloned). Each
        run is a ``reproducible=True`` fit with its own seed (the models are
        thrown away, and seeding makes the audit repeatable); the claimed
        epsilon is the one the configuration reports when fitted privately.
        ``verbose`` is set to 0. Under add/remove adjacency without
        ``public_n_samples``, the size of D plus the canary is declared
        public. A regressor without ``target_bounds`` trains on the
        targets as given, without learning their range: the audit measures
        the steps, at the whole epsilon. Everything else is used as given.
        For a classifier without ``classes``, the label set of D plus the
        canary is declared, so that the label set itself does not reveal the canary.
    X : array-like of shape (n_samples, n_features), default=None
        Background data D, dense (sparse X is refused). By default,
        ``batch_size - 1`` rows from :func:`make_canary_dataset` (5 features,
        one of them zero), so that with the canary every step uses the full
        batch.
    y : array-like of shape (n_samples,), default=None
        Background targets; required with ``X``.
    canary : tuple (x_canary, y_canary), default=None
        The row that is added. By default it points along the feature
        direction in which the background is smallest (an all-zero column if
        there is one), has the last class as label (classification) or a
        target far beyond any prediction (regression), and its size is tuned
        to the estimator's noise scale so that its clipped gradient keeps
        pushing with the full clip norm.
    n_runs : int, default=1000
        Fits on each data set. Half of them choose the threshold, the other
        half bound the error rates; thousands are needed for bounds close to
        the truth.
    confidence : float, default=0.95
        Confidence level of the bounds.
    random_state : int, numpy.random.SeedSequence or None, default=None
        Seeds the background (when generated) and the per-run seeds, so an
        audit is reproducible; ``None`` draws fresh entropy.

    Returns
    -------
    result : AuditResult
        The bounds, the attack's true and false positive rates on held-out
        runs, the raw scores, the claimed epsilon, and the mechanism's
        settings.

    Notes
    -----
    The audit sees only the final coefficients, like a user of the released
    model. For a sample rate of 1 this loses nothing: the canary's coordinate
    of the un-smoothed weights is a sum of Gaussian noise plus the canary's
    pushes, and ``mu_lower_bound`` approaches the mechanism's true mu with
    enough runs. With Poisson subsampling (sample rate below 1) the final
    model hides in which steps the canary was used, and such black-box
    bounds stay far below the claimed epsilon even for a tight accountant.

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
    seed_sequence = (
        random_state if isinstance(random_state, np.random.SeedSequence)
        else np.random.SeedSequence(random_state)
    )
    background_seed, run_seeds = seed_sequence.spawn(2)
    estimator = steps_on_targets_as_given(clone(estimator).set_params(verbose=0))

    if X is None:
        X, y = _default_background(estimator, np.random.default_rng(background_seed))
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

    if estimator.neighboring == "add_remove" and estimator.public_n_samples is None:
        # Under add/remove the row count is private: the auditor declares the
        # size of the larger data set (D plus the canary) as public.
        estimator.set_params(public_n_samples=X.shape[0] + 1)
    classes = None
    if is_classifier(estimator):
        declared = estimator.classes
        label = None if canary is None else canary[1]
        classes = np.unique(np.asarray(declared)) if declared is not None else np.unique(
            append_label(y, label) if label is not None else y
        )
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
    X_with = np.ascontiguousarray(np.vstack([X, x_canary.astype(X.dtype)]))
    y_with = append_label(y, y_canary)
    if estimator.neighboring == "replace_one":
        # Neighbours of the same size: D plus the mirrored canary against D
        # plus the canary. The two rows' clipped gradients point opposite
        # ways along the canary's direction: the full 2 C of replace-one.
        X = np.ascontiguousarray(np.vstack([X, -x_canary.astype(X.dtype)]))
        y = append_label(y, y_canary)

    seeds = run_seeds.generate_state(2 * n_runs, dtype=np.uint64)
    start = time.perf_counter()
    scores_without, fitted_without = _fit_scores(estimator, X, y, statistic, seeds[:n_runs])
    scores_with, fitted_with = _fit_scores(estimator, X_with, y_with, statistic, seeds[n_runs:])
    seconds_per_fit = (time.perf_counter() - start) / (2 * n_runs)
    # The claim is the weaker of the two data sets' (under add/remove the
    # declared public_n_samples makes them equal).
    claimed = max(_claimed_epsilon(estimator, fitted_without, X.shape[0]),
                  _claimed_epsilon(estimator, fitted_with, X_with.shape[0]))
    result = audit_scores(
        scores_without, scores_with, delta=float(fitted_with.delta_),
        claimed_epsilon=claimed, confidence=confidence,
    )
    return dataclasses.replace(
        result,
        estimator_name=type(estimator).__name__,
        noise_multiplier=float(fitted_with.noise_multiplier_),
        sample_rate=float(fitted_with.sample_rate_),
        n_steps=int(fitted_with.n_steps_),
        seconds_per_fit=seconds_per_fit,
    )
