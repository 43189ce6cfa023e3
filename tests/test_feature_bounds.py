"""Declared feature bounds (``feature_bounds``): the map, the fold, the errors.

A fit with ``feature_bounds=(lower, upper)`` must be the fit on
``BoundedScaler(lower, upper)``'s rows, with the released weights folded back
into the units of X: the same accounting, and the same margins for rows
inside the bounds.
"""

import copy
import pickle
import warnings

import numpy as np
import pytest
import scipy.sparse as sp
import sklearn

from sklearn_dplssgd import (
    BoundedScaler, DPLSSGDClassifier, DPLSSGDRegressor, PrivacyLedger,
)

LOWER = np.array([0.0, -2.0, 10.0, 0.0, -1.0])
UPPER = np.array([1.0, 6.0, 30.0, 255.0, 1.0])


@pytest.fixture(autouse=True)
def _quiet():
    with warnings.catch_warnings():
        # reproducible=True and undeclared label sets: known here.
        warnings.simplefilter("ignore")
        yield


def _table(seed, n=300, n_classes=2):
    """Rows inside LOWER..UPPER and labels that depend on them."""
    rng = np.random.default_rng(seed)
    X = LOWER + (UPPER - LOWER) * rng.uniform(size=(n, len(LOWER)))
    unit = (X - LOWER) / (UPPER - LOWER)
    score = unit @ np.array([2.0, -1.0, 1.5, 0.5, -2.0])
    y = np.digitize(score, np.quantile(score, np.linspace(0, 1, n_classes + 1)[1:-1]))
    return X, y


def _pair(estimator, X, y, bounds, fit=lambda model, X, y: model.fit(X, y)):
    """The fit with ``feature_bounds`` and the fit on BoundedScaler's rows."""
    declared = fit(sklearn.clone(estimator).set_params(feature_bounds=bounds), X, y)
    scaler = BoundedScaler(*bounds).fit(X)
    mapped = fit(sklearn.clone(estimator), scaler.transform(X), y)
    return declared, mapped, scaler


@pytest.mark.parametrize("estimator, n_classes", [
    (DPLSSGDClassifier(classes=[0, 1], epsilon=1.0), 2),
    (DPLSSGDClassifier(classes=[0, 1, 2], epsilon=2.0, sigma=1.0), 3),
    (DPLSSGDClassifier(classes=[0, 1], mechanism="output", alpha=0.01, max_iter=5), 2),
    (DPLSSGDRegressor(epsilon=1.0, target_bounds=(0.0, 2.0)), None),
])
@pytest.mark.parametrize("bounds", [(LOWER, UPPER), (-3.0, 300.0)])
def test_fit_is_the_fit_on_bounded_scaler_rows(estimator, n_classes, bounds):
    X, y = _table(0, n_classes=n_classes or 2)
    X[:5] += 400.0  # rows outside the bounds: clipped at fit, as BoundedScaler does
    y = y.astype(float) if n_classes is None else y
    estimator = estimator.set_params(random_state=3, reproducible=True)
    declared, mapped, scaler = _pair(estimator, X, y, bounds)
    inside = X[5:]
    np.testing.assert_allclose(declared._decision_values(inside),
                               mapped._decision_values(scaler.transform(inside)),
                               rtol=0, atol=1e-12)
    assert declared.coef_.shape == mapped.coef_.shape
    assert declared.intercept_.shape == mapped.intercept_.shape
    for name in ("batch_size_", "n_iter_", "eta0_", "noise_multiplier_", "sigma_"):
        assert getattr(declared, name) == getattr(mapped, name), name
    # predict does not clip: outside the bounds it is the folded linear model.
    outside = X[:5]
    expected = outside @ np.atleast_2d(declared.coef_).T + declared.intercept_
    np.testing.assert_allclose(declared._decision_values(outside), expected, rtol=1e-12)
    assert not np.allclose(declared._decision_values(outside),
                           mapped._decision_values(scaler.transform(outside)))


def test_private_fit_has_the_same_accounting():
    X, y = _table(1)
    estimator = DPLSSGDClassifier(classes=[0, 1], epsilon=0.5, random_state=0)
    declared, mapped, _ = _pair(estimator, X, y, (LOWER, UPPER))
    assert declared.epsilon_ == mapped.epsilon_ <= 0.5
    assert declared.delta_ == mapped.delta_
    assert repr(declared.dp_event_) == repr(mapped.dp_event_)


def test_float32_weights_and_symmetric_bounds_without_intercept():
    X, y = _table(2)
    X = X.astype(np.float32)
    rng = np.random.default_rng(0)
    weights = rng.uniform(0.0, 1.0, size=len(y))
    estimator = DPLSSGDClassifier(classes=[0, 1], fit_intercept=False, random_state=1,
                                  reproducible=True)
    declared, mapped, scaler = _pair(
        estimator, X, y, (-300.0, 300.0),
        fit=lambda model, X, y: model.fit(X, y, sample_weight=weights))
    assert declared.coef_.dtype == mapped.coef_.dtype == np.float32
    assert np.all(declared.intercept_ == 0.0)
    np.testing.assert_allclose(declared.decision_function(X),
                               mapped.decision_function(scaler.transform(X)), atol=1e-5)


def test_series_continue_in_the_mapped_space():
    """partial_fit (series average) and warm_start: the mapped fit's series, folded."""
    X, y = _table(3, n=400)
    halves = (slice(0, 200), slice(200, 400))

    def two_calls(model, X, y):
        for rows in halves:
            model.partial_fit(X[rows], y[rows], classes=[0, 1])
        return model

    estimator = DPLSSGDClassifier(batch_size=50, random_state=4, reproducible=True)
    declared, mapped, scaler = _pair(estimator, X, y, (LOWER, UPPER), fit=two_calls)
    assert len(declared.dp_events_) == 2
    np.testing.assert_allclose(declared.decision_function(X),
                               mapped.decision_function(scaler.transform(X)), atol=1e-12)
    np.testing.assert_allclose(declared._series_trajectory, mapped._series_trajectory,
                               atol=1e-12)
    # A pickled model continues the same series.
    restored = pickle.loads(pickle.dumps(declared))
    for model in (declared, restored):
        model.set_params(random_state=5).partial_fit(X[:100], y[:100])
    np.testing.assert_array_equal(declared.coef_, restored.coef_)

    def warm(model, X, y):
        model.set_params(max_iter=3, warm_start=True).fit(X, y)
        return model.set_params(random_state=6).fit(X, y)

    declared, mapped, scaler = _pair(DPLSSGDRegressor(random_state=4, reproducible=True),
                                     X, y.astype(float), (LOWER, UPPER), fit=warm)
    assert len(declared.dp_events_) == 2
    np.testing.assert_allclose(declared.predict(X), mapped.predict(scaler.transform(X)),
                               atol=1e-12)


def test_coef_init_is_in_the_units_of_x():
    X, y = _table(4)
    scaler = BoundedScaler(LOWER, UPPER).fit(X)
    mapped = DPLSSGDClassifier(classes=[0, 1], max_iter=2, random_state=0,
                               reproducible=True).fit(scaler.transform(X), y)
    declared = DPLSSGDClassifier(classes=[0, 1], feature_bounds=(LOWER, UPPER), max_iter=2,
                                 random_state=0, reproducible=True).fit(X, y)
    # Starting both from the same model, written in each one's units.
    again_mapped = sklearn.clone(mapped).set_params(random_state=1).fit(
        scaler.transform(X), y, coef_init=mapped.coef_, intercept_init=mapped.intercept_)
    again_declared = sklearn.clone(declared).set_params(random_state=1).fit(
        X, y, coef_init=declared.coef_, intercept_init=declared.intercept_)
    np.testing.assert_allclose(again_declared.decision_function(X),
                               again_mapped.decision_function(scaler.transform(X)),
                               atol=1e-12)


def test_defaults_read_only_public_quantities():
    """Two tables of the same shape and different values: the same choices."""
    X_a, y_a = _table(5)
    X_b = np.random.default_rng(9).uniform(size=X_a.shape)
    y_b = (X_b[:, 0] > 0.3).astype(int)
    chosen = []
    for X, y, bounds in ((X_a, y_a, (LOWER, UPPER)), (X_b, y_b, (0.0, 1.0)),
                         (X_b, y_b, None)):
        model = DPLSSGDClassifier(classes=[0, 1], feature_bounds=bounds,
                                  random_state=0).fit(X, y)
        chosen.append((model.batch_size_, model.n_iter_, model.eta0_, model.sigma_,
                       model.average_start_, tuple(model.noise_multipliers_)))
    assert chosen[0] == chosen[1] == chosen[2]


def test_inputs_are_not_modified():
    X, y = _table(6)
    lower, upper = LOWER.copy(), UPPER.copy()
    bounds = [lower, upper]
    X_before, y_before = X.copy(), y.copy()
    model = DPLSSGDClassifier(classes=[0, 1], feature_bounds=bounds, random_state=0).fit(X, y)
    model.partial_fit(X, y)
    model.decision_function(X)
    np.testing.assert_array_equal(X, X_before)
    np.testing.assert_array_equal(y, y_before)
    np.testing.assert_array_equal(lower, LOWER)
    np.testing.assert_array_equal(upper, UPPER)
    assert model.feature_bounds is bounds and bounds[0] is lower


@pytest.mark.parametrize("bounds, error, match", [
    ((LOWER[:3], UPPER[:3]), ValueError, r"feature_bounds.*lower bounds\) has 3 values but X "
                                         "has 5 features"),
    ((0.0, UPPER[:4]), ValueError, r"feature_bounds.*upper bounds\) has 4 values"),
    ((1.0, 1.0), ValueError, r"feature_bounds.*needs lower < upper.*feature index 0"),
    ((LOWER, np.where(np.arange(5) == 2, 0.0, UPPER)), ValueError,
     r"feature_bounds.*lower < upper.*feature index 2\.$"),
    ((np.nan, 1.0), ValueError, r"feature_bounds.*lower bounds\).*finite.*index 0"),
    ((0.0, [1, 1, np.inf, 1, 1]), ValueError, r"feature_bounds.*upper bounds\).*finite"),
    ((0.0, 1.0, 2.0), ValueError, r"'feature_bounds'.*pair \(lower, upper\); got 3 items"),
    ("0, 1", ValueError, r"'feature_bounds'.*pair"),
    (1.0, ValueError, r"'feature_bounds'.*pair"),
    ((0.0, "one"), TypeError, r"feature_bounds.*upper bounds\).*real number"),
    ((None, 1.0), TypeError, r"feature_bounds.*lower bounds\).*real number"),
    (([[0.0] * 5], 1.0), ValueError, r"feature_bounds.*scalar or 1-D"),
    (([0.0, 0.0], [1.0, 1.0, 1.0]), ValueError, r"feature_bounds.*2 lower and 3 upper"),
])
def test_bad_bounds_are_refused_before_the_ledger_is_charged(bounds, error, match):
    X, y = _table(7, n=50)
    ledger = PrivacyLedger()
    model = DPLSSGDClassifier(classes=[0, 1], feature_bounds=bounds, ledger=ledger)
    with pytest.raises(error, match=match) as info:
        model.fit(X, y)
    assert not ledger.records
    # No bound's value is echoed (only indices and counts).
    assert "255" not in str(info.value)


def test_settings_and_inputs_that_cannot_be_mapped():
    X, y = _table(8, n=50)
    with pytest.raises(ValueError, match="feature_bounds.*fit_intercept=True"):
        DPLSSGDClassifier(feature_bounds=(0.0, 1.0), fit_intercept=False).fit(X, y)
    with pytest.raises(ValueError, match="feature_bounds.*fit_intercept=True"):
        DPLSSGDRegressor(feature_bounds=(-UPPER, UPPER + 1.0), fit_intercept=False).fit(X, y)
    ledger = PrivacyLedger()
    model = DPLSSGDClassifier(classes=[0, 1], feature_bounds=(-1.0, 1.0), ledger=ledger)
    with pytest.raises(TypeError, match="feature_bounds needs dense X"):
        model.fit(sp.csr_matrix(X), y)
    torch = pytest.importorskip("torch")
    with sklearn.config_context(array_api_dispatch=True), pytest.raises(
            TypeError, match="feature_bounds needs NumPy input"):
        model.fit(torch.asarray(X), torch.asarray(y))
    assert not ledger.records
    assert model.__sklearn_tags__().input_tags.sparse is False
    assert DPLSSGDClassifier().__sklearn_tags__().input_tags.sparse is True


def test_a_series_keeps_its_bounds():
    X, y = _table(9, n=100)
    model = DPLSSGDClassifier(classes=[0, 1], feature_bounds=(LOWER, UPPER), random_state=0)
    model.partial_fit(X, y)
    for changed in ((LOWER, UPPER + 1.0), None):
        with pytest.raises(ValueError, match="feature_bounds differs from the bounds"):
            copy.deepcopy(model).set_params(feature_bounds=changed).partial_fit(X, y)
        with pytest.raises(ValueError, match="feature_bounds differs from the bounds"):
            copy.deepcopy(model).set_params(feature_bounds=changed, warm_start=True).fit(X, y)
    # The same bounds, written differently (lists), continue.
    model.set_params(feature_bounds=(list(LOWER), list(UPPER))).partial_fit(X, y)
    assert len(model.dp_events_) == 2


def test_dask_array_is_mapped_by_the_declared_bounds():
    # A Dask array trains on its partitions, mapped by the same bounds: with
    # full batches and no noise the steps are those of the NumPy fit.
    da = pytest.importorskip("dask.array")
    X, y = _table(10)
    estimator = DPLSSGDClassifier(classes=[0, 1], feature_bounds=(LOWER, UPPER),
                                  epsilon=np.inf, batch_size=len(X), max_iter=5,
                                  random_state=0, reproducible=True)
    from_dask = sklearn.clone(estimator).fit(da.from_array(X, chunks=(100, 5)), y)
    from_numpy = sklearn.clone(estimator).fit(X, y)
    np.testing.assert_allclose(from_dask.coef_, from_numpy.coef_, rtol=1e-9, atol=1e-12)
    np.testing.assert_allclose(from_dask.intercept_, from_numpy.intercept_, rtol=1e-9,
                               atol=1e-12)


def test_privacy_report_lists_the_bounds_as_public():
    X, y = _table(11, n=100)
    scalar = DPLSSGDClassifier(classes=[0, 1], feature_bounds=(0, 255)).fit(X, y)
    assert "the declared feature bounds (0, 255)" in scalar.privacy_report()
    per_feature = DPLSSGDRegressor(feature_bounds=(LOWER, UPPER), target_bounds=(0, 1)).fit(
        X, y.astype(float))
    assert "feature bounds (feature_bounds, per feature)" in per_feature.privacy_report()
    assert "feature bounds" not in DPLSSGDClassifier(classes=[0, 1]).fit(X, y).privacy_report()


def _pixels(seed, n=200, side=20, background=0.85):
    """Image rows (20 x 20, an image's width) in [0, 1], mostly zero, two classes."""
    rng = np.random.default_rng(seed)
    X = rng.uniform(size=(n, side * side)) * (rng.uniform(size=(n, side * side)) > background)
    y = (X[:, : side * side // 2].sum(axis=1) > X[:, side * side // 2:].sum(axis=1)).astype(int)
    return X, y


def test_image_columns_keep_their_zero():
    """Declared (0, upper) on an image: rows / upper, not mapped to [-1, 1].

    The fit with the bounds declared is the fit on ``X / upper`` undeclared
    (the same margins for rows inside the bounds), and a background pixel
    stays 0 in the rows training sees.
    """
    X, y = _pixels(0)
    estimator = DPLSSGDClassifier(classes=[0, 1], epsilon=1.0, random_state=0,
                                  reproducible=True)
    declared = sklearn.clone(estimator).set_params(feature_bounds=(0.0, 255.0)).fit(X * 255, y)
    plain = sklearn.clone(estimator).fit(X, y)
    np.testing.assert_allclose(declared.decision_function(X * 255), plain.decision_function(X),
                               rtol=1e-6, atol=1e-6)
    mapping = declared._feature_map
    assert mapping.zero_kept.all()
    rows = mapping.rows(np.array([[0.0] * 399 + [300.0], [-5.0] * 400]))
    np.testing.assert_array_equal(rows[0], [0.0] * 399 + [1.0])
    np.testing.assert_array_equal(rows[1], 0.0)


def test_a_table_and_other_bounds_keep_the_map_to_the_unit_interval():
    """Only ordered columns with a zero lower bound keep their zero.

    A table of the same values (named columns), a declared order with bounds
    that do not start at 0, and a per-column mix: each column as decided.
    """
    import pandas as pd

    X, y = _pixels(1)
    estimator = DPLSSGDClassifier(classes=[0, 1], random_state=0, max_iter=2)
    # Names that share no "<feature>_" part: no one-hot block either.
    frame = pd.DataFrame(X, columns=[f"col{chr(97 + i % 26)}{i // 26}" for i in range(400)])
    table = sklearn.clone(estimator).set_params(feature_bounds=(0.0, 1.0)).fit(frame, y)
    assert not table._feature_map.zero_kept.any()
    pixels = pd.DataFrame(X, columns=[f"pixel{i}" for i in range(1, 401)])
    image = sklearn.clone(estimator).set_params(feature_bounds=(0.0, 1.0)).fit(pixels, y)
    assert image._feature_map.zero_kept.all()
    lower = np.where(np.arange(5) % 2 == 0, 0.0, -1.0)
    mixed = DPLSSGDClassifier(classes=[0, 1], max_iter=2, sigma="ordered",
                              feature_bounds=(lower, 2.0)).fit(X[:, :5] * 2, y)
    np.testing.assert_array_equal(mixed._feature_map.zero_kept, lower == 0)
    np.testing.assert_allclose(mixed._feature_map.center, np.where(lower == 0, 0.0, 0.5))
    unordered = DPLSSGDClassifier(classes=[0, 1], max_iter=2,
                                  feature_bounds=(lower, 2.0)).fit(X[:, :5] * 2, y)
    assert not unordered._feature_map.zero_kept.any()


def _survey(seed, n=400):
    """A table: a numeric column (age, 17 to 90) and two one-hot blocks, named by pandas."""
    import pandas as pd

    rng = np.random.default_rng(seed)
    age = rng.uniform(17, 90, size=n)
    work = rng.integers(0, 4, size=n)
    sex = rng.integers(0, 2, size=n)
    y = ((age > 40) + (work == 2) + sex + rng.uniform(size=n) > 1.8).astype(int)
    frame = pd.get_dummies(pd.DataFrame({"work class": work.astype(str), "sex": sex.astype(str)}),
                           dtype=float)
    frame.insert(0, "age", age)
    lower = np.r_[17.0, np.zeros(frame.shape[1] - 1)]
    upper = np.r_[90.0, np.ones(frame.shape[1] - 1)]
    return frame, y, lower, upper


def test_one_hot_columns_keep_their_zero():
    """Declared (0, 1) and named ``<feature>_<category>``: kept in [0, 1]; age mapped.

    The declared fit is the undeclared fit on the rows with age mapped to
    [-1, 1] and the indicators left as they are; the map to [-1, 1] of every
    column (the rule for tables before) trains another model, and so do
    the same rows unnamed (no public sign of a one-hot block).
    """
    frame, y, lower, upper = _survey(0)
    estimator = DPLSSGDClassifier(classes=[0, 1], epsilon=1.0, random_state=0,
                                  reproducible=True, max_iter=20)
    declared = sklearn.clone(estimator).set_params(feature_bounds=(lower, upper)).fit(frame, y)
    np.testing.assert_array_equal(declared._feature_map.zero_kept, lower == 0)
    rows = frame.to_numpy().copy()
    rows[:, 0] = (rows[:, 0] - 53.5) / 36.5
    plain = sklearn.clone(estimator).fit(rows, y)
    np.testing.assert_allclose(declared.decision_function(frame), plain.decision_function(rows),
                               rtol=1e-5, atol=1e-5)
    centred = sklearn.clone(estimator).fit(
        BoundedScaler(lower, upper, keep_zero=False).fit_transform(frame.to_numpy()), y)
    assert np.abs(declared.coef_[:, 1:] - 2 * centred.coef_[:, 1:]).max() > 1e-2
    unnamed = sklearn.clone(estimator).set_params(feature_bounds=(lower, upper)).fit(
        frame.to_numpy(), y)
    assert not unnamed._feature_map.zero_kept.any()
    # A pipeline's BoundedScaler makes the same choice from the same names.
    np.testing.assert_array_equal(BoundedScaler(lower, upper).fit_transform(frame), rows)


@pytest.mark.parametrize("columns, upper, kept", [
    (["a_x", "a_y", "b_x", "b_y", "c"], 1.0, [1, 1, 1, 1, 0]),
    # ColumnTransformer's prefix is no feature; a feature's categories are.
    (["num__a", "num__b", "cat__s_M", "cat__s_F", "cat__t"], 1.0, [0, 0, 1, 1, 0]),
    (["x0_0", "x0_1", "x0_2", "x1_a", "x1_b"], 1.0, [1, 1, 1, 1, 1]),
    # Positions along an axis, not categories; and bounds other than (0, 1).
    (["t_0", "t_1", "t_2", "t_3", "t_4"], 1.0, [0, 0, 0, 0, 0]),
    (["a_x", "a_y", "b_x", "b_y", "c"], 2.0, [0, 0, 0, 0, 0]),
])
def test_which_names_mark_a_one_hot_block(columns, upper, kept):
    import pandas as pd

    X = np.random.default_rng(1).integers(0, 2, size=(40, 5)).astype(float)
    model = DPLSSGDClassifier(classes=[0, 1], max_iter=1, feature_bounds=(0.0, upper)).fit(
        pd.DataFrame(X, columns=columns), X[:, 0].astype(int))
    np.testing.assert_array_equal(model._feature_map.zero_kept, np.array(kept, dtype=bool))


def test_the_zero_choice_reads_no_row():
    """Two image tables of the same shape, one dense and one mostly zero: the same map."""
    X_sparse, y = _pixels(2, background=0.95)
    X_dense = np.random.default_rng(3).uniform(size=X_sparse.shape)
    maps = [DPLSSGDClassifier(classes=[0, 1], max_iter=1, feature_bounds=(0.0, 1.0))
            .fit(X, y)._feature_map for X in (X_sparse, X_dense)]
    assert maps[0].same_as(maps[1])
    np.testing.assert_array_equal(maps[0].center, maps[1].center)
    np.testing.assert_array_equal(maps[0].half_width, maps[1].half_width)
    # A table with one-hot names: the same map for any values of the same schema.
    frames = [_survey(seed)[0] for seed in (0, 1)]
    frames[1].iloc[:, 1:] = np.random.default_rng(2).uniform(size=frames[1].iloc[:, 1:].shape)
    maps = [DPLSSGDClassifier(classes=[0, 1], max_iter=1, feature_bounds=(lower, upper))
            .fit(frame, np.arange(len(frame)) % 2)._feature_map
            for frame, lower, upper in [(f,) + _survey(0)[2:] for f in frames]]
    assert maps[0].same_as(maps[1]) and maps[0].zero_kept[1:].all()


def test_a_map_that_ignores_the_zero_is_told_apart():
    """The audit of the rule: the map to [-1, 1] (the rule before) trains another model.

    Declared (0, 1) on an image equals the undeclared fit on the same rows,
    and differs from the fit on ``BoundedScaler``'s rows, where the
    background is -1: a map that ignored the zero would fail the first check.
    """
    X, y = _pixels(4)
    estimator = DPLSSGDClassifier(classes=[0, 1], random_state=0, reproducible=True, max_iter=3)
    declared = sklearn.clone(estimator).set_params(feature_bounds=(0.0, 1.0)).fit(X, y)
    plain = sklearn.clone(estimator).fit(X, y)
    centred = sklearn.clone(estimator).fit(
        BoundedScaler(0.0, 1.0, keep_zero=False).fit_transform(X), y)
    np.testing.assert_allclose(declared.coef_, plain.coef_, rtol=1e-6, atol=1e-9)
    assert np.abs(declared.coef_ - 2 * centred.coef_).max() > 1e-2
    # BoundedScaler's "auto" keeps the same zero: a pipeline trains the same model.
    scaled = sklearn.clone(estimator).fit(BoundedScaler(0.0, 1.0).fit_transform(X), y)
    np.testing.assert_allclose(scaled.coef_, plain.coef_, rtol=1e-6, atol=1e-9)


def test_the_clipped_warning_gives_advice_that_helps():
    """Declared bounds on an image do not warn; a background mapped to -1 is named.

    Before, the fit with ``feature_bounds`` was told to map its rows to
    [-1, 1] with BoundedScaler, which the parameter had just done. Rows
    mapped to [-1, 1] on purpose (``keep_zero=False``) are told what costs.
    """
    X, y = _pixels(5, n=300)
    y = (X[:, :133].sum(axis=1) > X[:, 267:].sum(axis=1)).astype(int) + (
        X[:, 133:267].sum(axis=1) > X[:, :133].sum(axis=1)).astype(int)

    def clipped(rows, **params):
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            DPLSSGDClassifier(classes=[0, 1, 2], max_iter=1, **params).fit(rows, y)
        return [str(w.message) for w in caught if "clipped" in str(w.message)]

    assert clipped(X, feature_bounds=(0.0, 1.0)) == []
    assert clipped(X) == []
    (message,) = clipped(BoundedScaler(0.0, 1.0, keep_zero=False).fit_transform(X))
    assert "Keep such entries at 0" in message and "map them to [-1, 1]" not in message
    (message,) = clipped(X * 255)
    assert "feature_bounds=(lower, upper)" in message


def test_a_series_keeps_the_zero_it_started_with():
    """Declaring the columns ordered mid-series would change the map: refused."""
    X, y = _table(6)
    model = DPLSSGDClassifier(classes=[0, 1], feature_bounds=(LOWER, UPPER), sigma=0.0)
    model.partial_fit(X, y)
    assert not model._feature_map.zero_kept.any()
    model.set_params(sigma="ordered")
    with pytest.raises(ValueError, match="sigma='ordered' changed which zero"):
        model.partial_fit(X, y)
