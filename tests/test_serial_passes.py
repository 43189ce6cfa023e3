"""The per-fit passes that ``n_jobs`` cannot share, made cheaper with the same outcome.

The Poisson batches' draws (one compiled pass over one fill of exponentials,
the same gaps as NumPy's geometric draws), the labels' type check (skipped
where scikit-learn's answer is known without counting the labels), and the
clips' feature norms (on the fit's threads).
"""

import math
import warnings

import numpy as np
import pytest
import scipy.sparse as sp
from sklearn.utils.multiclass import check_classification_targets

from sklearn_dplssgd import DPLSSGDClassifier
from sklearn_dplssgd._backends import _numpy as _sgd, _poisson, _row_passes
from sklearn_dplssgd._backends._clipping import compute_feature_norms
from sklearn_dplssgd._linear_model import _base, _targets


def _geometric_batches(rng, n_samples, sample_rate, n_steps):
    """The batches from NumPy's geometric gaps (the sampler's earlier form)."""
    n_slots = n_samples * n_steps
    expected = n_slots * sample_rate
    n_draws = int(expected + 6.0 * math.sqrt(expected) + 16)
    positions = np.cumsum(rng.geometric(sample_rate, size=n_draws)) - 1
    while positions[-1] < n_slots:
        more = positions[-1] + np.cumsum(rng.geometric(sample_rate, size=n_draws))
        positions = np.concatenate([positions, more])
    positions = positions[: np.searchsorted(positions, n_slots)]
    offsets = np.searchsorted(positions, np.arange(n_steps + 1) * n_samples)
    return positions % n_samples, offsets


@pytest.mark.parametrize("n_samples, sample_rate, n_steps", [
    (0, 0.1, 3), (1, 0.3, 7), (7, 1e-3, 2), (300, 0.01, 17), (1000, 0.0041, 250),
    (50, 0.33, 11), (40, 0.5, 9), (5000, 1e-6, 4),
])
def test_poisson_batches_are_numpys_geometric_draws(n_samples, sample_rate, n_steps):
    for seed in range(3):
        expected_rng, rng = np.random.default_rng(seed), np.random.default_rng(seed)
        expected = _geometric_batches(expected_rng, n_samples, sample_rate, n_steps)
        rows, offsets = _sgd.poisson_batches(rng, n_samples, sample_rate, n_steps)
        np.testing.assert_array_equal(rows, expected[0])
        np.testing.assert_array_equal(offsets, expected[1])
        assert rows.dtype == np.int64 and offsets.dtype == expected[1].dtype
        # The same draws consumed: the noise drawn next is the same.
        assert rng.standard_normal() == expected_rng.standard_normal()


@pytest.mark.parametrize("sample_rate", [0.0, -0.1, math.nan])
def test_poisson_batches_refuse_invalid_rates_as_numpy_does(sample_rate):
    with pytest.raises(ValueError):
        _geometric_batches(np.random.default_rng(0), 10, sample_rate, 3)
    with pytest.raises(ValueError):
        _sgd.poisson_batches(np.random.default_rng(0), 10, sample_rate, 3)


def test_place_gaps_continues_across_fills():
    # More fills where the first falls short of the last slot: the second
    # continues the process where the first stopped.
    rng = np.random.default_rng(4)
    n_samples, n_steps, log_keep = 100, 6, math.log1p(-0.05)
    draws = rng.standard_exponential(200)
    results = []
    for parts in ([draws], [draws[:13], draws[13:]], [draws[:1], draws[1:2], draws[2:]]):
        rows = np.empty(len(draws), dtype=np.int64)
        offsets = np.zeros(n_steps + 1, dtype=np.int64)
        state = np.array([-1, 0, 0], dtype=np.int64)
        done = [_poisson.place_gaps(part, log_keep, n_samples, n_samples * n_steps, rows,
                                    offsets, state) for part in parts]
        assert done[-1] and not any(done[:-1])
        results.append((rows[:state[1]].copy(), offsets))
    for rows, offsets in results[1:]:
        np.testing.assert_array_equal(rows, results[0][0])
        np.testing.assert_array_equal(offsets, results[0][1])
    gaps = np.ceil(-draws / log_keep).astype(np.int64)
    positions = np.cumsum(gaps) - 1
    kept = positions[positions < n_samples * n_steps]
    np.testing.assert_array_equal(results[0][0], kept % n_samples)


@pytest.fixture
def type_checks(monkeypatch):
    """Count the calls of scikit-learn's label-type check."""
    calls = []

    def counting(y):
        calls.append(len(y))
        return check_classification_targets(y)

    monkeypatch.setattr(_targets, "check_classification_targets", counting)
    return calls


@pytest.mark.parametrize("n_jobs", [None, 2])
@pytest.mark.parametrize("labels", [np.int64, np.uint8, np.float32, bool])
def test_integral_labels_skip_the_type_checks_count(type_checks, monkeypatch, n_jobs, labels):
    monkeypatch.setattr(_base.os, "cpu_count", lambda: 2)
    y = (np.random.default_rng(3).random(5000) > 0.5).astype(labels)
    classes = np.unique(y)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        encoded, n_outputs = DPLSSGDClassifier(classes=classes, n_jobs=n_jobs)._targets().encode(y)
    assert type_checks == [] and n_outputs == 1
    np.testing.assert_array_equal(encoded, (y == classes[1]).astype(np.float64))


@pytest.mark.filterwarnings("ignore::sklearn_dplssgd.PrivacyLeakWarning")
@pytest.mark.parametrize("n_jobs", [None, 2])
def test_the_label_checks_errors_and_warnings_are_scikit_learns(type_checks, n_jobs):
    def encode(y, classes=None):
        return DPLSSGDClassifier(classes=classes, n_jobs=n_jobs)._targets().encode(y)

    # Non-integral floats: scikit-learn's error.
    with pytest.raises(ValueError, match="Unknown label type: continuous"):
        encode(np.linspace(0.0, 1.0, 50))
    # More distinct labels than half the rows: scikit-learn's warning, then
    # (declared classes that miss some) this library's error, in that order.
    with pytest.warns(UserWarning, match="greater than 50% of the number of samples"):
        encode(np.arange(40))
    with pytest.warns(UserWarning, match="greater than 50%"), \
            pytest.raises(ValueError, match="labels that are not in classes"):
        encode(np.arange(40), classes=[0, 1])
    with pytest.warns(UserWarning, match="greater than 50%"):
        encode(np.arange(40), classes=range(40))
    # Many labels, all declared, but no more than half the rows: no warning.
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        encode(np.arange(40) % 20, classes=range(20))
    # Strings go through scikit-learn's check.
    calls = len(type_checks)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        encode(np.array(["a", "b"] * 10))
    assert len(type_checks) == calls + 1


def test_feature_norms_on_threads_are_the_serial_ones():
    row_norms = np.random.default_rng(8).exponential(size=300_001)
    row_norms[[0, 17, 300_000]] = [np.inf, -1.0, 0.0]
    for intercept_term in (0.0, 1.0):
        serial = compute_feature_norms(row_norms, intercept_term)
        np.testing.assert_array_equal(
            _row_passes.feature_norms_of(row_norms, intercept_term, 3), serial)
        assert np.isnan(serial[17]) and np.isinf(serial[0])


def test_sparse_row_norms_on_threads_are_the_serial_ones():
    rng = np.random.default_rng(9)
    X = sp.random(300_001, 40, density=0.1, format="csr", random_state=rng)
    X.data[5] = np.finfo(np.float64).max / 4  # a row whose plain sum overflows
    X.data[7] = 1e-200  # and one close to underflowing
    serial = _row_passes.row_norms_of(X)
    threaded = _row_passes.row_norms_of(X, 3)
    np.testing.assert_array_equal(threaded, serial)
    assert np.isfinite(serial).all()


def test_a_zero_exponential_still_advances_by_one_row():
    # A float exponential of exactly 0 (ceil(0) = 0) must not place one
    # position twice: each row enters a step's batch at most once.
    rows = np.empty(8, dtype=np.int64)
    offsets = np.zeros(3, dtype=np.int64)
    state = np.array([-1, 0, 0], dtype=np.int64)
    exponentials = np.array([0.0, 0.0, 0.0, 50.0])
    _poisson.place_gaps(exponentials, math.log1p(-0.5), 4, 8, rows, offsets, state)
    assert list(rows[:state[1]]) == [0, 1, 2]
