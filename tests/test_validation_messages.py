"""Validation errors quote no value of the data, and fail closed on messages they do not know.

``validate_hiding_values`` passes a check's message through only when it is
one of the forms known to quote no value (shapes, counts, dtypes, type and
feature names); any other message is replaced by a generic one that names
the inputs, so that a new upstream wording that prints the data cannot leak
it through the library.
"""

import numpy as np
import pytest

from sklearn_dplssgd._utils import validate_hiding_values, VALUES_NOT_SHOWN

KNOWN = [
    "Input X contains NaN.",
    "Input y contains infinity or a value too large for dtype('float64').",
    "X has 3 features, but DPLSSGDClassifier is expecting 4 features as input.",
    "Found input variables with inconsistent numbers of samples: [200, 199]",
    "Found array with 0 sample(s) (shape=(0, 3)) while a minimum of 1 is required by "
    "BoundedScaler.",
    "Found array with dim 3, while dim <= 2 is required by DPLSSGDRegressor.",
    # scikit-learn 1.6's wording of the same check.
    "Found array with dim 3. DPLSSGDRegressor expected <= 2.",
    "This DPLSSGDRegressor estimator requires y to be passed, but the target y is None.",
    "float() argument must be a string or a real number, not 'dict'",
    "sample_weight must be a 1-d array with one weight per row of X (16); got shape (32,).",
]


def _raising(message, kind=ValueError):
    def check(*args, **kwargs):
        raise kind(message)
    return check


@pytest.mark.parametrize("message", KNOWN)
def test_messages_known_to_quote_no_value_pass_through(message):
    with pytest.raises(ValueError) as error:
        validate_hiding_values({"X": np.zeros((2, 2))}, _raising(message))
    assert str(error.value) == message


@pytest.mark.parametrize("kind", [ValueError, TypeError])
def test_an_unknown_message_is_replaced_whatever_it_quotes(kind):
    secret = "patient 4711 has glucose 13.37"
    with pytest.raises(kind) as error:
        validate_hiding_values({"X": np.zeros((2, 2)), "y": np.zeros(2)},
                               _raising(f"Unexpected content: {secret}", kind))
    text = str(error.value)
    assert secret not in text and "4711" not in text and "13.37" not in text
    assert text.startswith("X or y did not pass input validation") and VALUES_NOT_SHOWN in text
    assert error.value.__cause__ is None and error.value.__context__ is None


def test_a_known_form_followed_by_values_is_not_let_through():
    # Anchored forms: a known prefix does not carry arbitrary text after it.
    message = "Found input variables with inconsistent numbers of samples: [3, 2] (row 7: 1.5)"
    with pytest.raises(ValueError) as error:
        validate_hiding_values({"X": np.zeros((2, 2))}, _raising(message))
    assert "1.5" not in str(error.value)
