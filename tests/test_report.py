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
    assert f"standard deviation {model.noise_multiplier_:.3g} on the sum's scale" in report
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
    # The targets' range is declared: a series learning it from 133-row
    # calls would fail now and then (its range release is what the
    # target-range tests check).
    stream = DPLSSGDRegressor(target_bounds=(0.0, 1.0))
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
    assert not any(words in report for words in _FLOAT_CHANNEL)
    assert "floating-point behaviour outside the released integers" in report
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
    assert "and no noise is added (epsilon=inf)." in report
    seeded = _quiet_fit(DPLSSGDClassifier(classes=[0, 1], max_iter=2, random_state=0,
                                          reproducible=True), X, y)
    report = seeded.privacy_report()
    assert "reproducible=True" in report and "epsilon=inf" not in report


@pytest.mark.parametrize("mechanism", ["gradient", "output"])
def test_the_release_says_its_noise_is_outside_the_floating_point_caveat(data, mechanism):
    X, y = data
    model = _quiet_fit(DPLSSGDClassifier(mechanism=mechanism, alpha=0.01, max_iter=2,
                                         classes=[0, 1]), X, y)
    report = model.privacy_report()
    assert "floating-point behaviour outside the released integers" in report
    assert "noise sampled in floating point" not in report
    assert not any(words in report for words in _FLOAT_CHANNEL)


# The paragraph a release whose noise was sampled in floating point ended with.
_FLOAT_CHANNEL = ("leak through the released values, not only a side channel",
                  "measures an epsilon lower bound above the claimed epsilon")


def test_the_stated_noise_is_the_noise_added_with_sample_weights(data):
    # The noise is z times the sensitivity max_sample_weight * clip_norm, not
    # z times the clip norm.
    X, y = data
    weights = np.random.default_rng(1).uniform(0.0, 3.0, len(y))
    model = _quiet_fit(DPLSSGDClassifier(max_sample_weight=3.0, clip_norm=0.5, max_iter=2,
                                         classes=[0, 1]), X, y, sample_weight=weights)
    report = model.privacy_report()
    z = model.noise_multiplier_
    assert f"standard deviation {z * 3.0 * 0.5:.3g} on the sum's scale" in report
    assert "multiplied by its sample weight (at most 3)" in report
    assert "moves a step's sum by at most 1.5." in report
    assert f"standard deviation {z * 0.5:.3g} " not in report


def test_the_release_states_its_lattice_bound_and_law(data):
    from sklearn_dplssgd._training import batch_rows_bound, lattice_for

    X, y = data
    weight, clip = 2.0, 0.5
    model = _quiet_fit(DPLSSGDClassifier(max_sample_weight=weight, clip_norm=clip, max_iter=2,
                                         classes=[0, 1]), X, y)
    report = model.privacy_report()
    # The lattice the public quantities give (not the report's own figures).
    lattice = lattice_for(
        np.full(model.n_steps_, model.noise_multiplier_), weight * clip, X.shape[1] + 1,
        batch_rows_bound(model.sample_rate_, len(y), model.n_steps_))
    scale = int(lattice.scales[0])
    assert lattice.step == 2.0 ** -20 and weight * clip / lattice.step == 2.0 ** 20
    assert f"lattice of step gamma = {lattice.step:.4g}" in report
    assert f"noise round(s G) (G standard normal, s = {scale} lattice units" in report
    assert f"standard deviation {scale * lattice.step:.3g} on the sum's scale" in report
    assert f"at most {lattice.sensitivity:.10g} lattice units" in report
    assert f"the noise is {scale / lattice.sensitivity:.4g} times that" in report
    assert scale / lattice.sensitivity >= model.noise_multiplier_
    assert not any(words in report for words in _FLOAT_CHANNEL)
