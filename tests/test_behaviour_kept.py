"""The models of every configuration are kept across changes that should not move them.

With ``reproducible=True`` and a fixed ``random_state`` each case of
``tests/behaviour_cases.py`` gives the coefficients and training scores
recorded in ``tests/data/behaviour_reference.npz`` (made by
``tests/make_behaviour_reference.py`` from the tree whose steps release
integers on a lattice, drawn from an AES-CTR keystream) to 1e-9: a change
that only moves code (the package's restructuring) must keep them.

The float32 cases are compared with a float32 tolerance instead: Numba
compiles for the host CPU and NumPy's BLAS picks kernels by CPU, so the
last bits of a float32 model may differ between machines and compiler
releases. A float32 model is the same model when it agrees to a few hundred
float32 units in the last place of its largest value; the float64 cases
keep 1e-9.

The settings each reference fit resolved ("auto" step size, batch size,
epochs, averaging start) are passed explicitly: the test checks the
training code, not the "auto" rules.
"""

from pathlib import Path

import numpy as np
import pytest

import sklearn_dplssgd
from behaviour_cases import CASES, case_outputs, pinned_settings

REFERENCE = Path(__file__).parent / "data" / "behaviour_reference.npz"

# A float32 model agrees with its reference to a few hundred units in the last
# place (float32's eps is 1.2e-7): what differs between CPUs and compilers,
# far below any change of what the training computes.
_FLOAT32_ULPS = 100


def _tolerance(case, expected):
    if case["dtype"] == np.float32:
        scale = max(1.0, float(np.max(np.abs(expected), initial=0.0)))
        return _FLOAT32_ULPS * float(np.finfo(np.float32).eps) * scale
    return 1e-9


@pytest.fixture(scope="module")
def reference():
    with np.load(REFERENCE) as recorded:
        return {key: recorded[key] for key in recorded.files}


@pytest.mark.parametrize("case", CASES, ids=[case["name"] for case in CASES])
def test_model_is_the_recorded_one(case, reference):
    pinned = pinned_settings(case, reference[f"{case['name']}/resolved"])
    outputs = case_outputs(case, sklearn_dplssgd, "new", pinned)
    for key, value in outputs.items():
        expected = reference[f"{case['name']}/{key}"]
        np.testing.assert_allclose(value, expected, rtol=0, atol=_tolerance(case, expected),
                                   err_msg=f"{case['name']}: {key}")
