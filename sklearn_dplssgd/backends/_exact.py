"""The NumPy backend of the exact-noise mode: integer gradient sums plus discrete Gaussian noise.

Each step of :class:`ExactNoiseTraining` releases ``S + Y`` in int64: ``S``
the sum of the sampled rows' clipped gradients, each rounded onto the public
grid ``gamma = 2**-k w_max C`` with its squared norm checked exactly
(:func:`~._grid_sum.rounded_clipped_sum`), and ``Y`` independent discrete
Gaussians on every noisy coordinate, drawn with integer arithmetic from a
cryptographic word source (:func:`~._discrete_gaussian.sample_discrete_gaussian`).
The step's gradient is ``gamma (S + Y)``; everything after it (smoothing,
the weight decay, the optimizer step, averaging) is the NumPy backend's,
unchanged, and is post-processing of the integers. No floating-point value
takes part in the released integers' law beyond which integer each row
rounds to, whose norm is enforced.

The batches are Poisson-sampled from the fit's generator as in the ordinary
mode (:meth:`NumpyTraining.chunks`); the noise never comes from it.
"""

import numpy as np
from numba import njit

from ..training import multiclass_residual, run_training, single_output_residual
from ._clipping import COEFFICIENT_RANGE, clipped_residual
from ._grid_sum import MAX_GRID_BITS, rounded_clipped_sum
from ._kernels import check_weights
from ._numpy import NumpyTraining

__all__ = ["ExactNoise", "ExactNoiseTraining", "train_dp_lssgd_exact"]


class ExactNoise:
    """The public settings of the exact noise, and where its random words come from.

    Parameters
    ----------
    grid_bits : int
        ``k``: the grid step is ``2**-k`` times the sensitivity ``w_max C``.
    scale : RoundedGaussianScale or DiscreteGaussianScale or None
        The noise's law on the grid (grid units): any object whose
        ``sample(count, word_source)`` draws it exactly; None for no noise
        (``epsilon=inf``: the integer sums released as they are).
    word_source : object with ``words(count)``
        Uniform 64-bit words (``ChaChaWords`` keyed from the operating
        system for a private fit).
    """

    def __init__(self, grid_bits, scale, word_source):
        if scale is not None and not callable(getattr(scale, "sample", None)):
            raise TypeError("ExactNoise: scale must be a noise scale with sample(count, source), "
                            "or None.")
        if not 0 <= int(grid_bits) <= MAX_GRID_BITS:
            raise ValueError(f"ExactNoise: grid_bits must be in [0, {MAX_GRID_BITS}].")
        self.grid_bits, self.scale, self.word_source = int(grid_bits), scale, word_source

    def draw(self, count):
        """``count`` exact noise draws (int64) of the scale's law; zeros without noise."""
        if self.scale is None:
            return np.zeros(count, dtype=np.int64)
        return self.scale.sample(count, self.word_source)


class ExactNoiseTraining(NumpyTraining):
    """:class:`NumpyTraining` whose step gradient is ``gamma`` times an integer sum plus noise.

    Made by :func:`train_dp_lssgd_exact` with ``noise_source`` an
    :class:`ExactNoise` (the settings travel through the NumPy backend's
    constructor, whose every other part is used as it is). Dense NumPy rows
    only; the mechanism refuses other inputs before any row is read.
    """

    # The compiled runs embed the float noise of the ordinary kernels.
    supports_compiled_runs = False

    def chunks(self, chunk_starts, chunk, noise_std):
        exact = self.noise_source
        if not isinstance(exact, ExactNoise) or not isinstance(self.X, np.ndarray):
            raise TypeError("ExactNoiseTraining needs dense NumPy rows and an ExactNoise.")
        n_steps, n_outputs = self.plan.n_steps, self.params.shape[0]
        n_noisy = self._n_noisy_columns

        def draw(chunk_start):
            # The batches from the fit's generator, as the ordinary mode
            # draws them; the noise from the word source.
            chunk_steps = min(chunk, n_steps - chunk_start)
            rows, offsets = self.chunk_batches(chunk_steps)
            noise = exact.draw(chunk_steps * n_outputs * n_noisy).reshape(
                chunk_steps, n_outputs, n_noisy)
            return chunk_start, chunk_steps, (rows, offsets, noise)

        return map(draw, chunk_starts)

    def gradient_sum(self, params, draws, local_step):
        rows, offsets, noise = draws
        batch = (self._all_rows if rows is None
                 else rows[offsets[local_step]:offsets[local_step + 1]])
        exact, plan = self.noise_source, self.plan
        n_features = self.n_features
        intercept_term = 1.0 if plan.fit_intercept else 0.0
        gathered = self.X[batch]
        # Margins in float64 (post-processing of earlier releases and the
        # rows; only the clipped residuals' bound matters, and it is enforced
        # on the integers below).
        margins = gathered @ params[:, :n_features].T.astype(np.float64) + (
            intercept_term * params[:, n_features].astype(np.float64))
        clipped = np.empty((batch.shape[0], params.shape[0]), dtype=np.float64)
        largest, tiny = COEFFICIENT_RANGE[np.dtype(np.float64)]
        _clipped_residuals(np.ascontiguousarray(margins, dtype=np.float64), self.y, batch,
                           self.feature_norms, plan.loss_code, plan.loss_threshold,
                           plan.clip_norm, self._weights, largest, tiny, clipped)
        sensitivity = plan.max_sample_weight * plan.clip_norm
        total, _ = rounded_clipped_sum(gathered, clipped, sensitivity, exact.grid_bits,
                                       intercept_term)
        n_noisy = self._n_noisy_columns
        total[:, :n_noisy] += noise[local_step]
        # gamma (S + Y): the integers times the public grid step.
        self._grad[:] = total * (sensitivity * 2.0 ** -exact.grid_bits)
        return self._grad


@njit(cache=True, nogil=True)
def _clipped_residuals(margins, y, batch, feature_norms, code, threshold, clip_norm, weights,
                       largest, tiny, out):
    """Each batch row's residual clipped (and weighted) as the ordinary kernels clip it."""
    n_outputs = margins.shape[1]
    row_residual = np.empty(n_outputs, dtype=np.float64)
    scaled = np.empty(n_outputs, dtype=np.float64)
    for r in range(batch.shape[0]):
        i = batch[r]
        if n_outputs == 1:
            row_residual[0] = single_output_residual(code, margins[r, 0], y[i], threshold)
        else:
            multiclass_residual(code, margins[r], y[i], threshold, row_residual)
        weight = weights[i] if weights.shape[0] > 0 else 1.0
        clipped_residual(row_residual, feature_norms[i], clip_norm, weight, largest, tiny,
                         scaled)
        for k in range(n_outputs):
            out[r, k] = scaled[k]


def train_dp_lssgd_exact(X, y, n_outputs, plan, rng, *, exact_noise, n_threads=1, verbose=0,
                         epoch_callback=None, sample_weight=None, initial_params=None,
                         row_norms=None):
    """Run the T steps of the exact-noise mode on dense NumPy rows.

    The parameters are :func:`~._numpy.train_dp_lssgd`'s, with
    ``exact_noise`` (an :class:`ExactNoise`) in place of a noise source; the
    plan's noise multipliers set the step size rules only.
    """
    check_weights(sample_weight, X.shape[0])
    backend = ExactNoiseTraining(
        X, y, n_outputs, plan, rng, n_threads=n_threads, noise_source=exact_noise,
        sample_weight=sample_weight, initial_params=initial_params, row_norms=row_norms)
    return run_training(backend, plan, verbose=verbose, epoch_callback=epoch_callback)
