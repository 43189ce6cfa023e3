"""What a mechanism reads of the estimator: one frozen value per fit.

A mechanism reads no member of the estimator, private or fitted, and changes nothing on it.
"""

import dataclasses
import math
import types
import typing
import warnings

from .._accounting import REMAINING_BUDGET
from .._training import AUTO, warn_about_seed
from .._utils import PrivacyLeakWarning

__all__ = ["FitSettings", "spends_privacy"]


def spends_privacy(epsilon):
    """Whether a fit at ``epsilon`` is meant to be private (finite, or the ledger's remainder)."""
    return epsilon == REMAINING_BUDGET or math.isfinite(epsilon)


@dataclasses.dataclass(frozen=True)
class FitSettings:
    """The hyperparameters of one fit, as every mechanism reads them.

    The constructor parameters are attributes (``settings.epsilon``, ...) of a
    read-only copy made when the fit starts.

    Parameters
    ----------
    estimator_name : str
        The estimator's class name (the ledger's records and messages name it).
    params : mapping
        The constructor parameters (``get_params(deep=False)``).
    n_threads : int
        The threads the fit may use (``n_jobs`` resolved on this machine).
    auto_sigma_levels : tuple of (int, float)
        What ``sigma="auto"`` smooths ordered input with, by its width
        (:func:`~sklearn_dplssgd._training.resolve_sigma`).
    step_reference_sigma : float or None
        The smoothing ``eta0="auto"`` was measured with (None: no adjustment).
    average_tail : callable ``(n_features) -> float``
        The share of the steps ``average="auto"`` averages (public width of X).
    learns_target_range : bool
        Whether the fit learns its targets' range before the steps (a
        regressor without ``target_bounds``): the mechanism plans that
        release (:class:`~._target_range.TargetRangeRelease`) with its own.
    fixed_mechanism : object or None
        In a trial of :class:`~sklearn_dplssgd.DPRandomizedSearch`, the
        mechanism the search calibrated for all its trials.
    """

    estimator_name: str
    params: typing.Mapping
    n_threads: int
    auto_sigma_levels: tuple
    step_reference_sigma: typing.Optional[float]
    average_tail: typing.Callable
    learns_target_range: bool
    fixed_mechanism: typing.Any

    def __post_init__(self):
        object.__setattr__(self, "params", types.MappingProxyType(dict(self.params)))

    def __getattr__(self, name):
        # Only reached for names that are not fields: the parameters.
        params = self.__dict__.get("params", {})
        if name in params:
            return params[name]
        raise AttributeError(f"{type(self).__name__} has no setting {name!r}")

    @property
    def spends_privacy(self):
        """Whether the fit is meant to be private (see :func:`spends_privacy`)."""
        return spends_privacy(self.epsilon)

    def accounted_n_samples(self, n_samples):
        """The row count that sets q and T: public by the chosen adjacency.

        The actual count under replace-one, a declared ``public_n_samples``
        under add/remove (why: docs/privacy.rst, "Why replace-one is the
        default").
        """
        if self.public_n_samples is not None:
            declared = int(self.public_n_samples)
            if not 0.5 <= n_samples / declared <= 2.0:
                # For the person holding the data only: nothing is stored.
                warnings.warn(
                    "public_n_samples is more than a factor 2 away from the number "
                    "of rows: each step samples q * n_samples rows, not batch_size, "
                    "so the effective step size changes by that factor. Declare a "
                    "count closer to the real one.",
                    UserWarning,
                )
            return declared
        if self.neighboring == "add_remove" and self.spends_privacy:
            raise ValueError(
                "neighboring='add_remove' makes the number of rows private: the "
                "sample rate and the number of steps cannot be computed from it. "
                "Declare a public row count with public_n_samples=..., or use "
                "neighboring='replace_one' (the default)."
            )
        return n_samples

    def warn_before_training(self, delta, n_samples):
        """The warnings every mechanism gives once its plan is fixed."""
        if self.spends_privacy and delta * max(n_samples, 1) >= 1.0:
            # No per-fit number: the same message for every fold of a search.
            warnings.warn(
                "delta is not below 1/n_samples (n_samples: the number of training "
                "rows): a mechanism that publishes a random row with probability "
                "delta meets such a guarantee. Use a smaller delta, or delta='auto' "
                "(min(1e-5, 1 / (10 n))).",
                PrivacyLeakWarning,
            )
        warn_about_seed(self.random_state, self.reproducible)

    def averages_series(self, partial):
        """Whether this release is a call of a series average (:func:`.series_average`).

        A ``partial_fit`` call with ``average="auto"`` publishes the mean of
        the series' last iterates; an explicit ``average`` averages the call.
        """
        return bool(partial) and isinstance(self.average, str) and self.average == AUTO
