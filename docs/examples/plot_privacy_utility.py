"""
==============================================
Privacy-utility curve: DP-SGD against DP-LSSGD
==============================================

Test accuracy of multinomial logistic regression on scikit-learn's 8x8
digits as a function of the privacy budget epsilon, for plain DP-SGD
(``sigma=0``) and DP-LSSGD (Laplacian smoothing, ``sigma > 0``), with the
non-private model (``epsilon=inf``; the same clipped training without noise)
as a reference line.

Each point is the mean test accuracy of a few fits, each with fresh noise
(no ``random_state``: the noise of a private release must not be
reproducible by others). The epsilons on the x axis are those the fitted
models report in ``epsilon_``.
"""

# %%
# Data
# ----
# Pixels of the digits lie in 0..16 by construction of the data set:
# dividing by 16 is a data-independent scaling, so it costs no privacy (a
# scaler fitted on the private rows would leak). ``classes=range(10)``
# declares the label set, so that it is not read from the private labels.

import math

import matplotlib.pyplot as plt
import numpy as np
from sklearn.datasets import load_digits
from sklearn.model_selection import train_test_split

from sklearn_dplssgd import DPLSSGDClassifier

X, y = load_digits(return_X_y=True)
X = X / 16.0
X_train, X_test, y_train, y_test = train_test_split(
    X, y, test_size=0.25, random_state=0, stratify=y
)

# %%
# Training
# --------
# The same settings for every sigma (20 epochs, batch 256, constant step
# size ``eta0=2``); only the budget and the smoothing change. The step size
# matters: for a real task, tune ``eta0`` per epsilon and sigma (and count the
# budget that tuning spends).

EPSILONS = [0.25, 0.5, 1.0, 2.0, 4.0]
SIGMAS = [0.0, 1.0, 3.0]
N_FITS = 8  # fits per point


def mean_accuracy(epsilon, sigma):
    """Mean test accuracy of N_FITS fits, and the epsilon they report."""
    scores = []
    for _ in range(N_FITS):
        clf = DPLSSGDClassifier(
            epsilon=epsilon, sigma=sigma, classes=range(10), max_iter=20, eta0=2.0
        )
        clf.fit(X_train, y_train)
        scores.append(clf.score(X_test, y_test))
    return np.mean(scores), np.std(scores) / math.sqrt(N_FITS), clf.epsilon_


results = {sigma: [mean_accuracy(epsilon, sigma) for epsilon in EPSILONS]
           for sigma in SIGMAS}
non_private, _, _ = mean_accuracy(math.inf, 0.0)

for sigma, rows in results.items():
    print(f"sigma={sigma:g}: " + ", ".join(
        f"epsilon_={reached:.3g}: {accuracy:.3f}" for accuracy, _, reached in rows))
print(f"non-private (epsilon=inf, sigma=0): {non_private:.3f}")

# %%
# Plot
# ----
# With strong privacy (small epsilon) the noise dominates and smoothing it
# usually lifts the accuracy; as epsilon grows there is less noise to remove
# and the bias of the smoothing can cost more than it saves.

fig, ax = plt.subplots(figsize=(6.4, 4.2))
for sigma, rows in results.items():
    accuracy, error, reached = (np.array(column) for column in zip(*rows))
    label = "DP-SGD (sigma=0)" if sigma == 0 else f"DP-LSSGD (sigma={sigma:g})"
    ax.errorbar(reached, accuracy, yerr=error, marker="o", capsize=3, label=label)
ax.axhline(non_private, color="gray", linestyle="--", label="non-private (epsilon=inf)")
ax.set_xscale("log")
ax.minorticks_off()
ax.set_xticks(EPSILONS)
ax.set_xticklabels([f"{epsilon:g}" for epsilon in EPSILONS])
ax.set_xlabel("epsilon_ reached (delta = 1e-5)")
ax.set_ylabel(f"test accuracy (mean of {N_FITS} fits)")
ax.set_title("Digits, multinomial logistic regression")
ax.legend(loc="lower right")
fig.tight_layout()
plt.show()
