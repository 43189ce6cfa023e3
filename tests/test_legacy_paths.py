"""Pickles made before the package was split into layers still load.

``tests/data/pickles_before_layout.pkl`` was written by
``tests/make_legacy_pickles.py`` on the flat layout, whose module paths
(``sklearn_dplssgd._classifier``, ``sklearn_dplssgd._feature_bounds``, ...)
the pickle names. Loading it with the current package must give the current
classes, fitted as they were: same predictions, same attributes.
"""

import importlib
import pickle
import re
import sys
import warnings
from pathlib import Path

import numpy as np
import pytest

from sklearn_dplssgd import (
    DPBoundedScaler, DPLSSGDClassifier, DPLSSGDRegressor, DPOneHotEncoder, PrivacyLedger,
)
from sklearn_dplssgd.utils._legacy_paths import LEGACY_MODULES

PICKLES = Path(__file__).resolve().parent / "data" / "pickles_before_layout.pkl"
CLASSES = {
    "classifier": DPLSSGDClassifier, "regressor": DPLSSGDRegressor,
    "output_regressor": DPLSSGDRegressor, "scaler": DPBoundedScaler,
    "encoder": DPOneHotEncoder, "ledger": PrivacyLedger,
}


@pytest.fixture(scope="module")
def record():
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # e.g. sklearn's version mismatch warning
        with PICKLES.open("rb") as file:
            return pickle.load(file)


def test_the_pickle_names_the_old_module_paths():
    # Otherwise the test would not exercise the old paths at all.
    data = PICKLES.read_bytes()
    assert b"sklearn_dplssgd._classifier" in data
    assert b"sklearn_dplssgd._feature_bounds" in data


def test_old_pickles_load_as_the_current_classes(record):
    for name, cls in CLASSES.items():
        assert type(record["objects"][name]) is cls, name


def test_old_pickles_predict_as_they_did(record):
    objects, X, categories = record["objects"], record["X"], record["categories"]
    expected = record["outputs"]
    np.testing.assert_array_equal(objects["classifier"].predict_proba(X), expected["classifier"])
    np.testing.assert_array_equal(objects["regressor"].predict(X), expected["regressor"])
    np.testing.assert_array_equal(objects["output_regressor"].predict(X),
                                  expected["output_regressor"])
    np.testing.assert_array_equal(objects["scaler"].transform(X), expected["scaler"])
    np.testing.assert_array_equal(objects["encoder"].transform(categories).toarray(),
                                  expected["encoder"])
    ledger = objects["ledger"]
    assert [ledger.epsilon(), len(ledger.records)] == list(expected["ledger"])


def test_old_pickles_keep_their_attributes(record):
    classifier = record["objects"]["classifier"]
    for attribute in ("coef_", "intercept_", "classes_", "epsilon_", "dp_event_"):
        assert hasattr(classifier, attribute), attribute
    # Private classes held by fitted attributes come back as the current ones.
    from sklearn_dplssgd.linear_model._feature_bounds import FeatureMap
    assert type(classifier._feature_map) is FeatureMap
    assert type(record["objects"]["output_regressor"]._feature_map) is FeatureMap
    assert classifier.ledger is record["objects"]["ledger"]
    # The estimator can be refitted after loading (its parameters are intact).
    refitted = DPLSSGDClassifier(**classifier.get_params())
    assert refitted.get_params() == classifier.get_params()


@pytest.mark.parametrize("old", sorted(LEGACY_MODULES))
def test_each_old_path_is_the_new_module_object(old):
    module = importlib.import_module(f"sklearn_dplssgd.{old}")
    new = importlib.import_module(f"sklearn_dplssgd.{LEGACY_MODULES[old]}")
    assert module is new
    # It keeps its own name and spec (the alias does not rename it).
    assert module.__spec__.name == module.__name__ == new.__name__


def test_the_finder_answers_old_names_only():
    finders = [finder for finder in sys.meta_path
               if type(finder).__name__ == "_LegacyPathFinder"]
    assert len(finders) == 1
    assert finders[0].find_spec("sklearn_dplssgd.linear_model._base") is None
    assert finders[0].find_spec("numpy") is None
    with pytest.raises(ModuleNotFoundError):
        importlib.import_module("sklearn_dplssgd._no_such_module")


def test_the_code_itself_uses_the_new_paths():
    # The old paths are for pickles only: an import of one in the package,
    # the tests, the benchmarks or the examples would hide a missed move.
    root = PICKLES.parent.parent.parent
    old = "|".join(sorted((re.escape(name) for name in LEGACY_MODULES), key=len, reverse=True))
    dotted = re.compile(rf"sklearn_dplssgd\.({old})\b(?!\.py)")
    from_package = re.compile(rf"from sklearn_dplssgd import [^\n]*\b({old})\b")
    exempt = {"test_legacy_paths.py", "make_legacy_pickles.py", "_legacy_paths.py", "__init__.py"}
    offences = []
    for folder in ("sklearn_dplssgd", "tests", "benchmarks", "docs/examples"):
        for path in sorted((root / folder).rglob("*.py")):
            if path.name in exempt and path.parent.name in ("tests", "utils", "sklearn_dplssgd"):
                continue
            text = path.read_text(encoding="utf-8")
            offences += [f"{path.relative_to(root)}: {match.group(0)}"
                         for pattern in (dotted, from_package) for match in pattern.finditer(text)]
    assert not offences
