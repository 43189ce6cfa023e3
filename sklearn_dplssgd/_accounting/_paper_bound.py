"""The noise of the DP-LSSGD paper's privacy theorems (closed forms).

:func:`paper_noise_multiplier` evaluates Theorem 1 of the full paper and the
theorem of its conference version (the noise of the authors' released code).
Both are stated for fixed-size batches drawn without replacement; the
estimators sample by Poisson, so :func:`sklearn_dplssgd._accounting._calibration.calibrate_noise`
reports the epsilon the RDP accountant certifies for this noise instead of
trusting the bound.
"""

import math

import numpy as np

from .._utils import check_choice, check_delta, check_epsilon, check_positive_int, check_sample_rate

__all__ = ["paper_noise_multiplier"]

_PAPER_VARIANTS = ("theorem1", "released")


def _theorem1_terms(mu, epsilon, log_inv_delta, q, n_steps, n):
    """alpha, nu^2 (G = 1) and the two side conditions of Theorem 1."""
    b = q * n
    alpha = log_inv_delta / ((1.0 - mu) * epsilon) + 1.0
    nu2 = 20.0 * n_steps * alpha / (mu * n**2 * epsilon)
    # alpha <= log(mu n^3 eps / (5 b^3 T alpha + mu b n^2 eps)), in logs.
    log_bound = (np.log(mu) + 3.0 * math.log(n) + math.log(epsilon)
                 - np.log(5.0 * b**3 * n_steps * alpha + mu * b * n**2 * epsilon))
    holds = (alpha <= log_bound) & (
        5.0 * b**2 * n_steps * alpha / (mu * n**2 * epsilon) >= 1.5
    )
    return alpha, nu2, holds


def paper_noise_multiplier(epsilon, delta, *, sample_rate, n_steps, n_samples,
                           variant="theorem1"):
    """Noise multiplier given by the DP-LSSGD paper's privacy theorem.

    Both forms give ``nu``, the standard deviation of the noise on the
    AVERAGED gradient ``(1/b) sum_i grad_i`` of ``G``-Lipschitz losses; with
    our update (the sum is divided by the expected batch size
    ``b = sample_rate * n_samples``) and ``G = C`` the multiplier is
    ``z = nu * b / C``, i.e. ``nu`` computed with ``G = 1`` times ``b``.

    * ``"theorem1"`` (full paper, Theorem 1):
      ``nu^2 = 20 T alpha G^2 / (mu n^2 eps)``,
      ``alpha = log(1/delta) / ((1 - mu) eps) + 1``, for some ``mu`` in (0, 1)
      with ``alpha <= log(mu n^3 eps / (5 b^3 T alpha + mu b n^2 eps))`` and
      ``5 b^2 T alpha / (mu n^2 eps) >= 1.5``.  ``mu`` is searched on a fine
      grid (then refined) for the smallest ``nu`` meeting both conditions.
      The second condition means ``z >= sqrt(6)``; the first needs roughly
      ``log(1/delta) / eps < log(n / (2.5 b)) - 1``, so e.g. at the paper's
      MNIST setting (n = 60000, b = 128, 50 epochs, delta = 1e-5) the theorem
      applies only from about eps = 4 on, not at the eps <= 0.3 it reports.
    * ``"released"`` (conference version, the noise of the authors' code):
      ``nu^2 = 8 T alpha G^2 / (n^2 eps)``, ``alpha = 2 log(1/delta)/eps + 1``,
      under that theorem's condition ``eps^2 <= 5 T b^2 log(1/delta) / n^2``.

    These bounds are stated for fixed-size batches sampled without
    replacement (and the paper's adjacency is replace-one).  The estimators
    sample by Poisson, so :func:`calibrate_noise` reports the epsilon the RDP
    accountant certifies for this ``z`` instead of trusting the bound.

    Parameters
    ----------
    epsilon : float
        Target epsilon, > 0 (``inf`` gives 0).
    delta : float
        Target delta, in (0, 1).
    sample_rate : float
        ``q = b / n`` in (0, 1].
    n_steps : int
        ``T`` >= 1.
    n_samples : int
        ``n`` >= 1.
    variant : {"theorem1", "released"}, default="theorem1"

    Returns
    -------
    float
        ``z = nu * b`` (noise std on the sum, in units of the clip norm).

    Raises
    ------
    ValueError
        On invalid arguments, or when the theorem's conditions cannot be met
        (then use ``accountant="rdp"``).
    """
    epsilon = check_epsilon(epsilon)
    delta = check_delta(delta)
    q = check_sample_rate(sample_rate)
    n_steps = check_positive_int(n_steps, "n_steps")
    n = check_positive_int(n_samples, "n_samples")
    variant = check_choice(variant, _PAPER_VARIANTS, "variant")
    if epsilon == math.inf:
        return 0.0
    b = q * n
    log_inv_delta = -math.log(delta)  # 1 / delta overflows for subnormal delta

    if variant == "released":
        if epsilon**2 > 5.0 * n_steps * b**2 * log_inv_delta / n**2:
            raise ValueError(
                "The paper's released-code theorem does not apply: it needs "
                "epsilon^2 <= 5 T b^2 log(1/delta) / n^2 = "
                f"{5.0 * n_steps * b**2 * log_inv_delta / n**2:.6g}, got "
                f"epsilon={epsilon:g}. Use accountant='rdp'."
            )
        alpha = 2.0 * log_inv_delta / epsilon + 1.0
        nu = math.sqrt(8.0 * n_steps * alpha / (n**2 * epsilon))
        return float(nu * b)

    # Theorem 1: coarse grid over mu, then a finer grid around the best
    # feasible point.  Any feasible mu gives a valid nu per the theorem, so a
    # slightly suboptimal mu only costs a little noise.
    mu = np.linspace(0.0, 1.0, 20001)[1:-1]
    _, nu2, holds = _theorem1_terms(mu, epsilon, log_inv_delta, q, n_steps, n)
    if not holds.any():
        raise ValueError(
            "Theorem 1 of the DP-LSSGD paper does not apply to "
            f"epsilon={epsilon:g}, delta={delta:g}, n_samples={n}, "
            f"batch size b={b:g}, n_steps={n_steps}: no mu in (0, 1) satisfies "
            "its side conditions alpha <= log(mu n^3 eps / (5 b^3 T alpha + "
            "mu b n^2 eps)) and 5 b^2 T alpha / (mu n^2 eps) >= 1.5. Use "
            "accountant='rdp'."
        )
    best = int(np.argmin(np.where(holds, nu2, np.inf)))
    step = mu[1] - mu[0]
    fine = np.linspace(max(mu[best] - step, step / 100),
                       min(mu[best] + step, 1.0 - step / 100), 2001)
    _, nu2_fine, holds_fine = _theorem1_terms(fine, epsilon, log_inv_delta, q,
                                              n_steps, n)
    nu2_best = nu2[best]
    if holds_fine.any():
        nu2_best = min(nu2_best, float(np.min(nu2_fine[holds_fine])))
    return float(math.sqrt(nu2_best) * b)
