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

from ._accounting import calibrate_noise, compute_epsilon, dp_event

__all__ = ["GradientPerturbation"]


@dataclasses.dataclass(frozen=True)
class GradientPerturbation:
    """``n_steps`` steps of the Poisson-subsampled Gaussian mechanism.

    Each step samples every row with probability ``sample_rate``, sums the
    per-sample gradients clipped to ``clip_norm`` and adds Gaussian noise of
    standard deviation ``noise_multiplier * clip_norm`` per coordinate.
    Smoothing, the optimizer step and the weight decay are post-processing.

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
        C, for the record (z is relative to it).
    seeded : bool, default=False
        Whether the noise was derived from a seed that travels with the
        model (``reproducible=True``): then nothing is private.
    """

    sample_rate: float
    n_steps: int
    noise_multiplier: float
    neighboring: str
    clip_norm: float
    seeded: bool = False

    @classmethod
    def calibrated(cls, epsilon, delta, *, sample_rate, n_steps, accountant, neighboring,
                   clip_norm, n_samples=None):
        """The mechanism whose noise meets ``(epsilon, delta)``, and its calibration.

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
        )
        return mechanism, calibration

    @property
    def private(self):
        """Whether the release is differentially private at all."""
        return self.noise_multiplier > 0 and not self.seeded

    def dp_event(self):
        """The dp-accounting event of everything this fit releases.

        ``NonPrivateDpEvent`` without noise or for a seeded fit; otherwise
        ``SelfComposedDpEvent(PoissonSampledDpEvent(q, GaussianDpEvent(z)), T)``
        (without the sampling for ``q = 1``).
        """
        if not self.private:
            return dp_accounting.NonPrivateDpEvent()
        return dp_event(self.noise_multiplier, self.sample_rate, self.n_steps)

    def epsilon(self, delta, accountant="pld"):
        """Epsilon of the release at ``delta`` (``inf`` when not private)."""
        if not self.private:
            return math.inf
        return compute_epsilon(
            self.noise_multiplier, delta, sample_rate=self.sample_rate,
            n_steps=self.n_steps, accountant=accountant, neighboring=self.neighboring,
        )

    def seeded_copy(self):
        """The same mechanism run with a seed that travels with the model."""
        return dataclasses.replace(self, seeded=True)
