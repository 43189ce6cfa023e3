"""DPOneHotEncoder: categories by optimal private partition selection."""

import fractions
import math
import re

import numpy as np
import pytest
import scipy.sparse as sp
import sklearn
from scipy import stats
from packaging.version import Version
from sklearn.preprocessing import OneHotEncoder
from sklearn.utils.estimator_checks import parametrize_with_checks

import dp_accounting
from dp_accounting.pld import common
from dp_accounting.pld import privacy_loss_distribution as pld_lib

from sklearn_dplssgd import DPOneHotEncoder, PrivacyLedger, PrivacyLeakWarning
from sklearn_dplssgd._preprocessing import _dp_encoder
from sklearn_dplssgd._accounting._events import EpsilonDeltaDpEvent, event_epsilon
from sklearn_dplssgd._preprocessing._dp_encoder import selection_probabilities
from sklearn_dplssgd._training import GeneratorWords, make_generator
from sklearn_dplssgd.audit import epsilon_lower_bound

pd = pytest.importorskip("pandas")

# Fits are seeded (reproducible=True) so that the tests are repeatable; that
# fit's warning is the point of reproducible and is tested below.
pytestmark = pytest.mark.filterwarnings("ignore::sklearn_dplssgd.PrivacyLeakWarning")


def _seeded(seed=0, **params):
    return DPOneHotEncoder(random_state=seed, reproducible=True, **params)


def _people(n=6000, seed=0):
    rng = np.random.default_rng(seed)
    frame = pd.DataFrame({
        "region": rng.choice(["north", "south", "east", "west"], n, p=[0.4, 0.3, 0.2, 0.1]),
        "children": rng.choice([0, 1, 2, 3], n),
        "planet": ["earth"] * n,
    })
    frame.loc[0, "region"] = "atlantis"  # one row: a rare value
    return frame


@pytest.mark.parametrize("epsilon, delta", [(0.01, 1e-8), (0.5, 1e-6), (3.0, 1e-3)])
def test_selection_probabilities_are_dp_and_optimal(epsilon, delta):
    pi = selection_probabilities(50_000, epsilon, delta)
    assert pi[0] == 0.0 and pi[1] == pytest.approx(delta) and pi[-1] == 1.0
    previous, current = pi[:-1], pi[1:]
    slack = 1e-12
    # Both (epsilon, delta)-DP inequalities, for the release and its complement,
    # between counts c - 1 and c, in both directions.
    assert np.all(current <= math.exp(epsilon) * previous + delta + slack)
    assert np.all(1 - previous <= math.exp(epsilon) * (1 - current) + delta + slack)
    assert np.all(previous <= current + slack)
    # Optimal: each step is as large as one of the two inequalities allows.
    tight = np.minimum(math.exp(epsilon) * previous + delta,
                       1 - math.exp(-epsilon) * (1 - delta - previous))
    np.testing.assert_allclose(current, np.minimum(tight, 1.0), atol=1e-12)


def test_frequent_values_released_rare_ones_not():
    encoder = _seeded(epsilon=1.0).fit(_people())
    assert [list(c) for c in encoder.categories_] == [
        ["east", "north", "south", "west"], [0, 1, 2, 3], ["earth"]]
    assert encoder.categories_[1].dtype.kind == "i"
    assert list(encoder.get_feature_names_out()[:2]) == ["region_east", "region_north"]


def test_transform_matches_one_hot_encoder_with_those_categories():
    people = _people(3000)
    encoder = _seeded(epsilon=1.0).fit(people)
    oracle = OneHotEncoder(categories=encoder.categories_, handle_unknown="ignore").fit(people)
    ours = encoder.transform(people)
    assert sp.issparse(ours) and ours.format == "csr"
    np.testing.assert_array_equal(ours.toarray(), oracle.transform(people).toarray())
    np.testing.assert_array_equal(encoder.get_feature_names_out(),
                                  oracle.get_feature_names_out())
    # The rare, unreleased value and an unseen one are all-zero rows.
    unseen = pd.DataFrame({"region": ["atlantis", "mars"], "children": [9, 1],
                           "planet": ["earth", "venus"]})
    np.testing.assert_array_equal(encoder.transform(unseen).toarray().sum(axis=1), [1, 1])


def test_dense_pandas_output_and_dtype():
    encoder = _seeded(epsilon=1.0, sparse_output=False, dtype=np.float32)
    encoder.set_output(transform="pandas")
    out = encoder.fit_transform(_people(2000))
    assert isinstance(out, pd.DataFrame) and out.dtypes.eq(np.float32).all()
    assert list(out.columns) == list(encoder.get_feature_names_out())


def test_event_epsilon_and_delta():
    encoder = DPOneHotEncoder(epsilon=0.3, delta=3e-6).fit(_people(500))
    # Replace-one: each of the 3 columns' share again over the two values a
    # replaced row touches.
    assert encoder.dp_event_.count == 6
    assert encoder.dp_event_.event == EpsilonDeltaDpEvent(0.3 / 3 / 2, 3e-6 / 3 / 2)
    assert encoder.epsilon_ == pytest.approx(0.3) and encoder.delta_ == pytest.approx(3e-6)
    assert event_epsilon(encoder.dp_event_, 1e-5) == pytest.approx(0.3)
    # At exactly its own delta the encoder's epsilon holds; below it, no epsilon does.
    assert event_epsilon(encoder.dp_event_, 3e-6) == pytest.approx(0.3)
    assert event_epsilon(encoder.dp_event_, 2.9e-6) == math.inf
    add_remove = DPOneHotEncoder(epsilon=0.3, neighboring="add_remove").fit(_people(500))
    assert add_remove.dp_event_.count == 3


def test_accounting_recomputed_with_dp_accounting():
    encoder = DPOneHotEncoder(epsilon=0.3, delta=3e-6).fit(_people(500))
    part = encoder.dp_event_.event
    pld = pld_lib.from_privacy_parameters(
        common.DifferentialPrivacyParameters(part.epsilon, part.delta),
        value_discretization_interval=1e-4,
    ).self_compose(encoder.dp_event_.count)
    # dp-accounting's composition of the parts is never above ours.
    assert pld.get_epsilon_for_delta(encoder.delta_) <= encoder.epsilon_ + 1e-9
    assert pld.get_delta_for_epsilon(encoder.epsilon_) <= encoder.delta_ * (1 + 1e-6)


def test_ledger_charges_before_reading():
    ledger = PrivacyLedger(max_epsilon=0.25)
    DPOneHotEncoder(epsilon=0.2, ledger=ledger).fit(_people(300))
    assert ledger.epsilon() == pytest.approx(0.2)
    from sklearn_dplssgd import PrivacyBudgetExceededError
    encoder = DPOneHotEncoder(epsilon=0.2, ledger=ledger)
    with pytest.raises(PrivacyBudgetExceededError):
        encoder.fit(_people(300))
    assert not hasattr(encoder, "categories_")


def test_reproducible_claims_nothing():
    with pytest.warns(PrivacyLeakWarning):
        encoder = DPOneHotEncoder(random_state=1, reproducible=True).fit(_people(300))
    assert encoder.epsilon_ == math.inf
    assert isinstance(encoder.dp_event_, dp_accounting.NonPrivateDpEvent)


SECRET = "Zanzibar-4471"


def test_missing_and_mixed_values_are_refused_without_echo():
    people = _people(300)
    people.loc[3, "region"] = SECRET
    with_none = people.copy()
    with_none.loc[5, "region"] = None
    with pytest.raises(ValueError, match="NaN|missing values") as error:
        DPOneHotEncoder().fit(with_none)
    assert SECRET not in str(error.value)
    with_nan = people.copy()
    with_nan["children"] = with_nan["children"].astype(float)
    with_nan.loc[5, "children"] = np.nan
    with pytest.raises(ValueError, match="NaN") as error:
        DPOneHotEncoder().fit(with_nan)
    assert SECRET not in str(error.value)
    mixed = people.copy().astype(object)
    mixed.loc[7, "region"] = 12
    with pytest.raises(TypeError, match="column 'region' of X mixes") as error:
        DPOneHotEncoder().fit(mixed)
    assert SECRET not in str(error.value)


def test_sparse_input_and_bad_parameters():
    with pytest.raises(TypeError, match="sparse"):
        DPOneHotEncoder().fit(sp.csr_matrix(np.ones((5, 2))))
    with pytest.raises(ValueError, match=re.escape("'handle_unknown' parameter")):
        DPOneHotEncoder(handle_unknown="error").fit(_people(50))
    with pytest.raises(ValueError, match=re.escape("'delta' parameter")):
        DPOneHotEncoder(delta=0.0).fit(_people(50))
    with pytest.raises(ValueError, match=re.escape("'dtype' parameter")):
        DPOneHotEncoder(dtype=str).fit(_people(50))


def test_input_is_not_mutated_and_feature_names_checked():
    people = _people(500)
    before = people.copy()
    encoder = DPOneHotEncoder().fit(people)
    encoder.transform(people)
    pd.testing.assert_frame_equal(people, before)
    with pytest.raises(ValueError, match="input_features is not equal"):
        encoder.get_feature_names_out(["a", "b", "c"])


def _released(mechanism_rng, n_runs, with_rare, epsilon):
    """Whether value 'rare' is released, on D (one row holds it) or its neighbour."""
    column = np.array(["common"] * 40 + ["rare" if with_rare else "common"], dtype=object)
    X = column.reshape(-1, 1)
    scores = []
    for _ in range(n_runs):
        encoder = DPOneHotEncoder(epsilon=epsilon, delta=1e-3,
                                  random_state=mechanism_rng.integers(2**32),
                                  reproducible=True).fit(X)
        scores.append(float("rare" in list(encoder.categories_[0])))
    return np.array(scores)


def test_audit_refutes_a_threshold_not_calibrated_to_delta(monkeypatch):
    rng = np.random.default_rng(0)
    epsilon = 1.0
    honest = epsilon_lower_bound(_released(rng, 300, True, epsilon),
                                 _released(rng, 300, False, epsilon), delta=1e-3)
    assert honest <= epsilon
    # Broken: every value present is released (no threshold at all).
    monkeypatch.setattr(_dp_encoder, "selection_numerators",
                        lambda max_count, eps, delta: ([0] + [1 << 63] * max_count, 63))
    refuted = epsilon_lower_bound(_released(rng, 300, True, epsilon),
                                  _released(rng, 300, False, epsilon), delta=1e-3)
    assert refuted > 3 * epsilon


def _checks_broken_upstream(estimator):
    # scikit-learn 1.6's check_positive_only_tag_during_fit subtracts a
    # float mean in place from the integer categories its own helper makes
    # for a categorical estimator, and fails before it calls fit; later
    # releases keep the dtype.
    if Version(sklearn.__version__) < Version("1.7"):
        return {"check_positive_only_tag_during_fit":
                "the check itself fails on integer categories (scikit-learn < 1.7)"}
    return {}


@parametrize_with_checks([DPOneHotEncoder(random_state=0, reproducible=True)],
                         expected_failed_checks=_checks_broken_upstream)
def test_sklearn_compatible_transformer(estimator, check):
    check(estimator)


def _object_column(values):
    column = np.empty((len(values), 1), dtype=object)
    for index, value in enumerate(values):
        column[index, 0] = value  # one by one: a list would be converted first
    return column


def _shown_release(X):
    encoder = _seeded(epsilon=10.0, delta=1e-3).fit(X)
    shown = [(values.dtype.str, [repr(value) for value in values.tolist()])
             for values in encoder.categories_]
    return shown, list(encoder.get_feature_names_out())


@pytest.mark.parametrize("first, second", [
    (np.zeros((200, 1)), np.vstack([[[-0.0]], np.zeros((199, 1))])),
    (np.zeros((6, 1)), np.vstack([[[-0.0]], np.zeros((5, 1))])),
    (np.vstack([np.zeros((199, 1)), [[-0.0]]]), np.vstack([[[-0.0]], np.zeros((199, 1))])),
    (np.zeros((6, 1), dtype=np.float32), np.vstack([[[-0.0]], np.zeros((5, 1))])
     .astype(np.float32)),
    (_object_column([0.0] * 200), _object_column([-0.0] + [0.0] * 199)),
    (_object_column([1] * 200), _object_column([np.int64(1)] + [1] * 199)),
    (_object_column(["a", "b"] * 100), _object_column(["b", "a"] * 100)),
    (_object_column(["a"] * 200), _object_column([np.str_("a")] + ["a"] * 199)),
], ids=["-0.0 first", "-0.0 first of a few", "-0.0 last or first", "float32", "object -0.0",
        "numpy integer", "row order", "numpy string"])
def test_no_row_decides_how_a_category_is_shown(first, second):
    assert _shown_release(first) == _shown_release(second)
    shown, names = _shown_release(second)
    assert names[0] in ("x0_0.0", "x0_1", "x0_a")


@pytest.mark.parametrize("values, match", [
    ([1] * 199 + [True], "mixes boolean and integer"),
    ([1] * 199 + [1.0], "mixes float and integer"),
    ([frozenset({1}), frozenset({2})] * 100, "values of type frozenset"),
    ([(1, 2)] * 200, "values of type tuple"),
])
def test_values_without_one_canonical_form_are_refused(values, match):
    with pytest.raises(TypeError, match=match) as error:
        DPOneHotEncoder().fit(_object_column(values))
    assert "column 0 of X" in str(error.value)


def test_released_categories_have_one_dtype_per_column():
    frame = pd.DataFrame({"city": ["b", "a"] * 100, "floor": [2, 1] * 100,
                          "score": [0.5, -0.0] * 100, "owner": [True, False] * 100})
    encoder = _seeded(epsilon=10.0, delta=1e-3).fit(frame)
    dtypes = [values.dtype for values in encoder.categories_]
    assert dtypes == [np.dtype(object), np.dtype(np.int64), np.dtype(np.float64),
                      np.dtype(bool)]
    assert [type(value) for value in encoder.categories_[0]] == [str, str]
    assert list(encoder.get_feature_names_out()) == [
        "city_a", "city_b", "floor_1", "floor_2", "score_0.0", "score_0.5", "owner_False",
        "owner_True"]
    # transform finds every representation of a released value
    rows = pd.DataFrame({"city": ["a"], "floor": [np.int64(2)], "score": [-0.0],
                         "owner": [True]})
    assert encoder.transform(rows).toarray().tolist() == [[1, 0, 0, 1, 1, 0, 0, 1]]


def test_missing_value_of_a_pandas_string_column_gets_the_encoders_advice():
    frame = pd.DataFrame({"region": pd.Series(["north", "south"] * 50, dtype="str")})
    frame.loc[7, "region"] = np.nan
    with pytest.raises(ValueError, match="does not accept missing values.*column 'region'"
                       ".*fillna"):
        DPOneHotEncoder().fit(frame)
    fitted = _seeded().fit(frame.fillna("missing"))
    with pytest.raises(ValueError, match="fillna"):
        fitted.transform(frame)
    with pytest.raises(ValueError, match="does not accept missing values.*column 0"):
        DPOneHotEncoder().fit(np.array([[1.0], [np.nan]]))
    with pytest.raises(ValueError, match="does not accept missing values"):
        DPOneHotEncoder().fit(_object_column(["a", pd.NA]))


@pytest.mark.parametrize("params, name", [
    ({"epsilon": 5e-324}, "epsilon"), ({"epsilon": 1e-308}, "epsilon"),
    ({"delta": 5e-324}, "delta"), ({"delta": 1e-308}, "delta")])
def test_a_budget_too_small_to_split_is_refused_before_charging(params, name):
    ledger = PrivacyLedger()
    with pytest.raises(ValueError, match=f"'{name}' parameter of DPOneHotEncoder is too small"):
        DPOneHotEncoder(ledger=ledger, **params).fit(np.array([["a"]] * 20))
    assert ledger.records == []


@pytest.mark.parametrize("epsilon", [math.inf, math.nan, 0.0, -1.0])
def test_non_finite_or_non_positive_epsilon_is_refused(epsilon):
    ledger = PrivacyLedger()
    with pytest.raises(ValueError, match="'epsilon' parameter of DPOneHotEncoder"):
        DPOneHotEncoder(epsilon=epsilon, ledger=ledger).fit(np.array([["a"]] * 20))
    assert ledger.records == []


@pytest.mark.parametrize("epsilon", [1e300, 1.7e308])
def test_huge_epsilon_keeps_every_value_held_by_two_rows(epsilon):
    encoder = DPOneHotEncoder(epsilon=epsilon).fit(np.array([["a"], ["a"], ["b"]] * 1))
    assert list(encoder.categories_[0]) in (["a"], ["a", "b"])
    np.testing.assert_array_equal(selection_probabilities(3, epsilon, 1e-6),
                                  selection_probabilities(3, 700.0, 1e-6))


def _exp_lower_bound(epsilon, bits, terms=400):
    """A rational below exp(epsilon): its Taylor series' first terms (all positive), rounded
    down onto 2**-bits (independent of the encoder's decimal bounds)."""
    x = fractions.Fraction(epsilon)
    total, term = fractions.Fraction(0), fractions.Fraction(1)
    for k in range(terms):
        total += term
        term = term * x / (k + 1)
    return fractions.Fraction(math.floor(total * 2 ** bits), 2 ** bits)


@pytest.mark.parametrize("epsilon, delta", [(0.01, 1e-8), (0.5, 1e-6), (3.0, 1e-3),
                                            (1.0, 1e-300)])
def test_the_dyadic_probabilities_meet_both_inequalities_exactly(epsilon, delta):
    numerators, bits = _dp_encoder.selection_numerators(100_000, epsilon, delta)
    assert bits % 63 == 0 and 2.0 ** -bits < delta * 2.0 ** -60
    assert numerators[0] == 0 and numerators[-1] == 2 ** bits
    growth = _exp_lower_bound(epsilon, bits + 128)
    delta = fractions.Fraction(delta)
    whole = 2 ** bits
    for previous, current in zip(numerators, numerators[1:]):
        p, c = fractions.Fraction(previous, whole), fractions.Fraction(current, whole)
        # The two inequalities of (epsilon, delta)-DP, with exp(epsilon) bounded
        # below (a sufficient check), on the realised dyadic probabilities; the
        # reverse ones follow from monotonicity.
        assert c <= growth * p + delta
        assert 1 - p <= growth * (1 - c) + delta
        assert previous <= current
    # Tight: pi(1) is delta, rounded down onto the lattice.
    assert numerators[1] == math.floor(delta * whole)


def test_a_broken_rounding_up_is_caught_by_the_exact_check():
    # The check above can fail: probabilities rounded up by one unit of the
    # lattice break the first inequality at count 1.
    numerators, bits = _dp_encoder.selection_numerators(10, 0.5, 1e-6)
    assert fractions.Fraction(numerators[1] + 1, 2 ** bits) > fractions.Fraction(1e-6)


class _Words:
    def __init__(self, seed=None, fixed=None):
        self.rng = np.random.default_rng(seed)
        self.fixed = fixed
        self.served = []

    def words(self, count):
        if self.fixed is not None:
            words = np.full(count, self.fixed, dtype=np.uint64)
        else:
            words = self.rng.integers(0, 2 ** 64, size=count, dtype=np.uint64)
        self.served.append(words.copy())
        return words


def test_the_dyadic_bernoulli_is_the_integer_comparison_of_its_digits():
    # The oracle, one digit: the uniform integer is the word's top 63 bits.
    rng = np.random.default_rng(31)
    numerators = [int(a) for a in rng.integers(0, 2 ** 63, size=300)] + [0, 2 ** 63, 1]
    source = _Words(32)
    result = _dp_encoder.dyadic_bernoulli(numerators, 63, source)
    drawn = [int(word) >> 1 for word in source.served[0]]
    assert list(result) == [u < a for u, a in zip(drawn, numerators)]
    assert not result[-3] and result[-2]
    # Two digits: a tie on the top digit goes on to the next one (here every
    # word's top 63 bits are 12345, so u = 12345 * 2**63 + 12345).
    for low, expected in ((678, False), (12345, False), (12346, True)):
        tie = _Words(fixed=12345 << 1)
        assert _dp_encoder.dyadic_bernoulli([(12345 << 63) | low], 126, tie)[0] == expected
        assert len(tie.served) == 2  # the second digit was drawn
    # No tie: one digit decides.
    once = _Words(fixed=12344 << 1)
    assert _dp_encoder.dyadic_bernoulli([12345 << 63], 126, once)[0]
    assert len(once.served) == 1


@pytest.mark.parametrize("probability", [fractions.Fraction(1, 3), fractions.Fraction(1, 1000),
                                         fractions.Fraction(999, 1000)])
def test_the_dyadic_bernoulli_has_its_probability(probability):
    bits = 126
    a = math.floor(probability * 2 ** bits)
    draws = _dp_encoder.dyadic_bernoulli([a] * 200_000, bits, _Words(33))
    assert stats.binomtest(int(draws.sum()), draws.size, float(probability)).pvalue > 1e-4
    # The same test refutes half the probability.
    wrong = _dp_encoder.dyadic_bernoulli([a // 2] * 200_000, bits, _Words(34))
    assert stats.binomtest(int(wrong.sum()), wrong.size, float(probability)).pvalue < 1e-6


def test_the_fit_draws_its_selection_from_the_dyadic_probabilities():
    # A seeded fit reproduced by hand: the counts, the dyadic probabilities and
    # the generator's words; so the fit uses the exact path, not a float draw.
    people = _people(3000)
    encoder = _seeded(seed=5, epsilon=0.5).fit(people)
    rng, _ = make_generator(5, reproducible=True)
    words = GeneratorWords(rng)
    epsilon_p, delta_p = 0.5 / 6, 1e-6 / 6
    columns = [np.unique(people[name].to_numpy().astype(str) if name == "region"
                         else people[name].to_numpy(), return_counts=True)
               for name in people.columns]
    numerators, bits = _dp_encoder.selection_numerators(
        max(int(c.max()) for _, c in columns), epsilon_p, delta_p)
    for (values, counts), released in zip(columns, encoder.categories_):
        chosen = [numerators[min(int(c), len(numerators) - 1)] for c in counts]
        kept = _dp_encoder.dyadic_bernoulli(chosen, bits, words)
        assert [str(v) for v in values[kept]] == [str(v) for v in released]
