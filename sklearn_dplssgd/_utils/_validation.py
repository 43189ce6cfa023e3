"""Validation of hyperparameters against declared constraints, and of inputs.

The estimators declare ``_parameter_constraints`` with :class:`Interval` and
:class:`Options` (scikit-learn's machinery is private), checked by
:func:`validate_parameters`. Data inputs go through
:func:`validate_hiding_values`, since scikit-learn's and NumPy's errors can
quote the data (``could not convert string to float: '<the cell>'``).
"""

import math
import numbers
import re

import numpy as np
import scipy.sparse as sp
from sklearn.utils.validation import check_array

__all__ = [
    "check_choice", "check_delta", "check_epsilon", "check_guess", "check_mechanism",
    "check_noise_multiplier", "check_positive_int", "check_sample_rate", "Interval", "Options",
    "PrivacyLeakWarning", "VALUES_NOT_SHOWN", "public_row_count", "score_hiding_values",
    "validate_hiding_values", "validate_parameters",
]

# The one wording of every error about private data (the label error included).
VALUES_NOT_SHOWN = "values are not shown: they are private"
_RESHAPE_ADVICE = (
    "Reshape your data either using array.reshape(-1, 1) if your data has a single "
    "feature or array.reshape(1, -1) if it contains a single sample")


def _cannot_be_float(value):
    if value is None or sp.issparse(value):
        return False  # sparse matrices are numeric
    try:
        np.asarray(value, dtype=np.float64)
    except (ValueError, TypeError):
        return True
    return False


def _unconvertible_column(value):
    """Where a 2-D input first fails conversion to floats: `` in column 'name'``.

    A DataFrame's column is named by its name, any other 2-D input's by its
    index: schema, never a value. Empty when there is no such column.
    """
    columns = getattr(value, "columns", None)
    try:
        if columns is not None and hasattr(value, "iloc"):
            for position, name in enumerate(columns):
                if _cannot_be_float(value.iloc[:, position]):
                    return f" in column {str(name)!r}"
            return ""
        array = np.asarray(value, dtype=object)
    except (ValueError, TypeError):
        return ""
    if array.ndim != 2:
        return ""
    for index in range(array.shape[1]):
        if _cannot_be_float(array[:, index]):
            return f" in column {index}"
    return ""


def _is_complex(value):
    try:
        return value is not None and np.iscomplexobj(value)
    except (ValueError, TypeError):
        return False


def _is_not_array_like(value):
    return isinstance(value, str) or not (
        hasattr(value, "__len__") or hasattr(value, "__array__") or hasattr(value, "shape"))


def _culprit(inputs, test):
    """The name of the first input that fails ``test``, or all the names."""
    for name, value in inputs.items():
        if test(value):
            return name
    return " or ".join(inputs)


def _public_shape(value):
    shape = getattr(value, "shape", None)
    if shape is None:
        try:
            shape = (len(value),)
        except TypeError:
            shape = ()
    return tuple(int(length) for length in shape)


# scikit-learn's and NumPy's validation messages that quote the data, each
# with the message that replaces it (the problem and the input's name, at
# most its shape). Their other messages (NaN or infinite values, shapes,
# feature counts and names, types) quote no value and are kept.
def _without_values(message, inputs):
    first = next(iter(inputs))
    if re.search(r"could not convert|invalid literal for", message):
        name = _culprit(inputs, _cannot_be_float)
        where = _unconvertible_column(inputs[name]) if name in inputs else ""
        return (f"{name} contains a value that cannot be converted to a float{where} "
                f"({VALUES_NOT_SHOWN}).")
    if message.startswith("Expected 2D array, got 1D array instead"):
        return (f"Expected a 2-D array for {first}, got a 1-D array of shape "
                f"{_public_shape(inputs[first])}. {_RESHAPE_ADVICE} ({VALUES_NOT_SHOWN}).")
    if message.startswith("Expected 2D array, got scalar array instead"):
        return (f"Expected a 2-D array for {first}, got a scalar. {_RESHAPE_ADVICE} "
                f"({VALUES_NOT_SHOWN}).")
    if message.startswith("Complex data not supported"):
        name = _culprit(inputs, _is_complex)
        return f"Complex data not supported: {name} is complex ({VALUES_NOT_SHOWN})."
    if message.startswith("Unknown label type") and not re.match(
            r"Unknown label type: [\w-]+\. ", message):
        # "Unknown label type: continuous. Maybe ..." names a kind; the other
        # forms print the labels.
        return f"Unknown label type for y ({VALUES_NOT_SHOWN})."
    mixed = re.match(r"Mix of label input types \(([\w ]+)\)", message)
    if mixed:
        return f"Mix of label input types ({mixed.group(1)}) ({VALUES_NOT_SHOWN})."
    if message.startswith("Expected array-like (array or non-string sequence)"):
        name = _culprit(inputs, _is_not_array_like)
        kind = type(inputs[name]).__name__ if name in inputs else "another type"
        return (f"Expected an array-like (array or non-string sequence) for {name}; got "
                f"{kind} ({VALUES_NOT_SHOWN}).")
    if VALUES_NOT_SHOWN in message or any(
            pattern.match(message) for pattern in _MESSAGES_WITHOUT_VALUES):
        return message
    # A message not known to be free of values may quote the data: fail
    # closed, with the inputs' names and what to check.
    return (f"{' or '.join(inputs)} did not pass input validation; the message of the check "
            f"is not shown, since it may quote the data ({VALUES_NOT_SHOWN}). Check the "
            "inputs' shapes, types and missing values.")


# The validation messages (scikit-learn's, NumPy's and the library's own checks
# that run inside validate_hiding_values) known to quote no value of the data:
# only the problem, shapes, dtypes, counts, type names and feature names
# (schema). Any other message is replaced by a generic one.
_MESSAGES_WITHOUT_VALUES = tuple(re.compile(pattern) for pattern in (
    r"Input (\w+ )?contains (NaN|infinity)",
    r"X has \d+ features?, but \w+ is expecting \d+ features? as input\.",
    r"Found input variables with inconsistent numbers of samples: \[[\d, ]*\]\Z",
    r"Found array with \d+ (sample|feature)\(s\) \(shape=\([\d, ]*\)\) while a minimum of "
    r"\d+ is required",
    r"Found array with dim \d+, while dim <= \d+ is required",
    # scikit-learn < 1.7 words the same check so.
    r"Found array with dim \d+\. \w+ expected <= \d+\.\Z",
    r"This \w+ estimator requires y to be passed, but the target y is None\.",
    r"y should be a 1d array, got an array of shape \([\d, ]*\) instead\.",
    r"Unknown label type: [\w-]+\. ",
    r"Support for labels represented as bytes is not supported",
    r"float\(\) argument must be a string or a (real )?number, not '\w+'\Z",
    r"The DType <class '[\w.]+'> could not be promoted by <class '[\w.]+'>",
    r"dtype='numeric' is not compatible with arrays of bytes/strings",
    r"Feature names are only supported if all input features have string names",
    r"The feature names should match those that were passed during fit",
    r"X (has|does not have) (valid )?feature names",
    r"(A sparse matrix|Sparse data) was passed",
    r"setting an array element with a sequence\.",
    r"sample_weight must (be a 1-d array with one weight per row of X \(\d+\); got shape "
    r"\([\d, ]*\)\.\Z|not be negative\.\Z)",
    r"The sample weights are all zero\.\Z",
    r"Some rows weigh more than max_sample_weight=",
))


def validate_hiding_values(inputs, check, *args, **kwargs):
    """``check(*args, **kwargs)`` (``validate_data``, ``check_array``): its errors quote no data.

    A ``ValueError`` or ``TypeError`` it raises is raised again as the same
    type with a message that names the problem and the input but no value
    (shapes and dtypes may stay), with no chained exception and no other
    argument. ``inputs`` maps the names the user knows the data by to it
    (``{"X": X, "y": y}``, the one that must be 2-D first), to say which is
    at fault.
    """
    try:
        return check(*args, **kwargs)
    except (ValueError, TypeError) as error:
        message = _without_values(str(error), inputs)
        kind = type(error)
        traceback = error.__traceback__
    try:
        replacement = kind(message)
        if replacement.args != (message,):
            raise TypeError
    except Exception:
        # A class that keeps other arguments: its plain base instead.
        replacement = (ValueError if issubclass(kind, ValueError) else TypeError)(message)
    # Raised outside the handler, so that the original (with the values) is
    # not attached as __context__; the traceback still shows where it failed.
    raise replacement.with_traceback(traceback)


def score_hiding_values(score, X, y, sample_weight=None):
    """Call scikit-learn's ``score(X, y, sample_weight)``; its errors quote no data.

    ``sample_weight`` is validated as numbers first (scikit-learn's metrics
    would fail on it with an unclear arithmetic error), then the call goes
    through :func:`validate_hiding_values`.
    """
    inputs = {"X": X, "y": y, "sample_weight": sample_weight}
    if sample_weight is not None and not isinstance(sample_weight, numbers.Real):
        sample_weight = validate_hiding_values(
            inputs, check_array, sample_weight, ensure_2d=False, dtype=np.float64,
            input_name="sample_weight")
    return validate_hiding_values(inputs, score, X, y, sample_weight=sample_weight)


class PrivacyLeakWarning(UserWarning):
    """A value derived from the private data, or a setting, weakens the guarantee.

    For example labels read from the training rows instead of declared with
    ``classes``, or ``delta >= 1 / n``.
    """


class Interval:
    """A ``"real"`` or ``"integral"`` range (booleans are not numbers here).

    ``low`` or ``high`` None is unbounded; ``closed`` ("both", "left",
    "right", "neither") says which bounds belong to it.
    """

    def __init__(self, kind, low, high, closed="both"):
        self.kind = kind
        self.low = low
        self.high = high
        self.closed = closed

    def type_ok(self, value):
        if isinstance(value, (bool, np.bool_)):
            return False
        if self.kind == "integral":
            return isinstance(value, numbers.Integral)
        return isinstance(value, numbers.Real)

    def value_ok(self, value):
        # Compare as Python numbers: a float16 or int8 value would otherwise
        # cast the bounds to its own narrow type.
        value = int(value) if self.kind == "integral" else float(value)
        if math.isnan(value):
            return False
        low_ok = self.low is None or value > self.low or (
            value == self.low and self.closed in ("both", "left"))
        high_ok = self.high is None or value < self.high or (
            value == self.high and self.closed in ("both", "right"))
        return low_ok and high_ok

    def __str__(self):
        kind = "an int" if self.kind == "integral" else "a float"
        left = "[" if self.closed in ("both", "left") else "("
        right = "]" if self.closed in ("both", "right") else ")"
        low = "-inf" if self.low is None else self.low
        high = "inf" if self.high is None else self.high
        return f"{kind} in the range {left}{low}, {high}{right}"


class Options:
    """A finite set of allowed values of type ``kind`` (``str`` or ``bool``)."""

    def __init__(self, kind, options):
        self.kind = kind
        self.options = tuple(options)

    def type_ok(self, value):
        if self.kind is bool:
            return isinstance(value, (bool, np.bool_))
        return isinstance(value, self.kind)

    def value_ok(self, value):
        return value in self.options

    def __str__(self):
        return "one of " + ", ".join(repr(option) for option in self.options)


def validate_parameters(estimator):
    """Check every hyperparameter of ``estimator`` against ``_parameter_constraints``.

    Each entry lists :class:`Interval`, :class:`Options`, ``None`` (None is
    allowed) or callables that return an error message or None. A value of
    none of the allowed types raises TypeError; one outside every allowed
    range, ValueError.
    """
    name = type(estimator).__name__
    for parameter, constraints in estimator._parameter_constraints.items():
        value = getattr(estimator, parameter)
        if value is None and None in constraints:
            continue
        typed = [c for c in constraints if c is not None and not callable(c)]
        checks = [c for c in constraints if c is not None and callable(c)]
        for check in checks:
            message = check(value)
            if message is not None:
                raise ValueError(f"The {parameter!r} parameter of {name} {message}")
        if not typed:
            continue
        matching_type = [c for c in typed if c.type_ok(value)]
        allowed = " or ".join(str(c) for c in typed) + (" or None" if None in constraints else "")
        if not matching_type:
            raise TypeError(f"The {parameter!r} parameter of {name} must be {allowed}; "
                            f"got {value!r} of type {type(value).__name__}.")
        if not any(c.value_ok(value) for c in matching_type):
            raise ValueError(
                f"The {parameter!r} parameter of {name} must be {allowed}; got {value!r}.")


# Arguments of the accounting functions: each returns the value as a Python
# float, int or str, and raises ValueError naming the parameter.


def _is_real(x):
    return isinstance(x, numbers.Real) and not isinstance(x, bool)


def check_epsilon(epsilon, name="epsilon"):
    if not _is_real(epsilon) or math.isnan(epsilon) or epsilon <= 0:
        raise ValueError(
            f"{name} must be a positive number (float('inf') for no privacy), got {epsilon!r}.")
    return float(epsilon)


def check_delta(delta):
    if not _is_real(delta) or not 0 < delta < 1:
        raise ValueError(f"delta must be a number in (0, 1), got {delta!r}.")
    return float(delta)


def check_sample_rate(sample_rate):
    if not _is_real(sample_rate) or not 0 < sample_rate <= 1:
        raise ValueError(f"sample_rate must be a number in (0, 1], got {sample_rate!r}.")
    return float(sample_rate)


def check_positive_int(value, name):
    if isinstance(value, bool) or not isinstance(value, numbers.Integral) or value < 1:
        raise ValueError(f"{name} must be an integer >= 1, got {value!r}.")
    return int(value)


def check_choice(value, allowed, name):
    if not isinstance(value, str) or value not in allowed:
        raise ValueError(f"{name} must be one of {allowed}, got {value!r}.")
    return value


def check_noise_multiplier(noise_multiplier):
    if not _is_real(noise_multiplier) or math.isnan(noise_multiplier) or noise_multiplier < 0:
        raise ValueError(f"noise_multiplier must be a number >= 0, got {noise_multiplier!r}.")
    return float(noise_multiplier)


def _check_pld_discretization(value):
    if value is None:
        return None
    if not _is_real(value) or not (0 < value < math.inf):
        raise ValueError(
            f"pld_discretization must be None or a positive finite number, got {value!r}.")
    return float(value)


def check_mechanism(delta, sample_rate, n_steps, accountant, neighboring,
                    pld_discretization, *, accountants, relations):
    """The arguments shared by calibrate_noise and compute_epsilon, checked.

    ``accountants`` and ``relations`` are the allowed names.
    """
    return (
        check_delta(delta),
        check_sample_rate(sample_rate),
        check_positive_int(n_steps, "n_steps"),
        check_choice(accountant, accountants, "accountant"),
        check_choice(neighboring, relations, "neighboring"),
        _check_pld_discretization(pld_discretization),
    )


def check_guess(guess, target):
    """The starting point of a noise search must be a positive finite number."""
    if not (math.isfinite(guess) and guess > 0):
        raise ValueError(
            f"Cannot calibrate the noise for epsilon={target!r} at this delta "
            "(the starting point of the search is not finite); use a delta "
            "between about 1e-300 and 0.5.")


def public_row_count(X):
    """The number of rows of ``X`` without reading them (None if unknown)."""
    shape = getattr(X, "shape", None)
    if shape is not None and len(shape) >= 1:
        return int(shape[0]) if shape[0] is not None else None
    try:
        return len(X)
    except TypeError:
        return None
