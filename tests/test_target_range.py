"""DPLSSGDRegressor without target_bounds: the target's range learned privately."""

import dataclasses
import math
import warnings

import dp_accounting
import numpy as np
import pytest
from dp_accounting.pld import pld_privacy_accountant as dp_pld

from sklearn_dplssgd import DPLSSGDRegressor, PrivacyLedger, PrivacyLeakWarning
from sklearn_dplssgd._linear_model import TARGET_RANGE_SHARE
from sklearn_dplssgd._linear_model._targets import RangeTargets


def _table(n_rows=3000, centre=1000.0, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.uniform(-1.0, 1.0, size=(n_rows, 4))
    y = centre + 300.0 * (X @ [0.5, -0.3, 0.2, 0.1]) + rng.normal(0.0, 20.0, n_rows)
    return X, y


def _pld_epsilon(event, delta):
    accountant = dp_pld.PLDAccountant(dp_accounting.NeighboringRelation.REPLACE_ONE,
                                      value_discretization_interval=1e-4)
    return accountant.compose(event).get_epsilon(delta)


def _assert_range_accounted(model):
    """The range's release is in the event, and the total composes it with the steps."""
    event = model.dp_event_
    assert isinstance(event, dp_accounting.ComposedDpEvent)
    first, steps = event.events[0], event.events[1:]
    assert isinstance(first, dp_accounting.GaussianDpEvent)
    assert model.target_range_noise_multiplier_ > 0
    assert first.noise_multiplier == model.target_range_noise_multiplier_
    total = _pld_epsilon(event, model.delta_)
    assert model.epsilon_ == pytest.approx(total, rel=5e-3)
    # The range costs something: the steps alone spend clearly less.
    alone = _pld_epsilon(dp_accounting.ComposedDpEvent(steps), model.delta_)
    assert alone < 0.97 * total


def test_epsilon_is_the_composition_of_the_range_and_the_steps():
    X, y = _table()
    model = DPLSSGDRegressor(epsilon=1.0).fit(X, y)
    _assert_range_accounted(model)
    assert model.epsilon_ <= 1.0 + 1e-9
    low, high = model.target_bounds_
    # A range of the targets, ends on the grid of powers of 2.
    assert low <= 1000.0 <= high and math.log2(high) == int(math.log2(high))
    assert model.score(X, y) > 0.5


class _RangeFromMinMax(DPLSSGDRegressor):
    """A broken variant: the range read from y without noise, accounted for nothing."""

    def _fit_settings(self):
        # The mechanism plans (and accounts for) no release of the range.
        return dataclasses.replace(super()._fit_settings(), learns_target_range=False)

    def _targets(self, classes=None, target_range=None):
        targets = RangeTargets(None, False, 1.0, range_release=(1.0, self.neighboring, None))
        targets._released_range = lambda y: ((float(y.min()), float(y.max())), 1.0)
        return targets


def test_a_range_read_without_noise_is_caught():
    X, y = _table()
    broken = _RangeFromMinMax(epsilon=1.0).fit(X, y)
    with pytest.raises(AssertionError):
        _assert_range_accounted(broken)


def test_the_ledger_is_charged_for_the_range_and_the_steps():
    X, y = _table()
    ledger = PrivacyLedger(max_epsilon=2.0, delta=1e-5)
    model = DPLSSGDRegressor(epsilon=1.0, delta=1e-5, ledger=ledger).fit(X, y)
    assert [record["estimator"] for record in ledger.records] == ["DPLSSGDRegressor"]
    assert ledger.dp_event == dp_accounting.ComposedDpEvent([model.dp_event_])
    assert ledger.epsilon() == pytest.approx(model.epsilon_, rel=5e-3)
    # What remains of the ledger: the range and the steps both fit under its cap.
    rest = DPLSSGDRegressor(epsilon="remaining", ledger=ledger).fit(X, y)
    _assert_range_accounted(rest)
    assert ledger.epsilon() <= 2.0 + 1e-6


def test_declared_target_bounds_spend_nothing_on_the_range():
    X, y = _table()
    model = DPLSSGDRegressor(epsilon=1.0, target_bounds=(0.0, 2000.0)).fit(X, y)
    assert model.target_range_noise_multiplier_ is None
    assert model.target_bounds_ == (0.0, 2000.0)
    # The steps alone: no Gaussian release composed before them, and they
    # take the whole budget.
    assert isinstance(model.dp_event_, dp_accounting.SelfComposedDpEvent)
    assert _pld_epsilon(model.dp_event_, model.delta_) == pytest.approx(1.0, rel=5e-3)
    learned = DPLSSGDRegressor(epsilon=1.0).fit(X, y)
    assert learned.noise_multiplier_ > model.noise_multiplier_


def test_the_report_states_the_range_release():
    X, y = _table()
    report = DPLSSGDRegressor(epsilon=1.0).fit(X, y).privacy_report()
    assert "target range" in report.lower() and f"{TARGET_RANGE_SHARE:g}" in report
    declared = DPLSSGDRegressor(epsilon=1.0, target_bounds=(0, 2000)).fit(X, y)
    assert "declared target bounds" in declared.privacy_report()


def test_a_tiny_table_raises_an_error_naming_target_bounds():
    rng = np.random.default_rng(3)
    X = rng.uniform(-1, 1, size=(8, 2))
    y = rng.uniform(100, 200, size=8)
    with pytest.raises(ValueError, match="target_bounds") as raised:
        DPLSSGDRegressor(epsilon=1.0).fit(X, y)
    # No target's value in the message.
    assert not any(f"{value:.3g}" in str(raised.value) for value in y)


def test_without_noise_the_fit_trains_like_a_non_private_model():
    X, y = _table(centre=1000.0)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", PrivacyLeakWarning)
        model = DPLSSGDRegressor(epsilon=math.inf).fit(X, y)
    assert model.target_range_noise_multiplier_ == 0.0
    low, high = model.target_bounds_
    assert low <= y.min() and y.max() <= high
    assert model.score(X, y) > 0.9


def test_a_continued_series_keeps_its_range():
    X, y = _table()
    model = DPLSSGDRegressor(epsilon=1.0).partial_fit(X[:1500], y[:1500])
    bounds, noise = model.target_bounds_, model.target_range_noise_multiplier_
    model.partial_fit(X[1500:], y[1500:])
    assert model.target_bounds_ == bounds and model.target_range_noise_multiplier_ == noise
    # The range's release is in the first call's event only.
    assert isinstance(model.dp_events_[0], dp_accounting.ComposedDpEvent)
    assert isinstance(model.dp_events_[1], dp_accounting.SelfComposedDpEvent)


def test_the_range_is_planned_with_the_steps_and_refused_to_a_search_trial():
    from sklearn_dplssgd._mechanisms import MECHANISMS

    model = DPLSSGDRegressor(epsilon=1.0, delta=1e-5)
    model._learns_target_range = True
    settings = model._fit_settings()
    plan = MECHANISMS["gradient"].plan(settings, 3000)
    # The plan holds the range's release; its event comes first in the fit's.
    assert plan.target_range.noise_multiplier > 0
    assert plan.mechanism.dp_event().events[0] == plan.target_range.dp_event()
    # A trial of a private search is calibrated by the search alone.
    trial = dataclasses.replace(settings, fixed_mechanism=plan.mechanism)
    with pytest.raises(ValueError, match="trial of a private search"):
        MECHANISMS["gradient"].plan(trial, 3000)
