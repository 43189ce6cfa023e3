"""Sample and class weights, bounded by a public maximum.

A weight in ``[0, w_max]`` multiplies its row's *clipped* gradient, so the
noise is calibrated to ``w_max C`` and the unweighted accounting holds; the
argument is in docs/privacy_argument.rst (sample and class weights).
``sample_weight`` is private data like ``X``; ``class_weight`` is public.
"""

import math
import numbers

import numpy as np
from sklearn.utils.validation import check_array

__all__ = ["BALANCED_MESSAGE", "check_class_weight", "class_weight_table", "row_weights"]

BALANCED_MESSAGE = (
    "must not be 'balanced': that weighs each class by the inverse of its "
    "frequency in the private labels, and the released model would depend on "
    "those counts without the noise covering them. Pass a dict {label: weight} "
    "built from public knowledge instead (for example known population "
    "shares), with every weight at most max_sample_weight."
)


def _is_weight(value):
    return (isinstance(value, numbers.Real) and not isinstance(value, (bool, np.bool_))
            and math.isfinite(value) and value >= 0)


def check_class_weight(value):
    """The ``class_weight`` constraint: an error message, or None when valid."""
    if value is None:
        return None
    if isinstance(value, str) and value == "balanced":
        return BALANCED_MESSAGE
    if not isinstance(value, dict):
        return f"must be None or a dict {{label: weight}}; got {value!r}."
    bad = [label for label, weight in value.items() if not _is_weight(weight)]
    if bad:
        return (f"must map labels to finite non-negative weights; the weights of "
                f"{bad!r} are not.")
    return None


def class_weight_table(class_weight, classes, max_sample_weight):
    """The weight of each class of ``classes`` (1 for a class not in the dict).

    ``classes`` is the sorted label set, or None to check the bound only.
    None when ``class_weight`` or ``classes`` is None. Errors name the
    offending (public) keys and weights.
    """
    if class_weight is None:
        return None
    too_large = {label: weight for label, weight in class_weight.items()
                 if weight > max_sample_weight}
    if too_large:
        raise ValueError(
            f"class_weight gives {too_large!r}, above max_sample_weight="
            f"{max_sample_weight:g}: the noise is calibrated to max_sample_weight * "
            "clip_norm, so no row may weigh more. Raise max_sample_weight (the noise "
            "grows with it) or scale the class weights down."
        )
    if classes is None:
        return None
    # Python scalars: numpy and Python labels of equal value hash alike.
    labels = [label.item() if isinstance(label, np.generic) else label for label in classes]
    unknown = [label for label in class_weight if label not in set(labels)]
    if unknown:
        raise ValueError(
            f"class_weight has keys {unknown!r} that are not classes; the classes are "
            f"{labels!r}."
        )
    return np.array([float(class_weight.get(label, 1.0)) for label in labels])


def row_weights(sample_weight, n_samples, max_sample_weight, class_table=None,
                class_index=None):
    """Each row's combined weight ``class_weight[y_i] * sample_weight_i``, validated.

    ``class_index`` indexes each row into ``class_table`` (from
    :func:`class_weight_table`). Returns a new float64 C-contiguous array, or
    None when every row weighs 1. Errors name no weight: weights are private.
    """
    if sample_weight is None and class_table is None:
        return None
    if sample_weight is None:
        weights = np.ones(n_samples)
    elif isinstance(sample_weight, numbers.Real) and not isinstance(sample_weight, bool):
        weights = np.full(n_samples, float(sample_weight))
    else:
        weights = check_array(sample_weight, ensure_2d=False, dtype=np.float64,
                              order="C", copy=True, input_name="sample_weight")
        if weights.ndim != 1 or weights.shape[0] != n_samples:
            raise ValueError(
                f"sample_weight must be a 1-d array with one weight per row of X "
                f"({n_samples}); got shape {weights.shape}."
            )
    if not np.isfinite(weights).all():
        raise ValueError("sample_weight must be finite.")
    if (weights < 0).any():
        raise ValueError("sample_weight must not be negative.")
    if class_table is not None:
        weights = weights * class_table[np.asarray(class_index, dtype=np.intp)]
    # All-zero weights are legal (noise only): refusing them would let one row
    # decide whether a model is released.
    if (weights > max_sample_weight).any():
        raise ValueError(
            f"Some rows weigh more than max_sample_weight={max_sample_weight:g} "
            "(sample_weight times class_weight of the row's class): the noise is "
            "calibrated to max_sample_weight * clip_norm, so no row may weigh more. "
            "Declare a larger public max_sample_weight (the noise grows with it) or "
            "scale the weights down by a public factor."
        )
    return np.ascontiguousarray(weights, dtype=np.float64)
