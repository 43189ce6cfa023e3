"""Checks of what private objects release: every fitted attribute other than
the mechanism's output is a function of public quantities, and no row decides
how a released category is shown."""

import numpy as np
from sklearn.base import clone

from sklearn_dplssgd._linear_model import BaseDPLSSGD
from sklearn_dplssgd._model_selection import DPRandomizedSearch, final_estimator
from sklearn_dplssgd._preprocessing import DPOneHotEncoder, DPBoundedScaler
from .common import CheckResult, declared_labels, default_data, private_clone, quietly

__all__ = ["RELEASED_OUTPUTS", "check_category_representation", "check_public_attributes"]

# The fitted attributes that are the mechanism's noisy output (or a function
# of it), with the reason; every other fitted attribute (a name ending in
# "_") must be the same for any two neighbouring data sets.
# The budget at which a histogram scaler that refused the check's few rows
# at its own budget is checked again (one row then stands out of the noise).
_REFUSAL_EPSILON = 1000.0
RELEASED_OUTPUTS = {
    DPBoundedScaler: {
        "lower_": "the ends found from the noisy histogram or by AboveThreshold (noisy)",
        "upper_": "the ends found from the noisy histogram or by AboveThreshold (noisy)",
    },
    DPOneHotEncoder: {
        "categories_": "the values kept by partition selection (random, count-dependent)",
    },
    BaseDPLSSGD: {
        "coef_": "the noisy weights",
        "intercept_": "the noisy intercept",
    },
    DPRandomizedSearch: {
        "best_estimator_": "the best trial's noisy model (its configuration is selected)",
        "best_params_": "the best trial's parameters, selected by noisy scores",
        "best_score_": "the best trial's noisy score",
        "n_trials_": "the random number of trials, kept secret by the accounting",
        "trials_": "every trial's parameters and noisy score, kept secret",
    },
}


def released_outputs(obj):
    """The names of ``obj``'s fitted attributes that are its mechanism's output."""
    names = {}
    for cls, outputs in RELEASED_OUTPUTS.items():
        if isinstance(obj, cls):
            names.update(outputs)
    return names


def _same(first, second):
    """Whether two attribute values are equal, exactly (NaN equal to NaN)."""
    if isinstance(first, np.ndarray) or isinstance(second, np.ndarray):
        first, second = np.asarray(first), np.asarray(second)
        return (first.shape == second.shape and first.dtype == second.dtype
                and np.array_equal(first, second, equal_nan=first.dtype.kind in "fc"))
    if isinstance(first, (list, tuple)) and isinstance(second, (list, tuple)):
        return (type(first) is type(second) and len(first) == len(second)
                and all(_same(a, b) for a, b in zip(first, second)))
    if isinstance(first, float) and isinstance(second, float):
        return first == second or (first != first and second != second)
    try:
        return type(first) is type(second) and bool(first == second)
    except (TypeError, ValueError):
        return False


def _fitted_attributes(obj):
    return {name: value for name, value in vars(obj).items()
            if name.endswith("_") and not name.startswith("_")}


def _set_add_remove(model):
    """The model under add/remove, as configured otherwise (None if it has no adjacency)."""
    params = model.get_params()
    if "neighboring" in params:
        return model.set_params(neighboring="add_remove")
    if isinstance(model, DPRandomizedSearch):
        final, prefix = final_estimator(model.estimator)
        model.set_params(**{f"estimator__{prefix}neighboring": "add_remove"})
        return model
    return None


def _declare_row_count(model, n_rows):
    """Declare ``n_rows`` public where the model refused add/remove without a count."""
    if isinstance(model, DPRandomizedSearch):
        final, prefix = final_estimator(model.estimator)
        if final.public_n_samples is None:
            model.set_params(**{f"estimator__{prefix}public_n_samples": n_rows})
    else:
        model.set_params(public_n_samples=n_rows)
    return model


def _default_rows(obj):
    """Small rows for ``obj``: few enough that caps by the row count would bind.

    64 rows, compared with 63: ``n // k`` differs between the two for every
    power of two ``k`` up to 64, so a cap at any such share of the row count
    shows.
    """
    rng = np.random.default_rng(0)
    if isinstance(obj, DPBoundedScaler):
        return rng.normal(size=(64, 3)), None
    if isinstance(obj, DPOneHotEncoder):
        return rng.choice(np.array(["a", "b", "c"], dtype=object), size=(64, 2)), None
    estimator = final_estimator(obj.estimator)[0] if isinstance(
        obj, DPRandomizedSearch) else obj
    return default_data(estimator, n_rows=60)


def _rows(data, stop):
    if data is None:
        return None
    return data.iloc[:stop] if hasattr(data, "iloc") else data[:stop]


def _prepared(obj):
    """A clone ready for the check: finite epsilon and declared classes for estimators."""
    if isinstance(obj, BaseDPLSSGD):
        return private_clone(obj)
    model = clone(obj)
    if isinstance(model, DPRandomizedSearch):
        final, prefix = final_estimator(model.estimator)
        if final.get_params().get("classes", 0) is None:
            model.set_params(**{f"estimator__{prefix}classes": declared_labels(final)})
    return model


def check_public_attributes(obj, X=None, y=None):
    """Every fitted attribute but the mechanism's output is a function of public quantities.

    Fits ``obj`` (cloned, under add/remove adjacency) on the first ``n``
    rows of ``X`` and on all ``n + 1``: neighbours. Every fitted attribute
    (a name ending in ``_``) other than the mechanism's noisy output, listed
    with its reason in ``RELEASED_OUTPUTS``, must be equal for the two, or
    it tells the row count, private under add/remove, with certainty. An
    object that refuses add/remove without a declared row count is given one
    (the refusal releases nothing); one that accepts it is checked as it is.

    Parameters
    ----------
    obj : DPBoundedScaler, DPOneHotEncoder, DPLSSGDClassifier, DPLSSGDRegressor
        or DPRandomizedSearch
        The configuration to check (cloned, never fitted itself).
    X, y : array-like, default=None
        Rows to fit (at least 2); by default a few random ones, so that any
        cap by the row count binds.

    Returns
    -------
    CheckResult
        ``measured`` is the number of attributes that differ.
    """
    if not isinstance(obj, tuple(RELEASED_OUTPUTS)):
        raise TypeError(
            "check_public_attributes checks the library's private objects "
            "(DPBoundedScaler, DPOneHotEncoder, DPLSSGDClassifier, DPLSSGDRegressor, "
            f"DPRandomizedSearch); got {type(obj).__name__}.")
    if X is None:
        X, y = _default_rows(obj)
    n_rows = X.shape[0] if hasattr(X, "shape") else len(X)
    model = _prepared(obj)
    if _set_add_remove(model) is None:
        return CheckResult("public attributes", True, 0.0, 0.0,
                           "not applicable: the object has no adjacency")
    pair = ((_rows(X, n_rows - 1), _rows(y, n_rows - 1)), (X, y))

    def fit_both(model):
        return [quietly(clone(model).fit, X_part, y_part) for X_part, y_part in pair]

    note = ""
    try:
        fits = fit_both(model)
    except ValueError as error:
        if "public_n_samples" in str(error):
            fits = fit_both(_declare_row_count(model, n_rows))
        elif "stood out of the noise" in str(error):
            # A histogram scaler refuses rows too few for its budget; which
            # attributes depend on the row count does not depend on the budget.
            model = clone(model).set_params(epsilon=_REFUSAL_EPSILON)
            fits = fit_both(model)
            note = (f" (at epsilon={_REFUSAL_EPSILON:g}: at its own budget the object "
                    "refused the check's rows)")
        elif "neighboring" in str(error):
            # A mechanism proven for replace-one only, where n is public.
            return CheckResult("public attributes", True, 0.0, 0.0,
                               "not applicable: add/remove adjacency is refused")
        else:
            raise
    outputs = released_outputs(fits[0])
    names = sorted(set(_fitted_attributes(fits[0])) | set(_fitted_attributes(fits[1])))
    differing = [name for name in names if name not in outputs and not _same(
        getattr(fits[0], name, None), getattr(fits[1], name, None))]
    compared = len([name for name in names if name not in outputs])
    return CheckResult(
        "public attributes", not differing, float(len(differing)), 0.0,
        f"fitted attributes, of {compared} compared (the outputs "
        f"{', '.join(sorted(outputs))} excepted), that differ between {n_rows - 1} and "
        f"{n_rows} rows under add/remove" + (f": {', '.join(differing)}" if differing else "")
        + note,
    )


def _representation_cases(n_rows):
    """Pairs of one-column data sets equal value by value, in another order or type.

    Each is (name, first, second, refusal_allowed): the two must release the
    same categories in the same representation; where ``refusal_allowed``, the
    second may instead be refused (a value outside the supported domain).
    """
    def column(values):
        array = np.empty((len(values), 1), dtype=object)
        for index, value in enumerate(values):
            array[index, 0] = value  # one by one: a list would be converted first
        return array

    zeros = np.zeros((n_rows, 1))
    negative_first = zeros.copy()
    negative_first[0, 0] = -0.0
    negative_last = zeros.copy()
    negative_last[-1, 0] = -0.0
    # numpy's unique keeps the first of equal floats by sorting small arrays
    # (larger ones may go another way): a few rows as well.
    few_zeros = np.zeros((6, 1))
    few_negative_first = few_zeros.copy()
    few_negative_first[0, 0] = -0.0
    half = n_rows // 2
    strings = ["a"] * half + ["b"] * (n_rows - half)
    ints = [1] * n_rows
    sets = [frozenset({1}), frozenset({2})] * half
    return [
        ("-0.0 in the first row", zeros, negative_first, False),
        ("-0.0 in the first of a few rows", few_zeros, few_negative_first, False),
        ("-0.0 in the first against the last row", negative_last, negative_first, False),
        ("-0.0 in an object column", column([0.0] * n_rows),
         column([-0.0] + [0.0] * (n_rows - 1)), False),
        ("rows reversed", column(strings), column(strings[::-1]), False),
        ("a numpy string in the first row", column(strings),
         column([np.str_("a")] + strings[1:]), False),
        ("a numpy integer in the first row", column(ints),
         column([np.int64(1)] + ints[1:]), False),
        ("True among 1s", column(ints), column([True] + ints[1:]), True),
        ("1.0 among 1s", column(ints), column([1.0] + ints[1:]), True),
        ("sets in another order", column(sets), column(sets[::-1]), True),
    ]


def _release(encoder, X):
    """What a fit releases about its categories, representation included; or its error."""
    try:
        fitted = quietly(clone(encoder).fit, X)
    except (TypeError, ValueError) as error:
        return ("refused", type(error).__name__)
    shown = [(values.dtype.str, [repr(value) for value in values.tolist()])
             for values in fitted.categories_]
    return (shown, [str(name) for name in fitted.get_feature_names_out()])


def check_category_representation(encoder, n_rows=200):
    """No row decides how a category released by the encoder is shown.

    Pairs of one-column data sets whose values are equal one by one but in
    another row order or representation (``-0.0`` for ``0.0``, a numpy
    string or integer for a Python one, ``True`` or ``1.0`` for ``1``, sets
    in another order) are fitted with the same seed and a budget that keeps
    every frequent value; the released ``categories_`` (values, types and
    dtypes) and ``get_feature_names_out()`` must be identical. Mixed types
    and sets may instead be refused with an error (nothing is released).

    Parameters
    ----------
    encoder : DPOneHotEncoder
        The configuration to check (cloned, never fitted itself).
    n_rows : int, default=200
        Rows of each data set.

    Returns
    -------
    CheckResult
        ``measured`` is the number of pairs whose releases differ.
    """
    if not isinstance(encoder, DPOneHotEncoder):
        raise TypeError("check_category_representation checks DPOneHotEncoder instances; "
                        f"got {type(encoder).__name__}.")
    # Seeded alike, so that both sides draw the same selection; budget large
    # enough that a value of every row (or half of them) is kept.
    model = clone(encoder).set_params(epsilon=10.0, delta=1e-3, random_state=0,
                                      reproducible=True)
    cases = _representation_cases(n_rows)
    differing = []
    for name, first, second, refusal_allowed in cases:
        released, other = _release(model, first), _release(model, second)
        if released == other and (released[0] != "refused" or refusal_allowed):
            continue
        if refusal_allowed and other[0] == "refused":
            continue
        differing.append(name)
    return CheckResult(
        "category representation", not differing, float(len(differing)), 0.0,
        f"pairs of data sets, of {len(cases)}, equal value by value but in another row "
        "order or representation, whose released categories differ"
        + (f": {'; '.join(differing)}" if differing else ""),
    )
