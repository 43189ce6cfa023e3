"""Implementation check of a private search over a pipeline with a private step."""

import os
import tempfile

from sklearn.frozen import FrozenEstimator
from sklearn.pipeline import Pipeline

from sklearn_dplssgd._preprocessing import DPBoundedScaler
from sklearn_dplssgd._accounting import PrivacyLedger
from sklearn_dplssgd._model_selection import DPRandomizedSearch
from sklearn_dplssgd._utils import public_row_count
from .common import CheckResult, declare_public_n, default_data, private_clone, quietly

__all__ = ["check_search_private_steps"]


class _CountedPrivateScaler(DPBoundedScaler):
    """A DPBoundedScaler that counts its fits (in this process), whoever makes them.

    A search that refits it without charging its ledger (a ledger stripped
    from nested steps, say) is still seen.
    """

    fit_count = 0

    def fit(self, X, y=None):
        type(self).fit_count += 1
        return super().fit(X, y)


def _search_of(model, step, ledger):
    return DPRandomizedSearch(
        Pipeline([("private", step), ("model", model)]), {"model__alpha": [model.alpha]},
        epsilon=float(model.epsilon), n_trials=3, score_bound=1.0, ledger=ledger)


def check_search_private_steps(estimator):
    """A private search never refits a private step outside its own accounting.

    A step that spends privacy budget when fitted (here a
    :class:`~sklearn_dplssgd.DPBoundedScaler`), refitted by every trial of a
    :class:`~sklearn_dplssgd.DPRandomizedSearch`, would spend it a secret random number of
    times, none of them in the search's ``dp_event_``. Two searches of the
    estimator, each with a ledger of the check's own in a temporary
    directory:

    * over a pipeline that holds the private step unfitted: the search must
      be refused with nothing charged and the step never fitted (or, were
      the step's spending ever accounted inside the search, the step must
      still not be fitted outside the search's one record);
    * over a pipeline that holds the step fitted once and frozen
      (``sklearn.frozen.FrozenEstimator``): the step must not be fitted
      again, and the ledger must hold the step's record and at most the
      search's.

    Parameters
    ----------
    estimator : DPLSSGDClassifier or DPLSSGDRegressor
        The configuration to check (cloned, never fitted itself).

    Returns
    -------
    CheckResult
        ``measured`` is the number of escapes: refits of the private step,
        or ledger records, outside the accounting (0 passes). A search
        refused for another reason (an estimator whose mechanism cannot be
        searched) releases nothing, and passes.
    """
    X, y = default_data(estimator)
    model = declare_public_n(private_clone(estimator), public_row_count(X))
    neighboring = model.get_params()["neighboring"]
    escapes = []
    with tempfile.TemporaryDirectory(prefix="dplssgd-audit-") as folder:
        ledger = PrivacyLedger(path=os.path.join(folder, "refit.records"),
                               neighboring=neighboring)
        _CountedPrivateScaler.fit_count = 0
        # AboveThreshold: it spends budget on any table (the histogram
        # refuses a table too small for its budget, as the check's may be).
        step = _CountedPrivateScaler(epsilon=0.5, neighboring=neighboring, ledger=ledger,
                                     mechanism="above_threshold")
        search = _search_of(model, step, ledger)
        try:
            quietly(search.fit, X, y)
            completed = True
        except ValueError:
            completed = False
        records = ledger.records
        if _CountedPrivateScaler.fit_count:
            escapes.append(f"the private step was fitted {_CountedPrivateScaler.fit_count} "
                           "time(s) by the search")
        expected = [search.dp_event_] if completed else []
        if [record["dp_event"] for record in records] != expected:
            escapes.append(f"the ledger holds {len(records)} record(s), not "
                           f"{len(expected)} (the search's)")

        ledger = PrivacyLedger(path=os.path.join(folder, "frozen.records"),
                               neighboring=neighboring)
        step = quietly(_CountedPrivateScaler(epsilon=0.5, neighboring=neighboring,
                                             ledger=ledger, mechanism="above_threshold").fit, X)
        search = _search_of(model, FrozenEstimator(step), ledger)
        try:
            quietly(search.fit, X, y)
            completed = True
        except ValueError:
            completed = False
        refits = _CountedPrivateScaler.fit_count - 1
        if refits:
            escapes.append(f"the frozen private step was fitted {refits} more time(s)")
        n_expected = 2 if completed else 1
        if len(ledger.records) != n_expected:
            escapes.append(f"with the step frozen, the ledger holds {len(ledger.records)} "
                           f"record(s), not {n_expected}")
    return CheckResult(
        "search over private steps", not escapes, float(len(escapes)), 0.0,
        "fits of a private step, or ledger records, outside a search's accounting"
        + (f": {'; '.join(escapes)}" if escapes else ""),
    )
