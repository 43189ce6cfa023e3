"""Shared base of the DP-LSSGD estimators: parameters, validation, fit glue."""

import math
import os

import numpy as np
import scipy.sparse as sp
from sklearn.base import BaseEstimator
from sklearn.utils.validation import check_is_fitted, validate_data

from .._accounting import (
    ACCOUNTANTS, NEIGHBORING_RELATIONS, ledger_error, estimator_report, remaining_budget_error,
    REMAINING_BUDGET,
)
from .._backends import (
    array_api_namespace, check_fitted_namespace, decision_values, backend_for,
)
from .._mechanisms import (
    MECHANISMS, FitSettings, TrainingData, mechanism_error, mechanism_named, spends_privacy,
)
from .._training import (
    AUTO, ORDERED, optimizer_error, random_state_error, check_noise_schedule, LEARNING_RATES,
    Series,
)
from .._utils import (
    Interval, Options, public_row_count, validate_hiding_values,
    validate_parameters,
)
from ._feature_bounds import (
    check_feature_bounds, check_feature_bounds_form, check_same_feature_map, feature_map,
)

__all__ = ["BaseDPLSSGD", "DEFAULT_MECHANISM"]

DEFAULT_MECHANISM = "gradient"


def _check_noise_schedule(value):
    """The ``noise_schedule`` constraint: a message, or None when valid."""
    try:
        check_noise_schedule(value)
    except ValueError as error:
        return "is invalid: " + str(error)
    return None


class BaseDPLSSGD(BaseEstimator):
    """Base of the DP-LSSGD estimators (not for direct use)."""

    _parameter_constraints = {
        "epsilon": [Interval("real", 0, math.inf, closed="right"),
                    Options(str, (REMAINING_BUDGET,))],
        "delta": [Interval("real", 0, 1, closed="neither"), Options(str, (AUTO,))],
        # Beyond about 1e12 the smoothing is already a projection onto the
        # mean of the coefficients, and past about 1e16 the O(d) solve loses
        # accuracy (1 - omega, about sigma^-1/2, nears float64 rounding).
        "sigma": [Interval("real", 0, 1e12, closed="both"), Options(str, (AUTO, ORDERED))],
        "clip_norm": [Interval("real", 0, None, closed="neither")],
        "mechanism": [mechanism_error],
        "max_sample_weight": [Interval("real", 0, None, closed="neither")],
        "alpha": [Interval("real", 0, None, closed="left")],
        "fit_intercept": [Options(bool, (True, False))],
        "feature_bounds": [None, check_feature_bounds_form],
        "batch_size": [Interval("integral", 1, None), Options(str, (AUTO,))],
        "max_iter": [Interval("integral", 1, None), Options(str, (AUTO,))],
        "learning_rate": [Options(str, LEARNING_RATES)],
        "eta0": [Interval("real", 0, None, closed="neither"), Options(str, (AUTO,))],
        "power_t": [Interval("real", 0, None, closed="left")],
        "average": [Options(bool, (True, False)), Interval("integral", 1, None),
                    Options(str, (AUTO,))],
        "optimizer": [optimizer_error],
        "noise_schedule": [_check_noise_schedule],
        "warm_start": [Options(bool, (True, False))],
        "accountant": [Options(str, ACCOUNTANTS)],
        "neighboring": [Options(str, NEIGHBORING_RELATIONS)],
        "public_n_samples": [Interval("integral", 1, None), None],
        "random_state": [random_state_error],
        "reproducible": [Options(bool, (True, False))],
        "ledger": [ledger_error],
        "n_jobs": [Interval("integral", None, None), None],
        "verbose": [Interval("integral", 0, None)],
    }

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        # An invalid name (refused by fit) answers as the default mechanism;
        # declared feature_bounds map dense NumPy rows only.
        mechanism = mechanism_named(self.mechanism, default=MECHANISMS[DEFAULT_MECHANISM])
        declared = self.feature_bounds is not None
        tags.input_tags.sparse = mechanism.accepts_sparse and not declared
        tags.array_api_support = mechanism.accepts_array_api and not declared
        tags.non_deterministic = not self.reproducible
        return tags

    def _validate_hyperparameters(self):
        """Check the hyperparameters; return the fit's :class:`FitSettings` they make."""
        validate_parameters(self)
        for name in ("sigma", "clip_norm", "max_sample_weight", "eta0", "alpha"):
            if getattr(self, name) not in (AUTO, ORDERED, None) and not math.isfinite(
                    getattr(self, name)):
                raise ValueError(
                    f"The {name!r} parameter of {type(self).__name__} must be finite; "
                    f"got {getattr(self, name)!r}."
                )
        if not math.isfinite(self.max_sample_weight * self.clip_norm):
            raise ValueError(
                "max_sample_weight * clip_norm (the sensitivity the noise is "
                "calibrated to) must be finite; use smaller values."
            )
        if self.eta0 != AUTO and self.eta0 * self.alpha >= 2.0:
            # The decay factor 1 - eta * alpha would have modulus >= 1.
            raise ValueError(
                f"eta0 * alpha = {self.eta0 * self.alpha:g} must be below 2, or the "
                "L2 penalty makes the iteration diverge: use a smaller learning rate "
                "(eta0) or a smaller alpha."
            )
        if self.n_jobs == 0:
            raise ValueError(
                "The 'n_jobs' parameter must not be 0 (use None, -1 or a positive int)."
            )
        if self.epsilon == REMAINING_BUDGET:
            self._check_remaining_budget()
        check_feature_bounds(self)
        settings = self._fit_settings()
        self._release_mechanism().check_settings(settings)
        return settings

    def _check_remaining_budget(self):
        """``epsilon="remaining"`` needs a capped ledger and a mechanism that can spend it."""
        problem = remaining_budget_error(self.ledger)
        if problem is not None:
            raise ValueError(f"The 'epsilon' parameter of {type(self).__name__}: {problem}")
        if not self._release_mechanism().spends_remaining_budget:
            raise ValueError(
                f"epsilon='remaining' is available with mechanism='gradient' only; "
                f"mechanism={self.mechanism!r} needs a number (use "
                "ledger.max_epsilon - ledger.epsilon() as a conservative one).")

    def _spends_privacy(self):
        """Whether the fit is meant to be private (finite epsilon, or the ledger's remainder)."""
        return spends_privacy(self.epsilon)

    def _accounted_n_samples(self, n_samples):
        """The row count that sets q and T (see :meth:`FitSettings.accounted_n_samples`)."""
        return self._fit_settings().accounted_n_samples(n_samples)

    def _fit_settings(self):
        """The frozen :class:`FitSettings` every call of the mechanism reads."""
        return FitSettings(
            type(self).__name__, self.get_params(deep=False), n_threads=self._n_threads(),
            auto_sigma_levels=self._auto_sigma_levels,
            step_reference_sigma=self._step_reference_sigma,
            average_tail=self._average_tail,
            learns_target_range=self.__dict__.get("_learns_target_range", False),
            fixed_mechanism=self.__dict__.get("_fixed_mechanism"))

    def _n_threads(self):
        if self.n_jobs is None:
            return 1
        n_cores = os.cpu_count() or 1
        return n_cores if self.n_jobs < 0 else min(self.n_jobs, n_cores)

    # Subclasses set these. sigma="auto" on ordered input, as (min_features, sigma) pairs:
    _auto_sigma_levels = ((1, 1.0),)
    # The sigma eta0="auto" was measured with (None: measured per width level):
    _step_reference_sigma = 1.0

    def _average_tail(self, n_features):
        """The share of the steps ``average="auto"`` averages: a half, as a curved loss settles."""
        return 0.5

    def _targets(self, classes=None, target_range=None):
        """How this fit encodes its targets and weighs its rows (see :mod:`._targets`).

        ``classes`` is a ``partial_fit`` call's label set; ``target_range`` the
        mechanism's planned release of a regressor's target range, if any.
        """
        raise NotImplementedError

    def _initial_params(self, coef, intercept, n_outputs, n_features):
        """``[coef, intercept]`` as one ``(n_outputs, n_features + 1)`` float64 array."""
        try:
            coef = np.zeros((n_outputs, n_features)) if coef is None else np.array(
                coef, dtype=np.float64)
            intercept = np.zeros(n_outputs) if intercept is None else np.array(
                intercept, dtype=np.float64).reshape(-1)
        except (TypeError, ValueError):
            raise TypeError("coef_init and intercept_init must be arrays of numbers.") from None
        if coef.shape != (n_outputs, n_features) and not (
                n_outputs == 1 and coef.shape == (n_features,)):
            raise ValueError(
                f"coef_init has shape {coef.shape}; this model's coefficients have shape "
                f"{(n_outputs, n_features)}."
            )
        coef = coef.reshape(n_outputs, n_features)
        if intercept.shape != (n_outputs,):
            raise ValueError(
                f"intercept_init has {intercept.size} values; this model has {n_outputs}."
            )
        params = np.column_stack([coef, intercept])
        if not np.isfinite(params).all():
            raise ValueError("coef_init and intercept_init must be finite.")
        return params

    def _to_training_scale(self, params):
        """Weights given in the rows' units, in the scale training uses."""
        mapping = feature_map(self, n_features=params.shape[1] - 1)
        return params if mapping is None else mapping.to_mapped(params)

    def _start_params(self, series, coef_init, intercept_init, n_outputs, n_features):
        """Where training starts: the series' weights, the user's, or None (zeros)."""
        if series is not None:
            return series.params
        if coef_init is None and intercept_init is None:
            return None
        if intercept_init is not None and not self.fit_intercept:
            raise ValueError("intercept_init is only used with fit_intercept=True.")
        params = self._to_training_scale(
            self._initial_params(coef_init, intercept_init, n_outputs, n_features))
        if not self.fit_intercept:
            params[:, -1] = 0.0  # the kernels' invariant: no intercept, a zero column
        return params

    def _continued_series(self, settings, partial, coef_init, intercept_init):
        """The :class:`Series` this release continues (partial_fit, warm_start), or None."""
        fitted = "dp_events_" in self.__dict__
        if not fitted or not (partial or (self.warm_start and coef_init is None
                                          and intercept_init is None)):
            return None
        if self.neighboring != self.neighboring_:
            # Epsilons under different adjacencies do not compose.
            raise ValueError(
                f"The fitted releases were accounted under neighboring="
                f"{self.neighboring_!r}, this one would be under "
                f"{self.neighboring!r}: they do not compose. Restore neighboring, or "
                "fit from scratch (warm_start=False)."
            )
        params = self._to_training_scale(self._initial_params(
            self.coef_, self.intercept_, len(self.intercept_), self.n_features_in_))
        trajectory = self.__dict__.get("_series_trajectory")
        average, weight = None, 0.0
        if trajectory is not None and settings.averages_series(partial):
            # Continue from the last iterate; the published weights are the mean.
            params, average = trajectory, params
            weight = float(self.__dict__.get("_series_weight", 0.0))
        return Series(tuple(self.dp_events_), self.delta_, self.eta0_, self.t_, params,
                      self.__dict__.get("classes_"),
                      tuple(self.__dict__.get("disjoint_batches_",
                                              [False] * len(self.dp_events_))),
                      average=average, average_weight=weight)

    def _fit(self, X, y, sample_weight=None, *, partial=False, classes=None, coef_init=None,
             intercept_init=None, disjoint_batches=False):
        """Validate, have the mechanism release, set the common attributes; return params.

        The inputs are those of ``fit`` and ``partial_fit`` (never modified);
        ``params`` is ``(n_outputs, n_features + 1)`` in the rows' units.
        """
        settings = self._validate_hyperparameters()
        if not isinstance(disjoint_batches, (bool, np.bool_)):
            raise TypeError(
                f"disjoint_batches must be True or False; got {disjoint_batches!r}.")
        mechanism = self._release_mechanism()
        # Only X's metadata is read until the ledger is charged.
        backend = backend_for(X)
        X, y, sample_weight, network = backend.arrays(mechanism, X, y, sample_weight)
        namespace = backend.namespace
        feature_map(self, X, namespace=namespace)
        continued = partial or coef_init is not None or intercept_init is not None or (
            self.warm_start and "dp_events_" in self.__dict__)
        mechanism.check_release(settings, X, namespace=namespace, sparse=sp.issparse(X),
                                continued=continued)
        series = self._continued_series(settings, partial, coef_init, intercept_init)
        if series is not None and "_feature_map" in self.__dict__:
            check_same_feature_map(self._feature_map, feature_map(
                self, n_features=self.n_features_in_))
        # Public quantities only: fixed, and charged to the ledger, before any row is read.
        plan = mechanism.plan_before_reading(settings, public_row_count(X), series, partial)
        # Under add/remove the empty data set trains (noise only), or one row
        # would decide whether a model is released.
        min_rows = 0 if mechanism.row_count_is_private(settings) else 1
        targets = self._targets(classes, mechanism.target_range(plan))
        X, y_encoded, n_outputs, weights = backend.training_rows(
            self, targets, X, y, sample_weight, reset=series is None, min_rows=min_rows,
            n_threads=settings.n_threads)
        for name, value in targets.fitted_attributes().items():
            setattr(self, name, value)
        self._check_series_classes(series)
        mapping = feature_map(self, n_features=X.shape[1])
        if mapping is not None:
            X = backend.map_rows(mapping.rows, X)
        # (An array API fit has no starting point: check_release refuses one.)
        start = self._start_params(
            series, coef_init, intercept_init, n_outputs, X.shape[1])
        data = TrainingData(X, y_encoded, n_outputs, weights, namespace,
                            start_params=start,
                            feature_names=getattr(self, "feature_names_in_", None))
        params, record = mechanism.release(settings, data, plan, series, partial,
                                           bool(disjoint_batches))
        for name, value in record.fitted_attributes().items():
            setattr(self, name, value)
        # The map the series continues in (a later call must use the same).
        self._feature_map = mapping
        # For the report: a series keeps its releases' weakest network assumption.
        earlier = self.__dict__.get("_cluster_network") if series is not None else None
        self._cluster_network = network if earlier is None or network == "declared" else earlier
        return params if mapping is None else mapping.to_original(params)

    def _check_series_classes(self, series):
        """A continued series keeps its label set (``classes_`` restored on refusal)."""
        if series is not None and series.classes is not None and not np.array_equal(
                series.classes, self.classes_):
            self.classes_ = series.classes
            raise ValueError(
                "This release's label set differs from the fitted classes_: a warm start "
                "continues the same model. Declare classes=..., or fit from scratch "
                "(warm_start=False).")

    def _release_mechanism(self):
        """The mechanism object ``self.mechanism`` names (see ``_mechanisms``)."""
        return mechanism_named(self.mechanism)

    def _can_stream(self):
        """Whether ``partial_fit`` exists: where the mechanism can continue a release."""
        mechanism = mechanism_named(self.mechanism, default=MECHANISMS[DEFAULT_MECHANISM])
        if not mechanism.supports_partial_fit:
            raise AttributeError(mechanism.partial_fit_refusal)
        return True

    def privacy_report(self):
        """What this fitted model's privacy guarantee means, in plain words.

        The unit protected, the epsilon and delta spent, what was treated as
        public, the noise used, and what the guarantee does not cover. See
        :ref:`privacy-report`.

        Returns
        -------
        report : str
        """
        check_is_fitted(self)
        return estimator_report(
            self, releases_integers=self._release_mechanism().releases_integers)

    def _on_rows(self, method, X):
        """The in-memory prediction ``method`` applied to ``X`` where its rows are."""
        return backend_for(X).predict_rows(self, method, X)

    def _score_on_rows(self, score, metric, X, y, sample_weight):
        """``score(X, y, sample_weight)`` (in memory) where the rows are: one float."""
        return backend_for(X).score_rows(score, metric, self, X, y, sample_weight)

    def _decision_values(self, X, method="predict"):
        """Margins ``X coef_^T + intercept_`` (shape (n, K)); ``method`` names the caller."""
        check_is_fitted(self)
        check_fitted_namespace(self, X, method)
        namespace = array_api_namespace(X)
        if namespace is not None:
            X = validate_hiding_values(
                {"X": X}, validate_data, self, X, accept_sparse=False,
                dtype=[namespace[0].float64, namespace[0].float32], reset=False)
            return decision_values(namespace[0], X, self.coef_, self.intercept_)
        X = validate_hiding_values(
            {"X": X}, validate_data, self, X, accept_sparse=("csr", "csc"),
            dtype=[np.float64, np.float32], reset=False,
        )
        coef = np.atleast_2d(self.coef_)
        with np.errstate(over="ignore", invalid="ignore"):
            margins = X @ coef.T.astype(X.dtype, copy=False) + self.intercept_.astype(
                X.dtype, copy=False)
        overflowed = ~np.isfinite(margins).all(axis=1)
        if overflowed.any():
            # Recompute overflowing float32 rows in float64, saturated at the
            # dtype's range (float64 may overflow too: saturated, no warning).
            with np.errstate(over="ignore", invalid="ignore"):
                exact = X[overflowed].astype(np.float64) @ coef.T.astype(np.float64) + (
                    self.intercept_.astype(np.float64))
            limit = np.finfo(X.dtype).max
            margins[overflowed] = np.clip(exact, -limit, limit)
        return margins
