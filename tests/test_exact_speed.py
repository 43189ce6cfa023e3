"""The exact mode's fast paths: the same integers and the same law as the plain ones."""

import warnings

import numpy as np
import pytest
from oracles import factored_sum_reference

from sklearn_dplssgd import DPLSSGDClassifier
from sklearn_dplssgd.backends import (
    ChaChaWords, DiscreteGaussianScale, ExactNoise, ExactNoiseTraining, sample_discrete_gaussian,
)
from sklearn_dplssgd.backends import _exact, _exact_kernels
from sklearn_dplssgd.backends._clipping import COEFFICIENT_RANGE
from sklearn_dplssgd.backends._kernels import parallel_blocks
from sklearn_dplssgd.training import TrainingPlan, loss_code

KEY, NONCE = bytes(range(7, 39)), bytes.fromhex("0102030405060708")


def test_substreams_are_the_key_under_distinct_nonces():
    root = ChaChaWords(key=KEY, nonce=NONCE)
    nonce = int.from_bytes(NONCE, "little")
    firsts = [root.substream(i).words(64) for i in range(5)]
    for i, words in enumerate(firsts):
        alone = ChaChaWords(key=KEY, nonce=(nonce ^ (i + 1)).to_bytes(8, "little"))
        np.testing.assert_array_equal(words, alone.words(64))
    # Distinct from each other and from the root's own stream; the same index
    # gives the same words again.
    streams = firsts + [ChaChaWords(key=KEY, nonce=NONCE).words(64)]
    assert len({words.tobytes() for words in streams}) == len(streams)
    np.testing.assert_array_equal(root.substream(3).words(64), firsts[3])


def test_a_substream_is_not_split_again_and_its_index_is_checked():
    root = ChaChaWords(key=KEY, nonce=NONCE)
    with pytest.raises(ValueError, match="split again"):
        root.substream(0).substream(1)
    with pytest.raises(ValueError, match="index"):
        root.substream(2 ** 64 - 1)


@pytest.mark.parametrize("n_threads", [1, 2])
def test_noise_blocks_come_from_fresh_streams_whatever_the_threads(n_threads):
    scale = DiscreteGaussianScale.at_least(40.0)
    block = _exact.NOISE_BLOCK_SAMPLES
    exact = ExactNoise(4, 4, scale, ChaChaWords(key=KEY, nonce=NONCE))
    first = exact.draw(2 * block + 5, n_threads)
    second = exact.draw(block, n_threads)
    root = ChaChaWords(key=KEY, nonce=NONCE)
    expected = [sample_discrete_gaussian(size, scale, root.substream(stream))
                for stream, size in enumerate([block, block, 5, block])]
    np.testing.assert_array_equal(first, np.concatenate(expected[:3]))
    np.testing.assert_array_equal(second, expected[3])
    assert first.dtype == np.int64 and abs(first.std() / 40.0 - 1) < 0.05


def test_a_source_without_streams_is_read_in_order():
    class Words:
        def __init__(self):
            self.inner = ChaChaWords(key=KEY, nonce=NONCE)

        def words(self, count):
            return self.inner.words(count)

    scale = DiscreteGaussianScale.at_least(2.0)
    drawn = ExactNoise(4, 4, scale, Words()).draw(3000, 2)
    expected = sample_discrete_gaussian(3000, scale, ChaChaWords(key=KEY, nonce=NONCE))
    np.testing.assert_array_equal(drawn, expected)


def _backend(X, y, n_outputs, n_threads, fit_intercept=True):
    plan = TrainingPlan(
        loss_code=loss_code("log_loss", n_outputs), loss_threshold=0.0,
        fit_intercept=fit_intercept, clip_norm=0.5, noise_multiplier=np.ones(2), sample_rate=0.5,
        batch_size=100, n_steps=2, n_epochs=1, learning_rates=np.full(2, 0.1), alpha=0.0,
        sigma=0.0, average_start=None, optimizer=None, max_sample_weight=1.0)
    exact = ExactNoise(6, 6, DiscreteGaussianScale.at_least(3.0), ChaChaWords(KEY, NONCE))
    return ExactNoiseTraining(X, y, n_outputs, plan, np.random.default_rng(1),
                              noise_source=exact, n_threads=n_threads)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("n_outputs, fit_intercept", [(1, True), (4, True), (4, False)])
def test_the_step_integer_sum_equals_the_oracle_on_its_clipped_residuals(
        dtype, n_outputs, fit_intercept):
    # The compiled gather, margins and clip, then the rounding in blocks on
    # two threads (the batch is large enough to be split), against the
    # integer oracle on the same clipped residuals.
    rng = np.random.default_rng(5)
    X = rng.normal(size=(1200, 200)).astype(dtype)
    X[3] *= 1e3  # a row that the clip scales down
    y = rng.integers(0, n_outputs if n_outputs > 1 else 2, 1200).astype(np.float64)
    params = (rng.normal(size=(n_outputs, 201)) * 0.1).astype(dtype)
    batch = np.sort(rng.choice(1200, 1100, replace=False))
    for n_threads in (1, 2):
        backend = _backend(X, y, n_outputs, n_threads, fit_intercept)
        # Four outputs on two threads: the row blocks are shared in parts.
        assert (backend._row_parts(1100) > 1) == (n_threads == 2 and n_outputs == 4)
        total = backend.integer_sum(params, batch)
        plan = backend.plan
        largest, tiny = COEFFICIENT_RANGE[np.dtype(np.float64)]
        design = np.empty((1100, 201), dtype=dtype)
        clipped = np.empty((1100, n_outputs))
        intercept = 1.0 if fit_intercept else 0.0
        # The margins as the step forms them: one BLAS product a fixed block.
        block = _exact.ROWS_PER_STEP_BLOCK
        margins = np.concatenate([
            _exact_kernels.gather_margins(X, batch[start:start + block], params, intercept,
                                          design[start:start + block])
            for start in range(0, 1100, block)])
        _exact_kernels.scaled_clipped_residuals(
            X, y, batch, params, margins, backend.feature_norms, plan.loss_code, 0.0,
            plan.clip_norm, intercept, np.empty(0), largest, tiny, 1.0, 0, 1100, clipped)
        np.testing.assert_array_equal(design[:, :200], X[batch])
        # The clip holds: the residual factors u_i = clip(r_i) ||x'_i|| are
        # within C, and the clipped residuals are those of float64 margins up
        # to the dtype's rounding.
        norms = np.linalg.norm(clipped, axis=1)
        assert norms.max() <= 0.5 * (1 + 1e-12) and norms.max() > 0.49
        scaled = np.empty((1100, n_outputs))
        _exact_kernels.scaled_clipped_residuals(
            X, y, batch, params, margins, backend.feature_norms, plan.loss_code, 0.0,
            plan.clip_norm, intercept, np.empty(0), largest, tiny, 2.0 ** 6 / 0.5, 0, 1100, scaled)
        expected, left_out = factored_sum_reference(
            X[batch], clipped, 0.5, 6, 6, intercept, row_norms=backend.feature_norms[batch],
            scaled_residuals=scaled)
        assert left_out == 0
        np.testing.assert_array_equal(total, expected)


def test_reproducible_fits_are_the_same_on_one_thread_and_two():
    # The noise comes in blocks of a fixed size and the sums are integers, so
    # the released model does not depend on n_jobs.
    rng = np.random.default_rng(3)
    X = rng.normal(size=(6000, 300)).astype(np.float32)
    y = (X[:, 0] > 0).astype(int) + (X[:, 1] > 0)
    # Three classes of 301 coordinates, 8 steps: two blocks of noise, and
    # batches whose rows are rounded in two parts on two threads.
    assert 8 * 3 * 301 > _exact.NOISE_BLOCK_SAMPLES
    assert 1300 > _exact.SPLIT_MIN_ROWS and parallel_blocks(1300 * 3 * 301, 1300, 2) == 2
    models = []
    for n_jobs in (1, 2):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            models.append(DPLSSGDClassifier(
                mechanism="gradient_exact", epsilon=1.0, batch_size=1500, max_iter=2,
                reproducible=True, random_state=4, n_jobs=n_jobs).fit(X, y))
    np.testing.assert_array_equal(models[0].coef_, models[1].coef_)
    np.testing.assert_array_equal(models[0].intercept_, models[1].intercept_)
