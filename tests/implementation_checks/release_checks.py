"""Implementation checks of what one fit releases: the clip, the seeds, the
clones, the row count, an overflowing row."""

import math
import pickle

import numpy as np
from sklearn.base import clone

from sklearn_dplssgd._mechanisms import mechanism_named
from sklearn_dplssgd._training import nominal_batch_size
from sklearn_dplssgd._utils import public_row_count
from .common import (
    CLIP_TOLERANCE, CheckResult, adversarial_rows, declare_public_n, default_data, private_clone,
    quietly, set_existing,
)

__all__ = [
    "check_clipping",
    "check_clone_independence",
    "check_overflow_row",
    "check_row_count",
    "check_seed_replay",
]


def check_clipping(estimator, dtypes=(np.float32, np.float64)):
    """Per-sample clipping holds at the edges of floating point.

    For each adversarial row, one noise-free step (``epsilon=inf``,
    ``sigma=0``, ``alpha=0``, constant step 1, full batch) is taken from zero
    weights on that row alone; the weights after it are ``-1/b`` times the
    row's clipped gradient, so ``b ||weights|| / clip_norm`` must be at most 1,
    or, for a mechanism that rounds the clipped gradient onto a grid (the
    exact-noise mode), the bound its sensitivity argument states for the
    rounded row (its mechanism's ``noise_free_contribution_bound``). Each
    row's clip norm is ``clip_norm`` or a 64th of the row's norm, whichever is
    smaller, so that every row's gradient saturates it.

    Parameters
    ----------
    estimator : DPLSSGDClassifier or DPLSSGDRegressor
        The configuration (loss, clip norm, intercept) to check.
    dtypes : tuple of dtypes, default=(float32, float64)

    Returns
    -------
    CheckResult
        ``measured`` is the largest ratio of a clipped gradient's norm to
        ``clip_norm`` over the mechanism's bound (1 for a clip alone);
        ``limit`` is 1 plus the float rounding tolerance.
    """
    batch_size = 2
    worst = 0.0
    worst_case = ""
    mechanism = mechanism_named(estimator.get_params()["mechanism"])
    cases = [(dtype, row, target, fit_intercept)
             for dtype in dtypes
             for row, target in adversarial_rows(estimator, dtype)
             # Without an intercept the row norm alone sets the clip factor.
             for fit_intercept in (True, False)]
    for dtype, row, target, fit_intercept in cases:
        model = private_clone(estimator)
        # Targets reach the steps within [-1, 1] (a regressor's target range)
        # and a label's residual is at most 1, so a tiny row saturates the
        # clip only under a clip norm below its own norm: a 64th of it, so
        # that a norm taken many times too small still shows in full.
        row_norm = float(np.linalg.norm(row.astype(np.float64)))
        set_existing(
            model, epsilon=math.inf, sigma=0.0, alpha=0.0, learning_rate="constant",
            eta0=1.0, batch_size=batch_size, max_iter=1, public_n_samples=1,
            fit_intercept=fit_intercept, clip_norm=min(float(model.clip_norm), row_norm / 64),
        )
        y = np.asarray([target])
        fitted = quietly(model.fit, row[np.newaxis, :], y)
        weights = np.concatenate([np.ravel(fitted.coef_), np.ravel(fitted.intercept_)])
        ratio = batch_size * float(np.linalg.norm(weights.astype(np.float64))) / (
            float(model.clip_norm) * mechanism.noise_free_contribution_bound(weights.size))
        if not math.isfinite(ratio):
            ratio = math.inf
        if ratio > worst:
            worst = ratio
            worst_case = (f"{np.dtype(dtype).name} row of entries {float(row[1]):.3g}, "
                          f"target {target!s:.10}, fit_intercept={fit_intercept}")
    limit = 1.0 + CLIP_TOLERANCE
    return CheckResult(
        "clipping", worst <= limit, worst, limit,
        f"largest clipped gradient norm / (clip_norm x the mechanism's rounding bound) "
        f"over {len(dtypes)} dtypes of "
        f"adversarial rows (worst: {worst_case})",
    )


def _seed_forms():
    return {
        "int 42": lambda: 42,
        "Generator": lambda: np.random.default_rng(7),
        "SeedSequence": lambda: np.random.SeedSequence(3),
        "RandomState": lambda: np.random.RandomState(0),
    }


def check_seed_replay(estimator, X=None, y=None):
    """A published model does not carry the seed of its own noise.

    For each way users pass a seed (an int, a Generator, a SeedSequence, a
    RandomState), fit, pickle the model as if publishing it, and refit a
    clone of the unpickled model on the same rows, as an attacker holding the
    pickle would. A private fit (finite ``epsilon_``) fails the check if the
    replay reproduces its weights exactly, or if the caller's Generator was
    advanced by the fit (its published state could be rewound).

    Parameters
    ----------
    estimator : DPLSSGDClassifier or DPLSSGDRegressor
    X, y : array-like or sparse matrix, default=None
        Training rows; by default 200 random rows with 5 features.

    Returns
    -------
    CheckResult
        ``measured`` is the number of seed forms that leaked.
    """
    if X is None:
        X, y = default_data(estimator)
    leaks = []
    for name, make_seed in _seed_forms().items():
        seed = make_seed()
        state_before = pickle.dumps(seed)
        model = declare_public_n(private_clone(estimator).set_params(random_state=seed),
                                 public_row_count(X))
        fitted = quietly(model.fit, X, y)
        if not math.isfinite(fitted.epsilon_):
            continue  # a reproducible fit claims no privacy
        if isinstance(seed, np.random.Generator) and pickle.dumps(seed) != state_before:
            leaks.append(f"{name} advanced by the fit")
        published = pickle.loads(pickle.dumps(fitted))
        replay = quietly(clone(published).fit, X, y)
        if np.array_equal(replay.coef_, fitted.coef_):
            leaks.append(f"{name} replayed")
    return CheckResult(
        "seed replay", not leaks, float(len(leaks)), 0.0,
        "seed forms whose noise a holder of the pickled model can regenerate"
        + (f": {', '.join(leaks)}" if leaks else ""),
    )


def check_clone_independence(estimator, X=None, y=None):
    """Clones given the same seed do not share their noise.

    Two clones of the estimator with ``random_state=42`` are fitted on the
    same rows. A private fit fails the check if their weights are identical:
    their difference would then be free of noise.

    Returns
    -------
    CheckResult
        ``measured`` is the largest absolute difference of the two fits'
        coefficients (it must be above 0).
    """
    if X is None:
        X, y = default_data(estimator)
    base = declare_public_n(private_clone(estimator).set_params(random_state=42),
                            public_row_count(X))
    first = quietly(clone(base).fit, X, y)
    second = quietly(clone(base).fit, X, y)
    difference = float(np.max(np.abs(np.ravel(first.coef_) - np.ravel(second.coef_))))
    private = math.isfinite(first.epsilon_)
    return CheckResult(
        "clone independence", difference > 0.0 or not private, difference, 0.0,
        "largest |coef difference| of two clones seeded alike (0 means shared noise)",
    )


def check_row_count(estimator):
    """Neighbouring data sets give the same public mechanism.

    Under add/remove adjacency, data sets of ``batch_size`` and
    ``batch_size + 1`` rows are neighbours; under replace-one, two data sets
    of ``batch_size`` rows that differ in one row. The sample rate, number of
    steps, noise multiplier and reported epsilon of the two fits must be
    equal: any difference tells the neighbours apart with certainty. A fit
    refused for lack of a public row count releases nothing and passes.

    Returns
    -------
    CheckResult
        ``measured`` is the number of public attributes that differ.
    """
    model = private_clone(estimator)
    batch_size = nominal_batch_size(model.batch_size)
    X, y = default_data(estimator, n_rows=batch_size + 1)
    if model.get_params().get("neighboring", "add_remove") == "add_remove":
        pair = ((X[:batch_size], y[:batch_size]), (X, y))
    else:
        X_other, y_other = X[:batch_size].copy(), y[:batch_size].copy()
        X_other[-1], y_other[-1] = X[batch_size], y[batch_size]
        pair = ((X[:batch_size], y[:batch_size]), (X_other, y_other))
    try:
        fits = [quietly(clone(model).fit, X_part, y_part) for X_part, y_part in pair]
    except ValueError as error:
        if "public_n_samples" in str(error):
            return CheckResult("row count", True, 0.0, 0.0,
                               "refused: the adjacency needs a public row count")
        raise
    names = ("sample_rate_", "n_steps_", "noise_multiplier_", "epsilon_")
    differing = [name for name in names if getattr(fits[0], name) != getattr(fits[1], name)]
    return CheckResult(
        "row count", not differing, float(len(differing)), 0.0,
        "public attributes that differ between neighbouring data sets"
        + (f": {', '.join(differing)}" if differing else ""),
    )


def check_overflow_row(estimator, n_fits=5):
    """Whether fits fail does not depend on one extreme row.

    Fits ``n_fits`` times on float32 rows without and with one row of
    entries 3e38 (under replace-one, in place of an ordinary row). An error
    or non-finite weights on one side only would reveal the row.

    Returns
    -------
    CheckResult
        ``measured`` is the difference in the number of failed fits.
    """
    X, y = default_data(estimator, n_rows=300, n_features=20, dtype=np.float32, seed=1)
    extreme = np.full((1, X.shape[1]), 3e38, np.float32)
    X_with = np.vstack([X, extreme])
    y_with = np.concatenate([y, y[:1]])
    if private_clone(estimator).get_params().get("neighboring") == "replace_one":
        X_without, y_without = np.vstack([X, X[:1]]), np.concatenate([y, y[:1]])
    else:
        X_without, y_without = X, y
    model = declare_public_n(private_clone(estimator), len(X_with))

    def failures(X_part, y_part):
        count = 0
        for _ in range(n_fits):
            try:
                fitted = quietly(clone(model).fit, X_part, y_part)
            except (ValueError, FloatingPointError, OverflowError):
                count += 1
                continue
            count += not np.all(np.isfinite(fitted.coef_))
        return count

    without, with_ = failures(X_without, y_without), failures(X_with, y_with)
    return CheckResult(
        "overflow row", without == with_, float(abs(with_ - without)), 0.0,
        f"failed fits: {without} of {n_fits} without the 3e38 row, {with_} with it",
    )
