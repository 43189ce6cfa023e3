"""Tests of the empirical privacy audit (sklearn_dplssgd.audit).

Three layers:

* the statistics (Clopper-Pearson, Gaussian-DP conversion, threshold
  selection) against scipy, dp-accounting and simulated scores;
* the canary statistic against the noise actually drawn by a fit;
* end-to-end audits through the estimators' public ``fit``: the correct
  estimators stay below their claim, and deliberately broken trainers,
  injected by monkeypatching the clipped-gradient kernel that the training
  loop calls, are caught with a wide margin. An audit that cannot catch a
  broken trainer proves nothing, so each broken trainer is paired with the
  correct one on the same settings.

Every audit is seeded; fits use few steps (at a sample rate of 1 the
mechanism's mu, sqrt(T) / z, does not depend on T), so the file runs in
well under a minute.
"""

import contextlib
import dataclasses
import math
import warnings

import numpy as np
import pytest
from dp_accounting import gaussian_mechanism
from sklearn.base import clone
from scipy import stats

from sklearn_dplssgd import DPLSSGDClassifier, DPLSSGDRegressor, PrivacyLeakWarning
from sklearn_dplssgd._mechanisms import _gradient as _mechanism
from sklearn_dplssgd._mechanisms.output_perturbation import _accounting as _output_perturbation
from sklearn_dplssgd._backends import _numpy as _sgd
from sklearn_dplssgd._backends import NumpyTraining, numpy_backend, use_numpy_backend
from sklearn_dplssgd._backends._numpy import COMPILED_RUN_MIN_STEPS
from sklearn_dplssgd.audit import (
    AuditResult,
    audit_epsilon,
    audit_scores,
    canary_score,
    epsilon_lower_bound,
    make_canary_dataset,
    mu_lower_bound,
)
from sklearn_dplssgd.audit._statistics import clopper_pearson_upper, gdp_delta, gdp_epsilon
from sklearn_dplssgd._training._schedules import learning_rate_schedule

from implementation_checks import substituted_gradient_kernel

DELTA = 1e-5
ORIGINAL_KERNEL = _sgd.noisy_clipped_gradient_sum


@pytest.fixture
def substitute_kernel():
    """``substitute_kernel(kernel)``: the test's NumPy fits run ``kernel`` from then on."""
    with contextlib.ExitStack() as stack:
        yield lambda kernel: stack.enter_context(substituted_gradient_kernel(kernel))


# ---------------------------------------------------------------------------
# Broken trainers: wrappers around the real kernel, same signature
# ---------------------------------------------------------------------------


def no_clipping(X, y, rows, params, row_sq_norms, code, threshold, clip_norm,
                fit_intercept, noise, grad, n_threads=1):
    """Per-sample gradients summed without clipping (noise still z * C)."""
    ORIGINAL_KERNEL(X, y, rows, params, row_sq_norms, code, threshold, math.inf,
                    fit_intercept, noise, grad, n_threads)


def batch_clipping(X, y, rows, params, row_sq_norms, code, threshold, clip_norm,
                   fit_intercept, noise, grad, n_threads=1):
    """Clip the batch's gradient sum instead of each sample's (as the authors' code does)."""
    ORIGINAL_KERNEL(X, y, rows, params, row_sq_norms, code, threshold, math.inf,
                    fit_intercept, np.zeros_like(noise), grad, n_threads)
    norm = np.linalg.norm(grad)
    if norm > clip_norm:
        grad *= clip_norm / norm
    grad += noise


class MeanNoiseTraining(NumpyTraining):
    """Noise with standard deviation z C / b on the sum, as if it were for the mean.

    Used with a sample rate of 1, where the expected batch b is all rows.
    """

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        batch = self.plan.batch_size
        self.noise_source = lambda rng, scale, count: _sgd.rounded_gaussian_noise(
            rng, max(1, scale // batch), count)


# ---------------------------------------------------------------------------
# Statistics
# ---------------------------------------------------------------------------


@pytest.mark.parametrize("trials", [1, 7, 100, 2500])
@pytest.mark.parametrize("confidence", [0.9, 0.95, 0.975])
def test_clopper_pearson_matches_scipy_binomtest(trials, confidence):
    counts = np.unique(np.linspace(0, trials, 9).astype(int))
    got = clopper_pearson_upper(counts, trials, confidence)
    expected = [
        stats.binomtest(int(k), trials, alternative="less")
        .proportion_ci(confidence_level=confidence, method="exact").high
        for k in counts
    ]
    np.testing.assert_allclose(got, expected, rtol=1e-9, atol=1e-12)
    assert clopper_pearson_upper(trials, trials, confidence) == 1.0
    # Zero successes: the closed form 1 - (1 - confidence)^(1 / n).
    np.testing.assert_allclose(
        clopper_pearson_upper(0, trials, confidence), 1 - (1 - confidence) ** (1 / trials)
    )


def test_clopper_pearson_rejects_bad_counts():
    with pytest.raises(ValueError):
        clopper_pearson_upper(5, 4)
    with pytest.raises(ValueError):
        clopper_pearson_upper(1, 4, confidence=1.0)


@pytest.mark.parametrize("mu", [0.1, 0.25, 0.5, 1.0, 2.0, 4.0])
@pytest.mark.parametrize("delta", [1e-3, 1e-5, 1e-8])
def test_gdp_epsilon_matches_dp_accounting(mu, delta):
    # mu-GDP is the Gaussian mechanism with noise 1 / mu at sensitivity 1,
    # for which dp-accounting has an exact (epsilon, delta) conversion.
    expected = gaussian_mechanism.get_epsilon_gaussian(1.0 / mu, delta)
    assert gdp_epsilon(mu, delta) == pytest.approx(expected, rel=1e-6, abs=1e-9)
    assert gdp_delta(gdp_epsilon(mu, delta), mu) == pytest.approx(delta, rel=1e-6)


def test_gdp_known_values():
    assert gdp_epsilon(1.0, 1e-5) == pytest.approx(4.3772, abs=1e-4)
    assert gdp_epsilon(0.0, 1e-5) == 0.0
    assert gdp_epsilon(math.inf, 1e-5) == math.inf
    # At epsilon 0, delta is the total variation distance 2 Phi(mu / 2) - 1.
    assert gdp_delta(0.0, 1.0) == pytest.approx(2 * stats.norm.cdf(0.5) - 1)


def test_identical_scores_give_zero_bounds():
    scores = np.random.default_rng(0).standard_normal(1000)
    assert epsilon_lower_bound(scores, scores, DELTA) == 0.0
    assert mu_lower_bound(scores, scores) == 0.0


def test_separated_scores_reach_the_sample_size_limit():
    # Perfect separation: no errors on the held-out half (n runs of each),
    # so both error rates are bounded by 1 - 0.025^(1/n) (each bound at
    # 97.5% for a joint 95%), and nothing better can be certified.
    n_runs = 400
    without, with_ = np.zeros(n_runs), np.ones(n_runs)
    held_out = n_runs - n_runs // 2
    upper = 1 - 0.025 ** (1 / held_out)
    assert epsilon_lower_bound(without, with_, DELTA) == pytest.approx(
        math.log((1 - DELTA - upper) / upper)
    )
    assert mu_lower_bound(without, with_) == pytest.approx(2 * stats.norm.isf(upper))


def test_threshold_is_evaluated_on_held_out_runs():
    # The first halves are perfectly separated, the second halves identical:
    # a bound computed on the runs that chose the threshold would be large.
    rng = np.random.default_rng(1)
    noise = rng.standard_normal(200)
    without = np.concatenate([rng.standard_normal(200), noise])
    with_ = np.concatenate([rng.standard_normal(200) + 100.0, noise])
    assert epsilon_lower_bound(without, with_, DELTA) == 0.0
    assert mu_lower_bound(without, with_) == 0.0


@pytest.mark.parametrize("mu", [0.0, 1.0, 3.0])
def test_bounds_hold_with_the_stated_confidence(mu):
    # Simulated audits of an exactly mu-GDP mechanism (two unit Gaussians mu
    # apart): the bounds may exceed the truth in at most 5% of audits.
    rng = np.random.default_rng(2)
    n_audits, n_runs = 300, 200
    true_epsilon = gdp_epsilon(mu, DELTA) if mu > 0 else 0.0
    eps_misses = mu_misses = 0
    for _ in range(n_audits):
        without = rng.standard_normal(n_runs)
        with_ = rng.standard_normal(n_runs) + mu
        eps_misses += epsilon_lower_bound(without, with_, DELTA) > true_epsilon
        mu_misses += mu_lower_bound(without, with_) > mu
    # 5% of 300 is 15; 27 would be a 3-sigma excess.
    assert eps_misses <= 27 and mu_misses <= 27


def test_audit_scores_reports_rates_of_the_held_out_half():
    rng = np.random.default_rng(3)
    without, with_ = rng.standard_normal(1000), rng.standard_normal(1000) + 2.0
    result = audit_scores(without, with_, delta=DELTA, claimed_epsilon=1.0)
    held_without, held_with = without[500:], with_[500:]
    assert result.direction == "higher"
    assert result.false_positive_rate == pytest.approx(np.mean(held_without >= result.threshold))
    assert result.true_positive_rate == pytest.approx(np.mean(held_with >= result.threshold))
    assert result.epsilon_from_mu == pytest.approx(gdp_epsilon(result.mu_lower_bound, DELTA))
    assert 0 < result.mu_lower_bound < 2.0
    assert result.claim_refuted == (result.epsilon_lower_bound > 1.0)
    with pytest.raises(dataclasses.FrozenInstanceError):
        result.epsilon_lower_bound = 0.0


def test_a_statistic_the_canary_lowers_is_audited_too():
    # DP binds D and D' both ways: negating the scores must not lose the bound.
    rng = np.random.default_rng(4)
    without, with_ = rng.standard_normal(1000), rng.standard_normal(1000) + 2.0
    raised = audit_scores(without, with_, delta=DELTA)
    lowered = audit_scores(-without, -with_, delta=DELTA)
    assert raised.direction == "higher" and lowered.direction == "lower"
    assert lowered.epsilon_lower_bound == pytest.approx(raised.epsilon_lower_bound)
    assert lowered.mu_lower_bound == pytest.approx(raised.mu_lower_bound)
    assert lowered.threshold == pytest.approx(-raised.threshold)
    assert lowered.true_positive_rate == pytest.approx(np.mean(-with_[500:] <= lowered.threshold))


def test_scores_are_validated():
    with pytest.raises(ValueError, match="NaN"):
        epsilon_lower_bound([0.0, np.nan, 1.0], [1.0, 2.0], DELTA)
    with pytest.raises(ValueError, match="at least 2"):
        mu_lower_bound([0.0], [1.0, 2.0])


# ---------------------------------------------------------------------------
# The canary and its statistic
# ---------------------------------------------------------------------------


def test_make_canary_dataset():
    X, y, x_canary, y_canary = make_canary_dataset(
        30, 6, classes=["a", "b", "c"], canary_scale=7.0, canary_feature=2, random_state=0
    )
    assert X.shape == (30, 6) and y.shape == (30,)
    assert np.all(X[:, 2] == 0) and np.all(X[:, [0, 1, 3, 4, 5]] != 0)
    assert x_canary.tolist() == [0, 0, 7.0, 0, 0, 0] and y_canary == "c"
    assert set(y) <= {"a", "b", "c"}
    X, y, _, target = make_canary_dataset(10, 3, task="regression", canary_target=5e5)
    assert y.dtype == np.float64 and target == 5e5


@pytest.mark.parametrize("sigma", [0.0, 3.0])
def test_canary_score_is_the_unsmoothed_noise_sum(sigma):
    # Background zero in feature 0 and no canary: the score must be exactly
    # -sum_t eta_t / b * noise_t[0] (the smoothing undone), while the raw
    # coefficient, smoothed, is not.
    recorded = []

    class RecordingTraining(NumpyTraining):
        def __init__(self, *args, **kwargs):
            super().__init__(*args, **kwargs)
            width = self.params.shape[1]

            def recording(rng, scale, count):
                draws = _sgd.rounded_gaussian_noise(rng, scale, count)
                recorded.extend(draws.reshape(-1, width)[:, 0])
                return draws
            self.noise_source = recording

    X, y, x_canary, y_canary = make_canary_dataset(15, 8, random_state=0)
    with use_numpy_backend(RecordingTraining):
        model = DPLSSGDClassifier(
            epsilon=1.0, sigma=sigma, batch_size=15, max_iter=7, classes=[0, 1], alpha=0.0,
            eta0=0.3, learning_rate="invscaling", average=False, random_state=0,
            reproducible=True).fit(X, y)
    etas = learning_rate_schedule("invscaling", 0.3, model.power_t, model.n_steps_)
    # Feature 0's sum is exactly 0: its release is gamma times the integer noise.
    released = model._noise_added.grid_step * np.asarray(recorded, dtype=np.float64)
    expected = -np.sum(etas * released) / 15
    assert canary_score(model, x_canary, y_canary) == pytest.approx(expected, rel=1e-9)
    if sigma > 0:
        assert model.coef_[0, 0] != pytest.approx(expected, rel=1e-3)
    # The canary's label decides the sign: label 0 pushes the other way.
    assert canary_score(model, x_canary, 0) == pytest.approx(-expected, rel=1e-9)


# ---------------------------------------------------------------------------
# End-to-end audits through the public fit
# ---------------------------------------------------------------------------


def _tiny_classifier(**params):
    # eta0 is small so the weights stay small and the log-loss canary keeps
    # saturating the clip norm (its gradient fades once it is fitted).
    # Add/remove adjacency (the audit declares the public row count): these
    # audits' expected figures are for sensitivity C.
    settings = dict(epsilon=1.0, batch_size=20, max_iter=5, classes=[0, 1], alpha=0.0,
                    sigma=0.0, eta0=0.01, neighboring="add_remove")
    return DPLSSGDClassifier(**{**settings, **params})


def _tiny_regressor(**params):
    settings = dict(loss="huber", epsilon=1.0, batch_size=20, max_iter=5, alpha=0.0,
                    sigma=1.0, eta0=0.5, learning_rate="constant", neighboring="add_remove")
    return DPLSSGDRegressor(**{**settings, **params})


def _poisson_background():
    X, y, _, _ = make_canary_dataset(39, 5, task="regression", random_state=4)
    return X, y


CORRECT_CONFIGURATIONS = {
    "classifier, sigma 0, q = 1": (_tiny_classifier(), None),
    "classifier, sigma 2, q = 1": (_tiny_classifier(sigma=2.0), None),
    "regressor, sigma 1, q = 1, eps 2": (_tiny_regressor(epsilon=2.0), None),
    "regressor, sigma 1, q = 0.25": (_tiny_regressor(batch_size=10), _poisson_background()),
}


@pytest.mark.parametrize("name", list(CORRECT_CONFIGURATIONS))
def test_correct_estimators_stay_below_their_claim(name):
    estimator, background = CORRECT_CONFIGURATIONS[name]
    X, y = background if background is not None else (None, None)
    result = audit_epsilon(estimator, X, y, n_runs=600, random_state=5)
    expected_rate = 0.25 if background is not None else 1.0
    assert result.sample_rate == pytest.approx(expected_rate, rel=0.05)
    assert result.claimed_epsilon <= estimator.epsilon
    assert result.epsilon_lower_bound < 0.7 * result.claimed_epsilon
    assert result.epsilon_from_mu < 0.7 * result.claimed_epsilon
    if result.sample_rate == 1.0:
        # Full batch: the mechanism is exactly sqrt(T)/z-GDP.
        assert result.mu_lower_bound < math.sqrt(result.n_steps) / result.noise_multiplier


@pytest.mark.parametrize("make_estimator", [_tiny_classifier, _tiny_regressor],
                         ids=["classifier", "regressor"])
def test_replace_one_audit_and_noise_calibrated_for_add_remove(monkeypatch, make_estimator):
    # Replace-one neighbours: D plus the mirrored canary against D plus the
    # canary, both one full batch. The mechanism is exactly 2 sqrt(T)/z-GDP
    # (sensitivity 2C). Noise calibrated for add/remove (sensitivity C) under
    # a replace-one claim is the bug this catches.
    # epsilon = 3 (mechanism mu about 0.7) lets 2 x 1000 runs see the doubling.
    estimator = make_estimator(neighboring="replace_one", epsilon=3.0)
    correct = audit_epsilon(estimator, n_runs=1000, random_state=11)
    assert correct.sample_rate == 1.0
    assert correct.mu_lower_bound < 2 * math.sqrt(correct.n_steps) / correct.noise_multiplier
    assert correct.epsilon_from_mu < correct.claimed_epsilon
    assert not correct.claim_refuted
    real_calibrate = _mechanism.calibrate_noise

    def add_remove_noise(*args, **kwargs):
        return real_calibrate(*args, **{**kwargs, "neighboring": "add_remove"})

    monkeypatch.setattr(_mechanism, "calibrate_noise", add_remove_noise)
    broken = audit_epsilon(estimator, n_runs=1000, random_state=11)
    assert broken.claimed_epsilon == pytest.approx(correct.claimed_epsilon, rel=1e-9)
    assert broken.noise_multiplier < 0.6 * correct.noise_multiplier
    assert broken.mu_lower_bound > correct.mu_lower_bound + 0.4
    assert broken.epsilon_from_mu > 1.2 * broken.claimed_epsilon


def test_a_substituted_kernel_runs_every_step_through_a_backend_of_its_own():
    # A fit long enough for the compiled runs of steps (which embed the
    # standard kernel) still calls the substitute at every step: the
    # substitute's backend answers that it supports no compiled runs.
    calls = []

    def counting(*args, **kwargs):
        calls.append(kwargs)
        ORIGINAL_KERNEL(*args, **kwargs)

    X, y, _, _ = make_canary_dataset(20, 3, random_state=0)
    settings = dict(epsilon=1.0, batch_size=20, max_iter=2100, target_bounds=(-1, 1),
                    random_state=0, reproducible=True)
    with substituted_gradient_kernel(counting) as backend:
        assert numpy_backend() is backend and not backend.supports_compiled_runs
        model = DPLSSGDRegressor(**settings).fit(X, y)
    assert numpy_backend() is NumpyTraining
    assert model.n_steps_ >= COMPILED_RUN_MIN_STEPS
    assert len(calls) == model.n_steps_
    assert all("feature_norms" not in kwargs for kwargs in calls)
    # The same fit without the substitute gives the same model (same draws).
    plain = DPLSSGDRegressor(**settings).fit(X, y)
    np.testing.assert_allclose(plain.coef_, model.coef_, rtol=1e-9, atol=1e-12)


def test_use_numpy_backend_takes_numpy_backends_only():
    with pytest.raises(TypeError, match="subclass of NumpyTraining"):
        with use_numpy_backend(object):
            pass
    with pytest.raises(TypeError, match="must be callable"):
        with substituted_gradient_kernel(1.0):
            pass
    with pytest.raises(TypeError, match="dense or a sparse kernel"):
        with substituted_gradient_kernel():
            pass


@pytest.mark.parametrize("trainer", [no_clipping, MeanNoiseTraining],
                         ids=lambda f: f.__name__)
@pytest.mark.parametrize("make_estimator", [_tiny_classifier, _tiny_regressor],
                         ids=["classifier", "regressor"])
def test_broken_trainers_are_caught(substitute_kernel, trainer, make_estimator):
    estimator = make_estimator()
    correct = audit_epsilon(estimator, n_runs=300, random_state=6)
    if isinstance(trainer, type):
        with use_numpy_backend(trainer):
            broken = audit_epsilon(estimator, n_runs=300, random_state=6)
    else:
        substitute_kernel(trainer)
        broken = audit_epsilon(estimator, n_runs=300, random_state=6)
    # The assumption-free bound: 150 held-out runs per side cap it near 3.7.
    assert correct.epsilon_lower_bound < 0.5 < 3.0 < broken.epsilon_lower_bound
    assert broken.claimed_epsilon == correct.claimed_epsilon <= 1.0
    assert broken.claim_refuted and not correct.claim_refuted


def _opposing_background(n_samples=199, n_features=5, huber_threshold=0.01):
    """Rows whose small gradients all oppose the canary's, summing past the clip norm.

    Far-off targets keep every Huber residual at +-huber_threshold, so each
    background row's gradient is 0.01 (unclipped) and their sum, 1.99,
    exceeds the clip norm 1 along feature 0. Clipping that sum instead of each
    sample flips it to -1 when the canary (gradient 100 the other way) joins:
    a change of 2 C, twice the sensitivity the noise is calibrated for. With
    per-sample clipping the change is C plus the background's share of the
    1 / n normalisation, 0.01 C.
    """
    target = 1e6
    X = np.zeros((n_samples, n_features))
    X[:, 0] = 1.0
    x_canary = np.zeros(n_features)
    x_canary[0] = 1e4
    return X, np.full(n_samples, -target), (x_canary, target)


def test_batch_clipping_is_caught(substitute_kernel):
    # Batch clipping at most doubles the sensitivity (2C instead of C), the
    # subtlest of the three bugs. No assumption-free bound can see a factor 2
    # with thousands of runs (it needs tail probabilities near 1e-4), but at a
    # sample rate of 1 the mechanism is exactly sqrt(T)/z-GDP, so a mu bound
    # above sqrt(T)/z refutes the implementation. epsilon = 3 (mu 0.67)
    # leaves the two 2 x 2000-run audits far apart; at epsilon = 2 the
    # broken trainer's epsilon_from_mu still exceeds the claim, by less.
    X, y, canary = _opposing_background()
    estimator = DPLSSGDRegressor(
        loss="huber", loss_threshold=0.01, fit_intercept=False, epsilon=3.0,
        batch_size=200, max_iter=5, alpha=0.0, sigma=0.0, eta0=0.5, learning_rate="constant",
        neighboring="add_remove",
    )
    correct = audit_epsilon(estimator, X, y, canary=canary, n_runs=2000, random_state=7)
    substitute_kernel(batch_clipping)
    broken = audit_epsilon(estimator, X, y, canary=canary, n_runs=2000, random_state=7)
    mechanism_mu = math.sqrt(broken.n_steps) / broken.noise_multiplier
    assert broken.sample_rate == 1.0 and broken.claimed_epsilon <= 3.0
    assert correct.mu_lower_bound < mechanism_mu < 1.3 * mechanism_mu < broken.mu_lower_bound
    # The PLD accountant is tight: the correct mechanism comes close to its claim.
    assert correct.epsilon_from_mu < correct.claimed_epsilon
    assert broken.epsilon_from_mu > 1.2 * broken.claimed_epsilon
    assert not correct.claim_refuted


# ---------------------------------------------------------------------------
# The audit's interface
# ---------------------------------------------------------------------------


# ---------------------------------------------------------------------------
# The other mechanisms: noise schedules and output perturbation
# ---------------------------------------------------------------------------


def test_a_noise_schedule_is_audited_and_its_scale_off_by_two_is_caught(monkeypatch):
    # Full batches, replace-one: the mechanism is exactly Gaussian with
    # mu = 2 sqrt(sum_t 1 / z_t^2). The broken trainer draws every step's
    # noise at half the calibrated schedule (the claim is unchanged).
    # Two blocks, at levels 1 and 0.8 (a final-weights statistic sums the
    # steps' noise with equal weights: it loses little to mild schedules).
    estimator = _tiny_regressor(neighboring="replace_one", epsilon=3.0,
                                noise_schedule=[1.0, 0.8])
    correct = audit_epsilon(estimator, n_runs=1000, random_state=12)
    # A private fit on 20 rows (one full batch), for its event: with sample
    # rate 1 each block is SelfComposedDpEvent(GaussianDpEvent(z_k), T_k).
    # Declared target bounds: the audit measures the steps alone, at the
    # whole epsilon, as such a fit spends it.
    fitted = clone(estimator).set_params(target_bounds=(-1, 1)).fit(
        *make_canary_dataset(20, 5, task="regression", random_state=0)[:2])
    blocks = fitted.dp_event_.events
    blocks = [(block.count, block.event.noise_multiplier) for block in blocks]
    assert [z for _, z in blocks] == pytest.approx(list(fitted.noise_multipliers_))
    mechanism_mu = 2 * math.sqrt(sum(count / z**2 for count, z in blocks))
    assert len(fitted.noise_multipliers_) == 2 and correct.claimed_epsilon <= 3.0
    assert correct.mu_lower_bound < mechanism_mu
    assert correct.epsilon_from_mu < correct.claimed_epsilon and not correct.claim_refuted
    real = _mechanism.GradientPerturbation.step_noise_multipliers
    monkeypatch.setattr(_mechanism.GradientPerturbation, "step_noise_multipliers",
                        lambda self: real(self) / 2.0)
    broken = audit_epsilon(estimator, n_runs=1000, random_state=12)
    assert broken.claimed_epsilon == pytest.approx(correct.claimed_epsilon, rel=1e-9)
    # (Seeds 1 to 3 give correct / broken mu bounds 0.38 / 0.88, 0.34 / 0.98,
    # 0.26 / 0.88, and broken epsilon_from_mu 3.8 to 4.3 against the claim 3.)
    assert broken.mu_lower_bound > correct.mu_lower_bound + 0.4
    assert broken.epsilon_from_mu > broken.claimed_epsilon


def _output_regressor(**params):
    # One full batch of 20 rows without an intercept: the canary, alone on a
    # zero feature with a far target, is the worst case of Proposition 2, so
    # the two releases differ by exactly the sensitivity after enough passes.
    settings = dict(loss="huber", loss_threshold=1.0, mechanism="output", alpha=0.1,
                    fit_intercept=False, batch_size=20, epsilon=3.0)
    return DPLSSGDRegressor(**{**settings, **params})


def test_output_perturbation_is_audited_and_a_halved_sensitivity_is_caught(monkeypatch):
    estimator = _output_regressor()
    correct = audit_epsilon(estimator, n_runs=800, random_state=13)
    assert math.isnan(correct.sample_rate) and "output perturbation" in str(correct)
    # The release is the Gaussian mechanism of sensitivity Delta and std z Delta.
    mechanism_mu = 1.0 / correct.noise_multiplier
    assert correct.claimed_epsilon <= 3.0
    assert 0.6 * mechanism_mu < correct.mu_lower_bound < mechanism_mu
    assert not correct.claim_refuted and correct.epsilon_from_mu < correct.claimed_epsilon
    real = _output_perturbation.sensitivity
    monkeypatch.setattr(_output_perturbation, "sensitivity",
                        lambda *args: real(*args) / 2.0)
    broken = audit_epsilon(estimator, n_runs=800, random_state=13)
    assert broken.claimed_epsilon == pytest.approx(correct.claimed_epsilon, rel=1e-9)
    assert broken.mu_lower_bound > mechanism_mu
    assert broken.epsilon_from_mu > 1.2 * broken.claimed_epsilon


def test_output_perturbation_classifier_stays_below_its_claim():
    estimator = DPLSSGDClassifier(mechanism="output", alpha=0.1, classes=[0, 1], batch_size=20,
                                  epsilon=1.0)
    result = audit_epsilon(estimator, n_runs=400, random_state=14)
    assert result.claimed_epsilon <= 1.0 and not result.claim_refuted
    assert result.epsilon_from_mu < result.claimed_epsilon


def test_audit_is_reproducible_and_uses_distinct_seeds():
    estimator = _tiny_classifier(random_state=123)
    first = audit_epsilon(estimator, n_runs=40, random_state=8)
    second = audit_epsilon(estimator, n_runs=40, random_state=8)
    np.testing.assert_array_equal(first.scores_with, second.scores_with)
    np.testing.assert_array_equal(first.scores_without, second.scores_without)
    # One seed per run: no two fits share their noise.
    assert np.unique(first.scores_without).size == 40
    assert np.unique(first.scores_with).size == 40
    other = audit_epsilon(estimator, n_runs=40, random_state=9)
    assert not np.array_equal(first.scores_with, other.scores_with)


def test_result_fields_and_summary():
    result = audit_epsilon(_tiny_regressor(), n_runs=20, random_state=0)
    assert isinstance(result, AuditResult)
    assert result.n_runs == 20 and result.scores_with.shape == (20,)
    assert result.delta == DELTA and result.confidence == 0.95
    assert result.estimator_name == "DPLSSGDRegressor" and result.n_steps == 5
    assert result.seconds_per_fit > 0
    text = str(result)
    for fragment in ("DPLSSGDRegressor", "epsilon lower bound", "mu lower bound", "claimed"):
        assert fragment in text


def test_classifier_without_classes_is_audited_without_leak_warnings():
    estimator = _tiny_classifier(classes=None)
    X, y, _, _ = make_canary_dataset(19, 4, random_state=0)
    with warnings.catch_warnings():
        warnings.simplefilter("error", PrivacyLeakWarning)
        result = audit_epsilon(estimator, X, y, n_runs=10, random_state=0)
    assert result.n_runs == 10


def test_user_canary_and_multiclass():
    X, y, x_canary, y_canary = make_canary_dataset(29, 5, classes=[0, 1, 2], random_state=0)
    estimator = _tiny_classifier(classes=[0, 1, 2], batch_size=30)
    result = audit_epsilon(estimator, X, y, canary=(x_canary * 20, y_canary),
                           n_runs=30, random_state=0)
    assert result.sample_rate == 1.0 and result.epsilon_lower_bound < 1.0


def test_invalid_inputs():
    with pytest.raises(TypeError, match="DPLSSGD"):
        audit_epsilon(object())
    with pytest.raises(ValueError, match="both X and y"):
        audit_epsilon(_tiny_classifier(), X=np.zeros((3, 2)))
    with pytest.raises(ValueError, match="n_runs"):
        audit_epsilon(_tiny_classifier(), n_runs=1)
    X, y, _, _ = make_canary_dataset(19, 3, random_state=0)
    with pytest.raises(ValueError, match="all zero"):
        audit_epsilon(_tiny_classifier(), X, y, canary=(np.zeros(3), 1), n_runs=4)
    with pytest.raises(ValueError, match="never moves"):
        audit_epsilon(_tiny_regressor(loss="epsilon_insensitive"), X, y,
                      canary=(np.ones(3), 0.0), n_runs=4)
