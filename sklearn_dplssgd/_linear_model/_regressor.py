"""DPLSSGDRegressor: differentially private linear regression."""

import math

from sklearn.base import RegressorMixin
from sklearn.utils.metaestimators import available_if

from .._accounting import TARGET_RANGE_SHARE
from .._backends import backend_for, copy_params
from .._mechanisms import mechanism_named
from ._base import BaseDPLSSGD
from ._docstrings import fill_method_docs, fill_parameter_docs
from ._targets import RangeTargets, range_scale
from .._training import REGRESSION_LOSSES, make_generator
from .._utils import Interval, Options, score_hiding_values

__all__ = ["DPLSSGDRegressor", "TARGET_RANGE_SHARE"]


def _check_target_bounds(value):
    try:
        low, high = (float(bound) for bound in value)
    except (TypeError, ValueError):
        return f"must be None or a pair (low, high) of numbers; got {value!r}."
    if not (math.isfinite(low) and math.isfinite(high) and low < high):
        return f"must be a pair of finite numbers with low < high; got {value!r}."
    return None


@fill_parameter_docs(learning_rate='"constant"')
class DPLSSGDRegressor(RegressorMixin, BaseDPLSSGD):
    """Linear regression trained with (epsilon, delta)-differential privacy.

    DP-LSSGD (Wang et al.), as :class:`DPLSSGDClassifier`; see :doc:`the
    user guide </user_guide/getting_started>`.

    Parameters
    ----------
    loss : {{"squared_error", "huber", "epsilon_insensitive"}}, default="squared_error"
        ``squared_error`` is least squares; ``huber`` is quadratic within
        ``loss_threshold`` of the target and linear beyond;
        ``epsilon_insensitive`` ignores errors smaller than ``loss_threshold``
        (linear support vector regression).

    loss_threshold : float, default=0.1
        Threshold of ``huber`` and ``epsilon_insensitive`` (what
        scikit-learn's ``SGDRegressor`` calls ``epsilon``; here ``epsilon``
        is the privacy budget). Unused by ``squared_error``.

    target_bounds : tuple (low, high) or None, default=None
        Public bounds of the target: targets are clipped to ``[low, high]``
        and mapped to ``[-1, 1]`` for training (``loss_threshold`` applies on
        that scale), at no privacy cost. None: the fit first learns the range
        privately with a 0.35 share of ``epsilon`` (``epsilon_`` covers
        both), which a trial of :class:`DPRandomizedSearch` and Dask input
        cannot; ``mechanism="output"`` trains on ``y`` as given. See
        :ref:`regression-targets`.

    {privacy_parameters}

    {training_parameters}

    {accounting_parameters}

    Attributes
    ----------
    coef_ : ndarray of shape (n_features,)
        Coefficients.

    intercept_ : ndarray of shape (1,)
        Intercept (zero when ``fit_intercept=False``).

    target_bounds_ : tuple of float (low, high)
        The target range the fit used: ``target_bounds`` when declared,
        else the privately released one (ends are powers of 2 or 0).

    target_range_noise_multiplier_ : float or None
        ``z`` of the release of the learned range (its ``GaussianDpEvent``;
        0 with ``epsilon=inf``); None when ``target_bounds`` was declared.

    {fitted_attributes}

    See Also
    --------
    DPLSSGDClassifier : The same training for classification.
    sklearn.linear_model.SGDRegressor : The non-private counterpart.

    Examples
    --------
    >>> import numpy as np
    >>> from sklearn_dplssgd import DPLSSGDRegressor
    >>> rng = np.random.default_rng(0)
    >>> X = rng.uniform(-1, 1, size=(5000, 3))
    >>> y = X @ [0.5, -0.2, 0.3]
    >>> reg = DPLSSGDRegressor(epsilon=1.0).fit(X, y)
    >>> reg.coef_.shape
    (3,)
    """

    _parameter_constraints = {
        **BaseDPLSSGD._parameter_constraints,
        "loss": [Options(str, REGRESSION_LOSSES)],
        "loss_threshold": [Interval("real", 0, None, closed="left")],
        "target_bounds": [None, _check_target_bounds],
    }

    def __init__(
        self,
        loss="squared_error",
        *,
        loss_threshold=0.1,
        target_bounds=None,
        epsilon=1.0,
        delta="auto",
        sigma="auto",
        clip_norm=1.0,
        mechanism="gradient",
        max_sample_weight=1.0,
        alpha=1e-4,
        fit_intercept=True,
        feature_bounds=None,
        batch_size="auto",
        max_iter="auto",
        learning_rate="constant",
        eta0="auto",
        power_t=0.5,
        average="auto",
        optimizer="sgd",
        noise_schedule="constant",
        warm_start=False,
        accountant="pld",
        neighboring="replace_one",
        public_n_samples=None,
        random_state=None,
        reproducible=False,
        ledger=None,
        n_jobs=None,
        verbose=0,
    ):
        self.loss = loss
        self.loss_threshold = loss_threshold
        self.target_bounds = target_bounds
        self.epsilon = epsilon
        self.delta = delta
        self.sigma = sigma
        self.clip_norm = clip_norm
        self.mechanism = mechanism
        self.max_sample_weight = max_sample_weight
        self.alpha = alpha
        self.fit_intercept = fit_intercept
        self.feature_bounds = feature_bounds
        self.batch_size = batch_size
        self.max_iter = max_iter
        self.learning_rate = learning_rate
        self.eta0 = eta0
        self.power_t = power_t
        self.average = average
        self.optimizer = optimizer
        self.noise_schedule = noise_schedule
        self.warm_start = warm_start
        self.accountant = accountant
        self.neighboring = neighboring
        self.public_n_samples = public_n_samples
        self.random_state = random_state
        self.reproducible = reproducible
        self.ledger = ledger
        self.n_jobs = n_jobs
        self.verbose = verbose

    def _target_scale(self):
        """``(centre, half_width)`` of the target range in use, or None."""
        return range_scale(self.__dict__.get("target_bounds_", self.target_bounds))

    def _targets(self, classes=None, target_range=None):
        max_sample_weight = float(self.max_sample_weight)
        if self.target_bounds is not None:
            bounds = tuple(float(bound) for bound in self.target_bounds)
            return RangeTargets(bounds, True, max_sample_weight)
        if not self.__dict__.get("_learns_target_range"):
            # An earlier release's range (a continued series), or none.
            return RangeTargets(self.__dict__.get("target_bounds_"), False, max_sample_weight)
        noise = None if target_range is None else target_range.noise_multiplier
        if noise is None:
            # A private fit must have planned (so accounted) it before reading rows.
            if self._spends_privacy():
                raise RuntimeError("the target range's release was not planned before the fit")
            noise = 0.0
        rng, _ = make_generator(self.random_state, self.reproducible)
        return RangeTargets(None, False, max_sample_weight, (noise, self.neighboring, rng))

    def _prepare_targets(self, X, continued):
        """Whether this fit learns the target's range; refuse where it cannot."""
        learns = (self.target_bounds is None and not continued
                  # (An invalid name is refused by the parameter validation.)
                  and getattr(mechanism_named(self.mechanism), "composes_prior_release", False))
        if self.target_bounds is None and not continued and not learns:
            # Output perturbation trains on y as given, never on an earlier range.
            for name in ("target_bounds_", "target_range_noise_multiplier_"):
                self.__dict__.pop(name, None)
        if learns and backend_for(X).rows_are_remote:
            raise ValueError(
                "target_bounds=None learns the target's range from the rows held here; a "
                "Dask collection's targets stay on its workers: declare "
                "target_bounds=(low, high).")
        self._learns_target_range = learns

    def fit(self, X, y, sample_weight=None, *, coef_init=None, intercept_init=None):
        """Train the model with (epsilon, delta)-differential privacy.

        Parameters
        ----------
        X : {array-like, sparse matrix} of shape (n_samples, n_features)
            Training data; float32 stays float32, sparse X is used as CSR.
        y : array-like of shape (n_samples,)
            Targets.
        sample_weight : array-like of shape (n_samples,) or float, default=None
            Weight of each row, in ``[0, max_sample_weight]``. None weighs
            every row 1.
        coef_init : array-like of shape (n_features,), default=None
            Starting coefficients, in the target's units. Treated as public:
            they must not come from these rows (use ``warm_start`` or
            ``partial_fit``, which compose).
        intercept_init : float or array-like of shape (1,), default=None
            Starting intercept, as ``coef_init``.

        Returns
        -------
        self : DPLSSGDRegressor
            The fitted estimator.
        """
        self._prepare_targets(X, coef_init is None and intercept_init is None and (
            self.warm_start and "dp_events_" in self.__dict__))
        params = self._fit(X, y, sample_weight, coef_init=coef_init,
                           intercept_init=intercept_init)
        self._set_coefficients(params)
        return self

    @available_if(BaseDPLSSGD._can_stream)
    @fill_method_docs
    def partial_fit(self, X, y, sample_weight=None, *, disjoint_batches=False):
        """One private epoch over ``(X, y)``, continuing the fitted model.

        {partial_fit_release}

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
            The rows of this call.
        y : array-like of shape (n_samples,)
            Their targets.
        sample_weight : array-like of shape (n_samples,) or float, default=None
            As in :meth:`fit`.

        {disjoint_batches}

        Returns
        -------
        self : DPLSSGDRegressor
        """
        self._prepare_targets(X, "dp_events_" in self.__dict__)
        self._set_coefficients(self._fit(X, y, sample_weight, partial=True,
                                         disjoint_batches=disjoint_batches))
        return self

    def _to_training_scale(self, params):
        params = super()._to_training_scale(params)  # declared feature bounds
        scale = self._target_scale()
        if scale is None:
            return params
        # The inverse of _set_coefficients' mapping to the target's units.
        centre, half_width = scale
        params = params.copy()
        params[:, :-1] /= half_width
        params[:, -1] = (params[:, -1] - centre) / half_width if self.fit_intercept else 0.0
        return params

    def _set_coefficients(self, params):
        n_features = params.shape[1] - 1
        self.coef_ = copy_params(params, 0, slice(None, n_features))
        self.intercept_ = copy_params(params, 0, slice(n_features, None))
        scale = self._target_scale()
        if scale is not None:
            # Back to the target's units (post-processing of the release).
            centre, half_width = scale
            # Python floats keep the weights' dtype (float32 stays float32).
            self.coef_ = self.coef_ * half_width
            self.intercept_ = self.intercept_ * half_width + centre

    @fill_method_docs
    def predict(self, X):
        """Predict targets.

        Parameters
        ----------
        {rows_X}

        Returns
        -------
        y_pred : ndarray or dask.array.Array of shape (n_samples,)
            Predicted targets.
        """
        return self._on_rows("_predict_rows", X)

    def _predict_rows(self, X):
        return self._decision_values(X, "predict")[:, 0]

    def score(self, X, y, sample_weight=None):
        """Return the R^2 score on ``(X, y)``; errors quote no input value.

        Parameters
        ----------
        X : {array-like, sparse matrix, Dask array or DataFrame} of shape \
                (n_samples, n_features)
            Test samples; a Dask collection is scored where its partitions are.
        y : array-like, Dask array or Series of shape (n_samples,)
            True targets for ``X``.
        sample_weight : array-like of shape (n_samples,), default=None
            Sample weights.

        Returns
        -------
        score : float
            R^2 of ``self.predict(X)`` with respect to ``y``.
        """
        return self._score_on_rows(self._score_rows, "r2", X, y, sample_weight)

    def _score_rows(self, X, y, sample_weight):
        return score_hiding_values(super().score, X, y, sample_weight)

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        # The Gaussian noise that buys privacy costs accuracy on the tiny
        # data sets of scikit-learn's common checks.
        tags.regressor_tags.poor_score = True
        return tags
