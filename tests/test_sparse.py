"""Sparse input: the CSR kernels against the oracle, and the estimators on sparse X.

The kernels' oracle is :func:`_losses.clipped_gradient_sum_reference`, which
reads a sparse X as the dense matrix it stands for. The estimators must give
the model the dense rows give (same seed, same noise, same batches), without
ever densifying X.
"""

import math
import tracemalloc
import warnings

import numpy as np
import pytest
import scipy.sparse as sp
from sklearn.compose import ColumnTransformer
from sklearn.feature_extraction.text import TfidfVectorizer
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import OneHotEncoder

from sklearn_dplssgd import (
    BoundedScaler,
    DPLSSGDClassifier,
    DPLSSGDRegressor,
    DPRandomizedSearch,
    PrivacyLedger,
    PrivacyLeakWarning,
)
from sklearn_dplssgd._backends._kernels import (
    PARALLEL_MIN_WORK,
    compute_row_norms,
    noisy_clipped_gradient_sum,
)
from oracles import (
    clipped_gradient_sum_reference,
    LOG_LOSS_BINARY,
    LOG_LOSS_MULTINOMIAL,
    SQUARED_ERROR,
)
from sklearn_dplssgd._backends._sparse import (
    as_canonical_csr,
    compute_sparse_row_norms,
    noisy_clipped_gradient_sum_sparse,
)
from sklearn_dplssgd.audit import audit_epsilon
from test_kernels import CASES, _problem

from implementation_checks import audit_implementation

# ------------------------------------------------------------------ kernels


def _sparse_problem(code, n_outputs, dtype, fit_intercept, seed, index_dtype=np.int32):
    """The dense kernels' problem with most entries zeroed and some rows empty."""
    X, y, params, _ = _problem(code, n_outputs, dtype, fit_intercept, seed)
    rng = np.random.default_rng(seed + 100)
    X[rng.random(X.shape) > 0.3] = 0
    X[::7] = 0  # empty rows: only the intercept (if any) has a gradient
    X_sparse = sp.csr_matrix(X)
    X_sparse.indices = X_sparse.indices.astype(index_dtype)
    X_sparse.indptr = X_sparse.indptr.astype(index_dtype)
    return X, X_sparse, y, params


def _sparse_kernel(X, y, rows, params, code, threshold, clip_norm, fit_intercept,
                   noise=None, n_threads=1):
    grad = np.empty_like(params)
    if noise is None:
        noise = np.zeros_like(params)
    noisy_clipped_gradient_sum_sparse(
        X, y, rows, params, compute_sparse_row_norms(X), code, threshold, clip_norm,
        fit_intercept, noise, grad, n_threads,
    )
    return grad


def _dense_kernel(X, y, rows, params, code, threshold, clip_norm, fit_intercept):
    grad = np.empty_like(params)
    noisy_clipped_gradient_sum(X, y, rows, params, compute_row_norms(X), code, threshold,
                               clip_norm, fit_intercept, np.zeros_like(params), grad)
    return grad


@pytest.mark.parametrize("code, n_outputs", CASES)
@pytest.mark.parametrize("fit_intercept", [True, False])
@pytest.mark.parametrize("dtype", [np.float64, np.float32])
@pytest.mark.parametrize("clip_norm", [0.3, 1e6])
def test_sparse_kernel_matches_oracle(code, n_outputs, fit_intercept, dtype, clip_norm):
    X, X_sparse, y, params = _sparse_problem(code, n_outputs, dtype, fit_intercept, code)
    rows = np.sort(np.random.default_rng(1).choice(len(X), 25, replace=False)).astype(np.int64)
    rows[0] = 0  # an empty row
    noise = np.random.default_rng(2).normal(size=params.shape).astype(dtype)
    if not fit_intercept:
        noise[:, -1] = 0
    grad = _sparse_kernel(X_sparse, y, rows, params, code, 0.5, clip_norm, fit_intercept,
                          noise)
    assert grad.dtype == dtype
    d = X.shape[1]
    ref_coef, ref_intercept = clipped_gradient_sum_reference(
        X_sparse, y, rows, params[:, :d], params[:, d], code, 0.5, clip_norm, fit_intercept)
    tol = 1e-10 if dtype == np.float64 else 2e-4
    scale = max(1.0, np.abs(ref_coef).max())
    np.testing.assert_allclose(grad[:, :d] - noise[:, :d], ref_coef, atol=tol * scale, rtol=tol)
    np.testing.assert_allclose(grad[:, d] - noise[:, d], ref_intercept, atol=tol * scale,
                               rtol=tol)
    if not fit_intercept:
        assert np.all(grad[:, d] == 0)
    # And the dense kernel on the same rows, up to float rounding.
    dense = _dense_kernel(X, y, rows, params, code, 0.5, clip_norm, fit_intercept)
    np.testing.assert_allclose(grad - noise, dense, atol=tol * scale, rtol=tol)


@pytest.mark.parametrize("code, n_outputs", [(LOG_LOSS_BINARY, 1), (LOG_LOSS_MULTINOMIAL, 3)])
def test_sparse_kernel_with_int64_indices(code, n_outputs):
    _, X32, y, params = _sparse_problem(code, n_outputs, np.float64, True, 4)
    _, X64, _, _ = _sparse_problem(code, n_outputs, np.float64, True, 4, np.int64)
    assert X64.indices.dtype == np.int64
    rows = np.arange(X32.shape[0], dtype=np.int64)
    np.testing.assert_array_equal(
        _sparse_kernel(X64, y, rows, params, code, 0.0, 1.0, True),
        _sparse_kernel(X32, y, rows, params, code, 0.0, 1.0, True))


@pytest.mark.parametrize("code, n_outputs", CASES)
@pytest.mark.parametrize("fit_intercept", [True, False])
def test_each_sparse_per_sample_gradient_is_within_clip_norm(code, n_outputs, fit_intercept):
    _, X, y, params = _sparse_problem(code, n_outputs, np.float64, fit_intercept, 7)
    params *= 5
    norms = [np.linalg.norm(_sparse_kernel(X, y, np.array([i]), params, code, 0.5, 0.25,
                                           fit_intercept))
             for i in range(X.shape[0])]
    assert max(norms) <= 0.25 * (1 + 1e-12)


def test_sparse_empty_batch_and_empty_rows():
    _, X, y, params = _sparse_problem(LOG_LOSS_MULTINOMIAL, 4, np.float64, True, 3)
    noise = np.random.default_rng(0).normal(size=params.shape)
    grad = _sparse_kernel(X, y, np.empty(0, dtype=np.int64), params,
                          LOG_LOSS_MULTINOMIAL, 0.0, 1.0, True, noise)
    np.testing.assert_array_equal(grad, noise)
    # A batch of empty rows moves the intercepts only (clipped to C).
    empty = np.array([0, 7, 14], dtype=np.int64)
    assert X[empty].nnz == 0
    grad = _sparse_kernel(X, y, empty, params, LOG_LOSS_MULTINOMIAL, 0.0, 0.1, True)
    assert np.all(grad[:, :-1] == 0) and np.any(grad[:, -1] != 0)
    ref_coef, ref_intercept = clipped_gradient_sum_reference(
        X, y, empty, params[:, :-1], params[:, -1], LOG_LOSS_MULTINOMIAL, 0.0, 0.1, True)
    np.testing.assert_allclose(grad[:, -1], ref_intercept, rtol=1e-12)


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_threaded_sparse_kernel_matches_serial(dtype):
    rng = np.random.default_rng(5)
    X = sp.random(8000, 200, density=0.1, format="csr", random_state=5, dtype=dtype)
    y = rng.integers(0, 4, 8000).astype(float)
    params = rng.normal(size=(4, 201)).astype(dtype)
    rows = np.arange(8000, dtype=np.int64)
    assert X.nnz * 4 >= max(PARALLEL_MIN_WORK, 2 * params.size)
    serial = _sparse_kernel(X, y, rows, params, LOG_LOSS_MULTINOMIAL, 0.0, 1.0, True)
    threaded = _sparse_kernel(X, y, rows, params, LOG_LOSS_MULTINOMIAL, 0.0, 1.0, True,
                              n_threads=2)
    tol = 1e-10 if dtype == np.float64 else 1e-4
    np.testing.assert_allclose(threaded, serial, rtol=tol, atol=tol)


def test_sparse_row_norms_neither_overflow_nor_underflow():
    X = np.array([[3e-300, 0.0, 4e-300], [0.0, 3e300, 4e300], [0.0, 0.0, 0.0], [3.0, 0.0, -4.0]])
    np.testing.assert_allclose(compute_sparse_row_norms(sp.csr_matrix(X)),
                               [5e-300, 5e300, 0.0, 5.0], rtol=1e-15)
    X32 = np.array([[3e-30, 0.0, 4e-30], [3e30, 4e30, 0.0]], dtype=np.float32)
    np.testing.assert_allclose(compute_sparse_row_norms(sp.csr_matrix(X32)),
                               [5e-30, 5e30], rtol=1e-6)
    # float32 squares of 2.5e-23 underflow: the norm is taken in float64.
    x = np.zeros((1, 2000), np.float32)
    x[0, ::2] = 2.5e-23
    expected = np.sqrt(np.sum(x.astype(np.float64) ** 2))
    assert compute_sparse_row_norms(sp.csr_matrix(x))[0] == pytest.approx(expected, rel=1e-12)
    # Random rows: the dense kernel's norms.
    R = sp.random(50, 30, density=0.2, format="csr", random_state=0)
    np.testing.assert_allclose(compute_sparse_row_norms(R), compute_row_norms(R.toarray()),
                               rtol=1e-14)


@pytest.mark.parametrize("x, target", [(1.0, 1e200), (1e-150, 1e155), (1e-300, 1e300)])
def test_sparse_huge_residuals_are_clipped_not_dropped(x, target):
    X = sp.csr_matrix(np.array([[0.0, x, 0.0]]))
    grad = _sparse_kernel(X, np.array([target]), np.array([0]), np.zeros((1, 4)),
                          SQUARED_ERROR, 0.0, 1e-6, False)
    assert grad[0, 1] == pytest.approx(-1e-6, rel=1e-9)


@pytest.mark.parametrize("fit_intercept", [False, True])
def test_sparse_tiny_float32_row_with_huge_target_is_clipped(fit_intercept):
    x = np.zeros((1, 1568), np.float32)
    x[0, ::2] = 2.5e-23
    grad = _sparse_kernel(sp.csr_matrix(x), np.array([1e30]), np.array([0]),
                          np.zeros((1, 1569), np.float32), SQUARED_ERROR, 0.0, 1.0,
                          fit_intercept)
    assert np.linalg.norm(grad.astype(np.float64)) == pytest.approx(1.0, rel=1e-6)


@pytest.mark.parametrize("n_outputs", [1, 3])
def test_sparse_overflowing_float32_margins_fall_back_to_float64(n_outputs):
    code = LOG_LOSS_MULTINOMIAL if n_outputs > 1 else LOG_LOSS_BINARY
    X = np.zeros((2, 40), np.float32)
    X[0, ::2] = 1e28
    X[1, 1::2] = 0.5
    y = np.array([0.0, 1.0])
    params = np.full((n_outputs, 41), 1e10, np.float32)
    params[:, -1] = 0.0
    rows = np.array([0, 1])
    grad = _sparse_kernel(sp.csr_matrix(X), y, rows, params, code, 0.0, 1.0, True)
    assert np.isfinite(grad).all()
    coef, intercept = clipped_gradient_sum_reference(
        X.astype(np.float64), y, rows, params[:, :-1].astype(np.float64),
        params[:, -1].astype(np.float64), code, 0.0, 1.0, True)
    np.testing.assert_allclose(grad[:, :-1], coef, rtol=1e-5, atol=1e-30)
    np.testing.assert_allclose(grad[:, -1], intercept, rtol=1e-5, atol=1e-30)


def test_sparse_fail_closed_cases_contribute_nothing():
    # A NaN residual (non-finite weights) and a subnormal float32 clip factor.
    X = sp.csr_matrix(np.array([[1.0, 0.0, 1.0]]))
    grad = _sparse_kernel(X, np.array([1.0]), np.array([0]), np.full((1, 4), np.nan),
                          SQUARED_ERROR, 0.0, 1.0, True)
    assert np.array_equal(grad, np.zeros_like(grad))
    X32 = sp.csr_matrix(np.full((1, 20), 3e38, np.float32))
    grad = _sparse_kernel(X32, np.array([1e30]), np.array([0]), np.zeros((1, 21), np.float32),
                          SQUARED_ERROR, 0.0, 1.0, True)
    assert np.array_equal(grad, np.zeros_like(grad))


# ------------------------------------------------------- canonical format


def _with_duplicates():
    """A CSR matrix storing entry (0, 1) as 3 + 4 and (1, 0) twice, unsorted."""
    data = np.array([3.0, 4.0, 2.0, 1.0, 1.0])
    indices = np.array([1, 1, 2, 0, 0])
    indptr = np.array([0, 3, 5])
    return sp.csr_matrix((data, indices, indptr), shape=(2, 3))


def test_duplicates_are_summed_into_a_copy():
    X = _with_duplicates()
    before = (X.data.copy(), X.indices.copy(), X.indptr.copy())
    canonical = as_canonical_csr(X)
    assert canonical is not X
    np.testing.assert_array_equal(canonical.toarray(), [[0.0, 7.0, 2.0], [2.0, 0.0, 0.0]])
    # The row norms of the represented rows, not of the stored entries.
    np.testing.assert_allclose(compute_sparse_row_norms(canonical), [math.sqrt(53.0), 2.0])
    for array, saved in zip((X.data, X.indices, X.indptr), before):
        np.testing.assert_array_equal(array, saved)
    # A canonical CSR matrix is used as it is; other formats are converted.
    assert as_canonical_csr(canonical) is canonical
    assert as_canonical_csr(canonical.tocsc()).format == "csr"


def test_stale_canonical_flag_is_not_trusted():
    X = sp.csr_matrix(np.array([[1.0, 2.0, 0.0]]))
    assert X.has_canonical_format  # scipy caches the answer...
    X.indices[1] = 0  # ...which an in-place edit makes stale
    canonical = as_canonical_csr(X)
    np.testing.assert_array_equal(canonical.toarray(), [[3.0, 0.0, 0.0]])


def test_malformed_index_arrays_are_refused():
    X = sp.csr_matrix(np.eye(3))
    X.indices[0] = -1
    with pytest.raises(ValueError, match="columns outside"):
        as_canonical_csr(X)
    X = sp.csr_matrix(np.eye(3))
    X.indptr[1] = 3
    with pytest.raises(ValueError, match="row pointers"):
        as_canonical_csr(X)


def test_duplicate_entries_are_clipped_by_their_sum():
    # A row stored as 30 + 40 in one column has norm 70, not 50: fitted on
    # it, the model is the one of the summed matrix.
    X = _with_duplicates()
    y = np.array([1.0, -1.0])
    params = dict(epsilon=1.0, batch_size=2, max_iter=3, eta0=0.1, sigma=1.0, random_state=0,
                  reproducible=True, target_bounds=(-1, 1))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        duplicated = DPLSSGDRegressor(**params).fit(X * 10, y)
        summed = DPLSSGDRegressor(**params).fit((X * 10).toarray(), y)
    np.testing.assert_allclose(duplicated.coef_, summed.coef_, rtol=1e-12)


# ---------------------------------------------------------------- estimators


def _data(n_classes, dtype, seed=0, n=400, d=30):
    rng = np.random.default_rng(seed)
    X = sp.random(n, d, density=0.15, format="csr", random_state=seed, dtype=dtype)
    scores = X @ rng.normal(size=(d, max(n_classes, 1)))
    if n_classes == 0:
        return X, scores[:, 0]
    if n_classes == 2:
        return X, (scores[:, 0] > np.median(scores[:, 0])).astype(int)
    return X, np.argmax(scores, axis=1)


def _fit_both(estimator, X, y):
    """The model of sparse X and of its dense rows, seeded alike."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", PrivacyLeakWarning)
        sparse = estimator.set_params(random_state=0, reproducible=True).fit(X, y)
        dense = type(estimator)(**estimator.get_params()).fit(X.toarray(), y)
    return sparse, dense


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
@pytest.mark.parametrize("fit_intercept", [True, False])
@pytest.mark.parametrize("estimator, n_classes", [
    (DPLSSGDClassifier(max_iter=3), 2),
    (DPLSSGDClassifier(loss="hinge", max_iter=3), 2),
    (DPLSSGDClassifier(max_iter=3), 4),
    (DPLSSGDRegressor(max_iter=3), 0),
    (DPLSSGDRegressor(loss="huber", max_iter=3, optimizer="adam"), 0),
], ids=["log_loss", "hinge", "multinomial", "squared_error", "huber_adam"])
def test_sparse_fit_is_the_dense_fit(estimator, n_classes, fit_intercept, dtype):
    X, y = _data(n_classes, dtype)
    estimator = estimator.set_params(fit_intercept=fit_intercept, sigma=1.0)
    sparse, dense = _fit_both(estimator, X, y)
    assert sparse.coef_.dtype == dtype
    tol = 1e-9 if dtype == np.float64 else 1e-4
    scale = np.abs(dense.coef_).max()
    np.testing.assert_allclose(sparse.coef_, dense.coef_, rtol=tol, atol=tol * scale)
    np.testing.assert_allclose(sparse.intercept_, dense.intercept_, rtol=tol, atol=tol * scale)
    assert sparse.noise_multiplier_ == dense.noise_multiplier_
    assert sparse.dp_event_ == dense.dp_event_
    # Every prediction method takes sparse rows, CSR or CSC.
    for method in ("predict", "decision_function", "predict_proba", "predict_log_proba"):
        if hasattr(sparse, method):
            for rows in (X, X.tocsc()):
                np.testing.assert_allclose(getattr(sparse, method)(rows),
                                           getattr(dense, method)(X.toarray()),
                                           rtol=tol, atol=tol)
    assert sparse.score(X, y) == pytest.approx(dense.score(X.toarray(), y), abs=0.01)


def test_private_sparse_fit_reports_the_dense_mechanism():
    X, y = _data(2, np.float64)
    ledger = PrivacyLedger()
    sparse = DPLSSGDClassifier(epsilon=1.0, classes=[0, 1], ledger=ledger).fit(X, y)
    dense = DPLSSGDClassifier(epsilon=1.0, classes=[0, 1], ledger=ledger).fit(X.toarray(), y)
    assert sparse.epsilon_ == dense.epsilon_ <= 1.0
    assert sparse.noise_multiplier_ == dense.noise_multiplier_ > 0
    # The ledger charges a sparse fit as it charges the dense one.
    charged = [record["dp_event"] for record in ledger.records]
    assert charged == [sparse.dp_event_, dense.dp_event_]


def test_sparse_input_tag():
    for estimator in (DPLSSGDClassifier(), DPLSSGDRegressor()):
        assert estimator.__sklearn_tags__().input_tags.sparse is True
    assert BoundedScaler(0, 1).__sklearn_tags__().input_tags.sparse is False


def test_sparse_float32_predictions_that_overflow_are_recomputed():
    X = np.zeros((2, 40), np.float32)
    X[0, ::2] = 1e28
    X[1, 1::2] = 0.5
    model = DPLSSGDRegressor(max_iter=1, target_bounds=(-1, 1)).fit(
        np.eye(40, dtype=np.float32), np.zeros(40))
    model.coef_ = np.full(40, 1e12, np.float32)
    predicted = model.predict(sp.csr_matrix(X))
    assert np.isfinite(predicted).all()
    np.testing.assert_allclose(predicted, model.predict(X), rtol=1e-6)


def test_mostly_clipped_warning_reads_sparse_rows():
    X = sp.csr_matrix(np.full((50, 4), 100.0) * (np.arange(4) < 2))
    y = np.arange(50) % 2
    for rows in (X, X.toarray()):
        with pytest.warns(UserWarning, match="far from unit scale"):
            DPLSSGDClassifier(max_iter=1, classes=[0, 1]).fit(rows, y)


def test_one_hot_column_transformer_pipeline():
    # The new user: OneHotEncoder's default sparse output, declared
    # categories, public bounds for the numeric column.
    rng = np.random.default_rng(0)
    n = 600
    colours = ["red", "green", "blue", "cyan", "grey", "pink", "gold", "teal"]
    sizes = ["XS", "S", "M", "L", "XL", "XXL"]
    colour = rng.choice(colours, n)
    size = rng.choice(sizes, n)
    age = rng.uniform(18, 90, n)
    y = (np.isin(colour, colours[:4]) | (age > 60)).astype(int)
    X = np.column_stack([colour, size, age]).astype(object)
    encode = ColumnTransformer([
        ("categories", OneHotEncoder(categories=[colours, sizes]), [0, 1]),
        ("age", BoundedScaler(lower=18, upper=90), [2]),
    ])
    assert sp.issparse(encode.fit_transform(X))
    model = make_pipeline(encode, DPLSSGDClassifier(epsilon=math.inf, sigma=0.0,
                                                    classes=[0, 1], random_state=0,
                                                    reproducible=True))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", PrivacyLeakWarning)
        assert model.fit(X, y).score(X, y) > 0.9


def test_tfidf_text_pipeline():
    words = ["cat", "dog", "fish", "bird", "tree", "rock", "sun", "moon"]
    rng = np.random.default_rng(0)
    texts = [" ".join(rng.choice(words, 6)) for _ in range(300)]
    y = np.array([("cat" in text) for text in texts]).astype(int)
    model = make_pipeline(TfidfVectorizer(vocabulary=words),
                          DPLSSGDClassifier(epsilon=math.inf, classes=[0, 1], random_state=0,
                                            reproducible=True))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", PrivacyLeakWarning)
        assert model.fit(texts, y).score(texts, y) > 0.8


def test_search_on_sparse_rows():
    X, y = _data(2, np.float64, n=300)
    search = DPRandomizedSearch(DPLSSGDClassifier(max_iter=2, classes=[0, 1]),
                                {"eta0": [0.1, 1.0]}, n_trials=2, epsilon=2.0)
    search.fit(X, y)
    assert search.predict(X).shape == (300,)
    assert math.isfinite(search.epsilon_) and search.epsilon_ <= 2.0


def test_audits_with_sparse_rows():
    X, y = _data(2, np.float64, n=200, d=5)
    with pytest.raises(TypeError, match="dense"):
        audit_epsilon(DPLSSGDClassifier(max_iter=1), X, y, n_runs=4)
    audit = audit_implementation(DPLSSGDClassifier(max_iter=1, classes=[0, 1]), X, y)
    assert audit.passed


def test_sparse_fit_memory_does_not_grow_with_dense_size():
    # 20,000 x 200,000 at density 1e-4: 32 GB dense, 5 MB sparse, and a
    # batch of 625 rows would be 1 GB gathered densely. The fit's peak
    # allocation is the model-sized buffers (weights, gradient, a chunk of
    # dense noise): O(d), whatever n and b.
    n, d = 20_000, 200_000
    rng = np.random.default_rng(0)
    X = sp.random(n, d, density=1e-4, format="csr", random_state=rng)
    y = rng.integers(0, 2, n)
    estimator = DPLSSGDClassifier(max_iter=1, classes=[0, 1])
    estimator.fit(X, y)  # compile, and fill the calibration cache
    tracemalloc.start()
    try:
        estimator.fit(X, y)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    x_bytes = X.data.nbytes + X.indices.nbytes + X.indptr.nbytes
    model_bytes = 8 * (d + 1)
    assert peak < 20 * model_bytes + x_bytes, (peak, model_bytes, x_bytes)
    assert peak < n * d * 8 / 500


def test_output_perturbation_refuses_sparse_rows():
    from sklearn_dplssgd._mechanisms.output_perturbation._descent import train_output_perturbation

    X, y = _data(2, np.float64, n=50, d=5)
    with pytest.raises(TypeError, match="Output perturbation needs dense X"):
        train_output_perturbation(
            X, y.astype(float), loss="log_loss", n_outputs=1, fit_intercept=True, alpha=0.1,
            row_norm_bound=1.0, eta=None, batch_size=10, n_passes=1,
            rng=np.random.default_rng(0), loss_threshold=0.0, epsilon=1.0, delta=1e-5)


def test_weighted_sparse_fit_equals_the_weighted_dense_fit():
    import scipy.sparse as sp
    from sklearn_dplssgd import DPLSSGDClassifier

    rng = np.random.default_rng(4)
    X = rng.normal(size=(300, 12)) * (rng.random((300, 12)) < 0.3)
    y = rng.integers(3, size=300)
    weights = rng.uniform(0, 2, size=300)
    # sigma="auto" resolves by format (0.25 for these 12 dense columns, 0 for
    # sparse ones): the same smoothing on both sides.
    params = dict(classes=range(3), max_sample_weight=2.0, epsilon=1.0, max_iter=3,
                  sigma=0.0, random_state=0, reproducible=True)
    dense = DPLSSGDClassifier(**params).fit(X, y, sample_weight=weights)
    sparse = DPLSSGDClassifier(**params).fit(sp.csr_matrix(X), y, sample_weight=weights)
    np.testing.assert_allclose(sparse.coef_, dense.coef_, rtol=1e-9, atol=1e-12)
