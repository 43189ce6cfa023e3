"""The floating-point channel of a noisy release: a distinguishing test on the low bits.

The Gaussian mechanism's guarantee is proved for real-valued noise; the low
bits of a float64 release ``fl(s + fl(z * std))`` depend on ``s`` (Mironov,
"On significance of the least significant bits for differential privacy",
CCS 2012; Jin et al., "Are we there yet? Timing and floating-point attacks on
differential privacy systems", IEEE S&P 2022; Haney et al., "Precision-based
attacks and interval refining: how to break, then fix, differential privacy on
finite computers", 2022). With ``s`` in ``[2**e, 2**(e + 1))`` every float64
``fl(s + n)`` is a multiple of ``2**(e - 53)``, while the noise alone often is
not: the event "off that grid" is impossible with the canary and has a
probability of about ``0.27 / z`` without it (the proof, Lemma 4, is in
docs/privacy_argument.rst). A release of integers times a public power of two
lies on one lattice under both neighbours and passes. Output perturbation is
tested on its released weights: zero background rows keep them at 0, and a
canary spread over :data:`_OUTPUT_FEATURES` features moves them into one binade.
"""

import math

import numpy as np
from sklearn.base import clone, is_classifier

from .._mechanisms import mechanism_named, output_perturbation_bounds
from ._check_result import (
    CheckResult, declare_public_n, declared_labels, private_clone, set_existing,
)
from ._fits import seeded_fit, steps_on_targets_as_given
from ._statistics import check_confidence, epsilon_lower_bound_of_event

__all__ = ["check_float_channel", "off_grid"]

# Rows of the crafted data sets: a power of two, so that dividing the step by
# the batch size is exact.
_N_ROWS = 4
# The canary's feature: large enough that its gradient is clipped to the
# clip norm for every loss (residuals at zero margin are at least 1/2).
_CANARY_SCALE = 4.0
# Output perturbation's crafted release: the canary's features, and a strong
# penalty against the smoothness, which keeps its weights near a quarter of
# the sensitivity (the most one step of the descent can move them).
_OUTPUT_FEATURES = 256
_OUTPUT_ALPHA = 1.0


def off_grid(values, exponent):
    """Whether each value is off the grid of ``2**(exponent - 53)``: the check's event.

    A float64 ``fl(s + n)`` with ``s`` in ``[2**exponent, 2**(exponent + 1))``
    never is.
    """
    # Scaling by a power of two is exact (far from the subnormals and
    # overflow at the magnitudes the check produces).
    scaled = np.ldexp(np.asarray(values, dtype=np.float64), 53 - int(exponent))
    return scaled != np.round(scaled)


def _one_step_configuration(estimator):
    """A clone whose coefficient is one noisy step, ``-(s + noise) / b``, exactly.

    One feature, no intercept, a full batch of :data:`_N_ROWS` rows, one step
    of size 1 from zero, no smoothing, decay or averaging; targets as given.
    """
    model = private_clone(estimator)
    set_existing(
        model, batch_size=_N_ROWS, max_iter=1, eta0=1.0, learning_rate="constant",
        optimizer="sgd", alpha=0.0, sigma=0.0, average=False, fit_intercept=False,
        noise_schedule="constant", warm_start=False, ledger=None,
        feature_bounds=None, target_bounds=None,
    )
    if is_classifier(model):
        model.set_params(classes=declared_labels(estimator)[:2])
    return declare_public_n(steps_on_targets_as_given(model), _N_ROWS)


def _neighbours(model):
    """Background rows of zero gradient, and with the canary (replacing a row, or added)."""
    clip = float(model.clip_norm)
    X = np.zeros((_N_ROWS, 1))
    if is_classifier(model):
        labels = declared_labels(model)
        y, canary_label, canary_x = np.full(_N_ROWS, labels[0]), labels[-1], _CANARY_SCALE * clip
    else:
        y, canary_label, canary_x = np.zeros(_N_ROWS), -_CANARY_SCALE * clip, 1.0
    if model.get_params()["neighboring"] == "add_remove":
        X_with = np.vstack([X, [[canary_x]]])
        y_with = np.concatenate([y, [canary_label]])
    else:
        X_with, y_with = X.copy(), y.copy()
        X_with[-1, 0], y_with[-1] = canary_x, canary_label
    return (X, y), (X_with, y_with)


def _released(model, output):
    """The tested values: the weights (output), or ``s + noise = -b`` times the coefficient."""
    coef = np.ravel(model.coef_).astype(np.float64)
    return coef if output else -coef[:1] * _N_ROWS


def _output_configuration(estimator):
    """A clone of an output-perturbation estimator that releases one step's weights.

    No intercept, one full batch, one pass, L2 strength :data:`_OUTPUT_ALPHA`;
    the loss, its bounds, the row norm bound and the budget are the estimator's.
    """
    model = private_clone(estimator)
    set_existing(
        model, batch_size=_N_ROWS, max_iter=1, alpha=_OUTPUT_ALPHA, eta0="auto",
        fit_intercept=False, warm_start=False, ledger=None, n_jobs=1, feature_bounds=None,
        max_sample_weight=1.0)
    if is_classifier(model):
        model.set_params(classes=declared_labels(estimator)[:2])
    return model


def _output_neighbours(model):
    """Zero background rows, and the canary (replace-one: the only adjacency of the mechanism)."""
    X = np.zeros((_N_ROWS, _OUTPUT_FEATURES))
    if is_classifier(model):
        labels = declared_labels(model)
        y, canary_label = np.full(_N_ROWS, labels[0]), labels[-1]
    else:
        # The declared target range is (-1, 1) or the user's: its lower end.
        y, canary_label = np.zeros(_N_ROWS), float(model.get_params()["target_bounds"][0])
    X_with, y_with = X.copy(), y.copy()
    row_norm_bound = output_perturbation_bounds(model.get_params()["mechanism"]).row_norm_bound
    X_with[-1] = float(row_norm_bound) / math.sqrt(_OUTPUT_FEATURES)
    y_with[-1] = canary_label
    return (X, y), (X_with, y_with)


def _distinguishing_test(model, data_sets, n_runs, confidence, random_state, event, what):
    """Seeded fits of ``model`` on each data set, the epsilon lower bound of ``event``.

    ``event(fitted) -> bool`` is the off-grid event, fixed in advance;
    ``what`` names the release and the event for the result's detail.
    """
    seeds = np.random.default_rng(random_state).integers(0, 2 ** 63 - 1, size=(2, n_runs))
    counts, delta = [], None
    for side_seeds, (X, y) in zip(seeds, data_sets):
        models = [seeded_fit(model, seed, X, y) for seed in side_seeds]
        delta = float(models[0].delta_)
        counts.append(sum(event(fitted) for fitted in models))
    claim = float(model.epsilon)
    bound = epsilon_lower_bound_of_event(counts[0], n_runs, counts[1], n_runs, delta,
                                         confidence)
    return CheckResult(
        "floating-point channel", bound <= claim, bound, claim,
        f"epsilon lower bound at delta {delta:.3g} ({confidence:.0%} confidence) from "
        f"{what} in {counts[0]} of {n_runs} runs without the canary and {counts[1]} of "
        f"{n_runs} with it",
    )


def check_float_channel(estimator, n_runs=1000, confidence=0.95, random_state=0,
                        as_input=None):
    """The low bits of one noisy step do not tell the canary apart.

    One step on one coordinate, with a canary whose clipped gradient ``s``
    lies in ``[2**e, 2**(e + 1))``: ``n_runs`` seeded fits on each data set
    count the releases off the grid of ``2**(e - 53)``, and
    :func:`epsilon_lower_bound_of_event` turns the counts into a lower bound
    that must not exceed the configured ``epsilon``. Float64 noise added to a
    float64 sum fails; integers times a power of two pass. For
    ``mechanism="output"``, a canary's released weights are tested.

    Parameters
    ----------
    estimator : DPLSSGDClassifier or DPLSSGDRegressor
        The configuration (mechanism, epsilon, delta, adjacency, clip norm)
        to check; it is cloned, never fitted itself.
    n_runs : int, default=1000
        Fits on each data set.
    confidence : float, default=0.95
        Confidence of the epsilon lower bound.
    random_state : int, default=0
        Seeds the fits' seeds.
    as_input : callable or None, default=None
        Turns the crafted rows (a float64 NumPy array) into the input under
        test: ``scipy.sparse.csr_matrix``, a float32 copy, a Dask array...
        None fits them as they are.

    Returns
    -------
    CheckResult
        ``measured`` is the epsilon lower bound, ``limit`` the configured
        epsilon.

    Raises
    ------
    ValueError
        For an ``n_runs`` below 2.
    """
    if isinstance(n_runs, bool) or not isinstance(n_runs, (int, np.integer)) or n_runs < 2:
        raise ValueError(f"n_runs must be an integer of at least 2; got {n_runs!r}.")
    check_confidence(confidence)
    output = mechanism_named(estimator.get_params()["mechanism"]).perturbs_weights
    if output:
        model = _output_configuration(estimator)
        data_sets = _output_neighbours(model)
        noise_free = clone(model).set_params(epsilon=math.inf)
    else:
        model = _one_step_configuration(estimator)
        data_sets = [(X if as_input is None else as_input(X), y) for X, y in _neighbours(model)]
        noise_free = clone(model).set_params(epsilon=math.inf, mechanism="gradient")
    # The binade of the noise-free release on the auditor's own rows (nothing private).
    smallest = float(np.min(np.abs(_released(seeded_fit(noise_free, 0, *data_sets[1]), output))))
    if not smallest > 0:
        raise ValueError("check_float_channel: the canary does not move the weights of this "
                         "configuration (its loss has no gradient at zero weights).")
    exponent = math.frexp(smallest)[1] - 1
    what = (f"the weights of a noise-free descent on {_OUTPUT_FEATURES} features, output "
            "mechanism: releases with a coefficient" if output else
            f"one noisy step of one coordinate, {model.get_params()['mechanism']} mechanism: "
            "outputs")
    return _distinguishing_test(
        model, data_sets, n_runs, confidence, random_state,
        lambda fitted: bool(off_grid(_released(fitted, output), exponent).any()),
        f"{what} off the 2**{exponent - 53} grid")
