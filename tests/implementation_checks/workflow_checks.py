"""Implementation checks across fits and inputs: the ledger, error messages,
rounding after the clip, error outcomes on neighbouring data sets, and
:func:`audit_implementation`, which runs every check."""

import math
import os
import pickle
import tempfile

import numpy as np
import scipy.sparse as sp
import sklearn
from sklearn.base import clone, is_classifier

from sklearn_dplssgd._linear_model import BaseDPLSSGD
from sklearn_dplssgd._accounting import LedgerFileError, PrivacyLedger
from sklearn_dplssgd._mechanisms import mechanism_named
from sklearn_dplssgd._model_selection import DPRandomizedSearch, final_estimator
from sklearn_dplssgd._utils import public_row_count
from .attribute_checks import check_public_attributes
from sklearn_dplssgd.audit import check_float_channel
from .common import (
    CLIP_TOLERANCE, CheckResult, ImplementationAudit, declare_public_n, declared_labels,
    default_data, private_clone, quietly, set_existing,
)
from .release_checks import (
    check_clipping, check_clone_independence, check_overflow_row, check_row_count,
    check_seed_replay,
)
from .search_checks import check_search_private_steps

__all__ = [
    "audit_implementation",
    "check_error_messages",
    "check_error_outcomes",
    "check_ledger_continuity",
    "check_rounding",
]


def _charged_once_more(ledger, model, X, y, escapes, what):
    """Continue the fitted ``model`` on ``(X, y)``; record in ``escapes`` if uncharged.

    The continuation is ``partial_fit``, or, where the mechanism has none
    (output perturbation), a refit of the same model: either releases again.
    """
    before = len(ledger.records)
    continue_fit = model.partial_fit if hasattr(model, "partial_fit") else model.fit
    continued = quietly(continue_fit, X, y)
    after = ledger.records
    if len(after) != before + 1 or after[-1]["dp_event"] != continued.dp_events_[-1]:
        escapes.append(f"{what} charged {len(after) - before} times, not once")


def check_ledger_continuity(estimator, X=None, y=None):
    """A released model cannot escape its ledger, and a ledger cannot forget.

    Three ways around a ``max_epsilon`` cap, each with a ledger of the
    check's own in a temporary directory (never the estimator's):

    * fit with the ledger, then ``partial_fit`` on the same rows (a refit
      under output perturbation, which has no ``partial_fit``): the
      continuation must be charged, once, with its own event;
    * a :class:`~sklearn_dplssgd.DPRandomizedSearch` of the estimator with the ledger, then
      ``partial_fit`` of its best model: the search must be one record and
      the continuation another (``mechanism="gradient"`` only);
    * the ledger's records file removed (a worker on another host, a cleaned
      temporary directory): the next fit must be refused, and no empty file
      created in its place.

    Returns
    -------
    CheckResult
        ``measured`` is the number of escapes.
    """
    if X is None:
        X, y = default_data(estimator)
    model = declare_public_n(private_clone(estimator), public_row_count(X))
    escapes = []
    with tempfile.TemporaryDirectory(prefix="dplssgd-audit-") as folder:
        def new_ledger(name):
            return PrivacyLedger(path=os.path.join(folder, name),
                                 neighboring=model.get_params()["neighboring"])

        ledger = new_ledger("fit.records")
        fitted = quietly(clone(model).set_params(ledger=ledger).fit, X, y)
        if len(ledger.records) != 1:
            escapes.append(f"fit charged {len(ledger.records)} times, not once")
        _charged_once_more(ledger, fitted, X, y, escapes, "continuing a fitted model")

        if model.get_params()["mechanism"] == "gradient":
            ledger = new_ledger("search.records")
            search = DPRandomizedSearch(
                clone(model), {"alpha": [model.alpha]}, epsilon=float(model.epsilon),
                n_trials=2, score_bound=1.0, ledger=ledger)
            quietly(search.fit, X, y)
            if [record["dp_event"] for record in ledger.records] != [search.dp_event_]:
                escapes.append(f"search recorded {len(ledger.records)} times, not once")
            best, _ = final_estimator(search.best_estimator_)
            _charged_once_more(ledger, best, X, y, escapes,
                               "continuing the search's best model")

        ledger = new_ledger("removed.records")
        worker_copy = pickle.loads(pickle.dumps(clone(model).set_params(ledger=ledger)))
        os.remove(ledger.path)
        try:
            quietly(worker_copy.fit, X, y)
            escapes.append("a ledger without its records file accepted a charge")
        except (FileNotFoundError, LedgerFileError):
            pass
        if os.path.exists(ledger.path):
            escapes.append("a missing records file was recreated empty")
    return CheckResult(
        "ledger continuity", not escapes, float(len(escapes)), 0.0,
        "releases that escaped the ledger or a ledger that forgot its records"
        + (f": {'; '.join(escapes)}" if escapes else ""),
    )


# Private values planted in bad input, and how they read in any message: the
# string, or the number in any of NumPy's and Python's renderings.
_MARKER_CELL = "PRIVATE-7391"
_MARKER_NUMBER = 987654.321
_MARKER_TRACES = ("PRIVATE-7391", "98765", "9.8765")


def _quoted_markers(error):
    """Whether ``error`` or an exception chained to it quotes a marker."""
    seen = []
    while error is not None and error not in seen:
        seen.append(error)
        texts = (str(error), repr(error.args), repr(getattr(error, "__notes__", "")))
        if any(trace in text for text in texts for trace in _MARKER_TRACES):
            return True
        error = error.__cause__ if error.__cause__ is not None else error.__context__
    return False


def check_error_messages(estimator):
    """Errors on bad input quote no private value.

    Bad inputs carry planted values: a string cell in X (as an array, a list
    and, where pandas is installed, a DataFrame), a 1-D X, a string target
    (regressors) and a string sample weight. Each goes to ``fit`` and, where
    it is X, to ``predict`` of a fitted model. The messages, the exceptions'
    arguments and every exception chained to them (``__cause__``,
    ``__context__``) must not contain the planted values.

    Returns
    -------
    CheckResult
        ``measured`` is the number of errors that quote a planted value.
    """
    X, y = default_data(estimator, n_rows=40)
    model = declare_public_n(private_clone(estimator), len(X))
    fitted = quietly(clone(model).fit, X, y)
    with_string = X.astype(object)
    with_string[7, 1] = _MARKER_CELL
    tables = {"string cell": with_string, "string cell (list)": with_string.tolist(),
              "1-D X": np.full(len(X), _MARKER_NUMBER)}
    try:
        import pandas
    except ImportError:  # pragma: no cover - pandas is optional
        pass
    else:
        tables["string cell (DataFrame)"] = pandas.DataFrame(with_string)
    weights = np.ones(len(X), dtype=object)
    weights[3] = _MARKER_CELL
    calls = {}
    for kind, table in tables.items():
        calls[f"fit, {kind}"] = lambda table=table: clone(model).fit(table, y)
        calls[f"predict, {kind}"] = lambda table=table: fitted.predict(table)
    calls["fit, string sample_weight"] = lambda: clone(model).fit(X, y, sample_weight=weights)
    if not is_classifier(estimator):
        targets = y.astype(object)
        targets[5] = _MARKER_CELL
        calls["fit, string target"] = lambda: clone(model).fit(X, targets)
    leaks = []
    for what, call in calls.items():
        try:
            quietly(call)
        except Exception as error:  # any failure must be free of the values
            if _quoted_markers(error):
                leaks.append(what)
    return CheckResult(
        "error messages", not leaks, float(len(leaks)), 0.0,
        f"errors that quote a planted private value, of {len(calls)} bad inputs"
        + (f": {', '.join(leaks)}" if leaks else ""),
    )


def _rounding_formats():
    """The input formats of check_rounding: NumPy, CSR and, where installed, PyTorch."""
    formats = {"dense": lambda X: X, "csr": sp.csr_matrix}
    try:
        import torch
        with sklearn.config_context(array_api_dispatch=True):
            pass  # refused unless SciPy's array API support is on (SCIPY_ARRAY_API=1)
    except (ImportError, RuntimeError):
        return formats
    formats["torch"] = torch.asarray
    return formats


def _tiny_residual_case(model, dtype):
    """A one-row data set whose unclipped residual lies just above half the
    dtype's smallest subnormal (it rounds UP to it), and the exact residual
    norm; None where the loss has no such residual (hinge, insensitive)."""
    half_way = 0.75 * float(np.finfo(dtype).smallest_subnormal)
    params = model.get_params()
    loss = params.get("loss")
    if not is_classifier(model):
        if loss not in ("squared_error", "huber"):
            return None
        # Zero weights: r = 0 - y (huber's threshold is far above it).
        return np.array([-half_way]), {}, half_way
    if loss != "log_loss":
        return None
    labels = declared_labels(model)
    # Margins log(r) make the other classes' probabilities r: from zero
    # coefficients and an intercept, with the first class as the label.
    bias = dtype(math.log(half_way))
    probability = math.exp(float(bias))
    n_outputs = 1 if len(labels) == 2 else len(labels)
    intercept = np.full(n_outputs, bias, dtype)
    if n_outputs > 1:
        intercept[0] = 0.0
    norm = probability * math.sqrt(max(n_outputs - 1, 1))
    return np.array([labels[0]]), {"intercept_init": intercept}, norm


def check_rounding(estimator, dtypes=(np.float32, np.float64)):
    """The clip is checked on the coefficients as stored, in every input format.

    A float32 coefficient just above half the smallest subnormal number rounds
    *up* to it: a row whose float64 contribution is at the clip norm then adds
    up to twice the clip norm (an attack measured an epsilon lower bound of
    4.89 at a claimed 4). For each dtype and input format (dense, CSR,
    PyTorch where installed), one noise-free step is taken on a single row of
    norm about 1e38 (float32) or 1e140 (float64) whose residual, computed in
    float64, lies in that range, with a clip norm just above the row's exact
    gradient norm. The step reveals the stored coefficient times the row; its
    norm over the clip norm must not exceed 1. Losses without such a residual
    (hinge, epsilon-insensitive: residuals of 0 or 1) are reported as not
    applicable. The steps are the estimator's mechanism's (gradient
    perturbation's under output perturbation), in the formats it trains on;
    a mechanism that rounds onto a grid is held to its own bound on a
    rounded row, and one that trains from zero weights only skips the cases
    that need an initial intercept (the classifier's).

    Returns
    -------
    CheckResult
        ``measured`` is the largest stored gradient norm over ``clip_norm``.
    """
    batch_size = 2
    worst, worst_case, n_cases = 0.0, "", 0
    # The steps of the estimator's own mechanism where it takes steps
    # (output perturbation has none: its steps are gradient perturbation's),
    # in the input formats that mechanism trains on.
    mechanism = mechanism_named(estimator.get_params()["mechanism"])
    if mechanism.perturbs_weights:
        mechanism = mechanism_named("gradient")
    formats = {name: convert for name, convert in _rounding_formats().items()
               if (name != "csr" or mechanism.accepts_sparse)
               and (name != "torch" or mechanism.accepts_array_api)}
    for dtype in dtypes:
        case = _tiny_residual_case(estimator, dtype)
        if case is None:
            continue
        y, fit_params, residual_norm = case
        big = 1e38 if dtype == np.float32 else 1e140
        X = np.zeros((1, 3), dtype)
        X[0, 0] = big
        feature_norm = math.hypot(float(X[0, 0]), 1.0)
        clip_norm = 1.0001 * residual_norm * feature_norm
        for name, convert in formats.items():
            if fit_params and (name == "torch" or not mechanism.supports_partial_fit):
                continue  # these paths start from zero weights only
            model = private_clone(estimator)
            set_existing(
                model, epsilon=math.inf, sigma=0.0, alpha=0.0, learning_rate="constant",
                eta0=1.0, batch_size=batch_size, max_iter=1, public_n_samples=1,
                fit_intercept=True, clip_norm=clip_norm, mechanism=mechanism.name,
                optimizer="sgd", average=False,
            )
            if name == "torch":
                with sklearn.config_context(array_api_dispatch=True):
                    fitted = quietly(model.fit, convert(X), convert(y.astype(np.float64)))
            else:
                fitted = quietly(lambda: model.fit(convert(X), y, **fit_params))
            coef = np.atleast_2d(_as_numpy(fitted.coef_)).astype(np.float64)
            # The step is -coefficient * x / b: read the coefficient back
            # from the coordinate of the row's one non-zero feature.
            stored = coef[:, 0] * batch_size / float(X[0, 0])
            ratio = float(np.linalg.norm(stored)) * feature_norm / (
                clip_norm * mechanism.noise_free_contribution_bound(
                    coef.shape[0] * (X.shape[1] + 1)))
            n_cases += 1
            if not math.isfinite(ratio) or ratio > worst:
                worst = ratio if math.isfinite(ratio) else math.inf
                worst_case = f"{np.dtype(dtype).name} {name}"
    limit = 1.0 + CLIP_TOLERANCE
    detail = (f"largest stored gradient norm / clip_norm over {n_cases} dtype and format "
              f"cases of a residual that rounds up to a subnormal"
              + (f" (worst: {worst_case})" if worst_case else "")
              if n_cases else "not applicable: no case of a residual near a subnormal for this "
              "loss and mechanism")
    return CheckResult("rounding", worst <= limit, worst, limit, detail)


def _as_numpy(array):
    """A fitted attribute as a NumPy array, whatever its namespace."""
    return np.asarray(array.cpu() if hasattr(array, "cpu") else array)


def _neighbouring_edge_pairs(estimator):
    """Pairs of neighbouring data sets, inside the declared domain, one side at an edge.

    Each pair is (name, (X, y, sample_weight), (X, y, sample_weight), params):
    the two sides differ in one row (replaced; or added, under add/remove
    with a public row count), every weight within [0, max_sample_weight] and
    every label declared.
    """
    model = private_clone(estimator)
    X, y = default_data(estimator, n_rows=40, n_features=4, seed=2)
    n = len(X)
    pairs = []
    zero = np.zeros(n)
    one_raised = zero.copy()
    one_raised[0] = 1.0
    pairs.append(("all weights zero", (X, y, zero), (X, y, one_raised), {}))
    X_long = X.copy()
    X_long[0] = 1e200
    pairs.append(("one row of norm 1e200", (X, y, None), (X_long, y, None), {}))
    X_zero = np.zeros_like(X)
    X_one = X_zero.copy()
    X_one[0] = X[0]
    pairs.append(("all rows zero", (X_zero, y, None), (X_one, y, None), {}))
    if is_classifier(model):
        labels = declared_labels(model)
        same = np.full(n, labels[0])
        other = same.copy()
        other[0] = labels[-1]
        pairs.append(("one class present", (X, same, None), (X, other, None), {}))
        pairs.append(("class weight zero for the only class present", (X, same, None),
                      (X, other, None), {"class_weight": {labels[0]: 0.0}}))
    if model.get_params().get("mechanism", "gradient") == "gradient":
        # Under add/remove the empty data set neighbours every one-row one.
        pairs.append(("no rows (add/remove)", (X[:0], y[:0], None), (X[:1], y[:1], None),
                      {"neighboring": "add_remove", "public_n_samples": n}))
    return pairs


def check_error_outcomes(estimator):
    """Whether a fit errors never depends on one row inside the declared domain.

    An error that one row decides is a release with epsilon = infinity: the
    data set errors, its neighbour releases a model. For each pair of
    neighbouring data sets from ``_neighbouring_edge_pairs`` (all
    weights zero against one weight raised to 1, all labels one class
    against one row of another, a class weight of 0 for the only class
    present, one row of norm 1e200, all rows zero, and, for gradient
    perturbation under add/remove with a public row count, the empty data
    set against one row), both sides are fitted; they must both succeed or
    both fail with the same exception type.

    Returns
    -------
    CheckResult
        ``measured`` is the number of pairs whose outcomes differ.
    """
    differing = []
    pairs = _neighbouring_edge_pairs(estimator)
    for name, first, second, params in pairs:
        outcomes = []
        for X, y, weights in (first, second):
            model = set_existing(private_clone(estimator), **params)
            model = declare_public_n(model, len(X))
            try:
                quietly(lambda: model.fit(X, y, sample_weight=weights))
                outcomes.append("model")
            except (ValueError, TypeError, FloatingPointError, OverflowError,
                    ZeroDivisionError) as error:
                outcomes.append(type(error).__name__)
        if outcomes[0] != outcomes[1]:
            differing.append(f"{name} ({outcomes[0]} against {outcomes[1]})")
    return CheckResult(
        "error outcomes", not differing, float(len(differing)), 0.0,
        f"pairs of neighbouring data sets, of {len(pairs)}, where one side errors"
        + (f": {'; '.join(differing)}" if differing else ""),
    )


def audit_implementation(estimator, X=None, y=None):
    """Run the implementation checks on a configured estimator.

    The checks are :func:`check_clipping`, :func:`check_seed_replay`,
    :func:`check_clone_independence`, :func:`check_row_count`,
    :func:`check_overflow_row`, :func:`check_rounding`,
    :func:`check_error_outcomes`, :func:`check_ledger_continuity`,
    :func:`check_search_private_steps`,
    :func:`check_error_messages` and :func:`check_public_attributes`; for a
    mechanism whose noisy values are integers (``mechanism="gradient"``)
    also :func:`check_float_channel` (a few seconds).

    Parameters
    ----------
    estimator : DPLSSGDClassifier or DPLSSGDRegressor
        The configuration to check (it is cloned, never fitted itself).
    X, y : array-like or sparse matrix, default=None
        Rows for the seed and clone checks; by default random ones.

    Returns
    -------
    ImplementationAudit

    Examples
    --------
    >>> from sklearn_dplssgd import DPLSSGDRegressor
    >>> from sklearn_dplssgd.audit import audit_implementation
    >>> audit_implementation(DPLSSGDRegressor(max_iter=2)).passed
    True
    """
    if not isinstance(estimator, BaseDPLSSGD):
        raise TypeError(
            "audit_implementation checks DPLSSGDClassifier and DPLSSGDRegressor "
            f"instances; got {type(estimator).__name__}."
        )
    checks = (
        check_clipping(estimator),
        check_seed_replay(estimator, X, y),
        check_clone_independence(estimator, X, y),
        check_row_count(estimator),
        check_overflow_row(estimator),
        check_rounding(estimator),
        check_error_outcomes(estimator),
        check_ledger_continuity(estimator, X, y),
        check_search_private_steps(estimator),
        check_error_messages(estimator),
        check_public_attributes(estimator, X, y),
    )
    if mechanism_named(estimator.get_params()["mechanism"]).releases_integers:
        checks += (check_float_channel(estimator),)
    return ImplementationAudit(type(estimator).__name__, checks)
