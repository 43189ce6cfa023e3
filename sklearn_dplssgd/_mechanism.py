"""The mechanism a fit releases, as a value that composes.

One :class:`GradientPerturbation` is built per fit, before any row is read,
from public quantities only (sample rate, number of steps, noise multiplier,
adjacency). It is the one place that says what a fit releases: it yields the
dp-accounting :class:`~dp_accounting.DpEvent` of the fit (``dp_event_`` on
the estimators), and its epsilon is computed by the accounting module from
that same description. Later mechanisms (noise schedules, output
perturbation) are other classes with the same two methods.
"""

import dataclasses
import math

import dp_accounting
import numpy as np

from ._accounting import (
    PLD_MAX_POINTS, pld_grid_points,
    PrivacyCalibration, compute_epsilon, dp_event, event_epsilon,
)
from ._calibration import calibrate_noise, smallest_noise_for
from ._schedules import step_levels

__all__ = ["GradientPerturbation", "Mechanism", "RandomSearchSelection"]

# A noise schedule is calibrated with PLD at an interval of epsilon / this.
_SCHEDULE_PLD_STEPS = 1000


class Mechanism:
    """What every mechanism derives from its ``private`` and ``dp_event()``.

    Subclasses are frozen dataclasses with a ``seeded`` field and a
    ``neighboring`` attribute.
    """

    def epsilon(self, delta):
        """Epsilon of the release at ``delta`` (``inf`` when not private)."""
        if not self.private:
            return math.inf
        return event_epsilon(self.dp_event(), delta, self.neighboring)

    def seeded_copy(self):
        """The same mechanism run with a seed that travels with the model."""
        return dataclasses.replace(self, seeded=True)


@dataclasses.dataclass(frozen=True)
class GradientPerturbation(Mechanism):
    """``n_steps`` steps of the Poisson-subsampled Gaussian mechanism.

    Each step samples every row with probability ``sample_rate``, sums the
    per-sample gradients clipped to ``clip_norm`` (each times its row's
    weight, at most ``max_sample_weight``) and adds Gaussian noise of
    standard deviation ``z_t * sensitivity`` per coordinate, where
    ``sensitivity = max_sample_weight * clip_norm`` bounds one row's
    contribution and ``z_t`` is ``noise_multiplier`` times the level of step
    t's block in ``noise_schedule`` (1 throughout by default). Smoothing, the
    optimizer step and the weight decay are post-processing. The event
    depends on z, q and T only: z is relative to the sensitivity.

    Parameters
    ----------
    sample_rate : float
        q, in (0, 1].
    n_steps : int
        T.
    noise_multiplier : float
        z (0 for a non-private fit).
    neighboring : {"replace_one", "add_remove"}
        The adjacency the event is to be accounted under (a ``DpEvent`` does
        not carry it: pass it to the accountant).
    clip_norm : float
        C, for the record (z is relative to ``sensitivity``).
    seeded : bool, default=False
        Whether the noise was derived from a seed that travels with the
        model (``reproducible=True``): then nothing is private.
    noise_schedule : tuple of (int, float), default=()
        The public shape of the noise (:mod:`sklearn_dplssgd._schedules`):
        blocks of ``(n_steps_k, level_k)`` summing to ``n_steps``; empty for
        a constant noise multiplier.
    max_sample_weight : float, default=1.0
        The public bound w_max on the rows' weights, for the record.
    """

    sample_rate: float
    n_steps: int
    noise_multiplier: float
    neighboring: str
    clip_norm: float
    seeded: bool = False
    noise_schedule: tuple = ()
    max_sample_weight: float = 1.0

    @property
    def sensitivity(self):
        """``max_sample_weight * clip_norm``: how far one row moves a step's sum.

        Under add/remove adjacency; replace-one moves it by up to twice that,
        which the accountant's neighbouring relation accounts for. The noise
        on the sum has standard deviation ``z_t`` times this.
        """
        return self.max_sample_weight * self.clip_norm

    def __post_init__(self):
        if self.noise_schedule and sum(s for s, _ in self.noise_schedule) != self.n_steps:
            raise ValueError("noise_schedule's blocks must cover exactly n_steps steps.")
        if len({level for _, level in self.noise_schedule}) <= 1:
            # One level is constant noise: one description of it, not two.
            object.__setattr__(self, "noise_schedule", ())

    @property
    def scheduled(self):
        """Whether the noise multiplier changes over the steps."""
        return bool(self.noise_schedule)

    @classmethod
    def calibrated(cls, epsilon, delta, *, sample_rate, n_steps, accountant, neighboring,
                   clip_norm, n_samples=None, noise_schedule=(), max_sample_weight=1.0):
        """The mechanism whose noise meets ``(epsilon, delta)``, and its calibration.

        With a non-constant ``noise_schedule`` the scale is the smallest for
        which :func:`event_epsilon` of the composed blocks (PLD where it
        applies, dense-order RDP otherwise: the tightest sound bound) meets
        ``epsilon``; ``accountant`` then only chooses the starting point.

        Returns
        -------
        mechanism : GradientPerturbation
        calibration : PrivacyCalibration
        """
        calibration = calibrate_noise(
            epsilon, delta, sample_rate=sample_rate, n_steps=n_steps,
            accountant=accountant, neighboring=neighboring, n_samples=n_samples,
        )
        mechanism = cls(
            sample_rate=float(sample_rate), n_steps=int(n_steps),
            noise_multiplier=float(calibration.noise_multiplier),
            neighboring=neighboring, clip_norm=float(clip_norm),
            noise_schedule=tuple(noise_schedule), max_sample_weight=float(max_sample_weight),
        )
        if not mechanism.scheduled or epsilon == math.inf:
            return mechanism, calibration

        def scaled(scale):
            return dataclasses.replace(mechanism, noise_multiplier=float(scale))

        # To first order the privacy cost is sum_t 1 / z_t**2: the constant
        # noise meeting epsilon times the RMS of 1 / level is close to the
        # answer, and the search starts there.
        levels = step_levels(mechanism.noise_schedule)
        guess = calibration.noise_multiplier * math.sqrt(np.mean(levels ** -2.0))
        smallest_level = float(levels.min())

        def scaled_epsilon(scale):
            if pld_grid_points(scale * smallest_level, interval) > PLD_MAX_POINTS:
                # Far too little noise (and a PLD grid of gigabytes): treat
                # as not certified, which only makes the search go higher.
                return math.inf
            return event_epsilon(scaled(scale).dp_event(), delta, neighboring, interval,
                                 pld_only=True)

        # PLD alone (RDP's composition of many blocks is ten times slower),
        # at an interval fixed by the target: pessimistic, so sound.
        interval = epsilon / _SCHEDULE_PLD_STEPS
        scale = smallest_noise_for(scaled_epsilon, epsilon, delta, guess=guess)
        mechanism = scaled(scale)
        calibration = PrivacyCalibration(
            float(scale),
            event_epsilon(mechanism.dp_event(), delta, neighboring, interval, pld_only=True),
            float(delta), float(sample_rate), int(n_steps), "pld", neighboring)
        return mechanism, calibration

    def step_noise_multipliers(self):
        """``z_t`` for each of the ``n_steps`` steps (an array)."""
        if not self.noise_schedule:
            return np.full(self.n_steps, self.noise_multiplier)
        return self.noise_multiplier * step_levels(self.noise_schedule)

    def block_noise_multipliers(self):
        """The noise multiplier of each block of the schedule (one for constant noise)."""
        if not self.noise_schedule:
            return np.array([self.noise_multiplier])
        return np.array([self.noise_multiplier * level for _, level in self.noise_schedule])

    @property
    def private(self):
        """Whether the release is differentially private at all."""
        return self.noise_multiplier > 0 and not self.seeded

    def dp_event(self):
        """The dp-accounting event of everything this fit releases.

        ``NonPrivateDpEvent`` without noise or for a seeded fit; otherwise
        ``SelfComposedDpEvent(PoissonSampledDpEvent(q, GaussianDpEvent(z)), T)``
        (without the sampling for ``q = 1``), and for a noise schedule the
        ``ComposedDpEvent`` of one such event per block.
        """
        if not self.private:
            return dp_accounting.NonPrivateDpEvent()
        if self.scheduled:
            return dp_accounting.ComposedDpEvent([
                dp_event(self.noise_multiplier * level, self.sample_rate, steps)
                for steps, level in self.noise_schedule])
        return dp_event(self.noise_multiplier, self.sample_rate, self.n_steps)

    def epsilon(self, delta, accountant="pld"):
        """Epsilon of the release at ``delta`` (``inf`` when not private).

        A noise schedule is accounted by :func:`event_epsilon` of
        :meth:`dp_event` (``accountant`` is then not used).
        """
        if not self.private:
            return math.inf
        if self.scheduled:
            # PLD alone (see calibrated), at an interval set by a coarse pass.
            event = self.dp_event()
            coarse = event_epsilon(event, delta, self.neighboring, 1e-2, pld_only=True)
            if not math.isfinite(coarse):
                return coarse
            return event_epsilon(event, delta, self.neighboring,
                                 max(coarse / _SCHEDULE_PLD_STEPS, 1e-6), pld_only=True)
        return compute_epsilon(
            self.noise_multiplier, delta, sample_rate=self.sample_rate,
            n_steps=self.n_steps, accountant=accountant, neighboring=self.neighboring,
        )


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
        ``epsilon``. Both are certified by :func:`event_epsilon`.
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
