"""dp_event_: what a fit released, recomputed with dp-accounting directly."""

import math

import dp_accounting
import numpy as np
import pytest
from dp_accounting import pld as dp_pld
from dp_accounting import rdp as dp_rdp

from sklearn_dplssgd import DPLSSGDClassifier, DPLSSGDRegressor, PrivacyLeakWarning
from sklearn_dplssgd._mechanisms._gradient import GradientPerturbation

DELTA = 1e-5
RELATIONS = {
    "add_remove": dp_accounting.NeighboringRelation.ADD_OR_REMOVE_ONE,
    "replace_one": dp_accounting.NeighboringRelation.REPLACE_ONE,
}


def _data(n=600, d=6, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.uniform(-1, 1, size=(n, d))
    return X, (X[:, 0] > 0).astype(int)


def _pld_epsilon(event, relation, interval):
    accountant = dp_pld.PLDAccountant(RELATIONS[relation], value_discretization_interval=interval)
    return accountant.compose(event).get_epsilon(DELTA)


@pytest.mark.parametrize("neighboring, batch_size", [
    ("replace_one", 64), ("add_remove", 64), ("replace_one", 1000)])
def test_epsilon_recomputed_from_dp_event_with_dp_accounting(neighboring, batch_size):
    X, y = _data()
    extra = {"public_n_samples": 600} if neighboring == "add_remove" else {}
    clf = DPLSSGDClassifier(epsilon=1.0, classes=[0, 1], batch_size=batch_size, max_iter=3,
                            neighboring=neighboring, **extra).fit(X, y)
    event = clf.dp_event_
    if batch_size >= 600:  # full batch: no sampling
        expected = dp_accounting.SelfComposedDpEvent(
            dp_accounting.GaussianDpEvent(clf.noise_multiplier_), clf.n_steps_)
    else:
        expected = dp_accounting.SelfComposedDpEvent(dp_accounting.PoissonSampledDpEvent(
            clf.sample_rate_, dp_accounting.GaussianDpEvent(clf.noise_multiplier_)),
            clf.n_steps_)
    assert event == expected
    # A fine PLD grid, independent of the library's choice of interval.
    recomputed = _pld_epsilon(event, neighboring, 1e-4)
    assert recomputed == pytest.approx(clf.epsilon_, rel=2e-3)
    assert recomputed <= 1.0 + 2e-3


def test_events_of_several_fits_compose():
    X, y = _data()
    fits = [DPLSSGDRegressor(epsilon=eps, max_iter=2).fit(X, X[:, 0]) for eps in (0.5, 1.0)]
    composed = dp_accounting.ComposedDpEvent([fit.dp_event_ for fit in fits])
    total = _pld_epsilon(composed, "replace_one", 1e-4)
    # Composition costs more than either fit, less than their sum's worst case.
    assert max(fit.epsilon_ for fit in fits) < total < sum(fit.epsilon_ for fit in fits) * 1.01


def test_rdp_accountant_recomputes_add_remove_epsilon():
    X, y = _data()
    reg = DPLSSGDRegressor(epsilon=2.0, accountant="rdp", neighboring="add_remove",
                           public_n_samples=600, batch_size=50, max_iter=2,
                           target_bounds=(-5, 5)).fit(X, X[:, 0])
    accountant = dp_rdp.RdpAccountant(orders=[1 + x / 10 for x in range(1, 100)]
                                      + list(range(11, 1025)))
    recomputed = accountant.compose(reg.dp_event_).get_epsilon(DELTA)
    assert reg.epsilon_ <= 2.0
    # Every integer order: at most as large as the library's (sparser) grid.
    assert recomputed <= reg.epsilon_ * (1 + 1e-9)
    assert recomputed == pytest.approx(reg.epsilon_, rel=1e-2)


def test_non_private_fits_release_a_non_private_event():
    X, y = _data()
    no_noise = DPLSSGDClassifier(epsilon=math.inf, classes=[0, 1], max_iter=1).fit(X, y)
    assert no_noise.dp_event_ == dp_accounting.NonPrivateDpEvent()
    with pytest.warns(PrivacyLeakWarning):
        seeded = DPLSSGDClassifier(classes=[0, 1], max_iter=1, random_state=0,
                                   reproducible=True).fit(X, y)
    assert seeded.dp_event_ == dp_accounting.NonPrivateDpEvent()
    assert seeded.epsilon_ == math.inf


def test_mechanism_is_a_value():
    mechanism, calibration = GradientPerturbation.calibrated(
        1.0, DELTA, sample_rate=0.1, n_steps=50, accountant="pld", neighboring="replace_one",
        clip_norm=2.0)
    assert mechanism.noise_multiplier == calibration.noise_multiplier
    assert mechanism.private and not mechanism.seeded_copy().private
    assert mechanism.epsilon(DELTA) == pytest.approx(calibration.epsilon, rel=1e-3)
    assert mechanism.seeded_copy().epsilon(DELTA) == math.inf
    assert mechanism == GradientPerturbation(0.1, 50, calibration.noise_multiplier,
                                             "replace_one", 2.0)


@pytest.mark.parametrize("n_rows", [400, 500])
def test_a_search_trial_refuses_a_mechanism_planned_for_other_rows(n_rows):
    # The search fixed q = 100 / 400 and T = 8 for its trials: a trial on
    # other rows would release what the search did not account for.
    X, y = _data(n=n_rows)
    clf = DPLSSGDClassifier(classes=[0, 1], batch_size=100, max_iter=2, random_state=0)
    clf._fixed_mechanism = GradientPerturbation(100 / 400, 8, 4.0, "replace_one", 1.0)
    if n_rows == 400:
        assert clf.fit(X, y).noise_multiplier_ == 4.0
    else:
        with pytest.raises(RuntimeError, match="does not match"):
            clf.fit(X, y)
