"""Shared helpers for the benchmarks: the MNIST loader and the fixed split.

The data are the 10,000 real MNIST test digits in their original IDX format,
read from ``../shared/data/mnist-t10k`` relative to the repository root
(never copied into the repository). Pixels are scaled by 1/255, a
data-independent transform.
"""

import gzip
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
