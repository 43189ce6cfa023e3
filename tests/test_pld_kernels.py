"""The compiled PLD loops against dp-accounting's own Python code, bit for bit."""

import math

import numpy as np
import pytest
from dp_accounting.pld import common, pld_pmf
from dp_accounting.pld import privacy_loss_distribution as pld_distribution

from sklearn_dplssgd import _accounting
from sklearn_dplssgd._pld_kernels import epsilon_for_delta, log_sinh


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
