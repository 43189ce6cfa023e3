"""``privacy_report()``: what a fitted private object's guarantee means, in plain words.

The protected unit, the epsilon and delta and their meaning, what is treated as public,
the noise, and what is not covered; built from fitted attributes only, never a row.
"""

import math

import numpy as np

import dp_accounting

from ._events import REMAINING_BUDGET, TARGET_RANGE_SHARE, split_epsilon_delta_events

__all__ = ["estimator_report", "ledger_report", "search_report", "transformer_report"]

# What no guarantee of this library covers, whatever was fitted; {channels}
# is what floating point can reach.
_NOT_COVERED_TEMPLATE = (
    "Not covered: preprocessing fitted on the training rows (a StandardScaler "
    "or OneHotEncoder fitted on them publishes their statistics or categories; "
    "use bounds and categories known in advance, or the library's private "
    "transformers); searches, cross-validation or meta-estimators outside the "
    "library (every fit on the rows spends its own budget: count them in a "
    "PrivacyLedger); {channels}; and anything released about the rows other "
    "than this object.")
_NOT_COVERED = _NOT_COVERED_TEMPLATE.format(channels=(
    "side channels such as timing; noise sampled in floating point, whose "
    "traces are in the released values themselves (the guarantee is proved for "
    "real-valued noise)"))
# An exact-noise release's integers have the law the proof describes: what
# floating point can still reach is named instead.
_NOT_COVERED_EXACT = _NOT_COVERED_TEMPLATE.format(channels=(
    "side channels such as timing and floating-point behaviour outside the released "
    "integers (their noise is sampled exactly; the batches' sampling rate is applied in "
    "floating point)"))
# A release whose noise was sampled in floating point: what that leaves open.
_FLOAT_NOISE = (
    "Floating-point noise: this release's noise was sampled and added in floating point, "
    "and the released coefficients carry the traces of that arithmetic. This is a leak "
    "through the released values, not only a side channel, and the guarantee above does "
    "not cover it: the library's own audit of it (sklearn_dplssgd.audit.check_float_channel) "
    "measures an epsilon lower bound above the claimed epsilon for such a release. The "
    "gradient mechanism (integers with exactly sampled noise) closes it.")

_UNITS = {
    "replace_one": ("any one training row (its features and its label) replaced by "
                    "any other row; the number of rows is treated as public"),
    "add_remove": ("any one training row (its features and its label) added or "
                   "removed; the number of rows is protected too, with the "
                   "declared public_n_samples used in its place"),
}


def _meaning(epsilon, delta):
    """One sentence on what (epsilon, delta) means."""
    return (
        f"In words: anything someone concludes from the release is at most "
        f"{math.exp(epsilon):.3g} times (e^epsilon) more likely, or less likely, than it "
        "would have been had that one row been different, except with a probability of "
        f"at most {delta:.2g} (delta). Smaller epsilon means stronger protection; an "
        "epsilon of about 1 is strong, above 10 is weak.")


def _fitted_without_privacy(fitted):
    """Why a fitted object's epsilon is infinite, in words."""
    params = fitted.get_params(deep=False)
    if params.get("reproducible"):
        return ("it was fitted with reproducible=True, whose noise anyone holding the model "
                "can regenerate from its random_state")
    if params.get("epsilon") == math.inf:
        return "it was fitted without noise (epsilon=inf)"
    return ("the accountant certifies no finite epsilon at this delta for what it released "
            "(for example, the deltas of its parts add up to the target delta or more)")


def _guarantee_lines(name, epsilon, delta, neighboring, reason):
    """The guarantee in words; ``reason`` says why when epsilon or delta is infinite."""
    if not (math.isfinite(epsilon) and math.isfinite(delta)):
        return [
            f"Guarantee: NONE. {name} reports an infinite epsilon or delta: {reason}. "
            "Do not publish it as private."]
    return [
        f"Protected: {_UNITS.get(neighboring, neighboring)}.",
        f"Guarantee: ({epsilon:.4g}, {delta:.2g})-differential privacy "
        f"(epsilon = {epsilon:.4g}, delta = {delta:.2g}).",
        _meaning(epsilon, delta),
    ]


def _public_lines(estimator):
    """What the estimator's guarantee treats as public."""
    public = [f"the number of features ({estimator.n_features_in_})"]
    if getattr(estimator, "neighboring_", "replace_one") == "replace_one":
        public.insert(0, "the number of training rows")
    else:
        public.insert(0, f"the declared row count (public_n_samples={estimator.public_n_samples})")
    lines = []
    if hasattr(estimator, "classes_"):
        if estimator.get_params().get("classes") is not None:
            public.append(f"the declared classes ({len(estimator.classes_)} labels)")
        else:
            lines.append(
                "WARNING: the label set was read from the training labels (classes=None), "
                "so which labels occur is NOT protected; declare classes=... to protect it.")
    note = feature_bounds_note(estimator)
    if note is not None:
        public.append(note)
    bounds = estimator.get_params().get("target_bounds")
    if bounds is not None:
        public.append(f"the declared target bounds {tuple(bounds)}")
    public.append(f"the clip norm ({estimator.clip_norm:g}) and every other hyperparameter")
    if estimator.get_params().get("max_sample_weight", 1.0) != 1.0:
        public.append(f"the largest sample weight ({estimator.max_sample_weight:g})")
    return ["Treated as public: " + "; ".join(public) + "."] + lines


def _target_range_lines(estimator):
    """The regressor's target range learned under privacy: what was released and its cost."""
    noise = getattr(estimator, "target_range_noise_multiplier_", None)
    if noise is None:
        return []
    low, high = estimator.target_bounds_
    if noise == 0:
        return [f"Target range: [{low:g}, {high:g}], read from the targets without noise "
                "(epsilon=inf)."]
    return [
        f"Target range: no target_bounds were declared, so the first release learned the "
        f"target's range [{low:g}, {high:g}] from one Gaussian release of the targets' "
        f"counts in bins of powers of 2 (noise multiplier {noise:.3g}, calibrated alone to "
        f"{TARGET_RANGE_SHARE:g} of epsilon: GaussianDpEvent, the first part of dp_event_). "
        "The guarantee above composes it with the training steps. Targets were clipped "
        "to that range and mapped to [-1, 1]; predictions are mapped back (post-processing)."]


def _lattice_words(noise):
    """How the steps are released on the lattice and what they add, from the NoiseAdded."""
    return (
        f"so that one row moves a step's sum by at most {noise.bound:.4g}. Each step's sum, "
        f"computed in floating point, is rounded to the nearest point of the lattice of step "
        f"gamma = {noise.grid_step:.4g}, and the integers get noise round(s G) (G standard "
        f"normal, s = {int(noise.grid_scale)} lattice units: standard deviation "
        f"{_span(noise.stds)} on the sum's scale), sampled exactly with integer arithmetic; "
        "the model is computed from those integers times gamma. One row moves the rounded "
        f"sum by at most {noise.lattice_sensitivity:.10g} lattice units (the bound over gamma, "
        "widened by the rounding and by a rigorous bound on the sum's floating-point error), "
        f"so the noise is {noise.grid_scale / noise.lattice_sensitivity:.4g} times that: the "
        "noise multiplier the guarantee is computed with, or more.")


def _span(values):
    """One value, or a schedule's largest down to its smallest."""
    values = np.asarray(values, dtype=float)
    return (f"{values[0]:.3g}" if values.size == 1 else
            f"{values.max():.3g} down to {values.min():.3g}")


def _output_lattice_words(estimator, noise):
    """Output perturbation's release on its lattice, from its NoiseAdded."""
    return (
        "Noise: one noise-free training run, then its weights rounded onto the lattice of "
        f"step gamma = {noise.grid_step:.4g} (2**{-noise.grid_bits}) and released as gamma "
        f"times (those integers plus rounded Gaussian noise round(s G): G standard normal, "
        f"s = {int(noise.grid_scale)} lattice units, sampled exactly with integer "
        f"arithmetic), on every weight: standard deviation {noise.stds[0]:.3g} before "
        f"rounding (noise multiplier {estimator.noise_multiplier_:.3g} times the rounded "
        f"weights' sensitivity {noise.bound:.3g}, which includes the roundings and a bound "
        "on the floating-point error of the training run; output perturbation).")


def _noise_lines(estimator):
    noise = getattr(estimator, "_noise_added", None)
    if estimator.output_sensitivity_ is not None and noise is not None:
        return [_output_lattice_words(estimator, noise)]
    if estimator.output_sensitivity_ is not None:
        return [
            "Noise: one noise-free training run, then Gaussian noise of standard "
            f"deviation {estimator.noise_multiplier_ * estimator.output_sensitivity_:.3g} "
            f"added once to every weight (noise multiplier {estimator.noise_multiplier_:.3g} "
            f"times the weights' sensitivity {estimator.output_sensitivity_:.3g}; output "
            "perturbation)."]
    smoothing = (f" The noisy gradient is smoothed (sigma {estimator.sigma_:g}), which "
                 "costs no privacy." if estimator.sigma_ > 0 else "")
    # Why, from public inputs only (width, format, column names, the declaration).
    smoothing += f" Smoothing: {estimator.sigma_reason_}."
    steps = (f"Noise: {estimator.n_steps_} training steps, each on a random batch (every row "
             f"taken with probability {estimator.sample_rate_:.3g}); ")
    clip = f"each row's gradient is clipped to norm {noise.clip_norm:g}"
    if noise.max_sample_weight != 1.0:
        clip += f" and multiplied by its sample weight (at most {noise.max_sample_weight:g})"
    words = ("and no noise is added (epsilon=inf)." if not any(noise.stds)
             else _lattice_words(noise))
    return [f"{steps}{clip}, {words}{smoothing}"]


_LEDGER_CHARGED = ("Ledger: this fit was charged to the PrivacyLedger given to it; "
                   "ledger.privacy_report() states the total spent on the data.")

# The trust a fit on a Dask cluster placed in the network its secrets crossed
# (see _backends.check_cluster_network), keyed by what the fit recorded.
_CLUSTER_NETWORK = {
    "protected": (
        "Cluster: trained on a Dask cluster reached locally or over TLS; the guarantee "
        "assumes every machine of the cluster is trusted (they held the rows, the "
        "noise-free gradient sums and the noise's generator)."),
    "declared": (
        "Cluster: trained on a Dask cluster reached in plaintext over a network declared "
        "trusted (sklearn_dplssgd.trusted_network), which the noise-free gradient sums "
        "and the noise's generator crossed: the guarantee holds only if no one else "
        "could read that traffic."),
}


def estimator_report(estimator, releases_integers=False):
    """The report of a fitted ``DPLSSGDClassifier`` or ``DPLSSGDRegressor``.

    ``releases_integers``: the mechanism released integers with exactly
    sampled noise (the exact modes), which the last paragraph says.
    """
    name = type(estimator).__name__
    lines = [f"Privacy report for {name}"]
    lines += _guarantee_lines(name, estimator.epsilon_, estimator.delta_,
                              estimator.neighboring_, _fitted_without_privacy(estimator))
    n_releases = len(estimator.dp_events_)
    if n_releases > 1:
        lines.append(
            f"Series: this model is the last of {n_releases} releases (partial_fit or "
            "warm_start calls) on the rows; the guarantee above covers all of them "
            "together.")
    lines += _public_lines(estimator)
    lines += _target_range_lines(estimator)
    lines += _noise_lines(estimator)
    ledger = getattr(estimator, "ledger", None)
    if ledger is not None and estimator.get_params().get("epsilon") == REMAINING_BUDGET:
        lines.append(
            "Budget: epsilon='remaining': this fit's noise was set, before any row was "
            "read, to the least for which the PrivacyLedger's composed total after it "
            f"stays within the ledger's max_epsilon ({ledger.max_epsilon:g} at delta "
            f"{ledger.delta:g}): the fit spent what remained of that budget, and the "
            "guarantee above is this fit's own share. ledger.privacy_report() states the "
            "total spent on the data.")
    elif ledger is not None:
        lines.append(_LEDGER_CHARGED)
    network = getattr(estimator, "_cluster_network", None)
    if network is not None:
        lines.append(_CLUSTER_NETWORK[network])
    lines.append(_NOT_COVERED_EXACT if releases_integers else _NOT_COVERED)
    if not releases_integers:
        lines.append(_FLOAT_NOISE)
    return "\n\n".join(lines)


def search_report(search, prefitted_private_steps=()):
    """The report of a fitted ``DPRandomizedSearch``.

    ``prefitted_private_steps`` names the private steps of the best model
    fitted (and frozen) before the search: their releases are their own.
    """
    name = type(search).__name__
    lines = [f"Privacy report for {name}"]
    lines += _guarantee_lines(name, search.epsilon_, search.delta_, search.neighboring_,
                              _fitted_without_privacy(search))
    # The number of trials is not stated: the guarantee relies on it staying
    # secret (it is dropped from pickles), and this text may be published.
    lines.append(
        "What was released: the best of a random number of trials (drawn in secret, as "
        "the accounting requires: do not publish n_trials_ or trials_), each a private "
        "fit and a noisy validation score; only the best trial's model and score are "
        "released. The guarantee covers the whole search, best_estimator_ included.")
    if prefitted_private_steps:
        lines.append(
            "Fitted before the search, not by it: the private step(s) "
            f"{', '.join(map(repr, prefitted_private_steps))} of best_estimator_, released "
            "under their own guarantee (their epsilon_), not covered by this one. The "
            "total spent on the rows composes both (a PrivacyLedger given to all counts it).")
    lines += _public_lines(search.best_estimator_ if not hasattr(
        search.best_estimator_, "steps") else search.best_estimator_.steps[-1][1])
    # Its trials and their scores release integers with exactly sampled noise.
    lines.append(_NOT_COVERED_EXACT)
    return "\n\n".join(lines)


def transformer_report(transformer, released):
    """The report of a fitted private transformer (``DPBoundedScaler``, ``DPOneHotEncoder``).

    ``released`` says, in one sentence, what the fit published.
    """
    name = type(transformer).__name__
    lines = [f"Privacy report for {name}"]
    lines += _guarantee_lines(name, transformer.epsilon_, transformer.delta_,
                              transformer.neighboring, _fitted_without_privacy(transformer))
    lines.append("Released: " + released)
    declared = getattr(transformer, "public_n_samples", None)
    if transformer.neighboring == "replace_one":
        public = "the number of training rows"
    elif declared is not None:
        public = f"the declared row count (public_n_samples={declared})"
    else:
        public = "nothing about the number of rows (no released value depends on it)"
    lines.append(f"Treated as public: {public}; the number of columns "
                 f"({transformer.n_features_in_}); every hyperparameter and declared bound.")
    if getattr(transformer, "ledger", None) is not None:
        lines.append(_LEDGER_CHARGED)
    lines.append(_NOT_COVERED)
    return "\n\n".join(lines)


def _ledger_without_privacy(ledger, records):
    """Why a ledger's total epsilon is infinite, in words: its records say."""
    public = sorted({record["estimator"] for record in records
                     if isinstance(record["dp_event"], dp_accounting.NonPrivateDpEvent)})
    if public:
        return (f"a release charged to it was not private ({', '.join(public)}: fitted "
                "without noise, epsilon=inf, or with reproducible=True)")
    _, _, spent_delta = split_epsilon_delta_events(ledger.dp_event)
    if spent_delta >= ledger.delta:
        return (f"the deltas of its releases add up to {spent_delta:.3g}, at or past the "
                f"ledger's delta={ledger.delta:.3g}, so no epsilon is left to certify at "
                "that delta. Use a ledger with a larger delta (the sum of the fits' deltas "
                "must stay below it), fewer such fits, or fits with smaller deltas")
    return ("the composition of its releases has no finite epsilon that the accountant "
            "can certify at the ledger's delta (too many or too weakly protected "
            "releases)")


def ledger_report(ledger):
    """The report of a ``PrivacyLedger``."""
    records = ledger.records
    lines = ["Privacy report for PrivacyLedger"]
    if not records:
        lines.append("Nothing has been charged to this ledger yet: no budget spent.")
        return "\n\n".join(lines)
    epsilon = ledger.epsilon()
    names = sorted({record["estimator"] for record in records})
    plural = "" if len(records) == 1 else "s"
    lines.append(
        f"Spent: {len(records)} release{plural} on the same data ({', '.join(names)}), "
        "composed as if each saw every row (a valid upper bound).")
    reason = None if math.isfinite(epsilon) else _ledger_without_privacy(ledger, records)
    lines += _guarantee_lines("The ledger", epsilon, ledger.delta, ledger.neighboring, reason)
    if ledger.max_epsilon is not None:
        lines.append(f"Cap: a release that would take the total above epsilon "
                     f"{ledger.max_epsilon:g} is refused before it reads any row.")
    lines.append(
        "Covered: the fits, searches and transformers that were given this ledger, in this "
        "process, its clones and workers sharing its records file; not fits made without "
        "it or on machines that do not share the file.")
    lines.append(_NOT_COVERED)
    return "\n\n".join(lines)


def feature_bounds_note(estimator):
    """What the privacy report says about the declared bounds, or None."""
    if estimator.get_params().get("feature_bounds") is None:
        return None
    lower, upper = estimator.feature_bounds
    if np.ndim(lower) == 0 and np.ndim(upper) == 0:
        return f"the declared feature bounds ({float(lower):g}, {float(upper):g})"
    return "the declared feature bounds (feature_bounds, per feature)"
