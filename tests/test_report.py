"""privacy_report(): the plain-words report of every fitted private object."""

import math
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
    assert (f"standard deviation {model.noise_multiplier_:.3g} (noise multiplier "
            f"{model.noise_multiplier_:.3g} times that bound)") in report
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
    assert all(words in report for words in _FLOAT_CHANNEL)
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


@pytest.mark.parametrize("mechanism", ["gradient_exact", "gradient_exact_discrete"])
def test_an_exact_release_says_its_noise_is_outside_the_floating_point_caveat(data, mechanism):
    X, y = data
    exact = _quiet_fit(DPLSSGDClassifier(mechanism=mechanism, max_iter=2, classes=[0, 1]), X, y)
    ordinary = _quiet_fit(DPLSSGDClassifier(max_iter=2, classes=[0, 1]), X, y)
    assert "floating-point behaviour outside the released integers" in exact.privacy_report()
    assert "noise sampled in floating point (the default)" in ordinary.privacy_report()
    assert "released integers" not in ordinary.privacy_report()


# The paragraph a release whose noise was sampled in floating point ends with.
_FLOAT_CHANNEL = ("leak through the released values, not only a side channel",
                  "sklearn_dplssgd.audit.check_float_channel",
                  "measures an epsilon lower bound above the claimed epsilon",
                  "mechanism='gradient_exact' (integers with exactly sampled noise) closes it")


def test_the_stated_noise_is_the_noise_added_with_sample_weights(data):
    # The noise is z times the sensitivity max_sample_weight * clip_norm, not
    # z times the clip norm.
    X, y = data
    weights = np.random.default_rng(1).uniform(0.0, 3.0, len(y))
    model = _quiet_fit(DPLSSGDClassifier(max_sample_weight=3.0, clip_norm=0.5, max_iter=2,
                                         classes=[0, 1]), X, y, sample_weight=weights)
    report = model.privacy_report()
    z = model.noise_multiplier_
    assert f"standard deviation {z * 3.0 * 0.5:.3g} (noise multiplier {z:.3g} times" in report
    assert "multiplied by its sample weight (at most 3)" in report
    assert "moves a step's sum by at most 1.5." in report
    assert f"standard deviation {z * 0.5:.3g} " not in report


@pytest.mark.parametrize("mechanism, law", [("gradient_exact", "rounded Gaussian"),
                                            ("gradient_exact_discrete", "discrete Gaussian")])
def test_an_exact_release_states_its_lattice_bound_and_law(data, mechanism, law):
    from sklearn_dplssgd.mechanisms import mechanism_named

    X, y = data
    weight, clip = 2.0, 0.5
    model = _quiet_fit(DPLSSGDClassifier(mechanism=mechanism, max_sample_weight=weight,
                                         clip_norm=clip, max_iter=2, classes=[0, 1]), X, y)
    report = model.privacy_report()
    # The lattice, bound and scale the mechanism's own calibration gives for
    # the fitted public quantities (not the report's figures).
    release, _ = mechanism_named(mechanism).calibrated_release(
        model, model.epsilon, model.delta_, sample_rate=model.sample_rate_,
        n_steps=model.n_steps_, neighboring=model.neighboring_, clip_norm=clip,
        n_coordinates=X.shape[1] + 1, n_outputs=1, n_samples=len(y),
        max_sample_weight=weight)
    gamma = weight * clip * 2.0 ** -release.grid_bits
    bound = release.sensitivity_squared
    scale = release.scale.std
    assert f"lattice of step gamma = {gamma:.4g} (2**-{release.grid_bits} times" in report
    assert f"at most B = {bound} squared lattice units: norm {math.sqrt(bound) * gamma:.6g}." \
        in report
    assert f"plus {law} noise" in report
    assert f"{scale * gamma:.3g} (s gamma) on the sum's scale" in report
    if law == "rounded Gaussian":
        # noise_multiplier_ is s / sqrt(B): relative to the enforced bound.
        assert f"round(s G) (G standard normal; s = {int(scale)} lattice units" in report
        assert f"{model.noise_multiplier_:.3g} times the bound" in report
    else:
        # noise_multiplier_ is s gamma / (max_sample_weight * clip_norm).
        assert f"N_Z(0, s^2) (the Gaussian restricted to the integers; s = {scale:.7g}" \
            in report
        assert f"{model.noise_multiplier_ * weight * clip:.3g} (s gamma)" in report
    assert "Gaussian noise of standard deviation" not in report
    assert not any(words in report for words in _FLOAT_CHANNEL)


@pytest.mark.parametrize("mechanism", ["gradient", "output"])
def test_a_floating_point_release_says_the_float_channel_is_not_covered(data, mechanism):
    X, y = data
    model = _quiet_fit(DPLSSGDClassifier(mechanism=mechanism, alpha=0.01, max_iter=2,
                                         classes=[0, 1]), X, y)
    report = model.privacy_report()
    # Output perturbation releases gamma times integers with exact noise.
    floating = mechanism == "gradient"
    assert all(words in report for words in _FLOAT_CHANNEL) == floating
    assert ("floating-point behaviour outside the released integers" in report) != floating


def test_a_model_without_the_noise_figures_says_so(data):
    # A model pickled by a version that did not keep them.
    X, y = data
    model = _quiet_fit(DPLSSGDClassifier(max_iter=2, classes=[0, 1]), X, y)
    del model._noise_added
    report = model.privacy_report()
    assert "did not keep the noise's figures" in report
    assert "standard deviation" not in report
