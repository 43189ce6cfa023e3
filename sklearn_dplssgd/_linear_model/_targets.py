"""What the backends encode a fit's targets and weigh its rows with: one value per fit.

The estimator builds it from its parameters before any row is read
(``_targets``); a backend calls :meth:`encode` and :meth:`weights` on the rows
it holds (a Dask backend on each partition, on the workers), and the estimator
then sets what the encoding learnt (:meth:`fitted_attributes`). Nothing here
reads or changes the estimator.
"""

import warnings

import numpy as np
from sklearn.utils.multiclass import check_classification_targets

from .._accounting import TARGET_RANGE_SHARE
from .._backends import integral_labels, on_row_blocks
from .._preprocessing import histogram_ranges
from .._training import LOSSES
from .._utils import VALUES_NOT_SHOWN, PrivacyLeakWarning, validate_hiding_values
from ._weights import class_weight_table, row_weights

__all__ = ["LABELS_READ_MESSAGE", "ClassTargets", "RangeTargets", "declared_labels",
           "range_scale"]

LABELS_READ_MESSAGE = (
    "classes was not given, so classes_ is read from the private labels: the fitted "
    "model reveals which labels occur in the training data. Pass classes=... to keep "
    "the label set out of the released model.")


def range_scale(bounds):
    """``(centre, half_width)`` of a target range ``(low, high)``, or None for None."""
    if bounds is None:
        return None
    low, high = (float(bound) for bound in bounds)
    return (low + high) / 2.0, (high - low) / 2.0


def declared_labels(classes):
    """The sorted label set ``classes`` declares, or None."""
    return None if classes is None else np.unique(np.asarray(classes))


class ClassTargets:
    """A classifier's labels, encoded against the declared label set or the one read from y.

    Parameters
    ----------
    loss : str
        The loss (its binary targets, e.g. -1 and 1).
    labels : ndarray or None
        The declared label set (sorted); None reads it from y, with a
        :class:`PrivacyLeakWarning`.
    class_weight : dict or None
    max_sample_weight : float
    n_threads : int
    """

    y_numeric = False

    def __init__(self, loss, labels, class_weight, max_sample_weight, n_threads):
        self.loss, self.labels = loss, labels
        self.class_weight, self.max_sample_weight = class_weight, max_sample_weight
        self.n_threads = n_threads
        self.classes = labels

    def read_labels(self, labels):
        """Take ``labels``, read from rows that stay remote, as the label set (warned)."""
        warnings.warn(LABELS_READ_MESSAGE, PrivacyLeakWarning)
        self.labels = self.classes = labels

    def encode(self, y):
        """``(y_encoded, n_outputs)``: the loss's two targets, or each label's index."""
        # Integral labels pass scikit-learn's check but for its warning about
        # many distinct labels: run it (a serial pass) only where it may be due.
        checked = not integral_labels(y, self.n_threads)
        if checked:
            validate_hiding_values({"y": y}, check_classification_targets, y)
        declared = self.labels is not None
        classes = self.labels if declared else np.unique(y)
        if not checked and len(classes) > round(0.5 * len(y)):
            # Declared: no more distinct labels than declared ones once every
            # label is known to be declared (checked below).
            validate_hiding_values({"y": y}, check_classification_targets, y)
            checked = True
        if not declared:
            warnings.warn(LABELS_READ_MESSAGE, PrivacyLeakWarning)
            if len(classes) < 2:
                # No label value in the message: labels are private data.
                raise ValueError(
                    "The training labels contain only one class; at least two "
                    "classes are needed. Pass classes=... to declare the label set.")
        binary = len(classes) <= 2
        if binary:
            negative, positive = LOSSES[self.loss].binary_targets

        def encoded(start, stop):
            labels = y[start:stop]
            if declared and not np.isin(labels, classes).all():
                return False, None
            indices = np.searchsorted(classes, labels).astype(np.float64)
            values = np.where(indices > 0, positive, negative) if binary else indices
            if shared is None:
                return True, values
            # Each block writes its own slice: no serial concatenation.
            shared[start:stop] = values
            return True, None

        shared = np.empty(len(y), dtype=np.float64) if self.n_threads > 1 else None
        # A few whole-array operations a label: counted as 8 values read.
        blocks = on_row_blocks(encoded, len(y), self.n_threads, values_per_row=8)
        if not all(known for known, _ in blocks):
            if not checked:
                # Its warning about many distinct labels comes before this error.
                validate_hiding_values({"y": y}, check_classification_targets, y)
            # Neither the labels nor their number: both are private data.
            raise ValueError(
                f"y contains labels that are not in classes ({VALUES_NOT_SHOWN}).")
        self.classes = classes
        targets = blocks[0][1] if shared is None else shared
        return targets, 1 if binary else len(classes)

    def weights(self, sample_weight, y):
        """Each row's validated weight (its class's weight times its own), or None."""
        table = class_weight_table(self.class_weight, self.classes, self.max_sample_weight)
        index = None if table is None else np.searchsorted(self.classes, y)
        return row_weights(sample_weight, len(y), self.max_sample_weight, table, index)

    def fitted_attributes(self):
        """What the encoding learnt: ``classes_``."""
        return {"classes_": self.classes}


class RangeTargets:
    """A regressor's targets, mapped from a public or released range to ``[-1, 1]``.

    Parameters
    ----------
    bounds : tuple of float or None
        The declared ``target_bounds``, or the range an earlier release of the
        same series used; None trains on the targets as given (or learns
        them, with ``range_release``).
    declared : bool
        Whether ``bounds`` were declared by this fit's parameters.
    max_sample_weight : float
    range_release : tuple or None
        ``(noise_multiplier, neighboring, rng)``: learn the range from the
        targets by a noisy histogram (:func:`histogram_ranges`) before
        mapping them; the noise was planned, and charged, before any row was
        read.
    """

    y_numeric = True
    labels = None

    def __init__(self, bounds, declared, max_sample_weight, range_release=None):
        self.bounds, self.declared = bounds, declared
        self.max_sample_weight, self.range_release = max_sample_weight, range_release
        self.noise_multiplier = None

    def encode(self, y):
        """``(y_encoded, 1)``: the targets in ``[-1, 1]`` of their range, or as given."""
        # scikit-learn converts only object targets to numbers: text in a
        # string array arrives here, and NumPy's error would quote it.
        y = validate_hiding_values({"y": y}, np.asarray, y, dtype=np.float64)
        if self.range_release is not None:
            self.bounds, self.noise_multiplier = self._released_range(y)
        if self.bounds is None:
            return y, 1
        centre, half_width = range_scale(self.bounds)
        # A public or released range: the map is post-processing.
        return np.clip((y - centre) / half_width, -1.0, 1.0), 1

    def _released_range(self, y):
        noise, neighboring, rng = self.range_release
        lower, upper, detected = histogram_ranges(y[:, np.newaxis], noise, neighboring, rng)
        if np.isnan(lower[0]):
            # No range to use: a guessed one would make the predictions useless.
            raise ValueError(
                f"DPLSSGDRegressor: no bin of the targets stood out of the noise of the range "
                f"release (a {TARGET_RANGE_SHARE:g} share of epsilon), even in coarse bins: "
                f"{len(y)} rows are too few. Declare target_bounds=(low, high) (a range known "
                "from the units or a public source), or give the fit more budget. The "
                "ledger, if any, has been charged for this fit.")
        if not detected[0]:
            warnings.warn(
                "DPLSSGDRegressor: no single bin of the targets stood out of the noise; their "
                "range comes from coarser bins (wider). Declare target_bounds=(low, high), "
                "or give the fit more budget.", UserWarning)
        # Post-processing of the noisy counts.
        return (float(lower[0]), float(upper[0])), float(noise)

    def weights(self, sample_weight, y):
        """Each row's validated weight, or None."""
        return row_weights(sample_weight, len(y), self.max_sample_weight)

    def fitted_attributes(self):
        """What this fit set: the declared or released range, none where it kept its own."""
        if not (self.declared or self.range_release is not None):
            return {}
        return {"target_bounds_": self.bounds,
                "target_range_noise_multiplier_": self.noise_multiplier}
