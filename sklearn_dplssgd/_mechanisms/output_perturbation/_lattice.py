"""Output perturbation's release on a public lattice: integers plus exact integer noise.

The computed weights ``w`` are released as ``gamma (round(w / gamma) + round(s G))``,
``gamma = 2**e`` a public power of two and ``s`` a public integer, the integer noise
sampled exactly (:func:`~sklearn_dplssgd._backends.sample_rounded_gaussian`). It is
post-processing of the Gaussian mechanism on the integer vector ``round(w / gamma)``,
whose sensitivity ``Delta_lat`` widens Proposition 2's ``Delta`` by the roundings and
a rigorous bound on the descent's floating-point error. The proofs (Lemmas O1, O2
and Theorem O3) are in docs/privacy_argument.rst, "The release on a lattice".
"""

import dataclasses
import math

import numpy as np

from ..._accounting import event_epsilon
from ..._backends import MAX_ROUNDED_SCALE, RoundedGaussianScale, sample_rounded_gaussian
from ..._training import GeneratorWords
from ..._utils import check_positive_int
from ._accounting import contraction_factor

__all__ = [
    "LATTICE_BITS", "OutputLattice", "float_error_allowance", "lattice_sensitivity",
    "plan_lattice", "plan_on_lattice", "release_on_lattice",
]

# gamma is the largest power of two with Delta / gamma >= 2**LATTICE_BITS: the
# roundings then add about sqrt(p) 2**-20 of Delta to the noise.
LATTICE_BITS = 20
# Unit roundoff of float64 (round to nearest).
_U = 2.0 ** -53
# |R| is held below this before the integer noise is added: R plus the noise
# (below 38 s <= 38 2**52 < 2**58) stays inside int64.
_LARGEST_LATTICE_POINT = 2.0 ** 61
# Relative slack on the float evaluation of Delta from the public constants.
_CONSTANTS_SLACK = 2.0 ** -40


def _gamma_n(n):
    """Higham's ``gamma_n = n u / (1 - n u)``: the relative error of n roundings."""
    if n * _U >= 0.01:
        raise ValueError("output perturbation: a dimension is too large for the float "
                         "error bound of its descent (n u must stay below 0.01).")
    return n * _U / (1.0 - n * _U)


def float_error_allowance(*, eta, constants, batch_size, n_features, n_outputs,
                          row_norm_bound, fit_intercept, weight_norm_bound=None):
    """``E``, a bound on ``||w_float - w_exact||`` for the descent of output perturbation.

    Lemma O1 of the privacy argument (each term below is named there): the error of
    one computed step against the exact step, over ``1 - rho`` since the exact step
    is a ``rho``-contraction, for any number of steps. ``weight_norm_bound`` is the
    projection's radius (None without projection).

    Raises
    ------
    ValueError
        Where the bound is not below the iterates' own bound (never for realistic
        sizes): the proof's induction would not close.
    """
    gradient_bound, smoothness, mu = constants
    x = math.sqrt(row_norm_bound ** 2 + 1.0) if fit_intercept else row_norm_bound
    coordinates = n_features + 1
    kappa = (smoothness - mu) / x ** 2          # the residual's Lipschitz constant in z
    residual = 3.0 * gradient_bound / x         # a bound on a computed residual's norm
    rho = max(abs(1.0 - eta * mu), abs(1.0 - eta * smoothness))
    if weight_norm_bound is not None:
        weights = weight_norm_bound
    else:
        # ||w_{t+1}|| <= |1 - eta mu| ||w_t|| + eta R from w_0 = 0.
        weights = eta * gradient_bound / (1.0 - abs(1.0 - eta * mu))
    w = 2.0 * weights                           # holds for the computed iterates too
    clip_excess = _gamma_n(n_features + 8)      # ||x_float|| <= x (1 + clip_excess)
    x_float = x * (1.0 + clip_excess)
    residual_error = 16.0 * (n_outputs + 2) * math.sqrt(n_outputs) * _U * residual
    per_step = (
        _gamma_n(3) * (1.0 + eta * mu) * w                             # the decay
        + eta * x_float * kappa * _gamma_n(coordinates) * x_float * w  # the margins
        + eta * x_float * residual_error                               # the residuals
        + eta * _gamma_n(batch_size) * residual * x_float              # the batch sum
        + _gamma_n(5) * eta * residual * x_float + _U * (w + eta * residual * x_float)
        + eta * (residual + kappa * w * x) * clip_excess * x           # the rows' clip
        + (_gamma_n(n_outputs * coordinates + 3) * w if weight_norm_bound is not None
           else 0.0)                                                   # the projection
        # Gradual underflow: far above what the step's operations can lose.
        + 2.0 ** -1000 * math.sqrt(n_outputs * coordinates) * (batch_size + coordinates + 16)
        * (1.0 + eta) * (1.0 + eta * kappa * x_float ** 2)
    )
    allowance = per_step / (1.0 - rho) if rho > 0.0 else per_step
    if not allowance <= weights:
        raise ValueError(
            "output perturbation: the float error bound of the descent is not small "
            "against its weights (too many features or rows for float64).")
    return allowance


def lattice_sensitivity(sensitivity, allowance, grid_exponent, n_released, rho):
    """``Delta_lat``, a bound on ``||R(D) - R(D')||`` in lattice units, rounded up (Lemma O2)."""
    slack = _CONSTANTS_SLACK + 64.0 * _U / max(1.0 - rho, _U)
    widened = (sensitivity * (1.0 + slack) + 2.0 * allowance) * 2.0 ** -grid_exponent
    value = (widened + math.sqrt(n_released)) * (1.0 + 8.0 * _U)
    return math.nextafter(value, math.inf)


class OutputLattice:
    """One release's lattice: ``gamma = 2**grid_exponent``, ``s`` and ``Delta_lat``.

    ``allowance`` is ``E``, the descent's float error bound, on the weights' scale.
    """

    def __init__(self, grid_exponent, grid_scale, lattice_sensitivity, allowance):
        self.grid_exponent = int(grid_exponent)
        self.grid_scale = int(grid_scale)
        self.lattice_sensitivity = float(lattice_sensitivity)
        self.allowance = float(allowance)

    @property
    def noise_multiplier(self):
        """``s / Delta_lat``, rounded down (the event never claims more noise)."""
        return math.nextafter(self.grid_scale / self.lattice_sensitivity, 0.0)


def plan_lattice(sensitivity, noise_multiplier, allowance, n_released, rho):
    """The lattice for the continuous calibration ``z``: ``s = ceil(z Delta_lat)``.

    ``gamma`` is the largest power of two with ``Delta / gamma >= 2**20`` (coarser
    where ``s`` would pass the sampler's ``2**52``); ``s / Delta_lat >= z``, so the
    event's epsilon is at most the continuous calibration's.
    """
    grid_exponent = math.frexp(sensitivity)[1] - 1 - LATTICE_BITS
    while True:
        delta_lat = lattice_sensitivity(sensitivity, allowance, grid_exponent, n_released, rho)
        scale = math.ceil(noise_multiplier * delta_lat)
        if scale <= MAX_ROUNDED_SCALE:
            return OutputLattice(grid_exponent, max(scale, 1), delta_lat, allowance)
        grid_exponent += 1


def release_on_lattice(params, mechanism, rng, fit_intercept, sampler=sample_rounded_gaussian):
    """``gamma (round(w / gamma) + round(s G))`` on every released coefficient (float64).

    ``params`` has shape (..., K, d + 1); leading axes are kept. Without an intercept
    the last column stays 0. The noise's words are the next words of ``rng``'s stream.
    """
    exponent = mechanism.grid_exponent
    released = np.zeros(np.shape(params), dtype=np.float64)
    columns = released.shape[-1] if fit_intercept else released.shape[-1] - 1
    weights = np.asarray(params, dtype=np.float64)[..., :columns]
    # Exact: a power of two. Clamping to a public range is 1-Lipschitz per
    # coordinate (the sensitivity holds) and keeps the sum in int64.
    scaled = np.ldexp(np.nan_to_num(weights, nan=0.0), -exponent)
    lattice_point = np.rint(np.clip(scaled, -_LARGEST_LATTICE_POINT, _LARGEST_LATTICE_POINT))
    noise = sampler(lattice_point.size, RoundedGaussianScale(mechanism.grid_scale),
                    GeneratorWords(rng))
    integers = lattice_point.astype(np.int64) + noise.reshape(lattice_point.shape)
    # A function of the integers alone (post-processing), exact below 2**53.
    released[..., :columns] = np.ldexp(integers.astype(np.float64), exponent)
    return released


def plan_on_lattice(plan, n_features):
    """``plan`` with its release on the lattice, for ``n_features`` public features.

    The lattice mechanism's multiplier ``s / Delta_lat`` is at least the plan's ``z``;
    its epsilon is recomputed by the accountant from its own event. A noise-free plan
    gets its features only (it releases the float weights).
    """
    n_features = check_positive_int(n_features, "n_features")
    if plan.lattice is not None and plan.n_features == n_features:
        return plan
    continuous = plan.mechanism
    if continuous.grid_scale is not None:
        raise ValueError("plan_on_lattice: the plan is already on a lattice for another "
                         "number of features.")
    if not continuous.noise_multiplier > 0:
        return plan._replace(n_features=n_features)
    constants = plan.constants
    rho = contraction_factor(plan.eta, constants.smoothness, constants.strong_convexity)
    allowance = float_error_allowance(
        eta=plan.eta, constants=constants, batch_size=plan.batch_size, n_features=n_features,
        n_outputs=plan.n_outputs, row_norm_bound=plan.row_norm_bound,
        fit_intercept=plan.fit_intercept, weight_norm_bound=plan.weight_norm_bound)
    n_released = plan.n_outputs * (n_features + int(plan.fit_intercept))
    lattice = plan_lattice(continuous.sensitivity, continuous.noise_multiplier, allowance,
                           n_released, rho)
    mechanism = dataclasses.replace(
        continuous, sensitivity=math.ldexp(lattice.lattice_sensitivity, lattice.grid_exponent),
        noise_multiplier=lattice.noise_multiplier, grid_exponent=lattice.grid_exponent,
        grid_scale=lattice.grid_scale)
    calibration = dataclasses.replace(
        plan.calibration, noise_multiplier=mechanism.noise_multiplier,
        epsilon=float(event_epsilon(mechanism.dp_event(), plan.calibration.delta,
                                    mechanism.neighboring)))
    return plan._replace(mechanism=mechanism, calibration=calibration, n_features=n_features,
                         lattice=lattice)
