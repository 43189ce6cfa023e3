"""DPBoundedScaler(mechanism="above_threshold"): private ranges by AboveThreshold."""

import fractions
import functools
import math
import re
import warnings

import numpy as np
import pytest
import scipy.sparse as sp
from sklearn.utils.estimator_checks import parametrize_with_checks

import dp_accounting
from dp_accounting.pld import common
from dp_accounting.pld import privacy_loss_distribution as pld_lib

from sklearn_dplssgd import (
    BoundedScaler,
    DPBoundedScaler,
    DPLSSGDClassifier,
    DPOneHotEncoder,
    PrivacyLedger,
    PrivacyLeakWarning,
)
from sklearn_dplssgd._accounting._events import EpsilonDeltaDpEvent, event_epsilon
from sklearn_dplssgd._preprocessing import _above_threshold
from sklearn_dplssgd._preprocessing._above_threshold import GRID_LARGEST
from sklearn_dplssgd._preprocessing._dp_scaler import candidate_grid, private_range, tail_count
from sklearn_dplssgd._preprocessing._private_fit import composed_event
from sklearn_dplssgd.audit import epsilon_lower_bound

# This file tests the AboveThreshold mechanism (the Gaussian-histogram
# default: test_histogram_ranges.py).
AboveThreshold = functools.partial(DPBoundedScaler, mechanism="above_threshold")

# Fits are seeded (reproducible=True) so that the tests are repeatable; that
# fit's warning is the point of reproducible and is tested below.
pytestmark = pytest.mark.filterwarnings("ignore::sklearn_dplssgd.PrivacyLeakWarning")


def _seeded(seed=0, **params):
    return AboveThreshold(random_state=seed, reproducible=True, **params)


def _table(n=20_000, seed=0):
    rng = np.random.default_rng(seed)
    return np.column_stack([
        rng.integers(17, 91, n).astype(float),            # ages
        rng.lognormal(10.0, 1.0, n),                      # heavy-tailed incomes
        -rng.exponential(50.0, n) - 1000.0,               # all negative
    ])


def test_grid_is_fixed_symmetric_and_geometric():
    grid = candidate_grid()
    assert np.all(np.diff(grid) > 0)
    np.testing.assert_allclose(grid, -grid[::-1])
    positive = grid[grid > 0]
    np.testing.assert_allclose(positive[1:] / positive[:-1], 1.1)
    assert positive[-1] <= GRID_LARGEST and 0.0 in grid


def test_tail_count_is_capped_by_a_public_row_count_only():
    counts = [tail_count(n, 0.01) for n in range(1, 8000)]
    assert counts[-1] == math.ceil(4.5 / 0.01)
    assert tail_count(40, 0.01) == 2  # a sixteenth of a public row count
    # No public row count (add/remove without a declared one): no cap.
    assert tail_count(None, 0.01) == math.ceil(4.5 / 0.01)


def _non_learned_attributes(scaler):
    return {name: value for name, value in vars(scaler).items()
            if name.endswith("_") and name not in ("lower_", "upper_")}


@pytest.mark.parametrize("declared", [None, 40])
def test_add_remove_neighbours_get_the_same_public_attributes(declared):
    # 39 and 40 rows of 3 features at epsilon 1: below 432 rows the cap
    # n // 16 would bind, and tail_count_ would tell the two neighbours apart.
    X = _table(40)
    fits = [AboveThreshold(epsilon=1.0, neighboring="add_remove", public_n_samples=declared)
            .fit(rows) for rows in (X[:39], X)]
    first, second = (_non_learned_attributes(fit) for fit in fits)
    assert first.keys() == second.keys()
    for name in first:
        assert np.array_equal(first[name], second[name]), name
    expected = math.ceil(4.5 * 6) if declared is None else declared // 16
    assert fits[0].tail_count_ == expected


def test_replace_one_caps_the_tail_by_the_actual_row_count():
    scaler = _seeded(epsilon=1.0).fit(_table(40))
    assert scaler.tail_count_ == 40 // 16
    declared = _seeded(epsilon=1.0, public_n_samples=80).fit(_table(40))
    assert declared.tail_count_ == 80 // 16


def test_add_remove_without_a_row_count_warns_that_the_range_is_nearly_empty():
    with pytest.warns(UserWarning, match="nearly empty.*declare public_n_samples"):
        scaler = _seeded(epsilon=1.0, neighboring="add_remove").fit(_table(20))
    assert np.all(scaler.upper_ - scaler.lower_ < 1e-3)  # poor, for public reasons
    report = scaler.privacy_report()
    assert "nothing about the number of rows" in report
    declared = _seeded(epsilon=1.0, neighboring="add_remove", public_n_samples=20)
    assert "public_n_samples=20" in declared.fit(_table(20)).privacy_report()


@pytest.mark.parametrize("epsilon", [1e-300, 1e-320, 5e-324])
def test_an_epsilon_too_small_to_split_is_refused_before_charging(epsilon):
    ledger = PrivacyLedger()
    with pytest.raises(ValueError, match="'epsilon' parameter of DPBoundedScaler is too small"):
        AboveThreshold(epsilon=epsilon, ledger=ledger).fit(_table(50))
    assert ledger.records == []


@pytest.mark.parametrize("epsilon, error", [
    (math.inf, ValueError), (math.nan, ValueError), (-1e-300, ValueError), (0.0, ValueError)])
def test_non_finite_or_non_positive_epsilon_is_refused(epsilon, error):
    ledger = PrivacyLedger()
    with pytest.raises(error, match="'epsilon' parameter of DPBoundedScaler"):
        AboveThreshold(epsilon=epsilon, ledger=ledger).fit(_table(50))
    assert ledger.records == []


def test_huge_epsilon_fits():
    scaler = AboveThreshold(epsilon=1.7e308).fit(_table(500))
    assert scaler.epsilon_ == 1.7e308 and scaler.tail_count_ == 1
    assert np.all(np.isfinite(scaler.lower_)) and np.all(scaler.lower_ < scaler.upper_)


def test_public_n_samples_is_validated():
    with pytest.raises(ValueError, match="'public_n_samples' parameter of DPBoundedScaler"):
        AboveThreshold(public_n_samples=0).fit(_table(50))


def test_ranges_cover_the_bulk_and_clip_little():
    X = _table()
    scaler = _seeded(epsilon=1.0).fit(X)
    outside = (X < scaler.lower_) | (X > scaler.upper_)
    assert outside.mean(axis=0).max() < 0.02
    # Within a grid step or two of the extreme quantiles, not at the outliers.
    assert 10 <= scaler.lower_[0] <= 17 and 89 <= scaler.upper_[0] <= 135
    assert scaler.upper_[1] < X[:, 1].max()
    assert scaler.lower_[2] < -1000 and scaler.upper_[2] == 0.0  # searched from zero
    assert scaler.learned_.all() and scaler.tail_count_ == tail_count(len(X), 1 / 6) == 27


def test_transform_is_bounded_scaler_with_the_released_bounds():
    X = _table(3000)
    scaler = _seeded(epsilon=1.0).fit(X)
    oracle = BoundedScaler(lower=scaler.lower_, upper=scaler.upper_).fit(X)
    np.testing.assert_array_equal(scaler.transform(X), oracle.transform(X))
    np.testing.assert_allclose(scaler.inverse_transform(scaler.transform(X)),
                               np.clip(X, scaler.lower_, scaler.upper_), rtol=1e-12)
    assert np.abs(scaler.transform(X * 1000)).max() <= 1.0


def test_event_and_epsilon():
    scaler = AboveThreshold(epsilon=0.6).fit(_table(2000))
    assert isinstance(scaler.dp_event_, dp_accounting.SelfComposedDpEvent)
    assert scaler.dp_event_.count == 6
    assert scaler.dp_event_.event == EpsilonDeltaDpEvent(0.6 / 6, 0.0)
    assert scaler.epsilon_ == pytest.approx(0.6) and scaler.delta_ == 0.0
    assert event_epsilon(scaler.dp_event_, 1e-5) == pytest.approx(0.6)


def test_accounting_recomputed_with_dp_accounting():
    # dp-accounting composes the six pure 0.1-DP ends (their tight PLD):
    # our basic-composition epsilon is never below it.
    scaler = AboveThreshold(epsilon=0.6).fit(_table(2000))
    part = scaler.dp_event_.event
    pld = pld_lib.from_privacy_parameters(
        common.DifferentialPrivacyParameters(part.epsilon, part.delta),
        value_discretization_interval=1e-4,
    ).self_compose(scaler.dp_event_.count)
    for delta in (1e-9, 1e-5, 1e-2):
        assert pld.get_epsilon_for_delta(delta) <= scaler.epsilon_ + 1e-9
    assert pld.get_epsilon_for_delta(1e-9) > 0.9 * scaler.epsilon_


def test_public_bounds_spend_nothing():
    pd = pytest.importorskip("pandas")
    X = _table(2000)
    frame = pd.DataFrame(X, columns=["age", "income", "debt"])
    scaler = AboveThreshold(epsilon=0.4, bounds={"age": (0, 120), 2: (-2000, 0)}).fit(frame)
    assert list(scaler.learned_) == [False, True, False]
    assert scaler.lower_[0] == 0 and scaler.upper_[0] == 120 and scaler.upper_[2] == 0
    assert scaler.dp_event_ == dp_accounting.SelfComposedDpEvent(
        EpsilonDeltaDpEvent(0.4 / 2, 0.0), 2)
    everything = AboveThreshold(bounds=[(0, 120), (0, 1e6), (-2000, 0)]).fit(X)
    assert everything.epsilon_ == 0.0 and isinstance(everything.dp_event_,
                                                     dp_accounting.NoOpDpEvent)


@pytest.mark.parametrize("bounds, match", [
    ({"salary": (0, 1)}, "does not have"),
    ({7: (0, 1)}, "indices"),
    ([(0, 1)], "has 1 entries"),
    ([(1, 0), None, None], "lower < upper"),
    ([("a", "b"), None, None], "pair of numbers"),
    ("wide", "must be None"),
])
def test_bad_bounds(bounds, match):
    with pytest.raises(ValueError, match=match):
        AboveThreshold(bounds=bounds).fit(_table(100))


def test_ledger_composes_with_an_estimator():
    rng = np.random.default_rng(1)
    X = _table(3000)
    y = (X[:, 0] > 50).astype(int)
    ledger = PrivacyLedger()
    scaler = AboveThreshold(epsilon=0.2, ledger=ledger).fit(X)
    clf = DPLSSGDClassifier(epsilon=0.8, classes=[0, 1], ledger=ledger, max_iter=2)
    clf.fit(scaler.transform(X), y)
    assert [record["estimator"] for record in ledger.records] == [
        "DPBoundedScaler", "DPLSSGDClassifier"]
    # Basic composition: the scaler's 0.2 plus the model's epsilon at the same delta.
    expected = 0.2 + event_epsilon(clf.dp_event_, ledger.delta, "replace_one")
    assert ledger.epsilon() == pytest.approx(expected, rel=1e-3)
    assert rng is not None


def test_capped_ledger_refuses_before_fitting():
    from sklearn_dplssgd import PrivacyBudgetExceededError
    ledger = PrivacyLedger(max_epsilon=0.5)
    AboveThreshold(epsilon=0.4, ledger=ledger).fit(_table(500))
    scaler = AboveThreshold(epsilon=0.4, ledger=ledger)
    with pytest.raises(PrivacyBudgetExceededError):
        scaler.fit(_table(500))
    assert not hasattr(scaler, "lower_") and len(ledger.records) == 1


def test_ledger_relation_must_match():
    with pytest.raises(ValueError, match="do not compose"):
        AboveThreshold(neighboring="add_remove", ledger=PrivacyLedger()).fit(_table(100))


def test_reproducible_claims_nothing():
    X = _table(1000)
    with pytest.warns(PrivacyLeakWarning):
        first = AboveThreshold(random_state=3, reproducible=True).fit(X)
    second = AboveThreshold(random_state=3, reproducible=True).fit(X)
    np.testing.assert_array_equal(first.upper_, second.upper_)
    assert first.epsilon_ == math.inf
    assert isinstance(first.dp_event_, dp_accounting.NonPrivateDpEvent)
    # Without reproducible=True the seed is ignored: fresh noise each fit.
    uppers = {AboveThreshold(epsilon=0.05, random_state=3).fit(X).upper_[1]
              for _ in range(8)}
    assert len(uppers) > 1


SECRET = 987654.321


@pytest.mark.parametrize("bad", [np.nan, np.inf, -np.inf])
def test_non_finite_values_are_refused_without_echo(bad):
    X = _table(200)
    X[5, 1] = SECRET
    X[7, 0] = bad
    with pytest.raises(ValueError) as error:
        AboveThreshold().fit(X)
    assert "987654" not in str(error.value) and ("NaN" in str(error.value)
                                                 or "infinity" in str(error.value))


def test_sparse_is_refused():
    with pytest.raises(TypeError, match="DPBoundedScaler.fit does not accept sparse"):
        AboveThreshold().fit(sp.csr_matrix(_table(50)))
    scaler = AboveThreshold().fit(_table(50))
    with pytest.raises(TypeError, match="DPBoundedScaler.transform does not accept sparse"):
        scaler.transform(sp.csr_matrix(_table(50)))


def test_constant_and_huge_columns_are_documented_behaviour():
    rng = np.random.default_rng(2)
    X = np.column_stack([np.full(4000, 3.0), rng.normal(0, 1, 4000) * 1e300])
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # no overflow warning either
        warnings.simplefilter("ignore", PrivacyLeakWarning)
        scaler = _seeded(epsilon=1.0).fit(X)
    # A constant feature gets a grid interval around its value (the upper
    # scan overshoots by a step or two with a probability of some percent).
    assert scaler.lower_[0] <= 3.0 <= scaler.upper_[0] < 4.0
    # Values beyond the grid are clipped to its ends.
    top = candidate_grid()[-1]
    assert top > 1e15 and scaler.upper_[1] == top and scaler.lower_[1] == -top
    out = scaler.transform(X)
    assert np.all(np.isfinite(out)) and np.abs(out).max() <= 1.0


def test_few_rows_for_the_budget_warn():
    with pytest.warns(UserWarning, match="rows are few"):
        scaler = AboveThreshold(epsilon=0.1).fit(_table(300))
    assert scaler.tail_count_ == 300 // 16


def test_input_is_not_mutated():
    X = _table(500)
    before = X.copy()
    AboveThreshold().fit(X).transform(X)
    np.testing.assert_array_equal(X, before)


def _audit_scores(rng, epsilon_end, n_runs, moved):
    """Upper end above 100 or not, on D (moved=False) or its replace-one neighbour."""
    n, grid = 200, candidate_grid()
    k = tail_count(n, epsilon_end)
    values = np.ones(n)
    values[:k + int(moved)] = 1000.0  # one row moved from 1 to 1000 in the neighbour
    return np.array([private_range(values, epsilon_end, k, rng, grid)[1] > 100
                     for _ in range(n_runs)], dtype=float)


def test_audit_refutes_the_noiseless_variant_only(monkeypatch):
    epsilon_end = 1.0
    rng = np.random.default_rng(0)
    honest = epsilon_lower_bound(_audit_scores(rng, epsilon_end, 3000, False),
                                 _audit_scores(rng, epsilon_end, 3000, True), delta=0.0)
    assert honest <= epsilon_end
    # A broken sampler: AboveThreshold without noise (deterministic quantiles).
    monkeypatch.setattr(_above_threshold, "sample_discrete_laplace",
                        lambda size, scale, words: np.zeros(size, dtype=np.int64))
    refuted = epsilon_lower_bound(_audit_scores(rng, epsilon_end, 300, False),
                                  _audit_scores(rng, epsilon_end, 300, True), delta=0.0)
    assert refuted > 3 * epsilon_end


def test_messages_name_the_parameter():
    with pytest.raises(ValueError, match=re.escape("'epsilon' parameter of DPBoundedScaler")):
        AboveThreshold(epsilon=-1.0).fit(_table(50))
    with pytest.raises(ValueError, match="'ledger' parameter"):
        AboveThreshold(ledger="mine").fit(_table(50))


# The histogram scaler refuses a feature of which nothing stands out of the
# noise (tested in test_histogram_ranges.py); the checks' tables have as few
# as one row, which stands out only at a large budget.
@parametrize_with_checks([AboveThreshold(random_state=0, reproducible=True),
                          DPBoundedScaler(epsilon=1000.0, random_state=0, reproducible=True)],
                         expected_failed_checks=lambda estimator: {})
def test_sklearn_compatible_transformer(estimator, check):
    with warnings.catch_warnings():
        # The checks' tables are small for the default budget (the warning
        # is tested above) and the fits are seeded to be repeatable.
        warnings.simplefilter("ignore", UserWarning)
        check(estimator)


def test_a_small_table_keeps_most_of_its_range():
    # Diabetes' shape in raw units: 331 rows, 10 features, epsilon 1.5 over
    # 20 ends. Each end used to aim at the 60th most extreme row of 331 (a
    # cap of a quarter), keeping 43 percent of the values inside the ranges
    # over these 8 fits; a cap of a sixteenth aims at the 20th and keeps 60
    # percent. The caveat is said as it happens.
    rng = np.random.default_rng(21)
    X = rng.uniform(20.0, 300.0, (331, 10))
    inside = []
    for seed in range(8):
        with pytest.warns(UserWarning, match="rows are few.*Declaring bounds"):
            scaler = _seeded(seed, epsilon=1.5).fit(X)
        assert scaler.tail_count_ == 331 // 16
        inside.append(np.mean((X >= scaler.lower_) & (X <= scaler.upper_)))
    assert np.mean(inside) > 0.55


@pytest.mark.parametrize("epsilon", [1e-3, 1.0 / 3.0, 0.7, 5.0, 1e5])
def test_the_scans_noise_is_exact_discrete_laplace_within_the_budget(epsilon, monkeypatch):
    # The threshold's and the queries' noise: integer draws of the exact
    # sampler at parameters whose sum is at most the end's epsilon, added to
    # integer counts and an integer threshold.
    calls = []
    real = _above_threshold.sample_discrete_laplace

    def spy(size, scale, words):
        draws = real(size, scale, words)
        calls.append((scale, draws))
        return draws

    monkeypatch.setattr(_above_threshold, "sample_discrete_laplace", spy)
    counts = np.arange(0, 100, dtype=np.int64)
    index = _above_threshold.first_crossing(counts, 50, epsilon, np.random.default_rng(3))
    assert 0 <= index < counts.size
    (threshold_scale, threshold_draw), (query_scale, query_draws) = calls
    assert threshold_draw.dtype == query_draws.dtype == np.int64
    assert threshold_draw.shape == (1,) and query_draws.shape == counts.shape
    share = fractions.Fraction(_above_threshold.THRESHOLD_SHARE * epsilon)
    if epsilon < 1000:
        assert threshold_scale.parameter <= share
        assert query_scale.parameter <= fractions.Fraction(epsilon) - share
        assert threshold_scale.parameter + query_scale.parameter > fractions.Fraction(
            epsilon) * (1 - fractions.Fraction(1, 10 ** 12))
    else:  # capped: more noise than needed
        assert threshold_scale.parameter == query_scale.parameter == 1024


def test_a_wrong_threshold_share_would_be_seen():
    # The check above can fail: a threshold noise at the whole epsilon breaks it.
    whole = _above_threshold.DiscreteLaplaceScale.at_most(0.7)
    assert whole.parameter > fractions.Fraction(_above_threshold.THRESHOLD_SHARE * 0.7)


def test_an_end_below_the_samplers_smallest_parameter_is_refused():
    # 6 ends: epsilon_end = epsilon / 6; the query parameter is a third of it.
    smallest = 3 * 6 * _above_threshold.SMALLEST_NOISE_PARAMETER
    ledger = PrivacyLedger()
    with pytest.raises(ValueError, match="'epsilon' parameter of DPBoundedScaler is too small"):
        AboveThreshold(epsilon=smallest * 0.99, ledger=ledger).fit(_table(50))
    assert ledger.records == []
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        scaler = AboveThreshold(epsilon=smallest * 1.01).fit(_table(50))
    assert scaler.epsilon_ == smallest * 1.01


def test_an_images_learned_zero_stays_zero():
    """DPBoundedScaler is a BoundedScaler: on an image's width a lower end of 0 keeps its zero.

    Public bounds (0, 1) for every pixel spend nothing; the output is the
    pixels themselves, where the map to [-1, 1] would send the background to -1.
    """
    from sklearn_dplssgd import DPBoundedScaler

    rng = np.random.default_rng(3)
    X = rng.uniform(size=(50, 400)) * (rng.uniform(size=(50, 400)) > 0.8)
    scaler = DPBoundedScaler(bounds=[(0.0, 1.0)] * 400).fit(X)
    np.testing.assert_allclose(scaler.transform(X), X)
    np.testing.assert_allclose(scaler.inverse_transform(scaler.transform(X)), X)
    narrow = DPBoundedScaler(bounds=[(0.0, 1.0)] * 5).fit(X[:, :5])
    np.testing.assert_allclose(narrow.transform(X[:, :5]), 2 * X[:, :5] - 1)


def test_the_transformers_share_one_split_and_one_composed_event():
    # The scaler's ends and the encoder's partitions go through the same two
    # functions: refused at the same share, composed the same way.
    with pytest.raises(ValueError, match="'epsilon' parameter of DPBoundedScaler is too small: "
                                         "split over 4 learned ends"):
        AboveThreshold(epsilon=1e-300).fit(_table(50)[:, :2])
    with pytest.raises(ValueError, match="'delta' parameter of DPOneHotEncoder is too small: "
                                         "split over 2 partition selections"):
        DPOneHotEncoder(delta=1e-308).fit(np.array([["a"]] * 20))
    event, epsilon, delta = composed_event(0.1, 1e-7, 4)
    assert (epsilon, delta) == pytest.approx((0.4, 4e-7))
    assert isinstance(event, dp_accounting.SelfComposedDpEvent) and event.count == 4
    assert event_epsilon(event, 4e-7) <= 0.4 + 1e-9
    assert isinstance(composed_event(0.1, 0.0, 0)[0], dp_accounting.NoOpDpEvent)
