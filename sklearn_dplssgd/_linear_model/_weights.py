"""Sample and class weights, bounded by a public maximum.

A weight multiplies its row's *clipped* gradient: row i contributes
``w_i clip_C(g_i)``, of norm at most ``w_i C``. With every weight in
``[0, w_max]`` for a public ``w_max`` (``max_sample_weight``), one row moves
each step's clipped sum by at most ``w_max C`` (twice that under
replace-one), so the noise is calibrated to ``w_max C`` and the accounting
of the unweighted mechanism holds unchanged (its noise multiplier is
relative to the sensitivity). The sum is still divided by the public
``batch_size``, never by a sum of weights (which depends on the rows).

The weight of a row is part of the row: ``sample_weight`` is private data
like ``X`` and ``y``, and is covered by the guarantee when it is a property
of the row alone. ``class_weight`` is a public hyperparameter; its
``"balanced"`` form is refused because it reads the class frequencies of the
private labels.
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
    """The ``class_weight`` constraint: an error message, or None when valid.

    Parameters
    ----------
    value : object
        None, or a dict mapping class labels to finite non-negative weights.

    Returns
    -------
    message : str or None
    """
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

    Parameters
    ----------
    class_weight : dict or None
        Validated by :func:`check_class_weight`.
    classes : ndarray of shape (n_classes,) or None
        The label set (declared or read), sorted; None checks the bound only
        (before the label set is known).
    max_sample_weight : float

    Returns
    -------
    table : ndarray of shape (n_classes,) or None
        None when ``class_weight`` or ``classes`` is None.

    Raises
    ------
    ValueError
        For a weight above ``max_sample_weight`` or a key that is not a class
        (public values: they are named).
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

    Parameters
    ----------
    sample_weight : array-like of shape (n_samples,), number or None
        The user's weights (never modified).
    n_samples : int
    max_sample_weight : float
        The public bound w_max.
    class_table : ndarray of shape (n_classes,) or None, default=None
        From :func:`class_weight_table`.
    class_index : ndarray of shape (n_samples,) or None, default=None
        Each row's class index into ``class_table``.

    Returns
    -------
    weights : ndarray of shape (n_samples,), float64, C-contiguous, or None
        None when every row weighs 1 (the unweighted kernels).

    Raises
    ------
    ValueError
        Wrong shape, negative or non-finite weights, or a combined weight
        above ``max_sample_weight``: rows outside the declared domain. Weights
        that are all zero are accepted (see the comment in the code). The
        messages name no weight: the weights are private data.
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
    # Weights that are all zero are legal: the fit then releases noise only.
    # Refusing them would let one row decide whether a model is released (the
    # data set with one weight raised to a legal value trains), an output with
    # epsilon = infinity.
    if (weights > max_sample_weight).any():
        raise ValueError(
            f"Some rows weigh more than max_sample_weight={max_sample_weight:g} "
            "(sample_weight times class_weight of the row's class): the noise is "
            "calibrated to max_sample_weight * clip_norm, so no row may weigh more. "
            "Declare a larger public max_sample_weight (the noise grows with it) or "
            "scale the weights down by a public factor."
        )
    return np.ascontiguousarray(weights, dtype=np.float64)
