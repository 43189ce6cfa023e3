"""The noise of the DP-LSSGD paper's privacy theorems (closed forms), for reproducing it.

Wang, Gu, Boedihardjo, Barekat and Osher, "DP-LSSGD: A Stochastic
Optimization Method to Lift the Utility in Privacy-Preserving ERM"
(arXiv:1906.12056, 2019) gives the noise of its Theorem 1 in closed form; its
conference version gives another, which the authors' released code uses.
:func:`paper_noise_multiplier` evaluates both. They are stated for
fixed-size batches drawn without replacement; the estimators sample by
Poisson, so no estimator calibrates its noise by them. To train with the
paper's noise, fit with ``accountant="rdp"`` and the epsilon that the RDP
accountant certifies for it (:func:`rdp_epsilon_of`): the calibration then
returns that noise (to its 1e-5 relative tolerance), and ``epsilon_`` is a
guarantee for the mechanism that runs.

Run from the repository root::

    python benchmarks/paper_bound.py   # the paper's MNIST settings, a few seconds
"""

import argparse
import math

import numpy as np

from sklearn_dplssgd import compute_epsilon

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
    sample by Poisson: :func:`rdp_epsilon_of` gives the epsilon the RDP
    accountant certifies for this ``z`` there.

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
        On invalid arguments, or when the theorem's conditions cannot be met.
    """
    if not epsilon > 0:
        raise ValueError(f"epsilon must be > 0, got {epsilon!r}.")
    if not 0 < delta < 1:
        raise ValueError(f"delta must be in (0, 1), got {delta!r}.")
    if not 0 < sample_rate <= 1:
        raise ValueError(f"sample_rate must be in (0, 1], got {sample_rate!r}.")
    for name, value in (("n_steps", n_steps), ("n_samples", n_samples)):
        if int(value) != value or value < 1:
            raise ValueError(f"{name} must be an integer >= 1, got {value!r}.")
    if variant not in _PAPER_VARIANTS:
        raise ValueError(f"variant must be one of {_PAPER_VARIANTS}, got {variant!r}.")
    q, n = float(sample_rate), int(n_samples)
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
                f"epsilon={epsilon:g}."
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
            "mu b n^2 eps)) and 5 b^2 T alpha / (mu n^2 eps) >= 1.5."
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


def rdp_epsilon_of(noise_multiplier, delta, *, sample_rate, n_steps, neighboring="replace_one"):
    """The epsilon the RDP accountant certifies for ``noise_multiplier`` under Poisson sampling.

    An estimator fitted with ``accountant="rdp"``, this ``epsilon`` and the
    same ``delta``, sample rate and number of steps calibrates its noise to
    ``noise_multiplier`` (to the calibration's 1e-5 relative tolerance,
    never below it).
    """
    return compute_epsilon(noise_multiplier, delta, sample_rate=sample_rate, n_steps=n_steps,
                           accountant="rdp", neighboring=neighboring)


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--delta", type=float, default=1e-5)
    args = parser.parse_args(argv)
    # The paper's MNIST runs: 60,000 rows, batches of 128, 50 epochs.
    n, b, epochs = 60_000, 128, 50
    q, n_steps = b / n, math.ceil(epochs * n / b)
    print(f"n = {n}, b = {b}, T = {n_steps}, delta = {args.delta:g}")
    for variant in ("released", "theorem1"):
        for epsilon in (0.1, 0.3, 1.0, 5.0):
            try:
                z = paper_noise_multiplier(epsilon, args.delta, sample_rate=q, n_steps=n_steps,
                                           n_samples=n, variant=variant)
            except ValueError as error:
                print(f"{variant:8s} eps {epsilon:4g}: {str(error).split(':')[0]}")
                continue
            certified = {relation: rdp_epsilon_of(z, args.delta, sample_rate=q,
                                                  n_steps=n_steps, neighboring=relation)
                         for relation in ("replace_one", "add_remove")}
            print(f"{variant:8s} eps {epsilon:4g}: z = {z:.4f} (nu = {z / b:.4f}); RDP "
                  f"certifies eps {certified['replace_one']:.4f} replace-one, "
                  f"{certified['add_remove']:.4f} add/remove")


if __name__ == "__main__":
    main()
