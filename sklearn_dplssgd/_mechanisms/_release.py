"""The interface every release mechanism of the estimators answers.

A mechanism is what a fit publishes and how: DP-LSSGD's noisy gradient steps
(:class:`~._gradient.GradientPerturbationMechanism`), or the weights of a noise-free
descent plus noise once (:class:`~.output_perturbation.OutputPerturbationMechanism`).
The estimators, the audit and the search ask the mechanism object, never compare its
name; every call takes the fit's :class:`~._settings.FitSettings`, never the estimator.
A fit calls :meth:`~ReleaseMechanism.check_settings`, :meth:`~ReleaseMechanism.check_release`,
:meth:`~ReleaseMechanism.plan_before_reading` and :meth:`~ReleaseMechanism.release` in this
order; the audit calls :meth:`~ReleaseMechanism.claimed_epsilon`. Adding a mechanism is a
subclass in its own module, registered in :data:`sklearn_dplssgd._mechanisms.MECHANISMS`.
"""

import dataclasses
import math
import typing

import scipy.sparse as sp

from .._accounting import event_epsilon

__all__ = ["Mechanism", "NoiseAdded", "ReleaseMechanism", "ReleaseRecord", "TrainingData"]


class TrainingData(typing.NamedTuple):
    """The validated rows of a fit, as the mechanism receives them.

    ``X`` (NumPy, CSR or an array API array), ``y_encoded`` the kernels'
    float64 targets for ``n_outputs`` outputs, ``weights`` the rows' weights
    (None: unweighted), ``namespace`` X's array API namespace and device
    (None for NumPy and SciPy), ``start_params`` the training-scale start (a
    continued series' weights or a public ``coef_init``; None: zeros),
    ``feature_names`` X's public column names (or None).
    """

    X: typing.Any
    y_encoded: typing.Any
    n_outputs: int
    weights: typing.Any
    namespace: typing.Any
    start_params: typing.Any = None
    feature_names: typing.Any = None

    @property
    def sparse(self):
        """Whether X is a SciPy sparse matrix (its format is public)."""
        return sp.issparse(self.X)


class NoiseAdded(typing.NamedTuple):
    """What a release's noise is, in figures a reader can check (``privacy_report()``).

    On the training scale (a step's sum of clipped, weighted gradients) but
    for the lattice units. ``law`` is ``"rounded Gaussian"`` (sampled exactly
    on the integer lattice); ``bound`` the norm one row's contribution to a
    step's sum is held to; ``stds`` the noise's standard deviation per
    coordinate (the scale ``s`` times ``grid_step``), one per block of the
    noise schedule; ``grid_step`` the lattice step gamma; ``grid_scale`` (the
    first block's ``s``) and ``lattice_sensitivity`` are in lattice units
    (:mod:`~sklearn_dplssgd._training._lattice`). Output perturbation fills
    the same fields for its weights: ``clip_norm`` the rows' norm bound,
    ``bound`` the rounded weights' sensitivity, ``grid_step`` ``2**-grid_bits``.
    """

    law: str
    clip_norm: float
    max_sample_weight: float
    bound: float
    stds: tuple
    grid_step: typing.Optional[float] = None
    grid_bits: typing.Optional[int] = None
    grid_scale: typing.Optional[float] = None
    lattice_sensitivity: typing.Optional[float] = None


@dataclasses.dataclass(frozen=True)
class ReleaseRecord:
    """What a release reports; each field is stored as ``<field>_`` on the estimator.

    See the estimators' "Attributes" section for each field's meaning.
    """

    n_iter: int
    batch_size: int
    eta0: float
    average_start: typing.Optional[int]
    n_steps: int
    noise_multiplier: float
    noise_multipliers: typing.Any
    sample_rate: float
    epsilon: float
    dp_events: list
    disjoint_batches: list
    dp_event: typing.Any
    t: int
    delta: float
    neighboring: str
    output_sensitivity: typing.Optional[float]
    sigma: float
    sigma_reason: str
    # Under private names: the series average's state (the iterate the next
    # partial_fit call continues from, None: the published weights; the
    # average's weight) and the NoiseAdded for privacy_report().
    series_trajectory: typing.Any = None
    series_weight: float = 0.0
    noise_added: typing.Optional[NoiseAdded] = None

    def fitted_attributes(self):
        """``{"<field>_": value}`` per public field, and the private fields under private names.

        Every release sets the series state: one that does not average ends the average.
        """
        private = {"series_trajectory": "_series_trajectory",
                   "series_weight": "_series_weight", "noise_added": "_noise_added"}
        return {private.get(field.name, f"{field.name}_"): getattr(self, field.name)
                for field in dataclasses.fields(self)}


class ReleaseMechanism:
    """Base of the mechanisms; the defaults are gradient perturbation's answers.

    Attributes
    ----------
    name : str
        The value of the estimators' ``mechanism`` parameter that selects it.
    accepts_sparse : bool
        Whether it trains on CSR input.
    accepts_array_api : bool
        Whether it trains on array API arrays (PyTorch, CuPy, ...) on their
        device.
    accepts_dask : bool
        Whether it trains on a Dask array where its partitions are
        (:class:`~sklearn_dplssgd._backends.DaskTraining`).
    supports_partial_fit : bool
        Whether a release can continue an earlier one (``partial_fit``,
        ``warm_start``).
    partial_fit_refusal : str
        Why not, where ``supports_partial_fit`` is False.
    perturbs_weights : bool
        Whether its noise is added to the released weights directly, which
        the canary audit reads the weights for.
    searchable : bool
        Whether :class:`~sklearn_dplssgd.DPRandomizedSearch` can calibrate
        its trials jointly.
    releases_integers : bool
        Whether its noisy values are integers times a public grid step: the
        claim :func:`~sklearn_dplssgd.audit.check_float_channel` audits.
    spends_remaining_budget : bool
        Whether it can calibrate its noise to what remains of a ledger's
        budget (``epsilon="remaining"``).
    composes_prior_release : bool
        Whether its event composes a release made on the rows before
        training (the regressor's target range learned with
        ``target_bounds=None``).
    """

    name = None
    accepts_sparse = True
    accepts_array_api = True
    accepts_dask = True
    supports_partial_fit = True
    partial_fit_refusal = ""
    perturbs_weights = False
    searchable = False
    spends_remaining_budget = False
    releases_integers = False
    composes_prior_release = False

    def noise_free_contribution_bound(self, n_coordinates):
        """The largest norm one row may add to a noise-free step, over ``w_max C``.

        For an ``epsilon=inf`` fit over ``n_coordinates`` coordinates: the
        clip alone (a noise-free step is not rounded). The test suite's
        clipping check holds the stored weights to it.
        """
        return 1.0

    def check_settings(self, settings):
        """Refuse, before any row is read, settings the mechanism cannot honour."""

    def check_release(self, settings, X, *, namespace, sparse, continued):
        """Refuse, before any row is read, an input form or a continuation it cannot train.

        Parameters
        ----------
        settings : FitSettings
            The fit's hyperparameters (:class:`~._settings.FitSettings`).
        X : array-like
            The input as given (only its type is read).
        namespace : tuple or None
            X's array API namespace and device, None for NumPy and SciPy input.
        sparse : bool
            Whether X is a SciPy sparse matrix or array (its format is public).
        continued : bool
            Whether the fit continues a fitted model or starts from given
            weights (``partial_fit``, ``warm_start``, ``coef_init``).
        """

    def row_count_is_private(self, settings):
        """Whether neighbouring data sets may differ in their number of rows."""
        return False

    def plan_before_reading(self, settings, n_rows, series, partial):
        """The release fixed from the public row count, or None to plan in :meth:`release`.

        Fixed (its ``dp_event``) and charged to the ledger before the rows are validated.
        """
        return None

    def target_range(self, plan):
        """The planned release of a regressor's target range (None: none planned).

        Only a mechanism that ``composes_prior_release`` plans one, in its
        plan, before the rows are read.
        """
        return None

    def smoothing(self, settings, n_features, sparse, feature_names):
        """The Laplacian smoothing strength ``sigma_`` of the fit."""
        return 0.0

    def smoothing_reason(self, settings, n_features, sparse, feature_names):
        """Why :meth:`smoothing` gives what it gives, in a phrase (``sigma_reason_``)."""
        return "no smoothing: the noise is added to the trained weights, not to the steps"

    def release(self, settings, data, plan, series, partial, disjoint_batches=False):
        """Train on ``data``, add the noise, and report what was released.

        Parameters
        ----------
        settings : FitSettings
            The fit's hyperparameters (:class:`~._settings.FitSettings`).
        data : TrainingData
        plan : object or None
            What :meth:`plan_before_reading` returned.
        series : Series or None
            The fitted series this release continues (the estimator's state), or None.
        partial : bool
            A ``partial_fit`` call.
        disjoint_batches : bool, default=False
            The user's promise that this release's rows were in no earlier
            release of ``series``.

        Returns
        -------
        params : ndarray of shape (n_outputs, n_features + 1)
            The released weights, in the scale training uses.
        record : ReleaseRecord
        """
        raise NotImplementedError

    def claimed_epsilon(self, settings, model, n_rows):
        """The epsilon a private fit of these settings states.

        From ``model``'s public attributes, for the audit, whose own fits are
        seeded (``epsilon_ = inf``).
        """
        raise NotImplementedError


class Mechanism:
    """What every mechanism derives from its ``private`` and ``dp_event()``.

    Subclasses are frozen dataclasses with a ``seeded`` field and a
    ``neighboring`` attribute.
    """

    def epsilon(self, delta):
        """Epsilon of the release at ``delta`` (``inf`` when not private)."""
        if not self.private:
            return math.inf
        return event_epsilon(self.dp_event(), delta, self.neighboring)

    def seeded_copy(self):
        """The same mechanism run with a seed that travels with the model."""
        return dataclasses.replace(self, seeded=True)
