"""The release mechanisms of the estimators, each with its accounting value.

One module (or subpackage) per mechanism: gradient perturbation (:mod:`._gradient`), output
perturbation (:mod:`.output_perturbation`) and the private search's selection
(:mod:`._search_selection`). :mod:`._release` holds the interface they answer, :mod:`._settings`
the frozen hyperparameters of a fit. :data:`MECHANISMS` maps each value of the estimators'
``mechanism`` parameter to its mechanism.
"""

from ._gradient import GradientPerturbation, GradientPerturbationMechanism
from ._release import Mechanism, ReleaseMechanism, ReleaseRecord, TrainingData
from ._search_selection import RandomSearchSelection
from ._settings import FitSettings, spends_privacy
from .output_perturbation import (
    NoiseFreeDescent, OutputPerturbation, OutputPerturbationMechanism, smoothness_constants,
)

__all__ = [
    "FitSettings", "GradientPerturbation", "GradientPerturbationMechanism", "MECHANISMS",
    "Mechanism", "NoiseFreeDescent", "OutputPerturbation", "OutputPerturbationMechanism",
    "RandomSearchSelection", "ReleaseMechanism", "ReleaseRecord", "TrainingData",
    "mechanism_named", "smoothness_constants", "spends_privacy",
]

MECHANISMS = {
    mechanism.name: mechanism
    for mechanism in (GradientPerturbationMechanism(), OutputPerturbationMechanism())
}


def mechanism_named(name):
    """The mechanism selected by ``mechanism=name`` (a validated value)."""
    return MECHANISMS[name]
