"""Whether the columns of X are ordered: decided from public information only.

Laplacian smoothing averages each coordinate of the noisy gradient with its
neighbours along the feature axis. That pays where neighbouring columns are
related (the pixels of an image, the samples of a signal or spectrum) and
biases every step where they are not: a one-hot block, or a table of
unrelated measurements, has no order to smooth along, and smoothing it mixes
unrelated columns (on 2,500 rows of UCI Adult, 100 dense one-hot columns and
6 numeric ones, the classifier's sigma 1 predicted the majority class at
epsilon 1, 0.768, where sigma 0 reached 0.817).

:func:`feature_layout` reads only what the guarantee treats as public: the
user's declaration (``sigma="ordered"``), the input's format (sparse or
dense), its width and the column names a DataFrame or a ColumnTransformer
passes (``feature_names_in_``: the schema, not the rows). Nothing here reads
a value of a row, so two tables with the same schema get the same layout.

The rule, in order:

1. ``sigma="ordered"``: the columns are declared ordered.
2. Sparse input: unordered (one-hot or hashed columns).
3. Named columns that are not one numbered sequence (``age``, ``sex_Male``,
   ``cat__workclass_Private``: a table's or an encoder's names): unordered,
   whatever the width.
4. An image's width, unnamed or named as one numbered sequence
   (``pixel1`` .. ``pixel784``): ``s * s`` or ``3 * s * s`` columns for a side
   ``s`` of at least 16, the width not a power of two (28 x 28 MNIST, 32 x 32 x 3
   colour images): ordered.
5. Otherwise unordered: a table whose order is not declared is not smoothed.

Why the width rule is narrow. A square width is weak evidence: tables of
64, 100 or 121 columns are common, and embeddings and hashed features come
in powers of two (64, 256, 1024). Smoothing such a table costs more than
smoothing an image gains: on unnamed dense tables at replace-one epsilon 1
smoothing cost about 3 points on 100 unrelated columns and on 256, where it
gained about 1 point on MNIST (784) and nothing on average on the 8 x 8
digits.
Side 16 and more, not a power of two, keeps MNIST and colour images and
leaves the widths that tables take alone; an image of another width is
smoothed when declared (``sigma="ordered"``) or named ``pixel1`` .. .
"""

import math
import re

__all__ = ["ORDERED", "feature_layout"]

# The sigma value that declares the columns ordered (smoothing by width).
ORDERED = "ordered"
# The smallest side of a square image the shape rule accepts (see "Why the
# width rule is narrow": tables of 8 x 8 to 15 x 15 columns are common).
_MIN_IMAGE_SIDE = 16
# Colour images store their channels side by side: s * s * channels columns.
_IMAGE_CHANNELS = (1, 3)
_NUMBERED = re.compile(r"^(.*?)(\d+)$")


def _numbered_sequence(feature_names):
    """Whether the names are one stem followed by consecutive numbers, in order.

    ``pixel1`` .. ``pixel784`` or ``t_0`` .. ``t_99``: positions along an axis.
    """
    stems, numbers = set(), []
    for name in feature_names:
        match = _NUMBERED.match(str(name))
        if match is None:
            return False
        stems.add(match.group(1))
        numbers.append(int(match.group(2)))
    if len(stems) != 1:
        return False
    stem = stems.pop()
    # A stem holding a digit or a double underscore names an encoder's input
    # (``x0_0`` .. ``x0_9``: one-hot columns of the unnamed feature x0; a
    # ColumnTransformer's ``cat__``): categories, not positions.
    if "__" in stem or any(character.isdigit() for character in stem):
        return False
    return numbers == list(range(numbers[0], numbers[0] + len(numbers)))


def _image_side(n_features):
    """The side ``s`` of a square image of ``n_features`` columns, or None.

    Not for a power of two: the widths of embeddings and hashed features.
    """
    if n_features & (n_features - 1) == 0:
        return None
    for channels in _IMAGE_CHANNELS:
        if n_features % channels:
            continue
        side = math.isqrt(n_features // channels)
        if side >= _MIN_IMAGE_SIDE and side * side * channels == n_features:
            return side, channels
    return None


def feature_layout(n_features, sparse, feature_names=None, declared_ordered=False):
    """Whether the columns are ordered, and why, from public information only.

    Parameters
    ----------
    n_features : int
        d, the public width of X.
    sparse : bool
        Whether X is a sparse matrix.
    feature_names : array-like of str or None, default=None
        The column names (``feature_names_in_``, schema), or None for
        unnamed columns.
    declared_ordered : bool, default=False
        The user declared the columns ordered (``sigma="ordered"``).

    Returns
    -------
    ordered : bool
    reason : str
        Why, in a phrase (for the privacy report and the demonstration).
    """
    if declared_ordered:
        return True, "the columns were declared ordered"
    if sparse:
        return False, "sparse input (one-hot or hashed columns have no order to smooth along)"
    named = feature_names is not None and len(feature_names) > 0
    if named and not _numbered_sequence(feature_names):
        return False, (f"the {n_features} column names are not one numbered sequence (a "
                       "table's or an encoder's names, such as one-hot columns: no order to "
                       "smooth along)")
    image = _image_side(n_features)
    if image is not None:
        side, channels = image
        shape = f"{side} x {side}" + (f" x {channels}" if channels > 1 else "")
        kind = "numbered" if named else "unnamed"
        return True, f"{n_features} {kind} columns, the shape of a {shape} image"
    return False, (f"dense input of {n_features} columns whose order is neither declared "
                   "(sigma='ordered') nor implied by an image's shape or numbered names")
