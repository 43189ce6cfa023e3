"""DPLSSGDClassifier: differentially private linear classification."""

import math
import numbers

import numpy as np
from array_api_compat import array_namespace
from scipy.special import expit, log_expit, log_softmax, softmax
from sklearn.base import ClassifierMixin
from sklearn.utils.metaestimators import available_if

from .._backends import backend_for, class_labels, class_probabilities, copy_params
from .._training import averaging_tail, CLASSIFICATION_LOSSES, LOSSES
from .._utils import Options, score_hiding_values
from ._base import BaseDPLSSGD
from ._docstrings import fill_method_docs, fill_parameter_docs
from ._targets import ClassTargets, declared_labels
from ._weights import check_class_weight, class_weight_table

__all__ = ["DPLSSGDClassifier"]


def _is_missing(label):
    """None, a float NaN or pandas' NA (checked by name: pandas is optional)."""
    if label is None or type(label).__name__ == "NAType":
        return True
    return isinstance(label, (float, np.floating)) and math.isnan(label)


def _label_kinds(labels):
    """The kinds ("str", "number", ...) of an iterable of scalar labels."""
    return {
        "str" if isinstance(label, str)
        else "number" if isinstance(label, (numbers.Number, np.number))
        else type(label).__name__
        for label in labels
    }


def _refuse_bytes():
    # scikit-learn's words (it refuses bytes labels from 1.7), with every version.
    raise TypeError("Support for labels represented as bytes is not supported. Convert the "
                    "labels to a string or integer format.")


def _check_label_values(y):
    """Refuse missing labels and labels of mixed types before NumPy coerces them.

    ``np.asarray(["a", 1])`` silently turns 1 into "1"; mixed object arrays
    fail deep inside NumPy's sorting.
    """
    if y is None:
        return  # validate_data says that y is required
    if not backend_for(y).labels_checked_on_host:
        return  # another namespace's numbers, or Dask (checked by the encoding)
    if isinstance(y, (list, tuple)):
        labels = [label for label in y if np.ndim(label) == 0]
    else:
        array = np.asarray(y)
        if array.dtype.kind == "S":
            _refuse_bytes()
        if array.dtype.kind != "O":
            return
        labels = array.ravel().tolist()
    if any(_is_missing(label) for label in labels):
        raise ValueError("y contains missing labels (None, NaN or pd.NA).")
    kinds = _label_kinds(labels)
    if "bytes" in kinds:
        _refuse_bytes()
    if len(kinds) > 1:
        raise TypeError(
            f"y contains labels of mixed types ({', '.join(sorted(kinds))}); "
            "use labels of a single type."
        )


def _check_classes(value):
    if value is None:
        return None
    labels = np.asarray(value, dtype=object).ravel().tolist() if np.ndim(value) else [value]
    if np.ndim(value) != 1 or any(_is_missing(label) for label in labels):
        return f"must be a 1-d array-like of class labels without missing values; got {value!r}."
    if len(_label_kinds(labels)) > 1:
        return f"must list labels of a single type; got {value!r}."
    if len(np.unique(np.asarray(value))) < 2:
        return f"must list at least two distinct class labels; got {value!r}."
    return None


@fill_parameter_docs(learning_rate='"constant"')
class DPLSSGDClassifier(ClassifierMixin, BaseDPLSSGD):
    """Linear classifier trained with (epsilon, delta)-differential privacy.

    DP-LSSGD (Wang et al., "DP-LSSGD: A Stochastic Optimization Method to
    Lift the Utility in Privacy-Preserving ERM"); see :doc:`the user guide
    </user_guide/getting_started>`. With K > 2 classes it is one multinomial
    (``log_loss``) or Crammer-Singer (``hinge``) model with a single clip
    over all classes, so the budget is not split K ways.

    Parameters
    ----------
    loss : {{"log_loss", "hinge", "squared_hinge"}}, default="log_loss"
        Logistic regression (with ``predict_proba``), a linear support
        vector machine, or its smooth square ``max(0, 1 - y z) ** 2``
        (one-vs-rest with more than two classes).

    {privacy_parameters}

    {training_parameters}

    classes : array-like of shape (n_classes,), default=None
        The label set, declared by the user. When None it is read from the
        training labels, and the model reveals which labels occur in the
        private data (a :class:`PrivacyLeakWarning` says so).

    class_weight : dict or None, default=None
        Public weights ``{{label: weight}}`` of the classes (1 if not
        listed), at most ``max_sample_weight`` times a row's
        ``sample_weight``. ``"balanced"`` is refused: it reads the private
        labels.

    {accounting_parameters}

    Attributes
    ----------
    coef_ : ndarray of shape (1, n_features) or (n_classes, n_features)
        Coefficients; one row for binary problems.

    intercept_ : ndarray of shape (1,) or (n_classes,)
        Intercepts (zeros when ``fit_intercept=False``).

    classes_ : ndarray of shape (n_classes,)
        The class labels.

    {fitted_attributes}

    See Also
    --------
    DPLSSGDRegressor : The same training for regression.
    sklearn.linear_model.SGDClassifier : The non-private counterpart.

    Notes
    -----
    The guarantee covers each training row (features and label) under the
    adjacency named by ``neighboring_``. It does not cover the label set when
    ``classes`` is None, preprocessing fitted on the private data, a
    ``reproducible`` fit (its seed travels with it), or the repeated fits of
    a hyperparameter search (each fit spends its own budget).

    Examples
    --------
    >>> from sklearn.datasets import load_digits
    >>> from sklearn_dplssgd import DPLSSGDClassifier
    >>> X, y = load_digits(return_X_y=True)
    >>> clf = DPLSSGDClassifier(epsilon=1.0, classes=range(10))
    >>> clf.fit(X / 16, y).epsilon_ <= 1.0
    True
    """

    _parameter_constraints = {
        **BaseDPLSSGD._parameter_constraints,
        "loss": [Options(str, CLASSIFICATION_LOSSES)],
        "classes": [None, _check_classes],
        "class_weight": [check_class_weight],
    }
    _auto_sigma_levels = ((10, 0.25), (100, 1.0))
    _step_reference_sigma = None

    def _average_tail(self, n_features):
        # Shorter steps on wider X leave the weights drifting at the end of the run.
        return averaging_tail(n_features, LOSSES[self.loss].noise_free_step)

    def __init__(
        self,
        loss="log_loss",
        *,
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
        classes=None,
        class_weight=None,
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
        self.classes = classes
        self.class_weight = class_weight
        self.accountant = accountant
        self.neighboring = neighboring
        self.public_n_samples = public_n_samples
        self.random_state = random_state
        self.reproducible = reproducible
        self.ledger = ledger
        self.n_jobs = n_jobs
        self.verbose = verbose

    def _validate_hyperparameters(self):
        settings = super()._validate_hyperparameters()
        # Public values, checked before the ledger is charged.
        class_weight_table(self.class_weight, declared_labels(self.classes),
                           float(self.max_sample_weight))
        return settings

    def _targets(self, classes=None, target_range=None):
        labels = declared_labels(self.classes if classes is None else classes)
        return ClassTargets(self.loss, labels, self.class_weight, float(self.max_sample_weight),
                            self._n_threads())

    def fit(self, X, y, sample_weight=None, *, coef_init=None, intercept_init=None):
        """Train the model with (epsilon, delta)-differential privacy.

        Parameters
        ----------
        X : {array-like, sparse matrix} of shape (n_samples, n_features)
            Training data; float32 stays float32, sparse X is used as CSR.
        y : array-like of shape (n_samples,)
            Class labels.
        sample_weight : array-like of shape (n_samples,) or float, default=None
            Weight of each row, in ``[0, max_sample_weight]`` once multiplied
            by its class's ``class_weight``. None weighs every row 1.
        coef_init : array-like of shape (n_classes, n_features), default=None
            Starting coefficients (``(1, n_features)`` or ``(n_features,)``
            for two classes). Treated as public: they must not come from
            these rows (use ``warm_start`` or ``partial_fit``, which compose).
        intercept_init : array-like of shape (n_classes,), default=None
            Starting intercepts, as ``coef_init``.

        Returns
        -------
        self : DPLSSGDClassifier
            The fitted estimator.
        """
        _check_label_values(y)
        params = self._fit(X, y, sample_weight, coef_init=coef_init,
                           intercept_init=intercept_init)
        self._set_coefficients(params)
        return self

    @available_if(BaseDPLSSGD._can_stream)
    @fill_method_docs
    def partial_fit(self, X, y, classes=None, sample_weight=None, *, disjoint_batches=False):
        """One private epoch over ``(X, y)``, continuing the fitted model.

        {partial_fit_release}

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
            The rows of this call.
        y : array-like of shape (n_samples,)
            Their labels.
        classes : array-like of shape (n_classes,), default=None
            The label set, required on the first call unless the
            ``classes`` parameter declares it (never read from ``y``).
        sample_weight : array-like of shape (n_samples,) or float, default=None
            As in :meth:`fit`.

        {disjoint_batches}

        Returns
        -------
        self : DPLSSGDClassifier
        """
        _check_label_values(y)
        params = self._fit(X, y, sample_weight, partial=True,
                           classes=self._partial_fit_classes(classes),
                           disjoint_batches=disjoint_batches)
        self._set_coefficients(params)
        return self

    def _partial_fit_classes(self, classes):
        """The label set of a ``partial_fit`` call, checked against what is known."""
        self._validate_hyperparameters()  # the classes parameter among them
        if classes is not None and _check_classes(classes) is not None:
            raise ValueError(f"classes {_check_classes(classes)}")
        known = [np.unique(np.asarray(value)) for value in (classes, self.classes)
                 if value is not None]
        if "dp_events_" in self.__dict__:
            known.append(self.classes_)  # the series' own label set
        if not known:
            raise ValueError(
                "classes must be passed to the first call of partial_fit (or declared "
                "with the classes parameter): the label set is never read from the "
                "private labels."
            )
        if any(not np.array_equal(known[0], other) for other in known[1:]):
            raise ValueError(
                "classes differs from the label set declared or fitted before; a "
                "partial_fit series keeps one label set."
            )
        return known[0]

    def _set_coefficients(self, params):
        n_features = params.shape[1] - 1
        self.coef_ = copy_params(params, slice(None), slice(None, n_features))
        self.intercept_ = copy_params(params, slice(None), n_features)

    @fill_method_docs
    def decision_function(self, X):
        """Compute the margins of the linear model.

        Parameters
        ----------
        {rows_X}

        Returns
        -------
        scores : ndarray or dask.array.Array of shape (n_samples,) or (n_samples, n_classes)
            For two classes, positive scores favour ``classes_[1]``.
        """
        return self._on_rows("_decision_function_rows", X)

    def _decision_function_rows(self, X):
        margins = self._decision_values(X, "decision_function")
        return margins[:, 0] if margins.shape[1] == 1 else margins

    @fill_method_docs
    def predict(self, X):
        """Predict class labels.

        Parameters
        ----------
        {rows_X}

        Returns
        -------
        y_pred : ndarray or dask.array.Array of shape (n_samples,)
            Predicted class labels, from ``classes_``.
        """
        return self._on_rows("_predict_rows", X)

    def _predict_rows(self, X):
        margins = self._decision_values(X, "predict")
        if not isinstance(margins, np.ndarray):
            return class_labels(array_namespace(margins), margins, self.classes_)
        if margins.shape[1] == 1:
            return self.classes_[(margins[:, 0] > 0).astype(np.intp)]
        return self.classes_[np.argmax(margins, axis=1)]

    def _has_log_loss(self):
        # An unknown loss is refused by fit; here it has no probabilities either.
        if not getattr(LOSSES.get(self.loss), "probabilistic", False):
            raise AttributeError(
                f"probability estimates are not available for loss={self.loss!r}; "
                "use loss='log_loss'."
            )
        return True

    @available_if(_has_log_loss)
    @fill_method_docs
    def predict_proba(self, X):
        """Estimate class probabilities (``loss="log_loss"`` only).

        Parameters
        ----------
        {rows_X}

        Returns
        -------
        proba : ndarray or dask.array.Array of shape (n_samples, n_classes)
            Columns follow ``classes_``.
        """
        return self._on_rows("_predict_proba_rows", X)

    def _predict_proba_rows(self, X):
        margins = self._decision_values(X, "predict_proba")
        if not isinstance(margins, np.ndarray):
            return class_probabilities(array_namespace(margins), margins)
        if margins.shape[1] == 1:
            positive = expit(margins[:, 0])
            return np.column_stack([1.0 - positive, positive])
        return softmax(margins, axis=1)

    @available_if(_has_log_loss)
    @fill_method_docs
    def predict_log_proba(self, X):
        """Estimate log class probabilities (``loss="log_loss"`` only).

        Parameters
        ----------
        {rows_X}

        Returns
        -------
        log_proba : ndarray or dask.array.Array of shape (n_samples, n_classes)
            Natural logarithm of the probabilities; columns follow ``classes_``.
        """
        return self._on_rows("_predict_log_proba_rows", X)

    def _predict_log_proba_rows(self, X):
        margins = self._decision_values(X, "predict_log_proba")
        if not isinstance(margins, np.ndarray):
            return class_probabilities(array_namespace(margins), margins, log=True)
        if margins.shape[1] == 1:
            return np.column_stack([log_expit(-margins[:, 0]), log_expit(margins[:, 0])])
        return log_softmax(margins, axis=1)

    def score(self, X, y, sample_weight=None):
        """Return the mean accuracy on ``(X, y)``; errors quote no input value.

        Parameters
        ----------
        X : {array-like, sparse matrix, Dask array or DataFrame} of shape \
                (n_samples, n_features)
            Test samples; a Dask collection is scored where its partitions are.
        y : array-like, Dask array or Series of shape (n_samples,)
            True labels for ``X``.
        sample_weight : array-like of shape (n_samples,), default=None
            Sample weights.

        Returns
        -------
        score : float
            Mean accuracy of ``self.predict(X)`` with respect to ``y``.
        """
        return self._score_on_rows(self._score_rows, "accuracy", X, y, sample_weight)

    def _score_rows(self, X, y, sample_weight):
        # Rows held here (a Dask partition's labels are checked by its own sums).
        _check_label_values(y)  # as in fit: mixed or missing labels, said clearly
        return score_hiding_values(super().score, X, y, sample_weight)

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        # The Gaussian noise that buys privacy costs accuracy on the tiny
        # data sets of scikit-learn's common checks.
        tags.classifier_tags.poor_score = True
        return tags
