"""The floating-point distinguishing test: the release on the lattice is not refuted on
any input path; a broken release (float64 noise on the float64 sum) is."""

import math

import numpy as np
import pytest
import scipy.sparse as sp

from sklearn_dplssgd import DPLSSGDClassifier, DPLSSGDRegressor
from sklearn_dplssgd.audit import CheckResult, check_float_channel, epsilon_lower_bound_of_event
from sklearn_dplssgd.audit._float_channel import off_grid
from sklearn_dplssgd._backends import NumpyTraining, use_numpy_backend

from implementation_checks import audit_implementation, workflow_checks as _workflow_checks

# Runs per side that refute float noise at epsilon 1 (about 3.5 % of the
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


class FloatNoiseTraining(NumpyTraining):
    """A broken release: float64 Gaussian noise added to the float64 sum (no lattice)."""

    supports_compiled_runs = False
    float_rng = np.random.default_rng(3)

    def gradient_sum(self, params, draws, local_step):
        step, self._lattice_step = self._lattice_step, 0.0
        grad = super().gradient_sum(params, draws, local_step)
        self._lattice_step = step
        plan = self.plan
        std = float(np.ravel(plan.noise_multiplier)[0]) * plan.max_sample_weight * plan.clip_norm
        return grad + self.float_rng.standard_normal(grad.shape) * std


@pytest.mark.parametrize("estimator, as_input", [
    (DPLSSGDRegressor(epsilon=1.0), None),
    (DPLSSGDClassifier(epsilon=1.0, classes=[0, 1], neighboring="add_remove"), None),
    (DPLSSGDRegressor(epsilon=1.0), sp.csr_matrix),
    (DPLSSGDRegressor(epsilon=1.0, n_jobs=2), lambda X: X.astype(np.float32)),
])
def test_the_gradient_release_on_the_lattice_is_not_refuted(estimator, as_input):
    result = check_float_channel(estimator, n_runs=N_RUNS // 2, random_state=0,
                                 as_input=as_input)
    assert result.passed, result
    assert result.measured == 0.0


@pytest.mark.parametrize("estimator", [
    DPLSSGDRegressor(epsilon=1.0),
    DPLSSGDClassifier(epsilon=1.0, classes=[0, 1], neighboring="add_remove"),
])
def test_float_noise_on_the_float_sum_is_refuted(estimator):
    with use_numpy_backend(FloatNoiseTraining):
        result = check_float_channel(estimator, n_runs=N_RUNS, random_state=0)
    assert not result.passed, result
    assert result.measured > 1.0 == result.limit
    assert "gradient mechanism" in result.detail


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
    for mechanism in ("gradient", "output"):
        audit_implementation(DPLSSGDRegressor(mechanism=mechanism))
    assert [mechanism for name, mechanism in called
            if name == "check_float_channel"] == ["gradient", "output"]
