"""The release mechanisms of the estimators, as objects (see :mod:`._release`).

:data:`MECHANISMS` maps each value of the estimators' ``mechanism``
parameter to its mechanism; :func:`mechanism_named` looks one up.
"""

from ._gradient import GradientPerturbationMechanism, ReleasePlan
from ._output import OutputPerturbationMechanism
from ._release import ReleaseMechanism, ReleaseRecord, TrainingData

__all__ = [
    "GradientPerturbationMechanism",
    "MECHANISMS",
    "OutputPerturbationMechanism",
    "ReleaseMechanism",
    "ReleasePlan",
    "ReleaseRecord",
    "TrainingData",
    "mechanism_named",
]

MECHANISMS = {
    mechanism.name: mechanism
    for mechanism in (GradientPerturbationMechanism(), OutputPerturbationMechanism())
}


def mechanism_named(name):
    """The mechanism selected by ``mechanism=name`` (a validated value)."""
    return MECHANISMS[name]
