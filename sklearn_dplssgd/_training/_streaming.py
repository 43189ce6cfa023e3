"""Releases that continue one another: ``partial_fit`` and ``warm_start``.

A *series* is the sequence of releases of one estimator since its last cold
``fit``: every ``partial_fit`` call, and every ``fit`` with
``warm_start=True``, starts from the weights the previous release published
and is a private release of its own rows, calibrated to ``(epsilon,
delta_)`` on its own. What the series as a whole releases is their
(adaptive, sequential) composition: the same rows may come again, and each
release starts from the previous one's output. That is always a valid upper
bound. When the user promises that the releases saw disjoint sets of rows,
parallel composition applies: a row (and a replaced or added row) is in one
release only, the releases before it do not depend on it, and the ones after
it depend on it only through the published weights they start from (post-
processing), so the series is as private as its least private release.

The series average. With ``average="auto"`` a ``partial_fit`` call publishes
the weighted mean of the last iterates of the calls of the series (each call
trains without averaging of its own and the next call continues from its last
iterate, kept as ``_series_trajectory``): call j, of ``s_j`` steps ending at
step ``t_j`` of the series, weighs ``s_j t_j^2``, so that the early calls,
which lag behind the model, count little (the last half of the steps carries
7/8 of the weight). The noise of different calls is independent, and the
mean cancels part of it; it is post-processing of iterates every call's
guarantee already covers, computed from public step counts, and so costs no
privacy (``epsilon_`` and ``dp_event_`` are those of the same calls without
it).
"""

import math
import typing

import dp_accounting
import numpy as np

from .._accounting import event_epsilon

__all__ = ["Series", "compose_events", "series_average", "series_epsilon"]


class Series(typing.NamedTuple):
    """What a continuing release takes over from the estimator's fitted state."""

    events: tuple
    delta: float
    eta0: float
    n_steps: int
    params: np.ndarray
    classes: typing.Optional[np.ndarray]
    disjoint: tuple
    # The series average's state (see the module docstring): the published
    # mean, in the training scale, and the weight it carries so far (0: no
    # average under way, the next call starts one).
    average: typing.Optional[np.ndarray] = None
    average_weight: float = 0.0


def series_average(average, average_weight, last_iterate, n_steps, end_step):
    """The series average once a call's last iterate is added to it.

    Parameters
    ----------
    average : ndarray or None
        The mean so far (None, or any value when ``average_weight`` is 0).
    average_weight : float
        The weight it carries, the sum of the earlier calls' weights.
    last_iterate : ndarray
        The call's last iterate.
    n_steps : int
        The call's steps ``s_j`` (public).
    end_step : int
        ``t_j``, the series' steps once the call is done (public).

    Returns
    -------
    average : ndarray
        A new array: ``sum_j w_j theta_j / sum_j w_j``, ``w_j = s_j t_j^2``.
    average_weight : float
    """
    weight = float(n_steps) * float(end_step) ** 2
    total = float(average_weight) + weight
    if average is None or not average_weight > 0:
        return np.array(last_iterate, dtype=np.float64, copy=True), weight
    return average + (weight / total) * (last_iterate - average), total


def compose_events(events):
    """One dp-accounting event for releases made in this order.

    A single release is its own event. Otherwise the ``ComposedDpEvent`` of
    the releases, with each run of equal consecutive events written as one
    ``SelfComposedDpEvent`` (the same composition, which the accountants
    evaluate in a few convolutions instead of one per call).

    Parameters
    ----------
    events : sequence of dp_accounting.DpEvent

    Returns
    -------
    event : dp_accounting.DpEvent
    """
    runs = []
    for event in events:
        if runs and runs[-1][0] == event:
            runs[-1][1] += 1
        else:
            runs.append([event, 1])
    parts = [event if count == 1 else dp_accounting.SelfComposedDpEvent(event, count)
             for event, count in runs]
    return parts[0] if len(parts) == 1 else dp_accounting.ComposedDpEvent(parts)


def series_epsilon(events, delta, neighboring, disjoint):
    """Epsilon at ``delta`` of a series of releases.

    A release declared disjoint saw none of the rows of the releases before
    it: it starts a new *part* of the rows, which it and every later release
    not declared disjoint may see (a later declared release sees new rows
    only). A row of a part is therefore seen by the releases of its part
    only; two neighbouring data sets differ in one row, hence in one part,
    and the series is as private as the composition of the releases of its
    least private part (parallel composition across parts, sequential
    within one; the releases of other parts see the differing row only
    through the weights they start from, which is post-processing). The
    first release always starts a part; with no release declared, there is
    one part and the result is the sequential composition of all of them;
    with every release declared, the largest of their epsilons.

    Parameters
    ----------
    events : sequence of dp_accounting.DpEvent
        Each release's event, in order (at least two).
    delta : float
    neighboring : {"replace_one", "add_remove"}
    disjoint : sequence of bool
        For each release, the user's promise that its rows were in no
        earlier release.

    Returns
    -------
    epsilon : float
        ``inf`` when a release was not private.
    """
    if any(isinstance(event, dp_accounting.NonPrivateDpEvent) for event in events):
        return math.inf
    if len(disjoint) != len(events):
        raise ValueError("one disjoint flag per release is needed")
    starts = [0] + [index for index in range(1, len(events)) if disjoint[index]]
    parts = {}
    for start in starts:
        members = [events[start]] + [events[index] for index in range(start + 1, len(events))
                                     if not disjoint[index]]
        parts.setdefault(repr(members), members)
    return max(event_epsilon(compose_events(members), delta, neighboring)
               for members in parts.values())
