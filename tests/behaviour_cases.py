"""Configurations whose fitted models must not change across refactorings.

Each case fits one estimator with ``reproducible=True`` and a fixed
``random_state`` and records ``coef_``, ``intercept_`` and the scores on the
training rows. ``tests/make_behaviour_reference.py`` records them from a
revision's tree; the test ``tests/test_behaviour_kept.py`` refits them on the
working tree and compares.

A case's settings are split in three: ``params`` are spelled the same on
every revision, ``old`` are the spelling of earlier revisions of what was
renamed (``noise_decay``, ``momentum`` and Adam's numbers as constructor
parameters, output perturbation's bounds) and ``new`` builds the current
spelling from the package module.
Every gradient-perturbation case uses the RDP accountant, a calibration that
has stayed put; output perturbation (one Gaussian release) takes PLD only.

The reference also records the settings each fit resolved (``eta0_``,
``batch_size_``, ``n_iter_``, ``average_start_``, ``sigma_``); the test
passes them explicitly, so that what it checks is the training, not the
"auto" rules (which change on purpose and are measured on their own).
"""

import numpy as np
import scipy.sparse as sp

__all__ = ["CASES", "case_data", "case_outputs", "fit_case", "pinned_settings"]

_COMMON = {"accountant": "rdp", "reproducible": True, "random_state": 7, "epsilon": 2.0}


def _table(n, d, n_classes, seed, dtype=np.float64):
    """A seeded table with rows in the unit ball and labels from a linear rule."""
    rng = np.random.default_rng(seed)
    X = rng.uniform(-1.0, 1.0, size=(n, d))
    X /= np.maximum(1.0, np.linalg.norm(X, axis=1))[:, None]
    W = rng.normal(size=(d, max(n_classes, 1)))
    scores = X @ W + 0.3 * rng.normal(size=(n, max(n_classes, 1)))
    if n_classes == 0:
        y = np.clip(scores[:, 0] / np.sqrt(d), -1.0, 1.0)
    elif n_classes == 2:
        y = (scores[:, 0] > 0).astype(int)
    else:
        y = scores.argmax(axis=1)
    return X.astype(dtype), y


def _case(name, kind, n_classes, params=None, old=None, new=None, dtype=np.float64,
          sparse=False, weights=False, partial_fit=0):
    return {
        "name": name, "kind": kind, "n_classes": n_classes,
        "params": {**_COMMON, **(params or {})}, "old": old or {}, "new": new or (lambda m: {}),
        "dtype": dtype, "sparse": sparse, "weights": weights, "partial_fit": partial_fit,
    }


_FAST = {"max_iter": 3, "batch_size": 32}
# The regression targets lie in [-1, 1] (``_table``): declared bounds of
# (-1, 1) map them to themselves, so the fits train on y as the reference's
# did, rather than first learning the range from a noisy histogram.
_REG = {**_FAST, "target_bounds": (-1.0, 1.0)}

CASES = [
    _case("clf2_dense", "clf", 2, _FAST),
    _case("clf2_hinge", "clf", 2, {**_FAST, "loss": "hinge"}),
    _case("clf2_no_smoothing", "clf", 2, {**_FAST, "sigma": 0.0}),
    _case("clf3_dense", "clf", 3, _FAST),
    _case("clf3_float32", "clf", 3, _FAST, dtype=np.float32),
    _case("clf3_sparse", "clf", 3, _FAST, sparse=True),
    _case("clf2_weights", "clf", 2, {**_FAST, "max_sample_weight": 2.0}, weights=True),
    _case("clf2_average", "clf", 2, {**_FAST, "average": 5}),
    _case("clf2_optimal_rate", "clf", 2, {**_FAST, "learning_rate": "invscaling"}),
    _case("clf3_momentum", "clf", 3, {**_FAST, "optimizer": "momentum"},
          old={"momentum": 0.8}, new=lambda m: {"optimizer": m.Momentum(momentum=0.8)}),
    _case("clf3_momentum_default", "clf", 3, {**_FAST, "optimizer": "momentum"}),
    _case("clf2_adam", "clf", 2, {**_FAST, "optimizer": "adam", "eta0": 0.05},
          old={"beta1": 0.85, "beta2": 0.99, "adam_epsilon": 1e-6},
          new=lambda m: {"optimizer": m.Adam(beta1=0.85, beta2=0.99, epsilon=1e-6)}),
    _case("clf2_adam_default", "clf", 2, {**_FAST, "optimizer": "adam"}),
    _case("clf2_exponential", "clf", 2, {**_FAST, "noise_schedule": "exponential"},
          old={"noise_decay": 0.7},
          new=lambda m: {"noise_schedule": m.ExponentialNoise(per_epoch=0.7)}),
    _case("clf2_step", "clf", 2, {**_FAST, "max_iter": 4, "noise_schedule": "step"},
          old={"noise_decay": 0.5},
          new=lambda m: {"noise_schedule": m.StepNoise(final_ratio=0.25)}),
    _case("clf2_output", "clf", 2, {"mechanism": "output", "accountant": "pld"}),
    _case("clf3_partial_fit", "clf", 3, {**_FAST, "max_iter": 2}, partial_fit=2),
    _case("clf2_warm_start", "clf", 2, {**_FAST, "warm_start": True}, partial_fit=-2),
    _case("clf2_defaults", "clf", 2, {}),
    _case("reg_dense", "reg", 0, _REG),
    _case("reg_float32", "reg", 0, _REG, dtype=np.float32),
    _case("reg_sparse", "reg", 0, _REG, sparse=True),
    _case("reg_huber_weights", "reg", 0, {**_REG, "loss": "huber", "max_sample_weight": 3.0},
          weights=True),
    _case("reg_exponential", "reg", 0, {**_REG, "noise_schedule": "exponential"},
          old={}, new=lambda m: {"noise_schedule": m.ExponentialNoise(per_epoch=0.9)}),
    _case("reg_adam", "reg", 0, {**_REG, "optimizer": "adam"}),
    _case("reg_output", "reg", 0, {"accountant": "pld", "loss": "squared_error",
                                   "target_bounds": (-1.0, 1.0)},
          old={"mechanism": "output", "weight_norm_bound": 2.0},
          new=lambda m: {"mechanism": m.OutputPerturbation(weight_norm_bound=2.0)}),
    _case("reg_partial_fit", "reg", 0, {**_REG, "max_iter": 1}, partial_fit=3),
]


def case_data(case):
    """The case's table: ``X``, ``y`` and the sample weights (or None)."""
    X, y = _table(240, 12, case["n_classes"], seed=11, dtype=case["dtype"])
    if case["sparse"]:
        X = np.where(np.abs(X) < 0.2, 0.0, X).astype(case["dtype"])
        X = sp.csr_matrix(X)
    weights = None
    if case["weights"]:
        weights = np.random.default_rng(3).uniform(0.5, 1.5, size=X.shape[0])
    return X, y, weights


def pinned_settings(case, resolved):
    """The resolved settings of the reference as explicit parameters."""
    eta0, batch_size, n_iter, average_start, sigma = resolved
    pinned = {"eta0": float(eta0), "batch_size": int(batch_size), "max_iter": int(n_iter),
              "sigma": float(sigma)}
    if case["params"].get("mechanism") == "output":
        pinned["average"] = False
    elif case["partial_fit"] > 0:
        pass  # "auto" averages the series' iterates (no average_start_ of a call's own)
    else:
        # average=True averages every step (average_start_ 0).
        pinned["average"] = (False if average_start < 0 else True if average_start == 0
                             else int(average_start))
    return pinned


def fit_case(case, module, api, pinned=None):
    """Fit the case with ``module`` (a sklearn_dplssgd package) in ``api`` "old" or "new".

    ``pinned``: settings passed explicitly in place of the case's own.
    """
    extra = case["old"] if api == "old" else case["new"](module)
    params = {**case["params"], **extra, **(pinned or {})}
    estimator_class = (module.DPLSSGDClassifier if case["kind"] == "clf"
                       else module.DPLSSGDRegressor)
    estimator = estimator_class(**params)
    X, y, weights = case_data(case)
    if case["partial_fit"] > 0:
        # Consecutive blocks of the rows, one release each.
        blocks = np.array_split(np.arange(X.shape[0]), case["partial_fit"])
        extra_fit = {"classes": np.unique(y)} if case["kind"] == "clf" else {}
        for block in blocks:
            estimator.partial_fit(X[block], y[block], **extra_fit)
    elif case["partial_fit"] < 0:
        # warm_start: the same rows fitted again, continuing from the weights.
        for _ in range(-case["partial_fit"]):
            estimator.fit(X, y, sample_weight=weights)
    else:
        estimator.fit(X, y, sample_weight=weights)
    return estimator, X


def case_outputs(case, module, api, pinned=None):
    """The arrays recorded for a case: coefficients, intercept, training scores, settings."""
    estimator, X = fit_case(case, module, api, pinned)
    if case["kind"] == "clf":
        scores = estimator.decision_function(X)
    else:
        scores = estimator.predict(X)
    return {
        "coef": np.asarray(estimator.coef_, dtype=np.float64),
        "intercept": np.atleast_1d(np.asarray(estimator.intercept_, dtype=np.float64)),
        "scores": np.asarray(scores, dtype=np.float64),
        "resolved": np.array([
            estimator.eta0_, estimator.batch_size_, estimator.n_iter_,
            -1 if getattr(estimator, "average_start_", None) is None
            else estimator.average_start_, getattr(estimator, "sigma_", 0.0)],
            dtype=np.float64),
    }
