"""Scaling to [-1, 1] with each feature's range learned under differential privacy.

:class:`DPBoundedScaler` is a :class:`~sklearn_dplssgd.BoundedScaler` whose
bounds are released privately instead of declared, by one of two
mechanisms: one Gaussian release of every learned feature's coarse histogram
(``"gaussian_histogram"``, :mod:`._histogram_ranges`), or one AboveThreshold
scan per end over a fixed grid of candidates (``"above_threshold"``,
:mod:`._above_threshold`, after Durfee, "Unbounded differentially private
quantile and maximum estimation", NeurIPS 2023), pure epsilon-DP. Their
privacy arguments are in the privacy guide ("Private preprocessing" and
"Exact noise"); the user guide's "Private preprocessing" page says why the
tail count is capped at a sixteenth of a public row count.
"""

import math
import numbers
import warnings

import numpy as np
import scipy.sparse as sp
from sklearn.utils.validation import validate_data

import dp_accounting

from .._accounting import NEIGHBORING_RELATIONS, calibrate_noise, compute_epsilon, ledger_error
from .._training import random_state_error
from .._utils import Interval, Options, validate_hiding_values, validate_parameters
from ._above_threshold import (
    SMALLEST_NOISE_PARAMETER, THRESHOLD_SHARE, candidate_grid, private_range,
)
from ._histogram_ranges import histogram_ranges, noise_for_rows, rows_needed
from ._private_fit import PrivateFitMixin, composed_event, split_budget
from ._scaler import BoundedScaler, sparse_error

__all__ = ["DPBoundedScaler", "MECHANISMS", "candidate_grid", "private_range", "tail_count"]

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
# (1.5 / epsilon_end) of rows outside each end: the noisy threshold then lies
# above n (a scan runs on past the data) with probability 2.5 percent only.
TAIL_NOISE_UNITS = 3.0
# Where a row count is public, k is at most that count over this divisor: on
# raw diabetes (331 rows, 20 ends at epsilon 1.5) a sixteenth kept 80 percent
# of the rows inside the ranges, a quarter 59, and gave the best pipeline R2.
TAIL_CAP_DIVISOR = 16
# An end's smallest epsilon: its query noise's parameter (a third of it) is
# at least the exact sampler's smallest, and k (below 2**53) and the counts
# stay exact in int64 with a discrete Laplace draw (at most 2**62) added.
_SMALLEST_END_EPSILON = SMALLEST_NOISE_PARAMETER / (1.0 - THRESHOLD_SHARE)
# epsilon="auto": the epsilon at which a bin holding this share of a public
# row count stands out of the noise, within these bounds (at a quarter, a
# small table can lose a bin of an eighth of its rows; the cap keeps a small
# table's scaler from taking a model's budget).
AUTO_DETECTED_SHARE = 1.0 / 8.0
AUTO_EPSILON_RANGE = (0.1, 1.0)


def tail_count(public_n_samples, epsilon_end):
    """Rows the scan aims to leave outside each end, from public quantities only.

    ``ceil(4.5 / epsilon_end)``, at most ``public_n_samples // 16`` where a
    row count is public (None where it is private: no cap).
    """
    uncapped = math.ceil(TAIL_NOISE_UNITS / THRESHOLD_SHARE / epsilon_end)
    if public_n_samples is None:
        return int(uncapped)
    return int(min(uncapped, public_n_samples // TAIL_CAP_DIVISOR))


def _bounds_error(message):
    return ValueError("The 'bounds' parameter of DPBoundedScaler " + message)


def _bounds_index(key, names, n_features):
    """The feature index a key of a ``bounds`` dict names (a column name or an index)."""
    if isinstance(key, str):
        if key not in names:
            raise _bounds_error(f"names a feature {key!r} that X does not have.")
        return names.index(key)
    if isinstance(key, numbers.Integral) and not isinstance(key, bool) and 0 <= key < n_features:
        return int(key)
    raise _bounds_error("must map feature names or indices in [0, n_features) to (lower, upper) "
                        f"pairs; got the key {key!r}.")


def _public_bounds(bounds, n_features, feature_names):
    """``bounds`` as a list of None or (lower, upper) per feature."""
    per_feature = [None] * n_features
    if isinstance(bounds, dict):
        names = [] if feature_names is None else list(feature_names)
        for key, pair in bounds.items():
            per_feature[_bounds_index(key, names, n_features)] = pair
    elif bounds is not None:
        if isinstance(bounds, (str, bytes)) or not hasattr(bounds, "__len__"):
            raise _bounds_error(
                "must be None, a dict or a list with one (lower, upper) pair or None per "
                f"feature; got a {type(bounds).__name__}.")
        if len(bounds) != n_features:
            raise _bounds_error(f"has {len(bounds)} entries but X has {n_features} features.")
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


class DPBoundedScaler(PrivateFitMixin, BoundedScaler):
    """Scale each feature to [-1, 1] from a range learned with differential privacy.

    Each learned feature's lower and upper end is released privately, so no
    range has to be known (``mechanism``, below); each feature is then mapped
    and clipped exactly as by :class:`BoundedScaler` (it is one, with
    ``keep_zero="auto"``), so every scaled row of ``d`` features has an L2
    norm of at most ``sqrt(d)``. Features with public ``bounds`` spend
    nothing. Every other fitted attribute is a function of public quantities
    only (under add/remove the row count is one only when declared with
    ``public_n_samples``), and ``ledger`` is charged with ``dp_event_`` before
    any value is read. With few rows for the budget the ranges are poor (an
    inner quantile range, much clipped); a ``UserWarning`` tells the data
    holder (it is not part of the release). See the "Private preprocessing"
    pages of the documentation.

    Parameters
    ----------
    epsilon : float or "auto", default=0.1
        Privacy budget of the whole fit (all features, both ends).
        ``"auto"`` (``mechanism="gaussian_histogram"`` only): the epsilon at
        which a bin holding an eighth of the public row count stands out of
        the noise, within 0.1 and 1 (0.1 where the row count is private);
        ``epsilon_`` reports it.
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
        A row count declared public, used instead of the actual one to cap
        ``tail_count_`` and for ``epsilon="auto"``. It is not checked against
        the rows (a wrong count aims the ends at the wrong quantile, at no
        cost in privacy).
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
        ``"gaussian_histogram"``: every learned feature's counts in bins of
        powers of 2 (``0, +-2**i``), released at once with Gaussian noise;
        each range runs from the lowest to the highest bin that stands out of
        the noise (where none does, coarser blocks of the same noisy counts
        and a warning naming the feature; where nothing does, an error).
        Ends right within a factor of 2; ``(epsilon, delta)``-DP as one
        ``GaussianDpEvent``, which a ledger composes with a model's steps
        under PLD, so a pipeline spends much less of its budget on the bounds.
        ``"above_threshold"``: one AboveThreshold scan per end (the sparse
        vector technique) over candidates ``0, +-1.1**i``, the upper end
        searched upwards from zero, the lower end downwards from it, each
        aimed at the ``tail_count_``-th most extreme row so that outliers are
        clipped rather than stretching the range; ``epsilon`` split evenly
        over the ``2 d`` learned ends, pure ``epsilon``-DP by basic
        composition.
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
        ``"above_threshold"``: ``k``, the rows each scan aims to leave outside
        each end, ``ceil(4.5 / epsilon_end)``, at most a sixteenth of the
        public row count, if any (0 for ``"gaussian_histogram"``).
    epsilon_ : float
        Epsilon spent (``inf`` with ``reproducible=True``, 0 when every
        feature has public bounds).
    delta_ : float
        0.0 for ``"above_threshold"`` (pure epsilon-DP); ``delta`` for
        ``"gaussian_histogram"``.
    noise_multiplier_ : float
        ``"gaussian_histogram"`` only: ``z`` of the release's event.
    dp_event_ : dp_accounting.DpEvent
        ``SelfComposedDpEvent(EpsilonDeltaDpEvent(epsilon / (2 d), 0), 2 d)``
        for ``"above_threshold"``, ``GaussianDpEvent(noise_multiplier_)`` for
        ``"gaussian_histogram"`` (``d`` learned features).
    n_features_in_ : int
    feature_names_in_ : ndarray of shape (n_features_in_,)
        Defined only when ``X`` has string column names.

    See Also
    --------
    BoundedScaler : The same map from declared bounds, at no privacy cost.
    DPOneHotEncoder : Categories learned with differential privacy.

    Notes
    -----
    The AboveThreshold candidates span about ``1e-6`` to ``1e15`` in
    magnitude (values beyond are clipped to it). Its upper end is searched
    upwards from zero, so a mostly negative feature gets the upper end 0;
    a constant feature gets the grid interval around its value. NaN and
    infinite values are refused (the error says only that there is one).
    References: D. Durfee, "Unbounded differentially private quantile and
    maximum estimation", NeurIPS 2023; M. Lyu, D. Su, N. Li, "Understanding
    the sparse vector technique for differential privacy", PVLDB 10(6), 2017.

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
            raise sparse_error("fit", "DPBoundedScaler")
        X = validate_hiding_values({"X": X}, validate_data, self, X, accept_sparse=False,
                                   dtype=[np.float64, np.float32])
        public = _public_bounds(self.bounds, X.shape[1], getattr(self, "feature_names_in_", None))
        learned = np.array([pair is None for pair in public], dtype=bool)
        lower = np.array([np.nan if pair is None else pair[0] for pair in public])
        upper = np.array([np.nan if pair is None else pair[1] for pair in public])
        return getattr(self, _RANGE_FITS[self.mechanism])(X, lower, upper, learned)

    def _record(self, lower, upper, learned, spent, tail_count=0):
        """Store the fit's ends and what it spent."""
        self.lower_, self.upper_, self.learned_ = lower, upper, learned
        self.tail_count_ = tail_count
        self.dp_event_, self.epsilon_, self.delta_ = spent
        return self

    def _public_row_count(self, n_samples):
        """The row count the mechanism may use: None where it is private."""
        if self.public_n_samples is not None:
            return int(self.public_n_samples)
        return n_samples if self.neighboring == "replace_one" else None

    def _fit_scans(self, X, lower, upper, learned):
        """``mechanism="above_threshold"``: one AboveThreshold scan per learned end."""
        if self.epsilon == "auto":
            raise ValueError(
                "The 'epsilon' parameter of DPBoundedScaler: 'auto' is available with "
                "mechanism='gaussian_histogram' only; give a number.")
        n_ends = 2 * int(learned.sum())
        epsilon_end = split_budget(
            "DPBoundedScaler", "epsilon", self.epsilon, n_ends, "learned ends",
            _SMALLEST_END_EPSILON, ", or declare bounds for some features") if n_ends else math.inf
        rng, spent = self._start_release(composed_event(epsilon_end, 0.0, n_ends))
        k = tail_count(self._public_row_count(X.shape[0]), epsilon_end) if n_ends else 0
        if n_ends and X.shape[0] < TAIL_CAP_DIVISOR * tail_count(None, epsilon_end):
            self._warn_few_rows_to_scan(X.shape[0], n_ends, epsilon_end, k)
        grid = candidate_grid()
        for j in np.flatnonzero(learned):
            lower[j], upper[j] = private_range(X[:, j], epsilon_end, k, rng, grid)
        return self._record(lower, upper, learned, spent, tail_count=k)

    def _warn_few_rows_to_scan(self, n_samples, n_ends, epsilon_end, k):
        """Each count's noise is a sizeable share of the rows (for the data holder only)."""
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

    def _histogram_epsilon(self, n_samples, n_learned):
        """The histogram's epsilon: the given one, or ``"auto"``'s from public quantities."""
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

    def _fit_histogram(self, X, lower, upper, learned):
        """``mechanism="gaussian_histogram"``: every learned range from one Gaussian release."""
        n_learned = int(learned.sum())
        # Public quantities only: epsilon and delta (and the row count where it is public).
        target = self._histogram_epsilon(X.shape[0], n_learned)
        noise_multiplier = calibrate_noise(
            target, self.delta, sample_rate=1.0, n_steps=1,
            neighboring=self.neighboring).noise_multiplier if n_learned else 0.0
        rng, spent = self._start_release(
            (dp_accounting.GaussianDpEvent(noise_multiplier), target, float(self.delta))
            if n_learned else composed_event(0.0, 0.0, 0))
        if n_learned:
            needed = rows_needed(noise_multiplier, n_learned, self.neighboring)
            if X.shape[0] < 3.0 * needed:
                # For the data holder only: a warning is not released.
                warnings.warn(
                    f"DPBoundedScaler: {X.shape[0]} rows are few for epsilon={target:g} "
                    f"over {n_learned} features: a bin of a feature's histogram needs about "
                    f"{needed:.0f} rows to stand out of the noise, so the ranges may cover "
                    "only the densest bins. Declaring bounds for these features would be "
                    "far better; otherwise give it more budget.", UserWarning)
            lower[learned], upper[learned], detected = histogram_ranges(
                X[:, learned], noise_multiplier, self.neighboring, rng)
            self._check_detected(np.flatnonzero(learned), lower[learned], detected,
                                 X.shape[0], target)
        self.noise_multiplier_ = noise_multiplier
        return self._record(lower, upper, learned, spent)

    def _check_detected(self, columns, lower, detected, n_samples, target):
        """Refuse learned features of which nothing stood out; warn of coarse ranges.

        Both are functions of the noisy release (post-processing).
        """
        names = getattr(self, "feature_names_in_", None)

        def named(indices):
            return ", ".join(str(names[j]) if names is not None else str(j) for j in indices)

        unseen = columns[np.isnan(lower)]
        if unseen.size:
            # No range to give: a guessed one (the whole grid) would make a
            # target's bounds, and so the model's predictions, useless.
            raise ValueError(
                f"DPBoundedScaler: nothing of feature(s) {named(unseen)} stood out of the "
                f"noise, even in coarse bins: {n_samples} rows are too few for "
                f"epsilon={target:g}. Declare their bounds (bounds=...) or give the "
                "scaler more budget (e.g. epsilon=\"auto\"). The ledger, if any, has "
                "been charged for this fit.")
        coarse = columns[~detected]
        if coarse.size:
            warnings.warn(
                f"DPBoundedScaler: no bin of feature(s) {named(coarse)} stood out of the "
                "noise; their ranges come from coarser bins (wider). Declare bounds for "
                "them, or give the scaler more budget.", UserWarning)

    def _released(self):
        """What the fit released, in words, for :meth:`privacy_report`."""
        n_learned = int(np.sum(self.learned_))
        return (f"the lower and upper ends of {n_learned} feature(s) (lower_, upper_), "
                f"{_RANGE_RELEASES[self.mechanism]}; "
                f"{self.n_features_in_ - n_learned} feature(s) took declared bounds and spent "
                "nothing. Values outside a range are clipped to it.")
