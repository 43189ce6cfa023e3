"""The ``"auto"`` hyperparameters: resolved from public quantities only.

``delta``, ``batch_size``, ``max_iter``, ``eta0`` and ``average`` accept
``"auto"`` (their default). The ``resolve_*`` functions below turn them into
numbers at the start of ``fit``, before any row's value is read, from
quantities that the guarantee treats as public: the accounted row count (the
actual ``n`` under replace-one adjacency, ``public_n_samples`` under
add/remove), the number of features, the target ``epsilon``, the clip norm,
the learning-rate schedule and the noise multiplier calibrated from those.
Nothing here sees a feature, a label or a target, so two data sets with the
same shape get the same settings, and the settings release nothing about the
rows.

The rule, and why
-----------------
Steps and batches. For the Poisson-subsampled Gaussian mechanism at small
sample rates the privacy of ``T`` steps depends, to first order, on
``q sqrt(T) / z`` only; the noise left in the weights after a run of total
step length ``eta T`` is then the same whatever the split into batch size
and number of steps (``benchmarks/results/defaults.md`` measures this on
MNIST: batch sizes 256 to 4000 and 30 to 100 epochs agree within the spread
of the seeds once ``eta T`` is fixed). What the split changes is the work
and how well the optimiser converges, so the defaults aim at about
``_TARGET_STEPS`` steps (enough for a linear model to converge) with the
sample rate ``q = b / n`` held at ``1 / 32`` or more: small tables
(``n <= 256``) train on full batches, mid-sized ones on batches of 256, and
large ones on ``n / 32`` rows (so ``z`` does not fall into the range where
subsampling amplifies privacy badly). ``max_iter`` is then the number of
epochs that gives at least ``_TARGET_STEPS`` steps. Small tables keep their
full batches: on the held-out map's splits, 16-row batches seemed to gain
2 to 5 points on the three tables of at most 150 rows, but on fresh splits
and draws (200 fits a side, ``benchmarks/results/regime_small.md``) they
are within about a standard error of full batches, as the accounting
predicts (the same noise on the weights over the same steps).

Step size. Each coordinate of the weights accumulates the Gaussian noise of
every step: ``eta_t z C / b`` per step, so a standard deviation of
``W = eta0 (z C / b) sqrt(sum_t s_t^2)`` after the run, where ``s_t`` is the
schedule's shape (``eta_t = eta0 s_t``). The signal moves the weights by at
most ``eta0 C sum_t s_t``, so ``W`` and the distance the weights can travel
grow together: for a given calibration their ratio is fixed, and ``eta0``
only chooses the scale. ``eta0`` is chosen so that ``W`` equals
:func:`weight_noise_target`, ``1.75 sqrt(max_step / d)`` within
``[max_step / 16, 2]`` (``3.5 / sqrt(d)`` within ``[0.25, 2]`` for the
classifier), and never above the noise-free step ``max_step / C`` (reached at
``epsilon=inf``): 4 for the classifiers, whose weights grow large on
separable classes, 1 for the regressor, whose targets are scaled to
``[-1, 1]`` (by ``target_bounds``, or a range learned privately) so that
its weights are of order one (a
step of 4 there oscillates: R2 0.18 against 0.41 on diabetes without
noise). Why ``1 / sqrt(d)``: the noise the weights carry reaches a
prediction as ``W . x``, of standard deviation ``W ||x||``, and for features
scaled to ``[-1, 1]`` (or ``[0, 1]``) by public bounds ``||x|| <= sqrt(d)``;
the target keeps the noise on such a row's prediction at the same level for
every width (3.5 logits for the classifier, 1.75 for the regressor's scaled
targets), where a fixed ``W`` (0.5, and 1 below 10 features: the earlier
rule) is too small for tables of 10 to 30 features, which then
stop short of a fitted model, and too large for MNIST's 784. The exponent
1/2 and the constant were chosen on the map of ``benchmarks/bench_regime.py``
(136 cells: 17 tables, features in ``[-1, 1]`` and ``[0, 1]``, replace-one
epsilon 0.25, 1 and 8, add/remove epsilon 1; ``benchmarks/results/regime.md``)
under the constraint of losing at most one point against the rule it
replaces on ``benchmarks/bench_defaults.py``'s tables (100 seeds): on the
map's validation scores, 1/2 fitted better than 1/4 or 3/4, and a larger
constant (5 logits) fitted the map slightly better but cost wine (13
features, 3 classes) 1.7 points. The target reads d and the noise-free step
only, never a value of the rows, so it cannot tell features in ``[0, 1]``
(whose models need larger weights: an intercept to carry the mean) from
features in ``[-1, 1]``, nor two classes from ten; the rule is the
compromise between them. Judged on tables and splits it was not fitted on
(``benchmarks/bench_regime_heldout.py``: the map widened with UCI Adult
and a synthetic ``[0, 1]`` table, 16 fits a cell on held-out splits,
replace-one epsilon 1; ``benchmarks/results/regime_heldout.md``), 38 of 39
cells are within 2 points of the validation-tuned setting (the two misses,
iris and wine with features in ``[0, 1]``, within about one standard error
of it: test parts of 38 and 45 rows); the constant fitted on one half of the
tables was 1.75 or 3, and 3 did worse than 1.75 on the other half (0.93
against 0.63 point below tuned on average). At replace-one epsilon 8
(``benchmarks/results/regime_heldout_eps8.md``) 30 of 31 cells are within 2
points, and 3 gained nothing on the other half either.

The regressor's target was measured on fits smoothed with sigma 1, which
leaves each weight ``sqrt(beta)`` of the step's noise (0.52 from 10
features; :func:`smoothed_noise_share`). Since ``sigma="auto"`` no longer
smooths unordered tables, an unsmoothed regressor's estimate of the
accumulated noise is scaled by ``sqrt(beta(sigma_) / beta(1))`` (1.93 at
sigma 0), so the noise that reaches its weights stays where it was
measured: on diabetes at replace-one epsilon 1 (16 held-out splits,
``benchmarks/results/regime_layout.md``) R2 0.298 against 0.288 for the
smoothed fit (0.17 unsmoothed with the unscaled step), 0.441 against 0.436
at epsilon 3. The classifier's rule was measured per width level and is not
adjusted (its unsmoothed cells of 10 to 99 columns lost at most 0.8 point
against sigma 0.25 and gained up to 4.5 on the same page).

Averaging. The returned model is the mean of the iterates of the last
share of the steps (tail averaging), for ``average="auto"`` and
``average=True`` alike; as a function of the noisy iterates it is
post-processing, with no privacy cost. The share is a half for the
regressor and :func:`averaging_tail` for the classifiers: ``W / m`` (the
weight-noise target over the noise-free step) within ``[1/16, 1/2]``, so
0.44 at 4 features, 0.24 at 13, 0.16 at 30, 0.11 at 64 and 1/16 from 196.
Why a tail, and why it shrinks with the width: while the weights still
drift, the iterates are a random walk around a moving point; an average
over the last fraction f of the steps lags the drift by ``f / 2`` of it
and keeps ``1 - 2 f / 3`` of the noise's variance, so a long window costs
more than it saves; once the weights have settled around the optimum (a
curved loss, as the regressor's squared loss) it averages the fluctuations
away. ``eta0`` scales with ``W``, so a wide table takes short steps and its
weights still drift at the end of the run (breast cancer, 30 features, and
digits, 64, do best with the last iterate or a sixteenth), while a narrow
one travels far, settles, and gains from a long window (iris, 4 features,
and the 16-feature synthetic table of three classes, from a quarter or a
half). ``benchmarks/bench_averaging.py`` (the same noisy runs returned as
the last iterate or the mean of each tail; 8 tables, both scalings,
replace-one epsilon 0.25 to 8, 20 seeds; ``benchmarks/results/averaging.md``)
measures it: over its 80 cells the rule gains 0.34 point on average
against the last iterate (worst cell -3.1: heavy tails, 30 features, with
features in ``[0, 1]`` at epsilon 2), the last half (the rule before)
-0.25 (worst -6.6), the last eighth for every width +0.14; on breast cancer at replace-one
epsilon 0.5 the half lost 2.0 points to the last iterate
(0.878 against 0.898), the rule 0.2 (0.896; 1.1 with features in
``[0, 1]``: 0.867 against 0.878). The rule does not read the number
of classes, which matters too: on the 40 binary cells every fixed share
loses a little to the last iterate and the rule ties with it (-0.02 point),
on the 40 cells of three classes or more the rule gains 0.71. Averaging from
the first step (what ``True`` once meant) lagged furthest: 0.926
against 0.951 for the last iterate on breast cancer at replace-one
epsilon 2 (10 seeds). For the regressor the half is measured on diabetes
(60 seeds: R2 0.190 against 0.166 for the quarter and 0.125 for the last
iterate at epsilon 0.5).

Release series. A ``partial_fit`` call runs one epoch over its own rows, so
a full batch would make it one step. A call's ``batch_size="auto"`` is
``ceil(n_call / 64)`` rows, at least 16, so that a call takes up to 64
steps; at a fixed epsilon the split into batches and steps leaves the
privacy of the call about unchanged wherever ``z`` stays above about 1 (the
accounting depends on ``q sqrt(T) / z``). The series' ``eta0`` is fixed by
its first call, and the noise it bounds is that of the whole series: the
first call's ``eta0`` makes the noise of ``ASSUMED_CALLS`` (4) calls like it
equal to the target above, so a series of k calls ends with
``sqrt(k / 4)`` times the target. Over k disjoint blocks each block's noise
protects only that block's rows, so a series has about ``1 / sqrt(k)`` of
the signal-to-noise ratio of ``fit`` on all rows at the same epsilon
(``benchmarks/results/streaming.md``).

Smoothing. ``sigma="auto"`` smooths only columns that are ordered, and
decides that from public information only (``_feature_layout``): the
declaration ``sigma="ordered"``, the input's format, its width and the
column names a DataFrame or ColumnTransformer passes. Sparse input and
named columns that are not one numbered sequence (a table's names, one-hot
names such as ``x0_a`` or ``cat__sex_Male``) are not smoothed; an image's
width (``s * s`` or ``3 s * s`` columns, ``s >= 16``, not a power of two:
MNIST's 784, 32 x 32 colour images) is; any other dense table is not (a
square width is weak evidence: ``_feature_layout`` says why the rule is
narrow). The reason is in ``privacy_report()``
(:func:`explain_sigma`). Laplacian smoothing averages each coordinate of
the noisy gradient with its neighbours along the feature axis: it pays
where neighbouring features are related (pixels, spectra, time series) and
biases the step where the columns have no order. The width used to mean
"ordered" (dense input from 10 columns on was smoothed), and a dense
one-hot table paid for it: on 2,500 rows of UCI Adult (100 one-hot columns
and 6 numeric ones, ``benchmarks/results/regime_layout.md``) sigma 1 gave the
majority class. Ordered columns are smoothed by the estimator's own levels,
by width: the classifier not below 10 features, lightly (sigma 0.25) from
10 and fully (sigma 1) from 100; the regressor always (sigma 1). Chosen by
measurement with the other defaults (``benchmarks/results/width_rules.md``;
100 seeds, replace-one epsilon 2 / add/remove epsilon 1): for the
classifier, sigma 0.25 against 0 gave 0.903 / 0.907 against 0.896 / 0.900
on digits (d = 64, an 8 x 8 image: smoothed when declared ordered, as its
width is a table's too); on MNIST (784) sigma 1 gave 88.8 against
87.6 percent at epsilon 1 (``benchmarks/results/utility.md``). Unordered
tables measured about even without the light smoothing: on the 14 cells
of ``bench_regime.py``'s map whose ``sigma_`` changed (10 to 99 columns,
replace-one epsilon 1, 16 fits on held-out splits and seeds,
``benchmarks/results/regime_layout.md``) sigma 0 lost at most 0.8 point
against 0.25 and gained up to 4.5 (features in ``[0, 1]``); the regressor
keeps its measured noise through its step (see "Step size").

delta. ``min(1e-5, 1 / (10 n))``: far below ``1 / n`` for any ``n`` (a
mechanism that publishes one random row with probability ``delta`` meets a
``(0, delta)`` guarantee), and the usual ``1e-5`` wherever that is smaller.
"""

import math

import numpy as np

from ._feature_layout import feature_layout, ORDERED
from ._schedules import learning_rate_schedule
from ._smoothing import smoothing_beta

__all__ = [
    "ASSUMED_CALLS",
    "AUTO",
    "ORDERED",
    "averaging_tail",
    "nominal_batch_size",
    "resolve_average_start",
    "resolve_delta",
    "resolve_eta0",
    "resolve_schedule",
    "resolve_sigma",
    "explain_sigma",
    "smoothed_noise_share",
    "weight_noise_target",
]

AUTO = "auto"

# See the module docstring; the values are those measured in
# benchmarks/results/defaults.md.
_TARGET_STEPS = 1000
_FULL_BATCH_ROWS = 256
_MIN_SAMPLE_RATE = 1.0 / 32.0
# The accumulated noise allowed on each weight: _PREDICTION_NOISE sqrt(m / d)
# for a noise-free step m (see "Step size"), at least _MIN_WEIGHT_NOISE m and
# at most _MAX_WEIGHT_NOISE.
_PREDICTION_NOISE = 1.75
_MIN_WEIGHT_NOISE = 1.0 / 16.0
_MAX_WEIGHT_NOISE = 2.0
# A release series (partial_fit): the calls assumed when bounding the noise
# the weights accumulate over the whole series, and the steps a call aims at.
ASSUMED_CALLS = 4
_STEPS_PER_CALL = 64
_MIN_CALL_BATCH = 16
_DEFAULT_DELTA = 1e-5
# The share of the steps a classifier averages (averaging_tail).
_SHORTEST_TAIL = 1.0 / 16.0
_LONGEST_TAIL = 0.5
# The L2 decay factor 1 - eta alpha must stay above -1 (see _base); an
# automatic eta0 keeps a margin below that limit.
_MAX_ETA_ALPHA = 1.0


def nominal_batch_size(batch_size):
    """``batch_size``, or for ``"auto"`` the largest table trained on full batches.

    For tools that build a data set of one batch before any fit (the audits):
    with ``"auto"``, a table of up to this many rows is one full batch.

    Parameters
    ----------
    batch_size : int or "auto"

    Returns
    -------
    batch_size : int
    """
    return _FULL_BATCH_ROWS if batch_size == AUTO else int(batch_size)


def resolve_delta(delta, n_public):
    """``delta``, with ``"auto"`` resolved to ``min(1e-5, 1 / (10 n))``.

    Parameters
    ----------
    delta : float or "auto"
    n_public : int
        The accounted row count (public under the adjacency in force).

    Returns
    -------
    delta : float
    """
    if delta != AUTO:
        return float(delta)
    return min(_DEFAULT_DELTA, 1.0 / (10.0 * n_public))


def resolve_schedule(batch_size, max_iter, n_public, *, partial=False):
    """Batch size and epochs, with ``"auto"`` resolved from the row count.

    ``batch_size="auto"`` is ``n`` up to 256 rows (full batches), then 256,
    then ``ceil(n / 32)`` beyond 8,192 rows. ``max_iter="auto"`` is the
    number of epochs that gives at least 1,000 steps. For a call of a
    release series (``partial=True``: one epoch over the call's rows),
    ``batch_size="auto"`` is ``ceil(n / 64)`` rows, at least 16 (and at most
    ``n``), so that each call takes up to 64 steps instead of one.

    Parameters
    ----------
    batch_size : int or "auto"
    max_iter : int or "auto"
    n_public : int
        The accounted row count (of this call, for a call of a series).
    partial : bool, default=False
        A call of a release series (``partial_fit``).

    Returns
    -------
    batch_size : int
    max_iter : int
    """
    if batch_size == AUTO:
        if partial:
            batch_size = min(n_public, max(_MIN_CALL_BATCH,
                                           math.ceil(n_public / _STEPS_PER_CALL)))
        else:
            batch_size = min(n_public, max(_FULL_BATCH_ROWS,
                                           math.ceil(n_public * _MIN_SAMPLE_RATE)))
    batch_size = int(batch_size)
    if max_iter == AUTO:
        # T = ceil(max_iter * n / b) >= _TARGET_STEPS (T = max_iter for full batches).
        max_iter = max(1, math.ceil(_TARGET_STEPS * min(batch_size, n_public) / n_public))
    return batch_size, int(max_iter)


def weight_noise_target(n_features, max_step):
    """The noise ``"auto"`` lets each weight accumulate over a run (or a series).

    ``1.75 sqrt(max_step / d)``, at least ``max_step / 16`` and at most 2:
    the noise this leaves on the prediction of a row at a corner of
    ``[-1, 1]^d`` (norm ``sqrt(d)``) is ``1.75 sqrt(max_step)``, 3.5 logits
    for the classifiers (``max_step`` 4: ``3.5 / sqrt(d)`` within
    ``[0.25, 2]``), 1.75 for the regressor (``max_step`` 1, targets scaled to
    ``[-1, 1]``: ``1.75 / sqrt(d)`` within ``[0.0625, 2]``). See the module
    docstring, "Step size".

    Parameters
    ----------
    n_features : int
        d, the public width of X.
    max_step : float
        The step length ``eta0 * C`` of a noise-free fit.

    Returns
    -------
    weight_noise : float
    """
    target = _PREDICTION_NOISE * math.sqrt(max_step / max(int(n_features), 1))
    return float(min(_MAX_WEIGHT_NOISE, max(_MIN_WEIGHT_NOISE * max_step, target)))


def smoothed_noise_share(n_features, sigma, reference_sigma):
    """The noise reaching the weights, relative to the smoothing a step rule was measured with.

    Smoothing with ``sigma`` leaves each coordinate of the step's Gaussian
    noise ``sqrt(beta)`` of its standard deviation, with ``beta`` the mean
    of ``1 / lambda_k^2`` over the eigenvalues of ``A_sigma``
    (:func:`.smoothing_beta`; 0.52 at sigma 1 from 10 features). A rule for
    ``eta0`` whose noise target was measured on fits smoothed with
    ``reference_sigma`` keeps the noise that reaches the weights when the fit
    smooths with another ``sigma`` by scaling its estimate of the
    accumulated noise by ``sqrt(beta(sigma) / beta(reference_sigma))``.
    From public quantities only (d and the two sigmas).

    Parameters
    ----------
    n_features : int
    sigma : float
        The fit's ``sigma_``.
    reference_sigma : float or None
        The sigma the estimator's step rule was measured with; None: no
        adjustment (1.0 returned).

    Returns
    -------
    share : float
    """
    if reference_sigma is None or n_features < 2 or sigma == reference_sigma:
        return 1.0
    return math.sqrt(smoothing_beta(n_features, sigma)
                     / smoothing_beta(n_features, reference_sigma))


def resolve_eta0(eta0, *, learning_rate, power_t, noise_multipliers, clip_norm, batch_size,
                 alpha, max_step, n_features, optimizer=None, partial=False, noise_share=1.0):
    """``eta0``, with ``"auto"`` resolved from the calibrated noise.

    SGD: the accumulated noise on each weight, ``eta0 (C / b) ||z s||_2``
    with ``z_t`` the noise multiplier of step t and ``s`` the learning-rate
    schedule's shape, is set to :func:`weight_noise_target` (see the module
    docstring); the result is capped at ``max_step / C`` (reached without
    noise) and so that ``eta0 * alpha <= 1``. Another optimizer translates
    SGD's ``eta0`` by its own rule (:meth:`.Optimizer.default_eta0`:
    momentum keeps the long-run step, Adam and AdaGrad, whose steps are
    normalised per coordinate, set the noise-only movement of a weight to
    the same target).

    For the first call of a release series (``partial=True``; later calls
    keep the series' ``eta0``) the noise bounded is that of the whole
    series: ``ASSUMED_CALLS`` (4) calls like this one, so ``||z s||_2`` is
    taken ``sqrt(4)`` times larger (and the optimizers' target ``sqrt(4)``
    times smaller). A series of k calls then ends with ``sqrt(k / 4)`` times
    the target.

    Parameters
    ----------
    eta0 : float or "auto"
    learning_rate : str
    power_t : float
    noise_multipliers : ndarray of shape (n_steps,)
        ``z_t``, calibrated from public quantities.
    clip_norm : float
    batch_size : int
    alpha : float
    max_step : float
        The step length ``eta0 * C`` of a noise-free fit (the
        loss's ``noise_free_step``).
    n_features : int
        d, the public width of X.
    optimizer : Optimizer or None, default=None
        The checked optimizer (:func:`.check_optimizer`); None is plain SGD.
    partial : bool, default=False
        The first call of a release series (``partial_fit``).
    noise_share : float, default=1.0
        The share of the accumulated noise that reaches the weights,
        relative to the smoothing the rule was measured with
        (:func:`smoothed_noise_share`).

    Returns
    -------
    eta0 : float
    """
    if eta0 != AUTO:
        return float(eta0)
    weight_noise = weight_noise_target(n_features, max_step)
    noise_multipliers = np.asarray(noise_multipliers, dtype=np.float64)
    shape = learning_rate_schedule(learning_rate, 1.0, power_t, noise_multipliers.size)
    calls = math.sqrt(ASSUMED_CALLS) if partial else 1.0
    eta0 = max_step / clip_norm
    if (noise_multipliers > 0).any():
        # In this order: clip_norm / batch_size alone can underflow.
        accumulated = (calls * noise_share * float(np.linalg.norm(noise_multipliers * shape))
                       * clip_norm / batch_size)
        eta0 = min(eta0, weight_noise / accumulated)
    if optimizer is not None:
        eta0 = optimizer.default_eta0(eta0, weight_noise / calls, shape)
    if alpha > 0:
        eta0 = min(eta0, _MAX_ETA_ALPHA / alpha)
    return float(eta0)


def averaging_tail(n_features, max_step):
    """The share of the steps a classifier's ``average="auto"`` averages.

    ``W / m`` within ``[1/16, 1/2]``, where ``W`` is
    :func:`weight_noise_target` and ``m`` the noise-free step: for the
    classifiers (``m = 4``) a half up to 3 features, a quarter at 12, an
    eighth at 48, a sixteenth from 196. The wider the table, the smaller
    the noise ``eta0`` lets each weight carry, the shorter the steps, and
    the more the weights still drift at the end of the run, where a long
    tail lags behind them. See the module docstring, "Averaging".

    Parameters
    ----------
    n_features : int
        d, the public width of X.
    max_step : float
        The step length ``eta0 * C`` of a noise-free fit.

    Returns
    -------
    tail : float
    """
    share = weight_noise_target(n_features, max_step) / max_step
    return float(min(_LONGEST_TAIL, max(_SHORTEST_TAIL, share)))


def resolve_average_start(average, n_steps, *, tail=0.5):
    """The step after which iterates are averaged, or None.

    Parameters
    ----------
    average : bool, int or "auto"
        ``"auto"`` and ``True``: the iterates of the last ``tail`` of the
        steps (earlier iterates lag behind the model and would drag the
        average back towards the starting point); ``False``: no averaging
        (the last iterate); an int ``k >= 1``: the iterates after the first
        ``k`` steps (only the last one when ``k >= T``).
    n_steps : int
    tail : float, default=0.5
        The share of the steps ``"auto"`` and ``True`` average, in (0, 1]:
        a half for the regressor, :func:`averaging_tail` for the
        classifiers (see the module docstring, "Averaging").

    Returns
    -------
    start : int or None
        Averaging covers the iterates after steps ``start + 1 .. T``.
    """
    if average == AUTO or average is True:
        return n_steps - max(math.ceil(n_steps * tail), 1)
    if average is False:
        return None
    return min(int(average), n_steps - 1)


def resolve_sigma(sigma, n_features, sparse, levels, feature_names=None):
    """``sigma``, with ``"auto"`` and ``"ordered"`` resolved from public information.

    ``"auto"`` smooths only columns that :func:`.feature_layout` finds
    ordered (an image's shape, numbered names; never sparse input or a
    table's named columns), ``"ordered"`` declares them ordered; ordered
    columns are smoothed by the estimator's levels, by width.

    Parameters
    ----------
    sigma : float, "auto" or "ordered"
    n_features : int
        d.
    sparse : bool
        Whether X is a sparse matrix (its columns are one-hot or hashed:
        no order to smooth along).
    levels : tuple of (int, float)
        The estimator's ``_auto_sigma_levels``: ``(min_features, sigma)``
        pairs in increasing order; ordered input of d features is smoothed
        with the sigma of the last pair whose ``min_features <= d``, and
        not at all below the first.
    feature_names : array-like of str or None, default=None
        The column names (``feature_names_in_``: schema, public).

    Returns
    -------
    sigma : float
    """
    if sigma not in (AUTO, ORDERED):
        return float(sigma)
    ordered, _ = feature_layout(n_features, sparse, feature_names,
                                declared_ordered=sigma == ORDERED)
    resolved = 0.0
    if ordered:
        for min_features, level in levels:
            if n_features >= min_features:
                resolved = level
    return float(resolved)


def explain_sigma(sigma, n_features, sparse, levels, feature_names=None):
    """Why ``sigma`` resolves to the value it does, in one sentence.

    The same inputs as :func:`resolve_sigma`, all public: what a report or a
    demonstration prints beside the smoothing strength a fit used.

    Parameters
    ----------
    sigma : float, "auto" or "ordered"
    n_features : int
    sparse : bool
    levels : tuple of (int, float)
    feature_names : array-like of str or None, default=None

    Returns
    -------
    reason : str
    """
    resolved = resolve_sigma(sigma, n_features, sparse, levels, feature_names)
    if sigma not in (AUTO, ORDERED):
        return f"sigma={resolved:g} was given"
    ordered, why = feature_layout(n_features, sparse, feature_names,
                                  declared_ordered=sigma == ORDERED)
    if not ordered:
        return f"sigma={sigma!r} chose 0: {why}"
    rule = ", ".join(f"{level:g} from {min_features} features" for min_features, level in levels)
    return (f"sigma={sigma!r} chose {resolved:g} for ordered columns ({why}; by width: "
            f"{rule}; 0 below)")
