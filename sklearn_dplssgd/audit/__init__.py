"""Empirical privacy audit: lower bounds on the epsilon an estimator really spends.

An accountant proves an upper bound on epsilon *if the code does what the
proof assumes*. An audit checks the code: it runs the estimator's public
``fit`` many times on two neighbouring data sets, D and D plus one *canary*
row, and tries to tell them apart from the fitted models alone. An
(epsilon, delta)-DP training run forces every such test to satisfy
``TPR <= exp(epsilon) * FPR + delta`` (both ways), so the observed rates give
a lower bound on epsilon; one above the claim proves a bug (Jagielski, Ullman
and Oprea 2020; Nasr et al. 2021, 2023). An audit can refute a privacy claim,
never prove one.

The method
----------
1. **Canary.** The background rows are zero (or small) along one direction;
   the canary row is large along it, with a label or target that makes its
   gradient saturate the clip norm.
2. **Statistic.** Each model is scored by the canary's coordinate of its
   *un-smoothed* coefficients, ``c . (W A_sigma u)`` (the smoothing is a known
   linear map), signed so that the canary raises it.
3. **Bounds.** On half of the runs the test ``score >= t`` (or ``<= t``) that
   maximises the bound is chosen; on the other half, exact Clopper-Pearson
   upper bounds on its FPR and FNR, jointly at the requested confidence, give

   * ``epsilon_lower_bound = max(log((1 - delta - FNR) / FPR),
     log((1 - delta - FPR) / FNR))``, valid for any mechanism;
   * ``mu_lower_bound = Phi^{-1}(1 - FPR) - Phi^{-1}(FNR)``: the mechanism is
     not mu-Gaussian-DP for any smaller mu;
   * ``epsilon_from_mu``, the epsilon at ``delta`` of a
     ``mu_lower_bound``-GDP mechanism: a lower bound when the privacy curve
     is Gaussian (full-batch DP-SGD), needing far fewer runs.

With a sample rate of 1 and thousands of runs ``epsilon_from_mu`` approaches
the mechanism's true epsilon; with Poisson subsampling final-model bounds
stay far below the claim (a limitation of such audits, not extra privacy).
Classification canaries stop pushing once fitted, so their size is tuned to
the noise of the weights.

:func:`make_canary_dataset`, :func:`canary_score` and :func:`audit_scores`
audit runs of your own; :func:`epsilon_lower_bound`, :func:`mu_lower_bound`
and :func:`epsilon_lower_bound_of_event` are the statistics alone.
:func:`check_float_channel` tests whether the low bits of one noisy step tell
two neighbouring data sets apart (Mironov 2012) and returns a
:class:`CheckResult`. Run seeds are drawn from ``random_state``.

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
    "audit_epsilon", "audit_scores", "AuditResult", "canary_score", "check_float_channel",
    "CheckResult", "epsilon_lower_bound", "epsilon_lower_bound_of_event", "make_canary_dataset",
    "mu_lower_bound",
]
