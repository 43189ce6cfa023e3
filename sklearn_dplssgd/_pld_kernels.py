"""Compiled copies of three loops of dp-accounting's PLD code (Numba).

A calibration of a long run (T ~ 20,000 steps at z ~ 0.6, grids of a few
hundred thousand points) spends about half of each PLD evaluation in three
Python loops of dp-accounting 0.6: ``common.log_sinh`` called once per grid
point while the one step's distribution is built,
``pld_pmf._get_epsilon_for_delta`` walking the composed distribution from its
largest loss down, and the search for the tails to truncate after a
composition (``_find_prefix_to_truncate`` in ``pld_pmf._truncate_tails``).
Here they are compiled, operation for operation: the same libm ``exp``,
``log`` and ``log1p`` as CPython's ``math`` module, the same sequential sums
in the same order, so the results are dp-accounting's bit for bit
(tests/test_pld_kernels.py compares whole grids and whole distributions;
:func:`sklearn_dplssgd._accounting._subsampled_step_pld` also checks sampled
grid points at run time and falls back to dp-accounting's own code on any
difference).

The kernels see only arrays and scalars.
"""

import math

import numpy as np
from numba import njit

__all__ = ["epsilon_for_delta", "log_sinh", "prefix_to_truncate"]


@njit(cache=True, nogil=True)
def log_sinh(a, log_2):
    """``log(sinh(a))`` element by element, as ``common.log_sinh`` computes it.

    ``a`` is a non-negative 1-d float64 array; 0 maps to 0 (as there).
    ``log_2`` is ``math.log(2)``, computed by the caller in Python so that it
    is CPython's value.
    """
    out = np.empty_like(a)
    for i in range(a.shape[0]):
        value = a[i]
        if value > 0.0:
            out[i] = value + math.log1p(-math.exp(-2 * value)) - log_2
        else:
            out[i] = 0.0
    return out


@njit(cache=True, nogil=True)
def epsilon_for_delta(infinity_mass, upper_loss, discretization, probs, delta):
    """Smallest epsilon with hockey-stick divergence at most ``delta``.

    ``pld_pmf.DensePLDPmf.get_epsilon_for_delta``: ``probs`` are the dense
    PMF's probabilities from the smallest loss to the largest, ``upper_loss``
    the largest loss (``(lower_loss + size - 1) * discretization``); the loss
    of each next point down is the previous one minus ``discretization``,
    accumulated as ``itertools.count`` does.
    """
    if infinity_mass > delta:
        return math.inf
    mass_upper = infinity_mass
    mass_lower = 0.0
    loss = upper_loss
    step = -discretization
    for i in range(probs.shape[0] - 1, -1, -1):
        prob = probs[i]
        if (mass_upper > delta and mass_lower > 0
                and math.log((mass_upper - delta) / mass_lower) >= loss):
            break
        mass_upper += prob
        mass_lower += math.exp(-loss) * prob
        if mass_upper >= delta and mass_lower == 0:
            return max(0.0, loss)
        loss += step
    if mass_upper <= mass_lower + delta:
        return 0.0
    return math.log((mass_upper - delta) / mass_lower)


@njit(cache=True, nogil=True)
def prefix_to_truncate(probs, threshold):
    """Length of the longest prefix of ``probs`` whose sum stays <= ``threshold``.

    ``pld_pmf._truncate_tails``'s inner ``_find_prefix_to_truncate``: the same
    running sum from the first element, the index of the first element that
    takes it above ``threshold``, or the length. ``probs`` may be a reversed
    view (the suffix).
    """
    total = 0.0
    for i in range(probs.shape[0]):
        total += probs[i]
        if total > threshold:
            return i
    return probs.shape[0]
