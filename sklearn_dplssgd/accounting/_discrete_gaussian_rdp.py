"""Accounting of the exact-noise mode: the Poisson-subsampled multivariate discrete Gaussian.

Each step releases ``S + Y``: ``S`` the int64 sum of the sampled rows'
contributions rounded onto the grid (one row moves it by a vector ``mu`` of
integers with ``||mu||**2 <= B``, the public bound of
``backends.grid_norm_bound``), ``Y`` independent discrete Gaussians
``N_Z(0, s^2)`` on every coordinate. The bound used here, proved in the
privacy argument (docs/privacy_argument.rst, "Exact noise"):

1. Without sampling, for every real order ``alpha > 1`` and both orders of
   the pair, ``D_alpha <= alpha ||mu||**2 / (2 s^2) <= alpha B / (2 s^2)``:
   the one-dimensional identity for an integer shift (Canonne, Kamath and
   Steinke, "The Discrete Gaussian for Differential Privacy", NeurIPS 2020)
   summed over the independent coordinates. It is the continuous Gaussian's
   RDP with multiplier ``s / sqrt(B)``.
2. Poisson sampling with rate ``q``, at integer orders: the "add" direction
   ``D_alpha((1 - q) Q + q P || Q)`` expands into
   ``sum_l C(alpha, l) (1 - q)^(alpha - l) q^l exp((l - 1) D_l(P || Q))``, bounded
   term by term by 1.; the "remove" direction ``D_alpha(Q || (1 - q) Q + q P)``
   is at most the "add" one because the pair is symmetric (``y -> mu - y``
   exchanges ``P`` and ``Q``): Lemma 3 of the privacy argument. The bound is
   then the sampled Gaussian's RDP of Mironov, Talwar and Zhang (2019) at the
   multiplier ``s / sqrt(B)``, at integer orders (the tests check it against
   dp-accounting's). Zhu and Wang's general bound ("Poisson Subsampled Renyi
   Differential Privacy", ICML 2019, Theorem 6: a factor 3 on the terms
   ``l >= 3``, for any base mechanism) is kept for comparison
   (``symmetric=False``).
3. ``T`` steps compose additively in RDP; dp-accounting's public
   ``dp_accounting.rdp.compute_epsilon`` converts to ``(epsilon, delta)``.
4. Replace-one: without sampling the shift is the difference of two rows'
   vectors, ``||mu||**2 <= 4 B``; with sampling, the group-of-two reduction of
   the add/remove guarantee (:func:`group_of_two_epsilon`, as the ordinary
   mode's RDP path).

dp-accounting's ``DiscreteGaussianDpEvent`` and its PLD describe a
one-dimensional integer shift; a vector shift is not a one-dimensional
discrete Gaussian of shift ``||mu||`` (the privacy loss is a weighted sum of
independent discrete Gaussians), so that PLD is not a bound here.
"""

import math

import numpy as np
from dp_accounting import rdp as dp_rdp
from scipy import special

from ._events import group_of_two_epsilon

__all__ = [
    "EXACT_NOISE_ORDERS",
    "exact_noise_epsilon",
    "discrete_gaussian_rdp",
    "poisson_subsampled_rdp",
]

# Integer orders (the subsampling bound holds at integers): every one up to
# 64, then spaced by about a factor 1.1 up to 1024, as the ordinary mode's RDP
# orders are (small epsilons need large orders).
EXACT_NOISE_ORDERS = tuple(sorted(set(
    list(range(2, 65)) + [round(64 * 1.1 ** k) for k in range(30)] + [1024])))


def discrete_gaussian_rdp(orders, sensitivity_squared, variance):
    """``alpha B / (2 s^2)`` at each order: the unsampled mechanism's RDP bound.

    Parameters
    ----------
    orders : sequence of float
        Orders ``alpha > 1``.
    sensitivity_squared : float
        ``B``, the largest squared L2 norm of the integer shift (grid units).
    variance : float
        ``s^2`` of the noise on each coordinate (grid units); pass a value no
        larger than the true one (``DiscreteGaussianScale.variance_at_most``).
    """
    return np.asarray(orders, dtype=np.float64) * (float(sensitivity_squared)
                                                   / (2.0 * float(variance)))


def poisson_subsampled_rdp(orders, sample_rate, base_rdp, symmetric=True):
    """An RDP bound of Poisson sampling at integer orders, from the base mechanism's RDP.

    For an integer order ``alpha >= 2`` and a base mechanism with RDP
    ``eps(l)`` at the orders ``l = 2 .. alpha``::

        (1 / (alpha - 1)) log[ (1 - q)^(alpha - 1) (alpha q - q + 1)
            + C(alpha, 2) q^2 (1 - q)^(alpha - 2) exp(eps(2))
            + c sum_{l=3}^{alpha} C(alpha, l) q^l (1 - q)^(alpha - l) exp((l - 1) eps(l)) ]

    with ``c = 1`` for a symmetric base pair (the privacy argument's Lemma 3:
    the "remove" direction is then at most the "add" one, whose binomial
    expansion this is) and ``c = 3`` otherwise (Zhu and Wang's general bound).

    Parameters
    ----------
    orders : sequence of int
        Integer orders ``>= 2``.
    sample_rate : float
        ``q`` in ``(0, 1)``.
    base_rdp : callable
        ``base_rdp(l)`` for an int array ``l``: the base mechanism's RDP at those orders.
    symmetric : bool, default=True
        Whether an involution of the outputs exchanges the base mechanism's two
        neighbouring laws (the discrete and the continuous Gaussian's do).

    Returns
    -------
    ndarray of float64, the bound at each order.
    """
    q = float(sample_rate)
    if not 0.0 < q < 1.0:
        raise ValueError("sample_rate must be in (0, 1) for the subsampling bound.")
    values = []
    for order in orders:
        alpha = int(order)
        if alpha < 2 or alpha != order:
            raise ValueError("the subsampling bound needs integer orders >= 2.")
        ells = np.arange(2, alpha + 1)
        log_terms = (special.gammaln(alpha + 1) - special.gammaln(ells + 1)
                     - special.gammaln(alpha - ells + 1)
                     + ells * math.log(q) + (alpha - ells) * math.log1p(-q)
                     + (ells - 1) * np.asarray(base_rdp(ells), dtype=np.float64))
        if not symmetric:
            log_terms[1:] += math.log(3.0)
        head = (alpha - 1) * math.log1p(-q) + math.log1p((alpha - 1) * q)
        values.append(float(special.logsumexp(np.append(log_terms, head))) / (alpha - 1))
    return np.array(values)


class _ComposedRdp:
    """An add/remove RDP curve with ``get_epsilon(delta)``, for the group-of-two reduction."""

    def __init__(self, orders, rdp):
        self.orders, self.rdp = list(orders), list(rdp)

    def get_epsilon(self, delta):
        return dp_rdp.compute_epsilon(self.orders, self.rdp, delta)[0]


def exact_noise_epsilon(*, variance, sensitivity_squared, sample_rate, n_steps, delta,
                        neighboring="replace_one", symmetric=True):
    """Epsilon of ``n_steps`` Poisson-sampled steps of the exact-noise mode.

    Parameters
    ----------
    variance : float
        ``s^2``, at most the noise's true variance, in grid units.
    sensitivity_squared : int or float
        ``B``: one row's rounded contribution has squared norm at most ``B``.
    sample_rate : float
        ``q`` in ``(0, 1]``.
    n_steps : int
        ``T >= 1``.
    delta : float
        In ``(0, 1)``.
    neighboring : {"replace_one", "add_remove"}
    symmetric : bool, default=True
        Use the symmetric pair's subsampling bound (see the module's
        docstring); False gives Zhu and Wang's general one, for comparison.

    Returns
    -------
    float
        An epsilon never below the mechanism's true one (see the module's
        docstring for the argument).
    """
    if not (math.isfinite(variance) and variance > 0):
        raise ValueError("variance must be a positive finite number.")
    if not (math.isfinite(sensitivity_squared) and sensitivity_squared > 0):
        raise ValueError("sensitivity_squared must be a positive finite number.")
    if not 0.0 < sample_rate <= 1.0:
        raise ValueError("sample_rate must be in (0, 1].")
    if int(n_steps) != n_steps or n_steps < 1:
        raise ValueError("n_steps must be a positive integer.")
    if not 0.0 < delta < 1.0:
        raise ValueError("delta must be in (0, 1).")
    if neighboring not in ("replace_one", "add_remove"):
        raise ValueError("neighboring must be 'replace_one' or 'add_remove'.")
    orders = EXACT_NOISE_ORDERS
    if sample_rate == 1.0:
        # No sampling: the shift of one step is one row's vector (add/remove)
        # or the difference of two (replace-one, norm at most twice).
        factor = 4.0 if neighboring == "replace_one" else 1.0
        rdp = n_steps * discrete_gaussian_rdp(orders, factor * sensitivity_squared, variance)
        return float(dp_rdp.compute_epsilon(orders, rdp, delta)[0])
    rdp = n_steps * poisson_subsampled_rdp(
        orders, sample_rate,
        lambda ells: discrete_gaussian_rdp(ells, sensitivity_squared, variance),
        symmetric=symmetric)
    composed = _ComposedRdp(orders, rdp)
    if neighboring == "add_remove":
        return float(composed.get_epsilon(delta))
    return float(group_of_two_epsilon(composed, delta))
