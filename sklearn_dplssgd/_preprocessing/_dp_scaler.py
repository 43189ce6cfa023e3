"""Scaling to [-1, 1] with each feature's range learned under differential privacy.

:class:`DPBoundedScaler` is :class:`~sklearn_dplssgd.BoundedScaler` whose
bounds are released by a private, *unbounded* quantile method instead of being
declared: nothing about the range of a feature needs to be known in advance.
Two mechanisms: by default (``mechanism="gaussian_histogram"``) one Gaussian
release of every learned feature's coarse histogram
(:mod:`._histogram_ranges`), which a ledger composes with the model under
PLD; with ``mechanism="above_threshold"`` the method below, pure epsilon-DP.

The AboveThreshold method (after Durfee, "Unbounded differentially private quantile and
maximum estimation", NeurIPS 2023) runs AboveThreshold, the sparse vector
technique, over a fixed, data-independent grid of candidates that grows
exponentially in both directions from zero (``0, +-base**i``). The upper end
scans the grid upwards from zero and stops at the first candidate ``c``
whose noisy count of rows ``<= c`` reaches the noisy ``n - k``; the lower end
then scans downwards from the released upper end (public by then) for the
first ``c`` whose noisy count of rows ``>= c`` reaches the noisy ``n - k``.
Starting there keeps the scans short where the counts are far below the
threshold (each such query is a chance to stop too early). ``k``, the number
of rows each scan aims to leave outside its end, depends only on public
quantities: the epsilon of the end and, where the row count is public (under
replace-one neighbours, or declared with ``public_n_samples``), that count,
so that little is clipped while the range is not stretched to an outlier.
Under add/remove without a declared count ``k`` does not depend on ``n`` at
all: it is released (``tail_count_``), and a ``k`` capped at ``n // 16``
would tell ``n`` and ``n + 1`` rows apart.

The cap. Where the budget is small for the row count (``n`` below
``16 * 4.5 / epsilon_end``), the uncapped ``k`` would aim the scans at inner
quantiles and clip much of every feature. A cap of a sixteenth keeps most
of each feature's range on small tables: on diabetes in raw units (331
training rows, 20 learned ends at a scaler epsilon of 1.5) a quarter kept 59
percent of the rows inside the ranges and a sixteenth 80 percent, and the
private pipeline's test R2 was higher with a sixteenth than with a quarter,
an eighth or a threshold share of a half.
Below a scan budget of a few units of ``1 / n`` no cap helps: the noise of
each count is then of the order of ``n`` and a scan stops on noise alone
(``epsilon_end`` 0.025 on the same 331 rows kept under 1 percent); the fit
warns, and declared bounds are far better there.

Privacy: each query ``count(x <= c) - (n - k) = k - count(x > c)`` has
sensitivity 1 for a fixed ``k``, and one row moves all queries of a scan in
the same direction (monotone queries), under both replace-one and add/remove
neighbours. The counts and the threshold are integers, and the noise is
integer: discrete Laplace ``P(y) ~ exp(-eps |y|)``, sampled exactly from
the fit's random words (no floating-point draw whose low bits could tell
the counts). AboveThreshold with threshold noise of parameter ``eps1`` and
query noise of parameter ``eps2`` is then ``(eps1 + eps2)``-DP whatever the
number of queries (Lyu, Su and Li, "Understanding the sparse vector technique
for differential privacy", PVLDB 2017, Algorithm 7 with monotone queries):
their proof shifts the threshold's noise by the sensitivity 1 and one
query's noise by 1, integer shifts under which the discrete Laplace's
probabilities change by at most ``exp(eps1)`` and ``exp(eps2)``, as the
continuous law's densities do.
Two thirds of each end's epsilon go to the threshold: its noise alone can
put the threshold above ``n``, when a scan runs on past the data, and the
larger query noise makes such a run end sooner. The lower scan starts where
the upper one stopped (adaptive composition). The budget is split evenly
over the learned ends (two per feature without declared bounds), composed by
basic composition.
"""

import math
import numbers
import warnings

import numpy as np
import scipy.sparse as sp
from sklearn.utils.validation import check_is_fitted, validate_data

import dp_accounting

from .._accounting import (
    NEIGHBORING_RELATIONS, EpsilonDeltaDpEvent, calibrate_noise, compute_epsilon, ledger_error,
    transformer_report,
)
from .._training import make_generator, random_state_error, warn_about_seed
from .._utils import Interval, Options, validate_hiding_values, validate_parameters
from ._above_threshold import (
    SMALLEST_NOISE_PARAMETER, THRESHOLD_SHARE, candidate_grid, private_range,
)
from ._histogram_ranges import histogram_ranges, noise_for_rows, rows_needed
from ._scaler import BoundedScaler

__all__ = ["DPBoundedScaler", "MECHANISMS", "candidate_grid", "private_range", "tail_count"]

# "above_threshold": pure epsilon, one scan per end (._above_threshold);
# "gaussian_histogram": one Gaussian release of all learned features' coarse
# histograms (._histogram_ranges), (epsilon, delta), composable under PLD.
MECHANISMS = ("above_threshold", "gaussian_histogram")
# Each mechanism's fit method, and what it releases (for privacy_report).
_RANGE_FITS = {"above_threshold": "_fit_scans", "gaussian_histogram": "_fit_histogram"}
_RANGE_RELEASES = {
    "above_threshold": "each found by a noisy threshold search (AboveThreshold) over a fixed "
                       "grid of candidates",
    "gaussian_histogram": "all from one Gaussian release of the features' counts in bins of "
                          "powers of 2",
}

# The scan aims to leave k = TAIL_NOISE_UNITS threshold noise scales
# (1 / (THRESHOLD_SHARE eps) = 1.5 / eps) of rows outside each end: enough
# that the noisy threshold lies above n (a scan would then run on past the
# data) with probability exp(-3) / 2 = 2.5 percent only, few enough that
# little is clipped.
TAIL_NOISE_UNITS = 3.0
# Where a row count is public, k is at most that count over this divisor:
# small tables keep most of their range (see "The cap" above).
TAIL_CAP_DIVISOR = 16
# epsilon="auto" (the histogram): the epsilon at which a bin holding this
# share of a public row count stands out of the noise, within these bounds.
# An eighth: at a quarter, a small target (331 rows, epsilon 0.3) can lose a
# bin of an eighth of its rows. The floor is the numeric default (large
# tables need no more); the cap keeps a small table's scaler from taking a
# model's budget (1 per scaler does as well as 1.5 on raw diabetes).
AUTO_DETECTED_SHARE = 1.0 / 8.0
AUTO_EPSILON_RANGE = (0.1, 1.0)
# Counts and the threshold n - k are int64, kept below 2**53 (k too); a
# count plus a discrete Laplace draw (at most 2**62) stays in int64.
_LARGEST_EXACT_COUNT = 2.0 ** 53


def tail_count(public_n_samples, epsilon_end):
    """Rows the scan aims to leave outside each end: public quantities only.

    ``ceil(TAIL_NOISE_UNITS / (THRESHOLD_SHARE * epsilon_end))`` (that is
    ``ceil(4.5 / epsilon_end)``), at most ``public_n_samples // 16`` when a
    row count is public (see the module docstring, "The cap").

    Parameters
    ----------
    public_n_samples : int or None
        A public row count: the actual one under replace-one neighbours, the
        declared ``public_n_samples`` under add/remove; None where the row
        count is private (add/remove without a declared count), and then no
        cap applies.
    epsilon_end : float

    Returns
    -------
    k : int
    """
    uncapped = math.ceil(TAIL_NOISE_UNITS / THRESHOLD_SHARE / epsilon_end)
    if public_n_samples is None:
        return int(uncapped)
    return int(min(uncapped, public_n_samples // TAIL_CAP_DIVISOR))


def _check_end_budget(epsilon, n_ends):
    """``epsilon / n_ends``, or a ValueError naming epsilon when it is too small to use.

    The scans compare integer counts with the threshold ``n - k``, ``k``
    below ``2**53``; the query noise's parameter must be at least the exact
    sampler's smallest, ``2**-50`` (an epsilon per end below about
    ``2.7e-15`` fails).
    Checked before the ledger is charged, so that such a fit spends nothing.
    """
    epsilon_end = epsilon / n_ends
    tail = TAIL_NOISE_UNITS / THRESHOLD_SHARE / epsilon_end if epsilon_end > 0 else math.inf
    query_epsilon = (1.0 - THRESHOLD_SHARE) * epsilon_end
    if not (tail <= _LARGEST_EXACT_COUNT and query_epsilon >= SMALLEST_NOISE_PARAMETER):
        raise ValueError(
            f"The 'epsilon' parameter of DPBoundedScaler is too small: split over "
            f"{n_ends} learned ends it leaves each end so little that its noise scale and "
            "tail count exceed exact arithmetic (2**50 rows). Use a larger "
            "epsilon (the noise would swamp any range long before this), or declare "
            "bounds for some features.")
    return epsilon_end


def _bounds_error(message):
    return ValueError("The 'bounds' parameter of DPBoundedScaler " + message)


def _public_bounds(bounds, n_features, feature_names):
    """``bounds`` as a list of None or (lower, upper) per feature."""
    per_feature = [None] * n_features
    if bounds is None:
        return per_feature
    if isinstance(bounds, dict):
        names = [] if feature_names is None else list(feature_names)
        for key, pair in bounds.items():
            if isinstance(key, str):
                if key not in names:
                    raise _bounds_error(f"names a feature {key!r} that X does not have.")
                index = names.index(key)
            elif isinstance(key, numbers.Integral) and not isinstance(key, bool) \
                    and 0 <= key < n_features:
                index = int(key)
            else:
                raise _bounds_error(
                    "must map feature names or indices in [0, n_features) to (lower, upper) "
                    f"pairs; got the key {key!r}.")
            per_feature[index] = pair
    else:
        if isinstance(bounds, (str, bytes)) or not hasattr(bounds, "__len__"):
            raise _bounds_error(
                "must be None, a dict or a list with one (lower, upper) pair or None per "
                f"feature; got a {type(bounds).__name__}.")
        if len(bounds) != n_features:
            raise _bounds_error(
                f"has {len(bounds)} entries but X has {n_features} features.")
        per_feature = list(bounds)
    for index, pair in enumerate(per_feature):
        if pair is None:
            continue
        try:
            low, high = (float(value) for value in pair)
        except (TypeError, ValueError):
            raise _bounds_error(
                f"must give a (lower, upper) pair of numbers for feature index {index}."
            ) from None
        if not (math.isfinite(low) and math.isfinite(high) and low < high):
            raise _bounds_error(
                f"needs finite lower < upper; it is not the case at feature index {index}.")
        per_feature[index] = (low, high)
    return per_feature


class DPBoundedScaler(BoundedScaler):
    """Scale each feature to [-1, 1] from a range learned with differential privacy.

    Each feature's lower and upper end is released privately, so no range
    has to be known: by default from one Gaussian release of every learned
    feature's counts in bins of powers of 2 (``mechanism``, below); with
    ``mechanism="above_threshold"`` by an unbounded private quantile method,
    AboveThreshold (the sparse vector technique) over a fixed grid of
    candidates growing exponentially from zero in both directions, after
    Durfee (NeurIPS 2023). Then each
    feature ``x`` is mapped to ``2 * (x - lower_) / (upper_ - lower_) - 1``
    with clipping to ``[-1, 1]``, exactly as :class:`BoundedScaler` does
    (it is a :class:`BoundedScaler`, with ``keep_zero="auto"``: on an
    image's columns a lower end of 0 keeps its zero, onto ``[0, 1]``), so
    every scaled row of ``d`` features has an L2 norm of at most ``sqrt(d)``.

    **Privacy** (``"above_threshold"``; the histogram's is under
    ``mechanism``). ``epsilon`` is split evenly over the ends learned: two per
    feature that has no public bounds in ``bounds``, each end
    ``epsilon / (2 * n_learned)``-DP, composed by basic composition into a
    pure ``epsilon``-DP release (``delta_ = 0``), under both replace-one and
    add/remove neighbours. Features with public ``bounds`` spend nothing.
    Every other fitted attribute is a function of public quantities only
    (under add/remove the row count is not one, unless declared with
    ``public_n_samples``).
    The fit records ``dp_event_`` and charges ``ledger`` before reading any
    value. See the "Private preprocessing" pages of the documentation.

    **Which quantiles** (``"above_threshold"``). Each scan aims to leave
    ``k`` rows outside each end, ``k = ceil(4.5 / epsilon_end)`` (three
    noise scales of the threshold),
    at most a sixteenth of the public row count (``tail_count_``): public
    quantities only. The row count is public under replace-one, or when
    declared with ``public_n_samples``; under add/remove without it ``k`` has
    no cap. Outliers beyond the ``k``-th largest value are clipped rather than
    stretching the range.

    **When the ranges will be poor.** With few rows for the budget (``n``
    below about ``4 * k``, e.g. 108 rows for 3 features at ``epsilon=1``)
    the range is an inner quantile range and much is clipped; under
    add/remove without ``public_n_samples``, ``n <= k`` leaves a range of
    nearly nothing around zero. A ``UserWarning`` tells the data holder (it
    is not part of the release). Declare ``bounds`` you know, give more
    budget, or declare ``public_n_samples``.

    Parameters
    ----------
    epsilon : float or "auto", default=0.1
        Privacy budget of the whole fit (all features, both ends).
        ``"auto"`` (``mechanism="gaussian_histogram"`` only): the epsilon at
        which a bin holding an eighth of the rows stands out of the noise,
        from the public row count and the number of learned features, within
        0.1 and 1 (0.1 where the row count is private: add/remove without
        ``public_n_samples``); ``epsilon_`` reports it. Small tables get
        more, so that their ranges cover most of their rows.
    bounds : dict, list or None, default=None
        Public bounds of the features you know: a dict mapping a feature's
        name (DataFrame column) or index to a ``(lower, upper)`` pair, or a
        list with one pair or ``None`` per feature. Those features spend no
        budget; ``None`` learns every feature's range.
    neighboring : {"replace_one", "add_remove"}, default="replace_one"
        Adjacency of the guarantee; it must match the ``ledger``'s. Under
        ``"add_remove"`` the number of rows is private: nothing released or
        chosen depends on it unless ``public_n_samples`` is declared.
    public_n_samples : int or None, default=None
        A row count declared public (as for the estimators), used instead of
        the actual number of rows to cap ``tail_count_``. Under add/remove
        it lets the scans aim at an inner quantile when the budget is small
        for the data; it is the user's declaration, not checked against the
        rows (a count far from the real one aims the ends at the wrong
        quantile, at no cost in privacy).
    ledger : PrivacyLedger or None, default=None
        Ledger charged with ``dp_event_`` before the fit reads any value.
    clip : bool, default=True
        Clip values outside the range (see :class:`BoundedScaler`).
    random_state : None, int, Generator, RandomState or SeedSequence, default=None
        Used only with ``reproducible=True``; otherwise each fit draws fresh
        operating-system entropy.
    reproducible : bool, default=False
        Draw the noise from ``random_state`` (not private: ``epsilon_`` is
        then ``inf``). For tests and research on public data.
    mechanism : {"gaussian_histogram", "above_threshold"}, default="gaussian_histogram"
        ``"above_threshold"``: one AboveThreshold scan per end, pure
        ``epsilon``-DP by basic composition (above). ``"gaussian_histogram"``
        (the default: in a ledger it leaves the model more of the budget, and
        on the raw-unit tables of the benchmarks it was no worse at the same
        scaler epsilon; see the user guide):
        every learned feature's counts in the bins of a fixed grid of powers
        of 2 (``0, +-2**i``), released at once with Gaussian noise, each
        range running from the lowest to the highest bin whose noisy count
        stands out of the noise (where none does, coarser blocks of the same
        noisy counts, and a warning naming the feature; where nothing does
        even there, an error naming it);
        ``(epsilon, delta)``-DP, recorded as one ``GaussianDpEvent`` that
        composes with a model's steps under the PLD accountant (a ledger's
        total), so that a pipeline spends much less of its budget on the
        bounds; ends right within a factor of 2. The grid's width does not
        enter the guarantee: a row moves one count per feature at any grid.
    delta : float, default=1e-6
        Delta at which ``"gaussian_histogram"`` calibrates its noise to
        ``epsilon`` (unused by ``"above_threshold"``).

    Attributes
    ----------
    lower_ : ndarray of shape (n_features_in_,)
        Lower end of each feature (released privately, or public).
    upper_ : ndarray of shape (n_features_in_,)
        Upper end of each feature.
    learned_ : ndarray of bool, shape (n_features_in_,)
        Which features' ends were learned privately.
    tail_count_ : int
        ``k``: the rows each scan aims to leave outside each end (public:
        epsilon, the number of learned ends and the public row count, if
        any).
    epsilon_ : float
        Epsilon spent (``inf`` with ``reproducible=True``, 0 when every
        feature has public bounds).
    delta_ : float
        0.0 for ``"above_threshold"`` (pure epsilon-DP); ``delta`` for
        ``"gaussian_histogram"``.
    noise_multiplier_ : float
        ``"gaussian_histogram"`` only: ``z`` of the release's event.
    dp_event_ : dp_accounting.DpEvent
        What the fit released: ``SelfComposedDpEvent(EpsilonDeltaDpEvent(
        epsilon / (2 * n_learned), 0), 2 * n_learned)`` for
        ``"above_threshold"``; ``GaussianDpEvent(noise_multiplier_)`` for
        ``"gaussian_histogram"`` (noise ``z sqrt(d)`` rows under add/remove,
        ``z sqrt(d / 2)`` under replace-one, ``d`` learned features).
    n_features_in_ : int
    feature_names_in_ : ndarray of shape (n_features_in_,)
        Defined only when ``X`` has string column names.

    See Also
    --------
    BoundedScaler : The same map from declared bounds, at no privacy cost.
    DPOneHotEncoder : Categories learned with differential privacy.

    Notes
    -----
    The candidates are ``0`` and ``+-1.1**i`` between about ``1e-6`` and
    ``1e15`` (``candidate_grid``): the ends are known to within 10
    percent of their magnitude, and values beyond ``1e15`` in magnitude are
    clipped to it. The upper end is searched upwards from zero, so a feature
    that is mostly negative gets the upper end 0 (its range is then wider
    than needed; declare its bounds if you know them). A constant feature
    gets the grid interval around its value. NaN and infinite values are
    refused (the error says only that there is one). References: D. Durfee,
    "Unbounded differentially private quantile and maximum estimation",
    NeurIPS 2023; M. Lyu, D. Su, N. Li,
    "Understanding the sparse vector technique for differential privacy",
    PVLDB 10(6), 2017.

    Examples
    --------
    >>> import numpy as np
    >>> from sklearn_dplssgd import DPBoundedScaler
    >>> rng = np.random.default_rng(0)
    >>> X = np.column_stack([rng.integers(18, 90, 5000), rng.lognormal(10, 1, 5000)])
    >>> scaler = DPBoundedScaler(epsilon=0.5).fit(X)
    >>> bool(np.all(np.abs(scaler.transform(X)) <= 1)), scaler.epsilon_
    (True, 0.5)
    """

    _parameter_constraints = {
        "epsilon": [Interval("real", 0, math.inf, closed="neither"), Options(str, ("auto",))],
        "neighboring": [Options(str, NEIGHBORING_RELATIONS)],
        "public_n_samples": [Interval("integral", 1, None), None],
        "ledger": [None, ledger_error],
        "clip": [Options(bool, (True, False))],
        "random_state": [None, random_state_error],
        "reproducible": [Options(bool, (True, False))],
        "mechanism": [Options(str, MECHANISMS)],
        "delta": [Interval("real", 0, 1, closed="neither")],
    }

    def __init__(self, epsilon=0.1, bounds=None, neighboring="replace_one", ledger=None,
                 clip=True, random_state=None, reproducible=False, public_n_samples=None,
                 mechanism="gaussian_histogram", delta=1e-6):
        self.epsilon = epsilon
        self.mechanism = mechanism
        self.delta = delta
        self.bounds = bounds
        self.neighboring = neighboring
        self.public_n_samples = public_n_samples
        self.ledger = ledger
        self.clip = clip
        self.random_state = random_state
        self.reproducible = reproducible

    def fit(self, X, y=None):
        """Learn each feature's range privately (or take its public bounds).

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
            Private data (not modified).
        y : None
            Ignored.

        Returns
        -------
        self : DPBoundedScaler
        """
        validate_parameters(self)
        if sp.issparse(X):
            raise TypeError(
                "DPBoundedScaler.fit does not accept sparse input: scaling to [-1, 1] maps "
                "a zero to a nonzero value, so the result would be dense. Convert it with "
                "X.toarray() if it fits in memory.")
        X = validate_hiding_values({"X": X}, validate_data, self, X, accept_sparse=False,
                                   dtype=[np.float64, np.float32])
        n_samples, n_features = X.shape
        public = _public_bounds(self.bounds, n_features, getattr(self, "feature_names_in_", None))
        learned = np.array([pair is None for pair in public], dtype=bool)
        return getattr(self, _RANGE_FITS[self.mechanism])(X, public, learned)

    def _histogram_epsilon(self, n_samples, n_learned):
        """The histogram's epsilon: the given one, or ``"auto"``'s from public quantities.

        ``"auto"``: the epsilon of the largest noise at which a bin holding
        ``AUTO_DETECTED_SHARE`` of the public row count stands out of the
        noise (:func:`noise_for_rows`), within ``AUTO_EPSILON_RANGE``; the
        range's floor where the row count is private (add/remove without
        ``public_n_samples``).
        """
        if self.epsilon != "auto":
            return float(self.epsilon)
        floor, cap = AUTO_EPSILON_RANGE
        n_public = self._public_row_count(n_samples)
        if n_public is None or not n_learned:
            return floor
        noise = noise_for_rows(AUTO_DETECTED_SHARE * n_public, n_learned, self.neighboring)
        needed = compute_epsilon(noise, self.delta, sample_rate=1.0, n_steps=1,
                                 neighboring=self.neighboring) if noise > 0 else math.inf
        return float(min(max(needed, floor), cap))

    def _fit_scans(self, X, public, learned):
        """``mechanism="above_threshold"``: one AboveThreshold scan per learned end."""
        if self.epsilon == "auto":
            raise ValueError(
                "The 'epsilon' parameter of DPBoundedScaler: 'auto' is available with "
                "mechanism='gaussian_histogram' only; give a number.")
        n_samples, n_features = X.shape
        n_ends = 2 * int(learned.sum())
        epsilon_end = _check_end_budget(self.epsilon, n_ends) if n_ends else math.inf
        warn_about_seed(self.random_state, self.reproducible)
        rng, seeded = make_generator(self.random_state, self.reproducible)
        if seeded:
            event, epsilon = dp_accounting.NonPrivateDpEvent(), math.inf
        elif n_ends:
            event = dp_accounting.SelfComposedDpEvent(EpsilonDeltaDpEvent(epsilon_end, 0.0),
                                                      n_ends)
            epsilon = epsilon_end * n_ends
        else:
            event, epsilon = dp_accounting.NoOpDpEvent(), 0.0
        # The event depends on public quantities only: charge before reading values.
        if self.ledger is not None:
            self.ledger.charge(type(self).__name__, event, self.neighboring)
        k = tail_count(self._public_row_count(n_samples), epsilon_end) if n_ends else 0
        if n_ends and n_samples < TAIL_CAP_DIVISOR * tail_count(None, epsilon_end):
            # For the person holding the data only: a warning is not released.
            # Below this row count each count's noise is a sizeable share of
            # the rows, and declared bounds are far better (module docstring).
            warnings.warn(
                f"DPBoundedScaler: {n_samples} rows are few for epsilon={self.epsilon:g} over "
                f"{n_ends} ends (epsilon {epsilon_end:.3g} each): the noise of each count "
                f"(scale {1.0 / ((1.0 - THRESHOLD_SHARE) * epsilon_end):.3g} rows) is large "
                f"against the rows, and each end is aimed at the {k}-th most extreme row, so "
                "the ranges may clip much or stop short"
                + (" (with no more rows than that, the range is nearly empty)"
                   if n_samples <= k else "")
                + ". Declaring bounds for these features would be far better (a range known "
                "from the units, the documentation or a public source); otherwise give it "
                "more budget"
                + (", or declare public_n_samples" if self._public_row_count(n_samples) is None
                   else "") + ".", UserWarning)
        lower = np.empty(n_features)
        upper = np.empty(n_features)
        grid = candidate_grid()
        for j in range(n_features):
            if learned[j]:
                lower[j], upper[j] = private_range(X[:, j], epsilon_end, k, rng, grid)
            else:
                lower[j], upper[j] = public[j]
        self.lower_ = lower
        self.upper_ = upper
        self.learned_ = learned
        self.tail_count_ = k
        self.epsilon_ = epsilon
        self.delta_ = 0.0
        self.dp_event_ = event
        return self

    def _fit_histogram(self, X, public, learned):
        """``mechanism="gaussian_histogram"``: every learned range from one Gaussian release."""
        n_learned = int(learned.sum())
        warn_about_seed(self.random_state, self.reproducible)
        rng, seeded = make_generator(self.random_state, self.reproducible)
        noise_multiplier = 0.0
        # Public quantities only (the row count where it is public).
        target = self._histogram_epsilon(X.shape[0], n_learned)
        if n_learned:
            # Calibrated from epsilon and delta alone (one full-batch Gaussian step).
            noise_multiplier = calibrate_noise(
                target, self.delta, sample_rate=1.0, n_steps=1,
                neighboring=self.neighboring).noise_multiplier
        if seeded:
            event, epsilon, delta = dp_accounting.NonPrivateDpEvent(), math.inf, 0.0
        elif n_learned:
            event = dp_accounting.GaussianDpEvent(noise_multiplier)
            epsilon, delta = target, float(self.delta)
        else:
            event, epsilon, delta = dp_accounting.NoOpDpEvent(), 0.0, 0.0
        # The event depends on public quantities only: charge before reading values.
        if self.ledger is not None:
            self.ledger.charge(type(self).__name__, event, self.neighboring)
        lower = np.array([pair[0] if pair is not None else np.nan for pair in public])
        upper = np.array([pair[1] if pair is not None else np.nan for pair in public])
        if n_learned:
            needed = rows_needed(noise_multiplier, n_learned, self.neighboring)
            if X.shape[0] < 3.0 * needed:
                # For the person holding the data only: a warning is not released.
                warnings.warn(
                    f"DPBoundedScaler: {X.shape[0]} rows are few for epsilon={target:g} "
                    f"over {n_learned} features: a bin of a feature's histogram needs about "
                    f"{needed:.0f} rows to stand out of the noise, so the ranges may cover "
                    "only the densest bins. Declaring bounds for these features would be "
                    "far better; otherwise give it more budget.", UserWarning)
            lower[learned], upper[learned], detected = histogram_ranges(
                X[:, learned], noise_multiplier, self.neighboring, rng)
            # Both are functions of the noisy release (post-processing).
            names = getattr(self, "feature_names_in_", None)
            columns = np.flatnonzero(learned)

            def named(indices):
                return ", ".join(str(names[j]) if names is not None else str(j)
                                 for j in indices)

            unseen = columns[np.isnan(lower[learned])]
            if unseen.size:
                # No range to give: a guessed one (the whole grid) would make
                # a target's bounds, and so the model's predictions, useless.
                raise ValueError(
                    f"DPBoundedScaler: nothing of feature(s) {named(unseen)} stood out of the "
                    f"noise, even in coarse bins: {X.shape[0]} rows are too few for "
                    f"epsilon={target:g}. Declare their bounds (bounds=...) or give the "
                    "scaler more budget (e.g. epsilon=\"auto\"). The ledger, if any, has "
                    "been charged for this fit.")
            coarse = columns[~detected]
            if coarse.size:
                warnings.warn(
                    f"DPBoundedScaler: no bin of feature(s) {named(coarse)} stood out of the "
                    "noise; their ranges come from coarser bins (wider). Declare bounds for "
                    "them, or give the scaler more budget.", UserWarning)
        self.lower_ = lower
        self.upper_ = upper
        self.learned_ = learned
        self.tail_count_ = 0
        self.noise_multiplier_ = noise_multiplier
        self.epsilon_ = epsilon
        self.delta_ = delta
        self.dp_event_ = event
        return self

    def _public_row_count(self, n_samples):
        """The row count the mechanism may use: None where it is private."""
        if self.public_n_samples is not None:
            return int(self.public_n_samples)
        return n_samples if self.neighboring == "replace_one" else None

    def privacy_report(self):
        """What this fit's guarantee means, in plain words (see the user guide).

        Returns
        -------
        report : str
        """
        check_is_fitted(self, "dp_event_")
        n_learned = int(np.sum(self.learned_))
        released = (
            f"the lower and upper ends of {n_learned} feature(s) (lower_, upper_), "
            f"{_RANGE_RELEASES[self.mechanism]}; "
            f"{self.n_features_in_ - n_learned} feature(s) took declared bounds and spent "
            "nothing. Values outside a range are clipped to it.")
        return transformer_report(self, released)

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.non_deterministic = not self.reproducible
        return tags
