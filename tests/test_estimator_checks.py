"""scikit-learn's own estimator checks over both estimators."""

import warnings

from sklearn.utils.estimator_checks import parametrize_with_checks

from sklearn_dplssgd import DPLSSGDClassifier, DPLSSGDRegressor, PrivacyLeakWarning

ESTIMATORS = [
    DPLSSGDClassifier(random_state=0, reproducible=True),
    DPLSSGDClassifier(loss="hinge", sigma=0.0, random_state=0, reproducible=True),
    DPLSSGDRegressor(random_state=0, reproducible=True),
    DPLSSGDRegressor(loss="huber", random_state=0, reproducible=True),
    DPLSSGDClassifier(mechanism="output", alpha=0.01, random_state=0, reproducible=True),
    DPLSSGDRegressor(loss="huber", mechanism="output", alpha=0.01, random_state=0,
                     reproducible=True),
]

# Every expected failure is listed with its reason.
EXPECTED_FAILED_CHECKS = {}


def _expected_failed_checks(estimator):
    return EXPECTED_FAILED_CHECKS.get(type(estimator).__name__, {})


@parametrize_with_checks(ESTIMATORS, expected_failed_checks=_expected_failed_checks)
def test_sklearn_compatible_estimator(estimator, check):
    with warnings.catch_warnings():
        # The checks fit without declaring the label set; that warning is
        # the point of the `classes` parameter and is tested elsewhere.
        warnings.simplefilter("ignore", PrivacyLeakWarning)
        check(estimator)
