"""privacy_report(): the plain-words report of every fitted private object."""

import re
import warnings

import numpy as np
import pytest
from scipy import stats
from sklearn.exceptions import NotFittedError

from sklearn_dplssgd import (
    DPLSSGDClassifier, DPLSSGDRegressor, DPRandomizedSearch, PrivacyLedger,
)


@pytest.fixture(scope="module")
def data():
    rng = np.random.default_rng(0)
    X = rng.uniform(-1, 1, (400, 5))
    y = (X[:, 0] - X[:, 1] > 0).astype(int)
    return X, y


def _quiet_fit(model, X, y, **kwargs):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return model.fit(X, y, **kwargs)


def test_an_estimators_report_states_its_guarantee_public_facts_and_noise(data):
    X, y = data
    model = _quiet_fit(DPLSSGDClassifier(epsilon=0.7, delta=1e-6, classes=[0, 1]), X, y)
    report = model.privacy_report()
    assert f"({model.epsilon_:.4g}, 1e-06)-differential privacy" in report
    assert "replaced by any other row" in report
    assert "the declared classes (2 labels)" in report and "WARNING" not in report
    assert f"{model.n_steps_} training steps" in report
    assert f"{model.noise_multiplier_:.3g} times that bound" in report
    assert "Not covered: preprocessing fitted on the training rows" in report


def test_a_report_warns_about_what_the_fit_did_not_protect(data):
    X, y = data
    inferred = _quiet_fit(DPLSSGDClassifier(), X, y)
    assert "label set was read from the training labels" in inferred.privacy_report()
    seeded = _quiet_fit(DPLSSGDClassifier(classes=[0, 1], random_state=0, reproducible=True),
                        X, y)
    assert "Guarantee: NONE" in seeded.privacy_report()
    added = _quiet_fit(DPLSSGDRegressor(neighboring="add_remove", public_n_samples=400), X, y)
    report = added.privacy_report()
    assert "added or removed" in report and "public_n_samples=400" in report


def test_a_series_and_output_perturbation_are_reported(data):
    X, y = data
    stream = DPLSSGDRegressor()
    for part in np.array_split(np.arange(len(y)), 3):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            stream.partial_fit(X[part], y[part])
    assert "last of 3 releases" in stream.privacy_report()
    output = _quiet_fit(DPLSSGDClassifier(mechanism="output", alpha=0.01, classes=[0, 1]), X, y)
    report = output.privacy_report()
    assert "output perturbation" in report
    assert f"{output.noise_multiplier_ * output.output_sensitivity_:.3g}" in report


def test_search_and_ledger_reports(data):
    X, y = data
    ledger = PrivacyLedger(max_epsilon=10.0)
    assert "Nothing has been charged" in ledger.privacy_report()
    search = DPRandomizedSearch(
        DPLSSGDClassifier(classes=[0, 1], max_iter=2, ledger=ledger),
        {"alpha": stats.loguniform(1e-5, 1e-2)}, epsilon=1.0, n_trials=3)
    _quiet_fit(search, X, y)
    report = search.privacy_report()
    # The number of trials must stay secret: the report, meant to be
    # published, does not state it.
    assert "best of a random number of trials" in report
    assert not re.search(rf"\b{search.n_trials_} trials\b", report)
    assert f"({search.epsilon_:.4g}," in report
    total = ledger.privacy_report()
    assert "Spent: 1 release on the same data (DPRandomizedSearch)" in total
    assert "epsilon 10 is refused" in total


def test_unfitted_objects_have_no_report():
    with pytest.raises(NotFittedError):
        DPLSSGDClassifier().privacy_report()


def test_the_default_mode_is_declared_non_deterministic():
    assert DPLSSGDClassifier().__sklearn_tags__().non_deterministic
    assert not DPLSSGDRegressor(reproducible=True).__sklearn_tags__().non_deterministic


def test_the_private_transformers_report_what_they_released():
    import pandas as pd

    from sklearn_dplssgd import DPBoundedScaler, DPOneHotEncoder, PrivacyLedger

    rng = np.random.default_rng(0)
    ledger = PrivacyLedger(delta=1e-5)
    X = rng.normal(size=(2000, 2))
    scaler = DPBoundedScaler(epsilon=1.0, bounds={1: (-3.0, 3.0)}, ledger=ledger).fit(X)
    report = scaler.privacy_report()
    assert "Privacy report for DPBoundedScaler" in report
    assert "ends of 1 feature(s)" in report and "1 feature(s) took declared bounds" in report
    assert f"epsilon = {scaler.epsilon_:.4g}" in report and "Ledger:" in report
    colours = pd.DataFrame({"colour": rng.choice(["zqalpha", "zqbeta"], size=2000)})
    encoder = DPOneHotEncoder(epsilon=1.0, delta=1e-6).fit(colours)
    report = encoder.privacy_report()
    assert "2 category value(s) over 1 column(s)" in report
    assert "Ledger:" not in report
    # Nothing of the rows themselves is quoted.
    assert "zqalpha" not in report and "zqbeta" not in report
    seeded = DPOneHotEncoder(epsilon=1.0, random_state=0, reproducible=True)
    with pytest.warns(Warning):
        seeded.fit(colours)
    assert "Guarantee: NONE" in seeded.privacy_report()


def test_an_infinite_epsilon_is_explained_by_its_actual_cause(data):
    import pandas as pd

    from sklearn_dplssgd import DPOneHotEncoder, PrivacyLedger

    # The deltas of 13 fits at 1e-6 add up past the ledger's 1e-5: no epsilon
    # is left, although every fit was private.
    rng = np.random.default_rng(0)
    colours = pd.DataFrame({"colour": rng.choice(["a", "b"], size=500)})
    ledger = PrivacyLedger(delta=1e-5)
    for _ in range(13):
        DPOneHotEncoder(epsilon=1.0, delta=1e-6, ledger=ledger).fit(colours)
    assert ledger.epsilon() == np.inf
    report = ledger.privacy_report()
    assert "Guarantee: NONE" in report
    assert "deltas of its releases add up to 1.3e-05" in report
    assert "larger delta" in report and "fewer such fits" in report
    assert "without noise" not in report and "reproducible" not in report
    # A non-private release charged to a ledger names itself.
    X, y = data
    public = PrivacyLedger()
    _quiet_fit(DPLSSGDClassifier(epsilon=np.inf, classes=[0, 1], max_iter=2, ledger=public),
               X, y)
    assert "not private (DPLSSGDClassifier" in public.privacy_report()
    # The fitted objects say which of their own settings removed the guarantee.
    noiseless = _quiet_fit(DPLSSGDClassifier(epsilon=np.inf, classes=[0, 1], max_iter=2), X, y)
    report = noiseless.privacy_report()
    assert "without noise (epsilon=inf)" in report and "reproducible=True" not in report
    seeded = _quiet_fit(DPLSSGDClassifier(classes=[0, 1], max_iter=2, random_state=0,
                                          reproducible=True), X, y)
    report = seeded.privacy_report()
    assert "reproducible=True" in report and "epsilon=inf" not in report


@pytest.mark.parametrize("mechanism", ["gradient_exact", "gradient_exact_discrete"])
def test_an_exact_release_says_its_noise_is_outside_the_floating_point_caveat(data, mechanism):
    X, y = data
    exact = _quiet_fit(DPLSSGDClassifier(mechanism=mechanism, max_iter=2, classes=[0, 1]), X, y)
    ordinary = _quiet_fit(DPLSSGDClassifier(max_iter=2, classes=[0, 1]), X, y)
    assert "floating-point behaviour outside the released integers" in exact.privacy_report()
    assert "floating-point behaviour;" in ordinary.privacy_report()
    assert "released integers" not in ordinary.privacy_report()
