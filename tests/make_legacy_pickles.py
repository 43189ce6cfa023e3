"""Record fitted objects pickled by the flat layout (e.g. ``sklearn_dplssgd._classifier``).

Usage (from the repository root, on a checkout of the flat layout)::

    python tests/make_legacy_pickles.py tests/data/pickles_before_layout.pkl

Written once, before the package was split into subpackages; ``tests/test_legacy_paths.py``
loads the file with the current package and checks that every object predicts or transforms
as it did when it was pickled.
"""

import pickle
import sys

import numpy as np


def fitted_objects():
    """The public classes a user may have pickled, fitted, with the data to check them on."""
    from sklearn_dplssgd import (
        DPBoundedScaler, DPLSSGDClassifier, DPLSSGDRegressor, DPOneHotEncoder, PrivacyLedger,
    )

    rng = np.random.default_rng(0)
    X = rng.uniform(-1.0, 1.0, size=(200, 4))
    y_class = (X[:, 0] + X[:, 1] > 0).astype(int)
    y_value = X @ np.array([0.5, -0.25, 0.1, 0.0])
    categories = rng.integers(0, 3, size=(200, 2))
    ledger = PrivacyLedger(max_epsilon=10.0, delta=1e-5)
    objects = {
        "classifier": DPLSSGDClassifier(epsilon=2.0, feature_bounds=(-1.0, 1.0), max_iter=3,
                                        random_state=0, ledger=ledger).fit(X, y_class),
        "regressor": DPLSSGDRegressor(epsilon=2.0, feature_bounds=(-1.0, 1.0), max_iter=3,
                                      random_state=1).fit(X, y_value),
        "output_regressor": DPLSSGDRegressor(loss="huber", epsilon=2.0, mechanism="output",
                                             max_iter=3, feature_bounds=(-1.0, 1.0),
                                             random_state=2).fit(X, y_value),
        "scaler": DPBoundedScaler(epsilon=1.0, random_state=3).fit(X),
        "encoder": DPOneHotEncoder(epsilon=1.0, random_state=4).fit(categories),
    }
    objects["ledger"] = ledger
    return objects, X, categories


def outputs(objects, X, categories):
    """What each fitted object gives on the recorded rows."""
    return {
        "classifier": objects["classifier"].predict_proba(X),
        "regressor": objects["regressor"].predict(X),
        "output_regressor": objects["output_regressor"].predict(X),
        "scaler": objects["scaler"].transform(X),
        "encoder": objects["encoder"].transform(categories).toarray(),
        "ledger": np.array([objects["ledger"].epsilon(), len(objects["ledger"].records)]),
    }


def main(path):
    objects, X, categories = fitted_objects()
    record = {"objects": objects, "X": X, "categories": categories,
              "outputs": outputs(objects, X, categories)}
    with open(path, "wb") as file:
        pickle.dump(record, file)


if __name__ == "__main__":
    main(sys.argv[1])
