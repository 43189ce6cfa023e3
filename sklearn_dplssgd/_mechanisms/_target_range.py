"""The regressor's target range, released before the steps: a planned mechanism of its own.

A regressor without declared ``target_bounds`` learns its targets' range with a
noisy histogram (a ``TARGET_RANGE_SHARE`` of epsilon, one Gaussian release) and
trains on the targets mapped into ``[-1, 1]`` by it. Its noise depends on
public quantities only, so it is planned, composed with the steps and charged
to the ledger before any row is read; the histogram itself is released by the
regressor from the plan's value (why it is private: docs/privacy.rst).
"""

import dataclasses

import dp_accounting

from .._accounting import REMAINING_BUDGET, TARGET_RANGE_SHARE, calibrate_noise

__all__ = ["TargetRangeRelease"]


@dataclasses.dataclass(frozen=True)
class TargetRangeRelease:
    """The planned release of the target range: its noise multiplier (0: not private)."""

    noise_multiplier: float

    @classmethod
    def planned(cls, settings, delta):
        """The release a fit with these settings makes at ``delta``: public quantities only."""
        if not settings.spends_privacy:
            return cls(0.0)
        epsilon = settings.epsilon
        if epsilon == REMAINING_BUDGET:
            # A share of what remains of the ledger (its adding-up bound); the
            # steps then take the rest (GradientPerturbation.within_ledger).
            epsilon = settings.ledger.max_epsilon - settings.ledger.epsilon()
            if not epsilon > 0:
                raise ValueError(
                    "epsilon='remaining': the ledger has no budget left to learn the target's "
                    "range; declare target_bounds=(low, high) or raise max_epsilon.")
        return cls(calibrate_noise(TARGET_RANGE_SHARE * float(epsilon), delta, sample_rate=1.0,
                                   n_steps=1, neighboring=settings.neighboring).noise_multiplier)

    def dp_event(self):
        """The release's ``GaussianDpEvent``, or None where it spends nothing."""
        return (dp_accounting.GaussianDpEvent(self.noise_multiplier)
                if self.noise_multiplier > 0 else None)
