"""The "auto" defaults: public quantities only, and the warnings around them."""

import math
import warnings

import numpy as np
import scipy.sparse as sp
import pytest
from sklearn.model_selection import cross_val_score

from sklearn_dplssgd import Adam, DPLSSGDClassifier, DPLSSGDRegressor, Momentum, PrivacyLeakWarning
from sklearn_dplssgd import calibrate_noise
from sklearn_dplssgd._training._defaults import (
    ASSUMED_CALLS,
    averaging_tail,
    resolve_average_start,
    resolve_delta,
    resolve_eta0,
    resolve_schedule,
    weight_noise_target,
)

RESOLVED = ("batch_size_", "n_iter_", "n_steps_", "sample_rate_", "eta0_", "delta_",
            "noise_multiplier_", "average_start_", "epsilon_", "sigma_")


def _resolved(model):
    return {name: getattr(model, name) for name in RESOLVED}


@pytest.mark.parametrize("n_rows", [40, 300])
def test_defaults_depend_on_public_quantities_only(n_rows):
    # Two data sets of the same shape with unrelated values (and scales)
    # resolve every "auto" setting identically.
    rng = np.random.default_rng(3)
    X_a, X_b = rng.uniform(-1, 1, (n_rows, 6)), rng.normal(0, 50, (n_rows, 6))
    y_a, y_b = rng.integers(0, 3, n_rows), np.sort(rng.integers(0, 3, n_rows))
    fits = []
    for X, y in ((X_a, y_a), (X_b, y_b)):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            fits.append(DPLSSGDClassifier(epsilon=1.0, classes=[0, 1, 2], random_state=0,
                                          reproducible=True, max_iter=3 if n_rows > 100
                                          else "auto").fit(X, y))
    assert _resolved(fits[0]) == _resolved(fits[1])
    regs = [DPLSSGDRegressor(epsilon=2.0, target_bounds=(0, 10)).fit(X, X[:, 0] * scale)
            for X, scale in ((X_a, 1.0), (X_b, 1000.0))]
    assert _resolved(regs[0]) == _resolved(regs[1])


def test_add_remove_defaults_come_from_public_n_samples():
    # Neighbours of 300 and 301 rows: everything resolved from the declared count.
    rng = np.random.default_rng(4)
    X, y = rng.uniform(-1, 1, (301, 5)), rng.integers(0, 2, 301)
    fits = [DPLSSGDClassifier(neighboring="add_remove", public_n_samples=300, max_iter=2,
                              classes=[0, 1]).fit(X[:n], y[:n]) for n in (300, 301)]
    assert _resolved(fits[0]) == _resolved(fits[1])


def test_auto_parameters_stay_auto_and_are_reported():
    rng = np.random.default_rng(5)
    X, y = rng.uniform(-1, 1, (120, 3)), rng.integers(0, 2, 120)
    clf = DPLSSGDClassifier(classes=[0, 1])
    before = clf.get_params()
    clf.fit(X, y)
    assert clf.get_params() == before
    assert all(before[name] == "auto"
               for name in ("delta", "batch_size", "max_iter", "eta0", "average"))
    # Full batches on a small table, and at least 1,000 steps.
    assert clf.batch_size_ == 120 and clf.sample_rate_ == 1.0 and clf.n_steps_ >= 1000
    # 3 features: the classifier averages the last half of the steps.
    assert clf.delta_ == 1e-5 and clf.average_start_ == clf.n_steps_ - clf.n_steps_ // 2


@pytest.mark.parametrize("n_features, classifier_start", [(3, 50), (12, 74), (64, 89),
                                                          (300, 93)])
def test_each_estimator_averages_its_own_tail(n_features, classifier_start):
    # "auto" and True: the classifier's tail shrinks with the width of X (its
    # steps shorten with it: a half up to 3 features, a sixteenth from 196),
    # the regressor averages the last half whatever the width.
    rng = np.random.default_rng(11)
    X = rng.uniform(-1, 1, (300, n_features))
    for average in ("auto", True):
        clf = DPLSSGDClassifier(classes=[0, 1], average=average, max_iter=10,
                                batch_size=30).fit(X, (X[:, 0] > 0).astype(int))
        reg = DPLSSGDRegressor(average=average, max_iter=10, batch_size=30).fit(X, X[:, 0])
        assert clf.n_steps_ == reg.n_steps_ == 100
        assert clf.average_start_ == classifier_start and reg.average_start_ == 50


def test_averaging_tail_follows_the_weight_noise_within_bounds():
    shares = [averaging_tail(d, 4.0) for d in (1, 3, 4, 12, 48, 196, 784, 10**6)]
    assert shares[:2] == [0.5, 0.5] and shares[-3:] == [1 / 16] * 3
    assert all(a >= b for a, b in zip(shares, shares[1:]))
    assert averaging_tail(48, 4.0) == pytest.approx(weight_noise_target(48, 4.0) / 4)


def test_schedule_rule():
    for n in (1, 10, 256, 257, 1000, 8000, 8192, 10_000, 60_000, 10**6):
        batch_size, epochs = resolve_schedule("auto", "auto", n)
        steps = epochs if batch_size >= n else math.ceil(epochs * n / batch_size)
        assert batch_size == min(n, max(256, math.ceil(n / 32)))
        assert steps >= 1000 and batch_size / n >= 1 / 32
        assert steps < 1000 + math.ceil(n / batch_size)  # no more than one extra epoch
    assert resolve_schedule(64, 5, 1000) == (64, 5)


def test_eta0_rule_sets_the_accumulated_noise():
    # eta0 * (z C / b) * sqrt(T) = 3.5 / sqrt(30) for a constant rate, below the cap.
    common = dict(learning_rate="constant", power_t=0.5, clip_norm=2.0, batch_size=256,
                  max_step=4.0, n_features=30)
    eta0 = resolve_eta0("auto", noise_multipliers=np.full(1000, 8.0), alpha=1e-4, **common)
    assert eta0 * 8.0 * 2.0 / 256 * math.sqrt(1000) == pytest.approx(3.5 / math.sqrt(30))
    assert resolve_eta0("auto", noise_multipliers=np.zeros(1000), alpha=1e-4, **common) == 2.0
    assert resolve_eta0("auto", noise_multipliers=np.zeros(1000), alpha=0.5,
                        **{**common, "clip_norm": 1.0}) == 2.0
    assert resolve_eta0(0.3, noise_multipliers=np.ones(1), alpha=0.0,
                        **{**common, "clip_norm": 1.0, "batch_size": 1}) == 0.3


def test_weight_noise_target_falls_with_the_width_within_bounds():
    # A prediction's noise is (accumulated weight noise) . x, of norm up to
    # sqrt(d) for features in [-1, 1]: the target is 1.75 sqrt(max_step / d).
    targets = [weight_noise_target(d, 4.0) for d in (1, 3, 6, 30, 64, 196, 784, 10**6)]
    assert targets[:2] == [2.0, 2.0] and targets[-2:] == [0.25, 0.25]
    assert targets[3] == pytest.approx(3.5 / math.sqrt(30))
    assert targets[4] == pytest.approx(3.5 / 8)
    assert all(a >= b for a, b in zip(targets, targets[1:]))
    # The regressor (noise-free step 1): half the classifier's target, floor 1/16.
    for d in (4, 30, 64):
        assert weight_noise_target(d, 1.0) == pytest.approx(weight_noise_target(d, 4.0) / 2)
    assert weight_noise_target(10**6, 1.0) == 1.0 / 16


@pytest.mark.parametrize("optimizer", [None, Momentum(momentum=0.5), Adam()])
def test_eta0_follows_the_weight_noise_target(optimizer):
    common = dict(learning_rate="constant", power_t=0.5, noise_multipliers=np.full(500, 4.0),
                  clip_norm=1.0, batch_size=100, alpha=0.0, max_step=4.0,
                  optimizer=optimizer)
    widths = (4, 16, 64, 784)
    eta0 = {d: resolve_eta0("auto", n_features=d, **common) for d in widths}
    for d in widths[1:]:
        assert eta0[d] / eta0[4] == pytest.approx(
            weight_noise_target(d, 4.0) / weight_noise_target(4, 4.0))
    # SGD's noise-free cap is the same whatever d (Adam's step ignores the
    # gradient's scale: no cap).
    if not isinstance(optimizer, Adam):
        assert resolve_eta0("auto", n_features=4, **{**common, "noise_multipliers": np.zeros(5)}) \
            == resolve_eta0("auto", n_features=40, **{**common, "noise_multipliers": np.zeros(5)})


def test_fitted_eta0_follows_the_width_of_x():
    # The same rows' count and privacy with 4 or 16 columns: only d differs.
    rng = np.random.default_rng(12)
    y = rng.integers(0, 2, 80)
    fitted = {d: DPLSSGDClassifier(classes=[0, 1], max_iter=3, random_state=0, epsilon=0.1,
                                   reproducible=True).fit(rng.uniform(-1, 1, (80, d)), y)
              for d in (4, 16)}
    assert fitted[4].noise_multiplier_ == fitted[16].noise_multiplier_
    assert fitted[4].eta0_ == pytest.approx(fitted[16].eta0_ * 2.0)


def test_average_true_averages_the_tail_like_auto():
    # Averaging from the first step drags the model back towards its start;
    # True and "auto" both average the last half, an int sets the start.
    for n_steps, start in ((1, 0), (2, 1), (4, 2), (1000, 500), (1001, 500)):
        assert resolve_average_start(True, n_steps) == resolve_average_start("auto", n_steps) \
            == start
    # The share is a parameter (the classifier passes an eighth, see _defaults).
    for n_steps, start in ((1, 0), (2, 1), (4, 3), (1000, 750), (1001, 750)):
        assert resolve_average_start(True, n_steps, tail=0.25) == start
    assert resolve_average_start(False, 1000) is None
    assert resolve_average_start(10, 1000) == 10 and resolve_average_start(5000, 1000) == 999


def test_series_rule_takes_several_steps_a_call_and_bounds_the_series():
    # A call of a series takes up to 64 steps of at least 16 rows.
    for n in (1, 10, 100, 1000, 10**5):
        batch_size, epochs = resolve_schedule("auto", 1, n, partial=True)
        assert epochs == 1 and batch_size == min(n, max(16, math.ceil(n / 64)))
        assert math.ceil(n / batch_size) <= 64
    assert resolve_schedule(50, 1, 1000, partial=True) == (50, 1)
    # The first call's eta0 bounds the noise of ASSUMED_CALLS such calls.
    common = dict(learning_rate="constant", power_t=0.5, noise_multipliers=np.full(7, 3.0),
                  clip_norm=1.0, batch_size=16, alpha=1e-4, max_step=4.0, n_features=30)
    eta0 = resolve_eta0("auto", partial=True, **common)
    series_noise = eta0 * 3.0 / 16 * math.sqrt(7 * ASSUMED_CALLS)
    assert series_noise == pytest.approx(weight_noise_target(30, 4.0))
    assert eta0 == pytest.approx(resolve_eta0("auto", **common) / math.sqrt(ASSUMED_CALLS))


@pytest.mark.parametrize("n_rows", [10, 10**7])
@pytest.mark.parametrize("epsilon", [0.01, 100.0])
@pytest.mark.parametrize("partial", [False, True])
def test_rule_stays_sane_at_the_extremes(n_rows, epsilon, partial):
    # Every setting finite and in range, from the public quantities alone.
    batch_size, epochs = resolve_schedule("auto", 1 if partial else "auto", n_rows,
                                          partial=partial)
    n_steps = math.ceil(epochs * n_rows / batch_size)
    assert 1 <= batch_size <= n_rows and epochs >= 1
    assert n_steps <= (64 if partial else 1000 + math.ceil(n_rows / batch_size))
    assert epochs * n_rows <= max(1000 * n_rows if n_rows < 256 else 33 * n_rows, 1)
    delta = resolve_delta("auto", n_rows)
    assert 0 < delta <= 1e-5 and delta < 1 / n_rows
    z = calibrate_noise(epsilon, delta, sample_rate=min(1.0, batch_size / n_rows),
                        n_steps=n_steps).noise_multiplier
    for d in (1, 784, 10**5):
        eta0 = resolve_eta0("auto", learning_rate="constant", power_t=0.5,
                            noise_multipliers=np.full(n_steps, z), clip_norm=1.0,
                            batch_size=batch_size, alpha=1e-4, max_step=4.0, n_features=d,
                            partial=partial)
        assert 0 < eta0 <= 4.0 and math.isfinite(eta0)
        noise = (eta0 * z / batch_size * math.sqrt(n_steps)
                 * (math.sqrt(ASSUMED_CALLS) if partial else 1))
        assert noise <= weight_noise_target(d, 4.0) * (1 + 1e-9)


def test_noise_free_step_is_shorter_for_the_regressor():
    # A regressor's weights are of order one (targets scaled by target_bounds):
    # the classifier's noise-free step of 4 would oscillate there.
    rng = np.random.default_rng(11)
    X = rng.uniform(-1, 1, (300, 5))
    y = X @ np.array([0.3, -0.2, 0.1, 0.0, 0.25])
    kwargs = dict(epsilon=math.inf, clip_norm=2.0, random_state=0)
    regressor = DPLSSGDRegressor(**kwargs).fit(X, y)
    classifier = DPLSSGDClassifier(**kwargs).fit(X, y > 0)
    assert regressor.eta0_ == pytest.approx(0.5)
    assert classifier.eta0_ == pytest.approx(2.0)
    assert regressor.score(X, y) > 0.9


def test_delta_auto_is_below_one_over_n_and_never_warns():
    for n in (1, 2, 10, 1000, 99_999, 10**5, 10**6, 10**9):
        assert resolve_delta("auto", n) < 1.0 / n
        assert resolve_delta("auto", n) <= 1e-5
    rng = np.random.default_rng(6)
    X, y = rng.uniform(-1, 1, (50, 3)), rng.uniform(-1, 1, 50)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        # Declared target bounds: 50 rows are too few to learn a range.
        DPLSSGDRegressor(max_iter=2, target_bounds=(-1, 1)).fit(X, y)
    assert not [w for w in caught if "delta" in str(w.message)]
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        DPLSSGDRegressor(max_iter=2, delta=0.02, target_bounds=(-1, 1)).fit(X, y)
    assert [w for w in caught if w.category is PrivacyLeakWarning and "delta" in str(w.message)]


def test_average_is_post_processing():
    rng = np.random.default_rng(7)
    X, y = rng.uniform(-1, 1, (200, 4)), rng.uniform(-1, 1, 200)
    # Targets in the declared bounds (identity map): the steps alone.
    fits = {average: DPLSSGDRegressor(average=average, max_iter=40, random_state=1,
                                      target_bounds=(-1, 1), reproducible=True).fit(X, y)
            for average in (False, True, 3, "auto")}
    events = {str(fit.dp_event_) for fit in fits.values()}
    assert len(events) == 1  # the same release whatever is averaged
    assert fits[False].average_start_ is None
    n_steps = fits[True].n_steps_
    assert fits[True].average_start_ == fits["auto"].average_start_ == n_steps - n_steps // 2
    assert fits[3].average_start_ == 3
    assert not np.allclose(fits[False].coef_, fits[True].coef_)


def test_mostly_clipped_warning_names_the_remedy():
    rng = np.random.default_rng(8)
    X = rng.uniform(0, 1000, (300, 4))
    y = X @ [1.0, 2.0, 0.0, 0.0]
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        reg = DPLSSGDRegressor(max_iter=1, random_state=0, reproducible=True).fit(X, y)
    messages = [str(w.message) for w in caught if "clipped" in str(w.message)]
    assert len(messages) == 1
    # The targets are mapped to [-1, 1] by the range the fit learns: only the
    # features are named.
    assert "BoundedScaler" in messages[0] and "target_bounds" not in messages[0]
    # The warning changes nothing in the fit.
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        again = DPLSSGDRegressor(max_iter=1, random_state=0, reproducible=True).fit(X, y)
    np.testing.assert_array_equal(reg.coef_, again.coef_)
    # Unit-scale data do not warn.
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        DPLSSGDRegressor(max_iter=1).fit(X / 1000, y / 3000)
    assert not [w for w in caught if "clipped" in str(w.message)]


def _warning_counts(action, **filter_kwargs):
    """How often each warning cause shows: three fits, then a 3-fold cross-validation."""
    rng = np.random.default_rng(0)
    X, y = rng.uniform(-1, 1, (90, 3)), np.arange(90) % 2
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter(action, **filter_kwargs)
        for _ in range(3):
            DPLSSGDClassifier(max_iter=2, random_state=1).fit(X, y)  # classes and seed
        cross_val_score(DPLSSGDClassifier(max_iter=2, delta=0.5, classes=[0, 1]), X, y, cv=3)
    text = "\n".join(str(w.message) for w in caught)
    return {cause: text.count(cause)
            for cause in ("classes was not given", "random_state is not used",
                          "delta is not below")}


def test_the_users_warning_filters_decide_how_often_a_warning_shows():
    # "always": every fit that has the cause says so (the library keeps no
    # record of its own).
    assert _warning_counts("always") == {
        "classes was not given": 3, "random_state is not used": 3, "delta is not below": 3}
    # A category ignored is not shown; the others still are.
    assert _warning_counts("ignore", category=PrivacyLeakWarning) == {
        "classes was not given": 0, "random_state is not used": 3, "delta is not below": 0}


@pytest.mark.parametrize("estimator, n_features, sparse, expected", [
    # Dense and unnamed: smoothed only at an image's width (s * s or
    # 3 s * s columns, s >= 16, not a power of two), by the estimator's levels.
    (DPLSSGDClassifier, 4, False, 0.0),
    (DPLSSGDClassifier, 13, False, 0.0),
    (DPLSSGDClassifier, 49, False, 0.0),
    (DPLSSGDClassifier, 64, False, 0.0),
    (DPLSSGDClassifier, 99, False, 0.0),
    (DPLSSGDClassifier, 100, False, 0.0),
    (DPLSSGDClassifier, 106, False, 0.0),
    (DPLSSGDClassifier, 192, False, 0.0),
    (DPLSSGDClassifier, 400, False, 1.0),
    (DPLSSGDClassifier, 768, False, 1.0),
    (DPLSSGDClassifier, 64, True, 0.0),
    (DPLSSGDClassifier, 196, True, 0.0),
    (DPLSSGDRegressor, 4, False, 0.0),
    (DPLSSGDRegressor, 64, False, 0.0),
    (DPLSSGDRegressor, 400, False, 1.0),
    (DPLSSGDRegressor, 196, True, 0.0),
])
def test_auto_sigma_follows_the_public_shape(estimator, n_features, sparse, expected):
    rng = np.random.default_rng(9)
    X = rng.uniform(-1, 1, (60, n_features)) / np.sqrt(n_features)
    if sparse:
        X = sp.csr_matrix(np.where(np.abs(X) > 0.05, X, 0.0))
    y = rng.integers(0, 2, 60) if estimator is DPLSSGDClassifier else rng.uniform(-1, 1, 60)
    # The regressor's targets in declared bounds: 60 rows are too few to learn them.
    extra = {"classes": [0, 1]} if estimator is DPLSSGDClassifier else {
        "target_bounds": (-1, 1)}
    fitted = estimator(max_iter=2, random_state=0, reproducible=True, **extra).fit(X, y)
    assert estimator().sigma == "auto" and fitted.sigma_ == expected
    # "auto" trains exactly as the value it resolves to.
    explicit = estimator(sigma=expected, max_iter=2, random_state=0, reproducible=True,
                         **extra).fit(X, y)
    np.testing.assert_array_equal(fitted.coef_, explicit.coef_)
    assert explicit.sigma_ == expected
    # An explicit sigma is kept whatever the shape.
    assert estimator(sigma=0.5, max_iter=1, **extra).fit(X, y).sigma_ == 0.5


def test_auto_sigma_reads_no_value_of_the_rows():
    # The same shape and format give the same sigma_, whatever the values.
    rng = np.random.default_rng(10)
    for scale in (1e-3, 1.0):
        X = rng.uniform(-scale, scale, (50, 784))
        fitted = DPLSSGDClassifier(classes=[0, 1], max_iter=1).fit(X, rng.integers(0, 2, 50))
        assert fitted.sigma_ == 1.0
    with pytest.raises(ValueError, match="sigma"):
        DPLSSGDClassifier(sigma="smooth", classes=[0, 1]).fit(X, rng.integers(0, 2, 50))


def _named_fit(names, sigma="auto", estimator=DPLSSGDClassifier):
    import pandas as pd
    rng = np.random.default_rng(11)
    X = pd.DataFrame(rng.uniform(0, 1, (40, len(names))), columns=names)
    if estimator is DPLSSGDClassifier:
        return estimator(classes=[0, 1], max_iter=1, sigma=sigma).fit(X, rng.integers(0, 2, 40))
    return estimator(max_iter=1, sigma=sigma, target_bounds=(-1, 1)).fit(
        X, rng.uniform(-1, 1, 40))


@pytest.mark.parametrize("names, expected", [
    # A table's or an encoder's names: no order, even at an image's width
    # (400 = 20 x 20).
    ([f"sex_{i}" if i % 2 else f"race_{i}" for i in range(400)], 0.0),
    ([f"x0_{i}" for i in range(400)], 0.0),  # one-hot columns of the unnamed x0
    ([f"cat__col_{i}" for i in range(400)], 0.0),  # a ColumnTransformer's prefix
    ([f"pixel{i + 1}" for i in range(400)][::-1], 0.0),  # numbered, not in order
    # One numbered sequence at an image's width: pixels.
    ([f"pixel{i + 1}" for i in range(400)], 1.0),
    # Numbered, but not an image's width: not declared, not smoothed (64 and
    # 100 are squares, but tables' widths too; 120 is no square).
    ([f"t_{i}" for i in range(64)], 0.0),
    ([f"pixel{i + 1}" for i in range(100)], 0.0),
    ([f"t_{i}" for i in range(120)], 0.0),
])
def test_auto_sigma_reads_the_column_names(names, expected):
    fitted = _named_fit(names)
    assert fitted.sigma_ == expected
    assert ("chose 0:" in fitted.sigma_reason_) == (expected == 0.0)


@pytest.mark.parametrize("n_features, ordered", [
    # Tables' widths that are squares: tables of 64 to 225 columns, and
    # embeddings and hashed features in powers of two (64, 256, 1024).
    (64, False), (100, False), (121, False), (196, False), (225, False), (256, False),
    (1024, False), (4096, False),
    # Images: MNIST's 28 x 28, 20 x 20, 32 x 32 x 3 colour images.
    (784, True), (400, True), (3072, True),
])
def test_a_square_width_alone_is_an_image_only_where_tables_seldom_are(n_features, ordered):
    from sklearn_dplssgd._training import feature_layout
    assert feature_layout(n_features, False)[0] is ordered
    assert feature_layout(n_features, False, declared_ordered=True)[0] is True
    # An unnamed dense table of 100 unrelated columns is not smoothed.
    if n_features == 100:
        rng = np.random.default_rng(15)
        X, y = rng.uniform(-1, 1, (60, 100)), rng.integers(0, 2, 60)
        fitted = DPLSSGDClassifier(classes=[0, 1], max_iter=1).fit(X, y)
        assert fitted.sigma_ == 0.0 and "chose 0: dense input of 100 columns" in (
            fitted.sigma_reason_)


def test_a_column_transformer_one_hot_table_is_not_smoothed():
    # What the Adult pipeline passes: a dense one-hot block and
    # numeric columns, as a DataFrame whose names carry the transformers'
    # prefixes. Unnamed, the same 100 columns are not read as a 10 x 10 image
    # either (a square width is a table's too).
    import pandas as pd
    from sklearn.compose import ColumnTransformer
    from sklearn.preprocessing import OneHotEncoder
    from sklearn_dplssgd import BoundedScaler
    rng = np.random.default_rng(12)
    frame = pd.DataFrame({"age": rng.uniform(17, 90, 200)})
    for field in range(9):
        frame[f"field{field}"] = rng.integers(0, 11, 200).astype(str)
    categories = [[str(value) for value in range(11)]] * 9
    encode = ColumnTransformer([
        ("cat", OneHotEncoder(categories=categories, sparse_output=False),
         [f"field{field}" for field in range(9)]),
        ("num", BoundedScaler([17], [90]), ["age"]),
    ]).set_output(transform="pandas")
    X = encode.fit_transform(frame)
    assert X.shape[1] == 100
    y = rng.integers(0, 2, 200)
    named = DPLSSGDClassifier(classes=[0, 1], max_iter=1).fit(X, y)
    assert named.sigma_ == 0.0
    assert "column names are not one numbered sequence" in named.privacy_report()
    unnamed = DPLSSGDClassifier(classes=[0, 1], max_iter=1).fit(X.to_numpy(), y)
    assert unnamed.sigma_ == 0.0 and "dense input of 100 columns" in unnamed.sigma_reason_


def test_sigma_ordered_declares_the_layout():
    # The declaration smooths by the estimator's levels, whatever the names.
    names = [f"m{chr(97 + i)}" for i in range(13)]
    assert _named_fit(names).sigma_ == 0.0
    declared = _named_fit(names, sigma="ordered")
    assert declared.sigma == "ordered" and declared.sigma_ == 0.25
    assert "declared ordered" in declared.sigma_reason_
    assert "declared ordered" in declared.privacy_report()
    assert _named_fit(names[:4], sigma="ordered", estimator=DPLSSGDRegressor).sigma_ == 1.0
    assert _named_fit(names[:4], sigma="ordered").sigma_ == 0.0  # below the classifier's 10
    # An explicit value is kept and reported as given; sparse input is
    # smoothed when declared ordered.
    given = _named_fit(names, sigma=0.5)
    assert given.sigma_ == 0.5 and given.sigma_reason_ == "sigma=0.5 was given"
    rng = np.random.default_rng(13)
    X = sp.random(40, 16, density=0.3, random_state=13, format="csr")
    y = rng.integers(0, 2, 40)
    assert DPLSSGDClassifier(classes=[0, 1], max_iter=1).fit(X, y).sigma_ == 0.0
    assert DPLSSGDClassifier(classes=[0, 1], max_iter=1, sigma="ordered").fit(X, y).sigma_ == 0.25


def test_the_regressor_step_keeps_the_noise_that_reaches_its_weights():
    # The regressor's eta0 rule was measured on fits smoothed with sigma 1,
    # which leaves each weight sqrt(beta) (0.52 at 10 features) of the
    # step's noise: an unsmoothed fit takes steps shorter by that share
    # (diabetes at epsilon 1: R2 0.17 with sigma 0 and the same steps,
    # 0.30 with the shorter ones, 0.29 smoothed).
    from sklearn_dplssgd._training._defaults import smoothed_noise_share
    from sklearn_dplssgd._training._smoothing import smoothing_beta
    assert smoothed_noise_share(10, 1.0, 1.0) == 1.0
    assert smoothed_noise_share(10, 0.0, None) == 1.0
    assert smoothed_noise_share(10, 0.0, 1.0) == pytest.approx(1 / math.sqrt(
        smoothing_beta(10, 1.0)))
    assert 1.9 < smoothed_noise_share(10, 0.0, 1.0) < 2.0
    rng = np.random.default_rng(14)
    X, y = rng.uniform(-1, 1, (200, 10)), rng.uniform(-1, 1, 200)
    steps = {sigma: DPLSSGDRegressor(sigma=sigma, target_bounds=(-1, 1)).fit(X, y).eta0_
             for sigma in ("auto", 0.0, 1.0)}
    assert steps["auto"] == steps[0.0]  # 10 unnamed columns: not smoothed
    assert steps[0.0] == pytest.approx(steps[1.0] * math.sqrt(smoothing_beta(10, 1.0)))
    # The classifier's rule was measured per width level: no adjustment.
    labels = rng.integers(0, 2, 200)
    classifier = {sigma: DPLSSGDClassifier(sigma=sigma, classes=[0, 1]).fit(X, labels).eta0_
                  for sigma in (0.0, 1.0)}
    assert classifier[0.0] == classifier[1.0]
