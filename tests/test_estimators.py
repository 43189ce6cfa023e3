"""Behaviour of the estimators: privacy mechanics, scikit-learn and pandas use."""

import math
import pickle
import warnings

import numpy as np
import pandas as pd
import pytest
from randomgen import AESCounter
from sklearn.base import clone
from sklearn.compose import ColumnTransformer
from sklearn.datasets import load_digits
from sklearn.model_selection import GridSearchCV, train_test_split
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import FunctionTransformer, OneHotEncoder

from sklearn_dplssgd import DPLSSGDClassifier, DPLSSGDRegressor, PrivacyLedger, PrivacyLeakWarning
from sklearn_dplssgd._training import make_generator
from sklearn_dplssgd._training._schedules import number_of_steps
from sklearn_dplssgd._backends._numpy import poisson_batches
from sklearn_dplssgd._training._smoothing import smoothing_beta

DIGITS_CLASSES = np.arange(10)


@pytest.fixture(scope="module")
def digits():
    X, y = load_digits(return_X_y=True)
    return train_test_split(X / 16.0, y, test_size=0.2, random_state=0, stratify=y)


@pytest.fixture(scope="module")
def binary():
    rng = np.random.default_rng(0)
    X = rng.normal(size=(600, 8))
    y = (X @ rng.normal(size=8) + 0.3 > 0).astype(int)
    return X, y


# ----------------------------------------------------------------- accuracy


def test_digits_private_and_non_private_accuracy(digits):
    X_train, X_test, y_train, y_test = digits
    # Replace-one adjacency (the default) needs about twice the noise of
    # add/remove: epsilon = 2 here is the old add/remove epsilon = 1 target.
    private = DPLSSGDClassifier(epsilon=2.0, classes=DIGITS_CLASSES)
    assert private.fit(X_train, y_train).score(X_test, y_test) > 0.8
    assert private.epsilon_ <= 2.0
    reference = DPLSSGDClassifier(epsilon=math.inf, classes=DIGITS_CLASSES,
                                  random_state=0, reproducible=True)
    assert reference.fit(X_train, y_train).score(X_test, y_test) > 0.9
    assert reference.noise_multiplier_ == 0.0 and reference.epsilon_ == math.inf


@pytest.mark.parametrize("loss", ["log_loss", "hinge"])
def test_binary_and_multiclass_losses_learn(loss, binary, digits):
    X, y = binary
    clf = DPLSSGDClassifier(loss=loss, epsilon=math.inf, classes=[0, 1],
                            random_state=0, reproducible=True)
    assert clf.fit(X, y).score(X, y) > 0.9
    assert clf.coef_.shape == (1, 8) and clf.intercept_.shape == (1,)
    assert clf.decision_function(X).shape == (600,)
    X_train, X_test, y_train, y_test = digits
    multi = DPLSSGDClassifier(loss=loss, epsilon=math.inf, classes=DIGITS_CLASSES,
                              random_state=0, reproducible=True).fit(X_train, y_train)
    assert multi.coef_.shape == (10, 64) and multi.decision_function(X_test).shape == (360, 10)
    assert multi.score(X_test, y_test) > 0.85


@pytest.mark.parametrize("loss", ["squared_error", "huber", "epsilon_insensitive"])
def test_regression_losses_learn(loss):
    rng = np.random.default_rng(1)
    X = rng.uniform(-1, 1, size=(4000, 5))
    y = X @ np.array([0.5, -0.3, 0.2, 0.0, 0.4]) + 0.1
    threshold = 0.5 if loss == "huber" else 0.01
    reg = DPLSSGDRegressor(loss=loss, loss_threshold=threshold, epsilon=math.inf, sigma=0.0,
                           random_state=0, reproducible=True).fit(X, y)
    assert reg.coef_.shape == (5,) and reg.intercept_.shape == (1,)
    assert reg.score(X, y) > 0.95
    private = DPLSSGDRegressor(loss=loss, loss_threshold=threshold, epsilon=1.0,
                               random_state=0, reproducible=True).fit(X, y)
    assert private.score(X, y) > 0.5


def test_predict_proba_only_for_log_loss(binary, digits):
    X, y = binary
    clf = DPLSSGDClassifier(classes=[0, 1], random_state=0, reproducible=True).fit(X, y)
    proba = clf.predict_proba(X)
    np.testing.assert_allclose(proba.sum(axis=1), 1.0)
    np.testing.assert_allclose(np.log(proba), clf.predict_log_proba(X), atol=1e-10)
    np.testing.assert_array_equal(clf.classes_[proba.argmax(axis=1)], clf.predict(X))
    X_train, _, y_train, _ = digits
    multi = DPLSSGDClassifier(classes=DIGITS_CLASSES,
                              random_state=0, reproducible=True).fit(X_train, y_train)
    np.testing.assert_allclose(multi.predict_proba(X_train).sum(axis=1), 1.0)
    hinge = DPLSSGDClassifier(loss="hinge", classes=[0, 1],
                              random_state=0, reproducible=True).fit(X, y)
    assert not hasattr(hinge, "predict_proba")
    assert not hasattr(hinge, "predict_log_proba")


# ------------------------------------------------------- privacy mechanics


def test_fitted_privacy_attributes(binary):
    X, y = binary
    clf = DPLSSGDClassifier(epsilon=0.5, delta=1e-6, batch_size=64, max_iter=3,
                            classes=[0, 1]).fit(X, y)
    assert clf.sample_rate_ == 64 / 600
    assert clf.n_steps_ == math.ceil(3 * 600 / 64) == number_of_steps(600, 64, 3)
    assert clf.n_iter_ == 3
    assert 0.49 < clf.epsilon_ <= 0.5
    assert clf.delta_ == 1e-6
    assert clf.neighboring_ == "replace_one"
    assert clf.noise_multiplier_ > 0
    # A reproducible fit runs the same mechanism but claims nothing: its
    # seed travels with it.
    with pytest.warns(PrivacyLeakWarning, match="not private"):
        seeded = clone(clf).set_params(random_state=0, reproducible=True).fit(X, y)
    assert seeded.epsilon_ == math.inf
    assert seeded.noise_multiplier_ == clf.noise_multiplier_


@pytest.mark.parametrize("batch_size", [100, 1000])
def test_noise_scale_is_calibrated_to_the_sum(batch_size):
    """With zero features every gradient is 0, so the weights are pure noise.

    After T steps of constant learning rate eta without penalty, each
    coefficient is -(eta / b) times a sum of T draws of N(0, (z C)^2): its
    standard deviation is sqrt(T) eta z C / b. Noise scaled for the mean
    instead of the sum would be b times smaller. Smoothing multiplies the
    variance by beta (REFERENCE.md C). With full batches (batch_size above
    n) b is still batch_size, never the private row count n.
    """
    n_samples, n_features = 500, 4000
    X = np.zeros((n_samples, n_features))
    y = np.arange(n_samples) % 2
    for sigma in (0.0, 2.0):
        # The last iterate (average=False): its noise is the sum of T draws.
        clf = DPLSSGDClassifier(epsilon=2.0, sigma=sigma, alpha=0.0, eta0=0.1, clip_norm=3.0,
                                batch_size=batch_size, max_iter=2, fit_intercept=False,
                                average=False,
                                classes=[0, 1], random_state=0, reproducible=True).fit(X, y)
        expected = math.sqrt(clf.n_steps_) * 0.1 * clf.noise_multiplier_ * 3.0 / batch_size
        if sigma:
            expected *= math.sqrt(smoothing_beta(n_features, sigma))
        assert clf.coef_.std() == pytest.approx(expected, rel=0.05)
        assert abs(clf.coef_.mean()) < 4 * expected / math.sqrt(n_features)


def test_divides_by_the_expected_batch_size():
    """Each row's gradient is the constant -[1, 0, 1] (never clipped, no noise).

    Then coef_[0] = eta * sum_t |B_t| / b exactly, where |B_t| are the
    Poisson batch sizes the same seed draws; dividing by the realised size
    |B_t| would give exactly eta * T.
    """
    n_samples, batch_size, epochs, eta = 200, 50, 3, 0.01
    X = np.zeros((n_samples, 2))
    X[:, 0] = 1.0
    # Clipped to the declared bounds (identity map): residual sign -1 at zero.
    y = np.full(n_samples, 1e9)
    reg = DPLSSGDRegressor(loss="epsilon_insensitive", epsilon=math.inf, clip_norm=1e6,
                           target_bounds=(-1.0, 1.0),
                           alpha=0.0, sigma=0.0, learning_rate="constant", eta0=eta,
                           batch_size=batch_size, average=False, delta=1e-5,
                           max_iter=epochs, random_state=5, reproducible=True).fit(X, y)
    n_steps = number_of_steps(n_samples, batch_size, epochs)
    # The same seeded generator as the fit's: the batches it drew.
    _, offsets = poisson_batches(make_generator(5, reproducible=True)[0], n_samples,
                                 batch_size / n_samples, n_steps)
    batch_sizes = np.diff(offsets)
    assert batch_sizes.min() != batch_sizes.max()  # batches really vary
    assert reg.coef_[0] == pytest.approx(eta * batch_sizes.sum() / batch_size, rel=1e-12)
    assert reg.coef_[0] != pytest.approx(eta * n_steps, rel=1e-6)
    assert reg.intercept_[0] == pytest.approx(reg.coef_[0], rel=1e-12)
    assert reg.coef_[1] == 0.0


def test_poisson_sampling_statistics():
    rng = np.random.default_rng(0)
    n_samples, q, n_steps = 300, 0.1, 4000
    rows, offsets = poisson_batches(rng, n_samples, q, n_steps)
    sizes = np.diff(offsets)
    assert len(offsets) == n_steps + 1 and offsets[-1] == len(rows)
    # Batch sizes are Binomial(n, q): mean n q, variance n q (1 - q).
    assert sizes.mean() == pytest.approx(n_samples * q, rel=0.01)
    assert sizes.var() == pytest.approx(n_samples * q * (1 - q), rel=0.08)
    # Every row is included with probability q (binomial 5-sigma band).
    counts = np.bincount(rows, minlength=n_samples)
    band = 5 * math.sqrt(n_steps * q * (1 - q))
    assert np.all(np.abs(counts - n_steps * q) < band)
    # No row appears twice in a batch, rows are valid indices.
    for t in range(0, n_steps, 97):
        batch = rows[offsets[t]:offsets[t + 1]]
        assert len(np.unique(batch)) == len(batch)
        assert batch.min(initial=0) >= 0 and batch.max(initial=0) < n_samples
    # Inclusions of the same row in consecutive steps are independent.
    member = np.zeros((n_steps, n_samples), dtype=bool)
    for t in range(n_steps):
        member[t, rows[offsets[t]:offsets[t + 1]]] = True
    both = (member[1:] & member[:-1]).mean()
    assert both == pytest.approx(q * q, rel=0.05)


def test_full_batch_when_batch_size_exceeds_n():
    rows, offsets = poisson_batches(np.random.default_rng(0), 30, 1.0, 5)
    np.testing.assert_array_equal(np.diff(offsets), 30)
    X = np.random.default_rng(0).normal(size=(30, 3))
    y = np.arange(30) % 2
    clf = DPLSSGDClassifier(batch_size=100, max_iter=4, classes=[0, 1],
                            random_state=0, reproducible=True)
    clf.fit(X, y)
    assert clf.sample_rate_ == 1.0 and clf.n_steps_ == 4


def test_nothing_data_dependent_changes_the_mechanism(binary):
    """T, q and z depend only on n, the hyperparameters and (epsilon, delta)."""
    X, y = binary
    a = DPLSSGDClassifier(classes=[0, 1], random_state=0, reproducible=True).fit(X, y)
    b = DPLSSGDClassifier(classes=[0, 1], random_state=1, reproducible=True).fit(X * 100, 1 - y)
    for name in ("n_steps_", "sample_rate_", "noise_multiplier_", "epsilon_"):
        assert getattr(a, name) == getattr(b, name)


def test_classes_declared_or_warned(binary):
    X, y = binary
    with pytest.warns(PrivacyLeakWarning, match="classes"):
        DPLSSGDClassifier(random_state=0, reproducible=True).fit(X, y)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        clf = DPLSSGDClassifier(classes=[0, 1, 2]).fit(X, y)
    # The declared label set is the model's, even if a class is absent.
    np.testing.assert_array_equal(clf.classes_, [0, 1, 2])
    assert clf.coef_.shape == (3, 8)
    with pytest.raises(ValueError, match="not in classes") as error:
        DPLSSGDClassifier(classes=[0, 2]).fit(X, y)
    # The message names the problem, never a private label.
    assert "1" not in str(error.value)


def test_string_labels(binary):
    X, y = binary
    labels = np.array(["no", "yes"])[y]
    clf = DPLSSGDClassifier(classes=["no", "yes"], random_state=0, reproducible=True).fit(X, labels)
    assert set(clf.predict(X)) <= {"no", "yes"}
    assert clf.score(X, labels) > 0.6


def test_delta_at_least_one_over_n_warns(binary):
    X, y = binary
    with pytest.warns(PrivacyLeakWarning, match="delta"):
        DPLSSGDClassifier(delta=1e-2, classes=[0, 1], random_state=0, reproducible=True).fit(X, y)


def test_unstable_weight_decay_is_refused_before_training(binary):
    X, y = binary
    clf = DPLSSGDClassifier(eta0=1.0, alpha=5.0, classes=[0, 1], random_state=0, reproducible=True)
    with pytest.raises(ValueError, match="smaller learning rate"):
        clf.fit(X, y)
    assert not hasattr(clf, "coef_")


@pytest.mark.filterwarnings("ignore:invalid value:RuntimeWarning")
def test_non_finite_weights_raise_and_suggest_a_smaller_learning_rate(binary, monkeypatch):
    import sklearn_dplssgd._backends._numpy as sgd
    from implementation_checks import substituted_gradient_kernel

    real_kernel = sgd.noisy_clipped_gradient_sum

    def overflowing_kernel(*args, **kwargs):
        real_kernel(*args, **kwargs)
        args[-2][...] = np.inf  # the gradient buffer

    X, y = binary
    clf = DPLSSGDClassifier(classes=[0, 1], random_state=0, reproducible=True)
    with substituted_gradient_kernel(overflowing_kernel), pytest.raises(
            ValueError, match="smaller learning rate"):
        clf.fit(X, y)
    assert not hasattr(clf, "coef_")


@pytest.mark.parametrize("magnitude", [1e200, 1.5e308])
def test_rows_whose_outputs_could_overflow_contribute_nothing(magnitude):
    # Refusing them would let one such row decide whether a model is
    # released; they are dropped instead, with a warning to the data holder:
    # the fit is the noise-only fit of rows that all contribute nothing.
    X = np.full((10, 3), magnitude)
    # Declared target bounds: ten rows are too few to learn a range privately.
    params = dict(random_state=0, reproducible=True, max_iter=2, target_bounds=(0.0, 10.0))
    with pytest.warns(UserWarning, match="Rescale the features"):
        long_rows = DPLSSGDRegressor(**params).fit(X, np.arange(10.0))
    zero_rows = DPLSSGDRegressor(**params).fit(np.zeros((10, 3)), np.zeros(10))
    np.testing.assert_array_equal(long_rows.coef_, zero_rows.coef_)


# ------------------------------------------------------------ reproducibility


def test_same_seed_same_model_different_seed_different_model(binary):
    X, y = binary
    first = DPLSSGDClassifier(classes=[0, 1], random_state=3, reproducible=True).fit(X, y).coef_
    again = DPLSSGDClassifier(classes=[0, 1], random_state=3, reproducible=True).fit(X, y).coef_
    other = DPLSSGDClassifier(classes=[0, 1], random_state=4, reproducible=True).fit(X, y).coef_
    np.testing.assert_array_equal(first, again)
    assert not np.array_equal(first, other)
    fresh_a = DPLSSGDClassifier(classes=[0, 1]).fit(X, y).coef_
    fresh_b = DPLSSGDClassifier(classes=[0, 1]).fit(X, y).coef_
    assert not np.array_equal(fresh_a, fresh_b)  # None draws fresh entropy


def test_float32_stays_float32(binary):
    X, y = binary
    clf = DPLSSGDClassifier(classes=[0, 1],
                            random_state=0, reproducible=True).fit(X.astype(np.float32), y)
    assert clf.coef_.dtype == np.float32 and clf.intercept_.dtype == np.float32
    assert clf.decision_function(X.astype(np.float32)).dtype == np.float32
    # Without noise (the float32 and float64 Gaussian samplers differ) the
    # two precisions train the same model up to rounding.
    clf32 = DPLSSGDClassifier(epsilon=math.inf, classes=[0, 1], random_state=0, reproducible=True)
    clf64 = clone(clf32).fit(X, y)
    clf32.fit(X.astype(np.float32), y)
    np.testing.assert_allclose(clf32.coef_, clf64.coef_, rtol=1e-3, atol=1e-4)


def test_inputs_and_parameters_are_not_mutated(binary):
    X, y = binary
    X_before, y_before = X.copy(), y.copy()
    classes = [0, 1]
    clf = DPLSSGDClassifier(classes=classes, random_state=0, reproducible=True)
    params_before = clf.get_params()
    clf.fit(X, y)
    np.testing.assert_array_equal(X, X_before)
    np.testing.assert_array_equal(y, y_before)
    assert clf.get_params() == params_before and classes == [0, 1]


# ------------------------------------------------- scikit-learn and pandas


def test_pipeline_with_data_independent_scaling(digits):
    X_train, X_test, y_train, y_test = digits
    pipe = make_pipeline(
        FunctionTransformer(lambda X: X * 16.0 / 16.0),
        DPLSSGDClassifier(classes=DIGITS_CLASSES, random_state=0, reproducible=True),
    )
    assert pipe.fit(X_train, y_train).score(X_test, y_test) > 0.75


def test_column_transformer_over_a_dataframe():
    rng = np.random.default_rng(0)
    n_samples = 2000
    frame = pd.DataFrame({
        "age": rng.uniform(18, 90, n_samples),
        "income": rng.uniform(0, 200, n_samples),
        "city": rng.choice(["Paris", "Lyon", "Nice"], n_samples),
        "plan": pd.Categorical(rng.choice(["basic", "gold"], n_samples)),
    })
    y = (frame["age"] / 90 + 0.5 * (frame["city"] == "Nice") > 0.7).astype(int).to_numpy()
    # Scales and categories are declared, not learned from the private rows.
    preprocess = ColumnTransformer([
        ("numeric", FunctionTransformer(lambda X: X / np.array([90.0, 200.0])),
         ["age", "income"]),
        ("categorical", OneHotEncoder(categories=[["Paris", "Lyon", "Nice"], ["basic", "gold"]]),
         ["city", "plan"]),
    ])
    pipe = make_pipeline(preprocess, DPLSSGDClassifier(epsilon=2.0, sigma=0.0, max_iter=30,
                                                       classes=[0, 1], random_state=0,
                                                       reproducible=True))
    assert pipe.fit(frame, y).score(frame, y) > 0.7
    clf = DPLSSGDClassifier(classes=[0, 1], random_state=0, reproducible=True)
    clf.fit(frame[["age", "income"]] / 100, y)
    np.testing.assert_array_equal(clf.feature_names_in_, ["age", "income"])


def test_grid_search_over_epsilon_and_sigma(digits):
    X_train, X_test, y_train, y_test = digits
    search = GridSearchCV(
        DPLSSGDClassifier(max_iter=5, classes=DIGITS_CLASSES),
        {"epsilon": [0.5, 2.0], "sigma": [0.0, 1.0]},
        cv=2,
        n_jobs=2,
    )
    search.fit(X_train, y_train)
    assert len(search.cv_results_["params"]) == 4
    best = search.best_estimator_
    assert best.epsilon_ <= best.epsilon
    assert search.score(X_test, y_test) > 0.5


def test_clone_and_pickle(binary):
    X, y = binary
    clf = DPLSSGDClassifier(epsilon=2.0, sigma=0.5, classes=[0, 1],
                            random_state=0, reproducible=True).fit(X, y)
    unfitted = clone(clf)
    assert unfitted.get_params() == clf.get_params() and not hasattr(unfitted, "coef_")
    restored = pickle.loads(pickle.dumps(clf))
    np.testing.assert_array_equal(restored.decision_function(X), clf.decision_function(X))
    assert restored.epsilon_ == clf.epsilon_
    reg = DPLSSGDRegressor(random_state=0, reproducible=True).fit(X, X[:, 0])
    np.testing.assert_array_equal(pickle.loads(pickle.dumps(reg)).predict(X), reg.predict(X))


def test_verbose_prints_one_line_per_epoch(binary, capsys):
    X, y = binary
    DPLSSGDClassifier(max_iter=3, verbose=1, classes=[0, 1],
                      random_state=0, reproducible=True).fit(X, y)
    lines = [line for line in capsys.readouterr().out.splitlines() if line.startswith("-- Epoch")]
    assert len(lines) == 3 and "loss" not in " ".join(lines)


# ----------------------------------------------------------- seeds and noise


def test_seed_never_decides_the_noise_without_reproducible(binary):
    X, y = binary
    generator = np.random.default_rng(7)
    state = generator.bit_generator.state
    with pytest.warns(UserWarning, match="random_state is not used"):
        first = DPLSSGDClassifier(classes=[0, 1], random_state=42).fit(X, y)
    second = DPLSSGDClassifier(classes=[0, 1], random_state=42).fit(X, y)
    from_generator = DPLSSGDClassifier(classes=[0, 1], random_state=generator).fit(X, y)
    assert not np.array_equal(first.coef_, second.coef_)
    assert generator.bit_generator.state == state  # never advanced
    # The published model, pickled and refitted from its own parameters,
    # does not replay its noise.
    replay = clone(pickle.loads(pickle.dumps(first))).fit(X, y)
    assert not np.array_equal(replay.coef_, first.coef_)
    assert math.isfinite(first.epsilon_) and math.isfinite(from_generator.epsilon_)


@pytest.mark.parametrize("make_seed", [
    lambda: 3, lambda: np.random.SeedSequence(3), lambda: np.random.default_rng(3)])
def test_reproducible_fits_repeat_exactly_and_claim_nothing(binary, make_seed):
    X, y = binary
    estimator = DPLSSGDClassifier(classes=[0, 1], random_state=make_seed(), reproducible=True)
    with pytest.warns(PrivacyLeakWarning, match="not private"):
        first = clone(estimator).fit(X, y)
    second = clone(estimator).fit(X, y)
    third = estimator.fit(X, y)
    np.testing.assert_array_equal(first.coef_, second.coef_)
    np.testing.assert_array_equal(first.coef_, third.coef_)
    assert first.epsilon_ == math.inf and first.noise_multiplier_ > 0


def test_reproducible_random_state_instance_gives_128_bits():
    rng, seeded = make_generator(np.random.RandomState(0), reproducible=True)
    assert seeded and isinstance(rng, np.random.Generator)
    # Keyed by four 32-bit words drawn from the RandomState (not one 31-bit int).
    words = np.random.RandomState(0).randint(0, 2**32, size=4, dtype=np.uint64)
    key = np.random.SeedSequence(words.tolist()).generate_state(2, np.uint64)
    np.testing.assert_array_equal(rng.bit_generator.random_raw(8),
                                  AESCounter(key=int(key[0]) | int(key[1]) << 64).random_raw(8))


# ---------------------------------------------- adjacency and the row count


def test_add_remove_needs_a_public_row_count(binary):
    X, y = binary
    with pytest.raises(ValueError, match="public_n_samples"):
        DPLSSGDClassifier(classes=[0, 1], neighboring="add_remove").fit(X, y)
    # With a declared count, q and T do not depend on the actual rows.
    declared = DPLSSGDClassifier(classes=[0, 1], neighboring="add_remove", public_n_samples=1000)
    small = clone(declared).fit(X[:256], y[:256])
    large = clone(declared).fit(X[:257], y[:257])
    for name in ("sample_rate_", "n_steps_", "noise_multiplier_", "epsilon_"):
        assert getattr(small, name) == getattr(large, name)
    assert small.sample_rate_ == 256 / 1000 and small.neighboring_ == "add_remove"
    # No privacy, no guarantee to break: epsilon=inf needs no declared count.
    DPLSSGDClassifier(classes=[0, 1], neighboring="add_remove", epsilon=math.inf).fit(X, y)


@pytest.mark.parametrize("make_meta, n_fits", [
    (lambda est: __import__("sklearn.multiclass", fromlist=["x"]).OneVsRestClassifier(est), 3),
    (lambda est: __import__("sklearn.ensemble", fromlist=["x"]).BaggingClassifier(
        est, n_estimators=2), 2),
    (lambda est: __import__("sklearn.calibration", fromlist=["x"]).CalibratedClassifierCV(
        est, cv=2), 2),
])
def test_a_ledger_counts_every_fit_of_a_meta_estimator(make_meta, n_fits):
    # Meta-estimators are not detected (no stack inspection): the ledger,
    # which clones share, is what counts their fits.
    rng = np.random.default_rng(0)
    X = rng.uniform(-1, 1, (300, 4))
    y = rng.integers(0, 3, 300)
    ledger = PrivacyLedger()
    # Bagging passes bootstrap counts as sample weights: the bound covers them.
    estimator = DPLSSGDClassifier(max_iter=2, max_sample_weight=20.0, ledger=ledger)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        make_meta(estimator).fit(X, y)
    assert len(ledger.records) == n_fits
    single = clone(estimator).set_params(ledger=None).fit(X[:150], y[:150])
    assert ledger.epsilon() > single.epsilon_


def test_a_declared_row_count_far_from_the_data_warns(binary):
    X, y = binary
    assert len(y) > 2 * 100
    # The batches then exceed the bound the release's floating-point error
    # bound was computed for (twice the declared count): the fit fails closed.
    with pytest.warns(UserWarning, match="public_n_samples is more than a factor 2"):
        with pytest.raises(RuntimeError, match="public_n_samples"):
            DPLSSGDClassifier(classes=[0, 1], neighboring="add_remove", public_n_samples=100,
                              max_iter=2).fit(X, y)
    with pytest.warns(UserWarning, match="public_n_samples is more than a factor 2"):
        DPLSSGDClassifier(classes=[0, 1], neighboring="add_remove",
                          public_n_samples=4 * len(y), max_iter=2).fit(X, y)


# ------------------------------------------------------------ target bounds


def test_target_bounds_scale_targets_and_map_predictions_back():
    rng = np.random.default_rng(0)
    X = rng.uniform(-1, 1, size=(2000, 3))
    y = 200.0 + 150.0 * (X @ [0.5, -0.3, 0.2])
    plain = DPLSSGDRegressor(epsilon=math.inf, max_iter=30, eta0=0.5, learning_rate="constant",
                             target_bounds=(-1.0, 1.0), random_state=0, reproducible=True)
    bounded = clone(plain).set_params(target_bounds=(0.0, 400.0))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", PrivacyLeakWarning)
        plain.fit(X, (y - 200.0) / 200.0)
        bounded.fit(X, y)
    # Same training on the same unit-scale targets; predictions in y's units.
    np.testing.assert_allclose(bounded.predict(X), 200.0 + 200.0 * plain.predict(X), rtol=1e-9)
    assert bounded.score(X, y) > 0.9


def test_target_bounds_clip_targets_outside_them():
    X = np.zeros((50, 2))
    y = np.full(50, 1e6)  # far above the declared bound
    reg = DPLSSGDRegressor(epsilon=math.inf, target_bounds=(-1.0, 1.0), max_iter=50,
                           learning_rate="constant", eta0=1.0).fit(X, y)
    # Trained on targets clipped to 1: the intercept cannot pass the bound.
    assert reg.predict(X[:1])[0] <= 1.0 + 1e-9


@pytest.mark.parametrize("bounds", [(1.0, 1.0), (2.0, 1.0), (0.0, math.inf), "ab", (1.0,)])
def test_invalid_target_bounds_are_refused(bounds):
    with pytest.raises((TypeError, ValueError), match="target_bounds"):
        DPLSSGDRegressor(target_bounds=bounds).fit(np.zeros((10, 2)), np.zeros(10))
