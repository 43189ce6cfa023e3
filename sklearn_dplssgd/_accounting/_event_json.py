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

_LEAVES = {
    dp_accounting.NonPrivateDpEvent: "non_private",
    dp_accounting.NoOpDpEvent: "no_op",
}
_NOISE = {
    dp_accounting.GaussianDpEvent: "gaussian",
    dp_accounting.LaplaceDpEvent: "laplace",
}


def _number_to_json(value):
    value = float(value)
    if math.isnan(value):
        raise ValueError("an event holding NaN cannot be recorded.")
    if math.isinf(value):
        return "inf" if value > 0 else "-inf"
    return value


def event_to_json(event, _depth=0):
    """The JSON-serialisable data of ``event``.

    Parameters
    ----------
    event : dp_accounting.DpEvent
        One of the types listed in the module docstring.

    Returns
    -------
    dict

    Raises
    ------
    ValueError
        For any other type of event.
    """
    if _depth > _MAX_DEPTH:
        raise ValueError(f"an event nested deeper than {_MAX_DEPTH} levels cannot be recorded.")
    kind = type(event)
    if kind in _LEAVES:
        return {"type": _LEAVES[kind]}
    if kind in _NOISE:
        return {"type": _NOISE[kind], "noise_multiplier": _number_to_json(event.noise_multiplier)}
    if kind is EpsilonDeltaDpEvent:
        return {"type": "epsilon_delta", "epsilon": _number_to_json(event.epsilon),
                "delta": _number_to_json(event.delta)}
    if kind is dp_accounting.PoissonSampledDpEvent:
        return {"type": "poisson_sampled",
                "sampling_probability": _number_to_json(event.sampling_probability),
                "event": event_to_json(event.event, _depth + 1)}
    if kind is dp_accounting.SelfComposedDpEvent:
        return {"type": "self_composed", "event": event_to_json(event.event, _depth + 1),
                "count": _count(event.count)}
    if kind is dp_accounting.ComposedDpEvent:
        return {"type": "composed",
                "events": [event_to_json(part, _depth + 1) for part in event.events]}
    if kind is dp_accounting.dp_event.RepeatAndSelectDpEvent:
        return {"type": "repeat_and_select", "event": event_to_json(event.event, _depth + 1),
                "mean": _number_to_json(event.mean), "shape": _number_to_json(event.shape)}
    raise ValueError(
        f"A {kind.__name__} cannot be recorded in a PrivacyLedger: only the events the "
        "library produces are known to its file format.")


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


_FIELDS = {
    "non_private": set(), "no_op": set(), "gaussian": {"noise_multiplier"},
    "laplace": {"noise_multiplier"}, "epsilon_delta": {"epsilon", "delta"},
    "poisson_sampled": {"sampling_probability", "event"}, "self_composed": {"event", "count"},
    "composed": {"events"}, "repeat_and_select": {"event", "mean", "shape"},
}


def event_from_json(data, _depth=0):
    """Rebuild the event that :func:`event_to_json` wrote.

    Parameters
    ----------
    data : dict
        Parsed JSON.

    Returns
    -------
    dp_accounting.DpEvent

    Raises
    ------
    ValueError
        For an unknown type, missing or extra fields, or a field of the wrong
        kind; nothing is evaluated but the known constructors.
    """
    if _depth > _MAX_DEPTH:
        raise ValueError(f"a recorded event is nested deeper than {_MAX_DEPTH} levels.")
    if not isinstance(data, dict) or not isinstance(data.get("type"), str):
        raise ValueError("a recorded event is not an object with a 'type'.")
    kind = data["type"]
    if kind not in _FIELDS:
        raise ValueError(f"a recorded event has the unknown type {kind[:40]!r}.")
    if set(data) != _FIELDS[kind] | {"type"}:
        raise ValueError(f"a recorded {kind!r} event does not have exactly its fields.")
    if kind == "non_private":
        return dp_accounting.NonPrivateDpEvent()
    if kind == "no_op":
        return dp_accounting.NoOpDpEvent()
    if kind == "gaussian":
        return dp_accounting.GaussianDpEvent(_number_from_json(data, "noise_multiplier"))
    if kind == "laplace":
        return dp_accounting.LaplaceDpEvent(_number_from_json(data, "noise_multiplier"))
    if kind == "epsilon_delta":
        return EpsilonDeltaDpEvent(_number_from_json(data, "epsilon"),
                                   _number_from_json(data, "delta"))
    if kind == "poisson_sampled":
        return dp_accounting.PoissonSampledDpEvent(
            _number_from_json(data, "sampling_probability"),
            event_from_json(data["event"], _depth + 1))
    if kind == "self_composed":
        return dp_accounting.SelfComposedDpEvent(event_from_json(data["event"], _depth + 1),
                                                 _count(data["count"]))
    if kind == "composed":
        if not isinstance(data["events"], list):
            raise ValueError("the 'events' of a recorded composition are not a list.")
        return dp_accounting.ComposedDpEvent(
            [event_from_json(part, _depth + 1) for part in data["events"]])
    return dp_accounting.dp_event.RepeatAndSelectDpEvent(
        event_from_json(data["event"], _depth + 1), _number_from_json(data, "mean"),
        _number_from_json(data, "shape"))
