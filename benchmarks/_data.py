"""Shared helpers for the benchmarks: the MNIST loader and the fixed split.

The data are the 10,000 real MNIST test digits in their original IDX format,
read from ``../shared/data/mnist-t10k`` relative to the repository root
(never copied into the repository). Pixels are scaled by 1/255, a
data-independent transform.
"""

import gzip
import math
import os
from pathlib import Path

import numpy as np

REPO_ROOT = Path(__file__).resolve().parent.parent
DEFAULT_MNIST_DIR = (REPO_ROOT / ".." / "shared" / "data" / "mnist-t10k").resolve()
IMAGES_FILE = "t10k-images-idx3-ubyte.gz"
LABELS_FILE = "t10k-labels-idx1-ubyte.gz"

# The fixed split: first 8,000 digits for training (of which the LAST 1,000
# are held out as the validation part used to choose the learning rate),
# last 2,000 digits for testing. No shuffling: the order of the IDX file.
N_TRAIN = 8000
N_VALIDATION = 1000
N_TEST = 2000


def mnist_available(data_dir=None):
    """Whether both IDX files are present in ``data_dir``."""
    data_dir = Path(data_dir) if data_dir is not None else DEFAULT_MNIST_DIR
    return (data_dir / IMAGES_FILE).is_file() and (data_dir / LABELS_FILE).is_file()


def _read_idx(path, magic, header_bytes):
    with gzip.open(path, "rb") as handle:
        raw = handle.read()
    found = int.from_bytes(raw[:4], "big")
    if found != magic:
        raise ValueError(f"{path}: magic number {found}, expected {magic}.")
    count = int.from_bytes(raw[4:8], "big")
    return np.frombuffer(raw, dtype=np.uint8, offset=header_bytes), count


def load_mnist(data_dir=None):
    """The 10,000 MNIST test digits.

    Returns
    -------
    X : ndarray of shape (10000, 784), float64, pixels / 255
    y : ndarray of shape (10000,), int64, labels 0-9
    """
    data_dir = Path(data_dir) if data_dir is not None else DEFAULT_MNIST_DIR
    pixels, n_images = _read_idx(data_dir / IMAGES_FILE, 2051, 16)
    labels, n_labels = _read_idx(data_dir / LABELS_FILE, 2049, 8)
    if n_images != n_labels:
        raise ValueError(f"{n_images} images but {n_labels} labels.")
    X = pixels.reshape(n_images, 784).astype(np.float64) / 255.0
    return X, labels.astype(np.int64)


def mnist_split(data_dir=None):
    """The fixed split of the benchmarks (no shuffling).

    Returns a dict with ``X_train, y_train`` (first 8,000 rows),
    ``X_fit, y_fit`` (the first 7,000 of those: where learning rates are
    tried), ``X_val, y_val`` (rows 7,000-7,999: validation part for the
    learning rate), and ``X_test, y_test`` (last 2,000 rows).
    """
    X, y = load_mnist(data_dir)
    n_fit = N_TRAIN - N_VALIDATION
    return {
        "X_train": X[:N_TRAIN], "y_train": y[:N_TRAIN],
        "X_fit": X[:n_fit], "y_fit": y[:n_fit],
        "X_val": X[n_fit:N_TRAIN], "y_val": y[n_fit:N_TRAIN],
        "X_test": X[-N_TEST:], "y_test": y[-N_TEST:],
    }


def machine_note():
    """One line about the machine and its load (for the result files)."""
    load = os.getloadavg()
    return (f"{os.cpu_count()} cores, load average {load[0]:.2f} / {load[1]:.2f} / "
            f"{load[2]:.2f} (1 / 5 / 15 min)")


# The tables of the mechanisms and streaming benchmarks: scikit-learn's bundled
# tables scaled by documented bounds, MNIST, and seeded synthetic tables.
TEST_SHARE = 0.25
VAL_SHARE = 0.2

# Real tables: documented feature ranges (scikit-learn's DESCR).
REAL_BOUNDS = {
    "iris": ([4.3, 2.0, 1.0, 0.1], [7.9, 4.4, 6.9, 2.5]),
    "wine": (
        [11.0, 0.74, 1.36, 10.6, 70.0, 0.98, 0.34, 0.13, 0.41, 1.3, 0.48, 1.27, 278.0],
        [14.8, 5.80, 3.23, 30.0, 162.0, 3.88, 5.08, 0.66, 3.58, 13.0, 1.71, 4.00, 1680.0]),
    "breast_cancer": (
        [6.981, 9.71, 43.79, 143.5, 0.053, 0.019, 0.0, 0.0, 0.106, 0.05, 0.112, 0.36,
         0.757, 6.802, 0.002, 0.002, 0.0, 0.0, 0.008, 0.001, 7.93, 12.02, 50.41, 185.2,
         0.071, 0.027, 0.0, 0.0, 0.156, 0.055],
        [28.11, 39.28, 188.5, 2501.0, 0.163, 0.345, 0.427, 0.201, 0.304, 0.097, 2.873,
         4.885, 21.98, 542.2, 0.031, 0.135, 0.396, 0.053, 0.079, 0.03, 36.04, 49.54,
         251.2, 4254.0, 0.223, 1.058, 1.252, 0.291, 0.664, 0.208]),
    "digits": (0.0, 16.0),
}

# Synthetic tables: (name, generator, n rows in all, d, K).

SYNTHETIC = (
    ("linear", "linear", 200, 4, 2),
    ("linear", "linear", 800, 16, 3),
    ("linear", "linear", 3000, 64, 10),
    ("linear", "linear", 12000, 16, 2),
    ("linear", "linear", 80000, 8, 2),
    ("non-linear", "nonlinear", 1200, 4, 2),
    ("non-linear", "nonlinear", 6000, 32, 3),
    ("heavy tails", "heavy", 1000, 30, 2),
    ("heavy tails", "heavy", 20000, 64, 5),
    ("imbalanced", "imbalanced", 500, 8, 2),
    ("imbalanced", "imbalanced", 4000, 20, 2),
    ("pixel-like", "pixels", 2500, 196, 10),
)
QUICK_TABLES = ("breast_cancer", "linear 200x4 K2")


def _labels(scores, rng, temperature):
    """Labels drawn from a softmax of the scores (so classes overlap)."""
    noisy = scores / temperature + rng.gumbel(size=scores.shape)
    return np.argmax(noisy, axis=1)


def generate(kind, n, d, n_classes, seed):
    """Raw features, their PUBLIC bounds (by construction) and labels.

    The bounds come from the generator's declared range, never from the rows:
    Gaussian features are bounded by +-3 (clipped beyond), Student-t ones
    (2 degrees of freedom) by +-6, pixel-like ones lie in [0, 1].
    """
    rng = np.random.default_rng(seed)
    if kind == "heavy":
        X = rng.standard_t(2.0, size=(n, d))
        bound = 6.0
    elif kind == "pixels":
        # Non-negative, mostly zero, spatially smooth: a blob per class.
        side = int(round(math.sqrt(d)))
        grid = np.stack(np.meshgrid(np.arange(side), np.arange(side)), -1).reshape(-1, 2)
        centres = rng.uniform(0, side, size=(n_classes, 2))
        y = rng.integers(n_classes, size=n)
        jitter = rng.normal(scale=side / 6, size=(n, 2))
        distance = np.linalg.norm(grid[None, :, :] - (centres[y] + jitter)[:, None, :], axis=2)
        X = np.exp(-(distance / (side / 5)) ** 2) + rng.uniform(0, 0.3, size=(n, d))
        X[X < 0.35] = 0.0
        return np.clip(X, 0.0, 1.0), (0.0, 1.0), y
    else:
        X = rng.normal(size=(n, d))
        bound = 3.0
    weights = rng.normal(size=(d, n_classes))
    if kind == "nonlinear":
        # A quadratic boundary: a linear model sees part of it only.
        scores = np.stack([(X[:, k % d] ** 2 - 1.0) + 0.5 * X @ weights[:, k]
                           for k in range(n_classes)], axis=1)
    else:
        scores = X @ weights / math.sqrt(d)
    if kind == "imbalanced":
        scores[:, 0] += 2.5  # about 85-90 % in class 0
    y = _labels(scores, rng, temperature=0.3)
    return np.clip(X, -bound, bound), (-bound, bound), y


def load_table(name, seed, scaling):
    """``(X_train, X_test, y_train, y_test)`` of one table for one seed.

    ``scaling`` is ``"[-1, 1]"`` or ``"[0, 1]"``: BoundedScaler's map of the
    public bounds to [-1, 1], then ``(x + 1) / 2`` for the latter (MNIST:
    pixels / 255, then ``2 x - 1`` for the former).
    """
    import sklearn.datasets
    from sklearn.model_selection import train_test_split

    from sklearn_dplssgd import BoundedScaler

    if name == "MNIST":
        split = mnist_split()
        X_train, X_test = split["X_train"], split["X_test"]
        y_train, y_test = split["y_train"], split["y_test"]
        if scaling == "[-1, 1]":
            X_train, X_test = 2.0 * X_train - 1.0, 2.0 * X_test - 1.0
        # The fixed split; the seed shuffles the training rows only.
        order = np.random.default_rng(seed).permutation(len(y_train))
        return X_train[order], X_test, y_train[order], y_test
    if name in REAL_BOUNDS:
        X, y = getattr(sklearn.datasets, f"load_{name}")(return_X_y=True)
        lower, upper = REAL_BOUNDS[name]
    else:
        kind, n, d, n_classes = TABLES[name]
        X, (lower, upper), y = generate(kind, n, d, n_classes, seed=_stable_hash(name))
    X = BoundedScaler(lower=lower, upper=upper).fit_transform(X)
    if scaling == "[0, 1]":
        X = (X + 1.0) / 2.0
    return train_test_split(X, y, test_size=TEST_SHARE, random_state=seed, stratify=y)


TABLES = {f"{label} {n}x{d} K{k}": (kind, n, d, k) for label, kind, n, d, k in SYNTHETIC}


def _stable_hash(text):
    return int.from_bytes(text.encode(), "little") % 2**31


# Documented feature ranges (scikit-learn's DESCR, "Summary Statistics").
IRIS_BOUNDS = ([4.3, 2.0, 1.0, 0.1], [7.9, 4.4, 6.9, 2.5])
WINE_BOUNDS = (
    [11.0, 0.74, 1.36, 10.6, 70.0, 0.98, 0.34, 0.13, 0.41, 1.3, 0.48, 1.27, 278.0],
    [14.8, 5.80, 3.23, 30.0, 162.0, 3.88, 5.08, 0.66, 3.58, 13.0, 1.71, 4.00, 1680.0],
)
BREAST_CANCER_BOUNDS = (
    [6.981, 9.71, 43.79, 143.5, 0.053, 0.019, 0.0, 0.0, 0.106, 0.05, 0.112, 0.36, 0.757,
     6.802, 0.002, 0.002, 0.0, 0.0, 0.008, 0.001, 7.93, 12.02, 50.41, 185.2, 0.071, 0.027,
     0.0, 0.0, 0.156, 0.055],
    [28.11, 39.28, 188.5, 2501.0, 0.163, 0.345, 0.427, 0.201, 0.304, 0.097, 2.873, 4.885,
     21.98, 542.2, 0.031, 0.135, 0.396, 0.053, 0.079, 0.03, 36.04, 49.54, 251.2, 4254.0,
     0.223, 1.058, 1.252, 0.291, 0.664, 0.208],
)
TARGET_BOUNDS = (0.0, 400.0)

# name: (loader name, public bounds, regression?, target, target at epsilon 2
# replace-one / 1 add-remove; MNIST's at epsilon 1 replace-one / 0.5 add-remove)
DATASETS = {
    "breast cancer": ("load_breast_cancer", BREAST_CANCER_BOUNDS, False, 0.93),
    "wine": ("load_wine", WINE_BOUNDS, False, 0.90),
    "iris": ("load_iris", IRIS_BOUNDS, False, 0.88),
    "digits": ("load_digits", (0.0, 16.0), False, 0.91),
    "diabetes": ("load_diabetes", (-0.2, 0.2), True, 0.35),
    "MNIST": (None, None, False, 0.87),
}


def load_scaled(name, seed, quick):
    """Scaled (X_train, X_test, y_train, y_test, regression) for one seed."""
    import sklearn.datasets
    from sklearn.model_selection import train_test_split

    from sklearn_dplssgd import BoundedScaler

    loader, bounds, regression, _ = DATASETS[name]
    if loader is None:
        split = mnist_split()
        data = [split["X_train"], split["X_test"], split["y_train"], split["y_test"]]
        if quick:
            data = [data[0][:2000], data[1][:500], data[2][:2000], data[3][:500]]
        return (*data, False)
    X, y = getattr(sklearn.datasets, loader)(return_X_y=True)
    # Public bounds: the scaler's fit reads only the shape of X.
    X = BoundedScaler(lower=bounds[0], upper=bounds[1]).fit_transform(X)
    X_train, X_test, y_train, y_test = train_test_split(
        X, y, test_size=0.25, random_state=seed, stratify=None if regression else y)
    return X_train, X_test, y_train, y_test, regression
