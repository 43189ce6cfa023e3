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
source (:meth:`~._chacha.ChaChaWords.substream`), by whichever thread takes
the block first (:class:`NoiseBlocks`): the helpers draw the next chunk's
blocks ahead while the fit's thread sums the rows, and that thread draws any
block it needs that nobody took. A step's rows are summed in fixed blocks of
:data:`ROWS_PER_STEP_BLOCK` rows, shared by the threads for a batch of
:data:`SPLIT_MIN_ROWS` rows or more (or when the helpers have no noise left
to draw). Neither result depends on the threads: the noise's blocks are
fixed, the sums are of integers. The steps between, on the fit's thread,
run as one compiled call per segment (:meth:`ExactNoiseTraining.compiled_steps`).
"""

import math
import threading
import time

import numpy as np
from numba import njit

from ..training import multiclass_residual, run_training, single_output_residual
from ._clipping import COEFFICIENT_RANGE, clipped_residual
from ._grid_sum import (
    MAX_GRID_BITS, add_factored_rows, check_batch_rows, grid_norm_bound,
)
from ._kernels import check_weights, parallel_blocks
from ._numpy import NumpyTraining
from ._steps import finish_step
from ._threads import blocks_on_threads, share_with_helpers

__all__ = [
    "ExactNoise", "ExactNoiseTraining", "NOISE_BLOCK_SAMPLES", "NoiseBlocks",
    "PARTS_PER_THREAD", "ROWS_PER_STEP_BLOCK",
    "SPLIT_MIN_ROWS",
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
# Rows of a step below which its sum is not split among the fit's threads
# (they draw the noise ahead instead): a step's noise, K (d + 1) draws of
# about 40 ns, costs about the sum of 250 rows (about 0.17 ns a row and
# coordinate). A public constant.
SPLIT_MIN_ROWS = 1024
# Parts a thread of a split step's sum, taken one at a time.
PARTS_PER_THREAD = 4
# How long the calling thread waits for a block of noise a helper holds, in
# blocks' times, before it makes the block again itself.
_NOISE_PATIENCE = 2.0


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
        drawn = NoiseBlocks(self, count)
        share_with_helpers(drawn, n_threads)
        return drawn.upto(count)

    def _take_streams(self, n_blocks):
        """The first of ``n_blocks`` streams no draw has used yet (taken in call order)."""
        first_stream = self._next_stream
        self._next_stream += n_blocks
        return first_stream

    def sample(self, count, source):
        """``count`` draws of the noise from the words of ``source``, in order."""
        return self.scale.sample(count, source)


class NoiseBlocks:
    """``count`` draws of an :class:`ExactNoise`, made block by block by whichever thread asks.

    The draws are those of :meth:`ExactNoise.draw` (the streams are taken
    when this is made, so objects made in turn take streams in turn): block
    ``b`` holds the draws ``b B .. (b + 1) B - 1`` (``B =``
    :data:`NOISE_BLOCK_SAMPLES`) of stream ``first + b``, whichever thread
    makes it. Helpers take the blocks in order (:meth:`claim`, handed to
    them by :func:`~._threads.share_with_helpers`); the calling thread asks
    for the draws it needs (:meth:`upto`): it makes the blocks nobody took,
    waits a little for those a helper holds, then makes them again itself
    (the same draws: a block's stream is its own). So a step of the fit
    never waits long for a helper, and drawing ahead changes no draw.
    """

    def __init__(self, exact, count):
        self.exact, self.count = exact, int(count)
        source = exact.word_source
        self.values = np.zeros(self.count, dtype=np.int64)
        # Only blocks on streams of their own may be made on any thread, or
        # twice; one stream read in order is one block, made here once.
        self.shareable = exact.scale is not None and hasattr(source, "substream")
        if exact.scale is None or self.count == 0:
            self.n_blocks, self.block_size = 0, NOISE_BLOCK_SAMPLES
        elif self.shareable:
            self.n_blocks, self.block_size = -(-self.count // NOISE_BLOCK_SAMPLES), (
                NOISE_BLOCK_SAMPLES)
        else:
            self.n_blocks, self.block_size = 1, self.count
        self.first_stream = exact._take_streams(self.n_blocks) if self.shareable else None
        self.done = [False] * self.n_blocks
        self.next_block = 0
        self.ready_blocks = 0
        self.block_seconds = 0.0
        self.condition = threading.Condition()

    def _make(self, block):
        """Block ``block``'s draws, from its own stream (or the source's one stream)."""
        start = block * self.block_size
        size = min(self.block_size, self.count - start)
        source = self.exact.word_source
        if self.first_stream is not None:
            source = source.substream(self.first_stream + block)
        began = time.perf_counter()
        drawn = self.exact.sample(size, source)
        with self.condition:
            if not self.done[block]:
                self.values[start:start + size] = drawn
                self.done[block] = True
                self.block_seconds = time.perf_counter() - began
                self.condition.notify_all()

    def _take(self):
        with self.condition:
            block = self.next_block
            if block < self.n_blocks:
                self.next_block += 1
                return block
        return -1

    def claim(self, again):
        """Make the blocks nobody took, in order (a helper's part); how many it made."""
        made = 0
        if not self.shareable:
            return made
        block = self._take() if again < 0 else again
        while block >= 0:
            self._make(block)
            made += 1
            block = self._take() if again < 0 else -1
        return made

    def release(self):
        """What a helper calls when it is done (nothing to free)."""

    def all_taken(self):
        """Whether every block is taken (made, or being made): nothing left to draw ahead."""
        return self.next_block >= self.n_blocks

    def cancel(self):
        """Leave the blocks nobody took undrawn (the fit stopped before needing them)."""
        with self.condition:
            self.next_block = self.n_blocks

    def made_count(self):
        """How many draws from the first are made (without waiting for any)."""
        while self.ready_blocks < self.n_blocks and self.done[self.ready_blocks]:
            self.ready_blocks += 1
        if self.ready_blocks == self.n_blocks:
            return self.count
        return self.ready_blocks * self.block_size

    def upto(self, stop):
        """The draws, once ``0 .. stop - 1`` of them are made (the later ones may not be)."""
        needed = -(-int(stop) // self.block_size) if self.n_blocks else 0
        while self.ready_blocks < needed:
            block = self.ready_blocks
            if self.done[block]:
                self.ready_blocks += 1
                continue
            taken = self._take()
            if taken >= 0:
                # The next block nobody took: this one, or a later one
                # while a helper makes this one.
                self._make(taken)
                continue
            # A helper holds it: wait about as long as a block takes, then
            # make it again here.
            with self.condition:
                self.condition.wait_for(lambda: self.done[block],
                                        timeout=_NOISE_PATIENCE * max(self.block_seconds, 1e-3))
            if not self.done[block]:
                self._make(block)
        return self.values


class ExactNoiseTraining(NumpyTraining):
    """:class:`NumpyTraining` whose step gradient is ``gamma`` times an integer sum plus noise.

    Made by :func:`train_dp_lssgd_exact` with ``noise_source`` an
    :class:`ExactNoise` (the settings travel through the NumPy backend's
    constructor, whose every other part is used as it is). Dense NumPy rows
    only; the mechanism refuses other inputs before any row is read.
    """

    # The compiled runs embed the float noise of the ordinary kernels (this
    # class has its own: compiled_steps).
    supports_compiled_runs = False
    # The noise the helpers draw ahead (the next chunk's, or the last one's),
    # and the grid's settings of the compiled sum, once per fit.
    _ahead_noise = _settings = None

    def chunks(self, chunk_starts, chunk, noise_std):
        exact = self.noise_source
        if not isinstance(exact, ExactNoise) or not isinstance(self.X, np.ndarray):
            raise TypeError("ExactNoiseTraining needs dense NumPy rows and an ExactNoise.")
        return self._chunks(list(chunk_starts), chunk)

    def _chunks(self, chunk_starts, chunk):
        """Each chunk's batches (from the fit's generator) and its :class:`NoiseBlocks`.

        With several threads the next chunk's noise is handed to the helpers
        when a chunk's steps begin, so they draw it while this thread sums
        (the noise depends on its streams only: the draws are the same).
        """
        exact, n_steps = self.noise_source, self.plan.n_steps
        per_step = self.params.shape[0] * self._n_noisy_columns

        def noise_of(index):
            # Made in chunk order, so the chunks take their streams in turn.
            steps = min(chunk, n_steps - chunk_starts[index])
            blocks = NoiseBlocks(exact, steps * per_step)
            share_with_helpers(blocks, self.n_threads)
            return blocks

        ahead = noise_of(0) if chunk_starts else None
        try:
            for index, chunk_start in enumerate(chunk_starts):
                chunk_steps = min(chunk, n_steps - chunk_start)
                rows, offsets = self.chunk_batches(chunk_steps)
                noise, ahead = ahead, None
                if index + 1 < len(chunk_starts):
                    ahead = noise_of(index + 1)
                # Whether the helpers have noise left to draw (_row_parts).
                self._ahead_noise = noise if ahead is None else ahead
                yield chunk_start, chunk_steps, (rows, offsets, noise)
        finally:
            if ahead is not None:
                ahead.cancel()
            self._ahead_noise = None

    def compiled_steps(self, update):
        """A run of steps whose sums are not split among threads, each run in one compiled call.

        Where the optimizer has a compiled update: each step is
        :meth:`gradient_sum`'s (the same compiled sum, ``gamma (S + Y)``)
        followed by the ordinary compiled run's post-processing
        (:func:`~._steps.finish_step`), in the same arithmetic as the loop's
        Python steps. A segment runs the steps whose noise is made (this
        thread makes what the next step needs); a step whose sum is shared
        by the threads (:meth:`_row_parts`) forms it from Python, then the
        same compiled post-processing.
        """
        optimizer, plan = update.optimizer, self.plan
        if optimizer.compiled_code is None:
            return None
        per_step = self.params.shape[0] * self._n_noisy_columns
        average_start = -1 if plan.average_start is None else int(plan.average_start)
        no_average = np.empty((0, 0), dtype=np.float64)
        learning_rates = np.ascontiguousarray(plan.learning_rates, dtype=np.float64)
        state = update.state[0] if update.state else self._grad
        total = np.zeros(self.params.shape, dtype=np.int64)
        settings = (float(plan.alpha), float(plan.sigma), self._omega, update.inv_batch,
                    optimizer.compiled_code, optimizer.compiled_factor(), state)

        def run(params, averaged, draws, chunk_start, local_start, local_stop):
            rows, offsets, noise = draws
            full_batch = rows is None
            local = local_start
            while local < local_stop:
                size = self.X.shape[0] if full_batch else int(offsets[local + 1] - offsets[local])
                if self._row_parts(size) > 1:
                    # The sum on the threads, then the same compiled post-processing.
                    grad = self.gradient_sum(params, draws, local)
                    finish_step(params, grad, self.n_features, *settings[1:3], learning_rates,
                                chunk_start + local, settings[0], *settings[3:],
                                no_average if averaged is None else averaged, average_start)
                    update.n_updates += 1
                    local += 1
                    continue
                # This step's noise (made here if nobody has), and the
                # following steps' that is made already; on one thread, all.
                wanted = local_stop if self.n_threads <= 1 else local + 1
                values = noise.upto(wanted * per_step)
                stop = max(wanted, min(local_stop, noise.made_count() // per_step))
                _exact_steps(
                    self.X, self.y, self._all_rows if full_batch else rows,
                    self._no_offsets if full_batch else offsets, full_batch, params,
                    self.feature_norms, *self._sum_settings(),
                    values.reshape(-1, self.params.shape[0], self._n_noisy_columns),
                    self._grid_step(), total, self._grad, learning_rates, chunk_start, local,
                    stop, *settings, no_average if averaged is None else averaged,
                    average_start)
                update.n_updates += stop - local
                local = stop
            return params, averaged

        return run

    def _step_noise(self, noise, local_step):
        """Step ``local_step``'s draws, ``(K, D2)``, once made (here or by a helper)."""
        per_step = self.params.shape[0] * self._n_noisy_columns
        start = local_step * per_step
        return noise.upto(start + per_step)[start:start + per_step].reshape(
            self.params.shape[0], self._n_noisy_columns)

    def gradient_sum(self, params, draws, local_step):
        rows, offsets, noise = draws
        batch = self.step_batch(rows, offsets, local_step)
        total = self.integer_sum(params, batch)
        # gamma (S + Y): the integers times the public grid step.
        _scaled_noisy_sum(total, self._step_noise(noise, local_step), self._grid_step(),
                          self._grad)
        return self._grad

    def _grid_step(self):
        """``gamma = 2**-(k1 + k2) w_max C``, the integer sum's public grid step."""
        plan = self.plan
        return float(plan.max_sample_weight * plan.clip_norm
                     * 2.0 ** -self.noise_source.grid_bits)

    def _sum_settings(self):
        """The public grid's settings of the step's compiled sum (made once per fit)."""
        settings = self._settings
        if settings is None:
            plan, exact = self.plan, self.noise_source
            n_outputs = self.params.shape[0]
            largest, tiny = COEFFICIENT_RANGE[np.dtype(np.float64)]
            settings = self._settings = (
                plan.loss_code, plan.loss_threshold, plan.clip_norm,
                1.0 if plan.fit_intercept else 0.0, self._weights, largest, tiny,
                2.0 ** exact.residual_bits / float(plan.max_sample_weight * plan.clip_norm),
                2.0 ** exact.row_bits, float(grid_norm_bound(exact.residual_bits, n_outputs)),
                float(grid_norm_bound(exact.row_bits, self._n_noisy_columns)))
        return settings

    def _row_parts(self, n_rows):
        """How many parts the fit's threads share a step's row blocks in (1: not split).

        A batch of fewer than :data:`SPLIT_MIN_ROWS` rows is summed on the
        calling thread while the helpers draw noise ahead (a step's noise
        costs about as much as the sum of a few hundred rows), unless they
        have none left to draw. A split batch is cut into about
        :data:`PARTS_PER_THREAD` parts a thread, taken one at a time, so that
        a helper that starts late costs little. Which rows form which part
        changes nothing released (the blocks are fixed, the sums exact).
        """
        if self.n_threads <= 1:
            return 1
        if n_rows < SPLIT_MIN_ROWS and not (
                self._ahead_noise is not None and self._ahead_noise.all_taken()):
            return 1
        threads = parallel_blocks(n_rows * self.params.size, n_rows, self.n_threads)
        if threads <= 1:
            return 1
        return min(-(-n_rows // ROWS_PER_STEP_BLOCK), PARTS_PER_THREAD * threads)

    def integer_sum(self, params, batch):
        """``S``: the batch's clipped gradients, factor by factor on the grid, summed in int64.

        In fixed blocks of :data:`ROWS_PER_STEP_BLOCK` rows, each in one
        compiled pass while its rows are in cache: the rows ``[x_i, b]`` are
        gathered in the parameters' dtype and their margins formed by one
        BLAS product in that dtype (as the ordinary mode does); each row's
        residual is clipped in float64 (a row whose float32 margins are not
        finite is recomputed in float64) and scaled to the residual grid; and
        :func:`~._grid_sum.add_factored_rows` rounds both factors, checks
        their norms and sums ``a_i (x) b_i`` exactly. A batch is one
        compiled call, or (:meth:`_row_parts`) whole blocks shared by the
        fit's threads. Each row's result depends only on its block, which
        the threads do not change, and the sum is exact, so ``S`` is the
        same whatever the threads.
        """
        n_rows, (n_outputs, width) = batch.shape[0], params.shape
        check_batch_rows(n_rows)
        settings = self._sum_settings()
        n_row_blocks = -(-n_rows // ROWS_PER_STEP_BLOCK)
        n_parts = self._row_parts(n_rows)
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
def _scaled_noisy_sum(total, noise, grid_step, grad):
    """``grad = gamma (S + Y)``: ``Y`` on the noisy columns, in int64, then times the grid step."""
    n_outputs, width = total.shape
    n_noisy = noise.shape[1]
    for k in range(n_outputs):
        for j in range(width):
            value = total[k, j] + noise[k, j] if j < n_noisy else total[k, j]
            grad[k, j] = np.float64(value) * grid_step


@njit(cache=True, nogil=True)
def _exact_steps(X, y, rows, offsets, full_batch, params, feature_norms, code, threshold,
                 clip_norm, intercept_term, weights, largest, tiny, residual_scale,
                 row_grid_scale, residual_bound, row_bound, noise, grid_step, total, grad,
                 learning_rates, chunk_start, local_start, local_stop, alpha, sigma, omega,
                 inv_batch, optimizer_code, optimizer_factor, optimizer_state, averaged,
                 average_start):
    """Steps ``local_start .. local_stop - 1`` of a chunk, each on one thread.

    A step is :meth:`ExactNoiseTraining.gradient_sum`'s: ``S`` over all the
    batch's row blocks (:func:`_exact_blocks_sum`), ``grad = gamma (S +
    noise[local])`` (:func:`_scaled_noisy_sum`), then the post-processing
    of :func:`~._steps.finish_step`.
    """
    n_features = X.shape[1]
    for local in range(local_start, local_stop):
        batch = rows if full_batch else rows[offsets[local]:offsets[local + 1]]
        total[:] = 0
        _exact_blocks_sum(X, y, batch, params, feature_norms, code, threshold, clip_norm,
                          intercept_term, weights, largest, tiny, residual_scale,
                          row_grid_scale, residual_bound, row_bound, 0,
                          (batch.shape[0] + ROWS_PER_STEP_BLOCK - 1) // ROWS_PER_STEP_BLOCK,
                          total)
        _scaled_noisy_sum(total, noise[local], grid_step, grad)
        finish_step(params, grad, n_features, sigma, omega, learning_rates, chunk_start + local,
                    alpha, inv_batch, optimizer_code, optimizer_factor, optimizer_state,
                    averaged, average_start)


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
