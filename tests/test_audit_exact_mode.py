"""The implementation audit on the exact-noise mode (mechanism="gradient_exact")."""

import numpy as np
import pytest

from sklearn_dplssgd import DPLSSGDClassifier, DPLSSGDRegressor
from sklearn_dplssgd.audit import audit_implementation, check_clipping
from sklearn_dplssgd.backends import _exact


@pytest.mark.parametrize("estimator", [
    DPLSSGDClassifier(mechanism="gradient_exact", max_iter=2),
    DPLSSGDRegressor(mechanism="gradient_exact", max_iter=2),
], ids=["classifier", "regressor"])
def test_every_check_runs_and_passes_on_the_exact_mode(estimator):
    audit = audit_implementation(estimator)
    assert audit.passed, str(audit)
    names = [check.name for check in audit.checks]
    assert "clipping" in names and "floating-point channel" in names
    clipping = audit.checks[names.index("clipping")]
    # The grid's rounding is within its stated bound, and close to it.
    assert 0.99 < clipping.measured <= clipping.limit


def test_an_exact_sum_past_its_rounding_bound_fails_the_clipping_check(monkeypatch):
    integer_sum = _exact.ExactNoiseTraining.integer_sum

    def doubled(self, *args, **kwargs):
        return 2 * integer_sum(self, *args, **kwargs)

    monkeypatch.setattr(_exact.ExactNoiseTraining, "integer_sum", doubled)
    # The steps through Python, so that every step's sum is the doubled one
    # (a compiled run calls its compiled sum directly).
    monkeypatch.setattr(_exact.ExactNoiseTraining, "compiled_steps", lambda self, update: None)
    result = check_clipping(DPLSSGDRegressor(mechanism="gradient_exact"), dtypes=(np.float64,))
    assert not result.passed
    assert result.measured == pytest.approx(2.0, rel=1e-3)
