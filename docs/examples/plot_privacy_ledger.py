"""
=====================================
A privacy ledger across several fits
=====================================

Each private fit on a data set spends part of its privacy: ten fits at
epsilon 1 on the same rows do not give epsilon 1 altogether. A
:class:`~sklearn_dplssgd.PrivacyLedger` passed as ``ledger=`` records every
fit that uses it (across ``clone``, cross-validation and joblib workers),
reports the total with dp-accounting, and refuses a fit that would take the
total above ``max_epsilon`` before that fit reads a single row.

Here an analyst with a budget of epsilon 2 on scikit-learn's digits first
cross-validates a model (five fits), then tries a few settings, until the
ledger refuses.
"""

# %%
# A ledger with a cap
# -------------------

import matplotlib.pyplot as plt
import numpy as np
from sklearn.datasets import load_digits
from sklearn.model_selection import cross_val_score, train_test_split
from sklearn.pipeline import make_pipeline

from sklearn_dplssgd import (BoundedScaler, DPLSSGDClassifier,
                             PrivacyBudgetExceededError, PrivacyLedger)

X, y = load_digits(return_X_y=True)
X_train, X_test, y_train, y_test = train_test_split(
    X, y, test_size=0.25, random_state=0, stratify=y)
ledger = PrivacyLedger(max_epsilon=2.0)


def model(epsilon, sigma=0.25):
    """Pixels scaled by their public range 0..16; labels declared; every fit charged."""
    return make_pipeline(BoundedScaler(lower=0, upper=16), DPLSSGDClassifier(
        epsilon=epsilon, sigma=sigma, classes=range(10), ledger=ledger))


spent, naive, labels = [], [], []


def record(label, epsilons):
    """Note the ledger's total after a step, and the plain sum of the fits' epsilons."""
    spent.append(ledger.epsilon())
    naive.append((naive[-1] if naive else 0.0) + sum(epsilons))
    labels.append(label)
    one_line = label.replace("\n", " ")
    print(f"{one_line}: ledger total {spent[-1]:.3f} (plain sum {naive[-1]:.3f})")


# %%
# Cross-validation: five fits, five charges
# -----------------------------------------
# ``cross_val_score`` clones the estimator for each fold; a clone keeps the
# same ledger, so every fold is charged.

scores = cross_val_score(model(epsilon=0.5), X_train, y_train, cv=5)
print(f"cross-validated accuracy at epsilon 0.5: {scores.mean():.3f}")
record("5-fold CV\nat 0.5", [0.5] * 5)

# %%
# Trying settings until the budget runs out
# -----------------------------------------

refused = None
for epsilon, sigma in [(0.5, 0.0), (0.5, 1.0), (1.0, 0.25), (1.0, 1.0), (1.0, 0.0)]:
    try:
        fitted = model(epsilon, sigma).fit(X_train, y_train)
    except PrivacyBudgetExceededError as error:
        print(f"refused: {error}")
        refused = f"fit at {epsilon:g}, sigma {sigma:g}: refused"
        break
    print(f"epsilon {epsilon:g}, sigma {sigma:g}: test accuracy "
          f"{fitted.score(X_test, y_test):.3f}")
    record(f"fit at {epsilon:g}\nsigma {sigma:g}", [epsilon])

# %%
# The ledger's report
# -------------------
# The total is composed by dp-accounting's privacy-loss-distribution
# accountant over every record, which is tighter than adding the epsilons.

print(ledger.privacy_report())

# %%
# Plot
# ----

fig, ax = plt.subplots(figsize=(6.8, 4.2))
steps = np.arange(len(spent))
ax.plot(steps, naive, "s--", color="gray", label="sum of the fits' epsilons")
ax.plot(steps, spent, "o-", label="ledger total (composed)")
ax.axhline(ledger.max_epsilon, color="red", linestyle=":", label="max_epsilon")
if refused:
    ax.annotate(refused, xy=(steps[-1], spent[-1]), xytext=(steps[-1] - 1.5, 0.6),
                arrowprops={"arrowstyle": "->"}, fontsize=8)
ax.set_xticks(steps)
ax.set_xticklabels(labels, fontsize=8)
ax.set_ylabel("epsilon spent on the rows (delta = 1e-5)")
ax.set_title("Digits: one budget across fits")
ax.set_ylim(0.0, max(naive) + 0.5)
ax.legend(loc="upper left")
fig.tight_layout()
plt.show()

ledger.close()
