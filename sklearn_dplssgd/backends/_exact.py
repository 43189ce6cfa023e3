"""The NumPy backend of the exact-noise mode: integer gradient sums plus exact integer noise.

Each step of :class:`ExactNoiseTraining` releases ``S + Y`` in int64: ``S``
the sum of the sampled rows' clipped gradients ``u_i (x) e_i``, each factor
rounded onto its own public grid (the residuals' ``a_i`` on ``2**-k1 w_max
C``, the unit rows' ``b_i`` on ``2**-k2``) with both squared norms checked
exactly, and the products summed by exact float64 matrix products
(:mod:`~._grid_sum`); ``Y`` independent integer noise on every noisy
coordinate (the rounded Gaussian of
:func:`~._rounded_gaussian.sample_rounded_gaussian` or the discrete Gaussian
of :func:`~._discrete_gaussian.sample_discrete_gaussian`, as the scale
says), drawn exactly with integer arithmetic from a cryptographic word source.
The step's gradient is ``gamma (S + Y)`` with ``gamma = 2**-(k1 + k2) w_max
C``; everything after it (smoothing, the weight decay, the optimizer step,
averaging) is the NumPy backend's, unchanged, and is post-processing of the
integers. No floating-point value takes part in the released integers' law
beyond which integers each row's two factors round to, whose norms are
enforced. Both factors of a row are rounded in the step that sums it, while
the row is in cache (no pass over the whole table).

The batches are Poisson-sampled from the fit's generator as in the ordinary
mode (:meth:`NumpyTraining.chunks`); the noise never comes from it.

Threads (``n_jobs``): a chunk's noise is drawn in blocks of
:data:`NOISE_BLOCK_SAMPLES` draws, each from its own stream of the word
source (:meth:`~._chacha.ChaChaWords.substream`), and a step's rows are
clipped and their residual factors rounded in blocks; both are shared by the
fit's threads, and neither result depends on them (the noise's blocks are
fixed, the sums are of integers).
"""

import math

import numpy as np
from numba import njit

from ..training import multiclass_residual, run_training, single_output_residual
from ._clipping import COEFFICIENT_RANGE, clipped_residual
from ._grid_sum import (
    MAX_GRID_BITS, add_factored_rows, check_batch_rows, grid_norm_bound,
)
from ._kernels import check_weights, parallel_blocks
from ._numpy import NumpyTraining
from ._threads import blocks_on_threads

__all__ = [
    "ExactNoise", "ExactNoiseTraining", "NOISE_BLOCK_SAMPLES", "ROWS_PER_STEP_BLOCK",
    "train_dp_lssgd_exact",
]

# Draws per block of noise, each block from its own stream of words: a public
# constant, so that the noise never depends on the number of threads. About
# 1 to 4 ms of sampling a block (a step at MNIST shape is 7,850 draws).
NOISE_BLOCK_SAMPLES = 4096
# Rows of a step gathered, clipped, rounded and summed together: a block's
# rows (about 400 KB at MNIST's width in float32) stay in cache from the
# gather to the integer sum. A public constant: the margins' BLAS calls, and
# so the released integers, do not depend on the threads.
ROWS_PER_STEP_BLOCK = 128


class ExactNoise:
    """The public settings of the exact noise, and where its random words come from.

    Parameters
    ----------
    residual_bits : int
        ``k1``: the residual factor's grid step is ``2**-k1 w_max C``.
    row_bits : int
        ``k2``: the unit row factor's grid step is ``2**-k2``. The sum's grid
        step is ``2**-(k1 + k2) w_max C``.
    scale : RoundedGaussianScale or DiscreteGaussianScale or None
        The noise's law on the grid (grid units): any object whose
        ``sample(count, word_source)`` draws it exactly; None for no noise
        (``epsilon=inf``: the integer sums released as they are).
    word_source : object with ``words(count)``
        Uniform 64-bit words (``ChaChaWords`` keyed from the operating
        system for a private fit).
    """

    def __init__(self, residual_bits, row_bits, scale, word_source):
        if scale is not None and not callable(getattr(scale, "sample", None)):
            raise TypeError("ExactNoise: scale must be a noise scale with sample(count, source), "
                            "or None.")
        for name, bits in (("residual_bits", residual_bits), ("row_bits", row_bits)):
            if not 0 <= int(bits) <= MAX_GRID_BITS:
                raise ValueError(f"ExactNoise: {name} must be in [0, {MAX_GRID_BITS}].")
        self.residual_bits, self.row_bits = int(residual_bits), int(row_bits)
        self.scale, self.word_source = scale, word_source
        # The next stream of the word source a block of noise draws from.
        self._next_stream = 0

    @property
    def grid_bits(self):
        """``k1 + k2``: the integer sum's grid step is ``2**-(k1 + k2) w_max C``."""
        return self.residual_bits + self.row_bits

    def draw(self, count, n_threads=1):
        """``count`` exact noise draws (int64) of the scale's law; zeros without noise.

        With a word source that splits into independent streams (its
        ``substream(i)``, as :class:`~._chacha.ChaChaWords`), the draws come
        in blocks of :data:`NOISE_BLOCK_SAMPLES`, block ``b`` of the fit from
        stream ``b`` alone, shared by ``n_threads`` threads: the draws do not
        depend on the threads (nor on which computed what), and every block's
        words are fresh. Another source is read in one stream, in order.
        """
        if self.scale is None:
            return np.zeros(count, dtype=np.int64)
        source = self.word_source
        if not hasattr(source, "substream"):
            return self.sample(count, source)
        n_blocks = -(-int(count) // NOISE_BLOCK_SAMPLES)
        first_stream = self._next_stream
        self._next_stream += n_blocks

        def block(b):
            size = min(NOISE_BLOCK_SAMPLES, count - b * NOISE_BLOCK_SAMPLES)
            return self.sample(size, source.substream(first_stream + b))

        if n_blocks == 0:
            return np.zeros(0, dtype=np.int64)
        return np.concatenate(blocks_on_threads(block, n_blocks, n_threads))

    def sample(self, count, source):
        """``count`` draws of the noise from the words of ``source``, in order."""
        return self.scale.sample(count, source)


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
            noise = exact.draw(chunk_steps * n_outputs * n_noisy, self.n_threads).reshape(
                chunk_steps, n_outputs, n_noisy)
            return chunk_start, chunk_steps, (rows, offsets, noise)

        return map(draw, chunk_starts)

    def gradient_sum(self, params, draws, local_step):
        rows, offsets, noise = draws
        batch = self.step_batch(rows, offsets, local_step)
        plan = self.plan
        total = self.integer_sum(params, batch)
        total[:, :self._n_noisy_columns] += noise[local_step]
        # gamma (S + Y): the integers times the public grid step.
        self._grad[:] = total * (plan.max_sample_weight * plan.clip_norm
                                 * 2.0 ** -self.noise_source.grid_bits)
        return self._grad

    def integer_sum(self, params, batch):
        """``S``: the batch's clipped gradients, factor by factor on the grid, summed in int64.

        In fixed blocks of :data:`ROWS_PER_STEP_BLOCK` rows, each in one
        compiled pass while its rows are in cache: the rows ``[x_i, b]`` are
        gathered in the parameters' dtype and their margins formed by one
        BLAS product in that dtype (as the ordinary mode does); each row's
        residual is clipped in float64 (a row whose float32 margins are not
        finite is recomputed in float64) and scaled to the residual grid; and
        :func:`~._grid_sum.add_factored_rows` rounds both factors, checks
        their norms and sums ``a_i (x) b_i`` exactly. On one thread the whole
        step is one compiled call; otherwise the fit's threads share whole
        blocks. Each row's result depends only on its block, which the
        threads do not change, and the sum is exact, so ``S`` is the same
        whatever the threads.
        """
        plan, exact = self.plan, self.noise_source
        n_rows, (n_outputs, width) = batch.shape[0], params.shape
        check_batch_rows(n_rows)
        largest, tiny = COEFFICIENT_RANGE[np.dtype(np.float64)]
        # The public grid: both factors' scales and norm bounds.
        settings = (
            plan.loss_code, plan.loss_threshold, plan.clip_norm,
            1.0 if plan.fit_intercept else 0.0, self._weights, largest, tiny,
            2.0 ** exact.residual_bits / float(plan.max_sample_weight * plan.clip_norm),
            2.0 ** exact.row_bits, float(grid_norm_bound(exact.residual_bits, n_outputs)),
            float(grid_norm_bound(exact.row_bits, self._n_noisy_columns)))
        # Fixed blocks of rows, each gathered, clipped, rounded and summed
        # while in cache; the threads share whole blocks, so every margin is
        # computed by the same BLAS call whatever the threads.
        n_row_blocks = -(-n_rows // ROWS_PER_STEP_BLOCK)
        n_parts = min(n_row_blocks,
                      parallel_blocks(n_rows * n_outputs * width, n_rows, self.n_threads))
        if n_parts <= 1:
            total = np.zeros((n_outputs, width), dtype=np.int64)
            _exact_blocks_sum(self.X, self.y, batch, params, self.feature_norms, *settings, 0,
                              n_row_blocks, total)
            return total
        bounds = [n_row_blocks * b // n_parts for b in range(n_parts + 1)]

        def part(b):
            total = np.zeros((n_outputs, width), dtype=np.int64)
            _exact_blocks_sum(self.X, self.y, batch, params, self.feature_norms, *settings,
                              bounds[b], bounds[b + 1], total)
            return total

        # Sums of integers: the same whatever the threads.
        return sum(blocks_on_threads(part, n_parts, self.n_threads))


@njit(cache=True, nogil=True)
def _exact_blocks_sum(X, y, batch, params, feature_norms, code, threshold, clip_norm,
                      intercept_term, weights, largest, tiny, residual_scale, row_grid_scale,
                      residual_bound, row_bound, first_block, stop_block, total):
    """``total += S`` of the batch's row blocks ``first_block .. stop_block - 1``.

    Block ``b`` is the batch's rows ``b R .. (b + 1) R - 1`` (``R =``
    :data:`ROWS_PER_STEP_BLOCK`): :func:`_gather_margins` of its rows (one
    BLAS product), then :func:`_clipped_factored_sum` of them, all while
    they are in cache. Returns the rows left out.
    """
    n_rows, width = batch.shape[0], params.shape[1]
    n_outputs = params.shape[0]
    design = np.empty((ROWS_PER_STEP_BLOCK, width), dtype=params.dtype)
    scaled = np.empty((ROWS_PER_STEP_BLOCK, n_outputs), dtype=np.float64)
    left_out = 0
    for b in range(first_block, stop_block):
        start = b * ROWS_PER_STEP_BLOCK
        rows = batch[start:min(start + ROWS_PER_STEP_BLOCK, n_rows)]
        margins = _gather_margins(X, rows, params, intercept_term, design[:rows.shape[0]])
        left_out += _clipped_factored_sum(
            X, y, rows, params, margins, feature_norms, code, threshold, clip_norm,
            intercept_term, weights, largest, tiny, residual_scale, row_grid_scale,
            residual_bound, row_bound, 0, rows.shape[0], scaled, total)
    return left_out


@njit(cache=True, nogil=True)
def _clipped_factored_sum(X, y, batch, params, margins, feature_norms, code, threshold,
                          clip_norm, intercept_term, weights, largest, tiny, residual_scale,
                          row_grid_scale, residual_bound, row_bound, start, stop, scaled, total):
    """``total += S`` of the batch's rows ``start .. stop - 1``; returns the rows left out.

    :func:`_scaled_clipped_residuals` (the residual factors before rounding,
    on the grid ``residual_scale``), then
    :func:`~._grid_sum.add_factored_rows` (the rows' factors on
    ``row_grid_scale``, both norms enforced against ``residual_bound`` and
    ``row_bound``, the products summed exactly).
    """
    _scaled_clipped_residuals(X, y, batch, params, margins, feature_norms, code, threshold,
                              clip_norm, intercept_term, weights, largest, tiny, residual_scale,
                              start, stop, scaled)
    return add_factored_rows(X, batch, scaled, feature_norms, row_grid_scale, intercept_term,
                             residual_bound, row_bound, start, stop, total)


@njit(cache=True, nogil=True)
def _gather_margins(X, batch, params, intercept_term, design):
    """``design[r] = [x_i, b]`` for the batch's rows; returns ``design params^T`` (BLAS)."""
    n_rows, n_features = batch.shape[0], X.shape[1]
    for r in range(n_rows):
        # Element by element: a slice assignment compiles Numba's general
        # broadcasting.
        i = batch[r]
        for j in range(n_features):
            design[r, j] = X[i, j]
        design[r, n_features] = intercept_term
    if n_rows == 0:
        return np.zeros((0, params.shape[0]), dtype=params.dtype)
    return np.dot(design, params.T)


@njit(cache=True, nogil=True)
def _scaled_clipped_residuals(X, y, batch, params, margins, feature_norms, code, threshold,
                              clip_norm, intercept_term, weights, largest, tiny, scale, start,
                              stop, scaled):
    """``scaled[r] = clip(r_i) ||x'_i|| scale`` for the batch's rows ``start .. stop - 1``.

    The residual factor ``u_i = clip(r_i) ||x'_i||`` (norm at most ``w_i C``)
    on the residual grid. The residuals are clipped (and weighted) as the
    ordinary kernels clip them, in float64; only their bound matters to the
    guarantee, and it is enforced on the integers.
    """
    n_features = X.shape[1]
    n_outputs = params.shape[0]
    row_margins = np.empty(n_outputs, dtype=np.float64)
    row_residual = np.empty(n_outputs, dtype=np.float64)
    clipped = np.empty(n_outputs, dtype=np.float64)
    for r in range(start, stop):
        i = batch[r]
        for k in range(n_outputs):
            row_margins[k] = margins[r, k]
            if not math.isfinite(row_margins[k]):
                # A float32 sum that overflowed: the margin in float64.
                acc = np.float64(params[k, n_features]) * intercept_term
                for j in range(n_features):
                    acc += np.float64(params[k, j]) * np.float64(X[i, j])
                row_margins[k] = acc
        if n_outputs == 1:
            row_residual[0] = single_output_residual(code, row_margins[0], y[i], threshold)
        else:
            multiclass_residual(code, row_margins, y[i], threshold, row_residual)
        weight = weights[i] if weights.shape[0] > 0 else 1.0
        clipped_residual(row_residual, feature_norms[i], clip_norm, weight, largest, tiny,
                         clipped)
        row_scale = feature_norms[i] * scale
        for k in range(n_outputs):
            scaled[r, k] = clipped[k] * row_scale


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
