"""The clipped per-sample gradients rounded onto a public grid and summed as integers (Numba).

The exact-noise mode releases a function of an integer vector: each sampled
row's clipped gradient ``c_i = r_i [x_i, b]`` (``||c_i|| <= C``, ``b`` the
intercept term) is divided by the public grid step ``gamma = 2**-k C`` and
rounded to the nearest integer, coordinate by coordinate, *per row*; the rows'
integer vectors ``n_i`` are summed in int64, and the discrete Gaussian noise
is added to that sum. Neighbouring datasets then give sums that differ by one
row's ``n_i``, whose norm is at most ``||c_i / gamma|| + sqrt(D) / 2 <= 2**k +
sqrt(D) / 2`` for ``D`` coordinates (each coordinate moves by at most 1/2).
Rounding the *sum* instead would not be bounded by one row.

:func:`grid_norm_bound` is that bound, squared and rounded up to an integer
(with a relative slack of ``2**-30`` for the float64 evaluation of
``c_i / gamma``), and it is enforced, not assumed: the kernel computes each
row's ``||n_i||**2`` exactly in int64 and leaves out any row above the bound
(a row whose clipped values are not finite included), so the sensitivity in
grid units is ``sqrt(grid_norm_bound(k, D))`` whatever the floats did.

Overflow is impossible by construction: every entry of an accepted ``n_i``
is at most ``2**24 + 2**16`` in magnitude (``k <= MAX_GRID_BITS``,
``D < 2**32``), a batch has at most :data:`MAX_BATCH_ROWS` rows (checked), so
every coordinate of the sum stays below ``2**61`` in magnitude, and the
discrete Gaussian noise below ``2**62``: their sum fits int64.
"""

import math

import numpy as np
from numba import njit

__all__ = [
    "MAX_BATCH_ROWS",
    "MAX_GRID_BITS",
    "grid_norm_bound",
    "rounded_clipped_sum",
]

# The grid step is gamma = 2**-k C with 0 <= k <= MAX_GRID_BITS.
MAX_GRID_BITS = 24
# At most this many rows in one sum: 2**36 rows times entries below 2**25 stay
# below 2**61 (an array of 2**36 rows of one float64 each is 512 GiB).
MAX_BATCH_ROWS = 2 ** 36
_MAX_COORDINATES = 2 ** 32


def _check_grid(grid_bits, n_coordinates):
    if isinstance(grid_bits, bool) or not isinstance(grid_bits, (int, np.integer)) or not (
            0 <= grid_bits <= MAX_GRID_BITS):
        raise ValueError(f"grid_bits must be an integer in [0, {MAX_GRID_BITS}].")
    if isinstance(n_coordinates, bool) or not isinstance(n_coordinates, (int, np.integer)) or not (
            1 <= n_coordinates < _MAX_COORDINATES):
        raise ValueError("n_coordinates must be an integer in [1, 2**32).")


def grid_norm_bound(grid_bits, n_coordinates):
    """An integer ``B`` with ``||n_i||**2 <= B`` for every row's rounded contribution.

    ``B >= (2**k (1 + 2**-30) + sqrt(D) / 2)**2``, computed with integers
    only: ``4**k (1 + 2**-30)**2 <= 4**k + 2**(2k - 29) + 1``, the cross term
    ``2**k sqrt(D) (1 + 2**-30) <= ceil(sqrt(4**k D)) + ceil(sqrt(4**k D) / 2**30)``,
    and ``D / 4 <= ceil(D / 4)``.

    Parameters
    ----------
    grid_bits : int
        ``k``: the grid step is ``2**-k`` times the clip norm.
    n_coordinates : int
        ``D``: the coordinates of one contribution, ``K (d + 1)`` with an
        intercept, ``K d`` without.

    Returns
    -------
    int
        The bound, in squared grid units (the sensitivity under add/remove is
        its square root).
    """
    _check_grid(grid_bits, n_coordinates)
    k, dimension = int(grid_bits), int(n_coordinates)
    cross = math.isqrt(4 ** k * dimension)
    if cross * cross < 4 ** k * dimension:
        cross += 1
    return (4 ** k + (2 ** (2 * k) >> 29) + 1 + cross + -(-cross // 2 ** 30)
            + -(-dimension // 4))


def rounded_clipped_sum(rows, clipped_residuals, clip_norm, grid_bits, intercept_term=1.0):
    """``sum_i n_i``: each row's clipped gradient on the grid ``2**-k clip_norm``, in int64.

    Parameters
    ----------
    rows : ndarray of shape (b, d), float32 or float64
        The sampled rows.
    clipped_residuals : ndarray of shape (b, K), float64
        The residuals already clipped: ``||r_i|| sqrt(||x_i||**2 + intercept_term**2)
        <= clip_norm``.
    clip_norm : float
        ``C``, positive.
    grid_bits : int
        ``k``, in ``[0, MAX_GRID_BITS]``.
    intercept_term : float, default=1.0
        The intercept's column value; 0 for a model without intercept (its
        column of the sum is then 0 and not counted in ``D``).

    Returns
    -------
    total : ndarray of int64, shape (K, d + 1)
        The integer sum; the last column is the intercept's.
    n_left_out : int
        Rows whose rounded contribution exceeded :func:`grid_norm_bound` (or
        were not finite) and were left out: 0 unless the clip failed.
    """
    n_rows, n_features = rows.shape
    n_outputs = clipped_residuals.shape[1]
    if clipped_residuals.shape[0] != n_rows:
        raise ValueError("rows and clipped_residuals must have the same number of rows.")
    if n_rows > MAX_BATCH_ROWS:
        raise ValueError("a batch of more than 2**36 rows could overflow the integer sum.")
    if not (math.isfinite(clip_norm) and clip_norm > 0):
        raise ValueError("clip_norm must be a positive finite number.")
    with_intercept = intercept_term != 0
    dimension = n_outputs * (n_features + (1 if with_intercept else 0))
    bound = grid_norm_bound(grid_bits, dimension)
    scale = 2.0 ** grid_bits / float(clip_norm)
    total = np.zeros((n_outputs, n_features + 1), dtype=np.int64)
    contribution = np.empty((n_outputs, n_features + 1), dtype=np.int64)
    left_out = _rounded_sum(rows, np.ascontiguousarray(clipped_residuals, dtype=np.float64),
                            scale, float(intercept_term), np.int64(bound),
                            float(2 ** grid_bits + 2 ** 17), contribution, total)
    return total, int(left_out)


@njit(cache=True, nogil=True)
def _rounded_sum(rows, residuals, scale, intercept_term, bound, entry_limit, contribution,
                 total):
    """Add each row's rounded contribution to ``total`` if its exact squared norm is within
    ``bound``; return the number of rows left out."""
    n_rows, n_features = rows.shape
    n_outputs = residuals.shape[1]
    left_out = 0
    for i in range(n_rows):
        squared = np.int64(0)
        valid = True
        for k in range(n_outputs):
            scaled = residuals[i, k] * scale
            for j in range(n_features + 1):
                value = scaled * (np.float64(rows[i, j]) if j < n_features else intercept_term)
                # A NaN fails the comparison: the row is left out.
                if not abs(value) <= entry_limit:
                    valid = False
                    break
                entry = np.int64(np.rint(value))
                contribution[k, j] = entry
                squared += entry * entry
                # Stop as soon as the bound is passed: before each addition
                # squared <= bound < 2**50 and entry**2 < 2**50, so it never
                # overflows.
                if squared > bound:
                    valid = False
                    break
            if not valid:
                break
        if not valid:
            left_out += 1
            continue
        for k in range(n_outputs):
            for j in range(n_features + 1):
                total[k, j] += contribution[k, j]
    return left_out
