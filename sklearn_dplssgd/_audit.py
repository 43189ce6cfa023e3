"""Empirical privacy audit of the DP-LSSGD estimators (implementation).

The public entry points are re-exported by :mod:`sklearn_dplssgd.audit`,
whose docstring explains the method. In short: fit the estimator many times
on a background data set D and on D plus one canary row, score every fitted
model with a statistic that detects the canary, and turn the two samples of
scores into confidence lower bounds on epsilon (and on the mu of Gaussian
DP). A bound above the claimed epsilon proves, at the stated confidence, that
the implementation does not deliver its guarantee.

Layout: statistics of two score samples (Clopper-Pearson, threshold
selection, Gaussian-DP conversion) -> the canary and its score -> the loop of
fits -> :class:`AuditResult`.
"""

import dataclasses
import math
import numbers
import time
import warnings

import numpy as np
import scipy.sparse as sp
from scipy import optimize, special, stats
from sklearn.base import clone, is_classifier

from ._base import BaseDPLSSGD
from ._output_perturbation import smoothness_constants
from ._validation import PrivacyLeakWarning
from ._losses import LOSSES, loss_code, loss_derivative_reference
from ._defaults import nominal_batch_size, resolve_sigma
from ._sgd import learning_rate_schedule
from ._smoothing import smoothing_eigenvalues

__all__ = [
    "AuditResult",
    "audit_epsilon",
    "audit_scores",
    "canary_score",
    "clopper_pearson_upper",
    "epsilon_lower_bound",
    "gdp_delta",
    "gdp_epsilon",
    "make_canary_dataset",
    "mu_lower_bound",
]

# Margin of the regression canary's target over its largest plausible
# prediction, and the reach (in standard deviations) of that prediction: the
# residual then never changes sign, so the canary's gradient always saturates
# the clip norm and always pushes the same way.
_TARGET_HEADROOM = 10.0
_WEIGHT_REACH_SD = 6.0
# The regression canary is this many times larger than the smallest size at
# which its gradient saturates the clip norm: the share of its clipped
# gradient that lands on the intercept, 1 / sqrt(M^2 + 1), is then negligible.
_SATURATION_FACTOR = 100.0
# Candidate canary magnitudes for classification losses (relative to the clip
# norm) and the Monte Carlo sample of weights they are rated on.
_CLASSIFIER_SCALES = np.geomspace(1e-2, 1e6, 161)
_WEIGHT_SAMPLES = 512
# Confidence of the Clopper-Pearson bounds that rank thresholds on the
# selection half (never of the reported bounds). Ranking by a pessimistic
# bound steers the choice away from tail thresholds whose error rates rest on
# a handful of runs and rarely hold up on the other half: on simulated
# Gaussian scores it raises the typical bound and shrinks its spread (for
# shift 0.93 and 2 x 1000 runs, mean mu bound 0.66 -> 0.68, standard
# deviation 0.11 -> 0.09; with 2 x 4000 runs 0.75 -> 0.80 and 0.08 -> 0.04).
_SELECTION_CONFIDENCE = 0.999


# ---------------------------------------------------------------------------
# Statistics of two samples of scores
# ---------------------------------------------------------------------------


def clopper_pearson_upper(successes, trials, confidence=0.95):
    """One-sided Clopper-Pearson (exact binomial) upper confidence bound.

    Parameters
    ----------
    successes : int or array-like of int
        Observed count ``k`` (``0 <= k <= trials``).
    trials : int
        Number of trials ``n >= 1``.
    confidence : float, default=0.95
        Probability that the bound is at least the true proportion.

    Returns
    -------
    upper : float or ndarray
        The largest ``p`` with ``P(Binomial(n, p) <= k) >= 1 - confidence``:
        ``Beta(confidence; k + 1, n - k)``, and 1 when ``k = n``.
    """
    k = np.asarray(successes, dtype=np.float64)
    if trials < 1 or np.any((k < 0) | (k > trials)):
        raise ValueError(
            f"Need 0 <= successes <= trials and trials >= 1; got {successes!r}, {trials!r}."
        )
    _check_confidence(confidence)
    # beta.ppf(q, k + 1, 0) is undefined; the bound is 1 when every trial succeeded.
    upper = np.where(
        k < trials,
        stats.beta.ppf(confidence, k + 1.0, np.maximum(trials - k, 1.0)),
        1.0,
    )
    return float(upper) if upper.ndim == 0 else upper


def gdp_delta(epsilon, mu):
    """Delta of mu-Gaussian DP at a given epsilon (Dong, Roth and Su 2022).

    ``delta(eps) = Phi(-eps / mu + mu / 2) - exp(eps) Phi(-eps / mu - mu / 2)``:
    the tightest delta of the Gaussian mechanism whose sensitivity is ``mu``
    noise standard deviations.

    Parameters
    ----------
    epsilon : float
        ``epsilon >= 0``.
    mu : float
        ``mu >= 0``.

    Returns
    -------
    delta : float
    """
    if mu <= 0:
        return 0.0
    if math.isinf(mu):
        return 1.0
    # exp(eps) * Phi(x) is formed in logs: both factors overflow or underflow
    # on their own at large epsilon.
    first = special.ndtr(-epsilon / mu + mu / 2)
    second = math.exp(epsilon + special.log_ndtr(-epsilon / mu - mu / 2))
    return float(max(first - second, 0.0))


def gdp_epsilon(mu, delta):
    """Smallest epsilon with ``gdp_delta(epsilon, mu) <= delta``.

    The (epsilon, delta) guarantee implied by mu-Gaussian DP; for example
    ``gdp_epsilon(1.0, 1e-5)`` is about 4.38.

    Parameters
    ----------
    mu : float
        ``mu >= 0``.
    delta : float
        In (0, 1).

    Returns
    -------
    epsilon : float
        0 when mu-GDP already meets ``delta`` at epsilon 0; ``inf`` for an
        infinite mu.
    """
    check_delta(delta)
    if math.isinf(mu):
        return math.inf
    if gdp_delta(0.0, mu) <= delta:
        return 0.0
    # delta(eps) decreases in eps; eps = mu^2 / 2 + mu * z_{1 - delta} already
    # has delta(eps) <= delta (the first term alone is delta there).
    high = mu * mu / 2 + mu * stats.norm.isf(delta) + 1.0
    root = optimize.brentq(lambda e: gdp_delta(e, mu) - delta, 0.0, high, xtol=1e-12, rtol=1e-12)
    return float(root)


def check_delta(delta, allow_zero=False):
    """Refuse a delta outside (0, 1), or [0, 1) with ``allow_zero``."""
    if not ((0 <= delta if allow_zero else 0 < delta) and delta < 1):
        interval = "[0, 1)" if allow_zero else "(0, 1)"
        raise ValueError(f"delta must be in {interval}; got {delta!r}.")


def _check_confidence(confidence):
    if not (isinstance(confidence, numbers.Real) and 0 < confidence < 1):
        raise ValueError(f"confidence must be in (0, 1); got {confidence!r}.")


def _check_scores(scores, name):
    scores = np.asarray(scores, dtype=np.float64).ravel()
    if scores.size < 2:
        raise ValueError(f"{name} needs at least 2 scores (one per half); got {scores.size}.")
    if not np.all(np.isfinite(scores)):
        raise ValueError(f"{name} contains NaN or infinite scores.")
    return scores


def _halves(scores):
    """Split i.i.d. scores into a threshold-selection half and an evaluation half."""
    middle = scores.size // 2
    return scores[:middle], scores[middle:]


def _error_counts(without, with_, thresholds):
    """False positives and false negatives of the tests ``score >= t``.

    The test says "the canary was in the training set" when the score is at
    least the threshold (scores are signed so that the canary raises them).
    """
    thresholds = np.asarray(thresholds, dtype=np.float64)
    false_positives = without.size - np.searchsorted(np.sort(without), thresholds, side="left")
    false_negatives = np.searchsorted(np.sort(with_), thresholds, side="left")
    return false_positives, false_negatives


def _upper_error_rates(without, with_, thresholds, confidence):
    """Clopper-Pearson upper bounds on FPR and FNR holding jointly at ``confidence``.

    Each one-sided bound is taken at ``1 - (1 - confidence) / 2`` so that, by
    the union bound, both hold together with probability ``confidence``.
    """
    each = 1.0 - (1.0 - confidence) / 2.0
    false_positives, false_negatives = _error_counts(without, with_, thresholds)
    fpr_upper = clopper_pearson_upper(false_positives, without.size, each)
    fnr_upper = clopper_pearson_upper(false_negatives, with_.size, each)
    return np.atleast_1d(fpr_upper), np.atleast_1d(fnr_upper)


def _epsilon_from_rates(fpr_upper, fnr_upper, delta):
    """Largest epsilon that (epsilon, delta)-DP must have to allow these error rates.

    A test S with FPR = P[M(D) in S] and FNR = P[M(D') not in S] on
    neighbours D, D' forces ``TPR <= e^eps FPR + delta`` and
    ``1 - FPR <= e^eps FNR + delta`` (Kairouz et al. 2015); upper bounds on
    FPR and FNR turn both into lower bounds on eps.
    """
    with np.errstate(divide="ignore", invalid="ignore"):
        direct = np.log(np.maximum(1.0 - delta - fnr_upper, 0.0) / fpr_upper)
        reverse = np.log(np.maximum(1.0 - delta - fpr_upper, 0.0) / fnr_upper)
    return np.maximum(direct, reverse)


def _mu_from_rates(fpr_upper, fnr_upper):
    """Smallest mu of Gaussian DP that allows these error rates (Nasr et al. 2023).

    mu-GDP means ``FNR >= Phi(Phi^{-1}(1 - FPR) - mu)`` for every test, i.e.
    ``mu >= Phi^{-1}(1 - FPR) - Phi^{-1}(FNR)``; the bound is symmetric in
    the two error rates.
    """
    return stats.norm.isf(fpr_upper) - stats.norm.ppf(fnr_upper)


@dataclasses.dataclass(frozen=True)
class _Selection:
    threshold: float
    direction: str
    bound: float
    true_positive_rate: float
    false_positive_rate: float


def _best_threshold(select_without, select_with, criterion, confidence):
    """Threshold of the test ``score >= t`` that maximises ``criterion``, and its value."""
    thresholds = np.unique(np.concatenate([select_without, select_with]))
    candidates = criterion(*_upper_error_rates(select_without, select_with, thresholds, confidence))
    candidates = np.where(np.isnan(candidates), -np.inf, candidates)
    best = int(np.argmax(candidates))
    return float(thresholds[best]), float(candidates[best])


def _select_and_evaluate(without, with_, criterion, confidence):
    """Choose the test on one half of the runs, bound its error rates on the other half.

    Picking the best of many tests on the same runs they are evaluated on
    would overstate the bound (a multiple-testing bias); the held-out half
    sees one fixed test, so its Clopper-Pearson bounds are valid. How the
    test is picked does not affect validity, only power.

    Both directions are tried: "canary present if score >= t" and, on
    negated scores, "if score <= t". Differential privacy binds D and D' both
    ways, so a statistic that the canary lowers is as good as one it raises
    (a custom statistic, or a bug that pushes the wrong way).
    """
    select_without, eval_without = _halves(without)
    select_with, eval_with = _halves(with_)
    ranking_confidence = max(confidence, _SELECTION_CONFIDENCE)
    # sign +1: the test "score >= t"; sign -1: "-score >= -t", i.e. "score <= t".
    choices = {
        sign: _best_threshold(
            sign * select_without, sign * select_with, criterion, ranking_confidence
        )
        for sign in (1.0, -1.0)
    }
    sign = max(choices, key=lambda key: choices[key][1])
    threshold = choices[sign][0]
    held_without, held_with = sign * eval_without, sign * eval_with
    upper_rates = _upper_error_rates(held_without, held_with, [threshold], confidence)
    bound = float(criterion(*upper_rates)[0])
    false_positives, false_negatives = _error_counts(held_without, held_with, [threshold])
    return _Selection(
        threshold=sign * threshold,
        direction="higher" if sign > 0 else "lower",
        bound=max(bound, 0.0) if not math.isnan(bound) else 0.0,
        true_positive_rate=1.0 - float(false_negatives[0]) / eval_with.size,
        false_positive_rate=float(false_positives[0]) / eval_without.size,
    )


def _epsilon_selection(without, with_, delta, confidence):
    return _select_and_evaluate(
        without, with_, lambda fpr, fnr: _epsilon_from_rates(fpr, fnr, delta), confidence
    )


def _mu_selection(without, with_, confidence):
    return _select_and_evaluate(without, with_, _mu_from_rates, confidence)


def epsilon_lower_bound(scores_without, scores_with, delta, confidence=0.95):
    """Lower bound on epsilon from the scores of models trained without and with the canary.

    The runs are split in halves: the test ``score >= t`` (or ``score <= t``)
    is chosen on the first half of each sample, and
    Clopper-Pearson upper bounds on its false positive rate (FPR) and false
    negative rate (FNR) are computed on the second half, jointly at
    ``confidence``. Then ``max(log((1 - delta - FNR) / FPR),
    log((1 - delta - FPR) / FNR))`` (with those upper bounds) is below the
    true epsilon with probability at least ``confidence``, whatever the
    mechanism (Jagielski, Ullman and Oprea 2020; Nasr et al. 2021).

    Parameters
    ----------
    scores_without : array-like of shape (n_runs_without,)
        Scores of models trained on D (runs independent and identically
        distributed, in any order).
    scores_with : array-like of shape (n_runs_with,)
        Scores of models trained on D plus the canary (a statistic the
        canary raises, or lowers: both directions are tried).
    delta : float
        The delta of the guarantee being audited.
    confidence : float, default=0.95
        Confidence level of the bound.

    Returns
    -------
    epsilon : float
        The lower bound, at least 0.
    """
    without = _check_scores(scores_without, "scores_without")
    with_ = _check_scores(scores_with, "scores_with")
    _check_confidence(confidence)
    check_delta(delta, allow_zero=True)
    return _epsilon_selection(without, with_, delta, confidence).bound


def mu_lower_bound(scores_without, scores_with, confidence=0.95):
    """Lower bound on the mu of Gaussian DP from two samples of scores.

    As :func:`epsilon_lower_bound` (threshold chosen on one half, joint
    Clopper-Pearson bounds on the other), with the trade-off curve of
    mu-GDP: ``mu >= Phi^{-1}(1 - FPR) - Phi^{-1}(FNR)`` (Nasr et al. 2023).
    The mechanism is then not mu'-GDP for any ``mu' <`` the bound, with
    probability at least ``confidence``.

    Parameters
    ----------
    scores_without : array-like of shape (n_runs_without,)
    scores_with : array-like of shape (n_runs_with,)
    confidence : float, default=0.95

    Returns
    -------
    mu : float
        The lower bound, at least 0.
    """
    without = _check_scores(scores_without, "scores_without")
    with_ = _check_scores(scores_with, "scores_with")
    _check_confidence(confidence)
    return _mu_selection(without, with_, confidence).bound


# ---------------------------------------------------------------------------
# Result
# ---------------------------------------------------------------------------


@dataclasses.dataclass(frozen=True)
class AuditResult:
    """Outcome of a privacy audit.

    Attributes
    ----------
    epsilon_lower_bound : float
        Epsilon that the mechanism provably exceeds, with probability at least
        ``confidence``, under no assumption on its output distribution. A value
        above ``claimed_epsilon`` refutes the claim.
    mu_lower_bound : float
        Lower bound on the mu of Gaussian DP: the mechanism is not mu'-GDP
        for any smaller mu' (with probability ``confidence``).
    epsilon_from_mu : float
        ``gdp_epsilon(mu_lower_bound, delta)``: the epsilon of a
        ``mu_lower_bound``-GDP mechanism. It is a lower bound on epsilon when
        the mechanism's privacy curve is Gaussian, which is exact for
        full-batch DP-SGD (sample rate 1) and approximate for many
        subsampled steps; it makes the most of a moderate number of runs
        (Nasr et al. 2023), but unlike ``epsilon_lower_bound`` it rests on
        that assumption.
    claimed_epsilon : float
        The epsilon the audited configuration claims (the larger of the
        ``epsilon_`` reported by the fits on the two data sets), or NaN.
    delta : float
        Delta of the claim, used by both epsilon bounds.
    confidence : float
        Confidence level of the bounds.
    n_runs : int
        Fits per data set (``scores_without`` and ``scores_with`` each hold
        that many scores).
    true_positive_rate, false_positive_rate : float
        Rates of the attack (see ``threshold`` and ``direction``) on the
        held-out half of the runs (point estimates, not bounds).
    threshold : float
        The threshold chosen for ``epsilon_lower_bound`` on the other half.
    direction : {"higher", "lower"}
        The attack says "canary present" when the score is at least the
        threshold (``"higher"``, what the canary statistic is built for) or at
        most the threshold (``"lower"``); both are tried on the selection half.
    scores_without, scores_with : ndarray of shape (n_runs,)
        The raw scores of the models trained without and with the canary.
    estimator_name : str or None
        Class of the audited estimator.
    noise_multiplier, sample_rate : float or None
        ``noise_multiplier_`` and ``sample_rate_`` of the models trained with
        the canary.
    n_steps : int or None
        ``n_steps_`` of the models trained with the canary.
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
            lines.append(
                f"  mechanism:            output perturbation, noise multiplier "
                f"{self.noise_multiplier:.4g} (times the sensitivity), {self.n_steps} "
                "noise-free steps"
            )
        elif self.noise_multiplier is not None:
            lines.append(
                f"  mechanism:            noise multiplier {self.noise_multiplier:.4g}, "
                f"sample rate {self.sample_rate:.4g}, {self.n_steps} steps"
            )
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
        Scores of models trained with the canary (higher or lower than
        without: both directions are tried). Both samples must hold
        independent runs; they are split in halves in the order given (first
        half: choice of the test, second half: bounds).
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
    without = _check_scores(scores_without, "scores_without")
    with_ = _check_scores(scores_with, "scores_with")
    _check_confidence(confidence)
    check_delta(delta)
    eps = _epsilon_selection(without, with_, delta, confidence)
    mu = _mu_selection(without, with_, confidence)
    return AuditResult(
        epsilon_lower_bound=eps.bound,
        mu_lower_bound=mu.bound,
        epsilon_from_mu=gdp_epsilon(mu.bound, delta),
        claimed_epsilon=float(claimed_epsilon),
        delta=float(delta),
        confidence=float(confidence),
        n_runs=int(min(without.size, with_.size)),
        true_positive_rate=eps.true_positive_rate,
        false_positive_rate=eps.false_positive_rate,
        threshold=eps.threshold,
        direction=eps.direction,
        scores_without=without,
        scores_with=with_,
    )


# ---------------------------------------------------------------------------
# The canary
# ---------------------------------------------------------------------------


def make_canary_dataset(
    n_samples,
    n_features,
    *,
    task="classification",
    classes=(0, 1),
    canary_scale=10.0,
    canary_target=1e6,
    canary_feature=0,
    random_state=None,
):
    """Background data that is zero in one feature, and a canary large in it.

    Background rows contribute nothing to the gradient's coordinate
    ``canary_feature``, so after undoing the Laplacian smoothing that
    coordinate of the weights is the Gaussian noise plus the canary's own
    clipped pushes: the two hypotheses differ as little as the noise allows
    them to, which is what makes the audit strong.

    Parameters
    ----------
    n_samples : int
        Background rows (the canary is not counted).
    n_features : int
        Number of features ``d >= 1``.
    task : {"classification", "regression"}, default="classification"
        Kind of targets.
    classes : sequence, default=(0, 1)
        Label set of a classification task; background labels are drawn
        uniformly from it and the canary gets the last label.
    canary_scale : float, default=10.0
        Value of the canary in ``canary_feature`` (its other features are 0).
    canary_target : float, default=1e6
        Target of the canary for regression: far from any prediction, so its
        residual keeps its sign and its gradient saturates the clip norm.
    canary_feature : int, default=0
        The feature the background leaves at 0.
    random_state : int, Generator or None, default=None
        Seed of the background.

    Returns
    -------
    X_background : ndarray of shape (n_samples, n_features)
        Standard normal features scaled by ``1 / sqrt(n_features)``, with
        column ``canary_feature`` zero.
    y_background : ndarray of shape (n_samples,)
        Uniform labels, or a noisy linear function of the features.
    x_canary : ndarray of shape (n_features,)
    y_canary : label or float
    """
    if task not in ("classification", "regression"):
        raise ValueError(f"task must be 'classification' or 'regression'; got {task!r}.")
    if int(n_samples) < 1 or int(n_features) < 1:
        raise ValueError(
            f"Need n_samples >= 1 and n_features >= 1; got {n_samples!r}, {n_features!r}."
        )
    if not 0 <= canary_feature < n_features:
        raise ValueError(f"canary_feature must be in [0, {n_features}); got {canary_feature!r}.")
    rng = np.random.default_rng(random_state)
    X = rng.standard_normal((n_samples, n_features)) / math.sqrt(n_features)
    X[:, canary_feature] = 0.0
    x_canary = np.zeros(n_features)
    x_canary[canary_feature] = canary_scale
    if task == "classification":
        labels = np.asarray(classes)
        return X, labels[rng.integers(len(labels), size=n_samples)], x_canary, labels[-1]
    y = X @ rng.standard_normal(n_features) + 0.1 * rng.standard_normal(n_samples)
    return X, y, x_canary, float(canary_target)


def _canary_direction(estimator, x_canary, y_canary, classes):
    """How the canary moves the weights, seen from the weights' starting point.

    Returns
    -------
    direction : ndarray of shape (n_features,)
        The canary's unit feature vector ``u``.
    push : ndarray of shape (n_outputs,)
        Unit vector ``c`` along its negated gradient ``-d loss / d z`` at zero
        weights: the canary drags ``W u`` along ``c``.
    code : int
        Loss code for the number of outputs.
    y_encoded : float
        The canary's target as the kernels see it.
    """
    norm = np.linalg.norm(x_canary)
    if not norm > 0:
        raise ValueError("The canary's features are all zero: it would be invisible to the model.")
    probe_model = clone(estimator)
    if is_classifier(estimator):
        probe_model.set_params(classes=classes)
    y_encoded, n_outputs = probe_model._encode_targets(np.asarray([y_canary]))
    code = loss_code(estimator.loss, n_outputs)
    residual = loss_derivative_reference(
        code, np.zeros((1, n_outputs)), y_encoded, LOSSES[estimator.loss].threshold(estimator)
    )[0]
    push = -residual
    if not np.linalg.norm(push) > 0:
        raise ValueError(
            "The canary's loss has zero gradient at zero weights (for example a regression "
            "target within loss_threshold of 0): it never moves the model. Use a larger target."
        )
    return x_canary / norm, push / np.linalg.norm(push), code, y_encoded[0]


class _CanaryStatistic:
    """Score of a fitted model: its un-smoothed weights projected on the canary's push.

    Every step moves the coefficients by ``-eta / b * A^{-1} g`` (``g`` the
    noisy clipped gradient sum), so ``A W^T`` is a weighted sum of the raw
    noisy gradients: undoing the smoothing recovers coordinates in which the
    background contributes nothing. Since ``A`` is symmetric,
    ``c . (A W u)`` equals ``c . (W (A u))``: the smoothing is undone once,
    on the probe vector ``A u``, instead of on every model.
    """

    def __init__(self, direction, push, sigma):
        n_features = direction.shape[0]
        eigenvalues = smoothing_eigenvalues(n_features, sigma)
        self.probe = np.fft.irfft(np.fft.rfft(direction) * eigenvalues, n=n_features)
        self.push = push

    def __call__(self, model):
        coef = np.atleast_2d(model.coef_)
        return float(self.push @ (coef @ self.probe))


def canary_score(model, x_canary, y_canary):
    """Score of one fitted model for the presence of a canary.

    The canary's coordinate of the un-smoothed coefficients, signed so that
    training on the canary raises it: ``c . (W A_sigma u)`` with ``u`` the
    canary's unit feature vector, ``A_sigma`` the Laplacian of the model's
    smoothing and ``c`` the direction the canary's gradient pushes the
    outputs at zero weights. For ``mechanism="output"`` (no smoothing) it is
    ``c . (W u)``: the released weights themselves.

    Parameters
    ----------
    model : DPLSSGDClassifier or DPLSSGDRegressor
        A fitted estimator.
    x_canary : array-like of shape (n_features,)
    y_canary : label or float

    Returns
    -------
    score : float
    """
    _check_estimator(model)
    classes = getattr(model, "classes_", None)
    x_canary = np.asarray(x_canary, dtype=np.float64)
    direction, push, _, _ = _canary_direction(model, x_canary, y_canary, classes)
    return _CanaryStatistic(direction, push, _smoothing_strength(model, x_canary.shape[0]))(model)


def _smoothing_strength(estimator, n_features):
    """The sigma of the smoothing applied to the noisy steps (none for output perturbation).

    Output perturbation adds its noise to the final weights directly, so the
    canary's coordinate is read from the released weights as they are.
    """
    if estimator._release_mechanism().perturbs_weights:
        return 0.0
    if hasattr(estimator, "sigma_"):
        return estimator.sigma_
    # Not fitted yet: resolved as its fits will resolve it (dense rows of
    # the canary's length; the audits take dense background rows).
    return resolve_sigma(estimator.sigma, n_features, False, estimator._auto_sigma_levels)


# ---------------------------------------------------------------------------
# Choosing the canary for an estimator
# ---------------------------------------------------------------------------


def _quietest_direction(X):
    """Unit feature vector along which the background rows are smallest.

    An all-zero column if there is one (a clean canary coordinate), otherwise
    the right singular vector of the smallest singular value of X: the
    background's gradients, ``r_i x_i``, then barely touch that coordinate
    (the ClipBKD construction of Jagielski et al. 2020).
    """
    zero_columns = np.flatnonzero(~np.any(X != 0, axis=0))
    direction = np.zeros(X.shape[1])
    if zero_columns.size:
        direction[zero_columns[0]] = 1.0
        return direction
    return np.linalg.svd(X, full_matrices=True)[2][-1]


@dataclasses.dataclass(frozen=True)
class _WeightScale:
    """Data-free scales of the weights, from the settings of a fit.

    With the canary saturating the clip norm, its coordinate of the weights
    ends near ``push`` with standard deviation ``noise``; no parameter can
    drift further than ``drift`` (all clipped gradients aligned) plus noise.
    alpha's shrinkage is ignored, which only overstates all three.
    """

    push: float
    noise: float
    drift: float


def _weight_scale(model, n_rows):
    """Push and noise of the canary coordinate, from a fitted model's settings."""
    etas = learning_rate_schedule(model.learning_rate, model.eta0_, model.power_t,
                                  model.n_steps_)
    expected_batch = model.batch_size_  # the public divisor of the noisy sum
    clip = float(model.clip_norm)
    noise = model.noise_multiplier_ * clip * math.sqrt(float(np.sum(etas**2))) / expected_batch
    push = clip * float(np.sum(etas)) * model.sample_rate_ / expected_batch
    # Each step moves a parameter by at most eta_t C |B_t| / b; twice the
    # expected batch covers the Poisson fluctuation of |B_t|.
    drift = 2.0 * clip * float(np.sum(etas))
    return _WeightScale(push=push, noise=noise, drift=drift)


def _classifier_canary_scale(scale, push, code, y_encoded, clip_norm, fit_intercept):
    """Canary magnitude that pushes hardest on average over training.

    A classification canary's gradient fades as its margin grows (the loss
    is satisfied), so a larger canary saturates the clip norm only while the
    weights stay small. The weights along the canary are modelled as
    ``push * t + noise * sqrt(t) * xi`` at time ``t`` in (0, 1] (xi standard
    normal per output) and each candidate magnitude is rated by the mean share
    of the clip norm its clipped gradient pushes along the statistic.
    """
    rng = np.random.default_rng(0)  # A fixed sample: the choice must be reproducible.
    n_outputs = push.shape[0]
    t = rng.uniform(size=(_WEIGHT_SAMPLES, 1))
    xi = rng.standard_normal((_WEIGHT_SAMPLES, n_outputs))
    weights = scale.push * t * push + scale.noise * np.sqrt(t) * xi
    intercept = 1.0 if fit_intercept else 0.0
    best_scale, best_share = None, -1.0
    for magnitude in _CLASSIFIER_SCALES * clip_norm:
        residuals = loss_derivative_reference(
            code, magnitude * weights, np.full(_WEIGHT_SAMPLES, y_encoded)
        )
        feature_norm = math.sqrt(magnitude**2 + intercept)
        gradient_norms = np.linalg.norm(residuals, axis=1) * feature_norm
        clip_factor = np.minimum(1.0, clip_norm / np.maximum(gradient_norms, 1e-300))
        share = np.mean(clip_factor * (-(residuals @ push)) * magnitude) / clip_norm
        if share > best_share:
            best_scale, best_share = magnitude, share
    return best_scale


def _regression_canary(model, scale):
    """Magnitude and target of a regression canary that always saturates the clip norm.

    Its target sits far beyond any prediction the noisy weights can make
    (coefficient along the canary times its size, plus the intercept, each
    bounded by the drift and six noise standard deviations), so the residual
    keeps its sign and its size (``|r| >= 1`` for squared error and
    epsilon-insensitive, ``= loss_threshold`` for Huber).
    """
    clip = float(model.clip_norm)
    smallest_residual = float(model.loss_threshold) if model.loss == "huber" else 1.0
    magnitude = _SATURATION_FACTOR * clip / smallest_residual
    reach = (magnitude + 1.0) * (scale.drift + _WEIGHT_REACH_SD * scale.noise)
    target = _TARGET_HEADROOM * (reach + float(model.loss_threshold) + 1.0)
    return magnitude, target


def _output_canary(estimator, direction, label):
    """Canary for output perturbation: at the row norm bound, saturating the loss.

    Longer rows are clipped to ``row_norm_bound``, so the canary sits on it.
    A regression canary's target lies beyond any prediction of the
    noise-free weights, which stay within ``2 R / mu`` of zero (the penalised
    minimiser is within ``R / mu``, and the descent from zero contracts
    towards it): Huber's derivative then stays clipped at its threshold, the
    worst case of the sensitivity bound.
    """
    magnitude = float(estimator.row_norm_bound)
    if is_classifier(estimator):
        return magnitude * direction, label
    if estimator.loss == "huber":
        constants = smoothness_constants(
            "huber", 1, magnitude, float(estimator.alpha), bool(estimator.fit_intercept),
            loss_threshold=float(estimator.loss_threshold))
        reach = 2.0 * constants.gradient_bound / constants.strong_convexity * (magnitude + 1.0)
        target = _TARGET_HEADROOM * (reach + float(estimator.loss_threshold) + 1.0)
    else:
        # squared_error: the targets are clipped to target_bounds anyway.
        target = float(estimator.target_bounds[1])
    return magnitude * direction, target


def _auto_canary(estimator, X, y, classes):
    """Canary for ``estimator`` on background ``(X, y)``: direction, size, label."""
    direction = _quietest_direction(X)
    if is_classifier(estimator):
        label = classes[-1]
    else:
        label = 1.0
    if estimator._release_mechanism().perturbs_weights:
        return _output_canary(estimator, direction, label)
    # One fit with a unit canary gives the data-free quantities (z, q, T)
    # that the canary's size is tuned to; they do not depend on the size.
    reference = _seeded_fit(estimator, 0, np.vstack([X, direction]), _append(y, label))
    scale = _weight_scale(reference, X.shape[0] + 1)
    fit_intercept = bool(estimator.fit_intercept)
    if not is_classifier(estimator):
        magnitude, target = _regression_canary(reference, scale)
        return magnitude * direction, target
    _, push, code, y_encoded = _canary_direction(estimator, direction, label, classes)
    magnitude = _classifier_canary_scale(
        scale, push, code, y_encoded, float(estimator.clip_norm), fit_intercept
    )
    return magnitude * direction, label


# ---------------------------------------------------------------------------
# The audit
# ---------------------------------------------------------------------------


def _check_estimator(estimator):
    if not isinstance(estimator, BaseDPLSSGD):
        raise TypeError(
            "audit_epsilon audits DPLSSGDClassifier and DPLSSGDRegressor instances; "
            f"got {type(estimator).__name__}."
        )


def _append(y, label):
    """``y`` with one more entry (numpy promotes the dtype if the label needs it)."""
    return np.concatenate([np.asarray(y), np.asarray([label])])


def _default_background(estimator, random_state):
    """Background of ``batch_size - 1`` rows: with the canary, one full batch.

    A sample rate of 1 on both data sets is the strongest setting for a
    final-model audit (no subsampling to hide the canary) and keeps the
    number of steps and the sample rate equal with and without the canary.
    """
    n_samples = max(nominal_batch_size(estimator.batch_size) - 1, 2)
    task = "classification" if is_classifier(estimator) else "regression"
    classes = (0, 1) if estimator.get_params().get("classes") is None else estimator.classes
    X, y, _, _ = make_canary_dataset(
        n_samples, 5, task=task, classes=np.unique(np.asarray(classes)), random_state=random_state
    )
    return X, y


def _seeded_fit(estimator, seed, X, y):
    """Fit a clone whose batches and noise come from ``seed`` (reproducible).

    The audit throws its models away, so the seed leaks nothing; seeding
    makes an audit repeatable. The warnings of a reproducible fit (it is not
    private) are meant for users publishing models and are silenced here.
    """
    model = clone(estimator).set_params(random_state=int(seed), reproducible=True)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", PrivacyLeakWarning)
        return model.fit(X, y)


def _fit_scores(estimator, X, y, statistic, seeds):
    """Fit a fresh clone per seed and score it; also return the last model."""
    scores = np.empty(len(seeds))
    for i, seed in enumerate(seeds):
        model = _seeded_fit(estimator, seed, X, y)
        scores[i] = statistic(model)
    return scores, model


def _claimed_epsilon(estimator, model, n_rows):
    """The epsilon a non-reproducible fit of ``model``'s mechanism reports.

    The audit's own fits are seeded (``epsilon_`` is then ``inf``); the
    claim is what the same configuration states when fitted privately,
    recomputed from the configuration and the public settings the fit
    reports (its sensitivity and noise for output perturbation, its sample
    rate, steps and noise schedule for gradient perturbation).
    """
    return estimator._release_mechanism().claimed_epsilon(estimator, model, n_rows)


def audit_epsilon(
    estimator,
    X=None,
    y=None,
    *,
    canary=None,
    n_runs=1000,
    confidence=0.95,
    random_state=None,
):
    """Audit the differential privacy of a configured estimator by training it many times.

    Fits ``n_runs`` clones of ``estimator`` on a background data set D and
    ``n_runs`` on D plus one canary row, each with its own seed, scores every
    model with :func:`canary_score`, and bounds epsilon from below with
    :func:`audit_scores`. Under ``neighboring="replace_one"`` the two data
    sets have the same size: D plus the mirrored canary ``(-x, y)`` against
    D plus the canary ``(x, y)``.

    Parameters
    ----------
    estimator : DPLSSGDClassifier or DPLSSGDRegressor
        The configuration to audit (unfitted or fitted; it is cloned). Each
        run is a ``reproducible=True`` fit with its own seed (the models are
        thrown away, and seeding makes the audit repeatable); the claimed
        epsilon is the one the configuration reports when fitted privately.
        ``verbose`` is set to 0. Under add/remove adjacency without
        ``public_n_samples``, the size of D plus the canary is declared
        public. Everything else is used as given. For a
        classifier without ``classes``, the label set of D plus the canary
        is declared, so that the label set itself does not reveal the canary.
    X : array-like of shape (n_samples, n_features), default=None
        Background data D, dense (sparse X is refused). By default,
        ``batch_size - 1`` rows from :func:`make_canary_dataset` (5 features,
        one of them zero), so that with the canary every step uses the full
        batch.
    y : array-like of shape (n_samples,), default=None
        Background targets; required with ``X``.
    canary : tuple (x_canary, y_canary), default=None
        The row that is added. By default it points along the feature
        direction in which the background is smallest (an all-zero column if
        there is one), has the last class as label (classification) or a
        target far beyond any prediction (regression), and its size is tuned
        to the estimator's noise scale so that its clipped gradient keeps
        pushing with the full clip norm.
    n_runs : int, default=1000
        Fits on each data set. Half of them choose the threshold, the other
        half bound the error rates; thousands are needed for bounds close to
        the truth.
    confidence : float, default=0.95
        Confidence level of the bounds.
    random_state : int, numpy.random.SeedSequence or None, default=None
        Seeds the background (when generated) and the per-run seeds, so an
        audit is reproducible; ``None`` draws fresh entropy.

    Returns
    -------
    result : AuditResult
        The bounds, the attack's true and false positive rates on held-out
        runs, the raw scores, the claimed epsilon, and the mechanism's
        settings.

    Notes
    -----
    The audit sees only the final coefficients, like a user of the released
    model. For a sample rate of 1 this loses nothing: the canary's coordinate
    of the un-smoothed weights is a sum of Gaussian noise plus the canary's
    pushes, and ``mu_lower_bound`` approaches the mechanism's true mu with
    enough runs. With Poisson subsampling (sample rate below 1) the final
    model hides in which steps the canary was used, and such black-box
    bounds stay far below the claimed epsilon even for a tight accountant.

    Examples
    --------
    >>> from sklearn_dplssgd import DPLSSGDRegressor
    >>> from sklearn_dplssgd.audit import audit_epsilon
    >>> reg = DPLSSGDRegressor(epsilon=1.0, batch_size=20, max_iter=5, sigma=1.0, alpha=0.0)
    >>> result = audit_epsilon(reg, n_runs=200, random_state=0)
    >>> result.epsilon_lower_bound <= result.claimed_epsilon
    True
    """
    _check_estimator(estimator)
    _check_confidence(confidence)
    if not (isinstance(n_runs, numbers.Integral) and n_runs >= 2):
        raise ValueError(f"n_runs must be an int >= 2; got {n_runs!r}.")
    if (X is None) != (y is None):
        raise ValueError("Pass both X and y (the background data), or neither.")
    seed_sequence = (
        random_state if isinstance(random_state, np.random.SeedSequence)
        else np.random.SeedSequence(random_state)
    )
    background_seed, run_seeds = seed_sequence.spawn(2)
    estimator = clone(estimator).set_params(verbose=0)

    if X is None:
        X, y = _default_background(estimator, np.random.default_rng(background_seed))
    if sp.issparse(X):
        raise TypeError(
            "audit_epsilon needs dense background rows X: it appends the canary "
            "row and finds its direction with an SVD of X. The audit measures the "
            "mechanism, which is the same for sparse rows; pass X.toarray() (a "
            "background of about batch_size rows is enough)."
        )
    X = np.asarray(X)
    # float32 data keeps float32 training; anything else becomes float64.
    X = np.ascontiguousarray(X, dtype=X.dtype if X.dtype == np.float32 else np.float64)
    y = np.asarray(y)
    if X.ndim != 2 or y.shape != (X.shape[0],):
        raise ValueError(f"X must be 2-D and y 1-D with as many rows; got {X.shape} and {y.shape}.")

    if estimator.neighboring == "add_remove" and estimator.public_n_samples is None:
        # Under add/remove the row count is private: the auditor declares the
        # size of the larger data set (D plus the canary) as public.
        estimator.set_params(public_n_samples=X.shape[0] + 1)
    classes = None
    if is_classifier(estimator):
        declared = estimator.classes
        label = None if canary is None else canary[1]
        classes = np.unique(np.asarray(declared)) if declared is not None else np.unique(
            _append(y, label) if label is not None else y
        )
        estimator.set_params(classes=classes)
    if canary is None:
        x_canary, y_canary = _auto_canary(estimator, X, y, classes)
    else:
        x_canary, y_canary = np.asarray(canary[0], dtype=np.float64), canary[1]
        if x_canary.shape != (X.shape[1],):
            raise ValueError(f"x_canary must have shape ({X.shape[1]},); got {x_canary.shape}.")
    direction, push, _, _ = _canary_direction(estimator, x_canary, y_canary, classes)
    statistic = _CanaryStatistic(direction, push,
                                 _smoothing_strength(estimator, x_canary.shape[0]))
    X_with = np.ascontiguousarray(np.vstack([X, x_canary.astype(X.dtype)]))
    y_with = _append(y, y_canary)
    if estimator.neighboring == "replace_one":
        # Neighbours of the same size: D plus the mirrored canary against D
        # plus the canary. The two rows' clipped gradients point opposite
        # ways along the canary's direction: the full 2 C of replace-one.
        X = np.ascontiguousarray(np.vstack([X, -x_canary.astype(X.dtype)]))
        y = _append(y, y_canary)

    seeds = run_seeds.generate_state(2 * n_runs, dtype=np.uint64)
    start = time.perf_counter()
    scores_without, fitted_without = _fit_scores(estimator, X, y, statistic, seeds[:n_runs])
    scores_with, fitted_with = _fit_scores(estimator, X_with, y_with, statistic, seeds[n_runs:])
    seconds_per_fit = (time.perf_counter() - start) / (2 * n_runs)
    # The claim is the weaker of the two data sets' (under add/remove the
    # declared public_n_samples makes them equal).
    claimed = max(_claimed_epsilon(estimator, fitted_without, X.shape[0]),
                  _claimed_epsilon(estimator, fitted_with, X_with.shape[0]))
    result = audit_scores(
        scores_without, scores_with, delta=float(fitted_with.delta_),
        claimed_epsilon=claimed, confidence=confidence,
    )
    return dataclasses.replace(
        result,
        estimator_name=type(estimator).__name__,
        noise_multiplier=float(fitted_with.noise_multiplier_),
        sample_rate=float(fitted_with.sample_rate_),
        n_steps=int(fitted_with.n_steps_),
        seconds_per_fit=seconds_per_fit,
    )
