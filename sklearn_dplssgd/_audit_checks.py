"""Implementation checks: five ways a printed guarantee can be false.

:func:`audit_epsilon` measures how private a configured estimator is from
many fitted models. The checks here target implementation bugs that such a
statistical audit misses or needs far too many runs to see, each found in an
attack review of an earlier version of this library:

* :func:`check_clipping`: one step without noise on single adversarial rows
  (tiny float32 rows with huge targets, huge rows, rows whose float32 margins
  overflow); the step reveals the clipped gradient, whose norm must not exceed
  ``clip_norm``. (float32 row norms that underflowed once let a row through
  with 18.7 times the clip norm.)
* :func:`check_seed_replay`: fit with the seeds a user passes by habit,
  pickle the model as if publishing it, and replay the fit from the pickle's
  own parameters; the replay must not reproduce the noise, and the caller's
  Generator must not be advanced (a published, advanced PCG64 can be rewound).
* :func:`check_clone_independence`: two clones with the same
  ``random_state`` fitted on the same rows must not share their noise (their
  difference would be noise-free).
* :func:`check_row_count`: neighbouring data sets under the estimator's
  adjacency must give the same public mechanism (sample rate, steps, noise,
  epsilon); under add/remove that means n = batch_size against
  n = batch_size + 1.
* :func:`check_overflow_row`: whether fits fail must not depend on one row
  (a float32 row of entries 3e38 once made every fit diverge).
* :func:`check_ledger_continuity`: a released model (of a fit with a ledger,
  or the best model of :class:`DPRandomizedSearch`) continued by
  ``partial_fit`` is charged to the ledger, the search itself once; a ledger
  whose records file is removed refuses the next charge (the search's best
  model once dropped its ledger, and a missing file restarted from zero).
* :func:`check_error_messages`: errors on bad input (a string cell in X, a
  1-D X, a string target or weight) quote no value of it, in the message,
  the arguments or the chained exceptions (scikit-learn's validation once
  printed the cell, or the whole 1-D X).

* :func:`check_rounding`: the clip is checked on the coefficients as stored
  in the data's dtype (a float32 coefficient rounded up to a subnormal once
  let a row contribute 1.33 times the clip norm), over every input format.
* :func:`check_error_outcomes`: pairs of neighbouring data sets inside the
  declared domain, one side at an edge (all weights zero, one class present,
  a row too long to train on, all rows zero, no rows under add/remove);
  both sides must train, or both fail alike.

:func:`audit_implementation` runs them all. A failed check is a bug in the
implementation, not a statistical finding.
"""

import dataclasses
import math
import os
import pickle
import tempfile
import warnings

import numpy as np
import sklearn
import scipy.sparse as sp
from sklearn.base import clone, is_classifier

from ._base import BaseDPLSSGD
from ._defaults import nominal_batch_size
from ._ledger import PrivacyLedger
from ._search import DPRandomizedSearch, final_estimator
from ._validation import PrivacyLeakWarning, public_row_count

__all__ = [
    "CheckResult",
    "ImplementationAudit",
    "audit_implementation",
    "check_clipping",
    "check_clone_independence",
    "check_error_messages",
    "check_error_outcomes",
    "check_ledger_continuity",
    "check_overflow_row",
    "check_rounding",
    "check_row_count",
    "check_seed_replay",
]

# Relative slack over the clip norm allowed for floating-point rounding of the
# clipped coefficient and the sum (float32 rounds at about 6e-8).
_CLIP_TOLERANCE = 1e-5
# Features of the adversarial rows of check_clipping (an MNIST-sized row).
_CLIP_FEATURES = 784


@dataclasses.dataclass(frozen=True)
class CheckResult:
    """Outcome of one implementation check.

    Attributes
    ----------
    name : str
        The check.
    passed : bool
        Whether the implementation passed it.
    measured : float
        The quantity measured (see ``detail`` for its meaning).
    limit : float
        The largest value of ``measured`` that passes.
    detail : str
        What was measured, in words.
    """

    name: str
    passed: bool
    measured: float
    limit: float
    detail: str

    def __str__(self):
        verdict = "passed" if self.passed else "FAILED"
        return (f"{self.name}: {verdict} (measured {self.measured:.6g}, "
                f"limit {self.limit:.6g}): {self.detail}")


@dataclasses.dataclass(frozen=True)
class ImplementationAudit:
    """The results of :func:`audit_implementation`.

    Attributes
    ----------
    estimator_name : str
    checks : tuple of CheckResult
    """

    estimator_name: str
    checks: tuple

    @property
    def passed(self):
        """Whether every check passed."""
        return all(check.passed for check in self.checks)

    def __str__(self):
        lines = [f"Implementation audit of {self.estimator_name}: "
                 f"{'passed' if self.passed else 'FAILED'}"]
        lines += [f"  {check}" for check in self.checks]
        return "\n".join(lines)


def _quiet(function, *args):
    """Call ``function`` with the library's usage warnings silenced."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", PrivacyLeakWarning)
        warnings.simplefilter("ignore", UserWarning)
        return function(*args)


def _set_existing(estimator, **params):
    """``set_params`` for the parameters this estimator version has."""
    known = estimator.get_params()
    return estimator.set_params(**{k: v for k, v in params.items() if k in known})


def _labels(estimator):
    """Declared classes, or (0, 1)."""
    if not is_classifier(estimator):
        return None
    declared = estimator.get_params().get("classes")
    return np.unique(np.asarray(declared)) if declared is not None else np.array([0, 1])


def _private(estimator):
    """A clone with finite epsilon, declared classes and, under add/remove, a
    public row count (the auditor's choice), ready to fit ``n_rows`` rows."""
    model = clone(estimator)
    _set_existing(model, verbose=0)
    if not math.isfinite(model.epsilon):
        model.set_params(epsilon=1.0)
    if is_classifier(model):
        model.set_params(classes=_labels(estimator))
    return model


def _declare_public_n(model, n_rows):
    params = model.get_params()
    if params.get("neighboring") == "add_remove" and params.get("public_n_samples", 0) is None:
        model.set_params(public_n_samples=n_rows)
    return model


def _default_data(estimator, n_rows=200, n_features=5, dtype=np.float64, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.uniform(-1.0, 1.0, size=(n_rows, n_features)).astype(dtype)
    if is_classifier(estimator):
        labels = _labels(estimator)
        y = labels[rng.integers(0, len(labels), size=n_rows)]
    else:
        y = X @ rng.normal(size=n_features)
    return X, y


def _adversarial_rows(estimator, dtype):
    """Single rows (x, y) at the edges of floating point, for this loss."""
    d = _CLIP_FEATURES
    finite_max = float(np.finfo(dtype).max)
    tiny = np.full(d, 2.5e-23, dtype)
    tiny[0] = 2.7e-23
    huge = np.full(d, 1e30 if dtype == np.float32 else 1e140, dtype)
    # float32 entries near the top of the range: margins overflow float32.
    overflow = np.full(d, 3e38 if dtype == np.float32 else 1e148, dtype)
    ordinary = np.linspace(-1.0, 1.0, d).astype(dtype)
    rows = [tiny, huge, overflow, ordinary, -overflow]
    if is_classifier(estimator):
        labels = _labels(estimator)
        return [(row, label) for row in rows for label in (labels[0], labels[-1])]
    targets = (1e30, -1e30, 0.5 * finite_max if dtype == np.float64 else 1e38)
    return [(row, target) for row in rows for target in targets]


def check_clipping(estimator, dtypes=(np.float32, np.float64)):
    """Per-sample clipping holds at the edges of floating point.

    For each adversarial row, one noise-free step (``epsilon=inf``,
    ``sigma=0``, ``alpha=0``, constant step 1, full batch) is taken from zero
    weights on that row alone; the weights after it are ``-1/b`` times the
    row's clipped gradient, so ``b ||weights|| / clip_norm`` must be at most 1.

    Parameters
    ----------
    estimator : DPLSSGDClassifier or DPLSSGDRegressor
        The configuration (loss, clip norm, intercept) to check.
    dtypes : tuple of dtypes, default=(float32, float64)

    Returns
    -------
    CheckResult
        ``measured`` is the largest ratio of a clipped gradient's norm to
        ``clip_norm``.
    """
    batch_size = 2
    worst = 0.0
    worst_case = ""
    cases = [(dtype, row, target, fit_intercept)
             for dtype in dtypes
             for row, target in _adversarial_rows(estimator, dtype)
             # Without an intercept the row norm alone sets the clip factor.
             for fit_intercept in (True, False)]
    for dtype, row, target, fit_intercept in cases:
        model = _private(estimator)
        _set_existing(
            model, epsilon=math.inf, sigma=0.0, alpha=0.0, learning_rate="constant",
            eta0=1.0, batch_size=batch_size, max_iter=1, public_n_samples=1,
            fit_intercept=fit_intercept,
        )
        y = np.asarray([target])
        fitted = _quiet(model.fit, row[np.newaxis, :], y)
        weights = np.concatenate([np.ravel(fitted.coef_), np.ravel(fitted.intercept_)])
        ratio = batch_size * float(np.linalg.norm(weights.astype(np.float64))) / float(
            model.clip_norm)
        if not math.isfinite(ratio):
            ratio = math.inf
        if ratio > worst:
            worst = ratio
            worst_case = (f"{np.dtype(dtype).name} row of entries {float(row[1]):.3g}, "
                          f"target {target!s:.10}, fit_intercept={fit_intercept}")
    limit = 1.0 + _CLIP_TOLERANCE
    return CheckResult(
        "clipping", worst <= limit, worst, limit,
        f"largest clipped gradient norm / clip_norm over {len(dtypes)} dtypes of "
        f"adversarial rows (worst: {worst_case})",
    )


def _seed_forms():
    return {
        "int 42": lambda: 42,
        "Generator": lambda: np.random.default_rng(7),
        "SeedSequence": lambda: np.random.SeedSequence(3),
        "RandomState": lambda: np.random.RandomState(0),
    }


def check_seed_replay(estimator, X=None, y=None):
    """A published model does not carry the seed of its own noise.

    For each way users pass a seed (an int, a Generator, a SeedSequence, a
    RandomState), fit, pickle the model as if publishing it, and refit a
    clone of the unpickled model on the same rows, as an attacker holding the
    pickle would. A private fit (finite ``epsilon_``) fails the check if the
    replay reproduces its weights exactly, or if the caller's Generator was
    advanced by the fit (its published state could be rewound).

    Parameters
    ----------
    estimator : DPLSSGDClassifier or DPLSSGDRegressor
    X, y : array-like or sparse matrix, default=None
        Training rows; by default 200 random rows with 5 features.

    Returns
    -------
    CheckResult
        ``measured`` is the number of seed forms that leaked.
    """
    if X is None:
        X, y = _default_data(estimator)
    leaks = []
    for name, make_seed in _seed_forms().items():
        seed = make_seed()
        state_before = pickle.dumps(seed)
        model = _declare_public_n(_private(estimator).set_params(random_state=seed),
                                  public_row_count(X))
        fitted = _quiet(model.fit, X, y)
        if not math.isfinite(fitted.epsilon_):
            continue  # a reproducible fit claims no privacy
        if isinstance(seed, np.random.Generator) and pickle.dumps(seed) != state_before:
            leaks.append(f"{name} advanced by the fit")
        published = pickle.loads(pickle.dumps(fitted))
        replay = _quiet(clone(published).fit, X, y)
        if np.array_equal(replay.coef_, fitted.coef_):
            leaks.append(f"{name} replayed")
    return CheckResult(
        "seed replay", not leaks, float(len(leaks)), 0.0,
        "seed forms whose noise a holder of the pickled model can regenerate"
        + (f": {', '.join(leaks)}" if leaks else ""),
    )


def check_clone_independence(estimator, X=None, y=None):
    """Clones given the same seed do not share their noise.

    Two clones of the estimator with ``random_state=42`` are fitted on the
    same rows. A private fit fails the check if their weights are identical:
    their difference would then be free of noise.

    Returns
    -------
    CheckResult
        ``measured`` is the largest absolute difference of the two fits'
        coefficients (it must be above 0).
    """
    if X is None:
        X, y = _default_data(estimator)
    base = _declare_public_n(_private(estimator).set_params(random_state=42),
                             public_row_count(X))
    first = _quiet(clone(base).fit, X, y)
    second = _quiet(clone(base).fit, X, y)
    difference = float(np.max(np.abs(np.ravel(first.coef_) - np.ravel(second.coef_))))
    private = math.isfinite(first.epsilon_)
    return CheckResult(
        "clone independence", difference > 0.0 or not private, difference, 0.0,
        "largest |coef difference| of two clones seeded alike (0 means shared noise)",
    )


def check_row_count(estimator):
    """Neighbouring data sets give the same public mechanism.

    Under add/remove adjacency, data sets of ``batch_size`` and
    ``batch_size + 1`` rows are neighbours; under replace-one, two data sets
    of ``batch_size`` rows that differ in one row. The sample rate, number of
    steps, noise multiplier and reported epsilon of the two fits must be
    equal: any difference tells the neighbours apart with certainty. A fit
    refused for lack of a public row count releases nothing and passes.

    Returns
    -------
    CheckResult
        ``measured`` is the number of public attributes that differ.
    """
    model = _private(estimator)
    batch_size = nominal_batch_size(model.batch_size)
    X, y = _default_data(estimator, n_rows=batch_size + 1)
    if model.get_params().get("neighboring", "add_remove") == "add_remove":
        pair = ((X[:batch_size], y[:batch_size]), (X, y))
    else:
        X_other, y_other = X[:batch_size].copy(), y[:batch_size].copy()
        X_other[-1], y_other[-1] = X[batch_size], y[batch_size]
        pair = ((X[:batch_size], y[:batch_size]), (X_other, y_other))
    try:
        fits = [_quiet(clone(model).fit, X_part, y_part) for X_part, y_part in pair]
    except ValueError as error:
        if "public_n_samples" in str(error):
            return CheckResult("row count", True, 0.0, 0.0,
                               "refused: the adjacency needs a public row count")
        raise
    names = ("sample_rate_", "n_steps_", "noise_multiplier_", "epsilon_")
    differing = [name for name in names if getattr(fits[0], name) != getattr(fits[1], name)]
    return CheckResult(
        "row count", not differing, float(len(differing)), 0.0,
        "public attributes that differ between neighbouring data sets"
        + (f": {', '.join(differing)}" if differing else ""),
    )


def check_overflow_row(estimator, n_fits=5):
    """Whether fits fail does not depend on one extreme row.

    Fits ``n_fits`` times on float32 rows without and with one row of
    entries 3e38 (under replace-one, in place of an ordinary row). An error
    or non-finite weights on one side only would reveal the row.

    Returns
    -------
    CheckResult
        ``measured`` is the difference in the number of failed fits.
    """
    X, y = _default_data(estimator, n_rows=300, n_features=20, dtype=np.float32, seed=1)
    extreme = np.full((1, X.shape[1]), 3e38, np.float32)
    X_with = np.vstack([X, extreme])
    y_with = np.concatenate([y, y[:1]])
    if _private(estimator).get_params().get("neighboring") == "replace_one":
        X_without, y_without = np.vstack([X, X[:1]]), np.concatenate([y, y[:1]])
    else:
        X_without, y_without = X, y
    model = _declare_public_n(_private(estimator), len(X_with))

    def failures(X_part, y_part):
        count = 0
        for _ in range(n_fits):
            try:
                fitted = _quiet(clone(model).fit, X_part, y_part)
            except (ValueError, FloatingPointError, OverflowError):
                count += 1
                continue
            count += not np.all(np.isfinite(fitted.coef_))
        return count

    without, with_ = failures(X_without, y_without), failures(X_with, y_with)
    return CheckResult(
        "overflow row", without == with_, float(abs(with_ - without)), 0.0,
        f"failed fits: {without} of {n_fits} without the 3e38 row, {with_} with it",
    )


def _charged_once_more(ledger, model, X, y, escapes, what):
    """Continue the fitted ``model`` on ``(X, y)``; record in ``escapes`` if uncharged.

    The continuation is ``partial_fit``, or, where the mechanism has none
    (output perturbation), a refit of the same model: either releases again.
    """
    before = len(ledger.records)
    continue_fit = model.partial_fit if hasattr(model, "partial_fit") else model.fit
    continued = _quiet(continue_fit, X, y)
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
    * a :class:`DPRandomizedSearch` of the estimator with the ledger, then
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
        X, y = _default_data(estimator)
    model = _declare_public_n(_private(estimator), public_row_count(X))
    escapes = []
    with tempfile.TemporaryDirectory(prefix="dplssgd-audit-") as folder:
        def new_ledger(name):
            return PrivacyLedger(path=os.path.join(folder, name),
                                 neighboring=model.get_params()["neighboring"])

        ledger = new_ledger("fit.records")
        fitted = _quiet(clone(model).set_params(ledger=ledger).fit, X, y)
        if len(ledger.records) != 1:
            escapes.append(f"fit charged {len(ledger.records)} times, not once")
        _charged_once_more(ledger, fitted, X, y, escapes, "continuing a fitted model")

        if model.get_params()["mechanism"] == "gradient":
            ledger = new_ledger("search.records")
            search = DPRandomizedSearch(
                clone(model), {"alpha": [model.alpha]}, epsilon=float(model.epsilon),
                n_trials=2, score_bound=1.0, ledger=ledger)
            _quiet(search.fit, X, y)
            if [record["dp_event"] for record in ledger.records] != [search.dp_event_]:
                escapes.append(f"search recorded {len(ledger.records)} times, not once")
            best, _ = final_estimator(search.best_estimator_)
            _charged_once_more(ledger, best, X, y, escapes,
                               "continuing the search's best model")

        ledger = new_ledger("removed.records")
        worker_copy = pickle.loads(pickle.dumps(clone(model).set_params(ledger=ledger)))
        os.remove(ledger.path)
        try:
            _quiet(worker_copy.fit, X, y)
            escapes.append("a ledger without its records file accepted a charge")
        except FileNotFoundError:
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
    X, y = _default_data(estimator, n_rows=40)
    model = _declare_public_n(_private(estimator), len(X))
    fitted = _quiet(clone(model).fit, X, y)
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
            _quiet(call)
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
    labels = _labels(model)
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
    applicable.

    Returns
    -------
    CheckResult
        ``measured`` is the largest stored gradient norm over ``clip_norm``.
    """
    batch_size = 2
    worst, worst_case, n_cases = 0.0, "", 0
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
        for name, convert in _rounding_formats().items():
            if name == "torch" and fit_params:
                continue  # the array API path starts from zero weights only
            model = _private(estimator)
            _set_existing(
                model, epsilon=math.inf, sigma=0.0, alpha=0.0, learning_rate="constant",
                eta0=1.0, batch_size=batch_size, max_iter=1, public_n_samples=1,
                fit_intercept=True, clip_norm=clip_norm, mechanism="gradient",
                optimizer="sgd", average=False,
            )
            if name == "torch":
                with sklearn.config_context(array_api_dispatch=True):
                    fitted = _quiet(model.fit, convert(X), convert(y.astype(np.float64)))
            else:
                fitted = _quiet(lambda: model.fit(convert(X), y, **fit_params))
            coef = np.atleast_2d(_as_numpy(fitted.coef_)).astype(np.float64)
            # The step is -coefficient * x / b: read the coefficient back
            # from the coordinate of the row's one non-zero feature.
            stored = coef[:, 0] * batch_size / float(X[0, 0])
            ratio = float(np.linalg.norm(stored)) * feature_norm / clip_norm
            n_cases += 1
            if not math.isfinite(ratio) or ratio > worst:
                worst = ratio if math.isfinite(ratio) else math.inf
                worst_case = f"{np.dtype(dtype).name} {name}"
    limit = 1.0 + _CLIP_TOLERANCE
    detail = (f"largest stored gradient norm / clip_norm over {n_cases} dtype and format "
              f"cases of a residual that rounds up to a subnormal"
              + (f" (worst: {worst_case})" if worst_case else "")
              if n_cases else "not applicable: the loss has no residual near a subnormal")
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
    model = _private(estimator)
    X, y = _default_data(estimator, n_rows=40, n_features=4, seed=2)
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
        labels = _labels(model)
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
    neighbouring data sets from :func:`_neighbouring_edge_pairs` (all
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
            model = _set_existing(_private(estimator), **params)
            model = _declare_public_n(model, len(X))
            try:
                _quiet(lambda: model.fit(X, y, sample_weight=weights))
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
    :func:`check_error_outcomes`, :func:`check_ledger_continuity` and
    :func:`check_error_messages`.

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
        check_error_messages(estimator),
    )
    return ImplementationAudit(type(estimator).__name__, checks)
