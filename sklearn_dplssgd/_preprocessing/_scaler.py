"""Scaling by public bounds: a transformer that learns nothing from the data.

A ``StandardScaler`` or ``MinMaxScaler`` fitted on private rows publishes
their means, variances or ranges without noise, and makes every row's scaled
features depend on the other rows. :class:`BoundedScaler` maps each feature
from bounds the user declares (public knowledge: a physical range, a schema,
a questionnaire's scale) to ``[-1, 1]`` and clips what falls outside, so that
every scaled row has an L2 norm of at most ``sqrt(n_features)``. Its ``fit``
reads only the shape and the column names of ``X``, which are public.
"""

import re
from collections import Counter

import numpy as np
import scipy.sparse as sp
from sklearn.base import BaseEstimator, OneToOneFeatureMixin, TransformerMixin
from sklearn.utils.validation import check_array, check_is_fitted, validate_data

from .._training import feature_layout
from .._utils import Options, validate_hiding_values, validate_parameters

__all__ = [
    "BoundedScaler", "as_bounds", "broadcast_bounds", "one_hot_columns", "scale_to_unit",
    "sparse_error", "unit_map", "zero_kept",
]


def sparse_error(method, name="BoundedScaler"):
    return TypeError(
        f"{name}.{method} does not accept sparse input: scaling to [-1, 1] maps "
        "a zero to a nonzero value whenever the bounds are not symmetric around it, "
        "so the result would be dense. Convert it with X.toarray() if it fits in memory."
    )


def as_bounds(value, subject):
    """``value`` as a finite float64 array of ndim 0 or 1 (a new array, never a view).

    ``subject`` names the value in errors, e.g. ``"The 'lower' parameter of
    BoundedScaler"``. No bound's value is quoted (the messages give indices).
    """
    if value is None or isinstance(value, (str, bytes)) or sp.issparse(value):
        raise TypeError(
            f"{subject} must be a real number or a 1-D array-like of real numbers; "
            f"got a {type(value).__name__}."
        )
    try:
        is_boolean = np.asarray(value).dtype.kind == "b"
        bounds = np.array(value, dtype=np.float64, copy=True)
    except (TypeError, ValueError) as error:
        raise TypeError(
            f"{subject} must be a real number or a 1-D array-like of real numbers; got "
            f"a {type(value).__name__} that cannot be converted to floats."
        ) from error
    if is_boolean:
        raise TypeError(f"{subject} must be real numbers, not booleans.")
    if bounds.ndim > 1:
        raise ValueError(
            f"{subject} must be a scalar or 1-D; got an array of shape {bounds.shape}.")
    if bounds.ndim == 1 and bounds.size == 0:
        raise ValueError(f"{subject} must not be empty.")
    if not np.all(np.isfinite(bounds)):
        where = np.flatnonzero(~np.isfinite(np.atleast_1d(bounds)))
        raise ValueError(
            f"{subject} must be finite; it is NaN or infinite at feature index "
            f"{int(where[0])}."
        )
    return bounds


def _first_bad(bad, owner, problem):
    """The ValueError for the features flagged in ``bad`` (indices, never values)."""
    where = np.flatnonzero(bad)
    return ValueError(
        f"{owner} {problem} at feature index {int(where[0])}"
        + (f" (and {where.size - 1} more)." if where.size > 1 else ".")
    )


def broadcast_bounds(lower, upper, n_features, owner, subjects):
    """Checked bounds ``(lower, upper)`` from :func:`as_bounds`, as new arrays of ``n_features``.

    ``n_features`` None checks only the two lengths against each other.
    ``owner`` (``"BoundedScaler"``) and ``subjects`` (the names of ``lower``
    and ``upper``) are how the messages name them.
    """
    if n_features is None:
        sizes = {bounds.shape[0] for bounds in (lower, upper) if bounds.ndim == 1}
        if len(sizes) > 1:
            raise ValueError(
                f"{owner} gives {lower.shape[0]} lower and {upper.shape[0]} upper bounds: "
                "give one value per feature for each, or a scalar.")
        n_features = sizes.pop() if sizes else 1
    for subject, bounds in zip(subjects, (lower, upper)):
        if bounds.ndim == 1 and bounds.shape[0] != n_features:
            raise ValueError(
                f"{subject} has {bounds.shape[0]} values but X has {n_features} "
                "features: give one value per feature or a scalar."
            )
    lower = np.broadcast_to(lower, (n_features,)).copy()
    upper = np.broadcast_to(upper, (n_features,)).copy()
    if not np.all(lower < upper):
        raise _first_bad(~(lower < upper), owner,
                         "needs lower < upper for every feature; it is not the case")
    # Half-width formed without computing upper - lower, which can overflow
    # for finite bounds near the float64 limit.
    half = upper / 2 - lower / 2
    if not np.all((half > 0) & np.isfinite(half)):
        raise _first_bad(~((half > 0) & np.isfinite(half)), owner,
                         "cannot represent the width of the bounds (lower and upper are "
                         "too close together)")
    return lower, upper


# An underscore that separates a feature's name from a category's, as
# OneHotEncoder, DPOneHotEncoder and pandas.get_dummies join them; a double
# underscore is ColumnTransformer's prefix, not a category's separator.
_CATEGORY_SEPARATOR = re.compile(r"(?<!_)_(?!_)")
_POSITION = re.compile(r"^([^\d]*?[^\d_])_?(\d+)$")


def _numbered_positions(feature_names):
    """Whether the names are one stem numbered in order (``t_0``, ``t_1``, ...)."""
    matches = [_POSITION.match(str(name)) for name in feature_names]
    if not all(matches) or len({match.group(1) for match in matches}) != 1:
        return False
    numbers = [int(match.group(2)) for match in matches]
    return numbers == list(range(numbers[0], numbers[0] + len(numbers)))


def one_hot_columns(lower, upper, feature_names):
    """The columns declared ``(0, 1)`` whose names mark them a category of an encoded feature.

    Named ``<feature>_<category>`` (at some single underscore) with another
    such column sharing ``<feature>``; unnamed columns and names that number
    one stem in order (``t_0`` .. ``t_99``, positions) are none.
    """
    unit = (lower == 0) & (upper == 1)
    found = np.zeros(lower.shape, dtype=bool)
    if feature_names is None or len(feature_names) != lower.shape[0] or not unit.any():
        return found
    if _numbered_positions(feature_names):
        return found
    features = {}
    for j in np.flatnonzero(unit):
        name = str(feature_names[j])
        features[j] = {name[:m.start()] for m in _CATEGORY_SEPARATOR.finditer(name)
                       if 0 < m.start() and m.end() < len(name)}
    shared = Counter(feature for prefixes in features.values() for feature in prefixes)
    for j, prefixes in features.items():
        found[j] = any(shared[feature] > 1 for feature in prefixes)
    return found


def zero_kept(lower, upper, keep_zero, n_features, feature_names=None, declared_ordered=False):
    """Which columns with a lower bound of 0 keep it at zero (``x / upper``, onto [0, 1]).

    ``keep_zero`` as :class:`BoundedScaler` reads it; ``"auto"``: all of them
    where the columns are ordered (``feature_layout``, from public facts),
    else the one-hot blocks' (:func:`one_hot_columns`).
    """
    if keep_zero == "auto":
        ordered, _ = feature_layout(n_features, False, feature_names,
                                    declared_ordered=declared_ordered)
        if not ordered:
            return one_hot_columns(lower, upper, feature_names)
        keep_zero = True
    return (lower == 0) & (upper > 0) & bool(keep_zero)


def unit_map(lower, upper, kept):
    """Centre, half-width and floor of the map: ``[-1, 1]``, or ``[0, 1]`` where ``kept``."""
    center, half_width = lower / 2 + upper / 2, upper / 2 - lower / 2  # no overflow
    return (np.where(kept, 0.0, center), np.where(kept, upper, half_width),
            np.where(kept, 0.0, -1.0))


def scale_to_unit(X, center, half_width, clip=True, floor=None):
    """``(X - center) / half_width`` as a new array of X's float dtype, clipped to [-1, 1].

    The one implementation of the bounds' map (:class:`BoundedScaler` and the
    estimators' ``feature_bounds``); ``X`` is not written to. ``floor`` (from
    :func:`unit_map`) raises the clip's lower end of columns mapped to [0, 1].
    """
    out = X.astype(np.float64, copy=True)
    with np.errstate(over="ignore"):
        # (x - center) / half == 2 (x - lower) / (upper - lower) - 1; an
        # overflow gives an infinity, which clipping maps to -1 or 1.
        out -= center
        out /= half_width
    if clip:
        np.clip(out, -1.0, 1.0, out=out)
        if floor is not None:
            # Columns whose zero is kept: clipped at 0 (their lower bound).
            np.maximum(out, floor, out=out)
    return out.astype(X.dtype, copy=False)


class BoundedScaler(OneToOneFeatureMixin, TransformerMixin, BaseEstimator):
    """Scale each feature from declared public bounds to [-1, 1], at no privacy cost.

    Each feature ``x`` is mapped to ``2 * (x - lower) / (upper - lower) - 1``
    and, with ``clip=True``, clipped to ``[-1, 1]``, so every scaled row of
    ``d`` features has an L2 norm of at most ``sqrt(d)``, whatever the data.

    **Zero privacy cost.** The bounds are declared from public knowledge (a
    physical range, a schema, a questionnaire's scale), never read from the
    data: ``fit`` records only the number of features and the column names,
    public schema, so the fitted scaler is the same for any two data sets of
    the same shape. ``StandardScaler`` and ``MinMaxScaler``, in contrast,
    publish statistics of the private rows without noise.

    **Images and one-hot blocks keep their zero.** With ``keep_zero="auto"``,
    the columns whose lower bound is 0 are divided by their upper bound, onto
    ``[0, 1]``, where they are an image's (``s * s`` or ``3 s * s`` columns,
    ``s >= 16`` not a power of two, unnamed or numbered in order such as
    ``pixel1`` .. ``pixel784``) or, in any table, a one-hot block's (bounds
    exactly ``(0, 1)`` and names ``<feature>_<category>`` sharing
    ``<feature>``, as ``OneHotEncoder``, :class:`DPOneHotEncoder` and
    ``pandas.get_dummies`` name them; ``t_0`` .. ``t_99`` are positions, not
    categories). Pixels and indicators are mostly zero: mapped to
    ``[-1, 1]``, the zeros become -1, a constant part of every row that
    takes most of each clipped gradient's norm in a private fit. The choice
    reads the bounds, the width and the column names only.

    Sparse input is refused: unless ``lower == -upper`` the output is dense.

    Parameters
    ----------
    lower : float or array-like of shape (n_features,)
        Public lower bound of each feature (one value for all features, or
        one per feature). Must be finite.
    upper : float or array-like of shape (n_features,)
        Public upper bound of each feature. Must be finite and above
        ``lower`` for every feature.
    clip : bool, default=True
        Clip values outside ``[lower, upper]`` to the bounds. Without
        clipping, values outside the bounds map outside ``[-1, 1]`` and the
        row-norm guarantee is lost.
    keep_zero : bool or "auto", default="auto"
        Map the columns whose lower bound is 0 to ``[0, 1]`` (``x / upper``):
        ``"auto"`` for an image's columns and a one-hot block's (above),
        ``True`` for all of them (counts, indicators), ``False`` for none.

    Attributes
    ----------
    lower_ : ndarray of shape (n_features_in_,)
        ``lower`` broadcast to one float64 value per feature.
    upper_ : ndarray of shape (n_features_in_,)
        ``upper`` broadcast to one float64 value per feature.
    n_features_in_ : int
    feature_names_in_ : ndarray of shape (n_features_in_,)
        Defined only when ``X`` has string column names.

    See Also
    --------
    sklearn.preprocessing.MinMaxScaler : The same map with bounds learned
        from the data (which leaks them).

    Notes
    -----
    The map is computed in float64 and returned as float32 for float32
    input, float64 otherwise.

    Examples
    --------
    >>> import numpy as np
    >>> from sklearn_dplssgd import BoundedScaler
    >>> X = np.array([[20.0, 1500.0], [95.0, 250000.0]])
    >>> scaler = BoundedScaler(lower=[18, 0], upper=[100, 200000]).fit(X)
    >>> scaler.transform(X).round(3)  # 250000 lies above its bound: clipped to 1
    array([[-0.951, -0.985],
           [ 0.878,  1.   ]])
    """

    _parameter_constraints = {
        "clip": [Options(bool, (True, False))],
        "keep_zero": [Options(bool, (True, False)), Options(str, ("auto",))],
    }

    def __init__(self, lower, upper, clip=True, keep_zero="auto"):
        self.lower = lower
        self.upper = upper
        self.clip = clip
        self.keep_zero = keep_zero

    def fit(self, X, y=None):
        """Check the bounds against the number of features of ``X`` (never its values).

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
            Data; only its number of columns (and their names) are used.
        y : None
            Ignored.

        Returns
        -------
        self : BoundedScaler
        """
        validate_parameters(self)
        subjects = tuple(f"The {name!r} parameter of BoundedScaler" for name in ("lower", "upper"))
        for name, value in (("lower", self.lower), ("upper", self.upper)):
            if value is None:
                raise ValueError(
                    "BoundedScaler needs public bounds: pass lower=... and upper=... "
                    f"(scalars, or one value per feature); got {name}=None."
                )
        lower = as_bounds(self.lower, subjects[0])
        upper = as_bounds(self.upper, subjects[1])
        if sp.issparse(X):
            raise sparse_error("fit")
        # Sets n_features_in_ and feature_names_in_, public schema; nothing
        # below looks at the values of X.
        X = validate_hiding_values({"X": X}, validate_data, self, X, accept_sparse=False,
                                   dtype=[np.float64, np.float32])
        lower, upper = broadcast_bounds(lower, upper, self.n_features_in_, "BoundedScaler",
                                        subjects)
        self.lower_ = lower
        self.upper_ = upper
        return self

    def _center_half_width(self):
        """The map's centre, half-width and floor, from the fitted bounds and the schema."""
        kept = zero_kept(self.lower_, self.upper_, getattr(self, "keep_zero", "auto"),
                         self.n_features_in_, self.__dict__.get("feature_names_in_"))
        return unit_map(self.lower_, self.upper_, kept)

    def transform(self, X):
        """Scale ``X`` from ``[lower, upper]`` to ``[-1, 1]`` (see ``keep_zero``).

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
            Data to scale (not modified).

        Returns
        -------
        X_scaled : ndarray of shape (n_samples, n_features)
            Scaled data, float32 for float32 input and float64 otherwise.
        """
        check_is_fitted(self)
        if sp.issparse(X):
            raise sparse_error("transform", type(self).__name__)
        X = validate_hiding_values(
            {"X": X}, validate_data, self, X, accept_sparse=False,
            dtype=[np.float64, np.float32], reset=False,
        )
        center, half, floor = self._center_half_width()
        return scale_to_unit(X, center, half, clip=self.clip, floor=floor)

    def inverse_transform(self, X):
        """Map scaled data back to ``[lower, upper]``: clipped values come back as the bounds.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
            Scaled data (not modified).

        Returns
        -------
        X_original : ndarray of shape (n_samples, n_features)
            Float32 for float32 input, float64 otherwise.
        """
        check_is_fitted(self)
        if sp.issparse(X):
            raise sparse_error("inverse_transform", type(self).__name__)
        X = validate_hiding_values({"X": X}, check_array, X, accept_sparse=False,
                                   dtype=[np.float64, np.float32])
        if X.shape[1] != self.n_features_in_:
            raise ValueError(
                f"X has {X.shape[1]} features, but {type(self).__name__} is expecting "
                f"{self.n_features_in_} features as input."
            )
        center, half, _ = self._center_half_width()
        out = X.astype(np.float64, copy=True)
        with np.errstate(over="ignore"):
            out *= half
            out += center
        return out.astype(X.dtype, copy=False)

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        # transform needs n_features_in_ and the broadcast bounds from fit.
        tags.requires_fit = True
        tags.input_tags.sparse = False
        tags.input_tags.allow_nan = False
        tags.transformer_tags.preserves_dtype = ["float64", "float32"]
        return tags
