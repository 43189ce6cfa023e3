"""The lattice every noisy gradient sum is released on: the one place exactness lives.

A step computes its clipped-gradient sum ``S`` in floating point on any backend
(dense or CSR kernels, a team of threads, a Dask cluster, an array API device),
then releases the integer vector ``round(S / gamma) + Z``: ``gamma`` a public
power of two, ``Z`` integer noise drawn exactly, ``round(s G)`` with ``G``
standard normal and ``s`` a public integer (see
:mod:`sklearn_dplssgd._backends._rounded_gaussian`). For an integer vector ``R``,
``R + round(s G) = round(R + s G)``: the release is post-processing of the
continuous Gaussian mechanism applied to ``R = round(S / gamma)``, and everything
after it (``gamma`` times the integers, smoothing, the optimizer) is
post-processing of integers. No floating-point noise is ever drawn, so the low
bits of the released coefficients carry nothing but the integers (the attack of
Mironov, "On significance of the least significant bits for differential
privacy", CCS 2012, has nothing to read).

The sensitivity of ``R`` in lattice units (``sensitivity_on_lattice``) bounds
``||R(D) - R(D')||`` for neighbouring data, rigorously in floating point:

* one row's stored clipped contribution has norm at most ``w C`` times the
  clip's slack and the relative error of the float64 norm it was checked with;
* the computed sum differs from the exact sum of the stored contributions by at
  most ``gamma_h sum_i ||p_i|| <= gamma_h N W`` (Higham, *Accuracy and Stability
  of Numerical Algorithms*, 2nd ed., SIAM 2002, section 4.2: recursive summation
  in *any* order, pairwise, blocked or threaded, has depth at most ``N``), with
  ``gamma_h = h u / (1 - h u)``, ``u`` the unit roundoff of the sum's dtype,
  ``N`` a public bound on the batch's rows and ``W`` the contribution bound;
  both neighbours' sums carry such an error;
* each rounding moves a coordinate by at most 1/2, so two roundings differ by
  at most ``sqrt(p)`` over ``p`` noisy coordinates.

So ``Delta = (W + 2 E) / gamma + sqrt(p)`` and a step with noise multiplier
``z`` draws ``s = ceil(z Delta)``: the continuous Gaussian on ``R`` has
multiplier ``s / Delta >= z``, and the fit's event (``z``, calibrated as
before) holds. ``gamma`` is the largest power of two with ``W / gamma >=
2**LATTICE_BITS``, so ``Delta`` exceeds ``W / gamma`` by about ``sqrt(p) /
2**20`` relative: the noise grows by that fraction (8e-5 for 7,850
coordinates), the accounting not at all.

The batch bound ``N`` (:func:`batch_rows_bound`) holds for every step but with
probability below ``2**-64`` (a Chernoff bound on the Poisson batch's size over
the public row count); a batch above it fails the fit closed rather than
release a sum whose error was not accounted.
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

    Each of at most ``n_rows_bound`` rows enters a step with probability
    ``sample_rate``; by the Chernoff bound ``P(B >= mu + t) <= exp(-t**2 / (2
    (mu + t / 3)))`` and a union over the ``n_steps`` steps.

    Parameters
    ----------
    sample_rate : float
    n_rows_bound : int
        A public bound on the rows the batches are drawn from.
    n_steps : int

    Returns
    -------
    int
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

    Parameters
    ----------
    noise_multipliers : ndarray of shape (n_steps,)
        ``z_t`` (all positive).
    contribution_bound : float
        ``w_max C``: a row's contribution to a step's sum.
    n_coordinates : int
        ``p``, the noisy coordinates of a step.
    max_batch_rows : int
        ``N``, from :func:`batch_rows_bound`.
    dtype : dtype, default=float64
        The dtype the sum is computed in.

    Returns
    -------
    Lattice
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

    ``noise`` holds integers in float64 (exact below ``2**53``); ``step`` is a
    power of two, so ``grad / step``, the integer sum and the product are exact
    in float64 and the only rounding before the store is the one to the nearest
    integer. Storing into a float32 ``grad`` rounds the released value: a
    function of the released integer, so post-processing too. ``step == 0``
    (a fit without noise) leaves the sum as computed.
    """
    if step == 0.0:
        return
    for k in range(grad.shape[0]):
        for j in range(grad.shape[1]):
            grad[k, j] = step * (noise[k, j] + np.rint(np.float64(grad[k, j]) / step))
