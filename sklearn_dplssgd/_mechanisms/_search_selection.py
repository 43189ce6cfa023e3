"""The private search's mechanism: random search with a random number of trials.

:class:`RandomSearchSelection` is the accounting value of
:class:`~sklearn_dplssgd.DPRandomizedSearch` (built from public quantities
only, before any row is read): its dp-accounting event, its calibration, and
its two secret draws, the number of trials and the noise of a trial's score.
"""

import dataclasses
import fractions
import math
import typing

import dp_accounting
from scipy import optimize

from .._accounting import event_epsilon, smallest_noise_for
from .._backends import RoundedGaussianScale, sample_rounded_gaussian
from ._gradient import GradientPerturbation
from ._release import Mechanism

__all__ = ["RandomSearchSelection"]

# K of the score's lattice (each per-row score over its range rounded to a
# multiple of 2**-K): float64 sums it exactly up to 2**(53 - K) rows.
SCORE_LATTICE_BITS = 20


def score_noise_scale(z):
    """``s >= z 2**K`` of the score's noise ``round(s G)`` (margin ``2**-45`` for float ``z``)."""
    needed = fractions.Fraction(z) * 2 ** SCORE_LATTICE_BITS * (1 + fractions.Fraction(1, 2**45))
    return RoundedGaussianScale(max(1, math.ceil(needed)))


def _trial_gamma(mean, shape):
    """``gamma`` of the truncated negative binomial (RepeatAndSelectDpEvent's) of this mean.

    P[K = k] is proportional to ``binom(k + shape - 1, k) (1 - gamma)**k`` for
    k >= 1, and to ``(1 - gamma)**k / k`` for shape 0 (logarithmic).
    """
    if mean == 1.0:
        return 1.0

    def mean_of(gamma):
        if shape == 0.0:
            return (1.0 - gamma) / (gamma * math.log(1.0 / gamma))
        return shape * (1.0 - gamma) / (gamma * (1.0 - gamma**shape))

    return optimize.brentq(lambda g: mean_of(g) - mean, 1e-12, 1.0 - 1e-12, xtol=1e-14)


@dataclasses.dataclass(frozen=True)
class RandomSearchSelection(Mechanism):
    """Random search with a secret random number of trials, releasing the best one.

    Each trial runs ``trial`` on a random training part of the rows and
    releases a bounded per-row score's sum over the others with Gaussian noise
    (``score_noise_multiplier`` times the score's range). The argument is in
    docs/privacy_argument.rst (``private-search``).

    Parameters
    ----------
    trial : GradientPerturbation
        What one trial's training releases (the same for every candidate).
    score_noise_multiplier : float
        Noise of the score sum, in units of the per-row score range.
    mean_trials, trials_shape : float
        Mean (>= 1) and shape of the number of trials' distribution.
    seeded : bool, default=False
        Whether the randomness comes from a seed that travels with the search
        (``reproducible=True``): then nothing is private.
    """

    score_lattice_bits: typing.ClassVar[int] = SCORE_LATTICE_BITS

    trial: GradientPerturbation
    score_noise_multiplier: float
    mean_trials: float
    trials_shape: float
    seeded: bool = False

    @property
    def neighboring(self):
        return self.trial.neighboring

    @property
    def private(self):
        return self.trial.private and self.score_noise_multiplier > 0 and not self.seeded

    def trial_event(self):
        """One trial: its training and its noisy score, composed (an upper bound).

        A row changes either the training or the score, never both: by
        quasi-convexity the trial's RDP is at most the larger of the two.
        """
        return dp_accounting.ComposedDpEvent([
            self.trial.dp_event(),
            dp_accounting.GaussianDpEvent(self.score_noise_multiplier),
        ])

    def dp_event(self):
        """``RepeatAndSelectDpEvent(trial_event, mean_trials, trials_shape)``, or
        ``NonPrivateDpEvent`` when a part is not private."""
        if not self.private:
            return dp_accounting.NonPrivateDpEvent()
        return dp_accounting.dp_event.RepeatAndSelectDpEvent(
            self.trial_event(), float(self.mean_trials), float(self.trials_shape))

    def number_of_trials(self, rng):
        """Draw K as ``dp_event`` assumes (Poisson may draw 0, the others draw at least 1)."""
        if self.trials_shape == math.inf:
            return int(rng.poisson(self.mean_trials))
        gamma = _trial_gamma(self.mean_trials, self.trials_shape)
        if gamma == 1.0:
            return 1
        if self.trials_shape == 0.0:
            return int(rng.logseries(1.0 - gamma))
        while True:  # negative binomial conditioned on K >= 1
            k = int(rng.negative_binomial(self.trials_shape, gamma))
            if k >= 1:
                return k

    def noisy_score(self, total, bound, n_validation, words):
        """``(total + round(s G)) bound / (2**K n_validation)`` of a lattice score sum.

        ``total + round(s G) = round(total + s G)`` post-processes the Gaussian
        mechanism of sensitivity ``2**K`` and noise ``s >= z 2**K``
        (:func:`score_noise_scale`): ``GaussianDpEvent(z)`` covers it.
        """
        lattice_total = int(total)
        if self.score_noise_multiplier > 0:
            lattice_total += int(sample_rounded_gaussian(
                1, score_noise_scale(self.score_noise_multiplier), words)[0])
        return math.ldexp(lattice_total, -SCORE_LATTICE_BITS) * bound / n_validation

    @classmethod
    def calibrated(cls, epsilon, delta, *, sample_rate, n_steps, neighboring, clip_norm,
                   mean_trials, trials_shape, score_share, noise_schedule=()):
        """The search whose noise meets ``(epsilon, delta)`` for the search as a whole.

        The scores alone (repeated and selected) cost ``score_share *
        epsilon``; the training noise is the smallest that reaches ``epsilon``.
        """
        def search(trial_noise, score_noise):
            trial = GradientPerturbation(float(sample_rate), int(n_steps), trial_noise,
                                         neighboring, float(clip_norm),
                                         noise_schedule=noise_schedule)
            return cls(trial, score_noise, float(mean_trials), float(trials_shape))

        if epsilon == math.inf:
            return search(0.0, 0.0)

        def scores_only(score_noise):
            event = dp_accounting.dp_event.RepeatAndSelectDpEvent(
                dp_accounting.GaussianDpEvent(score_noise), float(mean_trials),
                float(trials_shape))
            return event_epsilon(event, delta, neighboring)

        score_noise = smallest_noise_for(scores_only, score_share * epsilon, delta,
                                         guess=3.0 / (score_share * epsilon))
        trial_noise = smallest_noise_for(
            lambda z: search(z, score_noise).epsilon(delta), epsilon, delta, guess=1.0)
        return search(trial_noise, score_noise)
