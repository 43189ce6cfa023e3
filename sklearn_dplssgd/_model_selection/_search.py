"""DPRandomizedSearch: hyperparameter search whose whole run is private.

Random search with a secret random number of trials (Liu and Talwar, "Private
selection from private candidates", STOC 2019; Papernot and Steinke,
"Hyperparameter tuning with Renyi differential privacy", ICLR 2022), accounted
by dp-accounting's ``RepeatAndSelectDpEvent``. The number of trials and every
trial but the best stay secret (not pickled). The privacy argument is in
docs/privacy_argument.rst (``private-search``).
"""

import math
import time
import warnings

import numpy as np
from joblib import Parallel, delayed
from sklearn.base import BaseEstimator, MetaEstimatorMixin, clone, is_classifier
from sklearn.model_selection import ParameterSampler
from sklearn.pipeline import Pipeline
from sklearn.utils import _safe_indexing
from sklearn.utils.metaestimators import available_if
from sklearn.utils.validation import check_is_fitted

from .._accounting import ledger_error, search_report
from .._backends import backend_for, dask_arrays
from .._linear_model import BaseDPLSSGD
from .._mechanisms import RandomSearchSelection
from .._training import (
    GeneratorWords, resolve_schedule, noise_schedule_blocks, number_of_steps, make_generator,
    random_state_error,
)
from .._utils import Interval, Options, PrivacyLeakWarning, public_row_count, validate_parameters
from ._dask_trials import check_dask_search_input, fit_trial_on_cluster
from ._search_steps import (
    frozen_private_steps, is_public_transformer, refuse_budget_spending_steps,
)

__all__ = ["DPRandomizedSearch", "final_estimator"]

# They change what a trial releases: every trial must run the same mechanism.
_MECHANISM_PARAMETERS = frozenset({
    "epsilon", "delta", "batch_size", "max_iter", "neighboring", "accountant",
    "public_n_samples", "reproducible", "ledger", "random_state", "noise_schedule",
    "mechanism",
})
# Means of a bounded per-row value.
_CLASSIFIER_SCORES = ("accuracy",)
_REGRESSOR_SCORES = ("neg_mean_absolute_error", "neg_mean_squared_error")


def _per_row_scores(scoring, y_true, y_pred, bound):
    """Per-row values of ``scoring``, each in an interval of width ``bound``."""
    if scoring == "accuracy":
        return (np.asarray(y_true) == np.asarray(y_pred)).astype(np.float64)
    error = np.abs(np.asarray(y_true, dtype=np.float64) - np.asarray(y_pred, dtype=np.float64))
    if scoring == "neg_mean_squared_error":
        error = error * error
    # Non-finite errors count as the worst score: the range stays bounded.
    return -np.minimum(np.nan_to_num(error, nan=bound, posinf=bound), bound)


def _lattice_scores(scoring, y_true, y_pred, bound):
    """Per-row scores on the lattice: ``round(score / bound * 2**K)``, at most ``2**K``."""
    bits = RandomSearchSelection.score_lattice_bits
    scaled = np.ldexp(_per_row_scores(scoring, y_true, y_pred, bound) / bound, bits)
    return np.clip(np.rint(scaled), -2.0 ** bits, 2.0 ** bits)


def final_estimator(estimator):
    """The DP-LSSGD estimator that ``estimator`` ends with, and its parameter prefix."""
    if isinstance(estimator, Pipeline):
        name, last = estimator.steps[-1]
        inner, prefix = final_estimator(last)
        return inner, f"{name}__{prefix}"
    if isinstance(estimator, BaseDPLSSGD):
        return estimator, ""
    raise TypeError(
        "DPRandomizedSearch needs a DPLSSGDClassifier, a DPLSSGDRegressor or a "
        f"Pipeline ending with one as its estimator; got {type(estimator).__name__}."
    )


def _fit_trial(estimator, X, y, train, validation, scoring, bound):
    """Fit one trial on its training rows; return the model and its score sum (lattice units)."""
    started = time.perf_counter()
    model = estimator.fit(_safe_indexing(X, train), _safe_indexing(y, train))
    total = 0.0
    if len(validation):
        predicted = model.predict(_safe_indexing(X, validation))
        total = float(np.sum(_lattice_scores(scoring, _safe_indexing(y, validation),
                                             predicted, bound)))
    return model, total, time.perf_counter() - started


class DPRandomizedSearch(MetaEstimatorMixin, BaseEstimator):
    """Private random search over hyperparameters, with one budget for the whole search.

    Runs a secret random number of trials (mean ``n_trials``). Each trial
    draws a candidate, fits a clone of ``estimator`` on a random part of the
    rows and scores it, with Gaussian noise, on the others; only the trial
    with the best noisy score is released. The whole search is (``epsilon``,
    ``delta``)-DP under the estimator's ``neighboring``, accounted by
    dp-accounting's ``RepeatAndSelectDpEvent`` (Papernot and Steinke 2022).

    Read more in the privacy guide's section on hyperparameter search.

    Parameters
    ----------
    estimator : DPLSSGDClassifier, DPLSSGDRegressor or Pipeline
        The model to tune, or a Pipeline ending with one. Its ``epsilon``,
        ``delta``, ``ledger`` and ``random_state`` are the search's; its
        ``batch_size``, ``max_iter``, ``neighboring`` and ``public_n_samples``
        fix the trials' mechanism. Steps that learn from the rows get a
        :class:`PrivacyLeakWarning` (use :class:`BoundedScaler`,
        ``FunctionTransformer``, ``OneHotEncoder`` with declared
        ``categories``). A step that spends budget when fitted (such as
        :class:`DPBoundedScaler`) is refused: fit it before the search and
        wrap it in ``sklearn.frozen.FrozenEstimator``.
    param_distributions : dict or list of dicts
        As in ``RandomizedSearchCV`` (with the Pipeline's ``step__``
        prefixes); every trial draws its candidate independently.
    epsilon : float, default=1.0
        Privacy budget of the whole search. ``float("inf")`` adds no noise.
    delta : float, default=1e-5
        Delta of the whole search.
    n_trials : float, default=10
        Mean of the random number of trials (>= 1).
    trials_shape : float, default=0.0
        Shape of the number of trials' distribution: 0 logarithmic (the
        cheapest), 1 geometric, ``inf`` Poisson (may run no trial: the fit
        then fails), other values a truncated negative binomial.
    scoring : str or None, default=None
        ``"accuracy"`` (classifiers, the default) or
        ``"neg_mean_absolute_error"`` (the regressors' default) /
        ``"neg_mean_squared_error"``.
    score_bound : float or None, default=None
        Public bound on a regressor's per-row (absolute or squared) error;
        None takes the width of ``target_bounds`` (or its square).
    validation_fraction : float, default=0.2
        Probability that a row is a validation row in a trial.
    score_budget : float, default=0.3
        Share of ``epsilon`` that the scores alone (repeated and selected)
        would cost; the training noise takes the search to ``epsilon``.
    n_jobs : int or None, default=None
        Trials run in parallel with joblib.
    random_state : None, int, Generator, RandomState or SeedSequence, default=None
        Used only with ``reproducible=True``, as in the estimators.
    reproducible : bool, default=False
        Derive every random choice from ``random_state`` (not private:
        ``epsilon_ = inf``).
    ledger : PrivacyLedger or None, default=None
        Charged once with ``dp_event_`` before any row is read. None uses the
        estimator's ``ledger``. The best model keeps it: a later
        ``partial_fit`` or warm start of it is charged there too.
    verbose : int, default=0
        Print one line per trial (parameters, noisy score, time) for the
        person holding the data: not covered by the guarantee, do not publish.

    Attributes
    ----------
    best_estimator_ : estimator
        The best trial's model (no refit on all rows). Its ``epsilon_``,
        ``delta_``, ``dp_event_`` and ``ledger`` are the search's.
    best_params_ : dict
        The best trial's candidate.
    best_score_ : float
        The best trial's noisy validation score (the noisy sum of per-row
        scores over the expected number of validation rows).
    trials_ : list of dict
        Each trial's ``params``, noisy ``score`` and ``fit_time``: not
        covered by ``epsilon_``, never pickled.
    n_trials_ : int
        The number of trials run (like ``trials_``, never pickled).
    dp_event_ : dp_accounting.DpEvent
        ``RepeatAndSelectDpEvent(ComposedDpEvent([trial training, score
        Gaussian]), n_trials, trials_shape)``.
    epsilon_ : float
        Epsilon of the whole search at ``delta_`` (RDP accountant).
    delta_ : float
    neighboring_ : str
    noise_multiplier_ : float
        The trials' training noise multiplier.
    score_noise_multiplier_ : float
        Noise standard deviation on a validation score sum, in units of the
        per-row score range.
    classes_ : ndarray
        The best estimator's classes (classifiers).
    n_features_in_ : int
    feature_names_in_ : ndarray
        Where the training data has column names.

    Notes
    -----
    The guarantee covers the fitted search as pickled. The number of trials
    must stay secret: do not publish the fit's duration, which grows with it.

    Examples
    --------
    >>> from sklearn.datasets import load_breast_cancer
    >>> from sklearn_dplssgd import BoundedScaler, DPLSSGDClassifier, DPRandomizedSearch
    >>> from sklearn.pipeline import make_pipeline
    >>> X, y = load_breast_cancer(return_X_y=True)
    >>> model = make_pipeline(BoundedScaler(lower=0, upper=X.max(axis=0).round(-1) + 10),
    ...                       DPLSSGDClassifier(max_iter=20))
    >>> search = DPRandomizedSearch(model, {"dplssgdclassifier__eta0": [0.1, 0.3, 1.0]},
    ...                             epsilon=2.0).fit(X, y)
    >>> sorted(search.best_params_)
    ['dplssgdclassifier__eta0']
    """

    _parameter_constraints = {
        "epsilon": [Interval("real", 0, None, closed="neither")],
        "delta": [Interval("real", 0, 1, closed="neither")],
        "n_trials": [Interval("real", 1, None, closed="left")],
        "trials_shape": [Interval("real", 0, None, closed="left")],
        "scoring": [Options(str, _CLASSIFIER_SCORES + _REGRESSOR_SCORES), None],
        "score_bound": [Interval("real", 0, None, closed="neither"), None],
        "validation_fraction": [Interval("real", 0, 1, closed="neither")],
        "score_budget": [Interval("real", 0, 1, closed="neither")],
        "n_jobs": [Interval("integral", None, None), None],
        "random_state": [random_state_error],
        "reproducible": [Options(bool, (True, False))],
        "ledger": [ledger_error],
        "verbose": [Interval("integral", 0, None)],
    }

    def __init__(self, estimator, param_distributions, *, epsilon=1.0, delta=1e-5, n_trials=10,
                 trials_shape=0.0, scoring=None, score_bound=None, validation_fraction=0.2,
                 score_budget=0.3, n_jobs=None, random_state=None, reproducible=False,
                 ledger=None, verbose=0):
        self.estimator = estimator
        self.param_distributions = param_distributions
        self.epsilon = epsilon
        self.delta = delta
        self.n_trials = n_trials
        self.trials_shape = trials_shape
        self.scoring = scoring
        self.score_bound = score_bound
        self.validation_fraction = validation_fraction
        self.score_budget = score_budget
        self.n_jobs = n_jobs
        self.random_state = random_state
        self.reproducible = reproducible
        self.ledger = ledger
        self.verbose = verbose

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        inner = self.estimator.__sklearn_tags__()
        for name in ("estimator_type", "classifier_tags", "regressor_tags", "input_tags",
                     "target_tags"):
            setattr(tags, name, getattr(inner, name))
        return tags

    def __getstate__(self):
        # The number of trials and the other trials' scores stay with the
        # person holding the data (see the class Notes).
        state = super().__getstate__()
        state.pop("trials_", None)
        state.pop("n_trials_", None)
        return state

    def _check_search_space(self, prefix):
        spaces = self.param_distributions
        spaces = [spaces] if isinstance(spaces, dict) else list(spaces)
        if not spaces or not all(isinstance(space, dict) and space for space in spaces):
            raise ValueError(
                "param_distributions must be a non-empty dict, or a list of such dicts, "
                "mapping parameter names to lists or scipy distributions."
            )
        valid = self.estimator.get_params(deep=True)
        for name, values in ((n, v) for space in spaces for n, v in space.items()):
            if name not in valid:
                raise ValueError(
                    f"param_distributions names {name!r}, which is not a parameter of "
                    f"{type(self.estimator).__name__} (valid: {', '.join(sorted(valid))})."
                )
            # A nested setting (noise_schedule__final_ratio) belongs to its parameter.
            if name.startswith(prefix) and name[len(prefix):].split("__")[0] in (
                    _MECHANISM_PARAMETERS):
                raise ValueError(
                    f"param_distributions cannot search {name!r}: it changes what a "
                    "trial releases (its sample rate, steps, noise or accounting), and "
                    "every trial must run the same mechanism. Fix it on the estimator."
                )
            if not (hasattr(values, "rvs") or (
                    isinstance(values, (list, tuple, np.ndarray)) and len(values))):
                raise ValueError(
                    f"param_distributions[{name!r}] must be a non-empty list or a "
                    "scipy distribution (an object with rvs)."
                )
        return spaces

    def _scoring(self, final):
        """The score, and the width of its per-row range (the sensitivity)."""
        classifier = is_classifier(final)
        allowed = _CLASSIFIER_SCORES if classifier else _REGRESSOR_SCORES
        scoring = self.scoring if self.scoring is not None else allowed[0]
        if scoring not in allowed:
            raise ValueError(
                f"scoring={scoring!r} does not apply to {type(final).__name__}: use one "
                f"of {', '.join(map(repr, allowed))} (means of a bounded per-row value, "
                "so that the noise can be calibrated)."
            )
        if classifier:
            return scoring, 1.0
        if self.score_bound is not None:
            return scoring, float(self.score_bound)
        bounds = getattr(final, "target_bounds", None)
        if bounds is None:
            raise ValueError(
                f"scoring={scoring!r} needs a public bound on the per-row error: give "
                "score_bound=..., or target_bounds=(low, high) to the regressor."
            )
        width = float(bounds[1]) - float(bounds[0])
        return scoring, width * width if scoring == "neg_mean_squared_error" else width

    def _refuse_private_steps(self, final, prefix, spaces):
        """Refuse steps that would spend budget in every trial (see _search_steps).

        Every listed candidate is checked, drawn or not: the refusal must not
        depend on the secret draws.
        """
        refuse_budget_spending_steps(self.estimator, final, "the searched estimator")
        final_path = prefix[:-2] if prefix else None
        for name, values in ((n, v) for space in spaces for n, v in space.items()):
            if hasattr(values, "rvs"):
                continue  # checked on each drawn candidate, before any charge
            for value in filter(lambda v: hasattr(v, "get_params"), values):
                accounted = None
                if final_path is not None and (final_path + "__").startswith(name + "__"):
                    # A candidate for the final estimator, or a Pipeline ending with it.
                    try:
                        accounted, _ = final_estimator(value)
                    except TypeError:
                        pass
                refuse_budget_spending_steps(value, accounted, f"the candidates of {name!r}")

    def _warn_about_preprocessing(self):
        steps = self.estimator.steps[:-1] if isinstance(self.estimator, Pipeline) else []
        for name, step in steps:
            if not is_public_transformer(step):
                warnings.warn(
                    f"Pipeline step {name!r} ({type(step).__name__}) may learn from the "
                    "private rows without noise (e.g. a mean, a scale or a category "
                    "list), and the best model keeps what it learnt: that is not covered "
                    "by epsilon_. Use BoundedScaler, or encoders with declared "
                    "categories.", PrivacyLeakWarning, stacklevel=4)

    def _checked_setup(self):
        """The final estimator, search spaces and score, checked before any row is read."""
        validate_parameters(self)
        final, prefix = final_estimator(self.estimator)
        if not final._release_mechanism().searchable:
            raise ValueError(
                f"DPRandomizedSearch calibrates gradient perturbation trials; "
                f"mechanism={final.mechanism!r} cannot be searched with it.")
        spaces = self._check_search_space(prefix)
        scoring, score_range = self._scoring(final)
        self._refuse_private_steps(final, prefix, spaces)
        self._warn_about_preprocessing()
        return final, spaces, scoring, score_range

    def _rows(self, X, y):
        """``X``, ``y`` (as Dask arrays on a cluster), their public row count, on_cluster."""
        on_cluster = backend_for(X).rows_are_remote or backend_for(y).rows_are_remote
        if on_cluster:
            # Refused before the charge where the cluster cannot run the trials.
            check_dask_search_input(self.estimator, self.n_jobs)
            X, y, _, _ = dask_arrays(X, y, None)
        n_rows = public_row_count(X)
        if n_rows is None:
            raise TypeError("X must be an array-like with a shape (rows first).")
        if public_row_count(y) != n_rows:
            raise ValueError(
                f"X and y have different numbers of rows ({n_rows} and "
                f"{public_row_count(y)})."
            )
        return X, y, n_rows, on_cluster

    def _plan(self, n_rows, final):
        """The search's mechanism and the trials' public row counts, before any row is read."""
        # The estimator's rule: n under replace-one, public_n_samples under add/remove.
        n_public = final._accounted_n_samples(n_rows)
        n_train = max(1, int(round(n_public * (1.0 - self.validation_fraction))))
        n_validation = max(1, n_public - n_train)
        batch_size, max_iter = resolve_schedule(final.batch_size, final.max_iter, n_train)
        n_steps = number_of_steps(n_train, batch_size, max_iter)
        mechanism = RandomSearchSelection.calibrated(
            float(self.epsilon), float(self.delta), sample_rate=min(1.0, batch_size / n_train),
            n_steps=n_steps, neighboring=final.neighboring, clip_norm=float(final.clip_norm),
            mean_trials=float(self.n_trials), trials_shape=float(self.trials_shape),
            score_share=float(self.score_budget),
            noise_schedule=noise_schedule_blocks(final.noise_schedule, n_steps, max_iter))
        return mechanism, n_train, n_validation

    def _generator(self, mechanism):
        """The search's generator, whether it is seeded, and the mechanism as seeded or not."""
        rng, seeded = make_generator(self.random_state, self.reproducible)
        if seeded:
            warnings.warn(
                "reproducible=True: the search's trials, splits and noise are a function "
                "of random_state, which travels with it. It is not private and reports "
                "epsilon_=inf.", PrivacyLeakWarning, stacklevel=3)
            return rng, seeded, mechanism.seeded_copy()
        if self.random_state is not None:
            warnings.warn(
                "random_state is not used unless reproducible=True: the number of "
                "trials, the candidates, the splits and the noise must stay secret.",
                UserWarning, stacklevel=3)
        return rng, seeded, mechanism

    def _draw_trial(self, rng, seeded, spaces, mechanism, n_rows, n_train):
        """One trial, set up from secret draws: ``(model, params, train rows, validation rows)``."""
        # ParameterSampler wants a RandomState: one per trial from 63 secret bits
        # (independent candidates, as the accounting assumes).
        sampler_state = np.random.RandomState(np.random.MT19937(int(rng.integers(2**63))))
        space = spaces[int(rng.integers(len(spaces)))]
        params = next(iter(ParameterSampler(space, n_iter=1, random_state=sampler_state)))
        in_training = rng.random(n_rows) >= self.validation_fraction
        model = clone(self.estimator).set_params(**params)
        trial_final, _ = final_estimator(model)
        # A candidate drawn from a distribution may hold a private step.
        refuse_budget_spending_steps(model, trial_final, f"the candidate {params}")
        trial_final.set_params(
            epsilon=self.epsilon, delta=self.delta, ledger=None,
            public_n_samples=n_train, reproducible=seeded,
            random_state=int(rng.integers(2**63)) if seeded else None,
        )
        trial_final._fixed_mechanism = mechanism.trial  # the search's calibration
        return model, params, np.flatnonzero(in_training), np.flatnonzero(~in_training)

    def _fit_trials(self, trials, X, y, on_cluster, scoring, score_range):
        """``(model, score sum, fit time)`` of each trial, on the cluster or with joblib."""
        if on_cluster:
            return [fit_trial_on_cluster(model, X, y, train, validation, scoring,
                                         score_range, _lattice_scores)
                    for model, _, train, validation in trials]
        return Parallel(n_jobs=self.n_jobs)(
            delayed(_fit_trial)(model, X, y, train, validation, scoring, score_range)
            for model, _, train, validation in trials
        )

    def _select(self, trials, fitted, mechanism, score_range, n_validation, words):
        """The best trial by noisy score: ``(model, params, score)``; sets ``trials_``."""
        self.trials_ = []
        best, best_params, best_score = None, None, -math.inf
        for (_, params, _, _), (model, total, fit_time) in zip(trials, fitted):
            score = mechanism.noisy_score(total, score_range, n_validation, words)
            self.trials_.append({"params": params, "score": score, "fit_time": fit_time})
            if self.verbose:
                print(f"[DPRandomizedSearch] trial {len(self.trials_)}: {params} "
                      f"noisy score {score:.4f} ({fit_time:.2f} s)")
            if score > best_score or best is None:
                best, best_params, best_score = model, params, score
        return best, best_params, best_score

    def _release(self, mechanism, final, ledger, best, best_params, best_score):
        """Set the fitted attributes; the best model carries the whole search's guarantee."""
        self.dp_event_ = mechanism.dp_event()
        self.epsilon_ = mechanism.epsilon(self.delta)
        self.delta_ = float(self.delta)
        self.neighboring_ = final.neighboring
        self.noise_multiplier_ = mechanism.trial.noise_multiplier
        self.score_noise_multiplier_ = mechanism.score_noise_multiplier
        best_final, _ = final_estimator(best)
        best_final.__dict__.pop("_fixed_mechanism", None)
        best_final.epsilon_ = self.epsilon_
        best_final.delta_ = self.delta_
        best_final.dp_event_ = self.dp_event_
        # Continuing the model (partial_fit, warm start) composes with the
        # search and is charged to its ledger: uncounted otherwise.
        best_final.dp_events_ = [self.dp_event_]
        best_final.ledger = ledger
        self.best_estimator_ = best
        self.best_params_ = best_params
        self.best_score_ = float(best_score)
        for attribute in ("classes_", "n_features_in_", "feature_names_in_"):
            if hasattr(best, attribute):
                setattr(self, attribute, getattr(best, attribute))

    def privacy_report(self):
        """What the search's privacy guarantee means, in plain words.

        Returns
        -------
        report : str
        """
        check_is_fitted(self)
        return search_report(self, [path for path, _ in frozen_private_steps(
            self.best_estimator_)])

    def fit(self, X, y):
        """Run the private search on ``(X, y)``.

        Parameters
        ----------
        X : array-like, DataFrame, or Dask array or DataFrame of shape (n_samples, n_features)
            On Dask input every trial trains and is scored on the cluster
            (only its score sum comes back); the estimator must then be a
            DP-LSSGD estimator, not a Pipeline, and ``n_jobs`` None or 1.
        y : array-like of shape (n_samples,)

        Returns
        -------
        self : DPRandomizedSearch
        """
        final, spaces, scoring, score_range = self._checked_setup()
        ledger = self.ledger if self.ledger is not None else final.ledger
        X, y, n_rows, on_cluster = self._rows(X, y)
        # Everything released is fixed, and charged, before a row is read.
        mechanism, n_train, n_validation = self._plan(n_rows, final)
        rng, seeded, mechanism = self._generator(mechanism)
        n_trials = mechanism.number_of_trials(rng)
        trials = [self._draw_trial(rng, seeded, spaces, mechanism, n_rows, n_train)
                  for _ in range(n_trials)]
        # Charged after the trials' setup (which reads no row and may refuse a candidate).
        if ledger is not None:
            ledger.charge(type(self).__name__, mechanism.dp_event(), final.neighboring)
        if n_trials == 0:
            raise RuntimeError(
                "The Poisson number of trials came out 0 (probability "
                f"exp(-{self.n_trials:g})): the search released nothing, and spent its "
                "budget. Fit again (a new budget), or use trials_shape < inf.")
        fitted = self._fit_trials(trials, X, y, on_cluster, scoring, score_range)
        best, best_params, best_score = self._select(
            trials, fitted, mechanism, score_range, n_validation, GeneratorWords(rng))
        self.n_trials_ = n_trials
        self._release(mechanism, final, ledger, best, best_params, best_score)
        return self

    def _best_has(name):
        def check(self):
            check_is_fitted(self, "best_estimator_")
            return hasattr(self.best_estimator_, name)
        return check

    @available_if(_best_has("predict"))
    def predict(self, X):
        """Predict with the best model."""
        return self.best_estimator_.predict(X)

    @available_if(_best_has("predict_proba"))
    def predict_proba(self, X):
        """Class probabilities from the best model."""
        return self.best_estimator_.predict_proba(X)

    @available_if(_best_has("predict_log_proba"))
    def predict_log_proba(self, X):
        """Log class probabilities from the best model."""
        return self.best_estimator_.predict_log_proba(X)

    @available_if(_best_has("decision_function"))
    def decision_function(self, X):
        """Decision values of the best model."""
        return self.best_estimator_.decision_function(X)

    def score(self, X, y, sample_weight=None):
        """The best model's ``score`` (on data you choose, e.g. public test rows)."""
        check_is_fitted(self, "best_estimator_")
        return self.best_estimator_.score(X, y, sample_weight=sample_weight)
