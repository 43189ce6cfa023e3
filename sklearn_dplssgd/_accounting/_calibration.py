"""Noise calibration: the smallest noise multiplier that meets an (epsilon, delta) target.

:func:`calibrate_noise` turns a target ``(epsilon, delta)`` into the noise
multiplier ``z`` of the estimators' mechanism (see :mod:`._events`), with
dp-accounting's public accountants deciding every answer, and keeps each
result in memory and on disk (:mod:`._calibration_cache`).
:func:`smallest_noise_for` does the same for any epsilon curve.

Decisions, and why
------------------
* Every answer is an evaluated ``z`` that the accountant certifies: the
  searches only decide where to evaluate.
* RDP: secant steps in (log z, log epsilon) from a zCDP guess bracket the
  root, and dp-accounting's ``calibrate_dp_mechanism`` finds it inside the
  bracket to 1e-5 relative (:func:`_smallest_noise`).
* PLD (:func:`_pld_smallest_noise`) searches on a coarse interval, where an
  evaluation of dp-accounting's ``PLDAccountant`` costs milliseconds, and
  evaluates the fine interval (:func:`~sklearn_dplssgd._accounting._events.pld_interval_rule`) only
  near the root, usually once or twice: the coarse root and the two probes
  there predict the fine root (where the fine curve lies more than 5 percent
  below the coarse one, a second prediction at the predicted root corrects
  the slope), and secant steps at the fine interval, each aimed 1e-4 above
  the predicted root so that the first usually lands on the safe side, end
  at an evaluated z that meets the target (with a 1e-7 relative slack) and
  lies within 2e-4 of the fine root.  Only fine evaluations decide the
  answer.  At T = 19532, q = 0.00026 (replace-one) one fine evaluation at
  interval 1e-4 takes about 0.8 s; that is most of a cold calibration there.
* Huge targets (tens of epsilon) need almost no noise and PLD grids of
  millions of points: when both the coarse PLD search and RDP find less than
  ``_PLD_MIN_NOISE`` enough, RDP's answer is returned (and says so).
* Results are cached on the exact (validated) arguments, in memory and on
  disk, so that each setting is searched once per machine.  The disk store
  is an optimisation that can never lower the noise: whoever could have
  written an entry, its noise multiplier is used only after the accountant
  that calibrated it, at the same discretization, has certified again that
  it meets the target (:func:`_calibrate_stored`: one evaluation, not a
  search); otherwise the setting is recomputed and the entry overwritten.
"""

import dataclasses
import functools
import math

import dp_accounting

from . import _calibration_cache
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
# A stored answer whose epsilon lies further below the target than this
# (relative) holds more noise than the calibration would choose: refused (the
# searches end within about 0.5 percent, see _calibrate_stored).
_STORED_RTOL = 0.02
# Accountants whose calibrations are kept on disk.
_STORED_ACCOUNTANTS = ("rdp", "pld")
# Beyond this z the calibration gives up: the target is below what the
# accountant can certify at this delta (RDP with orders <= 1024 cannot go below
# about 0.004 at delta = 1e-5, whatever the noise).
_Z_MAX = 1e7


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


def _smallest_noise(eps_of_z, target, delta, guess, rtol=_Z_RTOL):
    """Smallest z (to relative ``rtol``) with ``eps_of_z(z) <= target``.

    Relies on epsilon being non-increasing in z. A bracket ``[lo, hi]`` with
    ``eps(lo) > target >= eps(hi)`` is found by secant steps
    (:class:`_LogSecant`, overshooting by 10 % so that the target is crossed)
    from ``guess``; dp-accounting's ``calibrate_dp_mechanism`` then finds the
    root inside it and guarantees that the z it returns meets the target.
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
       interval (:func:`pld_interval_rule`, unless given) and, through the
       error model ``c * interval**2``, predict epsilon at the fine interval.
    3. At the fine interval, step from the predicted root (plus 2e-5) by
       secant steps until an evaluated ``z`` meets the target and lies within
       ``_Z_RTOL_PLD`` of the root, by the bracket or by the local slope:
       usually one or two evaluations (after six, bisection of the bracket
       guarantees the end).

    Only fine-interval evaluations decide the answer: the returned z meets
    the target (with a 1e-7 relative slack besides) by dp-accounting's
    ``PLDAccountant`` at the returned interval.
    """
    def curve(h):
        # Positional arguments: the same cache entries as compute_epsilon's.
        return lambda z: cached_epsilon(z, delta, sample_rate, n_steps, "pld", neighboring, h)

    if interval is None:
        coarse, finest = pld_interval_range(epsilon)
    else:
        coarse, finest = min(4.0 * interval, PLD_INTERVAL_BOUNDS[1]), interval
    half = max(coarse / 2.0, finest)

    # 1. The coarse root. The zCDP guess is for sensitivity C. Replace-one
    # without sampling is exactly sensitivity 2C, so twice the guess makes
    # the search visit twice the add/remove points and reach the same
    # epsilon; with sampling it needs less than twice the noise.
    guess = _zcdp_guess(epsilon, delta, sample_rate, n_steps)
    slope = _zcdp_slope(epsilon, delta, guess)
    if neighboring == "replace_one":
        guess *= 2.0 if sample_rate == 1.0 else math.sqrt(2.0)
    check_guess(guess, epsilon)
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
        interval = pld_interval_rule(coarse, eps_coarse, eps_half, finest)
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


def _calibrate(epsilon, delta, sample_rate, n_steps, accountant, neighboring,
               pld_discretization):
    """Compute a calibration (finite epsilon; arguments validated and normalised).

    Returns ``(calibration, pld_interval)``: the PLD discretization interval
    at which a PLD answer's epsilon was computed, None for the others (what
    :func:`_calibrate_stored` needs to check a stored answer again).
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
            # Huge targets (tens of epsilon): almost no noise, PLD grids of
            # millions of points, and nothing to gain. If RDP (dp-accounting's
            # default orders: a sound bound, cheaper) also finds so little
            # noise enough, its answer is returned; the calibration says which
            # accountant gave it.
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

    # The RDP answer that decides the PLD path for huge targets needs only a
    # few digits.
    rtol = _GUESS_RTOL if accountant == "rdp_guess" else _Z_RTOL
    z = _smallest_noise(eps_of_z, epsilon, delta, guess, rtol)
    return PrivacyCalibration(float(z), float(eps_of_z(z)), delta, sample_rate,
                              n_steps, accountant, neighboring), None


@functools.lru_cache(maxsize=1024)
def _calibrate_in_memory(epsilon, delta, sample_rate, n_steps, accountant, neighboring,
                         pld_discretization):
    """The calibration, from memory, else from disk, else computed (and stored)."""
    if epsilon == math.inf:
        return PrivacyCalibration(0.0, math.inf, delta, sample_rate, n_steps,
                                  accountant, neighboring)
    if accountant not in _STORED_ACCOUNTANTS:
        # "rdp_guess" (internal): memory only.
        return _calibrate(epsilon, delta, sample_rate, n_steps, accountant, neighboring,
                          pld_discretization)[0]
    settings = dict(epsilon=epsilon, delta=delta, sample_rate=sample_rate, n_steps=n_steps,
                    accountant=accountant, neighboring=neighboring,
                    pld_discretization=pld_discretization)
    stored = _calibrate_stored(settings)
    if stored is not None:
        return stored
    calibration, pld_interval = _calibrate(epsilon, delta, sample_rate, n_steps, accountant,
                                           neighboring, pld_discretization)
    _calibration_cache.store(settings, {"noise_multiplier": calibration.noise_multiplier,
                                        "epsilon": calibration.epsilon,
                                        "accountant": calibration.accountant,
                                        "pld_interval": pld_interval})
    return calibration


def _is_float(value):
    return isinstance(value, float) and math.isfinite(value)


def _stored_epsilon(settings, z, answered_by, pld_interval):
    """Epsilon of a stored ``z``, computed now; None if the entry cannot be a calibration's.

    One evaluation of the accountant and discretization that the calibration
    of ``settings`` certified its answer with (:func:`_calibrate`): RDP with
    the dense orders for "rdp"; for "pld", dp-accounting's PLD accountant at
    the stored interval, which must be the one given or lie in the range the
    calibration chooses from (the PLD estimate is pessimistic, hence sound,
    at any interval; the range bounds the cost), or, for a huge target
    answered by RDP with ``z`` below ``_PLD_MIN_NOISE``, RDP with
    dp-accounting's default orders (also a sound bound).
    """
    accountant, neighboring = settings["accountant"], settings["neighboring"]
    mechanism = (z, settings["delta"], settings["sample_rate"], settings["n_steps"])
    if pld_interval is None:
        if answered_by == accountant == "rdp":
            return cached_epsilon(*mechanism, "rdp", neighboring, None)
        if (accountant, answered_by) == ("pld", "rdp") and z < _PLD_MIN_NOISE:
            return cached_epsilon(*mechanism, "rdp_guess", neighboring, None)
        return None
    if not (answered_by == accountant == "pld" and _is_float(pld_interval)):
        return None
    given = settings["pld_discretization"]
    if given is None:
        coarse, finest = pld_interval_range(settings["epsilon"])
        if not finest <= pld_interval <= coarse:
            return None
    elif pld_interval != given:
        return None
    return cached_epsilon(*mechanism, "pld", neighboring, pld_interval)


def _calibrate_stored(settings):
    """The calibration stored on disk for ``settings``, if it checks out, else None.

    :func:`._calibration_cache.load` has checked that the entry comes from
    a folder and file no one else can write, and its key (these settings,
    this dp-accounting release and format) and digest; neither is a proof
    (the digest is not keyed).  So the stored noise multiplier is certified
    again here, by one evaluation of the accountant the calibration used
    (:func:`_stored_epsilon`), and the entry is used only if

    * ``z`` is a finite float in (0, ``_Z_MAX``] and the fields are those
      :func:`_calibrate_in_memory` writes;
    * the epsilon computed now meets the target, and equals the stored one
      (the calibration reported exactly that value);
    * it lies within ``_STORED_RTOL`` below the target (a calibration's
      answer is the smallest ``z`` that meets it, so an entry far below the
      target holds more noise than needed: refused too, it would only cost
      accuracy).

    The epsilon returned is the one computed now, never a stored claim.
    Anything else is refused, so the caller recomputes the setting and
    overwrites the entry.
    """
    result = _calibration_cache.load(settings)
    if result is None or set(result) != {"noise_multiplier", "epsilon", "accountant",
                                         "pld_interval"}:
        return None
    z, claimed, answered_by = (result["noise_multiplier"], result["epsilon"],
                               result["accountant"])
    if not (_is_float(z) and 0.0 < z <= _Z_MAX and isinstance(answered_by, str)):
        return None
    reached = _stored_epsilon(settings, z, answered_by, result["pld_interval"])
    target = settings["epsilon"]
    if reached is None or not (target * (1.0 - _STORED_RTOL) <= reached <= target
                               and reached == claimed):
        return None
    return PrivacyCalibration(z, reached, settings["delta"], settings["sample_rate"],
                              settings["n_steps"], answered_by, settings["neighboring"])


def calibrate_noise(epsilon, delta, *, sample_rate, n_steps, accountant="pld",
                    neighboring="replace_one", pld_discretization=None):
    """Find the smallest noise multiplier that meets an (epsilon, delta) target.

    The mechanism is ``n_steps`` steps of: Poisson-sample each row with
    probability ``sample_rate``, sum per-sample gradients clipped to L2 norm
    ``C``, add ``N(0, (z C)^2 I)``.  Results are cached on the exact
    arguments, so repeated calls (e.g. in a grid search) cost microseconds and
    return the same object; they are also kept on disk, so that each setting
    is computed once per machine (in ``$SKLEARN_DPLSSGD_CACHE_DIR``, else
    ``$XDG_CACHE_HOME/sklearn-dplssgd`` or ``~/.cache/sklearn-dplssgd``;
    ``SKLEARN_DPLSSGD_CACHE_DIR=""`` turns that off).  An entry read from disk
    is used only after the accountant has certified its noise multiplier
    again (one evaluation), else the setting is recomputed and the entry
    overwritten; a folder others can write is not used at all.

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
          5-15 % less noise than RDP).  Its ``value_discretization_interval``
          is chosen between ``epsilon / 500`` and ``epsilon / 10000`` for
          about 1e-4 relative accuracy (see the module docstring) unless
          ``pld_discretization`` is given; ``z`` is within about 2e-4 of
          the smallest ``z`` that interval certifies.  Cold call 0.04-0.15 s at
          typical settings (0.4 s under add/remove), about 1.1 s at 20 000
          steps with ``q`` ~ 0.0003 (1.5 s under add/remove).
        * ``"rdp"``: dp-accounting's RDP accountant, orders up to 1024 (dense
          above 64), improved conversion (Balle et al. 2020).  Cold call
          ~0.35-0.6 s.
    neighboring : {"replace_one", "add_remove"}, default="replace_one"
        Adjacency.  ``"add_remove"``: one row added or removed (sensitivity
        ``C``; the row count, and so ``sample_rate`` and ``n_steps``, must
        not be computed from the private data).  ``"replace_one"``: one row
        replaced (sensitivity ``2C``);
        native in PLD, sound group-privacy reduction in RDP for ``q < 1``
        (see the module docstring).  ``z`` stays relative to ``C``.
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
    """Forget every calibration and every per-z epsilon computed so far, in memory.

    The store on disk is left alone (see :mod:`._calibration_cache`: set
    ``SKLEARN_DPLSSGD_CACHE_DIR`` to the empty string to bypass it, or delete
    its folder).
    """
    _calibrate_in_memory.cache_clear()
    cached_epsilon.cache_clear()
    EVENT_EPSILONS.clear()


calibrate_noise.cache_clear = _clear_caches


def smallest_noise_for(eps_of_z, epsilon, delta, guess=1.0, rtol=_Z_RTOL):
    """Smallest noise multiplier ``z`` with ``eps_of_z(z) <= epsilon``.

    For mechanisms other than the estimators' own (the private search's score
    and trials), where ``eps_of_z`` is typically :func:`.event_epsilon` of an
    event built from ``z``. ``eps_of_z`` must be non-increasing in ``z``; the
    answer is certified by ``eps_of_z`` itself.
    """
    check_epsilon(epsilon)
    check_delta(delta)
    if epsilon == math.inf:
        return 0.0
    return _smallest_noise(eps_of_z, epsilon, delta, guess, rtol)
