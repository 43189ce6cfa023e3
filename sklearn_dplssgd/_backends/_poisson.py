"""The Poisson batches' positions from exponential draws, in one compiled pass.

:func:`._numpy.poisson_batches` draws a fit's batch inclusions as one
Bernoulli process over ``n_steps * n_samples`` slots, through its geometric
gaps. NumPy's ``Generator.geometric(p)`` draws each gap, for ``p < 1/3``, by
inversion: ``ceil(-E / log1p(-p))`` for a standard exponential ``E`` (capped
at the largest int64), one call per draw. Drawing the exponentials in one
fill (``Generator.standard_exponential``: the same draws from the same
stream, in the same order) and inverting them here gives the same gaps,
bit for bit, in about half the time; the same pass accumulates the
positions, splits them into steps and takes each row's index, which the
whole-array form did in three more passes (cumulative sum, search,
remainder). The gaps are those NumPy's documented inversion gives; the test
compares both forms draw for draw.
"""

import numpy as np
from numba import njit

__all__ = ["INVERSION_BELOW", "place_gaps"]

# NumPy inverts the exponential below this rate (it searches above).
INVERSION_BELOW = 0.333333333333333333333333

# The smallest double above the largest int64: a gap at least this is capped.
_INT64_CAP = 9.223372036854776e+18


@njit(cache=True, nogil=True)
def place_gaps(exponentials, log_keep, n_samples, n_slots, rows, offsets, state):
    """Continue the Bernoulli process with the gaps ``ceil(-E / log_keep)``.

    Parameters
    ----------
    exponentials : ndarray of float64
        Standard exponential draws, in stream order.
    log_keep : float
        ``log1p(-p)`` for the sample rate ``p`` (negative).
    n_samples, n_slots : int
        Rows per step, and ``n_samples * n_steps``.
    rows : ndarray of int64
        Receives each kept position's row, from index ``state[1]`` on; long
        enough for one more row per draw.
    offsets : ndarray of int64 of shape (n_steps + 1,)
        ``offsets[t]`` receives the number of positions before step ``t``.
    state : ndarray of int64 of shape (3,)
        The last position (-1 before the first), the number of rows kept and
        the current step; updated.

    Returns
    -------
    done : bool
        Whether the process passed its last slot (then every offset is set
        and no more draws are needed).
    """
    position, count, step = state[0], state[1], state[2]
    n_steps = offsets.shape[0] - 1
    step_end = (step + 1) * n_samples
    done = False
    for draw in exponentials:
        # A gap is at least 1: a float exponential of exactly 0 would
        # otherwise put one row twice into a batch (twice its clip).
        gap = max(np.ceil(-draw / log_keep), 1.0)
        if gap >= _INT64_CAP or gap >= n_slots - position:
            # Past the last slot (and nothing more to add without overflow).
            done = True
            break
        position += np.int64(gap)
        while position >= step_end:
            step += 1
            offsets[step] = count
            step_end += n_samples
        rows[count] = position - (step_end - n_samples)
        count += 1
    if done:
        while step < n_steps:
            step += 1
            offsets[step] = count
    state[0], state[1], state[2] = position, count, step
    return done
