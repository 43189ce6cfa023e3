"""Noise schedules: the public shape of the noise multiplier over the steps.

A schedule (seed 002) gives step ``t`` the noise multiplier ``z_t = c s_t``:
the shape ``s_t`` is fixed before training from public quantities only (the
schedule's name, its decay, the number of steps and epochs), and the scale
``c`` is calibrated so that the whole run meets ``(epsilon, delta)``
(:meth:`sklearn_dplssgd._mechanism.GradientPerturbation.calibrated`). The
shape is piecewise constant: a tuple of ``(n_steps_k, level_k)`` blocks,
each of which the accountant sees as one self-composed Poisson-subsampled
Gaussian (``SelfComposedDpEvent``) inside a ``ComposedDpEvent``.

Schedules:

* ``"constant"``: one block, level 1 (plain DP-LSSGD).
* ``"exponential"``: level ``decay ** e`` in epoch ``e = 0, 1, ...``
  (Yu et al. 2019's exponential decay, the form seed 002 finds preferable).
* ``"step"``: level 1, then ``decay`` after half of the steps and
  ``decay ** 2`` after three quarters (step decay).
* an array of relative levels: the steps are split into that many blocks of
  (nearly) equal length, block ``k`` at level ``levels[k]``.

The accountant's work grows with the number of blocks, so an epoch-wise
schedule over more than ``MAX_BLOCKS`` epochs changes level every
``ceil(n_epochs / MAX_BLOCKS)`` epochs (the level of the group's first epoch).
"""

import math
import numbers

import numpy as np

__all__ = [
    "MAX_BLOCKS",
    "MIN_LEVEL_RATIO",
    "NOISE_SCHEDULES",
    "check_noise_schedule",
    "noise_schedule_blocks",
    "step_levels",
]

NOISE_SCHEDULES = ("constant", "exponential", "step")
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


def check_noise_schedule(schedule):
    """A schedule name, or the user's array of levels as a tuple of floats.

    Raises
    ------
    ValueError
        Naming ``noise_schedule`` and what is wrong.
    """
    if isinstance(schedule, str):
        if schedule not in NOISE_SCHEDULES:
            raise ValueError(
                f"noise_schedule must be one of {NOISE_SCHEDULES} or an array of relative "
                f"noise levels; got {schedule!r}.")
        return schedule
    levels = np.asarray(schedule, dtype=object)
    if levels.ndim != 1 or levels.size == 0 or not all(
            isinstance(v, numbers.Real) and not isinstance(v, bool) for v in levels):
        raise ValueError("noise_schedule as an array must be a non-empty 1-d sequence of "
                         f"numbers; got {schedule!r}.")
    levels = levels.astype(np.float64)
    if not (np.isfinite(levels).all() and (levels > 0).all()):
        raise ValueError("noise_schedule's levels must be finite and positive (a level of "
                         "0 would release a step without noise).")
    if levels.size > MAX_BLOCKS:
        raise ValueError(f"noise_schedule may have at most {MAX_BLOCKS} levels; got "
                         f"{levels.size}.")
    return tuple(float(v) for v in levels)


def noise_schedule_blocks(schedule, decay, n_steps, n_epochs):
    """The public shape of the noise (see :func:`_blocks`), its range checked.

    Raises
    ------
    ValueError
        When the smallest level is below ``MIN_LEVEL_RATIO`` times the largest.
    """
    blocks = _blocks(schedule, decay, n_steps, n_epochs)
    levels = [level for _, level in blocks]
    if min(levels) < MIN_LEVEL_RATIO * max(levels):
        raise ValueError(
            f"noise_schedule={schedule!r} with noise_decay={decay:g} over {n_epochs} epochs "
            f"makes the last noise {min(levels) / max(levels):.2g} times the first (at most "
            f"{MIN_LEVEL_RATIO:g} apart): the budget would go to the last, nearly noise-free "
            "steps. Choose noise_decay closer to 1 or fewer epochs (max_iter).")
    return blocks


def _blocks(schedule, decay, n_steps, n_epochs):
    """The public shape of the noise as ``((n_steps_k, level_k), ...)``.

    Parameters
    ----------
    schedule : str or array-like
        See the module docstring.
    decay : float
        In (0, 1]: the per-epoch factor of ``"exponential"``, the factor of
        each of ``"step"``'s decays.
    n_steps : int
        T.
    n_epochs : int
        Epochs the T steps represent (epoch ``e`` ends after
        ``ceil((e + 1) T / n_epochs)`` steps, as in the training loop).

    Returns
    -------
    blocks : tuple of (int, float)
        Step counts summing to ``n_steps``; the first level is 1 for the
        named schedules. ``((n_steps, 1.0),)`` for ``"constant"``.
    """
    schedule = check_noise_schedule(schedule)
    if schedule == "constant":
        return ((int(n_steps), 1.0),)
    if schedule == "exponential":
        n_blocks = min(n_epochs, MAX_BLOCKS, n_steps)
        epochs_per_block = math.ceil(n_epochs / n_blocks)
        n_blocks = math.ceil(n_epochs / epochs_per_block)
        ends = [math.ceil(min(n_epochs, (k + 1) * epochs_per_block) * n_steps / n_epochs)
                for k in range(n_blocks)]
        starts = [0] + ends[:-1]
        return _merge((end - start, float(decay) ** (k * epochs_per_block))
                      for k, (start, end) in enumerate(zip(starts, ends)))
    if schedule == "step":
        cuts = [0] + [math.ceil(f * n_steps) for f in _STEP_MILESTONES] + [n_steps]
        return _merge((cuts[k + 1] - cuts[k], float(decay) ** k) for k in range(len(cuts) - 1))
    return _equal_blocks(int(n_steps), schedule)


def step_levels(blocks):
    """The per-step levels of ``blocks`` as an array of length T."""
    return np.repeat([level for _, level in blocks], [steps for steps, _ in blocks])
