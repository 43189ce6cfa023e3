"""What the private transformers share: the budget's split, the event, the ledger's charge."""

import math

import dp_accounting
from sklearn.utils.validation import check_is_fitted

from .._accounting import EpsilonDeltaDpEvent, transformer_report
from .._training import make_generator, warn_about_seed

__all__ = ["PrivateFitMixin", "composed_event", "split_budget"]


def split_budget(owner, name, value, n_parts, parts, smallest, advice=""):
    """``value / n_parts``; a ValueError naming the parameter if that share is below ``smallest``.

    Checked before the ledger is charged, so that such a fit spends nothing.
    """
    share = value / n_parts
    if not share >= smallest:
        raise ValueError(
            f"The {name!r} parameter of {owner} is too small: split over {n_parts} {parts} "
            f"it leaves each less than {smallest:.3g}, the smallest share the mechanism "
            f"represents exactly. Use a larger value{advice}.")
    return share


def composed_event(epsilon, delta, count):
    """``count`` releases of ``(epsilon, delta)`` by basic composition: event, epsilon, delta."""
    if not count:
        return dp_accounting.NoOpDpEvent(), 0.0, 0.0
    event = dp_accounting.SelfComposedDpEvent(EpsilonDeltaDpEvent(epsilon, delta), count)
    return event, epsilon * count, delta * count


class PrivateFitMixin:
    """The bookkeeping of a private transformer's fit, its report and its tags."""

    def _start_release(self, spent, seeded_delta=0.0):
        """The fit's generator, and ``spent`` (event, epsilon, delta), charged to the ledger.

        With ``reproducible=True`` the release is not private: a
        ``NonPrivateDpEvent``, epsilon ``inf`` and ``seeded_delta``. Called
        before any value is read: the event depends on public quantities only.
        """
        warn_about_seed(self.random_state, self.reproducible)
        rng, seeded = make_generator(self.random_state, self.reproducible)
        if seeded:
            spent = (dp_accounting.NonPrivateDpEvent(), math.inf, seeded_delta)
        if self.ledger is not None:
            self.ledger.charge(type(self).__name__, spent[0], self.neighboring)
        return rng, spent

    def privacy_report(self):
        """What this fit's guarantee means, in plain words (see the user guide).

        Returns
        -------
        report : str
        """
        check_is_fitted(self, "dp_event_")
        return transformer_report(self, self._released())

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.non_deterministic = not self.reproducible
        return tags
