"""Gradient perturbation: DP-LSSGD's noisy, clipped, smoothed gradient steps.

Each step sums the Poisson-sampled rows' clipped gradients and releases the
sum rounded onto a public lattice plus exactly sampled integer Gaussian noise
(:mod:`~sklearn_dplssgd._training._lattice`); smoothing, the optimizer and
averaging are post-processing. The whole release,
:class:`~sklearn_dplssgd._mechanisms.GradientPerturbation` (q, T, the noise
multipliers of its schedule, the sensitivity), is fixed from public quantities
and charged to the ledger before any row is read.
"""

import dataclasses
import math
import typing
import warnings

import dp_accounting
import numpy as np

from .._accounting import (
    PLD_MAX_POINTS, pld_grid_points, PrivacyCalibration, compute_epsilon, dp_event, event_epsilon,
    calibrate_noise, smallest_noise_for, REMAINING_BUDGET,
)
from .._backends import backend_for, initial_gradient_norms, share_of_rows, to_device
from .._training import (
    batch_rows_bound, step_levels, resolve_average_start, resolve_delta, resolve_eta0,
    resolve_schedule, explain_sigma, resolve_sigma, LOSSES, loss_code, residual_norms_at_zero,
    check_optimizer, make_generator, learning_rate_schedule, noise_schedule_blocks,
    number_of_steps, compose_events, series_average, series_epsilon,
    smoothed_noise_share, TrainingPlan,
)
from ._release import Mechanism, NoiseAdded, ReleaseMechanism, ReleaseRecord

__all__ = ["GradientPerturbation", "GradientPerturbationMechanism", "ReleasePlan"]

# A noise schedule is calibrated with PLD at an interval of epsilon / this.
_SCHEDULE_PLD_STEPS = 1000

# Initial gradients this many times the clip norm, for this share of the
# rows, trigger the mostly-clipped warning (see warn_if_mostly_clipped).
CLIPPED_FACTOR = 10.0
CLIPPED_SHARE = 0.9


@dataclasses.dataclass(frozen=True)
class GradientPerturbation(Mechanism):
    """``n_steps`` steps of the Poisson-subsampled Gaussian mechanism.

    Each step samples every row with probability ``sample_rate``, sums the
    per-sample gradients clipped to ``clip_norm`` (each times its row's
    weight, at most ``max_sample_weight``) and adds Gaussian noise of
    standard deviation ``z_t * sensitivity`` per coordinate, where
    ``sensitivity = max_sample_weight * clip_norm`` bounds one row's
    contribution and ``z_t`` is ``noise_multiplier`` times the level of step
    t's block in ``noise_schedule`` (1 throughout by default). Smoothing, the
    optimizer step and the weight decay are post-processing. The event
    depends on z, q and T only: z is relative to the sensitivity.

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
        C, for the record (z is relative to ``sensitivity``).
    seeded : bool, default=False
        Whether the noise was derived from a seed that travels with the
        model (``reproducible=True``): then nothing is private.
    noise_schedule : tuple of (int, float), default=()
        The public shape of the noise (:mod:`sklearn_dplssgd._training._schedules`):
        blocks of ``(n_steps_k, level_k)`` summing to ``n_steps``; empty for
        a constant noise multiplier.
    max_sample_weight : float, default=1.0
        The public bound w_max on the rows' weights, for the record.
    prior_event : dp_accounting.DpEvent or None, default=None
        A release the fit makes on the same rows before its steps (the
        regressor's private target range), fixed from public quantities:
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
        """``max_sample_weight * clip_norm``: how far one row moves a step's sum.

        Under add/remove adjacency; replace-one moves it by up to twice that,
        which the accountant's neighbouring relation accounts for. The noise
        on the sum has standard deviation ``z_t`` times this.
        """
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

    @classmethod
    def calibrated(cls, epsilon, delta, *, sample_rate, n_steps, accountant, neighboring,
                   clip_norm, noise_schedule=(), max_sample_weight=1.0,
                   prior_event=None):
        """The mechanism whose noise meets ``(epsilon, delta)``, and its calibration.

        With a non-constant ``noise_schedule``, or a ``prior_event`` to
        compose with the steps, the scale is the smallest for which
        ``event_epsilon`` of the composed event (PLD) meets ``epsilon``;
        ``accountant`` then only chooses the starting point.

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

        # To first order the privacy cost is sum_t 1 / z_t**2: the constant
        # noise meeting epsilon times the RMS of 1 / level is close to the
        # answer, and the search starts there.
        levels = step_levels(mechanism.noise_schedule) if mechanism.scheduled else np.ones(1)
        guess = calibration.noise_multiplier * math.sqrt(np.mean(levels ** -2.0))
        smallest_level = float(levels.min())

        def scaled_epsilon(scale):
            if pld_grid_points(scale * smallest_level, interval) > PLD_MAX_POINTS:
                # Far too little noise (and a PLD grid of gigabytes): treat
                # as not certified, which only makes the search go higher.
                return math.inf
            return event_epsilon(scaled(scale).dp_event(), delta, neighboring, interval,
                                 pld_only=True)

        # PLD alone (RDP's composition of many blocks is ten times slower),
        # at an interval fixed by the target: pessimistic, so sound.
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

        Its noise is the smallest for which the ledger's composed total with
        this fit's event stays within ``max_epsilon``
        (:meth:`~sklearn_dplssgd.PrivacyLedger.noise_within_cap`): public
        quantities only. The calibration states the fit's own epsilon at
        ``delta`` (the estimator's, not the ledger's).

        Returns
        -------
        mechanism : GradientPerturbation
        calibration : PrivacyCalibration
        """
        shape = cls(sample_rate=float(sample_rate), n_steps=int(n_steps), noise_multiplier=1.0,
                    neighboring=neighboring, clip_norm=float(clip_norm),
                    noise_schedule=tuple(noise_schedule),
                    max_sample_weight=float(max_sample_weight), prior_event=prior_event)
        smallest_level = float(step_levels(shape.noise_schedule).min()) if (
            shape.scheduled) else 1.0

        def event_of_noise(noise_multiplier):
            if pld_grid_points(noise_multiplier * smallest_level,
                               ledger.pld_interval) > PLD_MAX_POINTS:
                return None  # far too little noise: not certified (the search goes higher)
            return dataclasses.replace(shape, noise_multiplier=float(noise_multiplier)).dp_event()

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
        (without the sampling for ``q = 1``), and for a noise schedule the
        ``ComposedDpEvent`` of one such event per block; a ``prior_event``
        comes first in a ``ComposedDpEvent`` with the steps.
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

        A noise schedule or a prior release is accounted by
        ``event_epsilon`` of :meth:`dp_event` (``accountant`` is then not used).
        """
        if not self.private:
            return math.inf
        if self.composed:
            # PLD alone (see calibrated), at an interval set by a coarse pass.
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


class GradientPerturbationMechanism(ReleaseMechanism):
    """``mechanism="gradient"``: DP-LSSGD (the default)."""

    name = "gradient"
    searchable = True
    spends_remaining_budget = True
    releases_integers = True
    # Whether the steps' event can compose a release made before them
    # (GradientPerturbation.prior_event).
    composes_prior_release = True

    def check_settings(self, settings):
        if settings.weight_norm_bound is not None:
            raise ValueError(
                "weight_norm_bound is used by mechanism='output' only; gradient "
                "perturbation bounds each row's influence by clip_norm. Leave it None.")

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

    def plan(self, settings, n_samples, series=None, partial=False):
        """Fix what a fit on ``n_samples`` rows releases, and charge the ledger.

        The ``"auto"`` hyperparameters are resolved here, from the accounted
        (public) row count and the calibrated noise only (see
        :mod:`sklearn_dplssgd._training._defaults`); ``eta0``, which also depends on
        the public width of X, once X is validated (:meth:`resolve_step`).

        Parameters
        ----------
        settings : FitSettings
        n_samples : int
        series : Series or None, default=None
            The series this release continues: its ``delta`` is kept (the
            releases compose at one delta).
        partial : bool, default=False
            A ``partial_fit`` call: one epoch over its rows.

        Returns
        -------
        plan : ReleasePlan
            The mechanism, its calibration, q, T, the fit's own generator
            (see :func:`~sklearn_dplssgd._training.make_generator`) and the resolved
            settings.
        """
        n_accounted = settings.accounted_n_samples(n_samples)
        delta = (resolve_delta(settings.delta, n_accounted) if series is None
                 else series.delta)
        # A partial_fit call is one epoch over its rows, in up to 64 steps
        # (the series rule of _defaults).
        batch_size, max_iter = resolve_schedule(
            settings.batch_size, 1 if partial else settings.max_iter, n_accounted,
            partial=partial)
        sample_rate = min(1.0, batch_size / n_accounted)
        n_steps = number_of_steps(n_accounted, batch_size, max_iter)
        schedule = noise_schedule_blocks(settings.noise_schedule, n_steps, max_iter)
        fixed = settings.fixed_mechanism
        # A release the estimator makes before the steps (the regressor's
        # target range), from public quantities; a continued series keeps
        # what its first release learned.
        prior_event = None if series is not None else settings.prior_release(
            delta, n_accounted, self.composes_prior_release and fixed is None)
        if fixed is not None:
            # A trial of DPRandomizedSearch: the search calibrated the noise
            # for all its trials and accounts for them itself.
            expected = GradientPerturbation(sample_rate, n_steps, fixed.noise_multiplier,
                                            settings.neighboring, fixed.clip_norm,
                                            noise_schedule=schedule).noise_schedule
            if (fixed.sample_rate, fixed.n_steps, fixed.noise_schedule) != (
                    sample_rate, n_steps, expected):
                raise RuntimeError("the search's mechanism does not match this fit's")
            # The search's accounting is relative to the sensitivity, which
            # this estimator's weight bound sets.
            mechanism = dataclasses.replace(
                fixed, max_sample_weight=float(settings.max_sample_weight))
            calibration = PrivacyCalibration(
                fixed.noise_multiplier, math.nan, delta, sample_rate, n_steps,
                "rdp", settings.neighboring)
        else:
            mechanism, calibration = self.calibrated_mechanism(
                settings, delta, sample_rate=sample_rate, n_steps=n_steps,
                noise_schedule=schedule, prior_event=prior_event)
        rng, seeded = make_generator(settings.random_state, settings.reproducible)
        if seeded:
            # A seeded fit's noise is reproducible: it claims nothing.
            mechanism = mechanism.seeded_copy()
        if fixed is None and settings.ledger is not None:
            settings.ledger.charge(settings.estimator_name, mechanism.dp_event(),
                                   settings.neighboring)
        return ReleasePlan(
            mechanism, calibration, sample_rate, n_steps, rng, batch_size=batch_size,
            max_iter=max_iter,
            n_samples=n_samples,
        )

    def calibrated_mechanism(self, settings, delta, *, sample_rate, n_steps, noise_schedule,
                             prior_event=None):
        """The mechanism of a fit whose noise meets the estimator's epsilon, and its calibration.

        From public quantities only. With ``epsilon="remaining"`` the noise
        spends what remains of the ledger's budget
        (:meth:`GradientPerturbation.within_ledger`). ``prior_event`` (see
        :class:`GradientPerturbation`) is composed with the steps in both.
        """
        if settings.epsilon == REMAINING_BUDGET:
            return GradientPerturbation.within_ledger(
                settings.ledger, settings.estimator_name, delta, sample_rate=sample_rate,
                n_steps=n_steps, accountant=settings.accountant,
                neighboring=settings.neighboring, clip_norm=float(settings.clip_norm),
                noise_schedule=noise_schedule,
                max_sample_weight=float(settings.max_sample_weight), prior_event=prior_event)
        return GradientPerturbation.calibrated(
            settings.epsilon, delta, sample_rate=sample_rate, n_steps=n_steps,
            accountant=settings.accountant, neighboring=settings.neighboring,
            clip_norm=float(settings.clip_norm),
            noise_schedule=noise_schedule, max_sample_weight=float(settings.max_sample_weight),
            prior_event=prior_event)

    @staticmethod
    def batch_bound(settings, plan, remote):
        """A public bound on a step's batch (the release's error bound holds up to it).

        Over the rows where their count is public, else twice a declared
        ``public_n_samples``: a Chernoff bound where the batches are drawn
        here, the row bound itself where remote partitions draw them.
        """
        rows = (plan.n_samples if settings.public_n_samples is None
                else 2 * int(settings.public_n_samples))
        return rows if remote else batch_rows_bound(plan.sample_rate, rows, plan.n_steps)

    def resolve_step(self, settings, plan, n_features, sigma, series=None, partial=False):
        """``eta0`` for a fit of ``plan`` over ``n_features`` columns.

        From the plan's public quantities and the public width of X (see
        :func:`~sklearn_dplssgd._training.resolve_eta0`); a ``partial_fit`` call keeps its
        series' ``eta0``.
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
        X, namespace = data.X, data.namespace
        n_samples = X.shape[0]
        if plan is None or plan.n_samples != n_samples:
            plan = self.plan(settings, n_samples, series, partial)
        mechanism, calibration = plan.mechanism, plan.calibration
        sigma = self.smoothing(settings, X.shape[1], data.sparse, data.feature_names)
        eta0 = self.resolve_step(settings, plan, X.shape[1], sigma, series, partial)
        # Like eta0, from the plan and the public width of X; a call of a
        # series average averages across calls instead.
        average_start = (None if settings.averages_series(partial) else
                         resolve_average_start(settings.average, plan.n_steps,
                                               tail=settings.average_tail(X.shape[1])))
        settings.warn_before_training(calibration.delta, n_samples)
        backend = backend_for(X)
        # The rows' norms, once, for the warning and the clip, where the rows
        # are here (None otherwise: each partition or device forms its own).
        row_norms = backend.row_norms(X, settings.n_threads)
        if not backend.rows_are_remote:
            # A cluster's rows stay on its workers: no warning from them.
            warn_if_mostly_clipped(settings, data, row_norms)
        trainer = backend.trainer
        # The backend's own settings (threads, a starting point: the array
        # API path refuses the latter, check_release).
        extra = backend.trainer_arguments(settings.n_threads, data.start_params, row_norms)
        steps = TrainingPlan(
            loss_code=loss_code(settings.loss, data.n_outputs),
            loss_threshold=LOSSES[settings.loss].threshold(settings),
            fit_intercept=bool(settings.fit_intercept),
            clip_norm=float(settings.clip_norm),
            noise_multiplier=mechanism.step_noise_multipliers(),
            sample_rate=plan.sample_rate,
            batch_size=plan.batch_size,
            n_steps=plan.n_steps,
            n_epochs=plan.max_iter,
            learning_rates=learning_rate_schedule(
                settings.learning_rate, eta0, settings.power_t, plan.n_steps,
                first_step=series.n_steps if partial and series is not None else 0,
            ),
            alpha=float(settings.alpha),
            sigma=sigma,
            average_start=average_start,
            optimizer=check_optimizer(settings.optimizer),
            max_sample_weight=mechanism.max_sample_weight,
            max_batch_rows=self.batch_bound(settings, plan, backend.rows_are_remote),
        )
        params = trainer(X, data.y_encoded, data.n_outputs, steps, plan.rng,
                         verbose=settings.verbose, sample_weight=data.weights, **extra)
        trajectory, series_weight = None, 0.0
        if settings.averages_series(partial):
            # Post-processing of the calls' iterates (see .._streaming).
            trajectory = params
            params, series_weight = series_average(
                series.average if series is not None else None,
                series.average_weight if series is not None else 0.0,
                trajectory, plan.n_steps,
                (series.n_steps if series is not None else 0) + plan.n_steps)
        noise_added = mechanism.noise_added(steps.lattice(
            data.n_outputs * (X.shape[1] + int(bool(settings.fit_intercept)))))
        noise_multipliers = mechanism.block_noise_multipliers()
        if namespace is not None:
            # Array attributes follow X (scikit-learn's array API convention).
            noise_multipliers = to_device(noise_multipliers, *namespace)
        events = (series.events if series is not None else ()) + (mechanism.dp_event(),)
        disjoint = (series.disjoint if series is not None else ()) + (disjoint_batches,)
        if len(events) == 1:
            # A seeded fit's noise can be regenerated from its own parameters.
            epsilon = calibration.epsilon if mechanism.private else math.inf
        else:
            epsilon = series_epsilon(events, calibration.delta, calibration.neighboring,
                                     disjoint)
        return params, ReleaseRecord(
            n_iter=plan.max_iter,
            batch_size=plan.batch_size,
            eta0=eta0,
            average_start=average_start,
            n_steps=plan.n_steps,
            noise_multiplier=calibration.noise_multiplier,
            noise_multipliers=noise_multipliers,
            sample_rate=plan.sample_rate,
            epsilon=epsilon,
            dp_events=list(events),
            disjoint_batches=list(disjoint),
            dp_event=compose_events(events),
            t=(series.n_steps if series is not None else 0) + plan.n_steps,
            delta=calibration.delta,
            neighboring=calibration.neighboring,
            output_sensitivity=None,
            sigma=sigma,
            sigma_reason=self.smoothing_reason(settings, X.shape[1], data.sparse,
                                               data.feature_names),
            series_trajectory=trajectory,
            series_weight=series_weight,
            noise_added=noise_added,
        )

    def claimed_epsilon(self, settings, model, n_rows):
        if settings.epsilon == REMAINING_BUDGET:
            # The noise was set by the ledger's records at fit time: the
            # claim is the epsilon the fit stated for its own event.
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


def warn_if_mostly_clipped(settings, data, row_norms=None):
    """Warn the data holder when almost every gradient is clipped far down.

    At the starting point (zero weights) each row's gradient norm is
    ``||r_i|| sqrt(||x_i||^2 + 1)``. When 90 % of the rows exceed 10 times
    ``clip_norm``, clipping throws away most of every gradient. The advice
    compares the rows' median norm with ``sqrt(d + 1)``, the most a row in
    ``[-1, 1]`` has: above, the features are off scale; below, the rows are
    wide and a constant background (zeros mapped to -1) is what costs. This
    reads the private rows only to decide whether to warn the person running
    the fit: nothing is stored, and the training is the same either way.
    ``row_norms`` are the rows' norms ``||x_i||`` the training uses too
    (NumPy and sparse X), so that they are computed once.
    """
    code = loss_code(settings.loss, data.n_outputs)
    threshold = LOSSES[settings.loss].threshold(settings)
    fit_intercept = bool(settings.fit_intercept)
    limit = CLIPPED_FACTOR * float(settings.clip_norm)
    if row_norms is not None:
        def clipped_far(start, stop):
            # Extreme but valid rows may overflow these squares: an infinite
            # norm is simply "far above the limit" here.
            with np.errstate(all="ignore"):
                residual_norms = residual_norms_at_zero(
                    code, data.y_encoded[start:stop], data.n_outputs, threshold)
                return residual_norms * np.sqrt(
                    row_norms[start:stop]**2 + float(fit_intercept)) > limit

        # A pass over every row: on the fit's threads.
        share = share_of_rows(clipped_far, len(row_norms), settings.n_threads)
        if not share >= CLIPPED_SHARE:
            return
        with np.errstate(all="ignore"):
            row_norms = np.sqrt(row_norms**2 + float(fit_intercept))
    else:
        norms, row_norms = initial_gradient_norms(
            data.X, data.y_encoded, data.n_outputs, code, threshold, fit_intercept)
        if not np.mean(norms > limit) >= CLIPPED_SHARE:
            return
    median = float(np.median(row_norms))
    if median > max(CLIPPED_FACTOR, math.sqrt(data.X.shape[1] + float(fit_intercept))):
        advice = ("the features are far from unit scale: declare their public range with "
                  "feature_bounds=(lower, upper) (or BoundedScaler in a pipeline), not a "
                  "scaler fitted on the private rows")
    elif median > CLIPPED_FACTOR:
        advice = ("the rows are wide, and a part of every row that does not vary (a "
                  "background) takes most of each clipped gradient. Keep such entries at 0: "
                  "feature_bounds=(0, upper) keeps zeros on an image's columns (its width, "
                  "numbered columns or sigma='ordered'), and BoundedScaler(0, upper, "
                  "keep_zero=True) on other mostly-zero columns")
    else:
        advice = "clip_norm is small compared with the gradients: raise it (eta0 follows it)"
    warnings.warn(
        f"Almost every training row's gradient is more than "
        f"{CLIPPED_FACTOR:g} times clip_norm and is clipped, so the fit "
        f"learns slowly: {advice}. (This check is shown only to you; "
        "it changes nothing in the fit.)", UserWarning)
