"""Which steps of a searched model a trial may refit: public ones, and no private one.

Every trial of :class:`DPRandomizedSearch` fits a clone of the searched
model. The search's ``RepeatAndSelectDpEvent`` accounts for the DP-LSSGD
estimator at its end and for the noisy score, nothing else: a step that
spends privacy budget when it is fitted (``DPBoundedScaler``,
``DPOneHotEncoder``, another estimator of the library) would spend it
again in every trial, a secret random number of times, outside the search's
event. A warning would not change what is released, so the search refuses
such a step, before any row is read and before any budget is charged. A
private step fitted once before the search and wrapped in scikit-learn's
``FrozenEstimator`` is not refitted by the trials (its ``fit`` does nothing
and ``clone`` returns it as it is): its release was charged once, by its
own fit.

The criterion is general: an estimator spends budget when fitted if it
takes a ``ledger`` (every fit of the library that spends budget charges the
ledger it is given). Estimators are found anywhere in the model (Pipelines,
ColumnTransformers, FeatureUnions, any parameter holding an estimator) and
in the candidates of the search space.
"""

from sklearn.compose import ColumnTransformer
from sklearn.frozen import FrozenEstimator
from sklearn.pipeline import FeatureUnion, Pipeline
from sklearn.preprocessing import FunctionTransformer, OneHotEncoder

from .._preprocessing import BoundedScaler

__all__ = [
    "budget_spending_steps",
    "frozen_private_steps",
    "is_public_transformer",
    "refuse_budget_spending_steps",
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
    """``(name, estimator)`` of the estimators held in a parameter's value.

    Lists and tuples are searched (a Pipeline's steps, a ColumnTransformer's
    transformers); a tuple starting with a string names what it holds, as
    ``set_params`` does (``"columntransformer__encode"``).
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


def budget_spending_steps(estimator, accounted=None, path=""):
    """Where in ``estimator`` a fit would spend budget outside ``accounted``.

    Parameters
    ----------
    estimator : estimator
        The model a trial fits, or a candidate value of the search space.
    accounted : estimator or None, default=None
        The DP-LSSGD estimator whose release the search accounts (skipped).
    path : str, default=""
        The name of ``estimator`` in the model it belongs to.

    Returns
    -------
    steps : list of (str, str)
        The path and class name of every estimator inside ``estimator`` (or
        ``estimator`` itself) that spends budget when fitted and would be
        fitted: FrozenEstimators are not.
    """
    if estimator is accounted or isinstance(estimator, FrozenEstimator):
        return []
    found = []
    if spends_budget_when_fitted(estimator):
        found.append((path or type(estimator).__name__, type(estimator).__name__))
    for name, value in estimator.get_params(deep=False).items():
        for child_path, child in _named_estimators(name, value):
            inner = f"{path}__{child_path}" if path else child_path
            found += budget_spending_steps(child, accounted, inner)
    return found


def refuse_budget_spending_steps(model, accounted, what):
    """Raise ``ValueError`` if fitting ``model`` would spend budget outside ``accounted``.

    ``what`` says where ``model`` comes from, for the message. A frozen
    private step that was never fitted is refused too: the trials could not
    use it.
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
    if isinstance(estimator, FrozenEstimator):
        return [(path, estimator)] if spends_budget_when_fitted(estimator.estimator) else []
    found = []
    for name, value in estimator.get_params(deep=False).items():
        for child_path, child in _named_estimators(name, value):
            found += frozen_private_steps(child, f"{path}__{child_path}" if path else child_path)
    return found


def is_public_transformer(step):
    """Whether fitting ``step`` reads nothing from the rows that it then keeps.

    A FrozenEstimator is not fitted by the trials: it is public if it holds a
    private step (released under its own guarantee, charged by its own fit)
    or a public one.
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
