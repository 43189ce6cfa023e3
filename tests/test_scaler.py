"""BoundedScaler: scaling by declared public bounds, which learns nothing from X."""

import re

import numpy as np
import pytest
import scipy.sparse as sp
from sklearn.base import clone
from sklearn.compose import ColumnTransformer
from sklearn.exceptions import NotFittedError
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import OneHotEncoder
from sklearn.utils.estimator_checks import parametrize_with_checks

from sklearn_dplssgd import BoundedScaler, DPLSSGDClassifier

pd = pytest.importorskip("pandas")


def _oracle(X, lower, upper, clip=True):
    """The documented map in plain NumPy."""
    X = np.asarray(X, dtype=np.float64)
    lower = np.broadcast_to(np.asarray(lower, dtype=np.float64), (X.shape[1],))
    upper = np.broadcast_to(np.asarray(upper, dtype=np.float64), (X.shape[1],))
    if clip:
        X = np.clip(X, lower, upper)
    return 2 * (X - lower) / (upper - lower) - 1


def _fitted_attributes(estimator):
    return {
        key: value for key, value in vars(estimator).items()
        if key.endswith("_") and not key.startswith("_")
    }


@pytest.fixture
def X():
    rng = np.random.default_rng(0)
    return rng.normal(0.0, 20.0, size=(50, 4))


# ---------------------------------------------------------------------------
# The map against a NumPy oracle


@pytest.mark.parametrize("clip", [True, False])
@pytest.mark.parametrize(
    "lower, upper",
    [
        (-10.0, 10.0),
        (0, 5),  # integers
        ([-30.0, -5.0, 0.0, -100.0], [30.0, 5.0, 1.0, 50.0]),
        (np.array([-30.0, -5.0, 0.0, -100.0]), 40.0),  # mixed per-feature and scalar
    ],
)
def test_transform_matches_oracle(X, lower, upper, clip):
    scaler = BoundedScaler(lower, upper, clip=clip).fit(X)
    Xt = scaler.transform(X)
    np.testing.assert_allclose(Xt, _oracle(X, lower, upper, clip), rtol=1e-12, atol=1e-12)
    assert Xt.dtype == np.float64
    if clip:
        assert Xt.min() >= -1.0 and Xt.max() <= 1.0
    # The inverse maps back; clipped values come back as the bounds.
    lower_b = np.broadcast_to(lower, (X.shape[1],))
    upper_b = np.broadcast_to(upper, (X.shape[1],))
    expected = np.clip(X, lower_b, upper_b) if clip else X
    np.testing.assert_allclose(scaler.inverse_transform(Xt), expected, rtol=1e-12, atol=1e-9)


def test_clipping_and_bounds_map_to_plus_minus_one():
    scaler = BoundedScaler(lower=[0.0, -2.0], upper=[10.0, 2.0]).fit(np.zeros((1, 2)))
    X = np.array([[0.0, -2.0], [10.0, 2.0], [5.0, 0.0], [-7.0, 1e6], [1e300, -1e300]])
    np.testing.assert_array_equal(
        scaler.transform(X), [[-1, -1], [1, 1], [0, 0], [-1, 1], [1, -1]]
    )
    np.testing.assert_allclose(
        scaler.inverse_transform(scaler.transform(X)),
        [[0, -2], [10, 2], [5, 0], [0, 2], [10, -2]],
    )
    unclipped = BoundedScaler(lower=0.0, upper=10.0, clip=False).fit(np.zeros((1, 1)))
    np.testing.assert_allclose(unclipped.transform([[-10.0], [20.0]]), [[-3.0], [3.0]])


def test_extreme_finite_bounds_do_not_overflow():
    # upper - lower overflows float64 here; the half-width does not.
    scaler = BoundedScaler(lower=-1.5e308, upper=1.5e308).fit(np.zeros((1, 1)))
    np.testing.assert_allclose(scaler.transform([[0.0], [7.5e307], [-1.5e308]]),
                               [[0.0], [0.5], [-1.0]])


# scikit-learn's finiteness check sums X first, which overflows on these rows.
@pytest.mark.filterwarnings("ignore:invalid value encountered in reduce:RuntimeWarning")
@pytest.mark.parametrize("seed", range(5))
def test_every_row_norm_is_at_most_sqrt_d(seed):
    rng = np.random.default_rng(seed)
    n, d = 200, 7
    # Heavy tails, huge values and values at the float64 limit.
    X = rng.standard_cauchy((n, d)) * 10.0 ** rng.integers(-5, 300, (n, d))
    X[0] = np.finfo(np.float64).max
    X[1] = -np.finfo(np.float64).max
    lower = rng.normal(0.0, 3.0, d)
    upper = lower + rng.exponential(1.0, d) + 1e-9
    for dtype in (np.float64, np.float32):
        Xd = np.clip(X, np.finfo(dtype).min, np.finfo(dtype).max).astype(dtype)
        Xt = BoundedScaler(lower, upper).fit(Xd).transform(Xd)
        norms = np.linalg.norm(Xt.astype(np.float64), axis=1)
        assert np.all(np.isfinite(Xt))
        assert np.all(norms <= np.sqrt(d) * (1 + 1e-7))


# ---------------------------------------------------------------------------
# Nothing is learned from the values of X


def test_fit_reads_no_data_value(X):
    for lower, upper in [(-1.0, 1.0), ([-1.0, 0.0, 2.0, 3.0], 10.0)]:
        a = BoundedScaler(lower, upper).fit(X)
        b = BoundedScaler(lower, upper).fit(X * 1000)
        c = BoundedScaler(lower, upper).fit(np.zeros_like(X[:1]))
        attributes = _fitted_attributes(a)
        assert set(attributes) == {"lower_", "upper_", "n_features_in_"}
        for other in (b, c):
            assert _fitted_attributes(other).keys() == attributes.keys()
            for key, value in attributes.items():
                np.testing.assert_array_equal(_fitted_attributes(other)[key], value)
        Z = np.random.default_rng(1).normal(size=(5, 4))
        np.testing.assert_array_equal(a.transform(Z), b.transform(Z))


def test_fit_reads_no_data_value_dataframe(X):
    columns = ["a", "b", "c", "d"]
    a = BoundedScaler(-1.0, 1.0).fit(pd.DataFrame(X, columns=columns))
    b = BoundedScaler(-1.0, 1.0).fit(pd.DataFrame(X * 1000, columns=columns))
    assert list(a.feature_names_in_) == columns
    for key, value in _fitted_attributes(a).items():
        np.testing.assert_array_equal(_fitted_attributes(b)[key], value)


# ---------------------------------------------------------------------------
# pandas, ColumnTransformer, Pipeline


def test_set_output_pandas(X):
    df = pd.DataFrame(X, columns=["w", "x", "y", "z"], index=np.arange(50) * 3)
    scaler = BoundedScaler(-10.0, 10.0).set_output(transform="pandas")
    out = scaler.fit_transform(df)
    assert isinstance(out, pd.DataFrame)
    assert list(out.columns) == ["w", "x", "y", "z"]
    assert out.index.equals(df.index)
    np.testing.assert_allclose(out.to_numpy(), _oracle(X, -10.0, 10.0))
    assert list(scaler.get_feature_names_out()) == ["w", "x", "y", "z"]
    assert list(BoundedScaler(0, 1).fit(X).get_feature_names_out()) == [
        "x0", "x1", "x2", "x3"
    ]


def _table(n=300, seed=0):
    rng = np.random.default_rng(seed)
    table = pd.DataFrame({
        "age": rng.integers(18, 90, n),
        "income": rng.gamma(2.0, 20_000.0, n),
        "region": rng.choice(["north", "south", "east", "west"], n),
    })
    label = ((table["age"] > 50) | (table["region"] == "north")).astype(int)
    return table, label


def test_column_transformer_pipeline_with_dplssgd():
    table, label = _table()
    preprocess = ColumnTransformer([
        ("region", OneHotEncoder(categories=[["north", "south", "east", "west"]],
                                 handle_unknown="ignore", sparse_output=False), ["region"]),
        ("numeric", BoundedScaler(lower=[0, 0], upper=[120, 200_000]), ["age", "income"]),
    ]).set_output(transform="pandas")
    model = make_pipeline(
        preprocess, DPLSSGDClassifier(epsilon=1.0, sigma=0.0, classes=[0, 1], max_iter=3)
    )
    model.fit(table, label)
    assert 0.0 <= model.score(table, label) <= 1.0
    names = list(model[0].get_feature_names_out())
    assert names[-2:] == ["numeric__age", "numeric__income"]
    assert list(model[-1].feature_names_in_) == names  # a DataFrame all the way through
    out = model[0].transform(table)
    assert isinstance(out, pd.DataFrame)
    assert out[["numeric__age", "numeric__income"]].abs().to_numpy().max() <= 1.0


# ---------------------------------------------------------------------------
# Errors


@pytest.mark.parametrize(
    "params, error, match",
    [
        ({"lower": None, "upper": 1.0}, ValueError, "needs public bounds: pass lower="),
        ({"lower": 0.0, "upper": None}, ValueError, "needs public bounds"),
        ({"lower": 1.0, "upper": 1.0}, ValueError, "lower < upper.*feature index 0"),
        ({"lower": [0, 0, 5, 0], "upper": [1, 1, 2, 1]}, ValueError,
         r"lower < upper.*feature index 2\.$"),
        ({"lower": [0, 9, 5, 0], "upper": 3}, ValueError,
         r"feature index 1 \(and 1 more\)"),
        ({"lower": np.nan, "upper": 1.0}, ValueError, "'lower'.*finite.*feature index 0"),
        ({"lower": 0.0, "upper": [1, 1, np.inf, 1]}, ValueError,
         "'upper'.*finite.*feature index 2"),
        ({"lower": [0.0, 0.0], "upper": 1.0}, ValueError,
         "'lower'.* 2 values but X has 4 features"),
        ({"lower": 0.0, "upper": [1.0] * 5}, ValueError, "'upper'.* 5 values but X has 4"),
        ({"lower": [[0.0] * 4], "upper": 1.0}, ValueError, "'lower'.*scalar or 1-D"),
        ({"lower": [], "upper": 1.0}, ValueError, "'lower'.*must not be empty"),
        ({"lower": "zero", "upper": 1.0}, TypeError, "'lower'.*real number"),
        ({"lower": 0.0, "upper": [1, "a", 2, 3]}, TypeError, "'upper'.*converted to floats"),
        ({"lower": False, "upper": True}, TypeError, "'lower'.*not booleans"),
        ({"lower": 0.0, "upper": [True] * 4}, TypeError, "'upper'.*not booleans"),
        ({"lower": [[0.0], [1.0, 2.0]], "upper": 3.0}, TypeError, "'lower'.*converted"),
        ({"lower": 0.0, "upper": 1.0, "clip": "yes"}, TypeError, "'clip'"),
        ({"lower": 0.0, "upper": 1.0, "clip": 1}, TypeError, "'clip'"),
        ({"lower": 0.0, "upper": 5e-324}, ValueError, "too close"),
    ],
)
def test_bad_parameters(X, params, error, match):
    with pytest.raises(error, match=match):
        BoundedScaler(**params).fit(X)


def test_errors_never_show_data_or_bound_values(X):
    lower = np.array([0.123456, 0.0, 0.0, 0.0])
    with pytest.raises(ValueError) as info:
        BoundedScaler(lower, [0.0, 1.0, 1.0, 1.0]).fit(X * 98765.4321)
    assert "0.123456" not in str(info.value)
    assert not re.search(r"98765", str(info.value))


def test_validation_errors_quote_no_cell(X):
    strings = X.astype(object)
    strings[3, 2] = "SECRET-123"
    fitted = BoundedScaler(lower=-10, upper=10).fit(X)
    bad_inputs = {"string cell": strings, "DataFrame": pd.DataFrame(strings),
                  "1-D": np.array([987654.321, 1.0, 2.0, 3.0])}
    for kind, bad in bad_inputs.items():
        for call in (BoundedScaler(lower=-10, upper=10).fit, fitted.transform,
                     fitted.inverse_transform, BoundedScaler(lower=-10, upper=10).fit_transform):
            with pytest.raises(ValueError) as info:
                call(bad)
            error = info.value
            assert error.__cause__ is None and error.__context__ is None
            for text in (str(error), repr(error.args)):
                assert "SECRET" not in text and "98765" not in text and "9.8765" not in text
            assert "values are not shown" in text, kind


def test_a_header_row_read_as_data_names_its_column():
    import io

    text = "age,income\n30,1000\n40,2000\n"
    headerless = pd.read_csv(io.StringIO(text), header=None)  # the header is a row
    named = pd.read_csv(io.StringIO(text))
    named["income"] = named["income"].astype(str)
    named.loc[1, "income"] = "SECRET-123"
    cases = [(headerless, "column '0'"), (headerless.to_numpy(), "column 0"),
             (headerless.to_numpy().tolist(), "column 0"), (named, "column 'income'"),
             (named.to_numpy(), "column 1")]
    for bad, where in cases:
        with pytest.raises(ValueError) as info:
            BoundedScaler(lower=0, upper=1).fit(bad)
        message = str(info.value)
        assert f"cannot be converted to a float in {where} " in message, message
        assert "SECRET" not in message and "age" not in message.replace(where, "")


@pytest.mark.parametrize("bad", [np.nan, np.inf, -np.inf])
def test_non_finite_X_is_refused(X, bad):
    scaler = BoundedScaler(-1.0, 1.0).fit(X)
    X_bad = X.copy()
    X_bad[3, 1] = bad
    for method in (BoundedScaler(-1.0, 1.0).fit, scaler.transform):
        with pytest.raises(ValueError, match="NaN|infinity"):
            method(X_bad)


def test_sparse_is_refused(X):
    sparse = sp.csr_matrix(X)
    message = "does not accept sparse input: scaling to \\[-1, 1\\] maps a zero"
    with pytest.raises(TypeError, match=message):
        BoundedScaler(-1.0, 1.0).fit(sparse)
    scaler = BoundedScaler(-1.0, 1.0).fit(X)
    for method in (scaler.transform, scaler.inverse_transform):
        with pytest.raises(TypeError, match=message):
            method(sparse)


def test_feature_count_and_fitted_checks(X):
    with pytest.raises(NotFittedError):
        BoundedScaler(-1.0, 1.0).transform(X)
    with pytest.raises(NotFittedError):
        BoundedScaler(-1.0, 1.0).inverse_transform(X)
    scaler = BoundedScaler(-1.0, 1.0).fit(X)
    with pytest.raises(ValueError, match="X has 3 features.*expecting 4"):
        scaler.transform(X[:, :3])
    with pytest.raises(ValueError, match="X has 3 features.*expecting 4"):
        scaler.inverse_transform(X[:, :3])


# ---------------------------------------------------------------------------
# dtypes and inputs left alone


def test_float32_preserved_and_ints_become_float64(X):
    X32 = X.astype(np.float32)
    scaler = BoundedScaler(-10.0, 10.0).fit(X32)
    Xt = scaler.transform(X32)
    assert Xt.dtype == np.float32
    assert scaler.inverse_transform(Xt).dtype == np.float32
    np.testing.assert_allclose(Xt, _oracle(X32, -10.0, 10.0), rtol=1e-6, atol=1e-6)
    Xi = np.arange(12).reshape(3, 4)
    assert BoundedScaler(0, 11).fit(Xi).transform(Xi).dtype == np.float64


def test_inputs_are_not_mutated(X):
    lower = np.array([-5.0, -5.0, -5.0, -5.0])
    upper = [5.0, 5.0, 5.0, 5.0]
    X_copy, lower_copy = X.copy(), lower.copy()
    scaler = BoundedScaler(lower, upper).fit(X)
    Xt = scaler.transform(X)
    scaler.inverse_transform(Xt)
    Xt_copy = Xt.copy()
    scaler.inverse_transform(Xt)
    np.testing.assert_array_equal(X, X_copy)
    np.testing.assert_array_equal(Xt, Xt_copy)
    np.testing.assert_array_equal(lower, lower_copy)
    assert upper == [5.0, 5.0, 5.0, 5.0]
    assert scaler.lower is lower and scaler.upper is upper  # parameters kept as given
    # The fitted bounds are copies: changing them does not reach the user's array.
    scaler.lower_[0] = 123.0
    assert lower[0] == -5.0
    df = pd.DataFrame(X, columns=list("abcd"))
    df_copy = df.copy()
    BoundedScaler(-1.0, 1.0).fit(df).transform(df)
    pd.testing.assert_frame_equal(df, df_copy)


def test_clone_and_params():
    scaler = BoundedScaler([0.0, 1.0], [2.0, 3.0], clip=False)
    assert scaler.get_params() == {"lower": [0.0, 1.0], "upper": [2.0, 3.0], "clip": False,
                                   "keep_zero": "auto"}
    assert clone(scaler).get_params()["clip"] is False


# ---------------------------------------------------------------------------
# scikit-learn's estimator checks (all pass: no expected failures)


@parametrize_with_checks(
    [BoundedScaler(lower=-10.0, upper=10.0), BoundedScaler(lower=-3.0, upper=5.0, clip=False)],
    expected_failed_checks=lambda estimator: {},
)
def test_sklearn_compatible_transformer(estimator, check):
    check(estimator)


def test_keep_zero_on_an_image_and_where_asked():
    """keep_zero: "auto" keeps a zero lower bound at zero on an image, and on one-hot names.

    The choice reads the bounds, the width and the column names, never a value:
    two images of one shape, one dense and one mostly zero, get one map.
    """
    import pandas as pd

    rng = np.random.default_rng(0)
    image = rng.uniform(size=(30, 400)) * (rng.uniform(size=(30, 400)) > 0.8)
    dense = rng.uniform(size=(30, 400))
    for X in (image, dense):
        out = BoundedScaler(0.0, 2.0).fit_transform(X)
        np.testing.assert_allclose(out, X / 2.0)
        np.testing.assert_allclose(BoundedScaler(0.0, 2.0).fit(X).inverse_transform(out), X)
    # A table's width, or names that are not one numbered sequence: [-1, 1].
    table = image[:, :5]
    np.testing.assert_allclose(BoundedScaler(0.0, 2.0).fit_transform(table), table - 1.0)
    named = pd.DataFrame(image, columns=[f"col_{i}_x" for i in range(400)])
    np.testing.assert_allclose(BoundedScaler(0.0, 2.0).fit_transform(named), image - 1.0)
    # Columns declared (0, 1) and named <feature>_<category> (a one-hot block)
    # keep their zero; the numeric column beside them, and the unnamed ones, do not.
    blocks = pd.DataFrame(table, columns=["age", "sex_F", "sex_M", "work_a", "work_b"])
    lower, upper = [-1.0, 0.0, 0.0, 0.0, 0.0], [1.0, 1.0, 1.0, 1.0, 1.0]
    np.testing.assert_allclose(BoundedScaler(lower, upper).fit_transform(blocks),
                               np.column_stack([np.clip(table[:, 0], -1, 1), table[:, 1:]]))
    np.testing.assert_allclose(BoundedScaler(0.0, 1.0).fit_transform(table)[:, 1:],
                               2 * table[:, 1:] - 1)
    # Asked for: every zero lower bound, and only those; clipped at 0 below.
    lower = np.array([0.0, -1.0, 0.0, 0.0, 1.0])
    X = np.array([[-3.0, -3.0, 0.5, 9.0, 1.5]])
    out = BoundedScaler(lower, 2.0, keep_zero=True).fit_transform(X)
    np.testing.assert_allclose(out, [[0.0, -1.0, 0.25, 1.0, 0.0]])
    np.testing.assert_allclose(BoundedScaler(0.0, 2.0, keep_zero=False).fit_transform(image),
                               image - 1.0)
    unclipped = BoundedScaler(lower, 2.0, keep_zero=True, clip=False).fit_transform(X)
    np.testing.assert_allclose(unclipped[0, [0, 2]], [-1.5, 0.25])
