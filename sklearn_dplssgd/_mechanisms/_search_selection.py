"""The private search's mechanism: random search with a random number of trials.

:class:`RandomSearchSelection` is the accounting value of
:class:`~sklearn_dplssgd.DPRandomizedSearch` (built from public quantities
only, before any row is read): it yields the search's dp-accounting
:class:`~dp_accounting.DpEvent` and calibrates its noise.
"""

import dataclasses
import math

import dp_accounting

from .._accounting import event_epsilon, smallest_noise_for
from ._gradient import GradientPerturbation
from ._release import Mechanism

__all__ = ["RandomSearchSelection"]


@dataclasses.dataclass(frozen=True)
class RandomSearchSelection(Mechanism):
    """Random search with a random number of trials, releasing the best one.

    Each trial splits the rows at random (each row independently) into a
    training and a validation part, runs ``trial`` on the training part and
    releases the sum of a bounded per-row score over the validation part with
    Gaussian noise of standard deviation ``score_noise_multiplier`` times the
    score's range. The number of trials is drawn, in secret, from the
    distribution of dp-accounting's ``RepeatAndSelectDpEvent(event, mean,
    shape)`` (Papernot and Steinke 2022): truncated negative binomial for
    finite ``trials_shape`` (0: logarithmic, 1: geometric), Poisson for
    ``inf``. Only the best trial (its model, parameters and noisy score) is
    released.

    Parameters
    ----------
    trial : GradientPerturbation
        What one trial's training releases (the same for every candidate).
    score_noise_multiplier : float
        Noise of the score sum, in units of the per-row score range.
    mean_trials : float
        Mean of the number of trials, >= 1.
    trials_shape : float
        Shape of its distribution (see above).
    seeded : bool, default=False
        Whether the search's randomness is a function of a seed that travels
        with it (``reproducible=True``): then nothing is private.
    """

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
        """One trial: its training and its noisy score, composed.

        Composition is an upper bound: with the rows split independently of
        their values, a row changes either the training or the score, never
        both, so the trial's Renyi divergence is at most the larger of the
        two (quasi-convexity); the sum is what dp-accounting can express.
        """
        return dp_accounting.ComposedDpEvent([
            self.trial.dp_event(),
            dp_accounting.GaussianDpEvent(self.score_noise_multiplier),
        ])

    def dp_event(self):
        """``RepeatAndSelectDpEvent(trial_event, mean_trials, trials_shape)``.

        ``NonPrivateDpEvent`` when a part is not private.
        """
        if not self.private:
            return dp_accounting.NonPrivateDpEvent()
        return dp_accounting.dp_event.RepeatAndSelectDpEvent(
            self.trial_event(), float(self.mean_trials), float(self.trials_shape))

    @classmethod
    def calibrated(cls, epsilon, delta, *, sample_rate, n_steps, neighboring, clip_norm,
                   mean_trials, trials_shape, score_share, noise_schedule=()):
        """The search whose noise meets ``(epsilon, delta)`` for the search as a whole.

        The score's noise is set first, so that the scores alone (repeated
        and selected) would cost ``score_share * epsilon``; then the
        training noise is the smallest that brings the whole search to
        ``epsilon``. Both are certified by ``event_epsilon``.
        """
        if epsilon == math.inf:
            trial = GradientPerturbation(float(sample_rate), int(n_steps), 0.0, neighboring,
                                         float(clip_norm), noise_schedule=noise_schedule)
            return cls(trial, 0.0, float(mean_trials), float(trials_shape))

        def search(trial_noise, score_noise):
            trial = GradientPerturbation(float(sample_rate), int(n_steps), trial_noise,
                                         neighboring, float(clip_norm),
                                         noise_schedule=noise_schedule)
            return cls(trial, score_noise, float(mean_trials), float(trials_shape))

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
