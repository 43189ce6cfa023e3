"""One-hot encoding with each column's categories selected under differential privacy.

A ``OneHotEncoder`` fitted on private rows publishes the list of values that
occur: a rare diagnosis, a country with one customer. :class:`DPOneHotEncoder`
releases a category only through *private partition selection*: for each
column, every value present is kept independently with a probability that
depends only on its count, ``pi(count)``, the optimal rule of Desfontaines,
Voss, Gipson and Mandayam ("Differentially private partition selection",
PoPETs 2022, Theorem 1) for a row that touches one partition::

    pi(0) = 0,
    pi(c) = min(exp(eps) pi(c - 1) + delta,
                1 - exp(-eps) (1 - delta - pi(c - 1)),
                1).

A value that no row has (count 0) is never released, so neighbouring data
sets that differ in whether a value exists are told apart only with
probability ``delta``, and the release of a value with a count of ``c`` or
``c - 1`` is ``(eps, delta)``-indistinguishable: both inequalities of
(eps, delta)-DP hold by construction, in both directions, and ``pi`` is the
largest such function (the most categories kept).

Neighbours: under add/remove one row changes one count of each column by
one: each column is ``(eps_col, delta_col)``-DP with ``pi`` at
``(eps_col, delta_col)``. Under replace-one (the default, as for the
estimators) one row leaves one value and joins another: two counts change,
each by one, and the partitions are selected independently, so ``pi`` runs
at ``(eps_col / 2, delta_col / 2)`` and the two changes compose. The columns
compose: ``eps_col = epsilon / n_columns``, ``delta_col = delta /
n_columns`` (basic composition).
"""

import math

import numpy as np
import scipy.sparse as sp
from sklearn.base import BaseEstimator, TransformerMixin
from sklearn.utils.validation import check_is_fitted, validate_data

import dp_accounting

from ._accounting import NEIGHBORING_RELATIONS, EpsilonDeltaDpEvent
from ._ledger import ledger_error
from ._randomness import make_generator, random_state_error, warn_about_seed
from ._report import transformer_report
from ._validation import (
    VALUES_NOT_SHOWN,
    Interval,
    Options,
    validate_hiding_values,
    validate_parameters,
)

__all__ = ["DPOneHotEncoder", "selection_probabilities"]

_OUTPUT_DTYPES = (np.float64, np.float32, np.int64, np.int32, np.int8, np.uint8, np.bool_)


def selection_probabilities(max_count, epsilon, delta):
    """``pi(0..max_count)``: the optimal partition-selection probabilities.

    Desfontaines, Voss, Gipson and Mandayam (PoPETs 2022), for one partition
    per row under add/remove neighbours at ``(epsilon, delta)``.

    Parameters
    ----------
    max_count : int
    epsilon : float
    delta : float

    Returns
    -------
    pi : ndarray of shape (max_count + 1,)
        ``pi[c]`` is the probability that a value with count ``c`` is
        released; non-decreasing, ``pi[0] = 0``, 1 from some count on.
    """
    pi = np.ones(max_count + 1)
    pi[0] = 0.0
    growth, shrink = math.exp(epsilon), math.exp(-epsilon)
    previous = 0.0
    for count in range(1, max_count + 1):
        previous = min(growth * previous + delta, 1.0 - shrink * (1.0 - delta - previous), 1.0)
        if previous >= 1.0:
            break  # pi stays 1 from here on
        pi[count] = previous
    return pi


def _category_array(values):
    """Released values as numbers where they are numbers, else as objects (as sklearn)."""
    if values.dtype.kind == "O" and values.size and all(
            isinstance(value, (int, float, np.number)) and not isinstance(value, bool)
            for value in values):
        return np.asarray(values.tolist())
    return values.astype(object) if values.dtype.kind in "OUS" else values


def _dtype_error(value):
    if value in _OUTPUT_DTYPES:
        return None
    return f"must be one of numpy's float64, float32, int64, int32, int8, uint8, bool_; " \
           f"got {value!r}."


class DPOneHotEncoder(TransformerMixin, BaseEstimator):
    """One-hot encode categorical columns whose categories are selected privately.

    For each column, every value present in the training rows is released as
    a category with probability ``pi(count)``, the optimal
    (epsilon, delta) partition-selection rule of Desfontaines et al. (PoPETs
    2022): frequent values are kept, a value held by a handful of rows almost
    never is. Values not released, like values unseen in training, are
    encoded as all zeros (``handle_unknown="ignore"``): the encoder never
    raises on them, since an error would reveal that a row carries one.

    **Privacy.** The released categories are ``(epsilon, delta)``-DP under
    ``neighboring`` (replace-one by default, as the estimators): ``epsilon``
    and ``delta`` are split evenly over the columns, and under replace-one
    each column's share again over the two values a replaced row touches.
    ``dp_event_`` records it; ``ledger`` is charged before any value is
    read. The number of columns is public; the number of output columns is
    not (it is part of the private release). See the "Private
    preprocessing" page of the documentation.

    Parameters
    ----------
    epsilon : float, default=0.1
        Privacy budget of the whole fit (all columns).
    delta : float, default=1e-6
        Probability budget of the fit: roughly the chance that a value held
        by a single row is released.
    neighboring : {"replace_one", "add_remove"}, default="replace_one"
        Adjacency of the guarantee; must match the ``ledger``'s.
    ledger : PrivacyLedger or None, default=None
        Ledger charged with ``dp_event_`` before the fit reads any value.
    handle_unknown : {"ignore"}, default="ignore"
        Values outside ``categories_`` are encoded as all zeros (the only
        private choice: the training rows' suppressed values are among them).
    sparse_output : bool, default=True
        Return a SciPy CSR matrix (the estimators accept it); ``False``
        returns a dense array (needed for ``set_output(transform="pandas")``).
    dtype : numpy dtype, default=np.float64
        Dtype of the output.
    random_state : None, int, Generator, RandomState or SeedSequence, default=None
        Used only with ``reproducible=True``; otherwise each fit draws fresh
        operating-system entropy.
    reproducible : bool, default=False
        Draw the selection from ``random_state`` (not private:
        ``epsilon_`` is then ``inf``). For tests and research on public data.

    Attributes
    ----------
    categories_ : list of ndarray
        The released categories of each column, sorted; possibly empty.
    epsilon_ : float
        Epsilon spent (``inf`` with ``reproducible=True``).
    delta_ : float
        Delta spent.
    dp_event_ : dp_accounting.DpEvent
        ``SelfComposedDpEvent(EpsilonDeltaDpEvent(e, d), m)``: ``m`` is the
        number of columns (add/remove) or twice it (replace-one).
    n_features_in_ : int
    feature_names_in_ : ndarray of shape (n_features_in_,)
        Defined only when ``X`` has string column names.

    See Also
    --------
    sklearn.preprocessing.OneHotEncoder : With ``categories=`` declared, the
        same encoding at no privacy cost.
    DPBoundedScaler : Numeric ranges learned with differential privacy.

    Notes
    -----
    Missing values (NaN, None) are refused: replace them by a category of
    their own (``fillna("missing")``) first. A column whose values are of
    mixed types that cannot be ordered (strings and numbers) is refused. A
    column with one category, or none released, gives one output column or
    none. Reference: D. Desfontaines, J. Voss, B. Gipson, C. Mandayam,
    "Differentially private partition selection", Proceedings on Privacy
    Enhancing Technologies 2022(1).

    Examples
    --------
    >>> import numpy as np
    >>> from sklearn_dplssgd import DPOneHotEncoder
    >>> rng = np.random.default_rng(0)
    >>> colour = rng.choice(["red", "green", "blue"], size=(3000, 1))
    >>> colour[0, 0] = "ultraviolet"  # one row: almost never released
    >>> encoder = DPOneHotEncoder(epsilon=1.0, delta=1e-6).fit(colour)
    >>> [str(c) for c in encoder.categories_[0]]
    ['blue', 'green', 'red']
    >>> encoder.transform([["red"], ["ultraviolet"]]).toarray()
    array([[0., 0., 1.],
           [0., 0., 0.]])
    """

    _parameter_constraints = {
        "epsilon": [Interval("real", 0, math.inf, closed="neither")],
        "delta": [Interval("real", 0, 1, closed="neither")],
        "neighboring": [Options(str, NEIGHBORING_RELATIONS)],
        "ledger": [None, ledger_error],
        "handle_unknown": [Options(str, ("ignore",))],
        "sparse_output": [Options(bool, (True, False))],
        "dtype": [_dtype_error],
        "random_state": [None, random_state_error],
        "reproducible": [Options(bool, (True, False))],
    }

    def __init__(self, epsilon=0.1, delta=1e-6, neighboring="replace_one", ledger=None,
                 handle_unknown="ignore", sparse_output=True, dtype=np.float64,
                 random_state=None, reproducible=False):
        self.epsilon = epsilon
        self.delta = delta
        self.neighboring = neighboring
        self.ledger = ledger
        self.handle_unknown = handle_unknown
        self.sparse_output = sparse_output
        self.dtype = dtype
        self.random_state = random_state
        self.reproducible = reproducible

    def _validate_X(self, X, reset):
        if sp.issparse(X):
            raise TypeError(f"{type(self).__name__} does not accept sparse input; pass the "
                            "categorical columns as an array or a DataFrame.")
        X = validate_hiding_values({"X": X}, validate_data, self, X, dtype=None,
                                   accept_sparse=False, reset=reset)
        if X.dtype.kind == "O":
            missing = np.frompyfunc(lambda value: value is None, 1, 1)(X).astype(bool)
            if missing.any():
                raise ValueError(
                    f"{type(self).__name__} does not accept missing values (None) in X "
                    f"({VALUES_NOT_SHOWN}): replace them by a category of their own first, "
                    "for example with fillna('missing').")
        return X

    def _partition_budget(self, n_columns):
        """(epsilon, delta) of each partition's selection, and how many compose."""
        per_column = (self.epsilon / n_columns, self.delta / n_columns)
        if self.neighboring == "replace_one":
            return per_column[0] / 2, per_column[1] / 2, 2 * n_columns
        return per_column[0], per_column[1], n_columns

    def fit(self, X, y=None):
        """Select each column's categories privately.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
            Private categorical data (strings or numbers; not modified).
        y : None
            Ignored.

        Returns
        -------
        self : DPOneHotEncoder
        """
        validate_parameters(self)
        X = self._validate_X(X, reset=True)
        n_samples, n_columns = X.shape
        epsilon_p, delta_p, n_parts = self._partition_budget(n_columns)
        warn_about_seed(self.random_state, self.reproducible)
        rng, seeded = make_generator(self.random_state, self.reproducible)
        if seeded:
            event, epsilon = dp_accounting.NonPrivateDpEvent(), math.inf
        else:
            event = dp_accounting.SelfComposedDpEvent(EpsilonDeltaDpEvent(epsilon_p, delta_p),
                                                      n_parts)
            epsilon = epsilon_p * n_parts
        # The event depends on public quantities only: charge before reading values.
        if self.ledger is not None:
            self.ledger.charge(type(self).__name__, event, self.neighboring)
        pi = selection_probabilities(n_samples, epsilon_p, delta_p)
        categories = []
        for j in range(n_columns):
            try:
                values, counts = np.unique(X[:, j], return_counts=True)
            except TypeError:
                raise TypeError(
                    f"{type(self).__name__}: column {j} of X mixes values that cannot be "
                    f"ordered, such as strings and numbers ({VALUES_NOT_SHOWN}); convert it "
                    "to one type first, for example with astype(str).") from None
            released = rng.random(values.shape[0]) < pi[counts]
            categories.append(_category_array(values[released]))
        self.categories_ = categories
        self.epsilon_ = epsilon
        self.delta_ = math.inf if seeded else delta_p * n_parts
        self.dp_event_ = event
        return self

    def privacy_report(self):
        """What this fit's guarantee means, in plain words (see the user guide).

        Returns
        -------
        report : str
        """
        check_is_fitted(self, "dp_event_")
        n_values = sum(len(values) for values in self.categories_)
        released = (
            f"{n_values} category value(s) over {len(self.categories_)} column(s) "
            "(categories_): each value present in the rows was kept at random with a "
            "probability that depends only on its count, zero for a value no row has and "
            "tiny (of the order of delta) for a value one row has (partition selection), so "
            "rare values stay hidden and encode as all zeros. The counts themselves are not "
            "released.")
        return transformer_report(self, released)

    def transform(self, X):
        """One-hot encode ``X``; values outside ``categories_`` give all zeros.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)

        Returns
        -------
        X_encoded : sparse matrix or ndarray of shape (n_samples, n_encoded)
            CSR matrix with ``sparse_output=True``, else a dense array;
            ``n_encoded`` is the total number of released categories.
        """
        check_is_fitted(self)
        X = self._validate_X(X, reset=False)
        n_samples = X.shape[0]
        rows, columns = [], []
        offset = 0
        for j, categories in enumerate(self.categories_):
            index = {value: position for position, value in enumerate(categories)}
            positions = np.fromiter((index.get(value, -1) for value in X[:, j]),
                                    dtype=np.intp, count=n_samples)
            known = np.flatnonzero(positions >= 0)
            rows.append(known)
            columns.append(positions[known] + offset)
            offset += len(categories)
        rows = np.concatenate(rows)
        encoded = sp.csr_matrix(
            (np.ones(rows.shape[0], dtype=self.dtype), (rows, np.concatenate(columns))),
            shape=(n_samples, offset), dtype=self.dtype)
        return encoded if self.sparse_output else encoded.toarray()

    def get_feature_names_out(self, input_features=None):
        """Output names ``<column>_<category>``, as ``OneHotEncoder`` names them.

        Parameters
        ----------
        input_features : array-like of str or None, default=None
            Input column names; default ``feature_names_in_``, or ``x0``,
            ``x1``, ... without names.

        Returns
        -------
        feature_names_out : ndarray of str objects
        """
        check_is_fitted(self)
        names = getattr(self, "feature_names_in_", None)
        if input_features is None:
            input_features = names if names is not None else [
                f"x{j}" for j in range(self.n_features_in_)]
        else:
            input_features = np.asarray(input_features, dtype=object)
            if input_features.shape != (self.n_features_in_,):
                raise ValueError(
                    f"input_features should have length equal to the number of features "
                    f"({self.n_features_in_}); got {len(input_features)}.")
            if names is not None and not np.array_equal(input_features, names):
                raise ValueError("input_features is not equal to feature_names_in_.")
        return np.asarray([f"{feature}_{category}"
                           for feature, categories in zip(input_features, self.categories_)
                           for category in categories], dtype=object)

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.non_deterministic = not self.reproducible
        tags.input_tags.categorical = True
        tags.input_tags.string = True
        tags.input_tags.two_d_array = True
        tags.input_tags.sparse = False
        tags.input_tags.allow_nan = False
        tags.transformer_tags.preserves_dtype = []
        return tags
