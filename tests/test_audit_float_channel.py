"""The floating-point distinguishing test: the ordinary float64 release is refuted,
the exact-noise mode is not, and a broken exact mode (float noise on the integer sum) is."""

import math

import numpy as np
import pytest

from sklearn_dplssgd import DPLSSGDClassifier, DPLSSGDRegressor
from sklearn_dplssgd.audit import (
    CheckResult, audit_implementation, check_float_channel, epsilon_lower_bound_of_event,
    off_grid,
)
from sklearn_dplssgd.audit import _workflow_checks
from sklearn_dplssgd.backends import ExactNoise, ExactNoiseTraining
from sklearn_dplssgd.backends._exact import NoiseBlocks

# Runs per side that refute the ordinary mode at epsilon 1 (about 3.5 % of the
# runs without the canary are off the grid, none with it).
N_RUNS = 1000


def test_off_grid_reads_the_low_bits():
    values = np.array([0.0, 1.0, 2.0 ** -53, 2.0 ** -54, 0.1, -1.5, 1.0 + 2.0 ** -52])
    assert off_grid(values, 0).tolist() == [False, False, False, True, True, False, False]
    # One binade down, the grid is twice as fine.
    assert off_grid(values, -1).tolist() == [False] * 4 + [True, False, False]


def test_a_float64_sum_with_the_canary_is_on_the_grid():
    # The argument of the check, on NumPy's arithmetic: fl(s + n) is a
    # multiple of 2**(e - 53) for s in [2**e, 2**(e + 1)), any float n.
    noise = np.random.default_rng(0).standard_normal(200_000) * 7.5
    for s in (1.0, 1.75, 0.3):
        exponent = math.frexp(s)[1] - 1
        assert not off_grid(s + noise, exponent).any()
    assert off_grid(noise, 0).mean() > 0.02


def test_event_bound_is_zero_without_a_difference_and_large_with_one():
    assert epsilon_lower_bound_of_event(30, 1000, 30, 1000, delta=1e-5) == 0.0
    one_way = epsilon_lower_bound_of_event(300, 1000, 0, 1000, delta=1e-5)
    other_way = epsilon_lower_bound_of_event(0, 1000, 300, 1000, delta=1e-5)
    assert one_way == pytest.approx(other_way)
    # log(lower bound on 0.3 / upper bound on 0) at 98.75 % each side.
    assert 3.5 < one_way < math.log(0.3 * 1000 / -math.log(0.0125))
    with pytest.raises(ValueError, match="confidence"):
        epsilon_lower_bound_of_event(1, 10, 1, 10, delta=1e-5, confidence=1.5)


@pytest.mark.parametrize("estimator", [
    DPLSSGDRegressor(epsilon=1.0),
    DPLSSGDClassifier(epsilon=1.0, classes=[0, 1], neighboring="add_remove"),
])
def test_the_ordinary_float64_release_is_refuted(estimator):
    result = check_float_channel(estimator, n_runs=N_RUNS, random_state=0)
    assert not result.passed, result
    assert result.measured > 1.0 == result.limit
    assert "gradient mechanism" in result.detail


def test_the_exact_mode_is_not_refuted():
    result = check_float_channel(DPLSSGDRegressor(epsilon=1.0, mechanism="gradient_exact"),
                                 n_runs=N_RUNS // 2, random_state=0)
    assert result.passed, result
    assert result.measured == 0.0


def test_float_noise_on_the_integer_sum_is_refuted(monkeypatch):
    # A broken exact mode: the integer sum without its discrete Gaussian, and
    # float64 Gaussian noise of the same variance added to gamma times it.
    exact_gradient_sum = ExactNoiseTraining.gradient_sum
    float_rng = np.random.default_rng(3)

    def float_noise_gradient_sum(self, params, draws, local_step):
        rows, offsets, noise = draws
        no_noise = NoiseBlocks(ExactNoise(0, 0, None, None), noise.count)
        grad = exact_gradient_sum(self, params, (rows, offsets, no_noise), local_step)
        exact, plan = self.noise_source, self.plan
        gamma = plan.max_sample_weight * plan.clip_norm * 2.0 ** -exact.grid_bits
        std = exact.scale.std * gamma
        grad += float_rng.standard_normal(grad.shape) * std
        return grad

    monkeypatch.setattr(ExactNoiseTraining, "gradient_sum", float_noise_gradient_sum)
    # Every step through gradient_sum (a compiled run calls its compiled sum directly).
    monkeypatch.setattr(ExactNoiseTraining, "compiled_steps", lambda self, update: None)
    result = check_float_channel(DPLSSGDRegressor(epsilon=1.0, mechanism="gradient_exact"),
                                 n_runs=N_RUNS, random_state=0)
    assert not result.passed, result
    assert result.measured > 1.0


def test_the_estimator_is_not_changed():
    estimator = DPLSSGDRegressor(epsilon=2.0, batch_size=7, max_iter=3)
    before = estimator.get_params()
    check_float_channel(estimator, n_runs=2)
    assert estimator.get_params() == before
    with pytest.raises(ValueError, match="n_runs"):
        check_float_channel(estimator, n_runs=1)
    output = DPLSSGDRegressor(mechanism="output", loss="huber", alpha=0.01, epsilon=2.0)
    before = output.get_params()
    check_float_channel(output, n_runs=2)
    assert output.get_params() == before


def test_audit_implementation_runs_it_for_integer_releases_only(monkeypatch):
    # Output perturbation releases gamma times integers too.
    called = []

    def stub(name):
        def check(estimator, *args):
            called.append((name, estimator.mechanism))
            return CheckResult(name, True, 0.0, 0.0, "stub")
        return check

    names = [name for name in dir(_workflow_checks) if name.startswith("check_")]
    for name in names:
        monkeypatch.setattr(_workflow_checks, name, stub(name))
    for mechanism in ("gradient", "gradient_exact", "output"):
        audit_implementation(DPLSSGDRegressor(mechanism=mechanism))
    assert [mechanism for name, mechanism in called
            if name == "check_float_channel"] == ["gradient_exact", "output"]
