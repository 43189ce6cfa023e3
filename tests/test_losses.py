"""The loss registry: one entry per loss, read by every part of the library."""

import math

import numpy as np
import pytest

from sklearn_dplssgd import DPLSSGDClassifier, DPLSSGDRegressor
from sklearn_dplssgd._training._losses import (
    CLASSIFICATION_LOSSES,
    LOSSES,
    NON_SMOOTH_LOSSES,
    REGRESSION_LOSSES,
    SMOOTH_LOSSES,
    loss_code,
    residual_norms_at_zero,
)
from oracles import loss_derivative_reference
from sklearn_dplssgd._mechanisms.output_perturbation._accounting import smoothness_constants


def test_the_estimators_offer_exactly_the_registry():
    assert set(CLASSIFICATION_LOSSES) | set(REGRESSION_LOSSES) == set(LOSSES)
    assert set(CLASSIFICATION_LOSSES) == {"log_loss", "hinge", "squared_hinge"}
    assert set(SMOOTH_LOSSES) == {"log_loss", "huber", "squared_error", "squared_hinge"}
    assert set(NON_SMOOTH_LOSSES) == {"hinge", "epsilon_insensitive"}
    for name in CLASSIFICATION_LOSSES:
        DPLSSGDClassifier(loss=name)._validate_hyperparameters()
    for name in REGRESSION_LOSSES:
        DPLSSGDRegressor(loss=name)._validate_hyperparameters()
    with pytest.raises(ValueError, match="loss"):
        DPLSSGDRegressor(loss="log_loss")._validate_hyperparameters()


@pytest.mark.parametrize("name", CLASSIFICATION_LOSSES)
def test_the_classifier_encodes_two_classes_as_the_registry_says(name):
    y = np.array(["b", "a", "b", "a"])
    encoded, n_outputs = DPLSSGDClassifier(loss=name, classes=["a", "b"])._targets().encode(y)
    negative, positive = LOSSES[name].binary_targets
    assert n_outputs == 1
    np.testing.assert_array_equal(encoded, [positive, negative, positive, negative])
    assert loss_code(name, 1) == LOSSES[name].code
    assert loss_code(name, 3) == LOSSES[name].multiclass_code


@pytest.mark.parametrize("name", REGRESSION_LOSSES)
def test_the_threshold_is_read_only_for_the_losses_that_have_one(name):
    regressor = DPLSSGDRegressor(loss=name, loss_threshold=0.7)
    expected = 0.7 if name in ("huber", "epsilon_insensitive") else 0.0
    assert LOSSES[name].threshold(regressor) == expected
    assert loss_code(name, 1) == LOSSES[name].code


def test_output_perturbation_constants_come_from_the_registry():
    # R and L of the registry plus alpha, with the intercept's 1 appended.
    x = math.sqrt(2.0**2 + 1.0)
    assert smoothness_constants("log_loss", 3, 2.0, 0.1, True) == pytest.approx(
        (math.sqrt(2) * x, x**2 / 2 + 0.1, 0.1))
    assert smoothness_constants("huber", 1, 2.0, 0.1, False, loss_threshold=0.5) == (
        pytest.approx((1.0, 4.1, 0.1)))
    for name in NON_SMOOTH_LOSSES:
        assert not LOSSES[name].smooth
        with pytest.raises(ValueError, match="not smooth"):
            smoothness_constants(name, 1, 1.0, 0.1, True, loss_threshold=0.1)


@pytest.mark.parametrize("name, n_outputs", [(name, 1) for name in sorted(LOSSES)]
                         + [(name, 4) for name in CLASSIFICATION_LOSSES])
def test_residual_norms_at_zero_match_the_full_derivative(name, n_outputs):
    # The mostly-clipped warning uses the per-label shortcut; it must equal
    # the derivative computed row by row at zero margins.
    rng = np.random.default_rng(3)
    code = loss_code(name, n_outputs)
    if n_outputs > 1:
        y = rng.integers(0, n_outputs, 50).astype(np.float64)
    elif name in CLASSIFICATION_LOSSES:
        y = rng.choice(LOSSES[name].binary_targets, 50).astype(np.float64)
    else:
        y = rng.normal(0, 3, 50)
    full = np.linalg.norm(
        loss_derivative_reference(code, np.zeros((50, n_outputs)), y, 0.5), axis=1)
    np.testing.assert_allclose(residual_norms_at_zero(code, y, n_outputs, 0.5), full,
                               rtol=1e-15, atol=0)
