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
blocks ahead, and the fit's thread draws any block it needs that nobody
took. A step's rows are summed in fixed blocks of
:data:`ROWS_PER_STEP_BLOCK` rows. Where a batch of the plan's size has
several blocks and enough work to split (:meth:`ExactNoiseTraining.team_blocks`,
from the batch's length and the parameters' shape only), the compiled run
of steps shares each step's blocks with the helpers
(:func:`~._exact_kernels.exact_team_steps`): a helper drawing the next
chunk's noise joins the sums once it is done. Neither result depends on the
threads: the noise's blocks are fixed, the sums are of integers. The steps
run as one compiled call per segment of steps whose noise is made
(:meth:`ExactNoiseTraining.compiled_steps`).
"""

import threading
import time

import numpy as np

from ..training import run_training
from ._clipping import COEFFICIENT_RANGE
from ._exact_kernels import (
    PARTS_PER_THREAD, ROWS_PER_STEP_BLOCK, exact_blocks_sum, exact_steps, exact_team_helper,
    exact_team_steps, scaled_noisy_sum, team_parts,
)
from ._grid_sum import (
    MAX_GRID_BITS, check_batch_rows, grid_norm_bound,
)
from ._kernels import check_weights, parallel_blocks
from ._numpy import NumpyTraining
from ._steps import finish_step
from ._threads import blocks_on_threads, run_with_team, share_with_helpers

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
# Rows of a step below which a step run from Python (no compiled run: see
# compiled_steps, whose team shares smaller batches) is not split among the
# fit's threads (they draw the noise ahead instead): a step's noise, K (d + 1)
# draws of about 40 ns, costs about the sum of 250 rows (about 0.17 ns a row and
# coordinate). A public constant.
SPLIT_MIN_ROWS = 1024
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
        thread makes what the next step needs). With several threads and a
        plan whose batches :meth:`team_blocks` shares, the segment runs on a
        team (:meth:`_team_steps`); otherwise a step whose sum is shared by
        the threads (:meth:`_row_parts`) forms it from Python, then the same
        compiled post-processing.
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
        # Steps on a team where a typical batch has several row blocks.
        team = self.n_threads > 1 and self.team_blocks(plan.batch_size) > 1

        def run(params, averaged, draws, chunk_start, local_start, local_stop):
            rows, offsets, noise = draws
            full_batch = rows is None
            local = local_start
            while local < local_stop:
                size = self.X.shape[0] if full_batch else int(offsets[local + 1] - offsets[local])
                if not team and self._row_parts(size) > 1:
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
                arguments = (
                    self.X, self.y, self._all_rows if full_batch else rows,
                    self._no_offsets if full_batch else offsets, full_batch, params,
                    self.feature_norms, *self._sum_settings(),
                    values.reshape(-1, self.params.shape[0], self._n_noisy_columns),
                    self._grid_step(), total, self._grad, learning_rates, chunk_start, local,
                    stop, *settings, no_average if averaged is None else averaged,
                    average_start)
                if team:
                    self._team_steps(arguments, local, stop)
                else:
                    exact_steps(*arguments)
                update.n_updates += stop - local
                local = stop
            return params, averaged

        return run

    def team_blocks(self, n_rows):
        """Row blocks a step of ``n_rows`` rows is shared in by a team (1: not shared).

        A public function of the batch's length and the parameters' shape
        (never of timing, which would make runs vary): the batch's blocks of
        :data:`ROWS_PER_STEP_BLOCK` rows where the ordinary step would split
        a batch of that size (:func:`~._kernels.parallel_blocks`). Which
        thread sums which block changes nothing released (the blocks are
        fixed, their sums integers).
        """
        n_blocks = -(-int(n_rows) // ROWS_PER_STEP_BLOCK)
        if n_blocks <= 1 or parallel_blocks(
                int(n_rows) * self.params.size, int(n_rows), self.n_threads) <= 1:
            return 1
        return n_blocks

    def _team_steps(self, arguments, local_start, local_stop):
        """:func:`~._exact_kernels.exact_team_steps` over the steps, the helpers sharing blocks.

        Each step has its own progress row (a helper late on a step never
        touches a later step's); each thread has a buffer per part of whole
        blocks (:func:`~._exact_kernels.team_parts`).
        """
        rows, offsets, full_batch = arguments[2:5]
        if full_batch:
            sizes = [rows.shape[0]]
        else:
            sizes = np.diff(offsets[local_start:local_stop + 1]).tolist()
        # Every step's own count of parts: it is not monotone in the batch's
        # size, so the largest batch need not have the most parts.
        n_parts = max([team_parts(size, self.n_threads)[0] for size in sizes], default=1)
        # Each part zeroes its buffer before its sum (only the parts used are touched).
        partial = np.empty((self.n_threads, n_parts) + self.params.shape, dtype=np.int64)
        progress = np.zeros((local_stop - local_start, n_parts + 1), dtype=np.int64)
        control = np.zeros(2, dtype=np.int64)
        helper_args = arguments[:18] + (partial, progress, control, local_start)
        run_with_team(lambda: exact_team_steps(*arguments, partial, progress, control),
                      exact_team_helper, helper_args, control, self.n_threads)

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
        scaled_noisy_sum(total, self._step_noise(noise, local_step), self._grid_step(),
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
            exact_blocks_sum(self.X, self.y, batch, params, self.feature_norms, *settings, 0,
                             n_row_blocks, total)
            return total
        bounds = [n_row_blocks * b // n_parts for b in range(n_parts + 1)]

        def part(b):
            total = np.zeros((n_outputs, width), dtype=np.int64)
            exact_blocks_sum(self.X, self.y, batch, params, self.feature_norms, *settings,
                             bounds[b], bounds[b + 1], total)
            return total

        # Sums of integers: the same whatever the threads.
        return sum(blocks_on_threads(part, n_parts, self.n_threads))


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
