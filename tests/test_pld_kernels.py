"""The compiled PLD loops against dp-accounting's own Python code, bit for bit."""

import math

import numpy as np
import pytest
from dp_accounting.pld import common, pld_pmf
from dp_accounting.pld import privacy_loss_distribution as pld_distribution

from sklearn_dplssgd import _accounting
from sklearn_dplssgd._pld_kernels import epsilon_for_delta, log_sinh, prefix_to_truncate


def test_log_sinh_is_dp_accountings():
    rng = np.random.default_rng(3)
    a = np.concatenate([
        [0.0, 1e-15, 1e-9, 5e-7, 0.5, 1.0, 20.0, 400.0, 710.0],
        np.abs(rng.standard_normal(2000)) * 10.0 ** rng.uniform(-7, 2, 2000),
        np.arange(1, 5001) * 1e-4 / 2,  # half of a PLD grid, as the fast path uses it
    ])
    expected = np.array([common.log_sinh(float(value)) for value in a])
    np.testing.assert_array_equal(log_sinh(a, math.log(2)), expected)


def _composed(z, q, T, interval, neighboring):
    step = _accounting._subsampled_step_pld(z, q, interval, neighboring)
    return pld_distribution.identity(interval).compose(step.self_compose(T))


@pytest.mark.parametrize("z, q, T, interval, neighboring", [
    (0.6, 0.00026, 2000, 1e-3, "replace_one"),
    (2.0, 0.004, 500, 1e-4, "replace_one"),
    (1.1, 0.01, 300, 1e-3, "add_remove"),
    (0.8, 0.3, 40, 1e-2, "add_remove"),
    (30.0, 0.03, 100, 1e-4, "replace_one"),
])
@pytest.mark.parametrize("delta", [1e-5, 1e-9, 0.3])
def test_epsilon_for_delta_is_dp_accountings(z, q, T, interval, neighboring, delta):
    pld = _composed(z, q, T, interval, neighboring)
    ours = _accounting._pld_epsilon_for_delta(pld, delta)
    assert ours == pld.get_epsilon_for_delta(delta)


def test_epsilon_for_delta_edge_cases():
    probs = np.array([0.2, 0.3, 0.5])
    # All the infinite mass above delta: no finite epsilon.
    assert epsilon_for_delta(0.1, 0.02, 0.01, probs, 0.05) == math.inf
    for delta in (0.0, 1e-3, 0.1, 0.25, 0.6, 1.0):
        expected = pld_pmf._get_epsilon_for_delta(
            0.0, iter([0.02, 0.01, 0.0]), np.flip(probs), delta)
        assert epsilon_for_delta(0.0, 0.02, 0.01, probs, delta) == expected
    # Losses so large that exp(-loss) is 0: max(0, loss), as in dp-accounting.
    expected = pld_pmf._get_epsilon_for_delta(0.0, iter([800.0, 799.0]), [0.5, 0.5], 0.1)
    assert epsilon_for_delta(0.0, 800.0, 1.0, np.array([0.5, 0.5]), 0.1) == expected


def test_sparse_distributions_use_dp_accountings_method():
    # A distribution that is not dense (a few points) goes to dp-accounting.
    pmf = pld_pmf.SparsePLDPmf({0: 0.5, 3: 0.5}, 0.1, 0.0, True)
    pld = pld_distribution.PrivacyLossDistribution(pmf)
    assert _accounting._pld_epsilon_for_delta(pld, 1e-3) == pld.get_epsilon_for_delta(1e-3)


def _assert_same_pmf(ours, theirs):
    assert type(ours) is type(theirs)
    assert ours._lower_loss == theirs._lower_loss
    assert ours._infinity_mass == theirs._infinity_mass
    assert ours._discretization == theirs._discretization
    np.testing.assert_array_equal(ours._probs, theirs._probs)


@pytest.mark.parametrize("z, q, T, interval, neighboring", [
    (0.6, 0.00026, 2000, 1e-3, "replace_one"),
    (2.0, 0.004, 500, 1e-4, "replace_one"),
    (1.1, 0.01, 300, 1e-3, "add_remove"),
    (0.8, 0.3, 40, 1e-2, "add_remove"),
])
def test_composed_steps_are_dp_accountings(z, q, T, interval, neighboring):
    # identity.compose(step.self_compose(T)), as PLDAccountant builds it: the
    # same distributions bit for bit, both of them under add/remove.
    step = _accounting._subsampled_step_pld(z, q, interval, neighboring)
    ours = _accounting._compose_steps(step, T)
    theirs = _composed(z, q, T, interval, neighboring)
    assert ours._symmetric == theirs._symmetric
    _assert_same_pmf(ours._pmf_remove, theirs._pmf_remove)
    _assert_same_pmf(ours._pmf_add, theirs._pmf_add)


def test_self_convolve_bounds_are_dp_accountings(monkeypatch):
    step = _accounting._subsampled_step_pld(0.7, 0.001, 1e-3, "add_remove")
    for pmf in (step._pmf_remove, step._pmf_add):
        for n_times in (1, 7, 5000):
            expected = common.compute_self_convolve_bounds(pmf._probs, n_times, 1e-15)
            assert _accounting._self_convolve_bounds(pmf._probs, n_times, 1e-15) == expected
    # A bound that could round either way goes to dp-accounting's function:
    # with an absurd tolerance every bound is "near an integer".
    calls = []
    real = common.compute_self_convolve_bounds

    def spy(*args):
        calls.append(args)
        return real(*args)

    monkeypatch.setattr(_accounting, "_LOG_MGF_ATOL", 1e6)
    monkeypatch.setattr(_accounting._dp_pld_common, "compute_self_convolve_bounds", spy)
    probs = step._pmf_remove._probs
    assert _accounting._self_convolve_bounds(probs, 50, 1e-15) == real(probs, 50, 1e-15)
    assert len(calls) == 1


@pytest.mark.parametrize("threshold", [5e-16, 0.1, 0.35])
def test_prefix_to_truncate_is_dp_accountings(threshold):
    rng = np.random.default_rng(5)
    probs = rng.dirichlet(np.full(50, 0.3))
    probs[:5] = [0.0, 1e-17, 2e-16, 0.0, 3e-16]
    step = _accounting._subsampled_step_pld(0.9, 0.01, 1e-3, "replace_one")
    for values in (probs, step._pmf_remove._probs):
        for view in (values, values[::-1]):
            # dp-accounting's walk, through its _truncate_tails.
            left, truncated, right_mass = pld_pmf._truncate_tails(
                np.array(view), 2 * threshold, True)
            ours = _accounting._truncate_tails(np.array(view), 2 * threshold)
            assert ours[0] == left and ours[2] == right_mass
            np.testing.assert_array_equal(ours[1], truncated)
            assert prefix_to_truncate(view, threshold) == left


def test_truncate_tails_edge_cases_are_dp_accountings():
    probs = np.array([0.25, 0.5, 0.25])
    # No truncation: the array as it is.
    assert pld_pmf._truncate_tails(probs, 0, True)[0] == _accounting._truncate_tails(probs, 0)[0]
    # Everything truncated: both raise (the fast path then falls back).
    with pytest.raises(IndexError):
        pld_pmf._truncate_tails(probs.copy(), 4.0, True)
    with pytest.raises(IndexError):
        _accounting._truncate_tails(probs.copy(), 4.0)
    assert issubclass(IndexError, _accounting._FAST_PATH_ERRORS)
