"""
======================================================
From a raw DataFrame to a private model, one budget
======================================================

A census-like table arrives with numeric and categorical columns and nothing
declared: no ranges, no list of categories. A ``ColumnTransformer`` with
:class:`~sklearn_dplssgd.DPOneHotEncoder` (categories by private partition
selection) and :class:`~sklearn_dplssgd.DPBoundedScaler` (ranges from one noisy
histogram of each feature in bins of powers of 2) feeds
:class:`~sklearn_dplssgd.DPLSSGDClassifier`, and one
:class:`~sklearn_dplssgd.PrivacyLedger` composes the three releases: the
whole pipeline is differentially private at a total epsilon of 1.

For reference, the same pipeline with categories and bounds declared by hand
(what a user would otherwise have to write) is trained at epsilon 1 for the
model alone.
"""

# %%
# A raw table
# -----------
# Synthetic, census-like: a heavy-tailed income, a capital gain that is
# zero for most people, an age, categories of very different frequencies
# (including a few people from rare countries), and a label that depends on
# all of them. Nothing below reads a range or a category from it by hand.

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd
from sklearn.compose import ColumnTransformer
from sklearn.model_selection import train_test_split
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import OneHotEncoder

from sklearn_dplssgd import (
    BoundedScaler,
    DPBoundedScaler,
    DPLSSGDClassifier,
    DPOneHotEncoder,
    PrivacyLedger,
)

rng = np.random.default_rng(0)
n_people = 30_000
education = ["HS-grad", "Some-college", "Bachelors", "Masters", "Doctorate"]
work = ["Private", "Self-emp", "Government", "Without-pay"]
countries = ["United-States", "Mexico", "Philippines", "Germany"] + [
    f"Country-{i}" for i in range(30)]
country_weights = np.r_[[0.9, 0.03, 0.01, 0.01], np.full(30, 0.05 / 30)]
people = pd.DataFrame({
    "age": rng.integers(17, 91, n_people),
    "hours_per_week": np.clip(rng.normal(40, 12, n_people).round(), 1, 99),
    "income": rng.lognormal(10.3, 0.7, n_people).round(2),
    "capital_gain": np.where(rng.random(n_people) < 0.9, 0.0,
                             rng.lognormal(8.5, 1.2, n_people).round()),
    "education": rng.choice(education, n_people, p=[0.4, 0.3, 0.2, 0.08, 0.02]),
    "workclass": rng.choice(work, n_people, p=[0.7, 0.15, 0.14, 0.01]),
    "country": rng.choice(countries, n_people, p=country_weights),
})
score = (0.04 * (people["age"] - 40) + 0.03 * (people["hours_per_week"] - 40)
         + 0.8 * np.log(people["income"] / 30_000)
         + 1.5 * (people["capital_gain"] > 5000)
         + people["education"].map(dict(zip(education, [-0.8, -0.3, 0.5, 1.0, 1.5])))
         + rng.logistic(0, 0.8, n_people))
label = (score > 0.8).astype(int)
X_train, X_test, y_train, y_test = train_test_split(
    people, label, test_size=0.25, random_state=0)
numeric = ["age", "hours_per_week", "income", "capital_gain"]
categorical = ["education", "workclass", "country"]
print(people.head())

# %%
# The private pipeline at a total epsilon of 1
# --------------------------------------------
# Each transformer gets epsilon 0.1 (the defaults) and a delta of 1e-6; the
# model gets what remains of the ledger's budget (``epsilon="remaining"``):
# its noise is set, before it reads any row, so that the ledger's total of
# all three releases, composed under PLD, is at most 1. Column order carries
# no meaning in a table, so smoothing is off (``sigma=0``).

ledger = PrivacyLedger(max_epsilon=1.0, delta=1e-5)
private = make_pipeline(
    ColumnTransformer([
        ("categories", DPOneHotEncoder(epsilon=0.1, delta=1e-6, ledger=ledger),
         categorical),
        ("numbers", DPBoundedScaler(epsilon=0.1, ledger=ledger), numeric),
    ]),
    DPLSSGDClassifier(epsilon="remaining", sigma=0.0, classes=[0, 1], ledger=ledger),
)
private.fit(X_train, y_train)
private_accuracy = private.score(X_test, y_test)
for record in ledger.records:
    print(record["estimator"])
print(f"total epsilon {ledger.epsilon():.3f} at delta {ledger.delta:g}; "
      f"the model's own share {private[-1].epsilon_:.3f}")
print(f"test accuracy {private_accuracy:.3f}")

# %%
# What the transformers released: each column's categories (rare countries
# are not among them; they are encoded as zeros) and each feature's range.

encoder = private[0].named_transformers_["categories"]
scaler = private[0].named_transformers_["numbers"]
for column, categories in zip(categorical, encoder.categories_):
    print(f"{column}: {len(categories)} categories released")
print(pd.DataFrame({"released lower": scaler.lower_, "released upper": scaler.upper_,
                    "data 1%": X_train[numeric].quantile(0.01).to_numpy(),
                    "data 99%": X_train[numeric].quantile(0.99).to_numpy()},
                   index=numeric).round(1))

# %%
# The same pipeline, declared by hand
# -----------------------------------
# What a user would otherwise write: every category and a bound for every
# feature (here taken from the generating code, which stands for public
# documentation), and the whole budget for the model.

declared = make_pipeline(
    ColumnTransformer([
        ("categories", OneHotEncoder(categories=[education, work, countries],
                                     handle_unknown="ignore"), categorical),
        ("numbers", BoundedScaler(lower=[17, 1, 0, 0],
                                  upper=[90, 99, 200_000, 100_000]), numeric),
    ]),
    DPLSSGDClassifier(epsilon=1.0, delta=1e-5, sigma=0.0, classes=[0, 1]),
)
declared_accuracy = declared.fit(X_train, y_train).score(X_test, y_test)
print(f"declared by hand: test accuracy {declared_accuracy:.3f}")

fig, ax = plt.subplots(figsize=(5, 3))
ax.bar(["private preprocessing\n(total epsilon 1)",
        "declared by hand\n(model epsilon 1)"],
       [private_accuracy, declared_accuracy], color=["tab:blue", "tab:gray"])
ax.set_ylim(0.5, 1.0)
ax.set_ylabel("test accuracy")
fig.tight_layout()
plt.show()
