"""Output perturbation as a release mechanism of the estimators (``mechanism="output"``).

The arithmetic (constants, step, sensitivity, calibration, descent, lattice) lives in
:mod:`._accounting`, :mod:`._descent` and :mod:`._lattice`; this module is the
estimators' side: what settings it refuses, and what a fit reports.
"""

import math

import numpy as np
from sklearn.base import BaseEstimator

from ..._training import (
    AUTO, resolve_delta, LOSSES, SMOOTH_LOSSES, SGD, check_optimizer, make_generator,
    is_constant_schedule,
)
from .._release import NoiseAdded, ReleaseMechanism, ReleaseRecord
from ._accounting import (
    NoisyWeights, default_passes, plan_output_perturbation, positive_finite, required_bounds,
)
from ._descent import release_output_perturbation
from ._lattice import plan_on_lattice

__all__ = ["OutputPerturbation", "OutputPerturbationMechanism", "output_perturbation_bounds"]


class OutputPerturbation(BaseEstimator):
    """The estimators' ``mechanism`` that adds the noise once, to the trained weights.

    Output perturbation (Chen, Lee and Kifer, "Renyi differentially private
    ERM for smooth objectives", AISTATS 2019): a noise-free descent on the
    L2-penalised objective over rows clipped to ``row_norm_bound``, then
    Gaussian noise calibrated to the final weights' sensitivity. For smooth
    losses with ``alpha > 0``; see :doc:`/output_perturbation`.
    ``mechanism="output"`` is ``OutputPerturbation()``.

    Parameters
    ----------
    row_norm_bound : float, default=1.0
        The public L2 bound every row (without the intercept's 1) is clipped
        to before training.
    weight_norm_bound : float or None, default=None
        The public radius the weights are projected onto after every step.
        Required by a loss whose gradient grows with the margin
        (``"squared_error"``, ``"squared_hinge"``), refused by the others.

    Examples
    --------
    >>> from sklearn_dplssgd import DPLSSGDClassifier, OutputPerturbation
    >>> DPLSSGDClassifier(mechanism=OutputPerturbation(row_norm_bound=2.0), alpha=0.01)
    DPLSSGDClassifier(alpha=0.01, mechanism=OutputPerturbation(row_norm_bound=2.0))
    """

    name = "output"

    def __init__(self, row_norm_bound=1.0, weight_norm_bound=None):
        self.row_norm_bound = row_norm_bound
        self.weight_norm_bound = weight_norm_bound

    def check(self):
        """Raise a ValueError naming the bound that is not a positive finite number."""
        positive_finite(self.row_norm_bound, "mechanism.row_norm_bound")
        if self.weight_norm_bound is not None:
            positive_finite(self.weight_norm_bound, "mechanism.weight_norm_bound")


def output_perturbation_bounds(mechanism):
    """The :class:`OutputPerturbation` that ``mechanism`` (``"output"`` or one) stands for."""
    return mechanism if isinstance(mechanism, OutputPerturbation) else OutputPerturbation()


class OutputPerturbationMechanism(ReleaseMechanism):
    """``mechanism="output"``: output perturbation, replace-one only.

    Chen, Lee and Kifer, "Renyi differentially private ERM for smooth
    objectives", AISTATS 2019.
    """

    name = "output"
    # Its descent takes dense NumPy rows.
    accepts_sparse = False
    accepts_array_api = False
    accepts_dask = False
    supports_partial_fit = False
    partial_fit_refusal = (
        "partial_fit is not available with mechanism='output': the mechanism "
        "releases one noise-free descent over all the rows, plus noise. Use "
        "mechanism='gradient' for streaming.")
    perturbs_weights = True
    # A private fit releases gamma times integers with exactly sampled noise.
    releases_integers = True

    def check_settings(self, settings):
        """Refuse, before any row is read, a setting outside Proposition 2's conditions."""
        name = settings.estimator_name
        loss = settings.loss
        if loss not in SMOOTH_LOSSES:
            raise ValueError(
                f"mechanism='output' needs a smooth loss ({', '.join(SMOOTH_LOSSES)}); "
                f"loss={loss!r} is not smooth (its derivative jumps), so its "
                "gradient steps do not contract and no sensitivity bound holds. Use "
                "mechanism='gradient' for it.")
        if not settings.alpha > 0:
            raise ValueError(
                "mechanism='output' needs alpha > 0: the L2 penalty is the strong "
                "convexity that makes the final weights depend boundedly on one row "
                "(the sensitivity is about 2 R / (n alpha)).")
        if settings.neighboring != "replace_one":
            raise ValueError(
                "mechanism='output' is proven for neighboring='replace_one' only (Chen, "
                "Lee and Kifer, AISTATS 2019, Proposition 2): it cannot claim add/remove "
                "adjacency.")
        if settings.public_n_samples is not None:
            raise ValueError(
                "public_n_samples is not used by mechanism='output': its sensitivity "
                "is computed from the actual row count, public under replace-one "
                "adjacency. Leave it None.")
        if settings.accountant != "pld":
            raise ValueError(
                f"mechanism='output' is one Gaussian mechanism, calibrated with the "
                f"PLD accountant; accountant={settings.accountant!r} does not apply to it.")
        value = settings.learning_rate
        if not (isinstance(value, str) and value == "constant"):
            raise ValueError(
                "mechanism='output' needs learning_rate='constant' (the sensitivity bound "
                f"needs a constant step); got learning_rate={value!r}.")
        # The contraction argument is about the plain gradient step itself.
        if not isinstance(check_optimizer(settings.optimizer), SGD):
            raise ValueError(
                "mechanism='output' needs optimizer='sgd' (the contraction argument is for "
                f"plain gradient steps); got optimizer={settings.optimizer!r}.")
        if not is_constant_schedule(settings.noise_schedule):
            raise ValueError(
                "mechanism='output' needs noise_schedule='constant' (the noise is added "
                f"once, at the end); got noise_schedule={settings.noise_schedule!r}.")
        if settings.average not in (False, AUTO):
            raise ValueError(
                "mechanism='output' releases the last iterate (the one whose sensitivity "
                f"is bounded): use average=False or 'auto'; got average={settings.average!r}.")
        bounds = output_perturbation_bounds(settings.mechanism)
        needs_weights, needs_targets = required_bounds(loss)
        if needs_weights and (
                bounds.weight_norm_bound is None
                or (needs_targets and settings.params.get("target_bounds") is None)):
            raise ValueError(
                f"{name}(loss={loss!r}, mechanism='output') needs "
                "OutputPerturbation(weight_norm_bound=...) (the public radius the "
                "weights are projected onto)"
                + (" and target_bounds=(low, high)" if needs_targets else "")
                + ": otherwise the loss's gradient, hence the sensitivity, is "
                "unbounded." + (" Or use loss='huber'." if needs_targets else ""))
        if not needs_weights and bounds.weight_norm_bound is not None:
            raise ValueError(
                f"weight_norm_bound is only used by output perturbation with a loss whose "
                f"gradient grows with the margin; loss={loss!r} has bounded gradients: "
                "leave it None.")

    def check_release(self, settings, X, *, namespace, sparse, continued):
        if namespace is not None:
            raise ValueError(
                "mechanism='output' trains on NumPy arrays only; array API inputs "
                f"({type(X).__module__.split('.')[0]} arrays) are supported with "
                "mechanism='gradient'. Pass NumPy arrays, or use mechanism='gradient'.")
        if continued:
            raise ValueError(
                "mechanism='output' starts its descent from zero weights (its "
                "sensitivity bound is for that start): coef_init, intercept_init and "
                "warm_start=True are not available with it.")
        if sparse:
            # The format is public: refused before anything is released.
            raise TypeError(
                "mechanism='output' needs dense X; sparse X is trained by gradient "
                "perturbation (mechanism='gradient'), which uses the sparsity.")

    def release(self, settings, data, plan, series, partial, disjoint_batches=False):
        """Plan from public quantities only, charge the ledger, descend, add noise once."""
        n_samples = data.X.shape[0]
        delta = resolve_delta(settings.delta, n_samples)
        loss = LOSSES[settings.loss]
        needs_weights, needs_targets = required_bounds(settings.loss)
        bounds = output_perturbation_bounds(settings.mechanism)
        batch_size = settings.batch_size
        plan = plan_output_perturbation(
            settings.epsilon, delta, n_samples=n_samples, loss=settings.loss,
            n_outputs=data.n_outputs, fit_intercept=bool(settings.fit_intercept),
            alpha=float(settings.alpha), row_norm_bound=float(bounds.row_norm_bound),
            # Every batch has exactly b <= n rows (Lemma 2 of Chen, Lee and Kifer, AISTATS 2019).
            batch_size=None if batch_size == AUTO else min(int(batch_size), n_samples),
            eta=None if settings.eta0 == AUTO else float(settings.eta0),
            loss_threshold=loss.threshold(settings) if loss.uses_threshold else None,
            weight_norm_bound=bounds.weight_norm_bound if needs_weights else None,
            # The regressor maps targets in target_bounds to [-1, 1].
            target_bound=1.0 if needs_targets else None,
            max_sample_weight=float(settings.max_sample_weight),
        )
        # The lattice and its integer noise, from the public number of features.
        plan = plan_on_lattice(plan, data.X.shape[1])
        max_iter = default_passes(plan) if settings.max_iter == AUTO else int(
            settings.max_iter)
        rng, seeded = make_generator(settings.random_state, settings.reproducible)
        mechanism = plan.mechanism.seeded_copy() if seeded else plan.mechanism
        if settings.ledger is not None:
            settings.ledger.charge(settings.estimator_name, mechanism.dp_event(),
                                   "replace_one")
        settings.warn_before_training(delta, n_samples)
        params, mechanism = release_output_perturbation(
            data.X, data.y_encoded, plan, n_passes=max_iter, rng=rng, seeded=seeded,
            sample_weight=data.weights)
        dp_event = mechanism.dp_event()
        noise_multiplier = plan.calibration.noise_multiplier
        return params, ReleaseRecord(
            n_iter=max_iter,
            batch_size=plan.batch_size,
            eta0=plan.eta,
            average_start=None,
            n_steps=max_iter * plan.n_batches,
            noise_multiplier=noise_multiplier,
            noise_multipliers=np.array([noise_multiplier]),
            sample_rate=math.nan,
            epsilon=plan.calibration.epsilon if mechanism.private else math.inf,
            # A later gradient-perturbation partial_fit or warm start composes with it.
            dp_events=[dp_event],
            disjoint_batches=[False],
            dp_event=dp_event,
            t=max_iter * plan.n_batches,
            delta=plan.calibration.delta,
            neighboring="replace_one",
            output_sensitivity=mechanism.sensitivity,
            sigma=self.smoothing(settings, data.X.shape[1], data.sparse, data.feature_names),
            sigma_reason=self.smoothing_reason(settings, data.X.shape[1], data.sparse,
                                               data.feature_names),
            noise_added=_noise_added(plan, mechanism),
        )

    def claimed_epsilon(self, settings, model, n_rows):
        mechanism = NoisyWeights(sensitivity=model.output_sensitivity_,
                                 noise_multiplier=model.noise_multiplier_)
        return mechanism.epsilon(model.delta_)


def _noise_added(plan, mechanism):
    """The release's :class:`NoiseAdded` (the lattice, its scale, the law); None without noise."""
    if mechanism.grid_scale is None:
        return None
    return NoiseAdded("rounded Gaussian", plan.row_norm_bound, plan.max_sample_weight,
                      mechanism.sensitivity, (mechanism.noise_std,),
                      grid_step=mechanism.grid_step, grid_bits=-mechanism.grid_exponent,
                      grid_scale=float(mechanism.grid_scale))
