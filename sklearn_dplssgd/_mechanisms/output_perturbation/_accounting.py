"""Output perturbation's accounting: the objective's constants, the step, the sensitivity, the plan.

The mechanism of Chen, Lee and Kifer (Proposition 2 of the supplement of "Renyi
Differentially Private ERM for Smooth Objectives", AISTATS 2019): rows clipped to a
public norm bound, one random permutation cut into ``m = floor(n / b)`` batches of
``b`` rows, noise-free constant-step descent on an ``L``-smooth, ``mu``-strongly
convex objective with per-sample gradients bounded by ``R``, then Gaussian noise once
on the final weights (released on a lattice, :mod:`._lattice`). Everything here is
computed from public quantities before any row is read. The argument, and why
Proposition 3 is not used, are in docs/privacy_argument.rst ("Output perturbation")
and docs/output_perturbation.rst.
"""

import dataclasses
import math
import numbers
import typing

import dp_accounting

from ..._accounting import PrivacyCalibration, event_epsilon, smallest_noise_for
from ..._training import LOSSES, NON_SMOOTH_LOSSES, SMOOTH_LOSSES
from ..._utils import check_positive_int
from .._release import Mechanism

__all__ = [
    "NON_SMOOTH_LOSSES", "SMOOTH_LOSSES", "NoisyWeights", "OutputPerturbationPlan",
    "SmoothnessConstants", "contraction_factor", "default_batch_size", "default_passes",
    "default_step", "positive_finite", "plan_output_perturbation", "required_bounds",
    "sensitivity", "smoothness_constants",
]


# The only adjacency Proposition 2 bounds: the two data sets have the same
# rows but one, so the same permutation cuts them into the same batches.
_NEIGHBORING = "replace_one"


def positive_finite(value, name):
    """``value`` as a float, or a ValueError naming ``name`` unless positive and finite."""
    if (isinstance(value, bool) or not isinstance(value, numbers.Real)
            or not math.isfinite(value) or value <= 0):
        raise ValueError(f"{name} must be a positive finite number; got {value!r}.")
    return float(value)


def _check_neighboring(neighboring):
    if neighboring == "add_remove":
        raise ValueError(
            "Output perturbation supports neighboring='replace_one' only: its "
            "sensitivity bound (Proposition 2 of Chen, Lee and Kifer, AISTATS 2019) "
            "compares two data sets "
            "of the same size that differ in one row, cut into the same batches by "
            "the same permutation. Adding or removing a row shifts every later row "
            "to another batch, and the bound says nothing about that."
        )
    if neighboring != _NEIGHBORING:
        raise ValueError(f"neighboring must be 'replace_one'; got {neighboring!r}.")
    return neighboring


class SmoothnessConstants(typing.NamedTuple):
    """R (a bound on one row's loss gradient), L (smoothness) and mu (strong convexity)."""

    gradient_bound: float
    smoothness: float
    strong_convexity: float


def required_bounds(loss):
    """The public bounds ``loss`` needs for its constants: ``(weight_norm_bound, target_bound)``.

    The one place that says, per loss, what output perturbation needs besides the row
    bound: a loss whose gradient grows with the margin needs the radius W the weights
    are projected onto, and a regression one also the bound Y the targets are clipped to.
    """
    definition = LOSSES[loss]
    bounded = definition.needs_weight_bound
    return bounded, bounded and definition.task == "regression"


def _check_smooth_loss(loss, alpha):
    """Refuse a loss without constants and an ``alpha`` that gives no strong convexity."""
    if loss in NON_SMOOTH_LOSSES:
        raise ValueError(
            f"loss={loss!r} cannot be trained by output perturbation: it is not "
            "smooth (its derivative jumps), so its gradient step is not a "
            "contraction and Proposition 2 of Chen, Lee and Kifer, AISTATS 2019 gives "
            "no sensitivity bound. "
            f"Use one of {SMOOTH_LOSSES}, or gradient perturbation (DP-LSSGD)."
        )
    if loss not in SMOOTH_LOSSES:
        raise ValueError(f"Unknown loss {loss!r}; expected one of {SMOOTH_LOSSES}.")
    if isinstance(alpha, numbers.Real) and not isinstance(alpha, bool) and alpha <= 0:
        raise ValueError(
            f"alpha must be > 0 for output perturbation; got {alpha!r}. The L2 "
            "penalty alpha is the strong convexity mu of the objective: without it "
            "the gradient steps do not contract and the final weights can depend "
            "on one row without bound."
        )
    return positive_finite(alpha, "alpha")


def _checked_loss_bounds(loss, n_outputs, loss_threshold, weight_norm_bound, target_bound):
    """The loss's threshold, W and Y as floats (None where unused), or a ValueError."""
    needs_weights, needs_targets = required_bounds(loss)
    definition = LOSSES[loss]
    if weight_norm_bound is not None and not needs_weights:
        bounded = ", ".join(name for name in LOSSES if required_bounds(name)[0])
        raise ValueError(
            f"weight_norm_bound is only used by a loss whose gradient grows with the "
            f"margin ({bounded}); loss={loss!r} has bounded gradients: leave it None.")
    if definition.multiclass_code is None and n_outputs != 1:
        raise ValueError(
            f"loss={loss!r} has one output (the library's regression losses are "
            f"single-target); got n_outputs={n_outputs}.")
    if definition.uses_threshold:
        if loss_threshold is None:
            raise ValueError(f"loss={loss!r} needs loss_threshold (the threshold h > 0).")
        loss_threshold = positive_finite(loss_threshold, "loss_threshold")
    if needs_weights and (weight_norm_bound is None or (needs_targets and target_bound is None)):
        raise ValueError(
            f"loss={loss!r} needs weight_norm_bound (W)"
            + (" and target_bound (Y)" if needs_targets else "")
            + ": its gradient grows with the margin, so it is unbounded unless the "
            "weights are projected onto a ball of public radius W"
            + (" and the targets clipped to |y| <= Y; then R = (W X + Y) X."
               if needs_targets else "."))
    if needs_weights:
        weight_norm_bound = positive_finite(weight_norm_bound, "weight_norm_bound")
    if needs_targets:
        target_bound = positive_finite(target_bound, "target_bound")
    return loss_threshold, weight_norm_bound, target_bound


def smoothness_constants(loss, n_outputs, row_norm_bound, alpha, fit_intercept, *,
                         loss_threshold=None, weight_norm_bound=None, target_bound=None,
                         max_sample_weight=1.0):
    """R, L and mu of the objective, from public bounds only.

    The objective is ``mean_i w_i loss(W x_i + b; y_i) + alpha / 2 ||(W, b)||^2``, every
    row clipped to ``||x_i|| <= row_norm_bound``; the intercept is the (penalised) weight
    of a constant feature 1, so the augmented rows have norm at most
    ``X = sqrt(row_norm_bound^2 + 1)`` with ``fit_intercept``. Each loss's ``(R, L_loss)``
    comes from its entry of ``_training.LOSSES`` (the table and why each bound holds:
    docs/output_perturbation.rst); then ``R = w_max R``, ``L = w_max L_loss + alpha`` and
    ``mu = alpha``.

    Parameters
    ----------
    loss : str
        A smooth loss (``SMOOTH_LOSSES``).
    n_outputs : int
        K: 1 for binary classification and regression, the classes for a multiclass loss.
    row_norm_bound : float
        Public bound every row (without the intercept's 1) is clipped to.
    alpha : float
        L2 strength, > 0: it is mu.
    fit_intercept : bool
    loss_threshold : float, optional
        Huber's threshold h > 0 (required for ``huber``, unused otherwise).
    weight_norm_bound : float, optional
        W, the radius the weights are projected onto: required by a loss whose
        gradient grows with the margin (:func:`required_bounds`), refused by the others.
    target_bound : float, optional
        Y, the bound the targets are clipped to: required for ``squared_error``.
    max_sample_weight : float, default=1.0
        w_max, the public bound on a row's weight.

    Returns
    -------
    SmoothnessConstants
        ``(R, L, mu)``.

    Raises
    ------
    ValueError
        For ``alpha <= 0``, a non-smooth loss, a missing bound or another invalid
        argument; the message names it.
    """
    alpha = _check_smooth_loss(loss, alpha)
    n_outputs = check_positive_int(n_outputs, "n_outputs")
    row_norm_bound = positive_finite(row_norm_bound, "row_norm_bound")
    loss_threshold, weight_norm_bound, target_bound = _checked_loss_bounds(
        loss, n_outputs, loss_threshold, weight_norm_bound, target_bound)
    x = math.sqrt(row_norm_bound**2 + 1.0) if fit_intercept else row_norm_bound
    gradient_bound, loss_smoothness = LOSSES[loss].constants(
        x, n_outputs, loss_threshold, weight_norm_bound, target_bound)
    w_max = positive_finite(max_sample_weight, "max_sample_weight")
    return SmoothnessConstants(w_max * gradient_bound, w_max * loss_smoothness + alpha, alpha)


def contraction_factor(eta, smoothness, strong_convexity):
    """rho = max(|1 - eta mu|, |1 - eta L|): one gradient step's Lipschitz constant (Lemma 2)."""
    return max(abs(1.0 - eta * strong_convexity), abs(1.0 - eta * smoothness))


def default_step(smoothness, strong_convexity):
    """The constant step ``2 / (L + mu)`` (``0 < mu <= L``), from public constants only.

    It minimises ``rho`` (to ``(L - mu) / (L + mu) < 1``), the fastest contraction per
    step, and satisfies ``eta < 2 / L``. A smaller step lowers the sensitivity but
    needs more passes; the default does not trade that off.
    """
    smoothness = positive_finite(smoothness, "L")
    strong_convexity = positive_finite(strong_convexity, "mu")
    return 2.0 / (smoothness + strong_convexity)


# The default batch count keeps m (1 - rho) at about this value: 1 - rho^m is
# then within 12 % of m (1 - rho), so the sensitivity is within 12 % of its
# full-batch floor 2 eta R / (n (1 - rho)), with m times more steps per pass.
_BATCHES_PER_CONTRACTION = 0.25
# Default passes: enough steps to shrink the distance to the minimiser by
# e^-10 (rho^steps <= e^-10), but at most this many steps (a weakly convex
# objective, alpha much smaller than L, would otherwise ask for millions).
_CONTRACTIONS_TO_CONVERGE = 10.0
_MAX_DEFAULT_STEPS = 20_000


def default_batch_size(n_samples, eta, constants):
    """``b = floor(n / m)`` for ``m = max(1, floor(0.25 / (1 - rho)))`` batches (public)."""
    rho = contraction_factor(eta, constants.smoothness, constants.strong_convexity)
    n_batches = max(1, min(n_samples, math.floor(_BATCHES_PER_CONTRACTION / (1.0 - rho))))
    return max(1, n_samples // n_batches)


def default_passes(plan):
    """Passes for ``rho^(m passes) <= e^-10``, at most 20,000 steps (the noise is the same)."""
    rho = contraction_factor(plan.eta, plan.constants.smoothness,
                             plan.constants.strong_convexity)
    if rho == 0.0:
        return 1
    steps = min(_CONTRACTIONS_TO_CONVERGE / -math.log(rho), _MAX_DEFAULT_STEPS)
    return max(1, math.ceil(steps / plan.n_batches))


def sensitivity(eta, gradient_bound, smoothness, strong_convexity, batch_size, n_batches):
    """Replace-one L2 sensitivity of the final weights: ``2 eta R / (b (1 - rho^m))``.

    Proposition 2 of Chen, Lee and Kifer, AISTATS 2019, for any number of passes
    (the argument: docs/privacy_argument.rst, "Output perturbation"), with the step
    ``eta`` (``eta0``), R, L and mu (:func:`smoothness_constants`), ``b`` rows a batch
    and ``m = floor(n / b)`` batches. A ValueError when ``rho >= 1`` (``eta`` outside
    ``(0, 2 / L)``): no bound holds then.
    """
    eta = positive_finite(eta, "eta (eta0)")
    gradient_bound = positive_finite(gradient_bound, "R")
    smoothness = positive_finite(smoothness, "L")
    strong_convexity = positive_finite(strong_convexity, "mu")
    batch_size = check_positive_int(batch_size, "batch_size")
    n_batches = check_positive_int(n_batches, "n_batches")
    if strong_convexity > smoothness:
        raise ValueError(f"mu = {strong_convexity:g} must not exceed L = {smoothness:g}.")
    rho = contraction_factor(eta, smoothness, strong_convexity)
    if rho >= 1.0:
        raise ValueError(
            f"The step size eta0 = {eta:g} is too large for output perturbation: "
            f"rho = max(|1 - eta0 mu|, |1 - eta0 L|) = {rho:g} must be below 1 "
            f"(|1 - eta0 L| < 1 fails), so the gradient steps do not contract and "
            "Proposition 2 of Chen, Lee and Kifer, AISTATS 2019 gives no sensitivity "
            "bound. The allowed "
            f"range is 0 < eta0 < 2 / L = {2.0 / smoothness:g} (L = {smoothness:g}); "
            f"2 / (L + mu) = {default_step(smoothness, strong_convexity):g} contracts "
            "fastest."
        )
    # 1 - rho^m, accurately when rho is close to 1.
    shrink = 1.0 if rho == 0.0 else -math.expm1(n_batches * math.log(rho))
    return 2.0 * eta * gradient_bound / (batch_size * shrink)


def _gaussian_event(noise_multiplier):
    # dp-accounting's GaussianDpEvent(s) under REPLACE_ONE has sensitivity 2 and
    # std s; ours has sensitivity Delta and std z Delta: s = 2 z.
    return dp_accounting.GaussianDpEvent(2.0 * noise_multiplier)


@dataclasses.dataclass(frozen=True)
class NoisyWeights(Mechanism):
    """One Gaussian mechanism on the final weights of a non-private descent.

    Continuous, it is ``w + N(0, (noise_multiplier * sensitivity)^2 I)``, the
    mechanism the calibration works on; a fit releases it on a lattice
    (``grid_exponent`` and ``grid_scale`` set, :func:`~._lattice.plan_on_lattice`).
    Its event is ``GaussianDpEvent(2 * noise_multiplier)``: dp-accounting reads
    ``GaussianDpEvent(s)`` under replace-one as sensitivity 2 and std ``s``
    (docs/output_perturbation.rst, "What the fitted model reports").

    Parameters
    ----------
    sensitivity : float
        Delta, > 0.
    noise_multiplier : float
        z >= 0 (0 for a non-private fit): the noise std is ``z * Delta``.
    neighboring : {"replace_one"}, default="replace_one"
    seeded : bool, default=False
        Whether the noise was derived from a seed that travels with the
        model (``reproducible=True``): then nothing is private.
    grid_exponent, grid_scale : int or None, default=None
        The release on a lattice: ``gamma = 2**grid_exponent`` and the rounded
        Gaussian's integer scale ``s``; then ``sensitivity`` is ``gamma Delta_lat``
        and ``noise_multiplier`` is ``s / Delta_lat``.
    """

    sensitivity: float
    noise_multiplier: float
    neighboring: str = _NEIGHBORING
    seeded: bool = False
    grid_exponent: typing.Optional[int] = None
    grid_scale: typing.Optional[int] = None

    def __post_init__(self):
        _check_neighboring(self.neighboring)
        positive_finite(self.sensitivity, "sensitivity")
        if not (isinstance(self.noise_multiplier, numbers.Real)
                and 0 <= self.noise_multiplier < math.inf):
            raise ValueError(
                f"noise_multiplier must be a finite number >= 0; got {self.noise_multiplier!r}.")

    @classmethod
    def calibrated(cls, epsilon, delta, *, sensitivity, neighboring=_NEIGHBORING):
        """The mechanism whose noise meets ``(epsilon, delta)``, and its calibration.

        ``z`` is the smallest noise multiplier whose event ``event_epsilon`` (PLD)
        certifies at ``epsilon``; ``epsilon=inf`` gives no noise. The calibration is
        one step without sampling (``n_steps=1``, ``sample_rate=1``).

        Returns
        -------
        mechanism : NoisyWeights
        calibration : PrivacyCalibration
        """
        _check_neighboring(neighboring)
        sensitivity = positive_finite(sensitivity, "sensitivity")
        if isinstance(delta, bool) or not isinstance(delta, numbers.Real) or not 0 < delta < 1:
            raise ValueError(f"delta must be a number in (0, 1); got {delta!r}.")

        def epsilon_of(noise_multiplier):
            return event_epsilon(_gaussian_event(noise_multiplier), delta, _NEIGHBORING)

        if epsilon == math.inf:
            noise_multiplier, reached = 0.0, math.inf
        else:
            # The classic bound's noise is only where the search starts.
            guess = math.sqrt(2.0 * math.log(1.25 / delta)) / epsilon
            noise_multiplier = float(smallest_noise_for(epsilon_of, epsilon, delta, guess=guess))
            reached = float(epsilon_of(noise_multiplier))
        mechanism = cls(sensitivity=sensitivity, noise_multiplier=noise_multiplier)
        calibration = PrivacyCalibration(noise_multiplier, reached, float(delta), 1.0, 1,
                                         "pld", _NEIGHBORING)
        return mechanism, calibration

    @property
    def noise_std(self):
        """Standard deviation of the noise on every released coefficient (before rounding)."""
        if self.grid_scale is not None:
            return math.ldexp(float(self.grid_scale), self.grid_exponent)
        return self.noise_multiplier * self.sensitivity

    @property
    def grid_step(self):
        """``gamma``, the released weights' lattice step, or None (continuous)."""
        return None if self.grid_exponent is None else math.ldexp(1.0, self.grid_exponent)

    @property
    def private(self):
        """Whether the release is differentially private at all."""
        return self.noise_multiplier > 0 and not self.seeded

    def dp_event(self):
        """``GaussianDpEvent(2 * noise_multiplier)``; ``NonPrivateDpEvent`` without privacy."""
        if not self.private:
            return dp_accounting.NonPrivateDpEvent()
        return _gaussian_event(self.noise_multiplier)


class OutputPerturbationPlan(typing.NamedTuple):
    """What :func:`plan_output_perturbation` fixes before any row is read.

    The mechanism, its calibration, the constants and step, the batches' shape, and
    the problem the constants describe (which the release trains, so that the descent
    and the sensitivity cannot disagree); ``n_features`` and ``lattice`` once the
    plan is on its lattice (``_lattice.plan_on_lattice``).
    """

    mechanism: NoisyWeights
    calibration: PrivacyCalibration
    constants: SmoothnessConstants
    eta: float
    batch_size: int
    n_batches: int
    loss: str
    n_outputs: int
    fit_intercept: bool
    alpha: float
    row_norm_bound: float
    loss_threshold: typing.Optional[float]
    weight_norm_bound: typing.Optional[float]
    target_bound: typing.Optional[float]
    max_sample_weight: float = 1.0
    n_features: typing.Optional[int] = None
    lattice: typing.Any = None


def _optional_float(value):
    return None if value is None else float(value)


def plan_output_perturbation(epsilon, delta, *, n_samples, loss, n_outputs, fit_intercept,
                             alpha, row_norm_bound, batch_size, eta=None, loss_threshold=None,
                             weight_norm_bound=None, target_bound=None,
                             max_sample_weight=1.0, neighboring=_NEIGHBORING):
    """The mechanism of a fit, from public quantities only.

    ``n_samples`` is public under replace-one adjacency, so ``m = floor(n / b)``, the
    sensitivity and the noise are known before the rows are read: an estimator can
    charge its ledger with ``plan.mechanism.dp_event()`` first. ``epsilon=inf`` plans a
    noise-free fit; ``batch_size`` (between 1 and ``n_samples``) and ``eta`` None take
    :func:`default_batch_size` and :func:`default_step`; the loss's arguments are
    :func:`smoothness_constants`'s. Returns an :class:`OutputPerturbationPlan`.
    """
    _check_neighboring(neighboring)
    n_samples = check_positive_int(n_samples, "n_samples")
    constants = smoothness_constants(
        loss, n_outputs, row_norm_bound, alpha, fit_intercept, loss_threshold=loss_threshold,
        weight_norm_bound=weight_norm_bound, target_bound=target_bound,
        max_sample_weight=max_sample_weight)
    if eta is None:
        eta = default_step(constants.smoothness, constants.strong_convexity)
    if batch_size is None:
        batch_size = default_batch_size(n_samples, eta, constants)
    batch_size = check_positive_int(batch_size, "batch_size")
    if batch_size > n_samples:
        raise ValueError(
            f"batch_size must be at most the number of rows; got {batch_size} > {n_samples}.")
    n_batches = n_samples // batch_size
    delta_w = sensitivity(eta, *constants, batch_size, n_batches)
    mechanism, calibration = NoisyWeights.calibrated(epsilon, delta, sensitivity=delta_w)
    return OutputPerturbationPlan(
        mechanism, calibration, constants, float(eta), batch_size, n_batches,
        loss=loss, n_outputs=int(n_outputs), fit_intercept=bool(fit_intercept),
        alpha=float(alpha), row_norm_bound=float(row_norm_bound),
        loss_threshold=_optional_float(loss_threshold),
        weight_norm_bound=_optional_float(weight_norm_bound),
        target_bound=_optional_float(target_bound), max_sample_weight=float(max_sample_weight))
