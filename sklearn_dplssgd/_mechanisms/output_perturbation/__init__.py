"""Output perturbation: a noise-free descent, then Gaussian noise once on the weights.

In the order of a fit: the plan (:mod:`._accounting`: constants, sensitivity,
calibrated noise), the lattice the weights are released on (:mod:`._lattice`), the
noise-free descent (:mod:`._descent`), and the estimators' mechanism (:mod:`._release`).
"""

from ._accounting import NoisyWeights, plan_output_perturbation, smoothness_constants
from ._descent import NoiseFreeDescent, train_output_perturbation
from ._release import OutputPerturbation, OutputPerturbationMechanism, output_perturbation_bounds

__all__ = [
    "NoiseFreeDescent", "NoisyWeights", "OutputPerturbation", "OutputPerturbationMechanism",
    "output_perturbation_bounds",
    "plan_output_perturbation", "smoothness_constants", "train_output_perturbation",
]
