"""Output perturbation: a noise-free descent, then Gaussian noise once on the weights.

Its parts, in the order of a fit: the accounting value and the plan
(:mod:`._accounting`: the smoothness constants, the sensitivity, the
calibrated noise), the lattice the weights are released on with exactly
sampled integer noise (:mod:`._lattice`: the step, the scale, the widened
sensitivity), the noise-free descent run by the training loop as a backend
of its own (:mod:`._descent`), and the release mechanism the estimators ask
(:mod:`._release`).
"""

from ._accounting import OutputPerturbation, plan_output_perturbation, smoothness_constants
from ._descent import NoiseFreeDescent, train_output_perturbation
from ._release import OutputPerturbationMechanism

__all__ = [
    "NoiseFreeDescent",
    "OutputPerturbation",
    "OutputPerturbationMechanism",
    "plan_output_perturbation",
    "smoothness_constants",
    "train_output_perturbation",
]
