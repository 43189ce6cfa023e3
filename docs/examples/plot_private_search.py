"""
==========================================
Private hyperparameter search and its cost
==========================================

Tuning on private rows spends privacy: every fit the search makes, and the
choice of the best one, depend on the rows. ``GridSearchCV`` over a private
estimator spends a fit's budget per candidate and fold, and its choice is
published without noise. :class:`~sklearn_dplssgd.DPRandomizedSearch` has
one budget for the whole search: a secret random number of trials, each a
private fit with a noisy validation score, and only the best trial
released.

Its price is noise: to fit several trials and select within the same
epsilon, each trial trains with more noise than a single fit would. This
example compares, at the same total budget, the search with a single fit
at the estimator's defaults on scikit-learn's digits.
"""

# %%
# Data and model
# --------------
# The pixels lie in 0..16 by construction of the data set (public bounds);
# the labels are declared.

import matplotlib.pyplot as plt
import numpy as np
from sklearn.base import clone
from sklearn.datasets import load_digits
from sklearn.model_selection import train_test_split
from sklearn.pipeline import make_pipeline

from sklearn_dplssgd import BoundedScaler, DPLSSGDClassifier, DPRandomizedSearch

X, y = load_digits(return_X_y=True)
X_train, X_test, y_train, y_test = train_test_split(
    X, y, test_size=0.25, random_state=0, stratify=y)
model = make_pipeline(BoundedScaler(lower=0, upper=16),
                      DPLSSGDClassifier(classes=range(10)))

# %%
# A search with one budget
# ------------------------
# The step size and the smoothing strength are searched, the defaults among
# the candidates (``"auto"`` resolves the step size from the trial's noise);
# ``n_trials`` is the mean of the secret number of trials.

search_space = {"dplssgdclassifier__eta0": ["auto", 0.3, 1.0],
                "dplssgdclassifier__sigma": [0.0, 0.25, 1.0]}
search = DPRandomizedSearch(model, search_space, epsilon=2.0, n_trials=6)
search.fit(X_train, y_train)
one_fit = clone(model).set_params(dplssgdclassifier__epsilon=2.0).fit(X_train, y_train)
print(f"search: best parameters {search.best_params_}, test accuracy "
      f"{search.score(X_test, y_test):.3f}")
print(f"one fit at the defaults, same epsilon 2: test accuracy "
      f"{one_fit.score(X_test, y_test):.3f}")
print(f"noise multiplier of each trial {search.noise_multiplier_:.1f}, against "
      f"{one_fit[-1].noise_multiplier_:.1f} for the one fit; each trial trains on "
      f"about {1 - search.validation_fraction:.0%} of the "
      f"{len(X_train)} rows")

# %%
# Why the search scores lower here
# --------------------------------
# The first two lines above spend the same epsilon. The one fit spends all of it
# on one training run; the search divides it among a random number of
# trials (whose count is itself part of what it must hide) and their noisy
# validation scores. So each trial trains with a noise multiplier more than
# twice the single fit's, on fewer rows, and on 1,347 rows that noise
# dominates: whatever setting wins, its model is much noisier than the
# defaults' model. The defaults need no search because they are chosen from
# public quantities (rows, features, epsilon) to suit this budget. A search
# pays only where the defaults are far from a good setting, or where there
# are many rows to share among the trials. The full report says what the
# search released:

print(search.privacy_report())

# %%
# The search against the defaults, at the same budgets
# ----------------------------------------------------
# A few repetitions per budget (each search draws its own trials and noise).

EPSILONS = [1.0, 2.0, 4.0]
N_REPEATS = 3


def accuracies(make, epsilon):
    return [make(epsilon).fit(X_train, y_train).score(X_test, y_test)
            for _ in range(N_REPEATS)]


def at_defaults(e):
    return clone(model).set_params(dplssgdclassifier__epsilon=e)


def searched_at(e):
    return DPRandomizedSearch(model, search_space, epsilon=e, n_trials=6)


defaults = {epsilon: accuracies(at_defaults, epsilon) for epsilon in EPSILONS}
searched = {epsilon: accuracies(searched_at, epsilon)
            for epsilon in EPSILONS}
for epsilon in EPSILONS:
    print(f"epsilon {epsilon:g}: defaults {np.mean(defaults[epsilon]):.3f}, "
          f"search {np.mean(searched[epsilon]):.3f}")

# %%
# Plot
# ----
# The defaults are chosen from public quantities only and spend the whole
# budget on one fit; the search spreads it over its trials and its
# selection, and each trial trains on part of the rows (the rest scores
# it). On these 1,347 rows the defaults win at every budget. (On MNIST
# digits, the library's benchmark finds the search ahead of the defaults
# only at epsilon 0.5; see the benchmarks page.)

fig, ax = plt.subplots(figsize=(6.4, 4.2))
width = 0.35
positions = np.arange(len(EPSILONS))
for offset, (results, label) in zip([-width / 2, width / 2], [
        (defaults, "one fit at the defaults"),
        (searched, "DPRandomizedSearch, same budget")]):
    means = [np.mean(results[epsilon]) for epsilon in EPSILONS]
    errors = [np.std(results[epsilon]) for epsilon in EPSILONS]
    ax.bar(positions + offset, means, width, yerr=errors, capsize=3, label=label)
ax.set_xticks(positions)
ax.set_xticklabels([f"{epsilon:g}" for epsilon in EPSILONS])
ax.set_xlabel("total epsilon (delta = 1e-5)")
ax.set_ylabel(f"test accuracy (mean of {N_REPEATS})")
ax.set_ylim(0.0, 1.2)
ax.set_title("Digits: tuning is paid for")
ax.legend(loc="upper center", ncol=2, fontsize=8)
fig.tight_layout()
plt.show()
