"""Noise calibration: the smallest noise multiplier that meets an (epsilon, delta) target.

:func:`calibrate_noise` turns a target into the noise multiplier ``z`` of the
estimators' mechanism (:mod:`._events`); :func:`smallest_noise_for` does the same
for any epsilon curve. Every answer is an evaluated ``z`` that dp-accounting's
accountant certifies: the searches only decide where to evaluate. RDP: secant
steps in (log z, log epsilon) from a zCDP guess bracket the root, and
dp-accounting's ``calibrate_dp_mechanism`` finds it inside the bracket. PLD: a
search on a coarse interval (milliseconds an evaluation) and one or two
evaluations at the fine one (:func:`_pld_smallest_noise`); for huge targets (less
than ``_PLD_MIN_NOISE`` enough by both a coarse PLD search and RDP) RDP's answer.
Results are cached in memory for the process, never on disk.
"""

import dataclasses
import functools
import math

import dp_accounting

from ._events import (
    ACCOUNTANTS, NEIGHBORING_RELATIONS, PrivacyCalibration, cached_epsilon, EVENT_EPSILONS,
    pld_interval_range, pld_interval_rule, PLD_INTERVAL_BOUNDS,
)
from .._utils import check_delta, check_epsilon, check_guess, check_mechanism

__all__ = ["calibrate_noise", "smallest_noise_for"]

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
# When both the coarse PLD search and RDP find less noise than this enough,
# "pld" calibrations return RDP's answer (see _calibrate).
_PLD_MIN_NOISE = 0.6
# Beyond this z the calibration gives up: the target is below what the
# accountant can certify at this delta (RDP with orders <= 1024 cannot go below
# about 0.004 at delta = 1e-5, whatever the noise).
_Z_MAX = 1e7


def _zcdp_guess(epsilon, delta, sample_rate, n_steps):
    """Cheap starting point for the search (not used for the answer).

    Pretends the mechanism is rho-zCDP with rho = T q^2 (exp(1/z^2) - 1) / 2 and
    eps = rho + 2 sqrt(rho log(1/delta)): within a factor 1.5 of the RDP answer.
    """
    log_inv_delta = -math.log(delta)  # 1 / delta overflows for subnormal delta
    rho = (math.sqrt(log_inv_delta + epsilon) - math.sqrt(log_inv_delta)) ** 2
    return max(1.0 / math.sqrt(math.log1p(2.0 * rho / (n_steps * sample_rate**2))),
               1e-3)


def _zcdp_slope(epsilon, delta, noise_multiplier):
    """d log(eps) / d log(z) of :func:`_zcdp_guess`'s model: the first secant step's slope."""
    log_inv_delta = -math.log(delta)
    root = math.sqrt(log_inv_delta + epsilon) - math.sqrt(log_inv_delta)
    rho = root**2
    # eps = rho + 2 sqrt(rho L); rho ~ exp(1 / z^2) - 1.
    d_eps_d_rho = (rho + root * math.sqrt(log_inv_delta)) / epsilon
    inv_z2 = 1.0 / noise_multiplier**2
    d_rho_d_z = -2.0 * inv_z2 / -math.expm1(-inv_z2)
    return min(d_eps_d_rho * d_rho_d_z, -0.5)


class _EpsilonCurveAccountant(dp_accounting.PrivacyAccountant):
    """A dp-accounting accountant whose epsilon is a given (cached) function of z.

    For ``calibrate_dp_mechanism``; its events are ``GaussianDpEvent(z)`` carrying only
    z, delta is fixed inside ``eps_of_z``.
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
    """Secant search for ``eps(z) = target`` in (log z, log epsilon), nearly a line there.

    Every evaluation updates the bracket ``lo < root <= hi`` (``eps(lo) > target >=
    eps(hi)``) and the slope, kept <= -0.5. The answer is always an evaluated ``hi``.
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

        ``overshoot`` > 1 lengthens the step; inside a bracket the point stays
        inside it (its geometric midpoint with ``bisect``). Returns False below
        z = 1e-6 (no noise needed); raises beyond ``_Z_MAX``.
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


def _smallest_noise(eps_of_z, target, delta, guess, rtol=_Z_RTOL):
    """Smallest z (to relative ``rtol``) with ``eps_of_z(z) <= target`` (non-increasing).

    Secant steps from ``guess`` (overshooting by 10 %) bracket the root;
    dp-accounting's ``calibrate_dp_mechanism`` finds it inside, meeting the target.
    """
    check_guess(guess, target)
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


def _pld_coarse_root(eps_of_z, epsilon, delta, sample_rate, n_steps, neighboring):
    """The root of ``eps_of_z`` (a coarse PLD curve) to 0.2 %, by secant steps from zCDP.

    Returns ``(search, z)``; z is None where the search fell below 1e-6 (no noise
    needed). The zCDP guess is for sensitivity C: replace-one without sampling is
    exactly 2C, with sampling it needs less than twice the noise.
    """
    guess = _zcdp_guess(epsilon, delta, sample_rate, n_steps)
    slope = _zcdp_slope(epsilon, delta, guess)
    if neighboring == "replace_one":
        guess *= 2.0 if sample_rate == 1.0 else math.sqrt(2.0)
    check_guess(guess, epsilon)
    search = _LogSecant(eps_of_z, epsilon, slope)
    search.evaluate(guess)
    while not (search.bracketed and (abs(search.gap) <= 2e-3
                                     or search.hi <= search.lo * 1.002)):
        if not search.step():
            return search, None
    return search, search.z if abs(search.gap) <= 2e-3 else search.hi


def _predicted_epsilon(curve, coarse, half, interval, z):
    """Epsilon at ``interval`` and ``z``, predicted from the error model ``c h**2``."""
    eps_coarse, eps_half = curve(coarse)(z), curve(half)(z)
    c = max(eps_coarse - eps_half, 0.0) / (0.75 * coarse**2) if half < coarse else 0.0
    return eps_half - c * (half**2 - interval**2)


def _fine_start(curve, coarse, half, interval, z_coarse, slope, target):
    """Where the fine search starts, and its slope: the predicted fine root.

    Where the fine curve is predicted far below the coarse one (and a fine
    evaluation costs 8 or more at ``half``), a second prediction at the first
    predicted root gives the slope (the discretization error varies with z);
    closer, that secant is mostly the predictions' own error and the coarse
    slope is kept.
    """
    predicted = _predicted_epsilon(curve, coarse, half, interval, z_coarse)
    if not (predicted > 0 and math.isfinite(predicted)):
        return z_coarse, slope
    start = z_coarse * math.exp(-math.log(predicted / target) / slope)
    if (half >= 8.0 * interval and start != z_coarse
            and abs(math.log(predicted / target)) > _PLD_FAR):
        predicted_2 = _predicted_epsilon(curve, coarse, half, interval, start)
        if predicted_2 > 0 and math.isfinite(predicted_2) and predicted_2 != predicted:
            slope = min(math.log(predicted_2 / predicted) / math.log(start / z_coarse), -0.5)
            start = start * math.exp(-math.log(predicted_2 / target) / slope)
    return start, slope


def _pld_smallest_noise(epsilon, delta, sample_rate, n_steps, neighboring, interval,
                        min_noise=0.0):
    """PLD calibration: search on coarse grids, certify on the fine one.

    Returns ``(z, interval)``, or None when the coarse root is below ``min_noise``
    (nothing finer computed then). A PLD evaluation costs about 1 / interval, so:

    1. the root at the coarse interval ``h = epsilon / 500`` (or 4 times a given
       ``interval``), to 0.2 % (:func:`_pld_coarse_root`);
    2. there, the epsilon at ``h / 2`` too: the two choose the fine interval
       (:func:`pld_interval_rule`, unless given) and predict the fine root
       (:func:`_fine_start`);
    3. secant steps at the fine interval, each aimed ``_PLD_MARGIN`` above the
       predicted root, until an evaluated ``z`` meets the target (with a 1e-7
       relative slack) within ``_Z_RTOL_PLD`` of the root: usually one or two
       evaluations (after six, bisection of the bracket).

    Only fine-interval evaluations decide the answer.
    """
    def curve(h):
        # Positional arguments: the same cache entries as compute_epsilon's.
        return lambda z: cached_epsilon(z, delta, sample_rate, n_steps, "pld", neighboring, h)

    if interval is None:
        coarse, finest = pld_interval_range(epsilon)
    else:
        coarse, finest = min(4.0 * interval, PLD_INTERVAL_BOUNDS[1]), interval
    half = max(coarse / 2.0, finest)
    search, z_coarse = _pld_coarse_root(curve(coarse), epsilon, delta, sample_rate, n_steps,
                                        neighboring)
    if z_coarse is None:
        return (search.hi, coarse) if search.hi >= min_noise else None
    if z_coarse < min_noise:
        return None
    if interval is None:
        interval = pld_interval_rule(coarse, curve(coarse)(z_coarse), curve(half)(z_coarse),
                                     finest)
    fine = _LogSecant(curve(interval), epsilon * (1.0 - _PLD_SLACK), search.slope)
    start, fine.slope = _fine_start(curve, coarse, half, interval, z_coarse, search.slope,
                                    fine.target)
    fine.evaluate(start * (1.0 + _PLD_MARGIN))
    n_steps_fine = 0
    while not fine.close_enough(_Z_RTOL_PLD):
        n_steps_fine += 1
        if not fine.step(margin=_PLD_MARGIN, bisect=n_steps_fine > 6):
            break
    return fine.hi, interval


def _calibrate(epsilon, delta, sample_rate, n_steps, accountant, neighboring,
               pld_discretization):
    """``(calibration, pld_interval)`` for a finite epsilon (arguments validated).

    ``pld_interval`` is the interval of a PLD answer's epsilon, None for the others.
    """
    if accountant in ("rdp", "rdp_guess"):
        def eps_of_z(z):
            return cached_epsilon(z, delta, sample_rate, n_steps, accountant, neighboring,
                                  None)

        guess = _zcdp_guess(epsilon, delta, sample_rate, n_steps)
        if neighboring == "replace_one":
            guess *= 2.0  # sensitivity 2C
    else:  # pld
        found = _pld_smallest_noise(epsilon, delta, sample_rate, n_steps, neighboring,
                                    pld_discretization, min_noise=_PLD_MIN_NOISE)
        if found is None:
            # Huge targets: PLD grids of millions of points for almost no noise. If
            # RDP (default orders, sound) also finds so little enough, its answer.
            try:
                rdp_calibration = dataclasses.replace(_calibrate_in_memory(
                    epsilon, delta, sample_rate, n_steps, "rdp_guess", neighboring, None,
                ), accountant="rdp")
            except ValueError:  # below what RDP can certify
                pass
            else:
                if rdp_calibration.noise_multiplier < _PLD_MIN_NOISE:
                    return rdp_calibration, None
            # The coarse search is cached: this only adds the fine part.
            found = _pld_smallest_noise(epsilon, delta, sample_rate, n_steps,
                                        neighboring, pld_discretization)
        z, interval = found
        return PrivacyCalibration(
            float(z), cached_epsilon(z, delta, sample_rate, n_steps, "pld", neighboring, interval),
            delta, sample_rate, n_steps, accountant, neighboring), interval

    rtol = _GUESS_RTOL if accountant == "rdp_guess" else _Z_RTOL
    z = _smallest_noise(eps_of_z, epsilon, delta, guess, rtol)
    return PrivacyCalibration(float(z), float(eps_of_z(z)), delta, sample_rate,
                              n_steps, accountant, neighboring), None


@functools.lru_cache(maxsize=1024)
def _calibrate_in_memory(epsilon, delta, sample_rate, n_steps, accountant, neighboring,
                         pld_discretization):
    """The calibration, from memory, else computed."""
    if epsilon == math.inf:
        return PrivacyCalibration(0.0, math.inf, delta, sample_rate, n_steps,
                                  accountant, neighboring)
    return _calibrate(epsilon, delta, sample_rate, n_steps, accountant, neighboring,
                      pld_discretization)[0]


def calibrate_noise(epsilon, delta, *, sample_rate, n_steps, accountant="pld",
                    neighboring="replace_one", pld_discretization=None):
    """Find the smallest noise multiplier that meets an (epsilon, delta) target.

    The mechanism is ``n_steps`` steps of: Poisson-sample each row with
    probability ``sample_rate``, sum per-sample gradients clipped to L2 norm
    ``C``, add ``N(0, (z C)^2 I)``.  Results are cached in the process on the
    exact arguments (a repeated call returns the same object).

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
    accountant : {"pld", "rdp"}, default="pld"
        * ``"pld"``: dp-accounting's PLD accountant, the tightest (typically
          5-15 % less noise than RDP); ``z`` is within about 2e-4 of the
          smallest ``z`` its interval certifies.  Cold call 0.04-0.15 s at
          typical settings, about 1.1 s at 20 000 steps with ``q`` ~ 0.0003.
        * ``"rdp"``: dp-accounting's RDP accountant, orders up to 1024 (dense
          above 64), improved conversion (Balle et al. 2020).  Cold call
          ~0.35-0.6 s.
    neighboring : {"replace_one", "add_remove"}, default="replace_one"
        ``"add_remove"``: one row added or removed (sensitivity ``C``; the row
        count, and so ``sample_rate`` and ``n_steps``, must not be computed from
        the private data).  ``"replace_one"``: one row replaced (sensitivity
        ``2C``).  ``z`` stays relative to ``C``.
    pld_discretization : float, optional
        Fixed PLD ``value_discretization_interval``.  Default: chosen for ~1e-4
        relative accuracy, between ``epsilon / 500`` and ``epsilon / 10000``
        (within [1e-6, 100]); the reported epsilon is the one at that interval.
        Ignored by RDP.

    Returns
    -------
    PrivacyCalibration
        ``noise_multiplier`` and the ``epsilon`` it actually reaches.

    Raises
    ------
    ValueError
        On invalid arguments (the message names the parameter), or when the
        target cannot be certified by the accountant.
    """
    epsilon = check_epsilon(epsilon)
    delta, sample_rate, n_steps, accountant, neighboring, pld_discretization = (
        check_mechanism(delta, sample_rate, n_steps, accountant, neighboring,
                        pld_discretization, accountants=ACCOUNTANTS,
                        relations=NEIGHBORING_RELATIONS)
    )
    if accountant != "pld":
        pld_discretization = None

    return _calibrate_in_memory(epsilon, delta, sample_rate, n_steps, accountant, neighboring,
                                pld_discretization)


calibrate_noise.cache_info = _calibrate_in_memory.cache_info


def _clear_caches():
    """Forget every calibration and every per-z epsilon computed so far."""
    _calibrate_in_memory.cache_clear()
    cached_epsilon.cache_clear()
    EVENT_EPSILONS.clear()


calibrate_noise.cache_clear = _clear_caches


def smallest_noise_for(eps_of_z, epsilon, delta, guess=1.0, rtol=_Z_RTOL):
    """Smallest ``z`` with ``eps_of_z(z) <= epsilon``, for any non-increasing epsilon curve.

    Typically :func:`.event_epsilon` of an event built from ``z``; the answer is
    certified by ``eps_of_z`` itself.
    """
    check_epsilon(epsilon)
    check_delta(delta)
    if epsilon == math.inf:
        return 0.0
    return _smallest_noise(eps_of_z, epsilon, delta, guess, rtol)
