"""The release mechanisms of the estimators, each with its accounting value.

One module (or subpackage) per mechanism: gradient perturbation (:mod:`._gradient`), output
perturbation (:mod:`.output_perturbation`) and the private search's selection
(:mod:`._search_selection`). :mod:`._release` holds the interface they answer, :mod:`._settings`
the frozen hyperparameters of a fit. :data:`MECHANISMS` maps each name the estimators'
``mechanism`` parameter accepts to its mechanism; a value object (:class:`OutputPerturbation`)
names its mechanism by its ``name``.
"""

from ._gradient import GradientPerturbation, GradientPerturbationMechanism
from ._release import Mechanism, ReleaseMechanism, ReleaseRecord, TrainingData
from ._search_selection import RandomSearchSelection
from ._settings import FitSettings, spends_privacy
from .output_perturbation import (
    NoiseFreeDescent, NoisyWeights, OutputPerturbation, OutputPerturbationMechanism,
    output_perturbation_bounds, smoothness_constants,
)

__all__ = [
    "FitSettings", "GradientPerturbation", "GradientPerturbationMechanism", "MECHANISMS",
    "Mechanism", "NoiseFreeDescent", "NoisyWeights", "OutputPerturbation",
    "OutputPerturbationMechanism", "RandomSearchSelection", "ReleaseMechanism", "ReleaseRecord",
    "TrainingData", "mechanism_error", "mechanism_named", "output_perturbation_bounds",
    "smoothness_constants", "spends_privacy",
]

MECHANISMS = {
    mechanism.name: mechanism
    for mechanism in (GradientPerturbationMechanism(), OutputPerturbationMechanism())
}


def mechanism_named(value, default=None):
    """The mechanism a ``mechanism`` value (a name or a value object) selects, else ``default``.

    The estimators' parameter validation refuses a value that selects none.
    """
    name = getattr(value, "name", value)
    return MECHANISMS.get(name, default) if isinstance(name, str) else default


def mechanism_error(value):
    """The ``mechanism`` constraint: a message, or None when valid."""
    if isinstance(value, OutputPerturbation):
        try:
            value.check()
        except ValueError as error:
            return "is not valid: " + str(error)
        return None
    if isinstance(value, str) and value in MECHANISMS:
        return None
    return (f"must be one of {tuple(MECHANISMS)} or an OutputPerturbation; "
            f"got {value!r}.")
