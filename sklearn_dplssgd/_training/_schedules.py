"""Noise schedules: the public shape of the noise multiplier over the steps.

A schedule (Hong, Wang and Zhou, "Dynamic privacy budget allocation improves
data efficiency of differentially private gradient descent", FAccT 2022)
gives step ``t`` the noise multiplier ``z_t = c s_t``: the shape ``s_t`` is
fixed from public quantities before training, the scale ``c`` calibrated for
``(epsilon, delta)``. The shape is a tuple of ``(n_steps_k, level_k)``
blocks, each one self-composed Poisson-subsampled Gaussian for the
accountant; at most ``MAX_BLOCKS`` of them, to bound the accountant's work.
The schedules: docs/optimizers_and_schedules.rst.
"""

import math
import numbers

import numpy as np
from sklearn.base import BaseEstimator

__all__ = [
    "LEARNING_RATES",
    "ConstantNoise",
    "ExponentialNoise",
    "MAX_BLOCKS",
    "MIN_LEVEL_RATIO",
    "NOISE_SCHEDULES",
    "NoiseSchedule",
    "RelativeNoise",
    "StepNoise",
    "check_noise_schedule",
    "is_constant_schedule",
    "learning_rate_schedule",
    "noise_schedule_blocks",
    "number_of_steps",
    "step_levels",
]

NOISE_SCHEDULES = ("constant", "exponential", "step")
LEARNING_RATES = ("constant", "inverse_time", "invscaling")
MAX_BLOCKS = 50
# A schedule whose smallest level is below this fraction of its largest is
# refused: meeting epsilon would need enormous early noise (the last steps
# would be nearly noise-free and spend the whole budget).
MIN_LEVEL_RATIO = 1e-3

# Where the "step" schedule decays, as fractions of the steps.
_STEP_MILESTONES = (0.5, 0.75)


def _merge(blocks):
    """Adjacent blocks of equal level as one; empty blocks dropped."""
    merged = []
    for steps, level in blocks:
        if steps == 0:
            continue
        if merged and merged[-1][1] == level:
            merged[-1] = (merged[-1][0] + steps, level)
        else:
            merged.append((steps, level))
    return tuple(merged)


def _equal_blocks(n_steps, levels):
    """``len(levels)`` blocks of nearly equal length over ``n_steps`` steps."""
    ends = [math.ceil((k + 1) * n_steps / len(levels)) for k in range(len(levels))]
    starts = [0] + ends[:-1]
    return _merge((end - start, float(level)) for start, end, level in zip(starts, ends, levels))


def _check_ratio(value, name):
    if isinstance(value, bool) or not isinstance(value, numbers.Real) or not (
            0 < value <= 1):
        raise ValueError(f"{name} must be a number in (0, 1]; got {value!r}.")
    return float(value)


def _check_levels(levels):
    """The user's array of relative levels as a tuple of floats."""
    array = np.asarray(levels, dtype=object)
    if array.ndim != 1 or array.size == 0 or not all(
            isinstance(v, numbers.Real) and not isinstance(v, bool) for v in array):
        raise ValueError("noise_schedule as an array must be a non-empty 1-d sequence of "
                         f"numbers; got {levels!r}.")
    array = array.astype(np.float64)
    if not (np.isfinite(array).all() and (array > 0).all()):
        raise ValueError("noise_schedule's levels must be finite and positive (a level of "
                         "0 would release a step without noise).")
    if array.size > MAX_BLOCKS:
        raise ValueError(f"noise_schedule may have at most {MAX_BLOCKS} levels; got "
                         f"{array.size}.")
    return tuple(float(v) for v in array)


class NoiseSchedule(BaseEstimator):
    """Base of the noise schedules: the public shape of the noise over a run.

    A subclass implements :meth:`levels_by_epoch` (one level per epoch) or
    overrides :meth:`blocks`; its parameters are public settings, never
    values computed from the rows.
    """

    def blocks(self, n_steps, n_epochs):
        """The shape as ``((n_steps_k, level_k), ...)``, step counts summing to ``n_steps``.

        Epoch ``e`` ends after ``ceil((e + 1) T / n_epochs)`` steps, as in the
        loop; over more than ``MAX_BLOCKS`` epochs the level changes every
        ``ceil(n_epochs / MAX_BLOCKS)`` epochs (the group's first epoch's level).
        """
        levels = self.levels_by_epoch(n_epochs)
        n_blocks = min(n_epochs, MAX_BLOCKS, n_steps)
        epochs_per_block = math.ceil(n_epochs / n_blocks)
        n_blocks = math.ceil(n_epochs / epochs_per_block)
        ends = [math.ceil(min(n_epochs, (k + 1) * epochs_per_block) * n_steps / n_epochs)
                for k in range(n_blocks)]
        starts = [0] + ends[:-1]
        return _merge((end - start, float(levels[k * epochs_per_block]))
                      for k, (start, end) in enumerate(zip(starts, ends)))

    def levels_by_epoch(self, n_epochs):
        """The relative level of each of ``n_epochs`` epochs."""
        raise NotImplementedError


class ConstantNoise(NoiseSchedule):
    """The same noise at every step (plain DP-LSSGD; ``noise_schedule="constant"``)."""

    def blocks(self, n_steps, n_epochs):
        return ((int(n_steps), 1.0),)


class ExponentialNoise(NoiseSchedule):
    """Noise decaying geometrically over the epochs (``noise_schedule="exponential"``).

    Parameters
    ----------
    final_ratio : float, default=0.5
        In (0, 1]: the level of the last epoch relative to the first; the
        levels in between decay geometrically, ``final_ratio ** (e / (E - 1))``
        in epoch ``e`` of ``E``. Whatever the number of epochs, the last
        noise is this fraction of the first.
    per_epoch : float or None, default=None
        In (0, 1]: a fixed factor per epoch instead (level ``per_epoch ** e``),
        the parametrisation of Hong, Wang and Zhou (FAccT 2022); ``final_ratio`` is then ignored.
        Over many epochs the last level may fall below ``MIN_LEVEL_RATIO``
        of the first, which is refused.
    """

    def __init__(self, final_ratio=0.5, per_epoch=None):
        self.final_ratio = final_ratio
        self.per_epoch = per_epoch

    def levels_by_epoch(self, n_epochs):
        if self.per_epoch is not None:
            factor = _check_ratio(self.per_epoch, "ExponentialNoise's per_epoch")
        else:
            final = _check_ratio(self.final_ratio, "ExponentialNoise's final_ratio")
            factor = final ** (1.0 / (n_epochs - 1)) if n_epochs > 1 else 1.0
        return [factor ** epoch for epoch in range(n_epochs)]


class StepNoise(NoiseSchedule):
    """Noise lowered twice, after half and after three quarters of the steps.

    ``noise_schedule="step"``.

    Parameters
    ----------
    final_ratio : float, default=0.5
        In (0, 1]: the level of the last quarter relative to the first half;
        the third quarter is at ``sqrt(final_ratio)``.
    """

    def __init__(self, final_ratio=0.5):
        self.final_ratio = final_ratio

    def blocks(self, n_steps, n_epochs):
        final = _check_ratio(self.final_ratio, "StepNoise's final_ratio")
        factor = math.sqrt(final)
        cuts = [0] + [math.ceil(f * n_steps) for f in _STEP_MILESTONES] + [n_steps]
        levels = (1.0, factor, final)
        return _merge((cuts[k + 1] - cuts[k], levels[k]) for k in range(len(cuts) - 1))


class RelativeNoise(NoiseSchedule):
    """Blocks of nearly equal length at given relative levels (an array ``noise_schedule``).

    Parameters
    ----------
    levels : array-like of shape (n_blocks,)
        Positive, finite; at most ``MAX_BLOCKS``.
    """

    def __init__(self, levels=(1.0,)):
        self.levels = levels

    def blocks(self, n_steps, n_epochs):
        return _equal_blocks(int(n_steps), _check_levels(self.levels))


# What each name of ``noise_schedule`` stands for.
_NAMED_SCHEDULES = {"constant": ConstantNoise, "exponential": ExponentialNoise,
                    "step": StepNoise}


def check_noise_schedule(schedule):
    """The :class:`NoiseSchedule` a ``noise_schedule`` value stands for (a ValueError if none)."""
    if isinstance(schedule, NoiseSchedule):
        return schedule
    if isinstance(schedule, str):
        if schedule not in NOISE_SCHEDULES:
            raise ValueError(
                f"noise_schedule must be one of {NOISE_SCHEDULES}, a NoiseSchedule or an "
                f"array of relative noise levels; got {schedule!r}.")
        return _NAMED_SCHEDULES[schedule]()
    return RelativeNoise(_check_levels(schedule))


def is_constant_schedule(schedule):
    """Whether a ``noise_schedule`` value is the constant schedule."""
    return isinstance(check_noise_schedule(schedule), ConstantNoise)


def noise_schedule_blocks(schedule, n_steps, n_epochs):
    """The blocks of a ``noise_schedule``; a ValueError if its levels span over 1000 times."""
    blocks = check_noise_schedule(schedule).blocks(int(n_steps), int(n_epochs))
    levels = [level for _, level in blocks]
    if min(levels) < MIN_LEVEL_RATIO * max(levels):
        raise ValueError(
            f"noise_schedule={schedule!r} over {n_epochs} epochs makes the last noise "
            f"{min(levels) / max(levels):.2g} times the first (at most {MIN_LEVEL_RATIO:g} "
            "apart): the budget would go to the last, nearly noise-free steps. Use a "
            "schedule parametrised by its final ratio (ExponentialNoise(final_ratio=...)), "
            "a per-epoch factor closer to 1, or fewer epochs (max_iter).")
    return blocks


def step_levels(blocks):
    """The per-step levels of ``blocks`` as an array of length T."""
    return np.repeat([level for _, level in blocks], [steps for steps, _ in blocks])


def number_of_steps(n_samples, batch_size, max_iter):
    """T = ceil(max_iter * n / b) in integers (``max_iter`` for full batches)."""
    if batch_size >= n_samples:
        return int(max_iter)
    return int(-(-max_iter * n_samples // batch_size))


def learning_rate_schedule(learning_rate, eta0, power_t, n_steps, first_step=0):
    """Step sizes eta_t for t = first_step + 1 .. first_step + T.

    ``constant``: ``eta0``; ``inverse_time``: ``eta0 / t`` (the DP-LSSGD
    paper's decay); ``invscaling``: ``eta0 / t ** power_t`` (scikit-learn's).
    ``first_step`` counts the steps of the releases this one continues.
    """
    t = np.arange(first_step + 1, first_step + n_steps + 1, dtype=np.float64)
    if learning_rate == "constant":
        return np.full(n_steps, float(eta0))
    if learning_rate == "inverse_time":
        return eta0 / t
    if learning_rate == "invscaling":
        # t ** -power_t underflows quietly to 0 for huge exponents, where
        # eta0 / t ** power_t would overflow first.
        return eta0 * t ** (-power_t)
    raise ValueError(
        f"Unknown learning_rate {learning_rate!r}; expected one of {LEARNING_RATES}."
    )
