"""Which steps of a searched model a trial may refit: public ones, and no private one.

A step that spends privacy budget when fitted (any estimator taking a
``ledger``) would spend it again in every trial, outside the search's event:
the search refuses it before any row is read. A private step fitted once and
wrapped in ``FrozenEstimator`` is not refitted. The argument is in
docs/privacy_argument.rst ("Private steps are refused, not warned about").
"""

from sklearn.compose import ColumnTransformer
from sklearn.frozen import FrozenEstimator
from sklearn.pipeline import FeatureUnion, Pipeline
from sklearn.preprocessing import FunctionTransformer, OneHotEncoder

from .._preprocessing import BoundedScaler

__all__ = [
    "budget_spending_steps", "frozen_private_steps", "is_public_transformer",
    "refuse_budget_spending_steps"
]

_REFIT_ADVICE = (
    "Fit the private steps once, before the search, and search over a pipeline that "
    "holds them fitted and frozen, e.g. make_pipeline(FrozenEstimator(DPBoundedScaler("
    "ledger=ledger).fit(X)), DPLSSGDClassifier(...)) with sklearn.frozen.FrozenEstimator: "
    "their budget is then spent once, by that fit, and charged to its ledger."
)


def _is_estimator(value):
    return (not isinstance(value, type) and hasattr(value, "get_params")
            and hasattr(value, "fit"))


def spends_budget_when_fitted(estimator):
    """Whether fitting ``estimator`` itself spends privacy budget: it takes a ``ledger``."""
    return "ledger" in estimator.get_params(deep=False)


def _named_estimators(name, value):
    """``(name, estimator)`` of the estimators in a parameter's value, lists and tuples too.

    A tuple starting with a string names what it holds, as ``set_params`` does.
    """
    if _is_estimator(value):
        yield name, value
    elif isinstance(value, (list, tuple)):
        label = name
        if isinstance(value, tuple) and len(value) >= 2 and isinstance(value[0], str):
            label = value[0]  # the name set_params knows it by
            value = value[1:]
        for item in value:
            yield from _named_estimators(label, item)


def _fitted_steps(estimator, accounted=None, path=""):
    """``(path, step)`` of what a fit of ``estimator`` reaches, but ``accounted``'s subtree and
    inside FrozenEstimators (listed, not refitted)."""
    if estimator is accounted:
        return
    yield path, estimator
    if not isinstance(estimator, FrozenEstimator):
        for name, value in estimator.get_params(deep=False).items():
            for child_path, child in _named_estimators(name, value):
                yield from _fitted_steps(
                    child, accounted, f"{path}__{child_path}" if path else child_path)


def budget_spending_steps(estimator, accounted=None, path=""):
    """``(path, class name)`` of the steps a fit of ``estimator`` charges outside ``accounted``."""
    return [(step_path or type(step).__name__, type(step).__name__)
            for step_path, step in _fitted_steps(estimator, accounted, path)
            if not isinstance(step, FrozenEstimator) and spends_budget_when_fitted(step)]


def refuse_budget_spending_steps(model, accounted, what):
    """Raise ``ValueError`` if fitting ``model`` would spend budget outside ``accounted``.

    ``what`` says where ``model`` comes from. An unfitted frozen private step
    is refused too: the trials could not use it.
    """
    found = budget_spending_steps(model, accounted)
    if found:
        listed = ", ".join(f"{name} at {path!r}" for path, name in found)
        raise ValueError(
            f"DPRandomizedSearch cannot refit a step that spends its own privacy budget "
            f"when fitted ({listed}, in {what}): every trial, a secret random number of "
            "times, would spend it again, outside the search's epsilon_. " + _REFIT_ADVICE)
    for path, step in frozen_private_steps(model):
        if not hasattr(step, "dp_event_"):
            raise ValueError(
                f"DPRandomizedSearch: the frozen private step at {path!r} (in {what}) is "
                "not fitted. " + _REFIT_ADVICE)


def frozen_private_steps(estimator, path=""):
    """``(path, frozen step)`` of the FrozenEstimators in ``estimator`` that hold a private step."""
    return [(step_path, step) for step_path, step in _fitted_steps(estimator, None, path)
            if isinstance(step, FrozenEstimator) and spends_budget_when_fitted(step.estimator)]


def is_public_transformer(step):
    """Whether fitting ``step`` reads nothing from the rows that it then keeps.

    A FrozenEstimator is not refitted: public if it holds a private step
    (charged by its own fit) or a public one.
    """
    if step is None or (isinstance(step, str) and step in ("passthrough", "drop")):
        return True
    if isinstance(step, FrozenEstimator):
        return spends_budget_when_fitted(step.estimator) or is_public_transformer(
            step.estimator)
    if not _is_estimator(step) or spends_budget_when_fitted(step):
        # Private, not public: each trial's refit would spend its own budget.
        return False
    if isinstance(step, (BoundedScaler, FunctionTransformer)):
        return True
    if isinstance(step, OneHotEncoder):
        return not (isinstance(step.categories, str) and step.categories == "auto")
    if isinstance(step, Pipeline):
        return all(is_public_transformer(s) for _, s in step.steps)
    if isinstance(step, ColumnTransformer):
        return all(is_public_transformer(s) for _, s, _ in step.transformers) and (
            is_public_transformer(step.remainder))
    if isinstance(step, FeatureUnion):
        return all(is_public_transformer(s) for _, s in step.transformer_list)
    return False
