"""Privacy accounting for DP-LSSGD on top of Google's ``dp-accounting``: events and epsilon.

The estimators' mechanism is ``T`` steps of: Poisson-sample every row with
probability ``q``, sum the per-sample gradients clipped to L2 norm ``C``, add
``N(0, (z C)^2 I)`` (smoothing and the step are post-processing); in dp-accounting's
terms ``SelfComposedDpEvent(PoissonSampledDpEvent(q, GaussianDpEvent(z)), T)``
(:func:`dp_event`). :func:`compute_epsilon` gives the epsilon a ``z`` reaches and
:func:`event_epsilon` the epsilon of any event; :mod:`._calibration` turns a target
into ``z``. dp-accounting is used through its public API only.

PLD is the default accountant (the tightest sound one; RDP over-reports by 5 to 40
percent); RDP uses dense orders up to 1024 (:func:`_rdp_orders`) and, under
replace-one with sampling, the group-of-two reduction (:func:`group_of_two_epsilon`;
the argument: docs/privacy_argument.rst, "Replace-one under the RDP accountant").
The PLD discretization interval is chosen per evaluation (:func:`pld_interval_rule`).
"""

import contextlib
import dataclasses
import functools
import logging
import math
import os

import attr
import numpy as np
from scipy import optimize

import dp_accounting
from dp_accounting import pld as _dp_pld
from dp_accounting import rdp as _dp_rdp

from .._utils import check_choice, check_delta, check_mechanism, check_noise_multiplier

__all__ = [
    "ACCOUNTANTS", "cached_epsilon", "compute_epsilon", "dp_event", "EpsilonDeltaDpEvent",
    "event_epsilon", "EVENT_EPSILONS", "group_of_two_epsilon", "NEIGHBORING_RELATIONS",
    "pld_grid_points", "PLD_INTERVAL_BOUNDS", "pld_interval_range", "pld_interval_rule",
    "PLD_MAX_POINTS", "PrivacyCalibration", "REMAINING_BUDGET", "TARGET_RANGE_SHARE",
    "split_epsilon_delta_events",
]

ACCOUNTANTS = ("rdp", "pld")
NEIGHBORING_RELATIONS = ("add_remove", "replace_one")
# The estimators' epsilon that spends what remains of their ledger's budget.
REMAINING_BUDGET = "remaining"

# With target_bounds=None a private fit first learns the target's range from
# one Gaussian release of the targets' counts in bins of powers of 2 (the
# histogram of DPBoundedScaler), calibrated alone to this share of epsilon
# at the fit's delta; the steps' noise then meets epsilon for the PLD
# composition of both. Gaussian releases compose roughly in quadrature, so
# the range takes about the square of this share of the steps' budget. On
# a table of a few hundred rows a tenth lets no bin stand out at epsilon 1;
# a third or more does, and costs little at larger epsilons.
TARGET_RANGE_SHARE = 0.35

_DP_RELATION = {
    "add_remove": dp_accounting.NeighboringRelation.ADD_OR_REMOVE_ONE,
    "replace_one": dp_accounting.NeighboringRelation.REPLACE_ONE,
}

# PLD interval: chosen between epsilon / 500 and epsilon / 10000 (and inside
# PLD_INTERVAL_BOUNDS) so that the discretization error is about _PLD_RTOL
# relative; see _pld_interval.
_PLD_COARSEST = 500.0
_PLD_FINEST = 1e4
_PLD_RTOL = 1e-4
# The upper bound grows with epsilon far enough that the grid stays small at
# large epsilon; far beyond 100 dp-accounting's exp(interval) overflows.
PLD_INTERVAL_BOUNDS = (1e-6, 100.0)
# Larger PLD grids (8 bytes a point, several copies, seconds each) are not built: the
# RDP bound is used for that evaluation instead (see cached_epsilon).
PLD_MAX_POINTS = 2e6


@dataclasses.dataclass(frozen=True)
class PrivacyCalibration:
    """Result of :func:`~sklearn_dplssgd.calibrate_noise`.

    Attributes
    ----------
    noise_multiplier : float
        ``z``: the noise on the SUM of clipped per-sample gradients has standard
        deviation ``z * clip_norm``; ``0.0`` for ``epsilon = inf``.
    epsilon : float
        The epsilon this ``z`` reaches, as certified by the accountant; never above
        the target; ``inf`` without noise.
    delta : float
        The delta of the guarantee.
    sample_rate : float
        ``q``, the Poisson sampling probability of each row in each step.
    n_steps : int
        ``T``, the number of noisy steps.
    accountant : str
        One of "rdp", "pld".
    neighboring : str
        One of "add_remove", "replace_one".
    """

    noise_multiplier: float
    epsilon: float
    delta: float
    sample_rate: float
    n_steps: int
    accountant: str
    neighboring: str


@attr.s(frozen=True, slots=True, auto_attribs=True)
class EpsilonDeltaDpEvent(dp_accounting.DpEvent):
    """A mechanism known only to be (epsilon, delta)-DP, under the relation in use.

    The private preprocessing's releases (AboveThreshold, partition selection);
    no accountant of dp-accounting supports it, so :func:`event_epsilon` composes it
    with the rest by basic composition.
    """

    epsilon: float
    delta: float = 0.0


class _DpAccountingRecordFilter(logging.Filter):
    """Drop log records emitted from dp-accounting's own source files."""

    _marker = os.sep + "dp_accounting" + os.sep

    def filter(self, record):
        return self._marker not in (record.pathname or "")


@contextlib.contextmanager
def _quiet_dp_accounting():
    """Drop dp-accounting's own log records (absl's and the root logger's) inside this block.

    Such as "failed to converge ... excluding this order", which only makes the RDP
    bound more conservative. The process-global warnings filters are left alone.
    """
    record_filter = _DpAccountingRecordFilter()
    loggers = (logging.getLogger("absl"), logging.getLogger())
    for logger in loggers:
        logger.addFilter(record_filter)
    try:
        yield
    finally:
        for logger in loggers:
            logger.removeFilter(record_filter)


def dp_event(noise_multiplier, sample_rate, n_steps):
    """The DpEvent of T steps of the Poisson-subsampled Gaussian mechanism (q = 1: unsampled)."""
    gaussian = dp_accounting.GaussianDpEvent(noise_multiplier)
    if sample_rate == 1.0:
        return dp_accounting.SelfComposedDpEvent(gaussian, n_steps)
    return dp_accounting.SelfComposedDpEvent(
        dp_accounting.PoissonSampledDpEvent(sample_rate, gaussian), n_steps
    )


def _rdp_orders():
    """RDP orders: dp-accounting's defaults, made dense (factor 1.1) between 64 and 1024.

    Above 64 the defaults jump by factors of 2 and miss the optimum of small epsilons
    (0.1526 instead of 0.1434 for z = 8, q = 128 / 60000, T = 23438), at a third of
    the cost; orders capped at 63 would make small epsilons uncertifiable.
    """
    return _RDP_ORDERS


_RDP_ORDERS = tuple(sorted(set(
    [1.0 + x / 10.0 for x in range(1, 100)]
    + list(range(11, 64))
    + [round(64 * 1.1**k) for k in range(30)]
    + [1024]
)))


def group_of_two_epsilon(accountant, delta):
    """Epsilon under replace-one from an add/remove RDP accountant, by group privacy.

    The smallest ``eps`` found with ``2 eps_AR(delta / (1 + exp(eps / 2))) <= eps``
    (docs/privacy_argument.rst, "Replace-one under the RDP accountant").
    """

    def delta_ar(eps):
        # delta / (1 + exp(eps / 2)) without overflow for large eps.
        return delta * math.exp(-np.logaddexp(0.0, eps / 2.0))

    def gap(eps):
        value = 2.0 * float(accountant.get_epsilon(delta_ar(eps))) - eps
        return value if math.isfinite(value) else 1e300

    e0 = 2.0 * float(accountant.get_epsilon(delta / 2.0))
    if e0 == 0.0:
        return 0.0  # eps_AR(delta / 2) = 0 -> (0, delta) under replace-one.
    if not math.isfinite(e0):
        return math.inf
    hi = e0
    while gap(hi) > 0:
        hi *= 2.0
        if hi > 1e4:
            return math.inf
    root = optimize.brentq(gap, 0.0, hi, xtol=1e-12, rtol=1e-12)
    # brentq's root may sit a hair on the infeasible side; step to a value
    # that verifiably satisfies the condition (hi always does).
    for candidate in (root, root * (1 + 1e-10) + 1e-12, root * (1 + 1e-8)):
        if candidate <= hi and gap(candidate) <= 0:
            return float(candidate)
    return float(hi)


@functools.lru_cache(maxsize=4096)
def cached_epsilon(noise_multiplier, delta, sample_rate, n_steps, method, neighboring,
                   pld_interval):
    """Epsilon of the mechanism for one z (cached; arguments validated).

    ``method``: "rdp", "rdp_guess" (dp-accounting's default orders) or "pld".
    """
    if noise_multiplier == 0.0:
        return math.inf
    if noise_multiplier == math.inf:
        return 0.0
    if method == "pld" and pld_grid_points(noise_multiplier, pld_interval) > PLD_MAX_POINTS:
        # Tiny noise: the PLD grid would need gigabytes; RDP's bound is as valid.
        method = "rdp"
    with _quiet_dp_accounting():
        if method in ("rdp", "rdp_guess"):
            z = noise_multiplier
            if neighboring == "replace_one" and sample_rate == 1.0:
                # Exact: without sampling, replace-one is sensitivity 2C.
                z = noise_multiplier / 2.0
            accountant = _dp_rdp.RdpAccountant(
                orders=None if method == "rdp_guess" else list(_rdp_orders()),
                neighboring_relation=_DP_RELATION["add_remove"],
            )
            accountant.compose(dp_event(z, sample_rate, n_steps))
            if neighboring == "replace_one" and sample_rate < 1.0:
                return group_of_two_epsilon(accountant, delta)
            return float(accountant.get_epsilon(delta))
        accountant = _dp_pld.PLDAccountant(
            neighboring_relation=_DP_RELATION[neighboring],
            value_discretization_interval=pld_interval,
        )
        accountant.compose(dp_event(noise_multiplier, sample_rate, n_steps))
        return float(accountant.get_epsilon(delta))


def pld_grid_points(noise_multiplier, interval):
    """Generous estimate of a subsampled Gaussian step's PLD grid size (loss span ~0.7 / z**2)."""
    z = noise_multiplier
    return (1.0 / z**2 + 10.0 / z) / interval


def pld_interval_range(eps_scale):
    """The coarsest and the finest PLD interval for an epsilon of this size."""
    lo_bound, hi_bound = PLD_INTERVAL_BOUNDS
    if math.isfinite(eps_scale) and eps_scale > 0:
        coarse, finest = eps_scale / _PLD_COARSEST, eps_scale / _PLD_FINEST
    else:
        coarse, finest = 1e-2, 1e-4
    return (min(max(coarse, lo_bound), hi_bound), min(max(finest, lo_bound), hi_bound))


def pld_interval_rule(coarse, eps_coarse, eps_half, finest):
    """The PLD interval, from epsilons at ``coarse`` and ``coarse / 2`` at one z.

    The PLD estimate is pessimistic (sound) at any interval but overestimates epsilon
    by about ``c * interval**2``, ``c`` depending strongly on the regime (2 % at
    epsilon / 1000 with T ~ 20000, 1e-6 with T ~ 20), at a cost growing like
    1 / interval. The probes' difference, ``0.75 c coarse**2``, estimates ``c``; the
    answer is the largest ``coarse / 2**k`` with a predicted error below
    ``_PLD_RTOL`` relative, never finer than ``finest``.
    """
    if coarse <= finest:
        return finest
    half = max(coarse / 2.0, finest)
    change = eps_coarse - eps_half
    if not (math.isfinite(eps_half) and eps_half > 0):
        return finest
    if change <= 3.0 * _PLD_RTOL * eps_half:
        return half  # its error is about change / 3: accurate enough
    c = change / (0.75 * coarse**2)
    target_interval = math.sqrt(_PLD_RTOL * eps_half / c)
    k = max(1, math.ceil(math.log2(coarse / target_interval)))
    return max(coarse / 2.0**k, finest)


def _pld_interval(noise_multiplier, delta, sample_rate, n_steps, neighboring,
                  eps_scale):
    """The PLD interval for one z: :func:`pld_interval_rule` on two cheap probes there."""
    coarse, finest = pld_interval_range(eps_scale)
    if coarse <= finest:
        return finest
    eps_coarse, eps_half = (
        cached_epsilon(noise_multiplier, delta, sample_rate, n_steps, "pld", neighboring, h)
        for h in (coarse, max(coarse / 2.0, finest)))
    return pld_interval_rule(coarse, eps_coarse, eps_half, finest)


def compute_epsilon(noise_multiplier, delta, *, sample_rate, n_steps,
                    accountant="pld", neighboring="replace_one",
                    pld_discretization=None):
    """Epsilon reached by a given noise multiplier.

    Parameters
    ----------
    noise_multiplier : float
        ``z`` >= 0: noise standard deviation ``z * C`` on the sum of clipped
        per-sample gradients.  ``0`` gives ``inf``, ``inf`` gives ``0``.
    delta : float
        Delta, in (0, 1).
    sample_rate : float
        Poisson sampling probability ``q`` in (0, 1].
    n_steps : int
        Number of noisy steps ``T`` >= 1.
    accountant : {"pld", "rdp"}, default="pld"
    neighboring : {"replace_one", "add_remove"}, default="replace_one"
        See :func:`~sklearn_dplssgd.calibrate_noise`.
    pld_discretization : float, optional
        Fixed PLD ``value_discretization_interval``.  Default: chosen for ~1e-4
        relative accuracy, between ``eps_RDP / 500`` and ``eps_RDP / 10000``
        (``eps_RDP`` the larger RDP value for this ``z``), so the value may differ
        in the 4th-5th digit from :func:`~sklearn_dplssgd.calibrate_noise`'s,
        which scales the interval by the target.  Ignored by RDP.

    Returns
    -------
    float
        The epsilon certified by the accountant (``inf`` if ``z = 0``).

    Raises
    ------
    ValueError
        On invalid arguments; the message names the parameter.
    """
    noise_multiplier = check_noise_multiplier(noise_multiplier)
    delta, sample_rate, n_steps, accountant, neighboring, pld_discretization = (
        check_mechanism(delta, sample_rate, n_steps, accountant, neighboring,
                        pld_discretization, accountants=ACCOUNTANTS,
                        relations=NEIGHBORING_RELATIONS)
    )

    eps_rdp = cached_epsilon(noise_multiplier, delta, sample_rate, n_steps, "rdp",
                             neighboring, None)
    if accountant != "pld":
        return eps_rdp
    if pld_discretization is None:
        # eps_RDP is an upper bound on the PLD value: a safe scale.
        pld_discretization = _pld_interval(noise_multiplier, delta, sample_rate,
                                           n_steps, neighboring, eps_rdp)
    return cached_epsilon(noise_multiplier, delta, sample_rate, n_steps, "pld",
                          neighboring, pld_discretization)


# Events holding lists (ComposedDpEvent) are not hashable: key by their repr,
# which names every field.
EVENT_EPSILONS = {}
_EVENT_EPSILONS_MAX = 4096


def event_epsilon(event, delta, neighboring="replace_one", pld_interval=None, pld_only=False):
    """Epsilon at ``delta`` of any dp-accounting event, by the tightest sound accountant.

    PLD under the given adjacency where it supports every part of ``event``, else RDP
    under add/remove with the group-of-two reduction for replace-one (the search's
    ``RepeatAndSelectDpEvent``); the smaller where both apply. A Gaussian query moves
    by at most its sensitivity under add/remove, twice that under replace-one.
    ``EpsilonDeltaDpEvent`` parts are composed with the rest by basic composition
    (:func:`split_epsilon_delta_events`).

    ``pld_interval`` None uses ``epsilon_RDP / 1000``; ``pld_only`` skips RDP (slow on
    compositions of many different events) and needs ``pld_interval``. ``inf`` for an
    event containing a non-private part.
    """
    check_delta(delta)
    check_choice(neighboring, NEIGHBORING_RELATIONS, "neighboring")
    if pld_only and pld_interval is None:
        raise ValueError("pld_only needs a pld_interval.")
    rest, pure_epsilon, pure_delta = split_epsilon_delta_events(event)
    if pure_epsilon or pure_delta:
        # Basic composition, valid for any mechanisms (Dwork and Roth 2014, Theorem 3.16).
        if not rest:
            # An (epsilon, delta')-DP mechanism is (epsilon, delta)-DP for delta >= delta'.
            return pure_epsilon if pure_delta <= delta else math.inf
        if pure_delta >= delta:
            return math.inf
        return pure_epsilon + event_epsilon(
            dp_accounting.ComposedDpEvent(rest), delta - pure_delta, neighboring,
            pld_interval=pld_interval, pld_only=pld_only)
    key = (repr(event), float(delta), neighboring, pld_interval, pld_only)
    if key not in EVENT_EPSILONS:
        if len(EVENT_EPSILONS) >= _EVENT_EPSILONS_MAX:
            EVENT_EPSILONS.clear()
        if pld_only:
            EVENT_EPSILONS[key] = _pld_event_epsilon(event, delta, neighboring, pld_interval)
        else:
            EVENT_EPSILONS[key] = _event_epsilon(event, delta, neighboring, pld_interval)
    return EVENT_EPSILONS[key]


def _event_epsilon(event, delta, neighboring, pld_interval):
    with _quiet_dp_accounting():
        rdp = _dp_rdp.RdpAccountant(
            orders=list(_rdp_orders()),
            neighboring_relation=_DP_RELATION["add_remove"],
        )
        if not rdp.supports(event):
            raise ValueError(f"dp-accounting cannot account for {event!r}.")
        rdp.compose(event)
        if neighboring == "replace_one":
            rdp_epsilon = group_of_two_epsilon(rdp, delta)
        else:
            rdp_epsilon = float(rdp.get_epsilon(delta))
        if not math.isfinite(rdp_epsilon) or rdp_epsilon == 0.0:
            return rdp_epsilon
        interval = pld_interval if pld_interval is not None else rdp_epsilon / 1000.0
        if not _dp_pld.PLDAccountant(_DP_RELATION[neighboring]).supports(event):
            return rdp_epsilon
        # Both are upper bounds on the true epsilon: report the smaller.
        return min(rdp_epsilon, _pld_event_epsilon(event, delta, neighboring, interval))


def _pld_event_epsilon(event, delta, neighboring, interval):
    """PLD's (pessimistic) epsilon of ``event`` at this discretization interval."""
    with _quiet_dp_accounting():
        pld = _dp_pld.PLDAccountant(
            neighboring_relation=_DP_RELATION[neighboring],
            value_discretization_interval=interval,
        )
        if not pld.supports(event):
            raise ValueError(f"dp-accounting's PLD accountant cannot account for {event!r}.")
        try:
            return float(pld.compose(event).get_epsilon(delta))
        except OverflowError:
            # Nearly noiseless events overflow its discretization: not certified.
            return math.inf


def split_epsilon_delta_events(event):
    """Take the ``EpsilonDeltaDpEvent`` parts out of a composition, for basic composition.

    Parts at the top of ``event`` (through ``ComposedDpEvent`` and
    ``SelfComposedDpEvent``) are summed; one nested inside another kind of event stays
    in the rest (and an accountant then refuses it). Returns ``(rest, epsilon,
    delta)``: the other parts (``NoOpDpEvent`` dropped) and the sums, with multiplicity.
    """
    if isinstance(event, EpsilonDeltaDpEvent):
        return [], float(event.epsilon), float(event.delta)
    if isinstance(event, dp_accounting.NoOpDpEvent):
        return [], 0.0, 0.0
    if isinstance(event, dp_accounting.ComposedDpEvent):
        rest, epsilon, delta = [], 0.0, 0.0
        for part in event.events:
            part_rest, part_epsilon, part_delta = split_epsilon_delta_events(part)
            rest += part_rest
            epsilon += part_epsilon
            delta += part_delta
        return rest, epsilon, delta
    if isinstance(event, dp_accounting.SelfComposedDpEvent):
        part_rest, part_epsilon, part_delta = split_epsilon_delta_events(event.event)
        if not part_rest:
            return [], part_epsilon * event.count, part_delta * event.count
        if part_epsilon or part_delta:
            return ([dp_accounting.SelfComposedDpEvent(
                dp_accounting.ComposedDpEvent(part_rest), event.count)],
                part_epsilon * event.count, part_delta * event.count)
    return [event], 0.0, 0.0
