"""The exact mode's steps on threads: noise drawn ahead, compiled runs, the same integers."""

import threading
import warnings

import numpy as np
import pytest

from sklearn_dplssgd import DPLSSGDClassifier
from sklearn_dplssgd.backends import (
    ChaChaWords, DiscreteGaussianScale, ExactNoise, ExactNoiseTraining, sample_discrete_gaussian,
)
from sklearn_dplssgd.backends import _exact
from sklearn_dplssgd.backends._threads import share_with_helpers
from sklearn_dplssgd.training import _loop

KEY, NONCE = bytes(range(3, 35)), bytes.fromhex("0807060504030201")
BLOCK = _exact.NOISE_BLOCK_SAMPLES


def _expected(scale, sizes):
    root = ChaChaWords(key=KEY, nonce=NONCE)
    return [sample_discrete_gaussian(size, scale, root.substream(stream))
            for stream, size in enumerate(sizes)]


def test_noise_blocks_made_in_turn_take_their_streams_in_turn_on_helpers():
    # Two objects made one after the other (as a fit makes a chunk's noise
    # and the next's): the second's blocks are the streams after the
    # first's, whoever draws them.
    scale = DiscreteGaussianScale.at_least(30.0)
    exact = ExactNoise(4, 4, scale, ChaChaWords(key=KEY, nonce=NONCE))
    first = _exact.NoiseBlocks(exact, 2 * BLOCK + 7)
    second = _exact.NoiseBlocks(exact, BLOCK + 1)
    share_with_helpers(second, 2)
    share_with_helpers(first, 2)
    expected = _expected(scale, [BLOCK, BLOCK, 7, BLOCK, 1])
    np.testing.assert_array_equal(second.upto(BLOCK + 1), np.concatenate(expected[3:]))
    np.testing.assert_array_equal(first.upto(2 * BLOCK + 7), np.concatenate(expected[:3]))
    assert first.made_count() == 2 * BLOCK + 7


def test_a_block_a_stalled_helper_holds_is_made_again_with_the_same_draws():
    scale = DiscreteGaussianScale.at_least(30.0)
    exact = ExactNoise(4, 4, scale, ChaChaWords(key=KEY, nonce=NONCE))
    blocks = _exact.NoiseBlocks(exact, 2 * BLOCK)
    # A helper took block 0 and never finishes it.
    assert blocks._take() == 0
    assert blocks.made_count() == 0
    values = blocks.upto(BLOCK + 1)
    np.testing.assert_array_equal(values, np.concatenate(_expected(scale, [BLOCK, BLOCK])))
    # Without noise (epsilon=inf) every draw is made (zeros) at once.
    silent = _exact.NoiseBlocks(ExactNoise(4, 4, None, None), 10)
    assert silent.made_count() == 10 and not silent.upto(10).any()
    # Cancelled: nothing more to take.
    other = _exact.NoiseBlocks(exact, BLOCK)
    other.cancel()
    assert other._take() == -1


def test_a_failing_block_on_a_helper_fails_on_the_calling_thread():
    class Failing:
        calls = 0

        def sample(self, count, source):
            Failing.calls += 1
            raise RuntimeError("sampler out of range")

    exact = ExactNoise(4, 4, Failing(), ChaChaWords(key=KEY, nonce=NONCE))
    blocks = _exact.NoiseBlocks(exact, 3 * BLOCK)
    done = threading.Event()

    class Marker:
        def claim(self, again):
            done.set()

        def release(self):
            pass

    share_with_helpers(blocks, 2)
    share_with_helpers(Marker(), 2)
    done.wait(5)
    with pytest.raises(RuntimeError, match="out of range"):
        blocks.upto(1)


def _fits(monkeypatch, batch_size, n_jobs_list, values_per_chunk=None, compiled=True, **kwargs):
    if values_per_chunk is not None:
        # Small chunks, so that noise is drawn ahead across several.
        monkeypatch.setattr(_loop, "NOISE_VALUES_PER_CHUNK", values_per_chunk)
    if not compiled:
        monkeypatch.setattr(ExactNoiseTraining, "compiled_steps", lambda self, update: None)
    return _exact_fits(11, (3000, 120), n_jobs_list, batch_size=batch_size, random_state=9,
                       **kwargs)


def _exact_fits(data_seed, shape, n_jobs_list, **params):
    """Reproducible exact-mode fits of one 3-class table, one per ``n_jobs``."""
    rng = np.random.default_rng(data_seed)
    X = rng.normal(size=shape).astype(np.float32)
    y = (X[:, 0] > 0).astype(int) + (X[:, 1] > 0.5)
    models = []
    for n_jobs in n_jobs_list:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            models.append(DPLSSGDClassifier(
                mechanism="gradient_exact", epsilon=1.0, max_iter=2, reproducible=True,
                n_jobs=n_jobs, **params).fit(X, y))
    return models


def test_small_batches_give_the_same_model_on_one_thread_and_two_across_chunks(monkeypatch):
    # Batches under SPLIT_MIN_ROWS: the sums on the calling thread, the
    # noise of the next chunk drawn ahead on the helper (chunks of 4 steps).
    assert 200 < _exact.SPLIT_MIN_ROWS
    models = _fits(monkeypatch, 200, (1, 2), values_per_chunk=4 * 3 * 121)
    assert models[0].n_steps_ >= 20
    np.testing.assert_array_equal(models[0].coef_, models[1].coef_)
    np.testing.assert_array_equal(models[0].intercept_, models[1].intercept_)


@pytest.mark.parametrize("kwargs", [{}, {"optimizer": "momentum", "average": True}])
def test_the_compiled_run_is_the_python_steps_bit_for_bit(monkeypatch, kwargs):
    compiled = _fits(monkeypatch, 200, (1, 2), **kwargs)
    with monkeypatch.context() as patch:
        python = _fits(patch, 200, (1,), compiled=False, **kwargs)
    for model in compiled:
        np.testing.assert_array_equal(model.coef_, python[0].coef_)
        np.testing.assert_array_equal(model.intercept_, python[0].intercept_)


def test_large_batches_split_their_sum_and_small_ones_do_not():
    plan_rows = _exact.SPLIT_MIN_ROWS
    rng = np.random.default_rng(2)
    X = rng.normal(size=(3 * plan_rows, 250))
    y = rng.integers(0, 2, 3 * plan_rows).astype(np.float64)
    from sklearn_dplssgd.training import TrainingPlan, loss_code
    plan = TrainingPlan(
        loss_code=loss_code("log_loss", 1), loss_threshold=0.0, fit_intercept=True,
        clip_norm=1.0, noise_multiplier=np.ones(1), sample_rate=0.5, batch_size=plan_rows,
        n_steps=1, n_epochs=1, learning_rates=np.full(1, 0.1), alpha=0.0, sigma=0.0,
        average_start=None, optimizer=None, max_sample_weight=1.0)
    exact = ExactNoise(6, 6, None, ChaChaWords(KEY, NONCE))
    for n_threads in (1, 2):
        backend = ExactNoiseTraining(X, y, 1, plan, np.random.default_rng(1),
                                     noise_source=exact, n_threads=n_threads)
        assert backend._row_parts(plan_rows - 1) == 1
        assert backend._row_parts(2 * plan_rows) == (1 if n_threads == 1 else min(
            2 * plan_rows // _exact.ROWS_PER_STEP_BLOCK, 2 * _exact.PARTS_PER_THREAD))


def _wide_fits(monkeypatch, n_jobs_list, stall_helpers=False):
    # Batches of about 300 rows of 500 columns: several row blocks a step,
    # and work enough that a team shares them (ExactNoiseTraining.team_blocks).
    runs = []
    original = _exact.exact_team_steps

    def counted(*args):
        runs.append(args[25] - args[24])
        return original(*args)

    monkeypatch.setattr(_exact, "exact_team_steps", counted)
    if stall_helpers:
        # Helpers that never come: the calling thread makes every block itself.
        monkeypatch.setattr(_exact, "run_with_team",
                            lambda run, helper, args, control, n_threads: run())
    return _exact_fits(5, (1200, 500), n_jobs_list, batch_size=300, random_state=4), runs


def test_a_team_shares_the_row_blocks_and_gives_the_one_thread_model(monkeypatch):
    (one, two), runs = _wide_fits(monkeypatch, (1, 2))
    assert sum(runs) == two.n_steps_ >= 8
    np.testing.assert_array_equal(one.coef_, two.coef_)
    np.testing.assert_array_equal(one.intercept_, two.intercept_)


def test_a_team_whose_helpers_never_run_gives_the_same_model(monkeypatch):
    (one,), _ = _wide_fits(monkeypatch, (1,))
    (stalled,), runs = _wide_fits(monkeypatch, (2,), stall_helpers=True)
    assert sum(runs) == stalled.n_steps_
    np.testing.assert_array_equal(one.coef_, stalled.coef_)


def test_team_blocks_is_a_function_of_the_batch_and_the_shape():
    rng = np.random.default_rng(2)
    X = rng.normal(size=(600, 784))
    y = rng.integers(0, 10, 600).astype(np.float64)
    from sklearn_dplssgd.training import TrainingPlan, loss_code
    plan = TrainingPlan(
        loss_code=loss_code("log_loss", 10), loss_threshold=0.0, fit_intercept=True,
        clip_norm=1.0, noise_multiplier=np.ones(1), sample_rate=0.5, batch_size=256,
        n_steps=1, n_epochs=1, learning_rates=np.full(1, 0.1), alpha=0.0, sigma=0.0,
        average_start=None, optimizer=None, max_sample_weight=1.0)
    exact = ExactNoise(6, 6, None, ChaChaWords(KEY, NONCE))
    blocks = {}
    for n_threads in (1, 2):
        backend = ExactNoiseTraining(X, y, 10, plan, np.random.default_rng(1),
                                     noise_source=exact, n_threads=n_threads)
        blocks[n_threads] = [backend.team_blocks(rows) for rows in (60, 128, 256, 300)]
    assert blocks[1] == [1, 1, 1, 1]
    assert blocks[2] == [1, 2, 4, 5]


# Block counts 1 .. 70 in a mixed order: the parts of a team step are not
# monotone in the batch's size (with 2 threads, 32 blocks make 8 parts and 33
# make 7), so a run's buffers must fit every step's count, not the largest
# batch's.
_SWEEP_BLOCKS = np.random.default_rng(7).permutation(np.arange(1, 71))


def _swept_batches(self, chunk_steps):
    """Batches of every block count in turn (a stand-in for the Poisson sampler)."""
    start = getattr(self, "_sweep_next", 0)
    self._sweep_next = start + chunk_steps
    rng = np.random.default_rng(start)
    batches = []
    for step in range(start, start + chunk_steps):
        blocks = int(_SWEEP_BLOCKS[step % len(_SWEEP_BLOCKS)])
        size = blocks * _exact.ROWS_PER_STEP_BLOCK - int(rng.integers(0, 64))
        batches.append(np.sort(rng.choice(self.X.shape[0], size=max(size, 1), replace=False)))
    offsets = np.concatenate([[0], np.cumsum([len(batch) for batch in batches])])
    return np.concatenate(batches).astype(np.int64), offsets.astype(np.int64)


def sweep_team_batch_sizes(shapes=((4500, 100, 3), (4600, 40, 5)), n_jobs_list=(2, 3, 4)):
    """Exact fits over batches of every block count, one per ``n_jobs``; the models' arrays.

    The team runs wherever the plan's batch size is shared (``team_blocks``);
    the thread count is taken as asked (``os.cpu_count`` is not the limit).
    """
    import os
    from unittest import mock
    results = []
    with mock.patch.object(ExactNoiseTraining, "chunk_batches", _swept_batches), \
            mock.patch.object(os, "cpu_count", lambda: 8):
        for n_rows, n_features, n_classes in shapes:
            rng = np.random.default_rng(n_features)
            X = rng.normal(size=(n_rows, n_features))
            y = rng.integers(0, n_classes, n_rows)
            models = []
            for n_jobs in (1,) + tuple(n_jobs_list):
                with warnings.catch_warnings():
                    warnings.simplefilter("ignore")
                    model = DPLSSGDClassifier(
                        mechanism="gradient_exact", epsilon=1.0, batch_size=1400, max_iter=25,
                        reproducible=True, random_state=3, n_jobs=n_jobs).fit(X, y)
                assert model.n_steps_ >= len(_SWEEP_BLOCKS)
                models.append(np.hstack([model.coef_, model.intercept_[:, None]]))
            results.append(models)
    return results


def _assert_sweep_equal(results):
    for models in results:
        for model in models[1:]:
            np.testing.assert_array_equal(model, models[0])


def test_team_steps_of_every_block_count_give_the_one_thread_model(monkeypatch):
    runs = []
    original = _exact.exact_team_steps
    monkeypatch.setattr(_exact, "exact_team_steps",
                        lambda *args: runs.append(1) or original(*args))
    _assert_sweep_equal(sweep_team_batch_sizes())
    assert runs  # the team ran


def test_team_steps_pinned_to_one_core_give_the_one_thread_model(tmp_path):
    # One core: the helpers run late or not at all, and the calling thread
    # makes their parts again.
    import os
    import subprocess
    import sys
    if not hasattr(os, "sched_setaffinity"):
        pytest.skip("no processor affinity on this platform")
    script = (
        "import os, sys, numpy as np\n"
        "os.sched_setaffinity(0, {min(os.sched_getaffinity(0))})\n"
        f"sys.path.insert(0, {os.path.dirname(__file__)!r})\n"
        "from test_exact_threads import sweep_team_batch_sizes\n"
        "np.save(sys.argv[1], np.array(sweep_team_batch_sizes(shapes=((4500, 100, 3),))))\n")
    out = tmp_path / "models.npy"
    subprocess.run([sys.executable, "-c", script, str(out)], check=True, timeout=600)
    _assert_sweep_equal(np.load(out))


def test_a_step_with_more_parts_than_its_buffers_is_refused():
    from sklearn_dplssgd.backends._exact_kernels import check_team_buffers
    partial = np.zeros((2, 7, 3, 4), dtype=np.int64)
    states = np.zeros(8, dtype=np.int64)
    check_team_buffers(7, partial, states)
    with pytest.raises(IndexError):
        check_team_buffers(8, partial, states)
    with pytest.raises(IndexError):
        check_team_buffers(7, partial, states[:7])
