"""Privacy accounting for DP-LSSGD on top of Google's ``dp-accounting``.

The mechanism that the estimators run is, for ``T`` steps: Poisson-sample every
row independently with probability ``q``, sum the per-sample gradients each
clipped to L2 norm ``C``, add ``N(0, (z C)^2 I)``.  Laplacian smoothing and the
step are post-processing.  In ``dp-accounting`` terms that is::

    SelfComposedDpEvent(PoissonSampledDpEvent(q, GaussianDpEvent(z)), T)

(for ``q = 1`` simply ``SelfComposedDpEvent(GaussianDpEvent(z), T)``).

This module turns a target ``(epsilon, delta)`` into the noise multiplier
``z`` (:func:`calibrate_noise`), reports the ``epsilon`` a given ``z`` reaches
(:func:`compute_epsilon`), and evaluates the closed-form noise of the DP-LSSGD
paper (:func:`paper_noise_multiplier`).  ``z`` is always relative to the clip
norm: the noise standard deviation on the *sum* of clipped gradients is
``z * C``.

Decisions, and why
------------------
* PLD is the default: it is the tightest sound accountant dp-accounting
  offers (RDP over-reports epsilon by 5 to 40 percent in typical settings,
  far more at tiny epsilon) and handles replace-one adjacency natively.
* RDP uses ``dp-accounting``'s default orders made dense between 64 and
  1024 (see :func:`_rdp_orders`) and its default, improved RDP ->
  (epsilon, delta) conversion (Balle et al. 2020).  Capping the orders at 63
  would make epsilon below about 0.1 at delta = 1e-5 impossible to certify.
* PLD: the PLD estimate is pessimistic, hence sound at any
  ``value_discretization_interval``, but it overestimates epsilon by about
  ``c * interval**2``, where ``c`` depends on the regime (2 % at
  ``epsilon / 1000`` and 1e-4 at ``epsilon / 10000`` with T ~ 20000 steps,
  exact to 1e-6 at ``epsilon / 500`` with T ~ 20), while the run time grows
  like ``1 / interval``.  Two cheap probes (``epsilon / 500`` and
  ``epsilon / 1000``) estimate ``c``, and :func:`_pld_interval_rule` takes
  the coarsest interval ``epsilon / (500 * 2**k)`` with a predicted error
  below 1e-4 relative, never finer than ``epsilon / 10000``.  The scale is
  the target epsilon when calibrating, and ``epsilon_RDP(z)`` (an upper bound
  on the PLD value, ~20 ms) in :func:`compute_epsilon`.  Both functions
  accept ``pld_discretization`` to fix the interval instead.
* PLD calibration (:func:`_pld_smallest_noise`) searches on the coarse
  interval, where an evaluation costs milliseconds, and evaluates the fine
  interval only near the root, usually once or twice: the coarse root and the
  two probes there predict the fine root (where the fine curve lies more than
  5 percent below the coarse one, a second prediction at the predicted root
  corrects the slope), and secant steps at the fine interval, each aimed 1e-4
  above the predicted root so that the first usually lands on the safe side,
  end at an evaluated z that meets the target (with a 1e-7 relative slack)
  and lies within 2e-4 of the fine root.  Only fine evaluations decide the
  answer.  Cold, replace-one: 0.02 to 0.1 s at the benchmark's typical
  settings, about 0.25 s at T = 19532, q = 0.00026 (was 0.5 to 0.7 s, and
  10 s before that), where one fine evaluation takes about 0.16 s (the
  composition of a grid of 160 000 points into one of 560 000 is most of
  it: FFTs, the truncation bounds' 40 moment generating functions).
* With ``0 < q < 1``, under both relations, the one-step PLD is built by
  :func:`_subsampled_step_pld`: dp-accounting's construction with its
  per-point inverse privacy loss vectorised (the same grid, divergences and
  discretization, and the same operations, so the distribution and every
  epsilon are dp-accounting's bit for bit; checked at run time on 64 grid
  points, in the tests on whole grids and composed epsilons, and by
  ``benchmarks/check_fast_pld.py``).  That loop was 70 to 90 percent of the
  cost of a PLD evaluation (twice as many points under add/remove, REMOVE
  and ADD).  Equal to rounding is not enough: the connect-the-dots
  discretization amplifies last-bit differences of the inverse into epsilons
  up to 2e-6 relative below dp-accounting's (measured with the first,
  all-numpy version of this path).  The path uses dp-accounting internals;
  if they are missing or changed, or the run-time check fails,
  :func:`_epsilon` uses the public ``PLDAccountant`` instead.  The two Python
  loops left in an evaluation, ``log_sinh`` per grid point under replace-one
  and the walk of the composed distribution for epsilon, are compiled copies
  of dp-accounting's (:mod:`._pld_kernels`, the same libm calls and sums).
* ``replace_one``: one row replaced by another (sensitivity ``2C`` on the sum).
  ``dp-accounting``'s PLD accountant supports the Poisson-subsampled Gaussian
  under ``REPLACE_ONE`` natively and is used as is.  Its RDP accountant refuses
  ``PoissonSampledDpEvent`` under ``REPLACE_ONE``, so for ``q < 1`` RDP uses
  the provably sound group-privacy reduction: replace-one neighbours are two
  add/remove steps apart, so an (e, d)-DP mechanism under add/remove is
  (2 e, (1 + exp(e)) d)-DP under replace-one; we report the smallest
  ``eps`` with ``2 * eps_AR(delta / (1 + exp(eps / 2))) <= eps``.  (Treating
  replace-one as add/remove with a halved multiplier is NOT used: it is not
  proven for Poisson sampling.)  For ``q = 1`` there is no sampling and
  replace-one is exactly the Gaussian mechanism with sensitivity ``2C``, i.e.
  multiplier ``z / 2`` under add/remove; RDP uses that, and it is what PLD's
  native ``REPLACE_ONE`` Gaussian computes.
* Log records that ``dp-accounting`` emits (through absl logging, e.g. "failed
  to converge ... excluding this order", which only makes the bound more
  conservative) are silenced inside our calls only, by
  :func:`_quiet_dp_accounting`.  It raised no Python warnings in our probes.
"""

import contextlib
import dataclasses
import functools
import logging
import math
import numbers
import os
import warnings

import numpy as np
from scipy import fft as _fft
from scipy import optimize
from scipy import signal as _signal

import dp_accounting
from dp_accounting import pld as _dp_pld
from dp_accounting import rdp as _dp_rdp

try:
    # dp-accounting modules used only by the fast PLD path
    # (_subsampled_step_pld), which also relies on private functions and
    # methods in them.  Should a release move them, that path is skipped and
    # dp-accounting's public PLDAccountant is used instead (see _epsilon).
    from dp_accounting.pld import common as _dp_pld_common
    from dp_accounting.pld import pld_pmf as _dp_pld_pmf
    from dp_accounting.pld import privacy_loss_distribution as _dp_pld_distribution
    from dp_accounting.pld import privacy_loss_mechanism as _dp_pld_mechanism
except ImportError:  # pragma: no cover - depends on the dp-accounting release
    _dp_pld_common = _dp_pld_pmf = _dp_pld_distribution = _dp_pld_mechanism = None

from . import _pld_kernels

__all__ = [
    "ACCOUNTANTS",
    "NEIGHBORING_RELATIONS",
    "PrivacyCalibration",
    "calibrate_noise",
    "compute_epsilon",
    "dp_event",
    "event_epsilon",
    "paper_noise_multiplier",
    "smallest_noise_for",
]

ACCOUNTANTS = ("rdp", "pld", "paper", "paper_released")
NEIGHBORING_RELATIONS = ("add_remove", "replace_one")
_PAPER_VARIANTS = ("theorem1", "released")

_DP_RELATION = {
    "add_remove": dp_accounting.NeighboringRelation.ADD_OR_REMOVE_ONE,
    "replace_one": dp_accounting.NeighboringRelation.REPLACE_ONE,
}

# Relative tolerance on z in the calibration search: the returned z is at most
# this much above the smallest z the accountant accepts.
_Z_RTOL = 1e-5
# The same for the RDP answer that decides the PLD path for huge targets.
_GUESS_RTOL = 1e-3
# PLD calibrations: the returned z is within this of the root, by the bracket
# or by the local slope (see _pld_smallest_noise); each fine step aims this
# far above the predicted root, so that it usually lands on the safe side;
# the target is met with this relative slack.
_Z_RTOL_PLD = 2e-4
_PLD_MARGIN = 1e-4
_PLD_SLACK = 1e-7
# Where the fine epsilon is predicted this far (in log) from the target, the
# first fine step is aimed with a second prediction (see _pld_smallest_noise).
_PLD_FAR = 0.05
# PLD interval: chosen between epsilon / 500 and epsilon / 10000 (and inside
# _PLD_INTERVAL_BOUNDS) so that the discretization error is about _PLD_RTOL
# relative; see _pld_interval.
_PLD_COARSEST = 500.0
_PLD_FINEST = 1e4
_PLD_RTOL = 1e-4
# The upper bound grows with epsilon far enough that the grid stays small at
# large epsilon; far beyond 100 dp-accounting's exp(interval) overflows.
_PLD_INTERVAL_BOUNDS = (1e-6, 100.0)
# Larger PLD grids (8 bytes a point, several copies, seconds each) are not built: the
# RDP bound is used for that evaluation instead (see _epsilon).
_PLD_MAX_POINTS = 2e6
# When both the coarse PLD search and RDP find less noise than this enough,
# "pld" calibrations return RDP's answer (see _calibrate_cached).
_PLD_MIN_NOISE = 0.6
# Beyond this z the calibration gives up: the target is below what the
# accountant can certify at this delta (RDP with orders <= 1024 cannot go below
# about 0.004 at delta = 1e-5, whatever the noise).
_Z_MAX = 1e7


@dataclasses.dataclass(frozen=True)
class PrivacyCalibration:
    """Result of :func:`calibrate_noise`.

    Attributes
    ----------
    noise_multiplier : float
        ``z``: the Gaussian noise added to the SUM of clipped per-sample
        gradients has standard deviation ``z * clip_norm``.  ``0.0`` for
        ``epsilon = inf`` (no noise).
    epsilon : float
        The epsilon this ``z`` actually reaches for ``(sample_rate, n_steps,
        delta)``, as certified by the accountant.  Never above the target for
        ``"rdp"`` and ``"pld"``.  For the paper accountants it is the value the
        RDP accountant certifies for the Poisson-sampled mechanism that
        actually runs; if that exceeds the target a ``UserWarning`` was
        emitted.  ``inf`` when no noise is added.
    delta : float
        The delta of the guarantee.
    sample_rate : float
        ``q``, the Poisson sampling probability of each row in each step.
    n_steps : int
        ``T``, the number of noisy steps.
    accountant : str
        One of "rdp", "pld", "paper", "paper_released".
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


# --------------------------------------------------------------------------
# Validation
# --------------------------------------------------------------------------


def _is_real(x):
    return isinstance(x, numbers.Real) and not isinstance(x, bool)


def _check_epsilon(epsilon, name="epsilon"):
    if not _is_real(epsilon) or math.isnan(epsilon) or epsilon <= 0:
        raise ValueError(
            f"{name} must be a positive number (float('inf') for no privacy), "
            f"got {epsilon!r}."
        )
    return float(epsilon)


def _check_delta(delta):
    if not _is_real(delta) or not 0 < delta < 1:
        raise ValueError(f"delta must be a number in (0, 1), got {delta!r}.")
    return float(delta)


def _check_sample_rate(sample_rate):
    if not _is_real(sample_rate) or not 0 < sample_rate <= 1:
        raise ValueError(
            f"sample_rate must be a number in (0, 1], got {sample_rate!r}."
        )
    return float(sample_rate)


def _check_positive_int(value, name):
    if isinstance(value, bool) or not isinstance(value, numbers.Integral):
        raise ValueError(f"{name} must be an integer >= 1, got {value!r}.")
    if value < 1:
        raise ValueError(f"{name} must be an integer >= 1, got {value!r}.")
    return int(value)


def _check_choice(value, allowed, name):
    if not isinstance(value, str) or value not in allowed:
        raise ValueError(f"{name} must be one of {allowed}, got {value!r}.")
    return value


def _check_noise_multiplier(noise_multiplier):
    if (
        not _is_real(noise_multiplier)
        or math.isnan(noise_multiplier)
        or noise_multiplier < 0
    ):
        raise ValueError(
            f"noise_multiplier must be a number >= 0, got {noise_multiplier!r}."
        )
    return float(noise_multiplier)


def _check_pld_discretization(value):
    if value is None:
        return None
    if not _is_real(value) or not (0 < value < math.inf):
        raise ValueError(
            f"pld_discretization must be None or a positive finite number, "
            f"got {value!r}."
        )
    return float(value)


def _check_mechanism(delta, sample_rate, n_steps, accountant, neighboring,
                     pld_discretization):
    """Validate the arguments shared by calibrate_noise and compute_epsilon."""
    return (
        _check_delta(delta),
        _check_sample_rate(sample_rate),
        _check_positive_int(n_steps, "n_steps"),
        _check_choice(accountant, ACCOUNTANTS, "accountant"),
        _check_choice(neighboring, NEIGHBORING_RELATIONS, "neighboring"),
        _check_pld_discretization(pld_discretization),
    )


# --------------------------------------------------------------------------
# Talking to dp-accounting
# --------------------------------------------------------------------------


class _DpAccountingRecordFilter(logging.Filter):
    """Drop log records emitted from dp-accounting's own source files."""

    _marker = os.sep + "dp_accounting" + os.sep

    def filter(self, record):
        return self._marker not in (record.pathname or "")


@contextlib.contextmanager
def _quiet_dp_accounting():
    """Silence dp-accounting's log records, only inside this block.

    dp-accounting logs through absl (logger ``"absl"``: e.g. "failed to
    converge ... excluding this order", which only makes the RDP bound more
    conservative, and "negative Renyi divergence"), and its PLD module through
    the root logger.  A filter that drops only records coming from
    dp-accounting's own files is attached to both loggers for the duration of
    the block; nothing else is hidden and nothing changes after it.  (No
    Python warnings were seen from dp-accounting 0.6.0 even on extreme
    inputs, so the warnings filters, which are process-global and not
    thread-safe, are left alone.)
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
    """The DpEvent of T steps of the Poisson-subsampled Gaussian mechanism.

    The event the accountants compose, and the ``dp_event_`` of a private fit
    (see :class:`sklearn_dplssgd._mechanism.GradientPerturbation`).
    """
    gaussian = dp_accounting.GaussianDpEvent(noise_multiplier)
    if sample_rate == 1.0:
        # Full batch: no sampling, T plain Gaussian mechanisms.
        return dp_accounting.SelfComposedDpEvent(gaussian, n_steps)
    return dp_accounting.SelfComposedDpEvent(
        dp_accounting.PoissonSampledDpEvent(sample_rate, gaussian), n_steps
    )


def _rdp_orders():
    """RDP orders: dp-accounting's defaults, made dense between 64 and 1024.

    dp-accounting's default list (1.1 ... 10.9, 11 ... 63, 128, 256, 512,
    1024) jumps by factors of 2 above 64, where the best order lies for
    small epsilons; the optimum between two listed orders is then missed
    (epsilon 0.1526 instead of 0.1434 for z = 8, q = 128 / 60000, T = 23438).
    Orders 64 ... 1024 spaced by a factor 1.1 find the same optimum as every
    integer order there would, at about 3 times the default's cost (50 ms an
    evaluation instead of 16). Orders capped at 63 (as in Opacus) would make
    small epsilons uncertifiable.
    """
    return _RDP_ORDERS


_RDP_ORDERS = tuple(sorted(set(
    [1.0 + x / 10.0 for x in range(1, 100)]
    + list(range(11, 64))
    + [round(64 * 1.1**k) for k in range(30)]
    + [1024]
)))


def _group_of_two_epsilon(accountant, delta):
    """Epsilon under replace-one from an add/remove RDP accountant.

    Group privacy for a group of 2: if the mechanism is (e, d)-DP under
    add/remove, it is (2 e, (1 + exp(e)) d)-DP under replace-one.  Split the
    target delta as d = delta / (1 + exp(eps / 2)) and return the smallest
    ``eps`` found with ``2 * eps_AR(d) <= eps``; any such ``eps`` is a valid
    guarantee, since then ``e = eps_AR(d) <= eps / 2``.
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
def _epsilon(noise_multiplier, delta, sample_rate, n_steps, method, neighboring,
             pld_interval):
    """Epsilon of the mechanism for one z (cached; all arguments validated).

    ``method`` is "rdp", "rdp_guess" (dp-accounting's default orders: the PLD
    search's starting point) or "pld"; ``pld_interval`` is ignored for RDP.
    """
    if noise_multiplier == 0.0:
        return math.inf
    if noise_multiplier == math.inf:
        return 0.0
    if method == "pld" and _pld_grid_points(noise_multiplier, pld_interval) > _PLD_MAX_POINTS:
        # Tiny noise (a huge epsilon target): the PLD grid would need
        # gigabytes. RDP's bound is just as valid an upper bound on epsilon.
        method = "rdp"
    with _quiet_dp_accounting():
        if method in ("rdp", "rdp_guess"):
            z = noise_multiplier
            if neighboring == "replace_one" and sample_rate == 1.0:
                # Exact: without sampling, replace-one is the Gaussian
                # mechanism with sensitivity 2C, i.e. multiplier z / 2.
                z = noise_multiplier / 2.0
            accountant = _dp_rdp.RdpAccountant(
                # The PLD search's starting point needs no dense grid.
                orders=None if method == "rdp_guess" else list(_rdp_orders()),
                neighboring_relation=_DP_RELATION["add_remove"],
            )
            accountant.compose(dp_event(z, sample_rate, n_steps))
            if neighboring == "replace_one" and sample_rate < 1.0:
                # dp-accounting's RDP accountant does not support Poisson
                # sampling under REPLACE_ONE: sound group-privacy reduction.
                return _group_of_two_epsilon(accountant, delta)
            return float(accountant.get_epsilon(delta))
        if sample_rate < 1.0:
            # What PLDAccountant does for this event, with the one step's
            # distribution built without its per-point Python loop.  That
            # construction uses dp-accounting internals (private functions and
            # methods, see _subsampled_step_pld), which a release may move or
            # change: then it fails safe, falling through to the public
            # accountant below (slower, the same answer) instead of raising.
            try:
                step = _subsampled_step_pld(noise_multiplier, sample_rate,
                                            pld_interval, neighboring)
                return _pld_epsilon_for_delta(_compose_steps(step, n_steps), delta)
            except _FAST_PATH_ERRORS:
                pass
        # PLD supports both relations natively (and the q = 1 Gaussian with
        # sensitivity 2C under REPLACE_ONE).
        accountant = _dp_pld.PLDAccountant(
            neighboring_relation=_DP_RELATION[neighboring],
            value_discretization_interval=pld_interval,
        )
        accountant.compose(dp_event(noise_multiplier, sample_rate, n_steps))
        return float(accountant.get_epsilon(delta))


class _FastPathMismatch(Exception):
    """The vectorised inverse privacy loss is not dp-accounting's, bit for bit."""


# What a moved or changed dp-accounting internal raises in the fast
# replace-one path (a missing module, function or method, another signature,
# other arguments refused), and its own mismatch check: _epsilon then uses
# dp-accounting's public PLDAccountant instead.
_FAST_PATH_ERRORS = (AttributeError, TypeError, ImportError, ValueError,
                     LookupError, NotImplementedError, _FastPathMismatch)

# Grid points whose inverse privacy loss is recomputed by dp-accounting's
# scalar code at run time (see _subsampled_step_pld).
_N_PROBES = 64


def _pld_epsilon_for_delta(pld, delta):
    """``pld.get_epsilon_for_delta(delta)`` with its loop compiled.

    For dense distributions (what a composition gives) the walk over the
    losses is :func:`_pld_kernels.epsilon_for_delta`, dp-accounting's loop
    operation for operation; anything else goes to dp-accounting's method.
    """
    pmfs = [pld._pmf_remove] if pld._symmetric else [pld._pmf_remove, pld._pmf_add]
    if not all(isinstance(pmf, _dp_pld_pmf.DensePLDPmf) for pmf in pmfs):
        return float(pld.get_epsilon_for_delta(delta))
    epsilons = []
    for pmf in pmfs:
        # As DensePLDPmf.get_epsilon_for_delta computes it (integer sum first).
        upper_loss = (pmf._lower_loss + len(pmf._probs) - 1) * pmf._discretization
        epsilons.append(_pld_kernels.epsilon_for_delta(
            float(pmf._infinity_mass), float(upper_loss), float(pmf._discretization),
            np.ascontiguousarray(pmf._probs, dtype=np.float64), float(delta)))
    return float(max(epsilons))


# dp-accounting's default tail mass truncation of PrivacyLossDistribution's
# compose and self_compose (what PLDAccountant uses).
_PLD_TAIL_MASS_TRUNCATION = 1e-15
# How far a log moment generating function of _self_convolve_bounds may be
# from scipy's (absolute, plus relative): far above any last-bit difference
# of the summation (a sum of 1e6 terms in another order differs by about
# 1e-14), so a bound this close to an integer is recomputed by
# dp-accounting's own function; at T = 20,000 steps and 160,000 grid points
# that happens in about 1 evaluation in 250.
_LOG_MGF_ATOL, _LOG_MGF_RTOL = 1e-13, 1e-15


def _compose_steps(step, n_steps):
    """``identity.compose(step.self_compose(n_steps))``, as PLDAccountant composes.

    For dense distributions (what :func:`_subsampled_step_pld` builds for
    long grids) the same operations as dp-accounting's
    ``DensePLDPmf.self_compose`` and ``DensePLDPmf.compose`` with the
    identity, in their order, with two of their costs cut: the Chernoff
    bounds of the self-convolution (:func:`_self_convolve_bounds`) and the
    tails' truncation walk (:func:`_pld_kernels.prefix_to_truncate`).
    Anything else goes to dp-accounting's methods.
    """
    pmfs = [step._pmf_remove] if step._symmetric else [step._pmf_remove, step._pmf_add]
    if not all(isinstance(pmf, _dp_pld_pmf.DensePLDPmf) and pmf._pessimistic_estimate
               for pmf in pmfs):
        return _dp_pld_distribution.identity(pmfs[0]._discretization).compose(
            step.self_compose(n_steps))
    composed = [_compose_dense_steps(pmf, n_steps) for pmf in pmfs]
    return _dp_pld_distribution.PrivacyLossDistribution(*composed)


def _compose_dense_steps(pmf, n_steps):
    """One dense pessimistic PMF composed ``n_steps`` times, then with the identity."""
    truncation = _PLD_TAIL_MASS_TRUNCATION
    # DensePLDPmf.self_compose, with common.self_convolve inlined.
    probs = pmf._probs
    lower, upper = _self_convolve_bounds(probs, n_steps, truncation)
    output_len = upper - lower + 1
    fast_len = _fft.next_fast_len(max(output_len, len(probs)))
    convolved = np.real(_fft.ifft(_fft.fft(probs, fast_len)**n_steps))
    probs = np.array(np.roll(convolved, -lower)[:output_len])
    lower_loss = pmf._lower_loss * n_steps + lower
    infinity_mass = truncation - math.expm1(n_steps * math.log1p(-pmf._infinity_mass))
    # DensePLDPmf.compose of the identity (one point of mass 1 at loss 0, no
    # mass at infinity) with that: the same FFT convolution and truncation.
    # Its infinity mass 0 + m - 0 * m is m exactly.
    probs = _signal.fftconvolve(np.array([1.0]), probs)
    offset, probs, right_tail = _truncate_tails(probs, truncation)
    return _dp_pld_pmf.DensePLDPmf(pmf._discretization, lower_loss + offset, probs,
                                   infinity_mass + right_tail, True)


def _truncate_tails(probs, tail_mass_truncation):
    """``pld_pmf._truncate_tails`` for a pessimistic estimate, its walks compiled."""
    if tail_mass_truncation == 0:
        return 0, probs, 0
    threshold = tail_mass_truncation / 2
    left = _pld_kernels.prefix_to_truncate(probs, threshold)
    right = len(probs) - _pld_kernels.prefix_to_truncate(probs[::-1], threshold)
    right = max(right, left + 1)
    left_mass = np.sum(probs[:left])
    right_mass = np.sum(probs[right:])
    truncated = probs[left:right]
    truncated[0] += left_mass
    return left, truncated, right_mass


def _self_convolve_bounds(probs, n_times, tail_mass_truncation):
    """``common.compute_self_convolve_bounds``, without scipy's per-call overhead.

    The Chernoff bounds on the support of the ``n_times``-fold convolution
    at dp-accounting's 40 orders, each a log moment generating function: the
    same numpy operations as ``scipy.special.logsumexp`` (with weights) in
    a lean form, about twice as fast.  The bounds are integers (ceilings and
    floors): should any lie so close to an integer that a last-bit
    difference from scipy's own arithmetic could move it, or be non-finite,
    dp-accounting's function computes them all instead, so the result is
    its own.
    """
    size = len(probs)
    upper_bound, lower_bound = (size - 1) * n_times, 0
    orders = np.concatenate((np.arange(-20, 0), np.arange(1, 21))) / size
    log_term = math.log(2 / tail_mass_truncation)
    indices = np.arange(size)
    zero = probs == 0
    for order in orders:
        exponents = indices * order
        exponents[zero] = -np.inf
        top = exponents.max()
        at_top = exponents == top
        exponents[at_top] = -np.inf
        mass_at_top = np.sum(probs * at_top.astype(np.float64))
        rest = np.sum(probs * np.exp(exponents - top))
        rest = rest if rest == 0 else rest / mass_at_top
        log_mgf = float(np.log1p(rest) + np.log(mass_at_top) + top)
        bound = (n_times * log_mgf + log_term) / order
        error = n_times * (_LOG_MGF_ATOL + _LOG_MGF_RTOL * abs(log_mgf)) / abs(order)
        if not (math.isfinite(bound) and rest >= 0 and mass_at_top > 0
                and abs(bound - round(bound)) > error):
            return _dp_pld_common.compute_self_convolve_bounds(
                probs, n_times, tail_mass_truncation)
        if order > 0:
            upper_bound = min(upper_bound, math.ceil(bound))
        else:
            lower_bound = max(lower_bound, math.floor(bound))
    return lower_bound, upper_bound


def _replace_one_inverse_loss(epsilons, noise_multiplier, sample_rate):
    """dp-accounting's inverse privacy loss under REPLACE, for an array.

    ``GaussianPrivacyLoss._inverse_privacy_loss_replace`` (sensitivity 1,
    ``0 < q < 1``): the largest x whose privacy loss is at least epsilon,
    ``x = z**2 * (asinh(-sinh(eps / 2) * alpha) - eps / 2)`` with
    ``alpha = exp(0.5 / z**2) (1 - q) / q``, in logs as there.

    The result must be dp-accounting's bit for bit, not just to rounding:
    the pessimistic connect-the-dots distribution takes second differences of
    the hockey-stick divergences at these points, which turns a last-bit
    change of x into relative changes of up to 5e-3 in single probabilities,
    and of 1e-6 to 1e-5 in an epsilon composed over thousands of steps, in
    either direction (measured; benchmarks/check_fast_pld.py).  So every
    operation is dp-accounting's, in its order and precision: the
    transcendental functions of ``common.log_sinh`` with ``math`` (numpy's
    SIMD ``exp`` and ``log1p`` differ from them in the last bit for a few
    percent of arguments), the rest with numpy's ``logaddexp`` (not SIMD in
    numpy 2.4: the same bits on arrays as on scalars) and plain arithmetic.
    :func:`_subsampled_step_pld` checks the result at run time.
    """
    z, q = noise_multiplier, sample_rate
    # As in _inverse_privacy_loss_replace: (sensitivity / sd)**2, not 1 / sd**2.
    log_alpha = 0.5 * (1 / z) ** 2 + math.log1p(-q) - math.log(q)
    half = np.abs(epsilons) / 2
    # common.log_sinh, element by element (0 where eps = 0, set apart below),
    # compiled with the same libm calls.
    log_sinh = _pld_kernels.log_sinh(
        np.ascontiguousarray(half, dtype=np.float64).ravel(), math.log(2)
    ).reshape(half.shape)
    log_term = log_alpha + log_sinh
    # common.asinh_exp(log_term, -sign(eps)); log(|b|) = 0 adds nothing.
    asinh_term = -np.where(epsilons >= 0, 1.0, -1.0) * np.logaddexp(
        0.5 * np.logaddexp(0, 2 * log_term), log_term)
    return np.where(epsilons == 0, 0.0, z**2 / 1 * (asinh_term - epsilons / 2))


def _add_remove_inverse_loss(epsilons, noise_multiplier, sample_rate, adjacency):
    """dp-accounting's inverse privacy loss under ADD or REMOVE, for an array.

    ``GaussianPrivacyLoss._inverse_privacy_loss_add`` / ``_remove``
    (sensitivity 1, ``0 < q < 1``) on the grid points where dp-accounting's
    ``get_delta_for_epsilon`` calls them (``eps < -log1p(-q)`` for ADD,
    ``eps > log1p(-q)`` for REMOVE): the loss without subsampling is
    ``common.log_a_times_exp_b_plus_c(1 / q, +-eps, 1 - 1 / q)``, mapped
    through the Gaussian's linear inverse.  Every operation is
    dp-accounting's, in its order, with numpy's functions as there (they
    act element by element, so an array gives the scalar calls' bits), and
    ``math.isclose`` as there for the point that maps to infinity.  Bit for
    bit, as for :func:`_replace_one_inverse_loss`; checked at run time by
    :func:`_subsampled_step_pld`.
    """
    z, q = noise_multiplier, sample_rate
    add = adjacency == "add"
    signed = -epsilons if add else epsilons
    a, c = 1 / q, 1 - 1 / q
    # log_a_times_exp_b_plus_c(a, b, c) with a > 0 and c < 0: b == 0 gives
    # log(a + c); otherwise _log_sub(b + log(a), log(-c)), which dp-accounting
    # refuses (ValueError) where log(-c) >= b + log(a).
    # math.isclose(eps, -+log(1 - q)): the inverse at -+infinity.
    edge = (-1.0 if add else 1.0) * math.log(1 - q)
    close = np.abs(epsilons - edge) <= 1e-09 * np.maximum(np.abs(epsilons), abs(edge))
    d = signed + np.log(a)
    log_minus_c = np.log(-c)
    if np.any(~close & (signed != 0) & (log_minus_c >= d)):
        raise _FastPathMismatch
    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
        log_sub = d + np.log1p(-np.exp(log_minus_c - d))
    without = np.where(signed == 0, np.log(a + c), log_sub)
    if add:
        without = -without
    # _inverse_privacy_loss_without_subsampling_remove, sensitivity 1 (the
    # ADD inverse adds the sensitivity to it).
    x = -0.5 * 1 - without * (z**2) / 1
    if add:
        x = 1 + x
    return np.where(close, -math.inf if add else math.inf, x)


def _subsampled_step_pld(noise_multiplier, sample_rate, interval, neighboring):
    """PLD of one Poisson-subsampled Gaussian step (``0 < q < 1``).

    The same distribution, bit for bit, as dp-accounting's
    ``from_gaussian_mechanism(z, sampling_prob=q, neighboring_relation=...,
    value_discretization_interval=interval)`` (pessimistic connect-the-dots,
    truncation ``exp(-50)``; under add/remove a REMOVE and an ADD
    distribution), which spends 70 to 90 percent of a calibration calling
    the scalar inverse privacy loss once per grid point (160 000 calls, 0.6
    s, at z = 0.6, interval 1e-4, twice that under add/remove).  Here the
    inverse is vectorised (:func:`_replace_one_inverse_loss`,
    :func:`_add_remove_inverse_loss`); everything else (the truncation, the
    hockey-stick divergences, the discretization) is dp-accounting's own
    code, called as it calls it.

    ``_N_PROBES`` grid points, both ends included, are recomputed with
    dp-accounting's scalar inverse and must agree exactly; otherwise (a
    dp-accounting or numpy release that computes differently) this raises
    ``_FastPathMismatch`` and :func:`_epsilon` uses dp-accounting's accountant.
    A moved or changed internal raises one of ``_FAST_PATH_ERRORS`` with the
    same effect.  The tests compare whole grids.
    """
    adjacency = _dp_pld_mechanism.AdjacencyType
    if neighboring == "replace_one":
        pmfs = [_step_pmf(noise_multiplier, sample_rate, interval, adjacency.REPLACE,
                          _replace_one_inverse_loss)]
    else:
        pmfs = [_step_pmf(noise_multiplier, sample_rate, interval, kind,
                          functools.partial(_add_remove_inverse_loss, adjacency=name))
                for kind, name in ((adjacency.REMOVE, "remove"), (adjacency.ADD, "add"))]
    return _dp_pld_distribution.PrivacyLossDistribution(*pmfs)


def _step_pmf(noise_multiplier, sample_rate, interval, adjacency, inverse_loss):
    """One connect-the-dots PMF of :func:`_subsampled_step_pld`."""
    loss = _dp_pld_mechanism.GaussianPrivacyLoss(
        noise_multiplier, sampling_prob=sample_rate, adjacency_type=adjacency)
    bounds = loss.connect_dots_bounds()
    lower = math.floor(bounds.epsilon_lower / interval)
    upper = math.ceil(bounds.epsilon_upper / interval)
    # As in _create_pld_pmf_from_monotone_privacy_loss.
    epsilons = np.arange(lower, upper + 1) * interval
    # The body of dp-accounting's get_delta_for_epsilon: where the inverse is
    # used, and the divergence elsewhere.
    deltas = np.zeros_like(epsilons, dtype=float)
    if adjacency == _dp_pld_mechanism.AdjacencyType.ADD:
        used = epsilons < -math.log1p(-sample_rate)
    elif adjacency == _dp_pld_mechanism.AdjacencyType.REMOVE:
        used = epsilons > math.log1p(-sample_rate)
        deltas[~used] = -np.expm1(epsilons[~used])
    else:
        used = np.full_like(epsilons, True, dtype=bool)
    inside = epsilons[used]
    x = inverse_loss(inside, noise_multiplier, sample_rate)
    probe = np.unique(np.linspace(0, inside.size - 1, _N_PROBES).astype(int))
    expected = np.array([loss.inverse_privacy_loss(e) for e in inside[probe]])
    if not np.array_equal(x[probe], expected):
        raise _FastPathMismatch
    deltas[used] = loss.mu_upper_cdf(x) - np.exp(inside + loss.mu_lower_log_cdf(x))
    deltas = np.clip(deltas, 0, 1)
    return _connect_dots_pmf(interval, lower, upper, deltas)


def _connect_dots_pmf(discretization, lower, upper, deltas):
    """``pld_pmf.create_pmf_pessimistic_connect_dots_fixed_gap``, without its detour.

    For a dense result dp-accounting puts the probabilities in a dictionary
    keyed by loss and reads them back into a list (a third of a one-step
    construction at 160 000 points); here the same array, from the same
    operations, goes to ``DensePLDPmf`` directly.  Small grids (a sparse
    result) and anything dp-accounting would refuse go to its own function.
    """
    deltas = np.asarray(deltas, dtype=np.float64)
    if (deltas.size <= _dp_pld_pmf._MAX_PMF_SPARSE_SIZE or upper <= lower
            or deltas.size != upper - lower + 1 or np.any(deltas < 0) or np.any(deltas > 1)
            or np.any(np.diff(deltas) > _dp_pld_pmf._DELTA_DIFF_TOLERANCE)):
        return _dp_pld_pmf.create_pmf_pessimistic_connect_dots_fixed_gap(
            discretization, lower, upper, deltas)
    # The body of create_pmf_pessimistic_connect_dots_fixed_gap, in its order.
    deltas = np.minimum.accumulate(deltas)
    delta_diffs = np.diff(deltas)
    probs = np.zeros_like(deltas)
    probs[0] = 1 - deltas[0] + delta_diffs[0] / math.expm1(discretization)
    probs[1:-1] = ((delta_diffs[1:] - delta_diffs[:-1] * math.exp(discretization))
                   / math.expm1(discretization))
    probs[-1] = delta_diffs[-1] / math.expm1(-discretization)
    probs = np.maximum(0.0, probs)
    return _dp_pld_pmf.DensePLDPmf(discretization, lower, probs, deltas[-1], True)


def _pld_grid_points(noise_multiplier, interval):
    """Generous estimate of the PLD grid size for one subsampled Gaussian step.

    The privacy loss of the Gaussian mechanism spans about ``0.7 / z**2``
    (measured with dp-accounting 0.6 under replace-one, the wider relation);
    the grid has one point per ``interval`` of it.
    """
    z = noise_multiplier
    return (1.0 / z**2 + 10.0 / z) / interval


def _pld_interval_range(eps_scale):
    """The coarsest and the finest PLD interval for an epsilon of this size."""
    lo_bound, hi_bound = _PLD_INTERVAL_BOUNDS
    if math.isfinite(eps_scale) and eps_scale > 0:
        coarse, finest = eps_scale / _PLD_COARSEST, eps_scale / _PLD_FINEST
    else:
        coarse, finest = 1e-2, 1e-4
    return (min(max(coarse, lo_bound), hi_bound), min(max(finest, lo_bound), hi_bound))


def _pld_interval_rule(coarse, eps_coarse, eps_half, finest):
    """The PLD interval, from epsilons at ``coarse`` and ``coarse / 2`` at one z.

    The PLD accountant's estimate is pessimistic, hence sound at any interval,
    but overestimates epsilon by about ``c * interval**2``, with ``c``
    depending strongly on the regime: with T ~ 20000 steps an interval of
    epsilon / 1000 is 2 % off, with T ~ 20 it is exact to 1e-6.  The cost
    grows like 1 / interval.  So estimate ``c`` from the two probes (their
    difference is ``0.75 c coarse**2``) and take the largest ``coarse / 2**k``
    whose predicted error is below ``_PLD_RTOL`` relative, but never finer
    than ``finest`` (where the error is about 1e-4 in the hardest regime).
    This is up to ten times faster than a fixed fine interval when T is small.
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
    """The PLD interval for one z: :func:`_pld_interval_rule` on two probes there.

    The probes are at ``eps_scale / 500`` and half of it (cheap).
    """
    coarse, finest = _pld_interval_range(eps_scale)
    if coarse <= finest:
        return finest
    eps_coarse, eps_half = (
        _epsilon(noise_multiplier, delta, sample_rate, n_steps, "pld", neighboring, h)
        for h in (coarse, max(coarse / 2.0, finest)))
    return _pld_interval_rule(coarse, eps_coarse, eps_half, finest)


# --------------------------------------------------------------------------
# Calibration: smallest z with epsilon(z) <= target
# --------------------------------------------------------------------------


def _zcdp_guess(epsilon, delta, sample_rate, n_steps):
    """Cheap starting point for the search (not used for the answer).

    Pretend the mechanism is rho-zCDP with rho = T q^2 (exp(1/z^2) - 1) / 2
    (about T/(2 z^2) for q = 1; the exponential keeps the guess sensible at
    small z, where subsampling amplifies less) and
    eps = rho + 2 sqrt(rho log(1/delta)).  Within a factor 1.5 of the RDP
    answer on the usual settings; the search corrects the rest.
    """
    log_inv_delta = -math.log(delta)  # 1 / delta overflows for subnormal delta
    rho = (math.sqrt(log_inv_delta + epsilon) - math.sqrt(log_inv_delta)) ** 2
    return max(1.0 / math.sqrt(math.log1p(2.0 * rho / (n_steps * sample_rate**2))),
               1e-3)


def _zcdp_slope(epsilon, delta, noise_multiplier):
    """d log(eps) / d log(z) of :func:`_zcdp_guess`'s model where eps = epsilon.

    The first secant step of a search needs a slope; the model's is within
    about a factor 1.5 of the accountants' (-1 for large z, -2 to -5 for
    z < 1, where a slope of -1 would overshoot far into costly small z).
    """
    log_inv_delta = -math.log(delta)
    root = math.sqrt(log_inv_delta + epsilon) - math.sqrt(log_inv_delta)
    rho = root**2
    # eps = rho + 2 sqrt(rho L); rho ~ exp(1 / z^2) - 1.
    d_eps_d_rho = (rho + root * math.sqrt(log_inv_delta)) / epsilon
    inv_z2 = 1.0 / noise_multiplier**2
    d_rho_d_z = -2.0 * inv_z2 / -math.expm1(-inv_z2)
    return min(d_eps_d_rho * d_rho_d_z, -0.5)


class _EpsilonCurveAccountant(dp_accounting.PrivacyAccountant):
    """A dp-accounting accountant whose epsilon is a given function of z.

    It lets dp-accounting's ``calibrate_dp_mechanism`` search our cached
    epsilon curves (which hold the group-privacy step of replace-one RDP and
    the PLD interval chosen once per search) instead of rebuilding an
    accountant per evaluation. Events are ``GaussianDpEvent(z)`` carrying
    only z; delta is fixed inside ``eps_of_z``.
    """

    def __init__(self, eps_of_z):
        super().__init__(dp_accounting.NeighboringRelation.ADD_OR_REMOVE_ONE)
        self._eps_of_z = eps_of_z
        self._noise_multiplier = None

    def _maybe_compose(self, event, count, do_compose):
        if not isinstance(event, dp_accounting.GaussianDpEvent) or count != 1:
            return self.CompositionErrorDetails(
                invalid_event=event, error_message="only one GaussianDpEvent(z)")
        if do_compose:
            self._noise_multiplier = event.noise_multiplier
        return None

    def get_epsilon(self, target_delta):
        # A finite stand-in for inf keeps brentq's interpolation finite.
        return min(self._eps_of_z(self._noise_multiplier), 1e300)


class _LogSecant:
    """Secant search for ``eps(z) = target`` in (log z, log epsilon).

    There the curve is nearly a straight line (epsilon ~ 1/z for large z).
    Every evaluation updates the bracket ``lo < root <= hi`` (epsilon is
    non-increasing in z: ``eps(lo) > target >= eps(hi)``) and the slope, kept
    <= -0.5 (epsilon decreases at least like 1/sqrt(z) in practice).  The
    answer is always an evaluated ``hi``: what :meth:`step` proposes only
    decides where to look next.
    """

    def __init__(self, eps_of_z, target, slope=-1.0):
        self.eps_of_z, self.target, self.slope = eps_of_z, target, slope
        self.lo, self.hi = 0.0, math.inf
        self.gap_hi = None  # log(eps(hi) / target) <= 0
        self.z = self.gap = None  # the last evaluation

    @property
    def bracketed(self):
        return self.lo > 0.0 and self.hi < math.inf

    def evaluate(self, z):
        eps = self.eps_of_z(z)
        if eps <= 0.0:
            gap = -1e3
        elif not math.isfinite(eps):
            gap = 1e3
        else:
            gap = math.log(eps / self.target)
        if eps <= self.target:
            if z < self.hi:
                self.hi, self.gap_hi = z, gap
        else:
            self.lo = max(self.lo, z)
        if self.z is not None and abs(self.gap) < 1e3 and abs(gap) < 1e3 and z != self.z:
            self.slope = min((gap - self.gap) / math.log(z / self.z), -0.5)
        self.z, self.gap = z, gap
        return gap

    def step(self, overshoot=1.0, margin=0.0, min_step=0.0, bisect=False):
        """Evaluate at the secant's root from the last point, times ``1 + margin``.

        ``overshoot`` > 1 lengthens the step (to cross the target when
        bracketing); inside a bracket the new point stays strictly inside it,
        and with ``bisect`` it is the bracket's geometric midpoint.
        Returns False when z would fall below 1e-6 (essentially no noise
        needed, e.g. when T q <= delta); raises beyond ``_Z_MAX``.
        """
        log_step = min(max(-overshoot * self.gap / self.slope, -math.log(16.0)),
                       math.log(16.0))
        if abs(log_step) < min_step:
            log_step = min_step if self.gap > 0 else -min_step
        z_new = self.z * math.exp(log_step) * (1.0 + margin)
        if self.bracketed and (bisect or not self.lo < z_new < self.hi):
            z_new = math.sqrt(self.lo * self.hi)
        if z_new > _Z_MAX:
            raise ValueError(
                f"epsilon={self.target!r} cannot be certified by this accountant "
                f"at this delta with any noise multiplier up to {_Z_MAX:g}."
            )
        if z_new < 1e-6:
            return False
        self.evaluate(z_new)
        return True

    def close_enough(self, rtol):
        """Whether ``hi`` is within ``rtol`` of the root: bracket or slope says so."""
        if not self.hi < math.inf:
            return False
        return (self.hi <= self.lo * (1.0 + rtol)
                or -self.gap_hi <= -self.slope * rtol)


def _check_guess(guess, target):
    if not (math.isfinite(guess) and guess > 0):
        raise ValueError(
            f"Cannot calibrate the noise for epsilon={target!r} at this delta "
            "(the starting point of the search is not finite); use a delta "
            "between about 1e-300 and 0.5."
        )


def _smallest_noise(eps_of_z, target, delta, guess, rtol=_Z_RTOL):
    """Smallest z (to relative ``rtol``) with ``eps_of_z(z) <= target``.

    Relies on epsilon being non-increasing in z. A bracket ``[lo, hi]`` with
    ``eps(lo) > target >= eps(hi)`` is found by secant steps
    (:class:`_LogSecant`, overshooting by 10 % so that the target is crossed)
    from ``guess``; dp-accounting's ``calibrate_dp_mechanism`` then finds the
    root inside it and guarantees that the z it returns meets the target.
    """
    _check_guess(guess, target)
    search = _LogSecant(eps_of_z, target)
    search.evaluate(guess)
    while not search.bracketed:
        if not search.step(overshoot=1.1, min_step=0.01):
            return search.hi
    lo, hi = search.lo, search.hi
    if hi / lo <= 1.0 + rtol:
        return hi
    return float(dp_accounting.calibrate_dp_mechanism(
        lambda: _EpsilonCurveAccountant(eps_of_z),
        dp_accounting.GaussianDpEvent,
        target,
        delta,
        bracket_interval=dp_accounting.ExplicitBracketInterval(lo, hi),
        tol=rtol * lo,
    ))


def _pld_smallest_noise(epsilon, delta, sample_rate, n_steps, neighboring, interval,
                        min_noise=0.0):
    """PLD calibration: search on coarse grids, certify on the fine one.

    Returns ``(z, interval)``, or None when the root at the coarse interval
    is below ``min_noise`` (then nothing finer was computed).  A PLD
    evaluation costs about 1 / interval, and all but the last one or two only
    steer the search, so:

    1. Find the root of epsilon(z) at the coarse interval ``h = epsilon / 500``
       (or 4 times a given ``interval``) by secant steps from the zCDP guess,
       to 0.2 %.
    2. There, evaluate at ``h / 2`` as well: the two values choose the fine
       interval (:func:`_pld_interval_rule`, unless given) and, through the
       error model ``c * interval**2``, predict epsilon at the fine interval.
    3. At the fine interval, step from the predicted root (plus 2e-5) by
       secant steps until an evaluated ``z`` meets the target and lies within
       ``_Z_RTOL_PLD`` of the root, by the bracket or by the local slope:
       usually one or two evaluations (after six, bisection of the bracket
       guarantees the end).

    Only fine-interval evaluations decide the answer: the returned z meets
    the target at the returned interval, where dp-accounting's own
    accountant computes the same epsilon bit for bit (with a 1e-7 relative
    slack besides).
    """
    def curve(h):
        # Positional arguments: the same cache entries as compute_epsilon's.
        return lambda z: _epsilon(z, delta, sample_rate, n_steps, "pld", neighboring, h)

    if interval is None:
        coarse, finest = _pld_interval_range(epsilon)
    else:
        coarse, finest = min(4.0 * interval, _PLD_INTERVAL_BOUNDS[1]), interval
    half = max(coarse / 2.0, finest)

    # 1. The coarse root. The zCDP guess is for sensitivity C. Replace-one
    # without sampling is exactly sensitivity 2C, so twice the guess makes
    # the search visit twice the add/remove points and reach the same
    # epsilon; with sampling it needs less than twice the noise.
    guess = _zcdp_guess(epsilon, delta, sample_rate, n_steps)
    slope = _zcdp_slope(epsilon, delta, guess)
    if neighboring == "replace_one":
        guess *= 2.0 if sample_rate == 1.0 else math.sqrt(2.0)
    _check_guess(guess, epsilon)
    search = _LogSecant(curve(coarse), epsilon, slope)
    search.evaluate(guess)
    while not (search.bracketed and (abs(search.gap) <= 2e-3
                                     or search.hi <= search.lo * 1.002)):
        if not search.step():
            return (search.hi, coarse) if search.hi >= min_noise else None
    z_coarse = search.z if abs(search.gap) <= 2e-3 else search.hi
    if z_coarse < min_noise:
        return None

    # 2. The fine interval and epsilon there, predicted at z_coarse.
    eps_coarse = curve(coarse)(z_coarse)
    eps_half = curve(half)(z_coarse)
    if interval is None:
        interval = _pld_interval_rule(coarse, eps_coarse, eps_half, finest)
    c = max(eps_coarse - eps_half, 0.0) / (0.75 * coarse**2) if half < coarse else 0.0
    predicted = eps_half - c * (half**2 - interval**2)

    # 3. Certify at the fine interval.
    fine = _LogSecant(curve(interval), epsilon * (1.0 - _PLD_SLACK), search.slope)
    if predicted > 0 and math.isfinite(predicted):
        start = z_coarse * math.exp(-math.log(predicted / fine.target) / search.slope)
        if (half >= 8.0 * interval and start != z_coarse
                and abs(math.log(predicted / fine.target)) > _PLD_FAR):
            # The fine curve lies far below the coarse one, and its slope
            # differs (the discretization error varies with z); a fine
            # evaluation costs 8 or more of those at ``half``.  So predict at
            # ``start`` as well, and step along the secant of the two
            # predictions.  (Closer, that secant is mostly the predictions'
            # own error, about 0.1 to 0.3 percent: the coarse slope is better.)
            eps_coarse_2, eps_half_2 = curve(coarse)(start), curve(half)(start)
            c_2 = max(eps_coarse_2 - eps_half_2, 0.0) / (0.75 * coarse**2)
            predicted_2 = eps_half_2 - c_2 * (half**2 - interval**2)
            if predicted_2 > 0 and math.isfinite(predicted_2) and predicted_2 != predicted:
                slope = min(math.log(predicted_2 / predicted) / math.log(start / z_coarse), -0.5)
                fine.slope = slope
                start = start * math.exp(-math.log(predicted_2 / fine.target) / slope)
    else:
        start = z_coarse
    fine.evaluate(start * (1.0 + _PLD_MARGIN))
    n_steps_fine = 0
    while not fine.close_enough(_Z_RTOL_PLD):
        n_steps_fine += 1
        if not fine.step(margin=_PLD_MARGIN, bisect=n_steps_fine > 6):
            break
    return fine.hi, interval


@functools.lru_cache(maxsize=1024)
def _calibrate_cached(epsilon, delta, sample_rate, n_steps, accountant,
                      neighboring, n_samples, pld_discretization):
    if epsilon == math.inf:
        return PrivacyCalibration(0.0, math.inf, delta, sample_rate, n_steps,
                                  accountant, neighboring)

    if accountant in ("paper", "paper_released"):
        variant = "theorem1" if accountant == "paper" else "released"
        z = paper_noise_multiplier(
            epsilon, delta, sample_rate=sample_rate, n_steps=n_steps,
            n_samples=n_samples, variant=variant,
        )
        # The paper's bounds assume fixed-size batches drawn without
        # replacement; report what the RDP accountant certifies for the
        # Poisson-sampled mechanism that actually runs with this z.
        reached = _epsilon(z, delta, sample_rate, n_steps, "rdp", neighboring,
                           None)
        return PrivacyCalibration(z, reached, delta, sample_rate, n_steps,
                                  accountant, neighboring)

    if accountant in ("rdp", "rdp_guess"):
        def eps_of_z(z):
            return _epsilon(z, delta, sample_rate, n_steps, accountant, neighboring,
                            None)

        guess = _zcdp_guess(epsilon, delta, sample_rate, n_steps)
        if neighboring == "replace_one":
            guess *= 2.0  # sensitivity 2C
    else:  # pld
        found = _pld_smallest_noise(epsilon, delta, sample_rate, n_steps, neighboring,
                                    pld_discretization, min_noise=_PLD_MIN_NOISE)
        if found is None:
            # Huge targets (tens of epsilon): almost no noise, PLD grids of
            # millions of points, and nothing to gain. If RDP (dp-accounting's
            # default orders: a sound bound, cheaper) also finds so little
            # noise enough, its answer is returned; the calibration says which
            # accountant gave it.
            try:
                rdp_calibration = dataclasses.replace(_calibrate_cached(
                    epsilon, delta, sample_rate, n_steps, "rdp_guess", neighboring,
                    None, None,
                ), accountant="rdp")
            except ValueError:  # below what RDP can certify
                pass
            else:
                if rdp_calibration.noise_multiplier < _PLD_MIN_NOISE:
                    return rdp_calibration
            # The coarse search is cached: this only adds the fine part.
            found = _pld_smallest_noise(epsilon, delta, sample_rate, n_steps,
                                        neighboring, pld_discretization)
        z, interval = found
        return PrivacyCalibration(
            float(z), _epsilon(z, delta, sample_rate, n_steps, "pld", neighboring, interval),
            delta, sample_rate, n_steps, accountant, neighboring)

    # The RDP answer that decides the PLD path for huge targets needs only a
    # few digits.
    rtol = _GUESS_RTOL if accountant == "rdp_guess" else _Z_RTOL
    z = _smallest_noise(eps_of_z, epsilon, delta, guess, rtol)
    return PrivacyCalibration(float(z), float(eps_of_z(z)), delta, sample_rate,
                              n_steps, accountant, neighboring)


def calibrate_noise(epsilon, delta, *, sample_rate, n_steps, accountant="pld",
                    neighboring="replace_one", n_samples=None,
                    pld_discretization=None):
    """Find the smallest noise multiplier that meets an (epsilon, delta) target.

    The mechanism is ``n_steps`` steps of: Poisson-sample each row with
    probability ``sample_rate``, sum per-sample gradients clipped to L2 norm
    ``C``, add ``N(0, (z C)^2 I)``.  Results are cached on the exact
    arguments, so repeated calls (e.g. in a grid search) cost microseconds and
    return the same object.

    Parameters
    ----------
    epsilon : float
        Target epsilon, > 0.  ``float("inf")`` means no privacy: ``z = 0``.
    delta : float
        Target delta, in (0, 1).
    sample_rate : float
        Poisson sampling probability ``q`` in (0, 1]; 1 is full batch.
    n_steps : int
        Number of noisy steps ``T`` >= 1.
    accountant : {"pld", "rdp", "paper", "paper_released"}, default="pld"
        * ``"pld"``: dp-accounting's PLD accountant, the tightest (typically
          5-15 % less noise than RDP).  Its ``value_discretization_interval``
          is chosen between ``epsilon / 500`` and ``epsilon / 10000`` for
          about 1e-4 relative accuracy (see the module docstring) unless
          ``pld_discretization`` is given; ``z`` is within about 2e-4 of
          the smallest ``z`` that interval certifies.  Cold call 0.03-0.12 s at
          typical settings, about 0.25 s at 20 000 steps with
          ``q`` ~ 0.0003 (0.6 s under add/remove).
        * ``"rdp"``: dp-accounting's RDP accountant, orders up to 1024 (dense
          above 64), improved conversion (Balle et al. 2020).  Cold call
          ~0.1-0.3 s.
        * ``"paper"``: the noise of Theorem 1 of the DP-LSSGD paper, see
          :func:`paper_noise_multiplier` (``variant="theorem1"``).
        * ``"paper_released"``: the noise of the conference version, used by
          the authors' released code (``variant="released"``).

        The paper's bounds assume fixed-size batches drawn without
        replacement, but the estimators sample by Poisson.  For the paper
        accountants the reported ``epsilon`` is therefore what the RDP
        accountant certifies for the mechanism that actually runs with the
        paper's ``z``; if it exceeds the target, a ``UserWarning`` says so.
    neighboring : {"replace_one", "add_remove"}, default="replace_one"
        Adjacency.  ``"add_remove"``: one row added or removed (sensitivity
        ``C``; the row count, and so ``sample_rate`` and ``n_steps``, must
        not be computed from the private data).  ``"replace_one"``: one row
        replaced (sensitivity ``2C``);
        native in PLD, sound group-privacy reduction in RDP for ``q < 1``
        (see the module docstring).  ``z`` stays relative to ``C``.
    n_samples : int, optional
        Number of rows ``n``; required for the paper accountants (their
        conditions involve ``n`` and ``b = q n`` separately), ignored otherwise.
    pld_discretization : float, optional
        Fixed PLD ``value_discretization_interval``.  Default: chosen
        automatically for ~1e-4 relative accuracy, between ``epsilon / 500``
        and ``epsilon / 10000`` (within [1e-6, 100]); the reported epsilon is
        the one at that interval.  Ignored by the other accountants.

    Returns
    -------
    PrivacyCalibration
        ``noise_multiplier`` and the ``epsilon`` it actually reaches.

    Raises
    ------
    ValueError
        On invalid arguments (the message names the parameter), when the
        target cannot be certified by the accountant, or when the paper's
        theorem does not apply.
    """
    epsilon = _check_epsilon(epsilon)
    delta, sample_rate, n_steps, accountant, neighboring, pld_discretization = (
        _check_mechanism(delta, sample_rate, n_steps, accountant, neighboring,
                         pld_discretization)
    )
    if accountant in ("paper", "paper_released"):
        if n_samples is None:
            raise ValueError(
                f"n_samples is required for accountant={accountant!r} (the "
                "paper's bound depends on n and the batch size b = q n)."
            )
        n_samples = _check_positive_int(n_samples, "n_samples")
    else:
        # Irrelevant: normalise so that it does not fragment the cache.
        n_samples = None
    if accountant != "pld":
        pld_discretization = None

    calibration = _calibrate_cached(epsilon, delta, sample_rate, n_steps,
                                    accountant, neighboring, n_samples,
                                    pld_discretization)
    if calibration.epsilon > epsilon:
        # Only possible for the paper accountants; warn on every call, since
        # every fit that uses this noise is affected.
        warnings.warn(
            f"The paper's bound (accountant={accountant!r}) is not confirmed "
            "by the RDP accountant for Poisson sampling: the noise multiplier "
            f"{calibration.noise_multiplier:.6g} only certifies epsilon="
            f"{calibration.epsilon:.6g} > target {epsilon:.6g} at delta="
            f"{delta:g}. The RDP value is reported; use accountant='rdp' to "
            "meet the target.",
            UserWarning,
            stacklevel=2,
        )
    return calibration


calibrate_noise.cache_info = _calibrate_cached.cache_info


def _clear_caches():
    """Forget every calibration and every per-z epsilon computed so far."""
    _calibrate_cached.cache_clear()
    _epsilon.cache_clear()
    _EVENT_EPSILONS.clear()


calibrate_noise.cache_clear = _clear_caches


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
    accountant : {"pld", "rdp", "paper", "paper_released"}, default="pld"
        ``"paper"`` and ``"paper_released"`` are computed with the RDP
        accountant: their closed forms give a noise level, not an epsilon for
        the Poisson-sampled mechanism that actually runs.
    neighboring : {"replace_one", "add_remove"}, default="replace_one"
        See :func:`calibrate_noise`.
    pld_discretization : float, optional
        Fixed PLD ``value_discretization_interval``.  Default: chosen
        automatically for ~1e-4 relative accuracy, between ``eps_RDP / 500``
        and ``eps_RDP / 10000`` (within [1e-6, 100]), where ``eps_RDP`` is
        the (larger) RDP value for the same ``z``.  The value may therefore
        differ in the 4th-5th digit from the epsilon reported by
        :func:`calibrate_noise`, which scales the interval by the target.
        Ignored by the other accountants.

    Returns
    -------
    float
        The epsilon certified by the accountant (``inf`` if ``z = 0``).

    Raises
    ------
    ValueError
        On invalid arguments; the message names the parameter.
    """
    noise_multiplier = _check_noise_multiplier(noise_multiplier)
    delta, sample_rate, n_steps, accountant, neighboring, pld_discretization = (
        _check_mechanism(delta, sample_rate, n_steps, accountant, neighboring,
                         pld_discretization)
    )

    eps_rdp = _epsilon(noise_multiplier, delta, sample_rate, n_steps, "rdp",
                       neighboring, None)
    if accountant != "pld":
        return eps_rdp
    if pld_discretization is None:
        # eps_RDP is an upper bound on the PLD value: a safe scale.
        pld_discretization = _pld_interval(noise_multiplier, delta, sample_rate,
                                           n_steps, neighboring, eps_rdp)
    return _epsilon(noise_multiplier, delta, sample_rate, n_steps, "pld",
                    neighboring, pld_discretization)


# --------------------------------------------------------------------------
# The paper's closed forms
# --------------------------------------------------------------------------


def _theorem1_terms(mu, epsilon, log_inv_delta, q, n_steps, n):
    """alpha, nu^2 (G = 1) and the two side conditions of Theorem 1."""
    b = q * n
    alpha = log_inv_delta / ((1.0 - mu) * epsilon) + 1.0
    nu2 = 20.0 * n_steps * alpha / (mu * n**2 * epsilon)
    # alpha <= log(mu n^3 eps / (5 b^3 T alpha + mu b n^2 eps)), in logs.
    log_bound = (np.log(mu) + 3.0 * math.log(n) + math.log(epsilon)
                 - np.log(5.0 * b**3 * n_steps * alpha + mu * b * n**2 * epsilon))
    holds = (alpha <= log_bound) & (
        5.0 * b**2 * n_steps * alpha / (mu * n**2 * epsilon) >= 1.5
    )
    return alpha, nu2, holds


def paper_noise_multiplier(epsilon, delta, *, sample_rate, n_steps, n_samples,
                           variant="theorem1"):
    """Noise multiplier given by the DP-LSSGD paper's privacy theorem.

    Both forms give ``nu``, the standard deviation of the noise on the
    AVERAGED gradient ``(1/b) sum_i grad_i`` of ``G``-Lipschitz losses; with
    our update (the sum is divided by the expected batch size
    ``b = sample_rate * n_samples``) and ``G = C`` the multiplier is
    ``z = nu * b / C``, i.e. ``nu`` computed with ``G = 1`` times ``b``.

    * ``"theorem1"`` (full paper, Theorem 1):
      ``nu^2 = 20 T alpha G^2 / (mu n^2 eps)``,
      ``alpha = log(1/delta) / ((1 - mu) eps) + 1``, for some ``mu`` in (0, 1)
      with ``alpha <= log(mu n^3 eps / (5 b^3 T alpha + mu b n^2 eps))`` and
      ``5 b^2 T alpha / (mu n^2 eps) >= 1.5``.  ``mu`` is searched on a fine
      grid (then refined) for the smallest ``nu`` meeting both conditions.
      The second condition means ``z >= sqrt(6)``; the first needs roughly
      ``log(1/delta) / eps < log(n / (2.5 b)) - 1``, so e.g. at the paper's
      MNIST setting (n = 60000, b = 128, 50 epochs, delta = 1e-5) the theorem
      applies only from about eps = 4 on, not at the eps <= 0.3 it reports.
    * ``"released"`` (conference version, the noise of the authors' code):
      ``nu^2 = 8 T alpha G^2 / (n^2 eps)``, ``alpha = 2 log(1/delta)/eps + 1``,
      under that theorem's condition ``eps^2 <= 5 T b^2 log(1/delta) / n^2``.

    These bounds are stated for fixed-size batches sampled without
    replacement (and the paper's adjacency is replace-one).  The estimators
    sample by Poisson, so :func:`calibrate_noise` reports the epsilon the RDP
    accountant certifies for this ``z`` instead of trusting the bound.

    Parameters
    ----------
    epsilon : float
        Target epsilon, > 0 (``inf`` gives 0).
    delta : float
        Target delta, in (0, 1).
    sample_rate : float
        ``q = b / n`` in (0, 1].
    n_steps : int
        ``T`` >= 1.
    n_samples : int
        ``n`` >= 1.
    variant : {"theorem1", "released"}, default="theorem1"

    Returns
    -------
    float
        ``z = nu * b`` (noise std on the sum, in units of the clip norm).

    Raises
    ------
    ValueError
        On invalid arguments, or when the theorem's conditions cannot be met
        (then use ``accountant="rdp"``).
    """
    epsilon = _check_epsilon(epsilon)
    delta = _check_delta(delta)
    q = _check_sample_rate(sample_rate)
    n_steps = _check_positive_int(n_steps, "n_steps")
    n = _check_positive_int(n_samples, "n_samples")
    variant = _check_choice(variant, _PAPER_VARIANTS, "variant")
    if epsilon == math.inf:
        return 0.0
    b = q * n
    log_inv_delta = -math.log(delta)  # 1 / delta overflows for subnormal delta

    if variant == "released":
        if epsilon**2 > 5.0 * n_steps * b**2 * log_inv_delta / n**2:
            raise ValueError(
                "The paper's released-code theorem does not apply: it needs "
                "epsilon^2 <= 5 T b^2 log(1/delta) / n^2 = "
                f"{5.0 * n_steps * b**2 * log_inv_delta / n**2:.6g}, got "
                f"epsilon={epsilon:g}. Use accountant='rdp'."
            )
        alpha = 2.0 * log_inv_delta / epsilon + 1.0
        nu = math.sqrt(8.0 * n_steps * alpha / (n**2 * epsilon))
        return float(nu * b)

    # Theorem 1: coarse grid over mu, then a finer grid around the best
    # feasible point.  Any feasible mu gives a valid nu per the theorem, so a
    # slightly suboptimal mu only costs a little noise.
    mu = np.linspace(0.0, 1.0, 20001)[1:-1]
    _, nu2, holds = _theorem1_terms(mu, epsilon, log_inv_delta, q, n_steps, n)
    if not holds.any():
        raise ValueError(
            "Theorem 1 of the DP-LSSGD paper does not apply to "
            f"epsilon={epsilon:g}, delta={delta:g}, n_samples={n}, "
            f"batch size b={b:g}, n_steps={n_steps}: no mu in (0, 1) satisfies "
            "its side conditions alpha <= log(mu n^3 eps / (5 b^3 T alpha + "
            "mu b n^2 eps)) and 5 b^2 T alpha / (mu n^2 eps) >= 1.5. Use "
            "accountant='rdp'."
        )
    best = int(np.argmin(np.where(holds, nu2, np.inf)))
    step = mu[1] - mu[0]
    fine = np.linspace(max(mu[best] - step, step / 100),
                       min(mu[best] + step, 1.0 - step / 100), 2001)
    _, nu2_fine, holds_fine = _theorem1_terms(fine, epsilon, log_inv_delta, q,
                                              n_steps, n)
    nu2_best = nu2[best]
    if holds_fine.any():
        nu2_best = min(nu2_best, float(np.min(nu2_fine[holds_fine])))
    return float(math.sqrt(nu2_best) * b)


# --------------------------------------------------------------------------
# Any DpEvent (the search's repeat-and-select, the ledger's compositions)
# --------------------------------------------------------------------------


# Events holding lists (ComposedDpEvent) are not hashable: key by their repr,
# which names every field.
_EVENT_EPSILONS = {}
_EVENT_EPSILONS_MAX = 4096


def event_epsilon(event, delta, neighboring="replace_one", pld_interval=None, pld_only=False):
    """Epsilon at ``delta`` of any dp-accounting event, by the tightest sound accountant.

    PLD (under the given adjacency, pessimistic) when it supports every part of
    ``event``; otherwise RDP with the dense orders of :func:`_rdp_orders` under
    add/remove, turned into replace-one by the group-of-two reduction of
    :func:`_group_of_two_epsilon`. ``RepeatAndSelectDpEvent`` (private
    hyperparameter search) is supported by RDP only.

    Every event here means what the estimators mean by it: one row moves each
    Gaussian query by at most its sensitivity under add/remove (a clipped
    gradient of norm ``C`` in units of ``C``, a bounded score in units of its
    range); replace-one moves it by at most twice that.

    Parameters
    ----------
    event : dp_accounting.DpEvent
    delta : float
    neighboring : {"replace_one", "add_remove"}, default="replace_one"
    pld_interval : float or None, default=None
        PLD value discretization; None uses ``epsilon_RDP / 1000`` (the PLD
        estimate is pessimistic at any interval, finer is only tighter).
    pld_only : bool, default=False
        Skip RDP (whose composition of many different events is slow) and
        use PLD at ``pld_interval`` (required) alone; for events PLD supports.

    Returns
    -------
    float
        ``inf`` for an event containing a non-private part.
    """
    _check_delta(delta)
    _check_choice(neighboring, NEIGHBORING_RELATIONS, "neighboring")
    if pld_only and pld_interval is None:
        raise ValueError("pld_only needs a pld_interval.")
    key = (repr(event), float(delta), neighboring, pld_interval, pld_only)
    if key not in _EVENT_EPSILONS:
        if len(_EVENT_EPSILONS) >= _EVENT_EPSILONS_MAX:
            _EVENT_EPSILONS.clear()
        if pld_only:
            _EVENT_EPSILONS[key] = _pld_event_epsilon(event, delta, neighboring, pld_interval)
        else:
            _EVENT_EPSILONS[key] = _event_epsilon(event, delta, neighboring, pld_interval)
    return _EVENT_EPSILONS[key]


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
            rdp_epsilon = _group_of_two_epsilon(rdp, delta)
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
        return float(pld.compose(event).get_epsilon(delta))


def smallest_noise_for(eps_of_z, epsilon, delta, guess=1.0, rtol=_Z_RTOL):
    """Smallest noise multiplier ``z`` with ``eps_of_z(z) <= epsilon``.

    For mechanisms other than the estimators' own (the private search's score
    and trials), where ``eps_of_z`` is typically :func:`event_epsilon` of an
    event built from ``z``. ``eps_of_z`` must be non-increasing in ``z``; the
    answer is certified by ``eps_of_z`` itself.
    """
    _check_epsilon(epsilon)
    _check_delta(delta)
    if epsilon == math.inf:
        return 0.0
    return _smallest_noise(eps_of_z, epsilon, delta, guess, rtol)
