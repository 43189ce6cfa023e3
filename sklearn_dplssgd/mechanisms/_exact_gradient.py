"""Gradient perturbation with exact noise: integer sums plus exactly sampled integer noise.

``mechanism="gradient_exact"`` plans like gradient perturbation (the same
q, T and clip from public quantities) and releases at each step ``S + Y`` in
int64: ``S`` the sampled rows' clipped gradients, each rounded onto the
public grid ``gamma = 2**-(k1 + k2) w_max C`` factor by factor (the
residuals on ``2**-k1 w_max C``, the unit rows on ``2**-k2``) with each
factor's squared norm enforced, so that a row's squared norm is at most ``B =
factored_norm_bound(k1, k2, K, D2) = A Bb`` exactly, ``Y`` integer noise on each of the ``D``
noisy coordinates, sampled exactly with integer arithmetic from a ChaCha20
keystream keyed from the operating system
(:mod:`sklearn_dplssgd.backends._exact`). The model is a post-processing
of those integers: the float64 side channels of a sampled Gaussian added to
a float sum (Mironov, CCS 2012; Jin et al., S&P 2022; Haney et al., 2022)
are not there to read. Two noise laws:

* ``"gradient_exact"`` (:class:`RoundedGaussianGradientPerturbation`): the
  rounded Gaussian ``Y = round(s G)``, ``s`` a public integer. As ``S`` is
  an integer vector, ``S + round(s G) = round(S + s G)``: the release is a
  post-processing of the continuous Gaussian mechanism on ``S``
  (sensitivity ``sqrt(B)``, noise multiplier ``s / sqrt(B)``), Poisson
  subsampled and composed as the ordinary mode's. Its accounting *is* the
  ordinary mode's (the estimator's accountant, PLD by default) and its
  ``dp_event`` the ordinary composable event at multiplier ``s / sqrt(B)``;
  the grid costs the ratio ``sqrt(B) / 2**(k1 + k2)`` of noise (about
  0.06 % at ``K = 10``, ``d = 784`` and the MNIST noise).
* ``"gradient_exact_discrete"`` (:class:`ExactGradientPerturbation`): the
  discrete Gaussian ``N_Z(0, s^2)``, accounted by
  :func:`~sklearn_dplssgd.accounting.exact_noise_epsilon` (the
  Poisson-subsampled discrete Gaussian's RDP at integer orders, bounded by
  the continuous one's at multiplier ``s / sqrt(B)``; see the privacy
  argument). Its ``dp_event`` is an
  :class:`~sklearn_dplssgd.accounting.EpsilonDeltaDpEvent` carrying that
  epsilon at the fit's delta: dp-accounting has no event for a multivariate
  discrete Gaussian, and a Gaussian event would let its PLD and fractional
  RDP orders state less than the bound proves; composed with other releases
  it adds by basic composition, which holds for any mechanisms.
"""

import dataclasses
import fractions
import functools
import math

import dp_accounting

from ..accounting import (
    EpsilonDeltaDpEvent, PrivacyCalibration, calibrate_noise, exact_noise_epsilon,
    smallest_noise_for,
)
from ..backends import (
    MAX_GRID_BITS, MAX_ROUNDED_SCALE, ChaChaWords, DiscreteGaussianScale, ExactNoise,
    RoundedGaussianScale, factored_norm_bound, train_dp_lssgd_exact,
)
from ._gradient import GradientPerturbation, GradientPerturbationMechanism
from ._release import NoiseAdded

__all__ = [
    "DiscreteExactGradientPerturbationMechanism",
    "ExactGradientPerturbation",
    "ExactGradientPerturbationMechanism",
    "GridGradientPerturbation",
    "RoundedGaussianGradientPerturbation",
    "grid_bits_for",
]

# The finest grids: each factor on 2**-16 (the residuals times w_max C); the
# sum's grid is then 2**-32 w_max C.
FINEST_GRID_BITS = (MAX_GRID_BITS, MAX_GRID_BITS)
# The grid is made coarser until the noise's scale in grid units, this many
# times the first guess (the exact bound needs some 10 to 20 % more noise than
# the RDP calibration it starts from), fits the exact sampler's range (2**25).
_SCALE_HEADROOM = 2.0
_LARGEST_SCALE = 2.0 ** 25


def grid_bits_for(noise_multiplier, n_outputs, row_width, *, largest_scale=_LARGEST_SCALE,
                  headroom=_SCALE_HEADROOM, name="gradient_exact_discrete"):
    """``(k1, k2)`` of the factored grid for a noise multiplier near ``noise_multiplier``.

    Of the grids ``k1, k2 in [0, MAX_GRID_BITS]`` on which the noise's
    standard deviation ``z sqrt(A Bb)`` (grid units), times ``headroom``
    (room for a calibration's search or a rounding up), stays within the
    sampler's range ``largest_scale`` (by default the discrete Gaussian's),
    the one whose sensitivity ``sqrt(A Bb) / 2**(k1 + k2)`` is least relative
    to the clip (the finer of equals). From public quantities only: ``z``,
    ``K`` and ``D2`` (``d + 1``, or ``d`` without intercept).

    Raises
    ------
    ValueError
        If even the coarsest grid needs a scale beyond ``largest_scale``
        (``name`` is the mechanism the message names).
    """
    best, best_ratio = None, math.inf
    for residual_bits in range(MAX_GRID_BITS + 1):
        for row_bits in range(MAX_GRID_BITS + 1):
            root = math.sqrt(factored_norm_bound(residual_bits, row_bits, n_outputs, row_width))
            if not headroom * noise_multiplier * root <= largest_scale:
                continue
            ratio = root * 2.0 ** -(residual_bits + row_bits)
            if ratio < best_ratio or (ratio == best_ratio
                                      and residual_bits + row_bits > sum(best)):
                best, best_ratio = (residual_bits, row_bits), ratio
    if best is None:
        raise ValueError(
            f"mechanism={name!r}: the noise this epsilon needs is beyond the exact "
            "sampler's range; use a larger epsilon, or mechanism='gradient'.")
    return best


def _row_width(n_coordinates, n_outputs):
    """``D2 = D / K``, checked."""
    if n_outputs < 1 or n_coordinates % n_outputs:
        raise ValueError("n_coordinates must be a multiple of n_outputs.")
    return n_coordinates // n_outputs


@dataclasses.dataclass(frozen=True)
class GridGradientPerturbation(GradientPerturbation):
    """The steps of an exact mode: integer sums on a public factored grid, plus exact noise.

    The fields of :class:`GradientPerturbation`, and:

    Parameters
    ----------
    residual_bits, row_bits : int
        ``k1``, ``k2``: the residual factor's grid step is ``2**-k1`` times
        ``max_sample_weight * clip_norm``, the unit row factor's ``2**-k2``.
    n_coordinates : int
        ``D = K D2``, the noisy coordinates of a step.
    n_outputs : int
        ``K``.
    """

    residual_bits: int = MAX_GRID_BITS
    row_bits: int = MAX_GRID_BITS
    n_coordinates: int = 1
    n_outputs: int = 1

    @property
    def grid_bits(self):
        """``k1 + k2``: the integer sum's grid step is ``2**-(k1 + k2) w_max C``."""
        return self.residual_bits + self.row_bits

    @property
    def sensitivity_squared(self):
        """``B = A Bb``: one row's rounded contribution has squared norm at most this."""
        return factored_norm_bound(self.residual_bits, self.row_bits, self.n_outputs,
                                   _row_width(self.n_coordinates, self.n_outputs))

    def noise_added(self):
        """The :class:`NoiseAdded` of the steps: the lattice, its bound and the exact law.

        ``law`` and ``scale`` are the subclass's (no noise: a scale of 0).
        """
        grid_step = self.sensitivity * 2.0 ** -self.grid_bits
        bound = self.sensitivity_squared
        scale = 0.0 if self.scale is None else self.scale.std
        return NoiseAdded(self.law, self.clip_norm, self.max_sample_weight,
                          math.sqrt(bound) * grid_step, (scale * grid_step,),
                          grid_step=grid_step, grid_bits=self.grid_bits, grid_bound=bound,
                          grid_scale=scale)


@dataclasses.dataclass(frozen=True)
class ExactGradientPerturbation(GridGradientPerturbation):
    """``n_steps`` Poisson-sampled steps of integer sums plus discrete Gaussian noise.

    The fields of :class:`GridGradientPerturbation` (``noise_multiplier`` is
    the noise's standard deviation relative to the sensitivity, ``sqrt(s^2) /
    2**(k1 + k2)``, for the step size rules and the record), and:

    Parameters
    ----------
    noise_scale : tuple of int or None
        ``(t, m, q)`` of the :class:`~sklearn_dplssgd.backends.DiscreteGaussianScale`;
        None for a noise-free fit (``epsilon=inf``, not private).
    delta : float
        The delta at which :meth:`dp_event` states its epsilon.
    """

    noise_scale: tuple = (1, 1, 1)
    delta: float = 0.0
    law = "discrete Gaussian"

    @property
    def scale(self):
        """The noise's variance on the grid, as a DiscreteGaussianScale (None without noise)."""
        if self.noise_scale is None:
            return None
        return DiscreteGaussianScale(*self.noise_scale)

    @classmethod
    def with_scale(cls, scale, *, grid_bits, **fields):
        """The mechanism of a ``scale`` on the factored grid ``grid_bits = (k1, k2)``."""
        residual_bits, row_bits = grid_bits
        return cls(noise_multiplier=math.sqrt(float(scale.variance)) * 2.0 ** -(
            residual_bits + row_bits), residual_bits=int(residual_bits), row_bits=int(row_bits),
            noise_scale=(scale.t, scale.m, scale.q), **fields)

    @classmethod
    def calibrated(cls, epsilon, delta, *, sample_rate, n_steps, neighboring, clip_norm,
                   n_coordinates, n_outputs=1, n_samples=None, max_sample_weight=1.0):
        """The exact mechanism whose :func:`exact_noise_epsilon` meets ``(epsilon, delta)``.

        The search starts at the ordinary mode's RDP calibration and goes up
        (:func:`~sklearn_dplssgd.accounting.smallest_noise_for`); the scale
        is rounded up onto the sampler's rational grid and the epsilon
        stated is that of the variance actually sampled (a float no larger).

        Returns
        -------
        mechanism : ExactGradientPerturbation
        calibration : PrivacyCalibration
        """
        start = calibrate_noise(epsilon, delta, sample_rate=sample_rate, n_steps=n_steps,
                                accountant="rdp", neighboring=neighboring, n_samples=n_samples)
        if epsilon == math.inf:
            # No noise, as in the ordinary mode: the integer sums on the
            # finest grid, released as they are, and epsilon_ = inf.
            mechanism = cls(
                noise_multiplier=0.0, residual_bits=MAX_GRID_BITS, row_bits=MAX_GRID_BITS,
                noise_scale=None, sample_rate=float(sample_rate), n_steps=int(n_steps),
                neighboring=neighboring, clip_norm=float(clip_norm),
                max_sample_weight=float(max_sample_weight), n_coordinates=int(n_coordinates),
                n_outputs=int(n_outputs), delta=float(delta))
            return mechanism, start
        row_width = _row_width(n_coordinates, n_outputs)
        bits = grid_bits_for(start.noise_multiplier, n_outputs, row_width)
        bound = factored_norm_bound(*bits, n_outputs, row_width)

        def scale_of(multiplier):
            return DiscreteGaussianScale.at_least(
                min(multiplier * math.sqrt(bound), _LARGEST_SCALE))

        def epsilon_of(multiplier):
            return exact_noise_epsilon(
                variance=scale_of(multiplier).variance_at_most(), sensitivity_squared=bound,
                sample_rate=sample_rate, n_steps=n_steps, delta=delta, neighboring=neighboring)

        multiplier = smallest_noise_for(epsilon_of, epsilon, delta,
                                        guess=start.noise_multiplier)
        scale = scale_of(multiplier)
        stated = epsilon_of(multiplier)
        if not stated <= epsilon:
            raise ValueError(
                "mechanism='gradient_exact_discrete': the noise this epsilon needs is beyond the "
                "exact "
                "sampler's range; use a larger epsilon, or mechanism='gradient'.")
        mechanism = cls.with_scale(
            scale, grid_bits=bits, sample_rate=float(sample_rate), n_steps=int(n_steps),
            neighboring=neighboring, clip_norm=float(clip_norm),
            max_sample_weight=float(max_sample_weight), n_coordinates=int(n_coordinates),
            n_outputs=int(n_outputs), delta=float(delta))
        return mechanism, PrivacyCalibration(
            mechanism.noise_multiplier, float(stated), float(delta), float(sample_rate),
            int(n_steps), "rdp", neighboring)

    def exact_epsilon(self, delta):
        """:func:`exact_noise_epsilon` of the release at ``delta``."""
        return exact_noise_epsilon(
            variance=self.scale.variance_at_most(), sensitivity_squared=self.sensitivity_squared,
            sample_rate=self.sample_rate, n_steps=self.n_steps, delta=delta,
            neighboring=self.neighboring)

    def dp_event(self):
        """``EpsilonDeltaDpEvent(epsilon, delta)`` of the release (see the module's docstring).

        ``NonPrivateDpEvent`` without noise or for a seeded fit, whose noise
        can be regenerated.
        """
        if not self.private:
            return dp_accounting.NonPrivateDpEvent()
        return EpsilonDeltaDpEvent(self.exact_epsilon(self.delta), self.delta)

    def epsilon(self, delta, accountant=None):
        """Epsilon at ``delta`` (``inf`` when not private); ``accountant`` is not used."""
        if not self.private:
            return math.inf
        return self.exact_epsilon(delta)


@dataclasses.dataclass(frozen=True)
class RoundedGaussianGradientPerturbation(GridGradientPerturbation):
    """``n_steps`` Poisson-sampled steps of integer sums plus rounded Gaussian noise.

    Each step releases ``S + round(s G)`` (``G`` standard normal on each of
    the ``D`` coordinates, ``s`` a public integer in grid units), which is
    ``round(S + s G)``: a post-processing of the Gaussian mechanism on the
    integer sum ``S``, whose sensitivity is ``sqrt(B)`` grid units. The
    fields of :class:`GradientPerturbation`, with ``noise_multiplier`` the
    effective multiplier ``s / sqrt(B)`` (a float no larger): :meth:`dp_event`
    and :meth:`epsilon` are then the ordinary mode's. The fields of
    :class:`GridGradientPerturbation`, and:

    Parameters
    ----------
    noise_scale : int or None
        ``s``; None for a noise-free fit (``epsilon=inf``, not private).
    """

    noise_scale: int = 1
    law = "rounded Gaussian"

    @property
    def scale(self):
        """The noise's scale, as a RoundedGaussianScale (None without noise)."""
        if self.noise_scale is None:
            return None
        return RoundedGaussianScale(self.noise_scale)

    @staticmethod
    def effective_multiplier(scale, bound):
        """The largest float at most ``scale / sqrt(bound)`` (what the accountant may assume)."""
        multiplier = scale / math.sqrt(bound)
        while fractions.Fraction(multiplier) ** 2 * bound > scale ** 2:
            multiplier = math.nextafter(multiplier, 0.0)
        return multiplier

    @classmethod
    def calibrated(cls, epsilon, delta, *, sample_rate, n_steps, accountant, neighboring,
                   clip_norm, n_coordinates, n_outputs=1, n_samples=None,
                   max_sample_weight=1.0):
        """The mechanism at the ordinary calibration's noise, rounded up to an integer ``s``.

        ``z`` is the ordinary mode's (:func:`~sklearn_dplssgd.accounting.calibrate_noise`
        with the estimator's accountant), ``s = ceil(z sqrt(B))``, raised
        further only if the epsilon recomputed at ``s / sqrt(B)`` were above
        the target (a PLD discretization apart). The calibration states that
        recomputed epsilon.

        Returns
        -------
        mechanism : RoundedGaussianGradientPerturbation
        calibration : PrivacyCalibration
        """
        start = calibrate_noise(epsilon, delta, sample_rate=sample_rate, n_steps=n_steps,
                                accountant=accountant, neighboring=neighboring,
                                n_samples=n_samples)
        fields = dict(sample_rate=float(sample_rate), n_steps=int(n_steps),
                      neighboring=neighboring, clip_norm=float(clip_norm),
                      max_sample_weight=float(max_sample_weight),
                      n_coordinates=int(n_coordinates), n_outputs=int(n_outputs))
        if epsilon == math.inf:
            # No noise, as in the ordinary mode: the integer sums on the
            # finest grid, released as they are, and epsilon_ = inf.
            return cls(noise_multiplier=0.0, residual_bits=MAX_GRID_BITS,
                       row_bits=MAX_GRID_BITS, noise_scale=None, **fields), start
        row_width = _row_width(n_coordinates, n_outputs)
        bits = grid_bits_for(start.noise_multiplier, n_outputs, row_width,
                             largest_scale=MAX_ROUNDED_SCALE // 2, headroom=1.0,
                             name="gradient_exact")
        bound = factored_norm_bound(*bits, n_outputs, row_width)
        scale = math.ceil(start.noise_multiplier * math.sqrt(bound))
        while True:
            multiplier = cls.effective_multiplier(scale, bound)
            if multiplier >= start.noise_multiplier:
                mechanism = cls(noise_multiplier=multiplier, residual_bits=bits[0],
                                row_bits=bits[1], noise_scale=int(scale), **fields)
                stated = mechanism.epsilon(delta, accountant)
                # The paper accountants' z may not meet the target (their
                # calibration warns); never state more than it does.
                if stated <= max(epsilon, start.epsilon):
                    break
            scale += max(1, scale // 10_000)
            if scale > MAX_ROUNDED_SCALE:
                raise ValueError(
                    "mechanism='gradient_exact': the noise this epsilon needs is beyond the "
                    "exact sampler's range; use a larger epsilon, or mechanism='gradient'.")
        return mechanism, PrivacyCalibration(
            multiplier, float(stated), float(delta), float(sample_rate), int(n_steps),
            start.accountant, neighboring)


class ExactGradientPerturbationMechanism(GradientPerturbationMechanism):
    """``mechanism="gradient_exact"``: DP-LSSGD whose released steps are integers.

    The noise is the rounded Gaussian (:class:`RoundedGaussianGradientPerturbation`),
    accounted as the ordinary mode with the estimator's accountant;
    :class:`DiscreteExactGradientPerturbationMechanism` is the same release
    with discrete Gaussian noise.
    """

    name = "gradient_exact"
    accepts_sparse = False
    accepts_array_api = False
    accepts_dask = False
    supports_partial_fit = False
    searchable = False
    releases_integers = True
    # A float release before the integer steps (the regressor's noisy
    # histogram of its targets) would not be one of exactly sampled integers.
    composes_prior_release = False
    # Its noise is rounded up onto an integer grid after calibration.
    spends_remaining_budget = False

    @property
    def partial_fit_refusal(self):
        return (f"mechanism={self.name!r} trains one release from zero weights. Use fit, or "
                "mechanism='gradient'.")

    def noise_free_contribution_bound(self, n_coordinates):
        # Without noise (epsilon=inf) the grid is the finest one, and a
        # rounded row's norm is at most sqrt(A Bb) grid steps. K and D2 are
        # not known here: A and Bb grow with their dimension, so D in place
        # of each bounds them (K, D2 <= D).
        bits = FINEST_GRID_BITS
        return math.sqrt(factored_norm_bound(*bits, n_coordinates, n_coordinates)) * 2.0 ** (
            -sum(bits))

    def check_release(self, estimator, X, *, namespace, sparse, continued):
        if sparse or namespace is not None:
            raise TypeError(
                f"mechanism={self.name!r} trains on dense NumPy arrays only; convert X "
                "with numpy.asarray (or X.toarray()), or use mechanism='gradient'.")
        if continued:
            raise ValueError(self.partial_fit_refusal.replace(
                "Use fit", "Fit from zero weights (no warm_start, coef_init or intercept_init)"))

    def continued_series(self, estimator, partial, coef_init, intercept_init):
        return None

    def plan_before_reading(self, estimator, n_rows, series, partial):
        # The noise depends on D = K (d + 1), the number of outputs included:
        # planned (and charged) in release, before the first step.
        return None

    def calibrated_release(self, estimator, epsilon, delta, **public):
        """The release mechanism meeting ``(epsilon, delta)`` and its calibration.

        ``public``: the keywords of :meth:`RoundedGaussianGradientPerturbation.calibrated`
        but the accountant (the estimator's).
        """
        return RoundedGaussianGradientPerturbation.calibrated(
            epsilon, delta, accountant=estimator.accountant, **public)

    def calibrated_mechanism(self, estimator, delta, *, sample_rate, n_steps, n_samples,
                             noise_schedule, n_coordinates=None, n_outputs=1, prior_event=None):
        if len({level for _, level in noise_schedule}) > 1:
            raise ValueError(
                f"mechanism={self.name!r} supports a constant noise_schedule only.")
        if n_coordinates is None:
            raise RuntimeError("the exact mode is planned once X's width is known")
        return self.calibrated_release(
            estimator, estimator.epsilon, delta, sample_rate=sample_rate, n_steps=n_steps,
            neighboring=estimator.neighboring, clip_norm=float(estimator.clip_norm),
            n_coordinates=n_coordinates, n_outputs=n_outputs, n_samples=n_samples,
            max_sample_weight=float(estimator.max_sample_weight))

    def training_function(self, backend, plan):
        mechanism = plan.mechanism
        if mechanism.seeded:
            # reproducible=True: the noise's keystream from the seeded
            # generator, so that the fit repeats; it is then not private
            # (epsilon_ = inf), as in the ordinary mode.
            words = ChaChaWords(key=plan.rng.bytes(32), nonce=plan.rng.bytes(8))
        else:
            words = ChaChaWords()
        return functools.partial(train_dp_lssgd_exact, exact_noise=ExactNoise(
            mechanism.residual_bits, mechanism.row_bits, mechanism.scale, words))

    def claimed_epsilon(self, estimator, model, n_rows):
        n_outputs = len(model.intercept_)
        n_coordinates = n_outputs * (model.n_features_in_ + int(bool(estimator.fit_intercept)))
        _, calibration = self.calibrated_release(
            estimator, estimator.epsilon, model.delta_, sample_rate=model.sample_rate_,
            n_steps=model.n_steps_, neighboring=model.neighboring_,
            clip_norm=float(estimator.clip_norm), n_coordinates=n_coordinates,
            n_outputs=n_outputs, n_samples=estimator._accounted_n_samples(n_rows))
        return calibration.epsilon


class DiscreteExactGradientPerturbationMechanism(ExactGradientPerturbationMechanism):
    """``mechanism="gradient_exact_discrete"``: the exact mode with discrete Gaussian noise.

    Accounted by the RDP bound of :class:`ExactGradientPerturbation` (the
    estimator's ``accountant`` is not used); its epsilon composes with other
    releases by basic composition.
    """

    name = "gradient_exact_discrete"

    @property
    def partial_fit_refusal(self):
        return (f"mechanism={self.name!r} trains one release from zero weights: its epsilon "
                "composes with others by basic composition only, which a series would need "
                "stated. Use fit, or mechanism='gradient'.")

    def calibrated_release(self, estimator, epsilon, delta, **public):
        return ExactGradientPerturbation.calibrated(epsilon, delta, **public)
