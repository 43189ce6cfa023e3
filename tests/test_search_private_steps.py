"""Searches and steps that spend their own budget: refused, or fitted once and frozen.

A private transformer refitted by every trial of DPRandomizedSearch spends
its budget a secret random number of times, outside the search's event; a
warning does not change that. scikit-learn's own searches fit every
candidate as a separate private release, which only a ledger counts.
"""

import warnings

import numpy as np
import pytest
from sklearn.compose import ColumnTransformer
from sklearn.frozen import FrozenEstimator
from sklearn.model_selection import GridSearchCV
from sklearn.pipeline import FeatureUnion, Pipeline, make_pipeline

from sklearn_dplssgd import (
    BoundedScaler,
    DPBoundedScaler,
    DPLSSGDClassifier,
    DPOneHotEncoder,
    DPRandomizedSearch,
    PrivacyLedger,
    PrivacyLeakWarning,
)


@pytest.fixture
def data():
    rng = np.random.default_rng(0)
    X = rng.uniform(-1, 1, size=(600, 4))
    return X, (X[:, 0] + 0.5 * X[:, 1] > 0).astype(int)


class _Unreadable:
    """An X whose values cannot be read: a refusal must come before any read."""

    shape = (600, 4)

    def __len__(self):
        return 600

    def __array__(self, *args, **kwargs):
        raise AssertionError("a row was read")

    def __getitem__(self, key):
        raise AssertionError("a row was read")


def _classifier():
    return DPLSSGDClassifier(classes=[0, 1], max_iter=2, batch_size=64)


def _private_steps(ledger):
    """Private steps, alone and nested as pipelines nest them."""
    return {
        "scaler": DPBoundedScaler(epsilon=0.5, ledger=ledger),
        "column transformer": ColumnTransformer(
            [("encode", DPOneHotEncoder(epsilon=0.5, ledger=ledger), [3])],
            remainder="passthrough"),
        "pipeline in a column transformer": ColumnTransformer(
            [("inner", Pipeline([("scale", DPBoundedScaler(ledger=ledger))]), [0, 1])]),
        "feature union": FeatureUnion([("scale", DPBoundedScaler(ledger=ledger))]),
        "private step without a ledger": DPBoundedScaler(epsilon=0.5),
    }


@pytest.mark.parametrize("kind", list(_private_steps(None)))
def test_a_private_step_refitted_by_every_trial_is_refused_before_any_charge(kind, tmp_path):
    ledger = PrivacyLedger(path=str(tmp_path / "records"))
    step = _private_steps(ledger)[kind]
    search = DPRandomizedSearch(
        make_pipeline(step, _classifier()), {"dplssgdclassifier__eta0": [0.1, 1.0]},
        n_trials=3, ledger=ledger)
    with pytest.raises(ValueError, match="FrozenEstimator") as refusal:
        search.fit(_Unreadable(), np.zeros(600))
    assert ledger.records == []
    assert "spends its own privacy budget" in str(refusal.value)
    assert not hasattr(search, "best_estimator_")


def test_a_pipeline_inside_the_pipeline_is_searched_for_private_steps():
    inner = Pipeline([("columns", ColumnTransformer(
        [("scale", DPBoundedScaler(), [0, 1, 2, 3])]))])
    search = DPRandomizedSearch(Pipeline([("prepare", inner), ("model", _classifier())]),
                                {"model__eta0": [0.1]}, n_trials=2)
    with pytest.raises(ValueError, match="'prepare__columns__scale'"):
        search.fit(_Unreadable(), np.zeros(600))


def test_a_candidate_private_step_is_refused_whatever_is_drawn(data, tmp_path):
    X, y = data
    ledger = PrivacyLedger(path=str(tmp_path / "records"))
    model = Pipeline([("scale", BoundedScaler(lower=-1, upper=1)),
                      ("model", _classifier())])
    # One candidate in a hundred is private: refused before any draw.
    search = DPRandomizedSearch(
        model, {"scale": [BoundedScaler(lower=-1, upper=1)] * 99 + [DPBoundedScaler()],
                "model__eta0": [0.1]}, n_trials=1, ledger=ledger)
    with pytest.raises(ValueError, match="candidates of 'scale'"):
        search.fit(X, y)
    assert ledger.records == []


class _PrivateScalers:
    """A 'distribution' of private scalers: only a drawn candidate shows it."""

    def rvs(self, random_state=None):
        return DPBoundedScaler()


def test_a_drawn_private_candidate_is_refused_before_the_charge(data, tmp_path):
    X, y = data
    ledger = PrivacyLedger(path=str(tmp_path / "records"))
    model = Pipeline([("scale", BoundedScaler(lower=-1, upper=1)),
                      ("model", _classifier())])
    search = DPRandomizedSearch(model, {"scale": _PrivateScalers()}, n_trials=2,
                                ledger=ledger)
    with pytest.raises(ValueError, match="spends its own privacy budget"):
        search.fit(X, y)
    assert ledger.records == []


def test_a_private_step_fitted_once_and_frozen_is_charged_once(data, tmp_path):
    X, y = data
    ledger = PrivacyLedger(path=str(tmp_path / "records"))
    scaler = DPBoundedScaler(epsilon=0.5, ledger=ledger).fit(X)
    lower = scaler.lower_.copy()
    search = DPRandomizedSearch(
        make_pipeline(FrozenEstimator(scaler), _classifier()),
        {"dplssgdclassifier__eta0": [0.1, 1.0]}, n_trials=4, ledger=ledger)
    with warnings.catch_warnings():
        warnings.simplefilter("error", PrivacyLeakWarning)
        search.fit(X, y)
    # The scaler's own fit, then the search: no trial refitted the scaler.
    assert [record["estimator"] for record in ledger.records] == [
        "DPBoundedScaler", "DPRandomizedSearch"]
    assert ledger.records[1]["dp_event"] == search.dp_event_
    frozen = search.best_estimator_[0]
    assert frozen.estimator is scaler
    np.testing.assert_array_equal(scaler.lower_, lower)
    # The report says that the scaler's release is its own, not the search's.
    assert "'frozenestimator'" in search.privacy_report()


def test_a_frozen_private_step_that_was_never_fitted_is_refused(data, tmp_path):
    X, y = data
    ledger = PrivacyLedger(path=str(tmp_path / "records"))
    search = DPRandomizedSearch(
        make_pipeline(FrozenEstimator(DPBoundedScaler()), _classifier()),
        {"dplssgdclassifier__eta0": [0.1]}, n_trials=2, ledger=ledger)
    with pytest.raises(ValueError, match="not fitted"):
        search.fit(X, y)
    assert ledger.records == []


def test_public_steps_and_a_searched_final_step_are_not_refused(data):
    X, y = data
    search = DPRandomizedSearch(
        Pipeline([("scale", BoundedScaler(lower=-1, upper=1)), ("model", _classifier())]),
        {"scale": [BoundedScaler(lower=-1, upper=1), BoundedScaler(lower=-2, upper=2)],
         "model__eta0": [0.1, 1.0]}, n_trials=2).fit(X, y)
    assert set(search.best_params_) == {"scale", "model__eta0"}


def test_scikit_learn_searches_spend_a_budget_per_fit_that_only_a_ledger_counts(data, tmp_path):
    # What the user guide's "Hyperparameter search" says: no warning (an
    # estimator cannot tell that a search fits it), and every fit, refit
    # included, is a release of its own that a ledger records.
    X, y = data
    ledger = PrivacyLedger(path=str(tmp_path / "records"))
    search = GridSearchCV(
        DPLSSGDClassifier(epsilon=1.0, classes=[0, 1], max_iter=2, ledger=ledger),
        {"sigma": [0.0, 2.0]}, cv=2)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        search.fit(X, y)
    assert not [w for w in caught if issubclass(w.category, PrivacyLeakWarning)]
    assert len(ledger.records) == 2 * 2 + 1
    assert ledger.epsilon() > 2 * search.best_estimator_.epsilon_
