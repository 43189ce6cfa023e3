"""The lattice every noisy gradient sum is released on: the one place exactness lives.

A step computes its clipped-gradient sum ``S`` in floating point on any backend,
then releases the integers ``round(S / gamma) + round(s G)``: ``gamma`` a public
power of two, ``s`` a public integer scale, ``G`` standard normal, the noise
drawn exactly (:mod:`sklearn_dplssgd._backends._rounded_gaussian`). This is
post-processing of the continuous Gaussian mechanism on ``round(S / gamma)``,
whose sensitivity in lattice units, ``Delta = (W + 2 E) / gamma + sqrt(p)``, is
rigorous in floating point (``E`` the summation error over a public bound on
the batch's rows); ``s = ceil(z Delta)``. The argument is in
docs/privacy_argument.rst ("Every gradient release on a lattice").
"""

import dataclasses
import math

import numpy as np
from numba import njit

__all__ = [
    "LATTICE_BITS",
    "Lattice",
    "batch_rows_bound",
    "lattice_for",
    "release_on_lattice",
    "summation_error_factor",
]

# The lattice has at least 2**20 steps per contribution bound: the rounding's
# sqrt(p) then costs sqrt(p) / 2**20 of the noise, and the integers of a sum
# stay far below 2**53 (rows * 2**21 + noise) for any batch a fit can hold.
LATTICE_BITS = 20

# The smallest normal float64 is 2**-1022.
_SMALLEST_EXPONENT = -1022

# The largest integer noise scale the exact sampler takes.
_MAX_SCALE = 2 ** 52

# A batch exceeds its bound with probability below 2**-64 over the whole fit.
_BATCH_FAILURE_LOG = 64 * math.log(2.0)

_UNIT_ROUNDOFF = {np.dtype(np.float64): 2.0 ** -53, np.dtype(np.float32): 2.0 ** -24}


def summation_error_factor(n_terms, dtype):
    """``gamma_n = n u / (1 - n u)`` for a sum of ``n_terms`` in ``dtype`` (inf if ``n u >= 1/2``).

    The relative error bound of any summation order of that many terms, each
    a product of two stored numbers (one more rounding: ``n + 1`` in all).
    """
    nu = (n_terms + 1) * _UNIT_ROUNDOFF[np.dtype(dtype)]
    return math.inf if nu >= 0.5 else nu / (1.0 - nu)


def batch_rows_bound(sample_rate, n_rows_bound, n_steps):
    """A public bound on every step's batch size, failing with probability below ``2**-64``.

    By the Chernoff bound ``P(B >= mu + t) <= exp(-t**2 / (2 (mu + t / 3)))``
    on ``n_rows_bound`` public rows, and a union over the ``n_steps`` steps.
    """
    if sample_rate >= 1.0:
        return int(n_rows_bound)
    mu = sample_rate * n_rows_bound
    log_budget = _BATCH_FAILURE_LOG + math.log(max(1, n_steps))
    t = log_budget / 3.0 + math.sqrt(log_budget ** 2 / 9.0 + 2.0 * mu * log_budget)
    return int(min(n_rows_bound, math.ceil(mu + t)))


@dataclasses.dataclass(frozen=True)
class Lattice:
    """A release's lattice: the step, the sensitivity on it, and each step's noise scale.

    Attributes
    ----------
    step : float
        ``gamma``, a power of two.
    sensitivity : float
        ``Delta``: how far one row moves a step's rounded sum, in lattice units.
    scales : ndarray of int64, shape (n_steps,)
        ``s_t = ceil(z_t Delta)``: step t's noise is ``round(s_t G)``.
    max_batch_rows : int
        The public bound on a batch's rows the error bound holds for.
    """

    step: float
    sensitivity: float
    scales: np.ndarray
    max_batch_rows: int

    def check_batch(self, n_rows):
        """Fail closed where a step's batch has more rows than the error bound covers."""
        if n_rows > self.max_batch_rows:
            raise RuntimeError(
                f"a step's Poisson batch has {n_rows} rows, more than the "
                f"{self.max_batch_rows} the floating-point error bound of its release "
                "covers (an event of probability below 2**-64 when the public row count "
                "is right); the fit stops rather than release an unaccounted sum. Check "
                "public_n_samples.")


def lattice_for(noise_multipliers, contribution_bound, n_coordinates, max_batch_rows,
                dtype=np.float64):
    """The :class:`Lattice` of a release, from public quantities only.

    ``contribution_bound`` is ``w_max C``, ``n_coordinates`` the noisy
    coordinates ``p``, ``max_batch_rows`` from :func:`batch_rows_bound` and
    ``dtype`` the one the sum is computed in.
    """
    # The stored contribution is within the clip's slack (2**-48) of w C for
    # the computed norm of [x, 1], itself within gamma_{d + 2} of the true one
    # (a float64 sum of squares and a square root).
    width = max(1, int(n_coordinates))
    bound = contribution_bound * (1.0 + 2.0 ** -47) * (
        1.0 + summation_error_factor(width + 2, np.float64))
    error = summation_error_factor(max_batch_rows, dtype) * max_batch_rows * bound
    if not math.isfinite(error):
        raise ValueError(
            f"a batch of up to {max_batch_rows} rows summed in {np.dtype(dtype)} has no "
            "useful floating-point error bound; use float64 input.")
    # A normal power of two (a clip norm near the smallest floats would make
    # it underflow: the rounding's sqrt(p) then dominates the noise).
    step = 2.0 ** max(math.floor(math.log2(bound)) - LATTICE_BITS, _SMALLEST_EXPONENT)
    sensitivity = (bound + 2.0 * error) / step + math.sqrt(width)
    multipliers = np.asarray(noise_multipliers, dtype=np.float64)
    scales = np.ceil(multipliers * sensitivity)
    if not (scales <= _MAX_SCALE).all():
        raise ValueError(
            "the noise multiplier is too large for the exact sampler's integer scale "
            f"(at most 2**52 lattice steps); got {multipliers.max():.3g}.")
    return Lattice(step, float(sensitivity), scales.astype(np.int64), int(max_batch_rows))


@njit(cache=True, nogil=True)
def release_on_lattice(grad, noise, step):
    """``grad = step (noise + round(grad / step))``: the noisy sum, released on the lattice.

    Exact in float64 but for the rounding to integers (``step`` a power of
    two); a float32 store is post-processing. ``step == 0`` (no noise) leaves
    the sum as computed.
    """
    if step == 0.0:
        return
    for k in range(grad.shape[0]):
        for j in range(grad.shape[1]):
            grad[k, j] = step * (noise[k, j] + np.rint(np.float64(grad[k, j]) / step))
