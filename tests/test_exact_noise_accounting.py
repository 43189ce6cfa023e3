"""The exact-noise mode's accounting: never below the truth, against dp-accounting."""

import math

import dp_accounting
import numpy as np
import pytest
from dp_accounting.rdp import rdp_privacy_accountant
from scipy import special

from sklearn_dplssgd.accounting._discrete_gaussian_rdp import (
    EXACT_NOISE_ORDERS,
    discrete_gaussian_rdp,
    exact_noise_epsilon,
    poisson_subsampled_rdp,
)


def tight_gaussian_epsilon(noise_multiplier, sample_rate, n_steps, delta):
    """dp-accounting's sampled-Gaussian RDP (Mironov, Talwar, Zhang), same orders."""
    accountant = rdp_privacy_accountant.RdpAccountant(list(EXACT_NOISE_ORDERS))
    gaussian = dp_accounting.GaussianDpEvent(noise_multiplier)
    event = (gaussian if sample_rate == 1.0
             else dp_accounting.PoissonSampledDpEvent(sample_rate, gaussian))
    accountant.compose(event, n_steps)
    return accountant.get_epsilon(delta)


@pytest.mark.parametrize("noise_multiplier, sample_rate, n_steps", [
    (1.0, 256 / 60000, 4690), (2.0, 0.01, 1000), (0.8, 4096 / 60000, 300), (5.0, 0.2, 50)])
def test_for_the_continuous_gaussian_the_bound_is_dp_accountings(
        noise_multiplier, sample_rate, n_steps):
    # For the continuous Gaussian (B = 1, s = z) both apply: at integer orders
    # the bound is Mironov, Talwar and Zhang's exact value, which dp-accounting
    # computes; Zhu and Wang's general bound is above it.
    settings = dict(sample_rate=sample_rate, n_steps=n_steps, delta=1e-5)
    bound = exact_noise_epsilon(variance=noise_multiplier ** 2, sensitivity_squared=1,
                                neighboring="add_remove", **settings)
    tight = tight_gaussian_epsilon(noise_multiplier, sample_rate, n_steps, 1e-5)
    assert bound == pytest.approx(tight, rel=1e-9)
    general = poisson_subsampled_rdp(
        EXACT_NOISE_ORDERS, sample_rate, lambda ells: ells / (2 * noise_multiplier ** 2),
        symmetric=False)
    generic = rdp_privacy_accountant.compute_epsilon(EXACT_NOISE_ORDERS, n_steps * general,
                                                     1e-5)[0]
    assert tight <= generic * (1 + 1e-12)


def sampled_divergences(log_base, log_shifted, sample_rate, order):
    """(add, remove): D(M || Q) and D(Q || M) for M = (1 - q) Q + q P, from log masses."""
    log_mixture = np.logaddexp(math.log1p(-sample_rate) + log_base,
                               math.log(sample_rate) + log_shifted)
    return renyi(log_mixture, log_base, order), renyi(log_base, log_mixture, order)


@pytest.mark.parametrize("seed", range(5))
def test_removing_is_dominated_by_adding_for_a_symmetric_pair(seed):
    # Lemma 3 on arbitrary symmetric pairs: P is Q reflected (an involution
    # exchanges them). The lemma needs the symmetry: for Q = (1/2, 1/2) and
    # P = (1, 0) removing costs more than adding.
    rng = np.random.default_rng(seed)
    log_base = np.log(rng.dirichlet(np.full(12, 0.3)))
    log_shifted = log_base[::-1]
    for sample_rate in (0.01, 0.2, 0.7):
        for order in (2, 3, 7, 2.5, 20):
            add, remove = sampled_divergences(log_base, log_shifted, sample_rate, order)
            assert remove <= add * (1 + 1e-9) + 1e-12
    add, remove = sampled_divergences(np.log([0.5, 0.5]), np.log([1.0, 1e-300]), 0.5, 20)
    assert remove > add


@pytest.mark.parametrize("neighboring, multiplier", [("add_remove", 1.5), ("replace_one", 0.75)])
def test_without_sampling_it_is_the_gaussian_rdp(neighboring, multiplier):
    # q = 1: RDP alpha B / (2 s^2), the Gaussian's with z = s / sqrt(B); under
    # replace-one the shift is at most twice as long (z / 2).
    epsilon = exact_noise_epsilon(variance=2.25, sensitivity_squared=1, sample_rate=1.0,
                                  n_steps=10, delta=1e-5, neighboring=neighboring)
    assert epsilon == pytest.approx(tight_gaussian_epsilon(multiplier, 1.0, 10, 1e-5),
                                    rel=1e-12)


def discrete_gaussian_log_mass(support, shift, variance):
    """log P(Y = y) of N_Z(shift, variance) on ``support`` (the rest is below 1e-300)."""
    log_weights = -(support - shift) ** 2 / (2.0 * variance)
    return log_weights - special.logsumexp(log_weights)


def renyi(log_first, log_second, order):
    """D_order(first || second) from log masses on one support."""
    return float(special.logsumexp(order * log_first + (1 - order) * log_second)
                 / (order - 1))


@pytest.mark.parametrize("order", [2, 3, 5, 2.5, 7.25])
@pytest.mark.parametrize("variance", [0.3, 0.7, 4.0])
def test_an_integer_shift_of_the_discrete_gaussian_has_the_gaussian_rdp(order, variance):
    # The fact the bound starts from: D_alpha(N_Z(mu, s^2) || N_Z(0, s^2)) <=
    # alpha mu^2 / (2 s^2), with equality when alpha mu is an integer.
    support = np.arange(-80, 81).astype(np.float64)
    for shift in (1, 2, -3):
        value = renyi(discrete_gaussian_log_mass(support, shift, variance),
                      discrete_gaussian_log_mass(support, 0, variance), order)
        bound = discrete_gaussian_rdp([order], shift ** 2, variance)[0]
        assert value <= bound * (1 + 1e-9)
        if float(order * shift).is_integer():
            assert value == pytest.approx(bound, rel=1e-9)


@pytest.mark.parametrize("variance, sample_rate", [(0.3, 0.3), (0.7, 0.05), (2.0, 0.5)])
def test_both_directions_of_a_sampled_vector_shift_are_within_the_bound(variance, sample_rate):
    # The subsampled two-dimensional discrete Gaussian with the vector shift
    # (1, -1), computed exactly on a grid: adding the row and removing it.
    support = np.arange(-40, 41).astype(np.float64)
    base = np.add.outer(discrete_gaussian_log_mass(support, 0, variance),
                        discrete_gaussian_log_mass(support, 0, variance)).ravel()
    shifted = np.add.outer(discrete_gaussian_log_mass(support, 1, variance),
                           discrete_gaussian_log_mass(support, -1, variance)).ravel()
    orders = list(range(2, 12))
    bound = poisson_subsampled_rdp(
        orders, sample_rate, lambda ells: discrete_gaussian_rdp(ells, 2, variance))
    # The check can fail: the bound for half the squared shift is refuted.
    too_small = poisson_subsampled_rdp(
        orders, sample_rate, lambda ells: discrete_gaussian_rdp(ells, 1, variance))
    for order, limit, wrong in zip(orders, bound, too_small):
        add, remove = sampled_divergences(base, shifted, sample_rate, order)
        assert add <= limit * (1 + 1e-9) and remove <= limit * (1 + 1e-9)
        assert add > wrong


def test_more_noise_never_costs_more_and_replace_one_costs_more_than_add_remove():
    settings = dict(sensitivity_squared=2 ** 40, sample_rate=256 / 60000, n_steps=4690,
                    delta=1e-5)
    low, high = (exact_noise_epsilon(variance=(z * 2.0 ** 20) ** 2, **settings)
                 for z in (1.5, 2.0))
    assert high < low
    assert exact_noise_epsilon(variance=2.0 ** 41, neighboring="add_remove", **settings) < \
        exact_noise_epsilon(variance=2.0 ** 41, neighboring="replace_one", **settings)


@pytest.mark.parametrize("changes, match", [
    (dict(variance=0.0), "variance"), (dict(variance=math.nan), "variance"),
    (dict(sensitivity_squared=-1), "sensitivity_squared"), (dict(sample_rate=0.0), "sample_rate"),
    (dict(sample_rate=1.5), "sample_rate"), (dict(n_steps=0), "n_steps"),
    (dict(n_steps=2.5), "n_steps"), (dict(delta=0.0), "delta"),
    (dict(neighboring="bounded"), "neighboring")])
def test_bad_arguments_are_refused(changes, match):
    arguments = dict(variance=4.0, sensitivity_squared=1, sample_rate=0.01, n_steps=10,
                     delta=1e-5)
    arguments.update(changes)
    with pytest.raises(ValueError, match=match):
        exact_noise_epsilon(**arguments)


@pytest.mark.parametrize("orders", [[1], [2.5]])
def test_the_subsampling_bound_needs_integer_orders(orders):
    with pytest.raises(ValueError, match="integer orders"):
        poisson_subsampled_rdp(orders, 0.1, lambda ells: ells * 0.5)
