"""Gradient perturbation: DP-LSSGD's noisy, clipped, smoothed gradient steps.

Each step releases the Poisson-sampled rows' sum of clipped gradients on a public lattice plus
exactly sampled integer Gaussian noise; smoothing, the optimizer and averaging are
post-processing. The release, :class:`GradientPerturbation`, is fixed from public quantities and
charged to the ledger before any row is read (the argument: docs/privacy_argument.rst, "Every
gradient release on a lattice").
"""

import dataclasses
import math
import typing

import dp_accounting
import numpy as np

from .._accounting import (
    PLD_MAX_POINTS, pld_grid_points, PrivacyCalibration, compute_epsilon, dp_event, event_epsilon,
    calibrate_noise, smallest_noise_for, REMAINING_BUDGET,
)
from .._backends import backend_for, to_device
from .._training import (
    batch_rows_bound, step_levels, resolve_average_start, resolve_delta, resolve_eta0,
    resolve_schedule, explain_sigma, resolve_sigma, LOSSES, loss_code, check_optimizer,
    make_generator, learning_rate_schedule, noise_schedule_blocks, number_of_steps,
    compose_events, series_average, series_epsilon, smoothed_noise_share, TrainingPlan,
)
from ._clip_warning import warn_if_mostly_clipped
from ._release import Mechanism, NoiseAdded, ReleaseMechanism, ReleaseRecord
from ._target_range import TargetRangeRelease

__all__ = ["GradientPerturbation", "GradientPerturbationMechanism", "ReleasePlan"]

# A composed event is calibrated with PLD at an interval of epsilon / this.
_SCHEDULE_PLD_STEPS = 1000


@dataclasses.dataclass(frozen=True)
class GradientPerturbation(Mechanism):
    """``n_steps`` steps of the Poisson-subsampled Gaussian mechanism.

    Each step samples every row with probability ``sample_rate``, sums the
    per-sample gradients clipped to ``clip_norm`` (each times its row's
    weight, at most ``max_sample_weight``) and adds Gaussian noise of
    standard deviation ``z_t * sensitivity`` per coordinate, ``z_t`` being
    ``noise_multiplier`` times the level of step t's block in
    ``noise_schedule``. The event depends on z, q and T only.

    Parameters
    ----------
    sample_rate : float
        q, in (0, 1].
    n_steps : int
        T.
    noise_multiplier : float
        z (0 for a non-private fit).
    neighboring : {"replace_one", "add_remove"}
        The adjacency to account the event under (a ``DpEvent`` does not carry it).
    clip_norm : float
        C, for the record (z is relative to ``sensitivity``).
    seeded : bool, default=False
        Whether the noise derives from a seed that travels with the model
        (``reproducible=True``): then nothing is private.
    noise_schedule : tuple of (int, float), default=()
        Blocks of ``(n_steps_k, level_k)`` summing to ``n_steps``
        (:mod:`sklearn_dplssgd._training._schedules`); empty for constant noise.
    max_sample_weight : float, default=1.0
        The public bound w_max on the rows' weights, for the record.
    prior_event : dp_accounting.DpEvent or None, default=None
        A release the fit makes on the same rows before its steps (the
        regressor's learned target range), fixed from public quantities:
        :meth:`dp_event` composes it with the steps, and :meth:`calibrated`
        meets epsilon for the composition.
    """

    sample_rate: float
    n_steps: int
    noise_multiplier: float
    neighboring: str
    clip_norm: float
    seeded: bool = False
    noise_schedule: tuple = ()
    max_sample_weight: float = 1.0
    prior_event: typing.Any = None

    @property
    def sensitivity(self):
        """``max_sample_weight * clip_norm``: how far one row moves a step's sum (add/remove)."""
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

    @property
    def composed(self):
        """Whether the event composes several parts (a schedule's blocks, a prior release)."""
        return self.scheduled or self.prior_event is not None

    def _pld_grid_too_large(self, interval):
        """Whether PLD at ``interval`` needs a grid of gigabytes: far too little noise."""
        smallest = float(self.block_noise_multipliers().min())
        return pld_grid_points(smallest, interval) > PLD_MAX_POINTS

    @classmethod
    def calibrated(cls, epsilon, delta, *, sample_rate, n_steps, accountant, neighboring,
                   clip_norm, noise_schedule=(), max_sample_weight=1.0,
                   prior_event=None):
        """The mechanism whose noise meets ``(epsilon, delta)``, and its calibration.

        A composed event (a schedule, a ``prior_event``) is calibrated with
        PLD alone (``accountant`` only picks the starting point).

        Returns
        -------
        mechanism : GradientPerturbation
        calibration : PrivacyCalibration
        """
        calibration = calibrate_noise(
            epsilon, delta, sample_rate=sample_rate, n_steps=n_steps,
            accountant=accountant, neighboring=neighboring,
        )
        mechanism = cls(
            sample_rate=float(sample_rate), n_steps=int(n_steps),
            noise_multiplier=float(calibration.noise_multiplier),
            neighboring=neighboring, clip_norm=float(clip_norm),
            noise_schedule=tuple(noise_schedule), max_sample_weight=float(max_sample_weight),
            prior_event=prior_event,
        )
        if not mechanism.composed or epsilon == math.inf:
            return mechanism, calibration

        def scaled(scale):
            return dataclasses.replace(mechanism, noise_multiplier=float(scale))

        def scaled_epsilon(scale):
            if scaled(scale)._pld_grid_too_large(interval):
                return math.inf  # not certified: the search goes higher
            return event_epsilon(scaled(scale).dp_event(), delta, neighboring, interval,
                                 pld_only=True)

        # The privacy cost is about sum_t 1 / z_t**2: the search starts at the
        # constant noise meeting epsilon times the RMS of 1 / level.
        levels = step_levels(mechanism.noise_schedule) if mechanism.scheduled else np.ones(1)
        guess = calibration.noise_multiplier * math.sqrt(np.mean(levels ** -2.0))
        # PLD alone (RDP composes many blocks ten times slower), at an
        # interval fixed by the target: pessimistic, so sound.
        interval = epsilon / _SCHEDULE_PLD_STEPS
        scale = smallest_noise_for(scaled_epsilon, epsilon, delta, guess=guess)
        mechanism = scaled(scale)
        calibration = PrivacyCalibration(
            float(scale),
            event_epsilon(mechanism.dp_event(), delta, neighboring, interval, pld_only=True),
            float(delta), float(sample_rate), int(n_steps), "pld", neighboring)
        return mechanism, calibration

    @classmethod
    def within_ledger(cls, ledger, name, delta, *, sample_rate, n_steps, accountant,
                      neighboring, clip_norm, noise_schedule=(), max_sample_weight=1.0,
                      prior_event=None):
        """The mechanism that spends what remains of ``ledger``'s budget, and its calibration.

        The smallest noise for which the ledger's composed total stays within
        ``max_epsilon`` (:meth:`~sklearn_dplssgd.PrivacyLedger.noise_within_cap`);
        the calibration states the fit's own epsilon at ``delta``.

        Returns
        -------
        mechanism : GradientPerturbation
        calibration : PrivacyCalibration
        """
        shape = cls(sample_rate=float(sample_rate), n_steps=int(n_steps), noise_multiplier=1.0,
                    neighboring=neighboring, clip_norm=float(clip_norm),
                    noise_schedule=tuple(noise_schedule),
                    max_sample_weight=float(max_sample_weight), prior_event=prior_event)

        def event_of_noise(noise_multiplier):
            mechanism = dataclasses.replace(shape, noise_multiplier=float(noise_multiplier))
            if mechanism._pld_grid_too_large(ledger.pld_interval):
                return None  # not certified: the search goes higher
            return mechanism.dp_event()

        noise_multiplier = ledger.noise_within_cap(name, event_of_noise,
                                                   sample_rate=sample_rate, n_steps=n_steps)
        mechanism = dataclasses.replace(shape, noise_multiplier=float(noise_multiplier))
        calibration = PrivacyCalibration(
            float(noise_multiplier), mechanism.epsilon(delta, accountant), float(delta),
            float(sample_rate), int(n_steps), "pld" if mechanism.composed else accountant,
            neighboring)
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

    def noise_added(self, lattice):
        """The :class:`NoiseAdded` of the steps released on ``lattice`` (None: no noise).

        The rounded Gaussian ``round(s_t G)`` on the lattice of step gamma;
        ``stds`` are ``s_t gamma`` per block of the schedule.
        """
        law = ("rounded Gaussian", self.clip_norm, self.max_sample_weight, self.sensitivity)
        if lattice is None:
            return NoiseAdded(*law, (0.0,))
        scales = np.ceil(self.block_noise_multipliers() * lattice.sensitivity)  # ceil(z_k Delta)
        return NoiseAdded(*law, tuple(lattice.step * scales), lattice.step,
                          grid_scale=float(scales[0]), lattice_sensitivity=lattice.sensitivity)

    @property
    def private(self):
        """Whether the release is differentially private at all."""
        return self.noise_multiplier > 0 and not self.seeded

    def dp_event(self):
        """The dp-accounting event of everything this fit releases.

        ``NonPrivateDpEvent`` without noise or for a seeded fit; otherwise
        ``SelfComposedDpEvent(PoissonSampledDpEvent(q, GaussianDpEvent(z)), T)``
        (without the sampling for ``q = 1``), for a noise schedule the
        ``ComposedDpEvent`` of one such event per block, and a ``prior_event``
        first in a ``ComposedDpEvent`` with the steps.
        """
        if not self.private:
            return dp_accounting.NonPrivateDpEvent()
        if self.scheduled:
            steps = [dp_event(self.noise_multiplier * level, self.sample_rate, count)
                     for count, level in self.noise_schedule]
        else:
            steps = [dp_event(self.noise_multiplier, self.sample_rate, self.n_steps)]
        if self.prior_event is not None:
            return dp_accounting.ComposedDpEvent([self.prior_event] + steps)
        return steps[0] if len(steps) == 1 else dp_accounting.ComposedDpEvent(steps)

    def epsilon(self, delta, accountant="pld"):
        """Epsilon of the release at ``delta`` (``inf`` when not private).

        A composed event is accounted with PLD alone (``accountant`` is then not used).
        """
        if not self.private:
            return math.inf
        if self.composed:
            # At an interval set by a coarse pass (see calibrated).
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


class ReleasePlan(typing.NamedTuple):
    """What :meth:`GradientPerturbationMechanism.plan` fixes before any row is read."""

    mechanism: GradientPerturbation
    calibration: object
    sample_rate: float
    n_steps: int
    rng: np.random.Generator
    batch_size: int
    max_iter: int
    n_samples: int
    target_range: typing.Optional[TargetRangeRelease] = None


class GradientPerturbationMechanism(ReleaseMechanism):
    """``mechanism="gradient"``: DP-LSSGD (the default)."""

    name = "gradient"
    searchable = True
    spends_remaining_budget = True
    releases_integers = True
    composes_prior_release = True

    def check_release(self, settings, X, *, namespace, sparse, continued):
        if namespace is not None and continued:
            raise ValueError(
                "Array API inputs (PyTorch, CuPy, ... arrays) train one fit from zero "
                "weights: partial_fit, warm_start and coef_init / intercept_init need "
                "NumPy inputs.")

    def row_count_is_private(self, settings):
        return (settings.neighboring == "add_remove"
                and settings.public_n_samples is not None)

    def plan_before_reading(self, settings, n_rows, series, partial):
        return self.plan(settings, n_rows, series, partial) if n_rows else None

    def target_range(self, plan):
        return None if plan is None else plan.target_range

    def plan(self, settings, n_samples, series=None, partial=False):
        """Fix what a fit on ``n_samples`` rows releases, and charge the ledger.

        The ``"auto"`` settings are resolved from the accounted (public) row
        count and the calibrated noise only (:mod:`sklearn_dplssgd._training._defaults`);
        ``eta0``, which also reads the public width of X, in :meth:`resolve_step`.
        A continued ``series`` keeps its ``delta`` (its releases compose at
        one delta); a ``partial`` call is one epoch over its rows.

        Returns
        -------
        plan : ReleasePlan
        """
        n_accounted = settings.accounted_n_samples(n_samples)
        delta = (resolve_delta(settings.delta, n_accounted) if series is None
                 else series.delta)
        batch_size, max_iter = resolve_schedule(
            settings.batch_size, 1 if partial else settings.max_iter, n_accounted,
            partial=partial)
        sample_rate = min(1.0, batch_size / n_accounted)
        n_steps = number_of_steps(n_accounted, batch_size, max_iter)
        schedule = noise_schedule_blocks(settings.noise_schedule, n_steps, max_iter)
        fixed = settings.fixed_mechanism
        # A continued series keeps the range its first release learned.
        target_range = None
        if settings.learns_target_range and series is None:
            if fixed is not None:
                raise ValueError(
                    "target_bounds=None learns the target's range with a noisy histogram, "
                    "which a trial of a private search cannot account for (the search "
                    "calibrates its trials alone): declare target_bounds=(low, high).")
            target_range = TargetRangeRelease.planned(settings, delta)
        prior_event = None if target_range is None else target_range.dp_event()
        if fixed is not None:
            mechanism, calibration = _search_trial(settings, fixed, delta, sample_rate,
                                                   n_steps, schedule)
        else:
            mechanism, calibration = self.calibrated_mechanism(
                settings, delta, sample_rate=sample_rate, n_steps=n_steps,
                noise_schedule=schedule, prior_event=prior_event)
        rng, seeded = make_generator(settings.random_state, settings.reproducible)
        if seeded:
            mechanism = mechanism.seeded_copy()  # reproducible noise claims nothing
        if fixed is None and settings.ledger is not None:
            settings.ledger.charge(settings.estimator_name, mechanism.dp_event(),
                                   settings.neighboring)
        return ReleasePlan(mechanism, calibration, sample_rate, n_steps, rng, batch_size,
                           max_iter, n_samples, target_range)

    def calibrated_mechanism(self, settings, delta, **shape):
        """The mechanism meeting the fit's epsilon (or the ledger's remainder), calibrated.

        ``shape`` holds :meth:`GradientPerturbation.calibrated`'s ``sample_rate``,
        ``n_steps``, ``noise_schedule`` and ``prior_event``; public quantities only.
        """
        shape.update(accountant=settings.accountant, neighboring=settings.neighboring,
                     clip_norm=float(settings.clip_norm),
                     max_sample_weight=float(settings.max_sample_weight))
        if settings.epsilon == REMAINING_BUDGET:
            return GradientPerturbation.within_ledger(
                settings.ledger, settings.estimator_name, delta, **shape)
        return GradientPerturbation.calibrated(settings.epsilon, delta, **shape)

    @staticmethod
    def batch_bound(settings, plan, remote):
        """A public bound on a step's batch (the release's error bound holds up to it).

        Over the row count where it is public, else twice a declared
        ``public_n_samples``: a Chernoff bound where the batches are drawn
        here, the row bound itself where remote partitions draw them.
        """
        rows = (plan.n_samples if settings.public_n_samples is None
                else 2 * int(settings.public_n_samples))
        return rows if remote else batch_rows_bound(plan.sample_rate, rows, plan.n_steps)

    def resolve_step(self, settings, plan, n_features, sigma, series=None, partial=False):
        """``eta0`` from the plan and the public width of X (:func:`.resolve_eta0`).

        A ``partial_fit`` call keeps its series' ``eta0``.
        """
        if partial and series is not None:
            return series.eta0
        return resolve_eta0(
            settings.eta0, learning_rate=settings.learning_rate,
            power_t=settings.power_t,
            noise_multipliers=plan.mechanism.step_noise_multipliers(),
            clip_norm=plan.mechanism.sensitivity, batch_size=plan.batch_size,
            alpha=float(settings.alpha), max_step=LOSSES[settings.loss].noise_free_step,
            # The first call of a series bounds the noise of the whole series.
            partial=partial,
            # The noise that reaches the weights after smoothing, against
            # the smoothing the estimator's step rule was measured with.
            noise_share=smoothed_noise_share(n_features, sigma, settings.step_reference_sigma),
            n_features=n_features, optimizer=check_optimizer(settings.optimizer),
        )

    def smoothing(self, settings, n_features, sparse, feature_names):
        # From the input's public shape, format and column names only.
        return resolve_sigma(settings.sigma, n_features, sparse, settings.auto_sigma_levels,
                             feature_names)

    def smoothing_reason(self, settings, n_features, sparse, feature_names):
        return explain_sigma(settings.sigma, n_features, sparse, settings.auto_sigma_levels,
                             feature_names)

    def release(self, settings, data, plan, series, partial, disjoint_batches=False):
        n_samples, n_features = data.X.shape
        if plan is None or plan.n_samples != n_samples:
            plan = self.plan(settings, n_samples, series, partial)
        sigma = self.smoothing(settings, n_features, data.sparse, data.feature_names)
        eta0 = self.resolve_step(settings, plan, n_features, sigma, series, partial)
        # Like eta0, from the plan and the public width of X; a call of a
        # series average averages across calls instead.
        average_start = (None if settings.averages_series(partial) else
                         resolve_average_start(settings.average, plan.n_steps,
                                               tail=settings.average_tail(n_features)))
        settings.warn_before_training(plan.calibration.delta, n_samples)
        backend = backend_for(data.X)
        steps = self.step_plan(settings, data, plan, backend.rows_are_remote, sigma=sigma,
                               eta0=eta0, average_start=average_start,
                               first_step=_steps_before(series) if partial else 0)
        params = _train(settings, data, plan, steps, backend)
        trajectory, series_weight = None, 0.0
        if settings.averages_series(partial):
            trajectory = params
            params, series_weight = _continue_series_average(series, trajectory, plan.n_steps)
        return params, self.record(settings, data, plan, steps, series, disjoint_batches,
                                   eta0=eta0, trajectory=trajectory,
                                   series_weight=series_weight)

    def step_plan(self, settings, data, plan, remote, *, sigma, eta0, average_start,
                  first_step):
        """The public settings of the steps (a :class:`TrainingPlan`)."""
        return TrainingPlan(
            loss_code=loss_code(settings.loss, data.n_outputs),
            loss_threshold=LOSSES[settings.loss].threshold(settings),
            fit_intercept=bool(settings.fit_intercept), clip_norm=float(settings.clip_norm),
            noise_multiplier=plan.mechanism.step_noise_multipliers(),
            sample_rate=plan.sample_rate, batch_size=plan.batch_size, n_steps=plan.n_steps,
            n_epochs=plan.max_iter,
            learning_rates=learning_rate_schedule(settings.learning_rate, eta0,
                                                  settings.power_t, plan.n_steps,
                                                  first_step=first_step),
            alpha=float(settings.alpha), sigma=sigma, average_start=average_start,
            optimizer=check_optimizer(settings.optimizer),
            max_sample_weight=plan.mechanism.max_sample_weight,
            max_batch_rows=self.batch_bound(settings, plan, remote),
        )

    def record(self, settings, data, plan, steps, series, disjoint_batches, *, eta0,
               trajectory, series_weight):
        """The :class:`ReleaseRecord` of a release that ran ``steps`` after ``series``."""
        mechanism, calibration = plan.mechanism, plan.calibration
        n_features = data.X.shape[1]
        noise_added = mechanism.noise_added(steps.lattice(
            data.n_outputs * (n_features + int(bool(settings.fit_intercept)))))
        noise_multipliers = mechanism.block_noise_multipliers()
        if data.namespace is not None:
            # Array attributes follow X (scikit-learn's array API convention).
            noise_multipliers = to_device(noise_multipliers, *data.namespace)
        events = (series.events if series is not None else ()) + (mechanism.dp_event(),)
        disjoint = (series.disjoint if series is not None else ()) + (disjoint_batches,)
        if len(events) == 1:
            # A seeded fit's noise can be regenerated from its own parameters.
            epsilon = calibration.epsilon if mechanism.private else math.inf
        else:
            epsilon = series_epsilon(events, calibration.delta, calibration.neighboring,
                                     disjoint)
        return ReleaseRecord(
            n_iter=plan.max_iter, batch_size=plan.batch_size, eta0=eta0,
            average_start=steps.average_start, n_steps=plan.n_steps,
            noise_multiplier=calibration.noise_multiplier, noise_multipliers=noise_multipliers,
            sample_rate=plan.sample_rate, epsilon=epsilon, dp_events=list(events),
            disjoint_batches=list(disjoint), dp_event=compose_events(events),
            t=_steps_before(series) + plan.n_steps, delta=calibration.delta,
            neighboring=calibration.neighboring, output_sensitivity=None, sigma=steps.sigma,
            sigma_reason=self.smoothing_reason(settings, n_features, data.sparse,
                                               data.feature_names),
            series_trajectory=trajectory, series_weight=series_weight, noise_added=noise_added,
        )

    def claimed_epsilon(self, settings, model, n_rows):
        if settings.epsilon == REMAINING_BUDGET:
            # The ledger set the noise at fit time: the claim is the fit's own.
            return model.epsilon_
        schedule = noise_schedule_blocks(settings.noise_schedule, model.n_steps_,
                                         model.n_iter_)
        _, calibration = GradientPerturbation.calibrated(
            settings.epsilon, model.delta_, sample_rate=model.sample_rate_,
            n_steps=model.n_steps_, accountant=settings.accountant,
            neighboring=model.neighboring_, clip_norm=float(settings.clip_norm),
            noise_schedule=schedule,
        )
        return calibration.epsilon


def _search_trial(settings, fixed, delta, sample_rate, n_steps, schedule):
    """The mechanism of a trial of DPRandomizedSearch, and its calibration.

    The search calibrates and accounts for all its trials itself.
    """
    expected = GradientPerturbation(sample_rate, n_steps, fixed.noise_multiplier,
                                    settings.neighboring, fixed.clip_norm,
                                    noise_schedule=schedule).noise_schedule
    if (fixed.sample_rate, fixed.n_steps, fixed.noise_schedule) != (
            sample_rate, n_steps, expected):
        raise RuntimeError("the search's mechanism does not match this fit's")
    # The search's accounting is relative to the sensitivity, which this
    # estimator's weight bound sets.
    mechanism = dataclasses.replace(fixed, max_sample_weight=float(settings.max_sample_weight))
    return mechanism, PrivacyCalibration(fixed.noise_multiplier, math.nan, delta, sample_rate,
                                         n_steps, "rdp", settings.neighboring)


def _steps_before(series):
    """The steps of the series a release continues (0 for none)."""
    return series.n_steps if series is not None else 0


def _continue_series_average(series, last_iterate, n_steps):
    """The series average and its weight after a call of ``n_steps`` (post-processing)."""
    return series_average(series.average if series is not None else None,
                          series.average_weight if series is not None else 0.0,
                          last_iterate, n_steps, _steps_before(series) + n_steps)


def _train(settings, data, plan, steps, backend):
    """Run ``steps`` on the rows where ``backend`` holds them; the released weights."""
    # The rows' norms, once, for the warning and the clip (None where each
    # partition or device forms its own).
    row_norms = backend.row_norms(data.X, settings.n_threads)
    if not backend.rows_are_remote:
        warn_if_mostly_clipped(settings, data, row_norms)
    extra = backend.trainer_arguments(settings.n_threads, data.start_params, row_norms)
    return backend.trainer(data.X, data.y_encoded, data.n_outputs, steps, plan.rng,
                           verbose=settings.verbose, sample_weight=data.weights, **extra)
