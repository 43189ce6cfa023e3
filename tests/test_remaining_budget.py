"""epsilon="remaining": a fit that spends what remains of its ledger's budget, and no more."""

import dp_accounting
import numpy as np
import pytest
from dp_accounting import pld as dp_pld
from sklearn.base import clone
from sklearn.model_selection import GridSearchCV

from sklearn_dplssgd import (
    DPLSSGDClassifier,
    DPLSSGDRegressor,
    PrivacyBudgetExceededError,
    PrivacyLedger,
)
from sklearn_dplssgd._accounting import event_epsilon


# The range of the fixture's targets, known from how they are made: the tests
# about the ledger's remainder declare it rather than learn it.
TARGET_BOUNDS = (-1.5, 1.5)


@pytest.fixture
def data():
    rng = np.random.default_rng(0)
    X = rng.uniform(-1, 1, size=(300, 4))
    return X, X[:, 0] - 0.5 * X[:, 1]


def _direct_total(ledger):
    """The ledger's records composed by dp-accounting's PLD accountant on a fine grid."""
    relation = {"replace_one": dp_accounting.NeighboringRelation.REPLACE_ONE,
                "add_remove": dp_accounting.NeighboringRelation.ADD_OR_REMOVE_ONE}
    accountant = dp_pld.PLDAccountant(relation[ledger.neighboring],
                                      value_discretization_interval=1e-4)
    return accountant.compose(ledger.dp_event).get_epsilon(ledger.delta)


@pytest.mark.parametrize("neighboring", ["replace_one", "add_remove"])
def test_the_composed_total_reaches_the_cap_and_stays_within_it(data, tmp_path, neighboring):
    X, y = data
    ledger = PrivacyLedger(max_epsilon=2.0, neighboring=neighboring,
                           path=str(tmp_path / "ledger"))
    public = {"public_n_samples": len(X)} if neighboring == "add_remove" else {}
    first = DPLSSGDRegressor(epsilon=0.8, max_iter=2, ledger=ledger, neighboring=neighboring,
                             target_bounds=TARGET_BOUNDS, **public).fit(X, y)
    rest = DPLSSGDRegressor(epsilon="remaining", max_iter=2, ledger=ledger,
                            neighboring=neighboring, target_bounds=TARGET_BOUNDS,
                            **public).fit(X, y)
    assert len(ledger.records) == 2
    direct = _direct_total(ledger)
    # Within the cap (the ledger's own coarser grid is pessimistic, so the
    # fine recomputation is lower still), and close to it: the remainder was spent.
    assert ledger.epsilon() <= 2.0
    assert direct <= 2.0
    assert direct >= 2.0 * 0.99
    # PLD composition beats adding the two epsilons: the second fit's own
    # share is more than the remainder by basic composition.
    assert rest.epsilon_ > 2.0 - first.epsilon_
    assert rest.epsilon_ < 2.0
    # epsilon_ and dp_event_ are the fit's own event, at the fit's delta.
    assert rest.dp_event_ == ledger.records[-1]["dp_event"]
    own = event_epsilon(rest.dp_event_, rest.delta_, neighboring, pld_interval=1e-4)
    assert rest.epsilon_ == pytest.approx(own, rel=5e-3)


def test_a_noise_schedule_is_scaled_within_the_cap(data, tmp_path):
    X, y = data
    ledger = PrivacyLedger(max_epsilon=1.5, path=str(tmp_path / "ledger"))
    DPLSSGDRegressor(epsilon="remaining", max_iter=4, noise_schedule="exponential",
                     ledger=ledger).fit(X, y)
    assert 1.5 * 0.99 <= _direct_total(ledger) <= 1.5


def test_the_first_fit_takes_everything_and_the_next_is_refused_unread(data, tmp_path):
    X, y = data
    ledger = PrivacyLedger(max_epsilon=1.0, path=str(tmp_path / "ledger"))
    # Declared bounds: a learned range of 300 rows would fail about once in 200 fits.
    model = DPLSSGDRegressor(epsilon="remaining", max_iter=2, ledger=ledger,
                             target_bounds=(-1.5, 1.5))
    model.fit(X, y)

    class Untouchable:
        """Rows that fail if anything reads them; only their count is known."""

        shape = X.shape

        def __array__(self, *args, **kwargs):
            raise AssertionError("the data was read")

    # A clone shares the ledger: nothing remains for it.
    with pytest.raises(PrivacyBudgetExceededError, match="nothing remains"):
        clone(model).fit(Untouchable(), y)
    assert len(ledger.records) == 1


def test_a_grid_search_gets_one_fit_then_refusals(data, tmp_path):
    # Documented behaviour: every candidate and fold is a fit on the same
    # rows; the first takes the whole remainder, so the others are refused.
    X, y = data
    ledger = PrivacyLedger(max_epsilon=1.0, path=str(tmp_path / "ledger"))
    search = GridSearchCV(DPLSSGDRegressor(epsilon="remaining", max_iter=2, ledger=ledger,
                                           target_bounds=TARGET_BOUNDS),
                          {"sigma": [0.0, 1.0]}, cv=2, error_score="raise")
    with pytest.raises(PrivacyBudgetExceededError, match="nothing remains"):
        search.fit(X, y)
    assert len(ledger.records) == 1
    assert _direct_total(ledger) <= 1.0


@pytest.mark.parametrize("ledger_kwargs, match", [
    (None, "got ledger=None"),
    ({}, "has no max_epsilon"),
])
def test_remaining_needs_a_capped_ledger(data, tmp_path, ledger_kwargs, match):
    X, y = data
    ledger = None if ledger_kwargs is None else PrivacyLedger(path=str(tmp_path / "ledger"))
    with pytest.raises(ValueError, match=match):
        DPLSSGDClassifier(epsilon="remaining", classes=[0, 1], ledger=ledger).fit(X, y > 0)


@pytest.mark.parametrize("mechanism", ["output"])
def test_other_mechanisms_refuse_remaining(data, tmp_path, mechanism):
    X, y = data
    ledger = PrivacyLedger(max_epsilon=1.0, path=str(tmp_path / "ledger"))
    with pytest.raises(ValueError, match="mechanism='gradient' only"):
        DPLSSGDClassifier(epsilon="remaining", classes=[0, 1], ledger=ledger,
                          mechanism=mechanism).fit(X, y > 0)
    assert ledger.records == []


def test_other_strings_are_refused(data):
    X, y = data
    with pytest.raises((TypeError, ValueError), match="epsilon"):
        DPLSSGDRegressor(epsilon="all").fit(X, y)


def test_the_report_says_the_budget_was_the_remainder(data, tmp_path):
    X, y = data
    ledger = PrivacyLedger(max_epsilon=1.0, path=str(tmp_path / "ledger"))
    model = DPLSSGDRegressor(epsilon="remaining", max_iter=2, ledger=ledger,
                             target_bounds=TARGET_BOUNDS).fit(X, y)
    report = model.privacy_report()
    assert "epsilon='remaining'" in report and "max_epsilon (1 at delta 1e-05)" in report
