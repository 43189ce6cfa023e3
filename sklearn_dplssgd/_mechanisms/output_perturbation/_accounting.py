"""Output perturbation: non-private mini-batch descent, then Gaussian noise once.

The mechanism of Chen, Lee and Kifer (Proposition 2 of the supplement of "Renyi
Differentially Private ERM for Smooth Objectives", AISTATS 2019):

1. clip every row to a public L2 norm bound (on a copy of the data);
2. draw one random permutation of the rows, independent of their values, and
   cut it into ``m = floor(n / b)`` batches of exactly ``b`` rows;
3. run plain (noise-free, unclipped-gradient) mini-batch gradient descent
   with a constant step ``eta`` over these batches, for any number of passes,
   on an objective that is ``L``-smooth and ``mu``-strongly convex and whose
   per-sample loss gradients are bounded by ``R``;
4. release the final weights plus ``N(0, (z Delta)^2 I)``, where ``Delta`` is
   the replace-one L2 sensitivity of the final weights (:func:`sensitivity`);
   a fit does so on a public lattice, with exactly sampled integer noise and
   a sensitivity widened by the roundings and the descent's float error
   (:mod:`._lattice`).

Everything the privacy claim depends on (``n``, ``b``, the constants, the
step and the noise) is computed from public quantities before any row is
read; the rows only enter the descent, whose output the Gaussian mechanism
protects. The accounting is dp-accounting's, through
``accounting.event_epsilon``.

Proposition 3 of the same supplement (averaging over the uniformly random
batch of the differing row) is tighter but is not used: its mixture RDP curve
is not a dp-accounting event, and dp-accounting's ``MixtureOfGaussiansDpEvent``
describes a different pair of distributions (DESIGN.md, section 8).

This module holds the constants, the sensitivity and the plan; the descent
and the release are in :mod:`~sklearn_dplssgd._mechanisms.output_perturbation._descent`.
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
    "NON_SMOOTH_LOSSES",
    "SMOOTH_LOSSES",
    "OutputPerturbation",
    "OutputPerturbationPlan",
    "SmoothnessConstants",
    "contraction_factor",
    "default_batch_size",
    "default_passes",
    "default_step",
    "positive_finite",
    "plan_output_perturbation",
    "sensitivity",
    "smoothness_constants",
]


# The only adjacency Proposition 2 bounds: the two data sets have the same
# rows but one, so the same permutation cuts them into the same batches.
_NEIGHBORING = "replace_one"


# --------------------------------------------------------------------------
# Validation helpers (messages name the parameter, never a data value)
# --------------------------------------------------------------------------


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


# --------------------------------------------------------------------------
# The constants of the objective
# --------------------------------------------------------------------------


class SmoothnessConstants(typing.NamedTuple):
    """Constants of the L2-penalised objective that Proposition 2 needs.

    Attributes
    ----------
    gradient_bound : float
        R: a bound on the L2 norm of one row's loss gradient (the penalty's
        gradient is the same for both neighbours and cancels).
    smoothness : float
        L: a bound on the Hessian's largest eigenvalue (loss plus penalty).
    strong_convexity : float
        mu: a lower bound on the Hessian's smallest eigenvalue (``alpha``).
    """

    gradient_bound: float
    smoothness: float
    strong_convexity: float


def smoothness_constants(loss, n_outputs, row_norm_bound, alpha, fit_intercept, *,
                         loss_threshold=None, weight_norm_bound=None, target_bound=None,
                         max_sample_weight=1.0):
    """R, L and mu of the objective, from public bounds only (DESIGN.md, section 8).

    The objective is ``mean_i loss(W x_i + b; y_i) + alpha / 2 ||(W, b)||^2``
    with every row clipped to ``||x_i|| <= row_norm_bound``. The intercept is
    the weight of an appended constant feature 1, so the augmented rows have
    norm at most ``X = sqrt(row_norm_bound^2 + 1)`` with ``fit_intercept``
    (``X = row_norm_bound`` without), and it is penalised like the other
    weights, or the objective would not be strongly convex in it. With
    ``K = n_outputs`` (1 for the regression losses, which have one output):

    ====================  ===========================  =================
    loss                  R                            L
    ====================  ===========================  =================
    log_loss, K = 1       X                            X^2 / 4 + alpha
    log_loss, K > 1       sqrt(2) X                    X^2 / 2 + alpha
    huber (threshold h)   h X                          X^2 + alpha
    squared_error         (W X + Y) X                  X^2 + alpha
    ====================  ===========================  =================

    and ``mu = alpha``. Why: ``|sigmoid(z) - y| <= 1`` and ``sigmoid' <= 1/4``;
    ``||softmax(z) - onehot(y)||^2 <= 2 (1 - p_y)^2 <= 2`` and the softmax
    Hessian ``diag(p) - p p^T`` has eigenvalues at most 1/2; Huber's
    derivative is clipped to ``[-h, h]`` with curvature at most 1;
    the squared error's residual ``w . x - y`` is at most ``W X + Y``
    only while ``||(W, b)|| <= W`` (the training projects onto that ball after
    every step, a non-expansive map that keeps the contraction) and
    ``|y| <= Y`` (the training clips the targets). The Hessian of a row's
    loss is (curvature in z) times ``x x^T``, whose norm is ``||x||^2 <= X^2``.

    Parameters
    ----------
    loss : {"log_loss", "huber", "squared_error"}
    n_outputs : int
        K: 1 for binary log_loss and for regression (huber and squared_error
        have one output), the number of classes for multinomial log_loss.
    row_norm_bound : float
        Public bound to which every row (without the intercept's 1) is
        clipped.
    alpha : float
        L2 strength, > 0: it is mu.
    fit_intercept : bool
    loss_threshold : float, optional
        Huber threshold h > 0 (required for ``huber``, unused otherwise).
    weight_norm_bound : float, optional
        W, the public radius of the ball the weights are projected onto:
        required for ``squared_error``, refused for the other losses.
    target_bound : float, optional
        Y, the public bound the targets are clipped to (``|y| <= Y``):
        required for ``squared_error``, ignored by the other losses.
    max_sample_weight : float, default=1.0
        w_max, the public bound on a row's weight: a weighted row's loss
        ``w_i loss_i`` has gradient at most ``w_max R`` and curvature at most
        ``w_max`` times the loss's, so R and the loss's part of L are
        multiplied by it.

    Returns
    -------
    SmoothnessConstants
        ``(R, L, mu)``, unpackable as a tuple.

    Raises
    ------
    ValueError
        For ``alpha <= 0``, a non-smooth loss (hinge, epsilon_insensitive),
        ``squared_error`` without both bounds, or another invalid argument;
        the message names the parameter or the loss and says why.
    """
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
    alpha = positive_finite(alpha, "alpha")
    n_outputs = check_positive_int(n_outputs, "n_outputs")
    row_norm_bound = positive_finite(row_norm_bound, "row_norm_bound")
    definition = LOSSES[loss]
    if weight_norm_bound is not None and not definition.needs_weight_bound:
        raise ValueError(
            f"weight_norm_bound is only used by a loss whose gradient grows with the "
            f"margin ({', '.join(n for n, entry in LOSSES.items() if entry.needs_weight_bound)}); "
            f"loss={loss!r} has bounded gradients: leave it None."
        )
    if definition.multiclass_code is None and n_outputs != 1:
        raise ValueError(
            f"loss={loss!r} has one output (the library's regression losses are "
            f"single-target); got n_outputs={n_outputs}.")
    if definition.uses_threshold:
        if loss_threshold is None:
            raise ValueError(f"loss={loss!r} needs loss_threshold (the threshold h > 0).")
        loss_threshold = positive_finite(loss_threshold, "loss_threshold")
    needs_target_bound = definition.needs_weight_bound and definition.task == "regression"
    if definition.needs_weight_bound:
        if weight_norm_bound is None or (needs_target_bound and target_bound is None):
            raise ValueError(
                f"loss={loss!r} needs weight_norm_bound (W)"
                + (" and target_bound (Y)" if needs_target_bound else "")
                + ": its gradient grows with the margin, so it is unbounded unless the "
                "weights are projected onto a ball of public radius W"
                + (" and the targets clipped to |y| <= Y; then R = (W X + Y) X."
                   if needs_target_bound else ".")
            )
        weight_norm_bound = positive_finite(weight_norm_bound, "weight_norm_bound")
        if needs_target_bound:
            target_bound = positive_finite(target_bound, "target_bound")
    # The intercept is the weight of a constant feature 1.
    x = math.sqrt(row_norm_bound**2 + 1.0) if fit_intercept else row_norm_bound
    gradient_bound, loss_smoothness = LOSSES[loss].constants(
        x, n_outputs, loss_threshold, weight_norm_bound, target_bound)
    w_max = positive_finite(max_sample_weight, "max_sample_weight")
    return SmoothnessConstants(w_max * gradient_bound, w_max * loss_smoothness + alpha, alpha)


# --------------------------------------------------------------------------
# Step and sensitivity
# --------------------------------------------------------------------------


def contraction_factor(eta, smoothness, strong_convexity):
    """rho = max(|1 - eta mu|, |1 - eta L|): one gradient step's Lipschitz constant.

    Lemma 2 of Chen, Lee and Kifer, AISTATS 2019: the same batch's step maps
    two weight vectors ``v`` apart to two at most ``rho v`` apart.
    """
    return max(abs(1.0 - eta * strong_convexity), abs(1.0 - eta * smoothness))


def default_step(smoothness, strong_convexity):
    """The constant step ``2 / (L + mu)``, computed from public constants only.

    It minimises ``rho = max(|1 - eta mu|, |1 - eta L|)`` over ``eta``: the
    first term decreases and the second increases with ``eta`` (for
    ``eta >= 1 / L``), and they meet at ``eta = 2 / (L + mu)``, where
    ``rho = (L - mu) / (L + mu) < 1`` (Chen, Lee and Kifer, AISTATS 2019,
    proof of Proposition 2). That
    is the fastest contraction of a gradient step, hence the fastest
    convergence per pass; it always satisfies ``eta < 2 / L``.

    A smaller step lowers the sensitivity (``2 eta R / (b (1 - rho^m))``
    increases with ``eta`` and tends to ``2 R / (m b mu)`` as ``eta -> 0``) but
    needs more passes to converge; the default does not trade that off.

    Parameters
    ----------
    smoothness : float
        L.
    strong_convexity : float
        mu, with ``0 < mu <= L``.

    Returns
    -------
    float
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
    """``b = floor(n / m)`` for ``m = max(1, floor(0.25 / (1 - rho)))`` batches.

    Public quantities only. The sensitivity ``2 eta R / (b (1 - rho^m))``
    with ``b m = n`` is smallest for one batch, ``2 eta R / (n (1 - rho))``,
    and grows towards ``2 eta R / b`` as ``m`` grows past ``1 / (1 - rho)``;
    with ``m (1 - rho) = 0.25`` it is within 12 % of the floor while each
    pass takes ``m`` steps instead of one (faster convergence per pass).

    Parameters
    ----------
    n_samples : int
    eta : float
    constants : SmoothnessConstants

    Returns
    -------
    int
    """
    rho = contraction_factor(eta, constants.smoothness, constants.strong_convexity)
    n_batches = max(1, min(n_samples, math.floor(_BATCHES_PER_CONTRACTION / (1.0 - rho))))
    return max(1, n_samples // n_batches)


def default_passes(plan):
    """Passes over the batches for ``rho^(m passes) <= e^-10``: a converged descent.

    At most ``20,000`` steps (at least one pass). The noise does not depend on
    the number of passes (the sensitivity bound holds for any), only the
    running time and how close the descent gets to the minimiser do.

    Parameters
    ----------
    plan : OutputPerturbationPlan

    Returns
    -------
    int
    """
    rho = contraction_factor(plan.eta, plan.constants.smoothness,
                             plan.constants.strong_convexity)
    if rho == 0.0:
        return 1
    steps = min(_CONTRACTIONS_TO_CONVERGE / -math.log(rho), _MAX_DEFAULT_STEPS)
    return max(1, math.ceil(steps / plan.n_batches))


def sensitivity(eta, gradient_bound, smoothness, strong_convexity, batch_size, n_batches):
    """Replace-one L2 sensitivity of the final weights: ``2 eta R / (b (1 - rho^m))``.

    Proposition 2 of Chen, Lee and Kifer, AISTATS 2019, with
    ``rho = max(|1 - eta mu|, |1 - eta L|)``.
    The two neighbours run the same permutation, cut into the same ``m``
    batches of ``b`` rows, and differ in one batch ``j``. In every pass the
    steps on the other batches contract the distance of the two weight
    vectors by ``rho`` (Lemma 2) and the step on batch ``j`` adds at most
    ``2 eta R / b``; after ``k`` passes from the same start the distance is at
    most ``rho^(m - j) (2 eta R / b) (1 + rho^m + ... + rho^((k - 1) m))``,
    a partial geometric sum, so the bound holds for ANY number of passes
    (the proposition's "arbitrary number of epochs"). A differing row that
    falls among the ``n - m b`` rows the permutation leaves out changes
    nothing. The bound holds for every fixed permutation, so drawing it at
    random (and keeping it secret or not) costs nothing.

    Parameters
    ----------
    eta : float
        Constant step size (the estimators' ``eta0``).
    gradient_bound, smoothness, strong_convexity : float
        R, L and mu (see :func:`smoothness_constants`).
    batch_size : int
        b, the size of every batch.
    n_batches : int
        m = floor(n / b).

    Returns
    -------
    float
        Delta.

    Raises
    ------
    ValueError
        When ``rho >= 1``, i.e. ``eta`` is not in ``(0, 2 / L)``: the steps do
        not contract and no bound holds.
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


# --------------------------------------------------------------------------
# The mechanism
# --------------------------------------------------------------------------


def _gaussian_event(noise_multiplier):
    # dp-accounting's GaussianDpEvent(s) under REPLACE_ONE is the pair
    # N(-1, s^2), N(+1, s^2): sensitivity 2, std s (PLD: AdjacencyType.REPLACE
    # shifts mu_upper and mu_lower by -1 and +1). Our release has sensitivity
    # Delta and std z Delta, i.e. std / sensitivity = z = s / 2.
    return dp_accounting.GaussianDpEvent(2.0 * noise_multiplier)


@dataclasses.dataclass(frozen=True)
class OutputPerturbation(Mechanism):
    """One Gaussian mechanism on the final weights of a non-private descent.

    Continuous, it is ``w + N(0, (noise_multiplier * sensitivity)^2 I)``
    where ``sensitivity`` is the replace-one L2 sensitivity Delta of the
    weights ``w`` (:func:`sensitivity`): the mechanism the calibration works
    on. A fit releases it on a lattice (``grid_exponent`` and ``grid_scale``
    set, :func:`~._lattice.plan_on_lattice`): the rounded weights plus
    exactly sampled rounded Gaussian integers, the same Gaussian event at
    the lattice's own sensitivity and multiplier. The mechanism has the
    interface of
    :class:`~sklearn_dplssgd._mechanisms._gradient.GradientPerturbation`.

    **Event encoding.** Every event of this library is accounted by
    dp-accounting under the fit's neighbouring relation, and dp-accounting
    reads ``GaussianDpEvent(s)`` under ``REPLACE_ONE`` as the Gaussian
    mechanism with L2 sensitivity 2 and noise standard deviation ``s`` (a
    replaced row moves a unit query from -1 to +1). The event of this
    mechanism is therefore ``GaussianDpEvent(2 * noise_multiplier)``: under
    ``"replace_one"`` it is exactly the Gaussian mechanism with sensitivity
    Delta and standard deviation ``noise_multiplier * Delta`` (checked against
    the analytic Gaussian mechanism of Balle and Wang 2018 in the tests).

    Parameters
    ----------
    sensitivity : float
        Delta, > 0.
    noise_multiplier : float
        z >= 0 (0 for a non-private fit): the noise std is ``z * Delta``.
    neighboring : {"replace_one"}, default="replace_one"
        Proposition 2 bounds replace-one neighbours only; "add_remove" is
        refused.
    seeded : bool, default=False
        Whether the noise was derived from a seed that travels with the
        model (``reproducible=True``): then nothing is private.
    grid_exponent, grid_scale : int or None, default=None
        The release on a lattice (:mod:`._lattice`): ``gamma = 2**grid_exponent``
        and the rounded Gaussian's integer scale ``s``. Then ``sensitivity``
        is ``gamma Delta_lat`` (the widened sensitivity of the rounded
        weights), ``noise_multiplier`` is ``s / Delta_lat`` and the noise's
        standard deviation before rounding is ``s gamma``. None for the
        continuous mechanism the calibration works on.
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

        ``z`` is the smallest noise multiplier whose event
        (``GaussianDpEvent(2 z)`` under replace-one) the library's accountant,
        ``accounting.event_epsilon`` (PLD, pessimistic),
        certifies at ``epsilon``; found by
        :func:`~sklearn_dplssgd._accounting._events.smallest_noise_for`.

        Parameters
        ----------
        epsilon : float
            Target, > 0; ``inf`` gives no noise.
        delta : float
            In (0, 1).
        sensitivity : float
            Delta, computed from public quantities (:func:`sensitivity`).
        neighboring : {"replace_one"}, default="replace_one"

        Returns
        -------
        mechanism : OutputPerturbation
        calibration : PrivacyCalibration
            ``noise_multiplier`` (relative to Delta) and the epsilon it
            reaches; one step (``n_steps=1``) without sampling
            (``sample_rate=1``).
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
        """``GaussianDpEvent(2 * noise_multiplier)`` (see the class docstring).

        ``NonPrivateDpEvent`` without noise or for a seeded fit.
        """
        if not self.private:
            return dp_accounting.NonPrivateDpEvent()
        return _gaussian_event(self.noise_multiplier)


class OutputPerturbationPlan(typing.NamedTuple):
    """What :func:`plan_output_perturbation` fixes before any row is read.

    The mechanism and its calibration, the constants and step they come
    from, the batches' shape, and the problem the constants describe (which
    :func:`release_output_perturbation` trains, so that the descent and the
    sensitivity cannot disagree).
    """

    mechanism: OutputPerturbation
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
    # The release's lattice (``_lattice.plan_on_lattice``), fixed with the
    # public number of features; None for the continuous plan.
    n_features: typing.Optional[int] = None
    lattice: typing.Any = None


def plan_output_perturbation(epsilon, delta, *, n_samples, loss, n_outputs, fit_intercept,
                             alpha, row_norm_bound, batch_size, eta=None, loss_threshold=None,
                             weight_norm_bound=None, target_bound=None,
                             max_sample_weight=1.0, neighboring=_NEIGHBORING):
    """The mechanism of a fit, from public quantities only.

    ``n_samples`` is public under replace-one adjacency (neighbours have the
    same number of rows), so the number of batches ``m = floor(n / b)``, the
    sensitivity and the noise are all known before the rows are read: an
    estimator can charge its ledger with ``plan.mechanism.dp_event()`` first.

    Parameters
    ----------
    epsilon, delta : float
        Target; ``epsilon=inf`` plans a noise-free fit.
    n_samples : int
        n, the number of rows.
    loss, n_outputs, fit_intercept, alpha, row_norm_bound, loss_threshold, \
weight_norm_bound, target_bound, max_sample_weight
        See :func:`smoothness_constants`.
    batch_size : int or None
        b, between 1 and ``n_samples``; None takes :func:`default_batch_size`.
    eta : float or None, default=None
        Constant step; None takes :func:`default_step`.
    neighboring : {"replace_one"}, default="replace_one"

    Returns
    -------
    OutputPerturbationPlan
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
    mechanism, calibration = OutputPerturbation.calibrated(epsilon, delta, sensitivity=delta_w)
    return OutputPerturbationPlan(
        mechanism, calibration, constants, float(eta), batch_size, n_batches,
        loss=loss, n_outputs=int(n_outputs), fit_intercept=bool(fit_intercept),
        alpha=float(alpha), row_norm_bound=float(row_norm_bound),
        loss_threshold=None if loss_threshold is None else float(loss_threshold),
        weight_norm_bound=None if weight_norm_bound is None else float(weight_norm_bound),
        target_bound=None if target_bound is None else float(target_bound),
        max_sample_weight=float(max_sample_weight))


# --------------------------------------------------------------------------
# Training
# --------------------------------------------------------------------------
