"""The one training loop and what it is made of: the plan, the backend contract, losses,
optimizers, noise and learning-rate schedules, Laplacian smoothing, randomness, the "auto"
rules and the series of fits.

The modules are private; the names other layers use are re-exported here.
"""

from ._backend import TrainingBackend
from ._defaults import (
    AUTO, averaging_tail, explain_sigma, nominal_batch_size, resolve_average_start, resolve_delta,
    resolve_eta0, resolve_schedule, resolve_sigma, smoothed_noise_share,
)
from ._feature_layout import feature_layout, ORDERED
from ._lattice import (
    batch_rows_bound, Lattice, LATTICE_BITS, lattice_for, release_on_lattice,
    summation_error_factor,
)
from ._loop import run_training, TrainingPlan
from ._losses import (
    CLASSIFICATION_LOSSES, loss_code, loss_derivative, LOSSES, multiclass_residual,
    NON_SMOOTH_LOSSES, REGRESSION_LOSSES, residual_norms_at_zero, single_output_residual,
    SMOOTH_LOSSES,
)
from ._optimizers import (
    AdaGrad, Adam, apply_weight_decay, check_optimizer, compiled_update, Momentum, Optimizer,
    optimizer_error, SGD,
)
from ._randomness import (
    derived_generator, GeneratorWords, make_generator, random_state_error, warn_about_seed,
)
from ._schedules import (
    check_noise_schedule, ConstantNoise, ExponentialNoise, is_constant_schedule,
    learning_rate_schedule, LEARNING_RATES, noise_schedule_blocks, number_of_steps, RelativeNoise,
    step_levels, StepNoise,
)
from ._smoothing import smoothing_eigenvalues
from ._streaming import compose_events, Series, series_average, series_epsilon

__all__ = [
    "AUTO",
    "AdaGrad",
    "Adam",
    "CLASSIFICATION_LOSSES",
    "ConstantNoise",
    "ExponentialNoise",
    "GeneratorWords",
    "LATTICE_BITS",
    "LEARNING_RATES",
    "Lattice",
    "LOSSES",
    "Momentum",
    "NON_SMOOTH_LOSSES",
    "ORDERED",
    "Optimizer",
    "REGRESSION_LOSSES",
    "RelativeNoise",
    "SGD",
    "SMOOTH_LOSSES",
    "Series",
    "StepNoise",
    "TrainingBackend",
    "TrainingPlan",
    "apply_weight_decay",
    "averaging_tail",
    "batch_rows_bound",
    "check_noise_schedule",
    "check_optimizer",
    "compiled_update",
    "compose_events",
    "derived_generator",
    "explain_sigma",
    "feature_layout",
    "is_constant_schedule",
    "lattice_for",
    "learning_rate_schedule",
    "loss_code",
    "loss_derivative",
    "make_generator",
    "multiclass_residual",
    "noise_schedule_blocks",
    "nominal_batch_size",
    "number_of_steps",
    "optimizer_error",
    "random_state_error",
    "release_on_lattice",
    "residual_norms_at_zero",
    "resolve_average_start",
    "resolve_delta",
    "resolve_eta0",
    "resolve_schedule",
    "resolve_sigma",
    "run_training",
    "series_average",
    "series_epsilon",
    "single_output_residual",
    "smoothed_noise_share",
    "smoothing_eigenvalues",
    "step_levels",
    "summation_error_factor",
    "warn_about_seed",
]
