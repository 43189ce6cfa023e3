"""Empirical privacy audit: lower bounds on the epsilon an estimator really spends.

An accountant proves an upper bound on epsilon *if the code does what the
proof assumes*. An audit checks the code: it runs the estimator's public
``fit`` many times on two neighbouring data sets, D and D plus one *canary*
row, and tries to tell the two apart from the fitted models alone. Whatever
the implementation, an (epsilon, delta)-DP training run forces every such
test to satisfy ``TPR <= exp(epsilon) * FPR + delta`` (and the same with the
two data sets swapped), so the observed true and false positive rates give a
lower bound on epsilon. A lower bound above the claimed epsilon proves a bug:
a missing per-sample clip, noise scaled for the mean instead of the sum, and
so on (Jagielski, Ullman and Oprea 2020; Nasr et al. 2021, 2023).

The method
----------
1. **Canary.** The background rows are zero in one feature (or, for data
   passed by the user, small along one direction); the canary row is large
   along it, with a label or target that makes its gradient saturate the clip
   norm. Only the noise and the canary then move that coordinate of the
   gradient.
2. **Statistic.** Each fitted model is scored by the canary's coordinate of
   its *un-smoothed* coefficients, ``c . (W A_sigma u)``: Laplacian smoothing
   is a known linear map, undone by multiplying by ``A_sigma``. The sign
   ``c`` is chosen so that the canary raises the score. For a sample rate of
   1 the two score distributions are Gaussians whose distance is the
   mechanism's mu, so the audit can come close to the truth.
3. **Bounds.** The runs are split in halves. On the first, the test
   ``score >= t`` (or ``score <= t``: DP binds both data sets both ways) that
   maximises the bound is chosen; on the second, exact Clopper-Pearson upper
   bounds on its false positive and false negative rates are computed,
   jointly at the requested confidence (each one-sided bound at
   ``1 - (1 - confidence) / 2``). Then

   * ``epsilon_lower_bound = max(log((1 - delta - FNR) / FPR),
     log((1 - delta - FPR) / FNR))``, valid for any mechanism;
   * ``mu_lower_bound = Phi^{-1}(1 - FPR) - Phi^{-1}(FNR)``: the mechanism
     is not mu-Gaussian-DP for any smaller mu;
   * ``epsilon_from_mu``: the epsilon at ``delta`` of a mechanism that is
     exactly ``mu_lower_bound``-GDP (solving
     ``delta = Phi(-eps / mu + mu / 2) - exp(eps) Phi(-eps / mu - mu / 2)``).
     It is a lower bound on epsilon when the privacy curve is Gaussian, as
     for full-batch DP-SGD, and needs far fewer runs than
     ``epsilon_lower_bound`` to approach the truth (Nasr et al. 2023).

What to expect
--------------
* Full batch (sample rate 1): with thousands of runs ``epsilon_from_mu``
  approaches the epsilon of the mechanism's true mu (close to the claimed
  epsilon with the PLD accountant, the default; further below it with the
  looser RDP accountant).
  ``epsilon_lower_bound`` stays lower: bounding a small FPR needs many runs.
* Poisson subsampling (sample rate below 1): the final model does not reveal
  in which steps the canary was drawn, and black-box bounds stay far below
  the claim. This is a known limitation of final-model audits, not a sign of
  extra privacy.
* Classification losses stop pushing once the canary is fitted (its margin
  grows and its gradient fades), so the default canary's size is tuned to
  the noise of the weights; the audit is strongest when the weights stay
  small (small ``eta0`` or many rows).

An audit can refute a privacy claim, never prove one.

Your own scores
---------------
:func:`make_canary_dataset` builds the background rows and the canary,
:func:`canary_score` scores one fitted model, and :func:`audit_scores` turns
the scores of your own runs into an :class:`AuditResult`;
:func:`epsilon_lower_bound`, :func:`mu_lower_bound` and, for the counts of
one event, :func:`epsilon_lower_bound_of_event` are the statistics alone.

A floating-point channel
------------------------
Some bugs make a claim false in ways a statistical audit of final models
would need enormous numbers of runs to see. For a mechanism whose noisy
values are integers, :func:`check_float_channel` releases one noisy step on
two crafted neighbouring data sets and tests whether the low bits of the
output tell them apart: float64 Gaussian noise added to a float64 sum would
fail it (Mironov 2012), a channel outside the Gaussian mechanism's guarantee.
It returns a :class:`CheckResult`.

Seeds of the runs are drawn from ``random_state``; the estimator's own seed
is replaced per run.

Examples
--------
>>> from sklearn_dplssgd import DPLSSGDClassifier
>>> from sklearn_dplssgd.audit import audit_epsilon
>>> clf = DPLSSGDClassifier(epsilon=1.0, batch_size=20, max_iter=5, eta0=0.01,
...                         classes=[0, 1], alpha=0.0)
>>> result = audit_epsilon(clf, n_runs=200, random_state=0)
>>> result.claim_refuted
False
>>> print(result)  # doctest: +SKIP
Privacy audit of DPLSSGDClassifier: 200 runs without and 200 with the canary, 95% confidence
...
"""

from ._canary import canary_score, make_canary_dataset
from ._check_result import CheckResult
from ._epsilon_audit import audit_epsilon
from ._float_channel import check_float_channel
from ._result import audit_scores, AuditResult
from ._statistics import epsilon_lower_bound, epsilon_lower_bound_of_event, mu_lower_bound

__all__ = [
    "audit_epsilon",
    "audit_scores",
    "AuditResult",
    "canary_score",
    "check_float_channel",
    "CheckResult",
    "epsilon_lower_bound",
    "epsilon_lower_bound_of_event",
    "make_canary_dataset",
    "mu_lower_bound",
]
