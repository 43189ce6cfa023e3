"""One-hot encoding with each column's categories selected under differential privacy.

A ``OneHotEncoder`` fitted on private rows publishes the values that occur (a
rare diagnosis, a country with one customer). :class:`DPOneHotEncoder`
releases each value present independently with a probability that depends
only on its count: the optimal partition-selection rule of Desfontaines,
Voss, Gipson and Mandayam ("Differentially private partition selection",
PoPETs 2022), on dyadic probabilities drawn exactly from random words.
Values are counted in a canonical form, so that no row decides how a
category is shown. The privacy argument is in the privacy guide ("Private
preprocessing" and "Exact noise").
"""

import decimal
import fractions
import math
import numbers
import sys

import numpy as np
import scipy.sparse as sp
from sklearn.base import BaseEstimator, TransformerMixin
from sklearn.utils.validation import check_is_fitted, validate_data

from .._accounting import NEIGHBORING_RELATIONS, ledger_error
from .._training import GeneratorWords, random_state_error
from .._utils import (
    VALUES_NOT_SHOWN, Interval, Options, validate_hiding_values, validate_parameters,
)
from ._private_fit import PrivateFitMixin, composed_event, split_budget

__all__ = [
    "DPOneHotEncoder", "dyadic_bernoulli", "selection_bits", "selection_numerators",
    "selection_probabilities",
]

_OUTPUT_DTYPES = (np.float64, np.float32, np.int64, np.int32, np.int8, np.uint8, np.bool_)


# Above this epsilon exp(epsilon) overflows a float. pi at a smaller epsilon
# is pointwise no larger, so it still meets the constraints at the larger one
# (and at 700 pi is 1 from a count of 2 on for any delta above about 1e-300).
_LARGEST_EXPONENT = 700.0
# The selection's uniform integers are made of 63-bit digits (a word's top bits).
_DIGIT_BITS = 63
_DIGIT_MASK = (1 << _DIGIT_BITS) - 1


def _exp_bounds(epsilon, bits):
    """Integers ``L <= exp(epsilon) 2**bits`` and ``U >= exp(-epsilon) 2**bits``, ``U <= 2**bits``.

    From ``decimal``'s exponential, correctly rounded at a precision finer
    than ``2**-bits``, widened by more than its rounding: rigorous bounds.
    """
    digits = math.ceil(bits * math.log10(2.0)) + 10
    context = decimal.Context(prec=digits)
    margin = fractions.Fraction(1, 10 ** (digits - 2))
    exact = decimal.Decimal(epsilon)  # the float, exactly
    # copy_negate, not unary minus: the latter rounds to the default context.
    above = fractions.Fraction(context.exp(exact)) * (1 - margin)
    below = fractions.Fraction(context.exp(exact.copy_negate())) * (1 + margin)
    return math.floor(above * 2 ** bits), min(math.ceil(below * 2 ** bits), 2 ** bits)


def selection_bits(delta):
    """Bits of the dyadic selection probabilities: 63-bit digits, ``2**-64`` below ``delta``."""
    digits = math.ceil((math.ceil(-math.log2(delta)) + 64) / _DIGIT_BITS)
    return _DIGIT_BITS * max(1, digits)


def selection_numerators(max_count, epsilon, delta):
    """``a_0 .. a_m``: the selection probabilities ``pi(c) = a_c / 2**B``, exact integers.

    The optimal rule at ``(epsilon, delta)``,
    ``pi(c) = min(exp(epsilon) pi(c - 1) + delta,
    1 - exp(-epsilon) (1 - delta - pi(c - 1)), 1)``, each step rounded
    *down* onto multiples of ``2**-B`` (``B = selection_bits(delta)``) with
    rigorous bounds on ``exp(+-epsilon)``: the dyadic probabilities meet both
    inequalities exactly and are non-decreasing.

    Returns
    -------
    numerators : list of int
        ``a_c`` for ``c = 0 .. max_count``, or fewer when ``a_c`` reaches
        ``2**B`` (then it stays there: the caller takes the last entry).
    bits : int
        ``B``.
    """
    bits = selection_bits(delta)
    precision = bits + 64
    whole = 1 << bits
    growth, shrink = _exp_bounds(min(epsilon, _LARGEST_EXPONENT), precision)
    # delta * 2**(bits + precision), rounded down (a smaller delta is sound).
    delta_scaled = math.floor(fractions.Fraction(delta) * 2 ** (bits + precision))
    numerators = [0]
    current = 0
    for _ in range(max_count):
        first = (growth * current + delta_scaled) >> precision
        rest = ((whole - current) << precision) - delta_scaled
        second = whole if rest <= 0 else whole - (
            -((-shrink * rest) >> (2 * precision)))
        current = min(first, second, whole)
        numerators.append(current)
        if current == whole:
            break  # pi stays 1 from here on
    return numerators, bits


def selection_probabilities(max_count, epsilon, delta):
    """``pi(0..max_count)``: :func:`selection_numerators`' probabilities as float64, for display."""
    numerators, bits = selection_numerators(max_count, epsilon, delta)
    pi = np.ones(max_count + 1)
    pi[:len(numerators)] = [float(fractions.Fraction(a, 1 << bits)) for a in numerators]
    return pi


def dyadic_bernoulli(numerators, bits, source):
    """Independent ``Bernoulli(a / 2**bits)`` trials, exactly, from ``source.words``.

    Each trial compares a uniform integer ``u`` in ``[0, 2**bits)`` with
    ``a`` (``0 <= a <= 2**bits``, ``bits`` a multiple of 63), 63-bit digit by
    digit from the top (the words' top bits), drawing a further digit only on
    a tie: ``u < a`` with probability ``a / 2**bits``.
    """
    undecided = np.arange(len(numerators))
    success = np.zeros(len(numerators), dtype=bool)
    for position in range(bits // _DIGIT_BITS):
        if not undecided.size:
            break
        shift = bits - _DIGIT_BITS * (position + 1)
        # The top digit of 2**bits is 2**63, above every u: fits uint64.
        digit = np.array([(numerators[i] >> shift) & (_DIGIT_MASK if position else ~0)
                          for i in undecided], dtype=np.uint64)
        drawn = source.words(undecided.size) >> np.uint64(64 - _DIGIT_BITS)
        success[undecided[drawn < digit]] = True
        undecided = undecided[drawn == digit]
    return success


def _value_kind(value):
    """The kind of one categorical value (booleans are not integers here), or None."""
    if isinstance(value, (bool, np.bool_)):
        return "boolean"
    if isinstance(value, numbers.Integral):
        return "integer"
    if isinstance(value, (float, np.floating)):
        return "float"
    if isinstance(value, str):
        return "string"
    if isinstance(value, bytes):
        return "bytes"
    return None


# The canonical form of a value of each kind: a Python object of one type, so
# that equal values are identical (float(-0.0) + 0.0 is +0.0).
_CANONICAL = {"boolean": bool, "integer": int, "float": lambda value: float(value) + 0.0,
              "string": str, "bytes": bytes}


def _canonical_column(column, index, owner):
    """Column ``index`` of X as canonical values, and its kind.

    A TypeError names the column (schema), never a value, for a column of
    several kinds or of unsupported values.
    """
    dtype_kind = column.dtype.kind
    if dtype_kind == "f":
        return column + 0.0, "float"  # -0.0 + 0.0 is +0.0; the dtype is kept
    if dtype_kind in "biu":
        return column, "boolean" if dtype_kind == "b" else "integer"
    if dtype_kind == "U":
        return column.astype(object), "string"
    if dtype_kind == "S":
        return column.astype(object), "bytes"
    if dtype_kind != "O":
        raise TypeError(
            f"{owner}: column {index} of X has the dtype {column.dtype}, which is not "
            "categorical; convert it to strings or numbers first.")
    kinds = {_value_kind(value) for value in column}
    if None in kinds:
        unsupported = next(type(value).__name__ for value in column
                           if _value_kind(value) is None)
        raise TypeError(
            f"{owner}: column {index} of X holds values of type {unsupported} "
            f"({VALUES_NOT_SHOWN}); only strings, bytes, booleans, integers and floats are "
            "categories, since other values have no total order or an equality that "
            "does not match their hashing. Convert the column, for example with "
            "astype(str).")
    if len(kinds) > 1:
        raise TypeError(
            f"{owner}: column {index} of X mixes {' and '.join(sorted(kinds))} values "
            f"({VALUES_NOT_SHOWN}); equal values of different types (1, 1.0 and True) would "
            "be one category shown as whichever row came first. Convert the column to "
            "one type first, for example with astype(str) or astype(float).")
    kind = kinds.pop()
    canonical = np.empty(column.shape[0], dtype=object)
    canonical[:] = [_CANONICAL[kind](value) for value in column]
    return canonical, kind


def _category_array(values, kind):
    """The released values of one column as an array of its kind (post-processing).

    Strings and bytes as objects (as scikit-learn's encoder), numbers and
    booleans numeric; only integers beyond int64 stay objects.
    """
    if kind in ("string", "bytes") or values.dtype.kind != "O":
        return values.astype(object) if kind in ("string", "bytes") else values
    dtype = {"boolean": np.bool_, "float": np.float64}.get(kind)
    if dtype is not None:
        return values.astype(dtype)
    try:
        return values.astype(np.int64)
    except OverflowError:
        return values


def _is_missing(value):
    """Whether one value of an object column is a missing value (None, NaN, NA, NaT)."""
    if value is None:
        return True
    try:
        return bool(value != value)  # NaN and NaT are not equal to themselves
    except TypeError:
        return True  # pandas.NA: its truth value is ambiguous
    except ValueError:
        return False  # an array-valued cell, refused later as unsupported


def _dtype_error(value):
    if value in _OUTPUT_DTYPES:
        return None
    return f"must be one of numpy's float64, float32, int64, int32, int8, uint8, bool_; " \
           f"got {value!r}."


class DPOneHotEncoder(PrivateFitMixin, TransformerMixin, BaseEstimator):
    """One-hot encode categorical columns whose categories are selected privately.

    For each column, every value present in the training rows is released as
    a category with probability ``pi(count)``, the optimal (epsilon, delta)
    partition-selection rule of Desfontaines et al. (PoPETs 2022): frequent
    values are kept, a value held by a handful of rows almost never is.
    Values not released, like values unseen in training, are encoded as all
    zeros: an error would reveal that a row carries one.

    **Privacy.** The released categories are ``(epsilon, delta)``-DP under
    ``neighboring``: ``epsilon`` and ``delta`` are split evenly over the
    columns and, under replace-one, over the two values a replaced row
    touches. ``ledger`` is charged with ``dp_event_`` before any value is
    read. The number of columns is public; the number of output columns is
    part of the release. See the "Private preprocessing" page of the
    documentation.

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
    their own (``fillna("missing")``) first. Each column must hold one kind
    of value (strings, bytes, booleans, integers or floats); a column that
    mixes kinds (``1``, ``1.0`` and ``True``) or holds other objects (sets,
    tuples) is refused. Released categories are canonical forms, one dtype
    per column and ``-0.0`` as ``0.0``. Reference: D. Desfontaines, J. Voss,
    B. Gipson, C. Mandayam, "Differentially private partition selection",
    Proceedings on Privacy Enhancing Technologies 2022(1).

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
        # NaN passes scikit-learn's check so that the advice below, not its
        # generic "Input contains NaN", answers a missing value (pandas 3's
        # string columns hold NaN for one).
        X = validate_hiding_values({"X": X}, validate_data, self, X, dtype=None,
                                   accept_sparse=False, reset=reset,
                                   ensure_all_finite="allow-nan")
        if X.dtype.kind == "O":
            missing = np.frompyfunc(_is_missing, 1, 1)(X).astype(bool)
        elif X.dtype.kind == "f":
            missing = np.isnan(X)
        else:
            missing = np.zeros(1, dtype=bool)
        if missing.any():
            column = int(np.flatnonzero(missing.any(axis=0))[0]) if missing.ndim == 2 else 0
            raise ValueError(
                f"{type(self).__name__} does not accept missing values (None, NaN) in X "
                f"(column {self._column_name(column)}; {VALUES_NOT_SHOWN}): replace them "
                "by a category of their own first, for example with fillna('missing').")
        return X

    def _column_name(self, index):
        """How errors name column ``index``: its name for a DataFrame (schema), else the index."""
        names = getattr(self, "feature_names_in_", None)
        return repr(str(names[index])) if names is not None else str(index)

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
        n_parts = 2 * X.shape[1] if self.neighboring == "replace_one" else X.shape[1]
        # A share that underflows to a subnormal would report less than was spent.
        epsilon_p, delta_p = (
            split_budget(type(self).__name__, name, value, n_parts, "partition selections",
                         sys.float_info.min)
            for name, value in (("epsilon", self.epsilon), ("delta", self.delta)))
        rng, spent = self._start_release(composed_event(epsilon_p, delta_p, n_parts),
                                         seeded_delta=math.inf)
        columns = [self._counted_column(X, j) for j in range(X.shape[1])]
        largest = max((int(counts.max()) for _, counts, _ in columns if counts.size), default=0)
        numerators, bits = selection_numerators(largest, epsilon_p, delta_p)
        words = GeneratorWords(rng)
        categories = []
        for values, counts, kind in columns:
            chosen = [numerators[min(int(count), len(numerators) - 1)] for count in counts]
            categories.append(_category_array(values[dyadic_bernoulli(chosen, bits, words)], kind))
        self.categories_ = categories
        self.dp_event_, self.epsilon_, self.delta_ = spent
        return self

    def _counted_column(self, X, j):
        """Column ``j``'s distinct canonical values, their counts and the column's kind."""
        column, kind = _canonical_column(X[:, j], self._column_name(j), type(self).__name__)
        # One kind, canonical forms: totally ordered, and equal values
        # identical, so np.unique's choice of representative is moot.
        values, counts = np.unique(column, return_counts=True)
        return values, counts, kind

    def _released(self):
        """What the fit released, in words, for :meth:`privacy_report`."""
        n_values = sum(len(values) for values in self.categories_)
        return (
            f"{n_values} category value(s) over {len(self.categories_)} column(s) "
            "(categories_): each value present in the rows was kept at random with a "
            "probability that depends only on its count, zero for a value no row has and "
            "tiny (of the order of delta) for a value one row has (partition selection), so "
            "rare values stay hidden and encode as all zeros. The counts themselves are not "
            "released.")

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
        tags.input_tags.categorical = True
        tags.input_tags.string = True
        tags.input_tags.two_d_array = True
        tags.input_tags.sparse = False
        tags.input_tags.allow_nan = False
        tags.transformer_tags.preserves_dtype = []
        return tags
