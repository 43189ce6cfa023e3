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
