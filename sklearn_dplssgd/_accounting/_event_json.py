"""DpEvents as JSON data: what a :class:`~sklearn_dplssgd.PrivacyLedger` writes to its file.

A ledger's records file may be shared (workers, a shared file system), so
it must hold data, never code: pickles run code when loaded.  Each event is
written as its type's name and its parameters, and rebuilt from them by
calling the dp-accounting class (or :class:`~sklearn_dplssgd._accounting.EpsilonDeltaDpEvent`)
with validated numbers.  Only the events the library produces are known:

==========================  ===========================================
event                       JSON
==========================  ===========================================
``GaussianDpEvent``         ``{"type": "gaussian", "noise_multiplier"}``
``LaplaceDpEvent``          ``{"type": "laplace", "noise_multiplier"}``
``PoissonSampledDpEvent``   ``{"type": "poisson_sampled", "sampling_probability", "event"}``
``SelfComposedDpEvent``     ``{"type": "self_composed", "event", "count"}``
``ComposedDpEvent``         ``{"type": "composed", "events"}``
``RepeatAndSelectDpEvent``  ``{"type": "repeat_and_select", "event", "mean", "shape"}``
``EpsilonDeltaDpEvent``     ``{"type": "epsilon_delta", "epsilon", "delta"}``
``NonPrivateDpEvent``       ``{"type": "non_private"}``
``NoOpDpEvent``             ``{"type": "no_op"}``
==========================  ===========================================

Any other type (a subclass included) is refused with a ``ValueError`` when
written and when read.  Floats are written by ``repr`` (read back to the
same float); an infinite one (a repeat-and-select ``shape`` of ``inf``) as
the string ``"inf"``.
"""

import math

import dp_accounting

from ._events import EpsilonDeltaDpEvent

__all__ = ["event_from_json", "event_to_json"]

# Deeper nesting than any event of the library: refused (a file is not
# allowed to exhaust the stack).
_MAX_DEPTH = 32

_RepeatAndSelect = dp_accounting.dp_event.RepeatAndSelectDpEvent
# Each known type: its JSON name and its fields, in the constructor's order; a
# field is a number, "event", "events" (a list of events) or "count".
_TYPES = {
    dp_accounting.NonPrivateDpEvent: ("non_private", ()),
    dp_accounting.NoOpDpEvent: ("no_op", ()),
    dp_accounting.GaussianDpEvent: ("gaussian", ("noise_multiplier",)),
    dp_accounting.LaplaceDpEvent: ("laplace", ("noise_multiplier",)),
    EpsilonDeltaDpEvent: ("epsilon_delta", ("epsilon", "delta")),
    dp_accounting.PoissonSampledDpEvent: ("poisson_sampled", ("sampling_probability", "event")),
    dp_accounting.SelfComposedDpEvent: ("self_composed", ("event", "count")),
    dp_accounting.ComposedDpEvent: ("composed", ("events",)),
    _RepeatAndSelect: ("repeat_and_select", ("event", "mean", "shape")),
}
_BY_NAME = {name: (kind, fields) for kind, (name, fields) in _TYPES.items()}


def _number_to_json(value):
    value = float(value)
    if math.isnan(value):
        raise ValueError("an event holding NaN cannot be recorded.")
    if math.isinf(value):
        return "inf" if value > 0 else "-inf"
    return value


def event_to_json(event, _depth=0):
    """The JSON-serialisable dict of ``event``; a ValueError for a type not listed above."""
    if _depth > _MAX_DEPTH:
        raise ValueError(f"an event nested deeper than {_MAX_DEPTH} levels cannot be recorded.")
    kind = type(event)
    if kind not in _TYPES:
        raise ValueError(
            f"A {kind.__name__} cannot be recorded in a PrivacyLedger: only the events the "
            "library produces are known to its file format.")
    name, fields = _TYPES[kind]
    data = {"type": name}
    for field in fields:
        value = getattr(event, field)
        if field == "event":
            data[field] = event_to_json(value, _depth + 1)
        elif field == "events":
            data[field] = [event_to_json(part, _depth + 1) for part in value]
        elif field == "count":
            data[field] = _count(value)
        else:
            data[field] = _number_to_json(value)
    return data


def _count(value):
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise ValueError(f"an event count must be a non-negative integer; got {value!r}.")
    return value


def _number_from_json(data, name):
    value = data.get(name)
    if value in ("inf", "-inf"):
        return float(value)
    if isinstance(value, bool) or not isinstance(value, (int, float)) or math.isnan(value):
        raise ValueError(f"the field {name!r} of a recorded event is not a number.")
    return float(value)


def _field_from_json(data, field, depth):
    if field == "event":
        return event_from_json(data[field], depth + 1)
    if field == "events":
        if not isinstance(data[field], list):
            raise ValueError("the 'events' of a recorded composition are not a list.")
        return [event_from_json(part, depth + 1) for part in data[field]]
    if field == "count":
        return _count(data[field])
    return _number_from_json(data, field)


def event_from_json(data, _depth=0):
    """Rebuild the event that :func:`event_to_json` wrote from parsed JSON.

    A ValueError for an unknown type, missing or extra fields, or a field of the
    wrong kind; nothing is evaluated but the known constructors.
    """
    if _depth > _MAX_DEPTH:
        raise ValueError(f"a recorded event is nested deeper than {_MAX_DEPTH} levels.")
    if not isinstance(data, dict) or not isinstance(data.get("type"), str):
        raise ValueError("a recorded event is not an object with a 'type'.")
    name = data["type"]
    if name not in _BY_NAME:
        raise ValueError(f"a recorded event has the unknown type {name[:40]!r}.")
    kind, fields = _BY_NAME[name]
    if set(data) != set(fields) | {"type"}:
        raise ValueError(f"a recorded {name!r} event does not have exactly its fields.")
    return kind(*(_field_from_json(data, field, _depth) for field in fields))
