"""The outcome of a privacy audit, and the audit of two given score samples."""

import dataclasses
import math

import numpy as np

from ._statistics import (
    check_delta, check_score_samples, epsilon_selection, gdp_epsilon, mu_selection,
)

__all__ = ["audit_scores", "AuditResult"]


@dataclasses.dataclass(frozen=True)
class AuditResult:
    """Outcome of a privacy audit.

    Attributes
    ----------
    epsilon_lower_bound : float
        Epsilon that the mechanism provably exceeds, with probability at least
        ``confidence``, whatever its output distribution. A value above
        ``claimed_epsilon`` refutes the claim.
    mu_lower_bound : float
        The mechanism is not mu'-GDP for any smaller mu' (with probability
        ``confidence``).
    epsilon_from_mu : float
        The epsilon of a ``mu_lower_bound``-GDP mechanism: a lower bound on
        epsilon if the privacy curve is Gaussian (exact for full-batch
        DP-SGD, approximate for many subsampled steps).
    claimed_epsilon : float
        The epsilon the audited configuration claims (the larger of the two
        data sets'), or NaN.
    delta : float
        Delta of the claim, used by both epsilon bounds.
    confidence : float
        Confidence level of the bounds.
    n_runs : int
        Fits per data set.
    true_positive_rate, false_positive_rate : float
        The attack's rates on the held-out half (estimates, not bounds).
    threshold : float
        The threshold chosen for ``epsilon_lower_bound`` on the other half.
    direction : {"higher", "lower"}
        The attack says "canary present" when the score is at least
        (``"higher"``) or at most (``"lower"``) the threshold.
    scores_without, scores_with : ndarray of shape (n_runs,)
        The raw scores of the models trained without and with the canary.
    estimator_name : str or None
        Class of the audited estimator.
    noise_multiplier, sample_rate : float or None
        ``noise_multiplier_`` and ``sample_rate_`` of the fits with the canary.
    n_steps : int or None
        ``n_steps_`` of the fits with the canary.
    seconds_per_fit : float or None
        Mean wall-clock time of one fit (with its scoring).
    """

    epsilon_lower_bound: float
    mu_lower_bound: float
    epsilon_from_mu: float
    claimed_epsilon: float
    delta: float
    confidence: float
    n_runs: int
    true_positive_rate: float
    false_positive_rate: float
    threshold: float
    direction: str
    scores_without: np.ndarray = dataclasses.field(repr=False, compare=False)
    scores_with: np.ndarray = dataclasses.field(repr=False, compare=False)
    estimator_name: str | None = None
    noise_multiplier: float | None = None
    sample_rate: float | None = None
    n_steps: int | None = None
    seconds_per_fit: float | None = dataclasses.field(default=None, compare=False)

    @property
    def claim_refuted(self):
        """Whether ``epsilon_lower_bound`` exceeds ``claimed_epsilon``.

        Returns
        -------
        refuted : bool
        """
        return bool(self.epsilon_lower_bound > self.claimed_epsilon)

    def summary(self):
        """A readable report of the audit.

        Returns
        -------
        text : str
        """
        subject = self.estimator_name or "scores"
        lines = [
            f"Privacy audit of {subject}: {self.n_runs} runs without and {self.n_runs} "
            f"with the canary, {self.confidence:.0%} confidence",
        ]
        if self.noise_multiplier is not None and math.isnan(self.sample_rate):
            lines.append(f"  mechanism:            output perturbation, noise multiplier "
                         f"{self.noise_multiplier:.4g} (times the sensitivity), {self.n_steps} "
                         "noise-free steps")
        elif self.noise_multiplier is not None:
            lines.append(f"  mechanism:            noise multiplier {self.noise_multiplier:.4g}, "
                         f"sample rate {self.sample_rate:.4g}, {self.n_steps} steps")
        lines += [
            f"  claimed:              epsilon = {self.claimed_epsilon:.4g} "
            f"at delta = {self.delta:.3g}",
            f"  epsilon lower bound:  {self.epsilon_lower_bound:.4g}   (attack 'score "
            f"{'>=' if self.direction == 'higher' else '<='} {self.threshold:.4g}' "
            f"on held-out runs: TPR {self.true_positive_rate:.3f}, "
            f"FPR {self.false_positive_rate:.3f})",
            f"  mu lower bound (GDP): {self.mu_lower_bound:.4g}   -> epsilon "
            f"{self.epsilon_from_mu:.4g} if the privacy curve is Gaussian",
        ]
        if math.isnan(self.claimed_epsilon):
            verdict = "No claimed epsilon to compare with."
        elif self.claim_refuted:
            verdict = "CLAIM REFUTED: the epsilon lower bound exceeds the claimed epsilon."
        elif self.epsilon_from_mu > self.claimed_epsilon:
            verdict = ("Gaussian-DP bound exceeds the claim: refuted if the privacy curve "
                       "is Gaussian (as for a sample rate of 1).")
        else:
            verdict = "Consistent with the claim (an audit can refute a claim, never prove it)."
        lines.append("  verdict:              " + verdict)
        if self.seconds_per_fit is not None:
            lines.append(f"  time per fit:         {self.seconds_per_fit * 1e3:.3g} ms")
        return "\n".join(lines)

    def __str__(self):
        return self.summary()


def audit_scores(scores_without, scores_with, *, delta, claimed_epsilon=math.nan, confidence=0.95):
    """Audit from two samples of attack scores (for a custom attack or statistic).

    Parameters
    ----------
    scores_without : array-like of shape (n_runs,)
        Scores of models trained without the canary.
    scores_with : array-like of shape (n_runs,)
        Scores of models trained with the canary. Both samples hold
        independent runs, split in halves in the order given (the test is
        chosen on the first, bounded on the second).
    delta : float
        Delta of the guarantee being audited.
    claimed_epsilon : float, default=nan
        The epsilon to compare with.
    confidence : float, default=0.95
        Confidence level of the bounds.

    Returns
    -------
    result : AuditResult
        ``n_runs`` is the smaller sample size; the mechanism fields are None.
    """
    without, with_ = check_score_samples(scores_without, scores_with, confidence)
    check_delta(delta)
    eps = epsilon_selection(without, with_, delta, confidence)
    mu = mu_selection(without, with_, confidence)
    return AuditResult(
        epsilon_lower_bound=eps.bound, mu_lower_bound=mu.bound,
        epsilon_from_mu=gdp_epsilon(mu.bound, delta), claimed_epsilon=float(claimed_epsilon),
        delta=float(delta), confidence=float(confidence),
        n_runs=int(min(without.size, with_.size)), true_positive_rate=eps.true_positive_rate,
        false_positive_rate=eps.false_positive_rate, threshold=eps.threshold,
        direction=eps.direction, scores_without=without, scores_with=with_)
