"""Noise schedules: their public shape, their accounting and their fits."""

import dp_accounting
import numpy as np
import pytest

from sklearn_dplssgd import DPLSSGDClassifier
from sklearn_dplssgd._mechanisms._gradient import GradientPerturbation
from sklearn_dplssgd import ConstantNoise, ExponentialNoise, RelativeNoise, StepNoise
from sklearn_dplssgd._training._schedules import MAX_BLOCKS, noise_schedule_blocks, step_levels
from sklearn_dplssgd._backends._numpy import train_dp_lssgd
from sklearn_dplssgd._training._loop import TrainingPlan

from oracles import SQUARED_ERROR

DELTA = 1e-5


def test_named_schedules():
    assert noise_schedule_blocks("constant", 100, 10) == ((100, 1.0),)
    assert noise_schedule_blocks(ConstantNoise(), 100, 10) == ((100, 1.0),)
    exponential = noise_schedule_blocks(ExponentialNoise(per_epoch=0.5), 100, 4)
    assert exponential == ((25, 1.0), (25, 0.5), (25, 0.25), (25, 0.125))
    assert noise_schedule_blocks(StepNoise(final_ratio=0.25), 100, 4) == (
        (50, 1.0), (25, 0.5), (25, 0.25))
    # Epochs that do not divide the steps end where the training loop ends them.
    uneven = noise_schedule_blocks(ExponentialNoise(per_epoch=0.9), 10, 3)
    assert [s for s, _ in uneven] == [4, 3, 3]
    assert noise_schedule_blocks([1.0, 1.0, 0.5], 10, 3) == ((7, 1.0), (3, 0.5))
    assert noise_schedule_blocks(RelativeNoise([1.0, 1.0, 0.5]), 10, 3) == ((7, 1.0), (3, 0.5))


@pytest.mark.parametrize("n_epochs", [2, 5, 50, 600, 5000])
def test_named_decays_reach_their_final_ratio_whatever_the_number_of_epochs(n_epochs):
    # The names are parametrised over the whole run: never refused at the
    # default epoch counts of small tables (issue "front door": 601 epochs
    # at 0.9 per epoch made the last noise 4.3e-28 times the first).
    for name in ("exponential", "step"):
        levels = step_levels(noise_schedule_blocks(name, 10 * n_epochs, n_epochs))
        assert levels[0] == 1.0 and levels[-1] == pytest.approx(0.5, rel=0.02)
        assert np.all(np.diff(levels) <= 0)
    quarter = step_levels(noise_schedule_blocks(ExponentialNoise(final_ratio=0.25),
                                                10 * n_epochs, n_epochs))
    assert quarter[-1] == pytest.approx(0.25, rel=0.05)
    # One epoch: nothing to decay over.
    assert noise_schedule_blocks("exponential", 10, 1) == ((10, 1.0),)


def test_schedule_settings_are_parameters_a_search_reaches():
    clf = DPLSSGDClassifier(noise_schedule=ExponentialNoise())
    clf.set_params(noise_schedule__final_ratio=0.25)
    assert clf.get_params()["noise_schedule__final_ratio"] == 0.25
    with pytest.raises(ValueError, match="final_ratio must be a number in"):
        noise_schedule_blocks(ExponentialNoise(final_ratio=0.0), 10, 2)
    # A per-epoch factor over a long run is refused, naming the remedy.
    with pytest.raises(ValueError, match="final ratio"):
        noise_schedule_blocks(ExponentialNoise(per_epoch=0.9), 600, 600)


def test_long_schedules_are_grouped_into_at_most_max_blocks():
    blocks = noise_schedule_blocks(ExponentialNoise(per_epoch=0.995), 1000, 1000)
    assert len(blocks) <= MAX_BLOCKS and sum(s for s, _ in blocks) == 1000
    levels = step_levels(blocks)
    assert levels[0] == 1.0 and levels[20] == pytest.approx(0.995 ** 20)
    assert np.all(np.diff(levels) <= 0)


@pytest.mark.parametrize("schedule, match", [
    ("cosine", "noise_schedule"), ([], "noise_schedule"), ([1.0, 0.0], "positive"),
    ([1.0, np.inf], "finite"), (np.ones(MAX_BLOCKS + 1), "at most"), ([[1.0]], "1-d"),
])
def test_bad_schedules_are_refused(schedule, match):
    X, y = np.zeros((20, 2)), np.arange(20) % 2
    with pytest.raises(ValueError, match=match):
        DPLSSGDClassifier(noise_schedule=schedule).fit(X, y)


@pytest.mark.parametrize("neighboring", ["replace_one", "add_remove"])
@pytest.mark.parametrize("sample_rate", [0.05, 1.0])
def test_scheduled_calibration_meets_epsilon_by_dp_accounting(neighboring, sample_rate):
    blocks = noise_schedule_blocks(ExponentialNoise(per_epoch=0.7), 30, 3)
    mechanism, calibration = GradientPerturbation.calibrated(
        1.0, DELTA, sample_rate=sample_rate, n_steps=30, accountant="pld",
        neighboring=neighboring, clip_norm=1.0, noise_schedule=blocks)
    assert mechanism.scheduled
    # Recompute from dp_event_ with dp-accounting's own PLD accountant.
    relation = {"replace_one": dp_accounting.NeighboringRelation.REPLACE_ONE,
                "add_remove": dp_accounting.NeighboringRelation.ADD_OR_REMOVE_ONE}[neighboring]
    accountant = dp_accounting.pld.PLDAccountant(relation, value_discretization_interval=1e-4)
    accountant.compose(mechanism.dp_event())
    epsilon = accountant.get_epsilon(DELTA)
    assert epsilon <= 1.0 * (1 + 1e-3)
    assert epsilon >= 0.97  # the smallest scale: not wastefully large
    assert calibration.epsilon == pytest.approx(epsilon, rel=2e-3)
    # The event is the composition of one block each, at z_k = c * level_k.
    events = mechanism.dp_event().events
    assert len(events) == len(blocks)
    assert [e.count for e in events] == [s for s, _ in blocks]
    z = mechanism.block_noise_multipliers()
    np.testing.assert_allclose(z, calibration.noise_multiplier * np.array([lv for _, lv in blocks]))
    # A broken variant (the scale off by 2) is refuted by the same accountant.
    broken = GradientPerturbation(sample_rate, 30, mechanism.noise_multiplier / 2, neighboring,
                                  1.0, noise_schedule=blocks)
    accountant = dp_accounting.pld.PLDAccountant(relation, value_discretization_interval=1e-4)
    accountant.compose(broken.dp_event())
    assert accountant.get_epsilon(DELTA) > 1.5


def test_fit_reports_the_schedule_and_draws_each_steps_noise(monkeypatch):
    rng = np.random.default_rng(0)
    X = rng.uniform(-1, 1, (300, 4))
    y = (X[:, 0] > 0).astype(int)
    model = DPLSSGDClassifier(epsilon=1.0, noise_schedule=StepNoise(final_ratio=0.25),
                              random_state=0).fit(X, y)
    assert model.noise_multipliers_.shape == (3,)
    np.testing.assert_allclose(model.noise_multipliers_ / model.noise_multipliers_[0],
                               [1.0, 0.5, 0.25])
    assert model.epsilon_ <= 1.0 + 1e-9
    assert isinstance(model.dp_event_, dp_accounting.ComposedDpEvent)
    # The constant default keeps today's event.
    constant = DPLSSGDClassifier(epsilon=1.0, random_state=0).fit(X, y)
    assert isinstance(constant.dp_event_, dp_accounting.SelfComposedDpEvent)
    assert constant.noise_multipliers_.tolist() == [constant.noise_multiplier_]
    # Decaying noise starts above the constant one and ends below it.
    assert model.noise_multipliers_[0] > constant.noise_multiplier_ > model.noise_multipliers_[-1]


def test_training_loop_scales_each_steps_noise():
    # Zero features: only the intercept moves, by its (clipped) squared-error
    # gradient plus each step's noise at that step's level; replayed below.
    n_steps = 6
    X = np.zeros((10, 2))
    y = np.zeros(10)
    levels = np.array([3.0, 3.0, 2.0, 2.0, 1.0, 1.0])
    scales, draws = [], []

    def recording_noise(rng, scale, count):
        noise = rng.integers(-scale, scale, size=count)
        scales.append(scale)
        draws.append(noise.reshape(-1, 3))
        return noise

    plan = TrainingPlan(
        loss_code=SQUARED_ERROR, loss_threshold=0.0, fit_intercept=True, clip_norm=1.0,
        noise_multiplier=levels, sample_rate=1.0, batch_size=10, n_steps=n_steps, n_epochs=6,
        learning_rates=np.full(n_steps, 0.1), alpha=0.0, sigma=0.0, max_batch_rows=10)
    params = train_dp_lssgd(X, y, 1, plan, np.random.default_rng(1),
                            noise_source=recording_noise)
    lattice = plan.lattice(3)
    # One draw per level, at that level's integer scale.
    assert scales == [int(np.ceil(level * lattice.sensitivity)) for level in (3.0, 2.0, 1.0)]
    noise = np.concatenate(draws)
    # Squared error at zero target: the residual is the intercept itself.
    expected = np.zeros(3)
    for t in range(n_steps):
        gradient = np.array([0.0, 0.0, expected[2]])
        norm = abs(expected[2])
        gradient *= min(1.0, 1.0 / norm) if norm > 0 else 1.0
        released = lattice.step * (noise[t] + np.rint(10 * gradient / lattice.step))
        expected -= 0.1 / 10 * released
    np.testing.assert_allclose(params[0], expected, rtol=1e-10, atol=1e-12)


def test_a_schedule_spanning_too_wide_a_range_is_refused():
    with pytest.raises(ValueError, match="per-epoch factor closer to 1"):
        noise_schedule_blocks(ExponentialNoise(per_epoch=0.9), 1000, 191)


@pytest.mark.parametrize("schedule", ["constant", "exponential", "step"])
def test_every_named_schedule_fits_a_small_table_at_the_defaults(schedule):
    # A small table's default run has hundreds of epochs; a per-epoch decay
    # refused it (the last noise 4.3e-28 times the first).
    rng = np.random.default_rng(0)
    X = rng.uniform(-1, 1, (426, 30))
    y = (X[:, 0] + X[:, 1] > 0).astype(int)
    model = DPLSSGDClassifier(noise_schedule=schedule, classes=[0, 1]).fit(X, y)
    assert model.n_iter_ > 100 and model.epsilon_ <= 1.0 + 1e-9
    levels = model.noise_multipliers_ / model.noise_multipliers_[0]
    assert levels[-1] == pytest.approx(1.0 if schedule == "constant" else 0.5, rel=0.05)
