"""Validation of hyperparameters against declared constraints.

scikit-learn's own constraint machinery lives in a private module, so the
estimators declare ``_parameter_constraints`` with the two small classes
below and :func:`validate_parameters` checks them at the start of ``fit``.
A wrong type raises ``TypeError``, a value out of range raises
``ValueError``; both messages name the parameter and the estimator.
"""

import math
import numbers
import sys
import warnings

import numpy as np

__all__ = ["Interval", "Options", "validate_parameters", "PrivacyLeakWarning", "warn_once"]


class PrivacyLeakWarning(UserWarning):
    """A value derived from the private data, or a setting, weakens the guarantee.

    Raised, for example, when the label set is read from the training labels
    instead of being declared with ``classes``, or when ``delta >= 1 / n``.
    """


# (text, category) of the warnings shown so far (see warn_once).
_SHOWN_WARNINGS = set()


def _filter_action(message, category, module, lineno):
    """The action Python's warning filters take for this warning."""
    for action, text, filter_category, filter_module, filter_lineno in warnings.filters:
        if ((text is None or text.match(message))
                and issubclass(category, filter_category)
                and (filter_module is None or filter_module.match(module))
                and (filter_lineno == 0 or filter_lineno == lineno)):
            return action
    return warnings.defaultaction


def warn_once(message, category):
    """Issue a warning that the default filters show once per process.

    Python's ``"default"`` action shows a warning once per location, and its
    registries are reset whenever the filters change (scikit-learn and
    dp-accounting change them inside every fit), so a search printed the
    same warning once per fit. Here each cause (its text, worded without
    per-fit numbers, and its category) is shown once per process under the
    ``"default"``, ``"module"`` and ``"once"`` actions, while ``"always"``
    still shows every occurrence, ``"error"`` raises every time and
    ``"ignore"`` hides it. The warning is attributed to the library's line
    that issues it.

    Parameters
    ----------
    message : str
        The same text for every occurrence of the cause.
    category : type of Warning
    """
    frame = sys._getframe(1)
    module = frame.f_globals.get("__name__", "sklearn_dplssgd")
    action = _filter_action(message, category, module, frame.f_lineno)
    if action in ("default", "module", "once"):
        if (message, category) in _SHOWN_WARNINGS:
            return
        _SHOWN_WARNINGS.add((message, category))
    warnings.warn_explicit(
        message, category, filename=frame.f_code.co_filename, lineno=frame.f_lineno,
        module=module, registry=None, module_globals=frame.f_globals,
    )


class Interval:
    """A real or integral range; booleans are never accepted as numbers.

    Parameters
    ----------
    kind : {"real", "integral"}
        ``"real"`` accepts any real number, ``"integral"`` only integers.
    low, high : float or None
        Bounds; ``None`` is unbounded.
    closed : {"both", "left", "right", "neither"}
        Which bounds belong to the interval.
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
        low_ok = (
            self.low is None
            or value > self.low
            or (value == self.low and self.closed in ("both", "left"))
        )
        high_ok = (
            self.high is None
            or value < self.high
            or (value == self.high and self.closed in ("both", "right"))
        )
        return low_ok and high_ok

    def __str__(self):
        kind = "an int" if self.kind == "integral" else "a float"
        left = "[" if self.closed in ("both", "left") else "("
        right = "]" if self.closed in ("both", "right") else ")"
        low = "-inf" if self.low is None else self.low
        high = "inf" if self.high is None else self.high
        return f"{kind} in the range {left}{low}, {high}{right}"


class Options:
    """A finite set of allowed values of a given type.

    Parameters
    ----------
    kind : type
        Type the value must have (``str`` or ``bool``).
    options : iterable
        The allowed values.
    """

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
    """Check every hyperparameter of ``estimator`` against its constraints.

    Each entry of ``estimator._parameter_constraints`` is a list of
    :class:`Interval`, :class:`Options`, ``None`` (the value ``None`` is
    allowed) or ``callable`` (a callable check that returns an error message
    or ``None``, for values such as ``classes`` and ``random_state``).

    Parameters
    ----------
    estimator : BaseEstimator

    Raises
    ------
    TypeError
        The value has none of the allowed types.
    ValueError
        The value has an allowed type but lies outside every allowed range.
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
            raise TypeError(
                f"The {parameter!r} parameter of {name} must be {allowed}; "
                f"got {value!r} of type {type(value).__name__}."
            )
        if not any(c.value_ok(value) for c in matching_type):
            raise ValueError(
                f"The {parameter!r} parameter of {name} must be {allowed}; got {value!r}."
            )


# --------------------------------------------------------------------------
# Arguments of the accounting functions (calibrate_noise, compute_epsilon,
# paper_noise_multiplier, ...): each returns the value normalised to a Python
# float, int or str, and raises ValueError naming the parameter.
# --------------------------------------------------------------------------


def _is_real(x):
    return isinstance(x, numbers.Real) and not isinstance(x, bool)


def _check_epsilon(epsilon, name="epsilon"):
    if not _is_real(epsilon) or math.isnan(epsilon) or epsilon <= 0:
        raise ValueError(
            f"{name} must be a positive number (float('inf') for no privacy), "
            f"got {epsilon!r}."
        )
    return float(epsilon)


def _check_delta(delta):
    if not _is_real(delta) or not 0 < delta < 1:
        raise ValueError(f"delta must be a number in (0, 1), got {delta!r}.")
    return float(delta)


def _check_sample_rate(sample_rate):
    if not _is_real(sample_rate) or not 0 < sample_rate <= 1:
        raise ValueError(
            f"sample_rate must be a number in (0, 1], got {sample_rate!r}."
        )
    return float(sample_rate)


def _check_positive_int(value, name):
    if isinstance(value, bool) or not isinstance(value, numbers.Integral):
        raise ValueError(f"{name} must be an integer >= 1, got {value!r}.")
    if value < 1:
        raise ValueError(f"{name} must be an integer >= 1, got {value!r}.")
    return int(value)


def _check_choice(value, allowed, name):
    if not isinstance(value, str) or value not in allowed:
        raise ValueError(f"{name} must be one of {allowed}, got {value!r}.")
    return value


def _check_noise_multiplier(noise_multiplier):
    if (
        not _is_real(noise_multiplier)
        or math.isnan(noise_multiplier)
        or noise_multiplier < 0
    ):
        raise ValueError(
            f"noise_multiplier must be a number >= 0, got {noise_multiplier!r}."
        )
    return float(noise_multiplier)


def _check_pld_discretization(value):
    if value is None:
        return None
    if not _is_real(value) or not (0 < value < math.inf):
        raise ValueError(
            f"pld_discretization must be None or a positive finite number, "
            f"got {value!r}."
        )
    return float(value)


def _check_mechanism(delta, sample_rate, n_steps, accountant, neighboring,
                     pld_discretization, *, accountants, relations):
    """Validate the arguments shared by calibrate_noise and compute_epsilon.

    ``accountants`` and ``relations`` are the allowed names
    (``_accounting.ACCOUNTANTS`` and ``_accounting.NEIGHBORING_RELATIONS``).
    """
    return (
        _check_delta(delta),
        _check_sample_rate(sample_rate),
        _check_positive_int(n_steps, "n_steps"),
        _check_choice(accountant, accountants, "accountant"),
        _check_choice(neighboring, relations, "neighboring"),
        _check_pld_discretization(pld_discretization),
    )


def _check_guess(guess, target):
    """The starting point of a noise search must be a positive finite number."""
    if not (math.isfinite(guess) and guess > 0):
        raise ValueError(
            f"Cannot calibrate the noise for epsilon={target!r} at this delta "
            "(the starting point of the search is not finite); use a delta "
            "between about 1e-300 and 0.5."
        )
