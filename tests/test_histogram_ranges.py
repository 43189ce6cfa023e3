"""DPBoundedScaler(mechanism="gaussian_histogram"): all ranges from one Gaussian release."""

import fractions
import math
import warnings

import numpy as np
import pytest
from scipy import stats

import dp_accounting
from dp_accounting.pld import pld_privacy_accountant

from sklearn_dplssgd import DPBoundedScaler, PrivacyLedger
from sklearn_dplssgd.audit import mu_lower_bound
from sklearn_dplssgd._preprocessing import _histogram_ranges
from sklearn_dplssgd._preprocessing._histogram_ranges import (
    histogram_counts, histogram_grid, histogram_noise_scale, noisy_histograms,
)

pytestmark = pytest.mark.filterwarnings("ignore::sklearn_dplssgd.PrivacyLeakWarning")

_RELATIONS = {"replace_one": dp_accounting.NeighboringRelation.REPLACE_ONE,
              "add_remove": dp_accounting.NeighboringRelation.ADD_OR_REMOVE_ONE}


def _table(n=3_000, seed=0):
    rng = np.random.default_rng(seed)
    return np.column_stack([
        rng.integers(17, 91, n).astype(float),            # ages
        rng.lognormal(10.0, 1.0, n),                      # heavy-tailed incomes
        -rng.exponential(50.0, n) - 1000.0,               # all negative
    ])


def _counts(X):
    edges = histogram_grid()
    return np.concatenate([histogram_counts(X[:, j], edges) for j in range(X.shape[1])])


@pytest.mark.parametrize("neighboring", ["replace_one", "add_remove"])
def test_event_recomputed_by_dp_accounting_meets_epsilon(neighboring):
    scaler = DPBoundedScaler(epsilon=0.7, delta=1e-6, neighboring=neighboring,
                             mechanism="gaussian_histogram").fit(_table(500))
    assert scaler.dp_event_ == dp_accounting.GaussianDpEvent(scaler.noise_multiplier_)
    accountant = pld_privacy_accountant.PLDAccountant(_RELATIONS[neighboring])
    epsilon = accountant.compose(scaler.dp_event_).get_epsilon(1e-6)
    # Calibrated: at most the target, and not needlessly below it.
    assert 0.69 <= epsilon <= 0.7 * (1 + 1e-3)
    assert (scaler.epsilon_, scaler.delta_) == (0.7, 1e-6)


def test_the_default_mechanism_is_the_gaussian_histogram():
    scaler = DPBoundedScaler(epsilon=0.7).fit(_table(500))
    assert scaler.mechanism == "gaussian_histogram"
    assert scaler.dp_event_ == dp_accounting.GaussianDpEvent(scaler.noise_multiplier_)
    assert (scaler.epsilon_, scaler.delta_) == (0.7, 1e-6)


def test_ledger_composes_the_release_under_pld():
    ledger = PrivacyLedger(max_epsilon=3.0, delta=1e-5)
    scaler = DPBoundedScaler(epsilon=1.0, mechanism="gaussian_histogram", ledger=ledger)
    scaler.fit(_table(500))
    assert [record["dp_event"] for record in ledger.records] == [scaler.dp_event_]
    # One Gaussian at (1, 1e-6) costs less than 1 at the ledger's larger delta.
    assert 0.8 < ledger.epsilon() < 1.0
    ledger.close()


@pytest.mark.parametrize("neighboring", ["replace_one", "add_remove"])
def test_a_row_moves_the_counts_by_at_most_the_accounted_shift(neighboring):
    # The accountant reads GaussianDpEvent(z) as a shift of one unit (add/remove)
    # or two (replace-one) against noise z units: the noise scale over z is the
    # unit, and no neighbour may move the released counts further.
    rng = np.random.default_rng(3)
    unit = histogram_noise_scale(1.0, 4, neighboring)
    accounted = unit * (2.0 if neighboring == "replace_one" else 1.0)
    largest = 0.0
    for _ in range(50):
        X = rng.standard_normal((40, 4)) * 10.0 ** rng.integers(-3, 4, 4)
        row = rng.standard_normal((1, 4)) * 1e3
        if neighboring == "replace_one":
            other = X.copy()
            other[rng.integers(40)] = row
        else:
            other = np.vstack([X, row])
        largest = max(largest, float(np.linalg.norm(_counts(other) - _counts(X))))
    assert largest <= accounted * (1 + 1e-12)
    assert largest >= accounted * (1 - 1e-12)  # reached: the bound is tight


def _projected_scores(neighboring, n_runs, seed):
    # The audit's distinguishing test: project the release onto the direction
    # in which the changed row moves it.
    X = np.tile(np.array([[1.5, 3.0, 5.0, 70.0]]), (30, 1))
    other = X.copy()
    other[0] = [-1.5, 300.0, 0.01, -70.0]
    direction = _counts(other) - _counts(X)
    direction /= np.linalg.norm(direction)
    rng = np.random.default_rng(seed)
    z = 2.0
    scores = []
    for data in (X, other):
        scores.append(np.array([
            noisy_histograms(data, z, neighboring, rng).ravel() @ direction
            for _ in range(n_runs)]))
    claimed_mu = 2.0 / z  # replace-one: a shift of twice the unit
    return scores, claimed_mu


def test_audit_passes_the_mechanism_and_fails_a_broken_noise_scale(monkeypatch):
    scores, claimed_mu = _projected_scores("replace_one", 2_000, seed=11)
    assert mu_lower_bound(*scores) <= claimed_mu
    # Broken: noise for a sensitivity of one count, as if a row moved one
    # feature's histogram only (it moves every feature's).
    monkeypatch.setattr(_histogram_ranges, "histogram_noise_scale",
                        lambda z, n_learned, neighboring: z * math.sqrt(0.5))
    scores, claimed_mu = _projected_scores("replace_one", 2_000, seed=11)
    assert mu_lower_bound(*scores) > 1.3 * claimed_mu


def test_ranges_within_a_factor_of_two_and_keep_the_rows():
    X = _table()
    scaler = DPBoundedScaler(epsilon=1.0, mechanism="gaussian_histogram", random_state=0,
                             reproducible=True).fit(X)
    low, high = X.min(axis=0), X.max(axis=0)
    assert np.all(scaler.lower_ < scaler.upper_)
    assert scaler.upper_[0] <= 2 * high[0] and scaler.lower_[0] >= low[0] / 2
    assert scaler.lower_[2] >= 2 * low[2] and scaler.upper_[2] <= high[2] / 2
    inside = (X >= scaler.lower_) & (X <= scaler.upper_)
    assert inside[:, [0, 2]].mean() > 0.95 and inside[:, 1].mean() > 0.8
    assert scaler.learned_.all() and scaler.tail_count_ == 0


def test_public_bounds_spend_nothing_and_are_kept():
    X = _table(500)
    scaler = DPBoundedScaler(epsilon=1.0, mechanism="gaussian_histogram",
                             bounds={0: (0, 120)}).fit(X)
    assert (scaler.lower_[0], scaler.upper_[0]) == (0, 120)
    assert list(scaler.learned_) == [False, True, True]
    every = DPBoundedScaler(epsilon=1.0, mechanism="gaussian_histogram",
                            bounds=[(0, 1)] * 3).fit(X)
    assert every.epsilon_ == 0.0 and isinstance(every.dp_event_, dp_accounting.NoOpDpEvent)


def test_add_remove_needs_no_public_row_count_and_small_tables_warn():
    X = _table(2_000)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        DPBoundedScaler(epsilon=1.0, mechanism="gaussian_histogram",
                        neighboring="add_remove").fit(X)
    # A seed whose noise lets every feature stand out (18 of the first 30 do;
    # the others refuse, "nothing stood out"): the warning comes with a fit.
    with pytest.warns(UserWarning, match="few for epsilon"):
        DPBoundedScaler(epsilon=0.5, mechanism="gaussian_histogram", random_state=3,
                        reproducible=True).fit(X[:250])


def test_seeded_fit_repeats_and_input_is_not_changed():
    X = _table(500)
    before = X.copy()
    first = DPBoundedScaler(epsilon=0.5, mechanism="gaussian_histogram", random_state=4,
                            reproducible=True).fit(X)
    second = DPBoundedScaler(epsilon=0.5, mechanism="gaussian_histogram", random_state=4,
                             reproducible=True).fit(X)
    assert np.array_equal(first.lower_, second.lower_)
    assert np.array_equal(first.upper_, second.upper_)
    assert first.epsilon_ == math.inf
    assert np.array_equal(X, before)


def test_mechanism_and_delta_are_validated():
    with pytest.raises(ValueError, match="mechanism"):
        DPBoundedScaler(mechanism="laplace").fit(_table(50))
    with pytest.raises(ValueError, match="delta"):
        DPBoundedScaler(mechanism="gaussian_histogram", delta=0.0).fit(_table(50))


def test_auto_epsilon_lets_an_eighth_of_the_rows_stand_out_within_its_range():
    from sklearn_dplssgd._preprocessing._dp_scaler import AUTO_EPSILON_RANGE
    from sklearn_dplssgd._preprocessing._histogram_ranges import rows_needed
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        # One feature of 331 rows: between the floor and the cap, and a bin
        # of an eighth of the rows reaches the threshold (not much more noise).
        target = DPBoundedScaler(epsilon="auto").fit(_table(331)[:, :1])
        assert AUTO_EPSILON_RANGE[0] < target.epsilon_ < AUTO_EPSILON_RANGE[1]
        needed = rows_needed(target.noise_multiplier_, 1, "replace_one")
        assert 0.99 * 331 / 8 <= needed <= 331 / 8 * (1 + 1e-3)
        # Ten features of 331 rows would need more than the cap; a large
        # table needs less than the floor; a private row count gets the floor.
        assert DPBoundedScaler(epsilon="auto").fit(
            np.tile(_table(331), (1, 3))[:, :10]).epsilon_ == AUTO_EPSILON_RANGE[1]
        assert DPBoundedScaler(epsilon="auto").fit(_table(50_000)).epsilon_ == (
            AUTO_EPSILON_RANGE[0])
        assert DPBoundedScaler(epsilon="auto", neighboring="add_remove").fit(
            _table(3_000)).epsilon_ == AUTO_EPSILON_RANGE[0]
    with pytest.raises(ValueError, match="'auto' is available with mechanism='gaussian_hist"):
        DPBoundedScaler(epsilon="auto", mechanism="above_threshold").fit(_table(331))


def test_grid_edges_are_exact_powers_and_sqrt2_powers_at_two_bins_an_octave():
    from sklearn_dplssgd._preprocessing._histogram_ranges import (
        HISTOGRAM_BINS_PER_OCTAVE, HISTOGRAM_GRID_BASE)
    assert HISTOGRAM_BINS_PER_OCTAVE == 1 and HISTOGRAM_GRID_BASE == 2.0
    octaves = histogram_grid()
    assert np.array_equal(octaves, np.concatenate(
        [-(2.0 ** np.arange(50.0, -21.0, -1.0)), [0.0], 2.0 ** np.arange(-20.0, 51.0)]))
    assert np.array_equal(histogram_grid(1), octaves)
    halves = histogram_grid(2)
    positive = halves[halves > 0]
    assert np.array_equal(halves, np.concatenate([-positive[::-1], [0.0], positive]))
    # 2**-20 .. 2**50 in half-octaves: even steps exact powers of two, odd
    # ones the correctly rounded sqrt(2) times a power of two.
    assert positive.shape == (141,)
    exponents = np.arange(-40, 101)
    assert np.array_equal(positive[::2], np.ldexp(1.0, exponents[::2] // 2))
    assert np.array_equal(positive[1::2], np.ldexp(math.sqrt(2.0), exponents[1::2] // 2))


def test_threshold_counts_the_grids_bins(monkeypatch):
    from sklearn_dplssgd._preprocessing._histogram_ranges import (
        detection_threshold, rows_needed)
    for k, n_bins in [(1, 144), (2, 284)]:
        monkeypatch.setattr(_histogram_ranges, "histogram_grid",
                            lambda k=k: histogram_grid(k))
        assert _histogram_ranges.histogram_grid().shape[0] + 1 == n_bins
        for d, neighboring in [(1, "replace_one"), (10, "add_remove")]:
            expected = (histogram_noise_scale(2.0, d, neighboring)
                        * detection_threshold(d, n_bins))
            assert rows_needed(2.0, d, neighboring) == pytest.approx(expected, rel=1e-12)


def _spread_over_octaves(rows_a_bin, seed):
    """One feature spread evenly over the grid's 20 bins from 1 to 2**20."""
    edges = histogram_grid()
    positive = edges[(edges >= 1.0) & (edges <= 2.0 ** 20)]
    rng = np.random.default_rng(seed)
    values = [rng.uniform(low, high, rows_a_bin) for low, high in zip(positive, positive[1:])]
    return np.concatenate(values)[:, None]


def _ranges_fail_safe(find_ranges):
    """Over seeds, where no fine bin stands out: ranges on the data or none at all."""
    # z = 10, one feature, replace-one: noise 7.1 rows, a bin needs ~31.
    # 10 rows a bin over 20 octaves: blocks of 8 to 16 bins stand out; five
    # rows: nothing does, and the largest noisy count is a bin of noise.
    for seed in range(8):
        for X in (_spread_over_octaves(10, seed), _spread_over_octaves(10, seed)[::40]):
            lower, upper, detected = find_ranges(X, 10.0, "replace_one",
                                                 np.random.default_rng(100 + seed))
            assert not detected[0]
            inside = ((X[:, 0] >= lower[0]) & (X[:, 0] <= upper[0])).mean()
            none = np.isnan(lower[0]) and np.isnan(upper[0])
            near = inside >= 0.05 and lower[0] >= 2.0 ** -8 and upper[0] <= 2.0 ** 28
            if not (none or near):
                return False
    return True


def test_fallback_merges_coarser_bins_and_a_largest_count_fallback_is_caught(monkeypatch):
    assert _ranges_fail_safe(_histogram_ranges.histogram_ranges)

    def largest_noisy_count(noisy, sigma, edges, n_learned):
        threshold = sigma * _histogram_ranges.detection_threshold(n_learned, noisy.shape[0])
        crossed = np.flatnonzero(noisy >= threshold)
        detected = bool(crossed.size)
        if not detected:
            crossed = np.array([int(np.argmax(noisy))])
        return float(edges[max(crossed[0] - 1, 0)]), float(edges[crossed[-1]]), detected
    monkeypatch.setattr(_histogram_ranges, "_ends", largest_noisy_count)
    assert not _ranges_fail_safe(_histogram_ranges.histogram_ranges)


def test_nothing_seen_at_any_level_gives_no_range_and_the_scaler_names_the_feature():
    edges = histogram_grid()
    X = _spread_over_octaves(10, 0)[::40]  # 5 rows: nothing stands out at any level
    lower, upper, detected = _histogram_ranges.histogram_ranges(
        X, 10.0, "replace_one", np.random.default_rng(3))
    assert np.isnan(lower[0]) and np.isnan(upper[0]) and not detected[0]
    # The scaler refuses (a guessed range would be a target's useless bounds),
    # after charging its ledger: the release was made.
    ledger = PrivacyLedger()
    with pytest.raises(ValueError, match=r"nothing of feature\(s\) 0 stood out.*bounds="):
        DPBoundedScaler(epsilon=0.01, ledger=ledger, random_state=0).fit(X)
    assert len(ledger.records) == 1
    pd = pytest.importorskip("pandas")
    # 60 rows: ages all in one bin stand out; incomes, 3 rows a bin, do not,
    # even merged: the error names the column.
    frame = pd.DataFrame({"age": np.full(60, 40.0), "income": _spread_over_octaves(3, 1)[:, 0]})
    with pytest.raises(ValueError, match=r"nothing of feature\(s\) income stood out"):
        DPBoundedScaler(epsilon=1.0, random_state=0, reproducible=True).fit(frame)
    # 200 rows, incomes 10 a bin: merged blocks stand out for some noise draws
    # (this seed's; 8 of the first 30 seeds), and the warning names them.
    income = _spread_over_octaves(10, 1)[:, 0]
    frame = pd.DataFrame({"age": np.full(200, 40.0), "income": income})
    with pytest.warns(UserWarning, match=r"no bin of feature\(s\) income stood out"):
        scaler = DPBoundedScaler(epsilon=1.0, random_state=3, reproducible=True).fit(frame)
    assert (scaler.lower_[0], scaler.upper_[0]) == (edges[edges < 40][-1], edges[edges >= 40][0])
    assert income.min() <= scaler.lower_[1] < scaler.upper_[1] <= 2 * income.max()


@pytest.mark.parametrize("sigma", [1e-9, 0.37, 1.0, 3.0, 1234.5, 2.0 ** 30, 2.0 ** 51])
def test_the_lattice_never_lowers_the_noise_and_is_tight(sigma):
    k, scale = _histogram_ranges.noise_lattice(sigma)
    realised = fractions.Fraction(scale.scale, 2 ** k)
    assert realised >= fractions.Fraction(sigma)
    # Above the accounted noise by a relative 2**-23 at most (the epsilon
    # reported for sigma is then a bound for the realised noise, and tight).
    assert realised <= fractions.Fraction(sigma) * (1 + fractions.Fraction(1, 2 ** 23))
    assert 1 <= scale.scale <= 2 ** 52


@pytest.mark.parametrize("sigma", [0.0, -1.0, 2.0 ** 52, math.inf, math.nan])
def test_a_noise_beyond_the_lattice_is_refused(sigma):
    with pytest.raises(ValueError, match="exact sampler's range"):
        _histogram_ranges.noise_lattice(sigma)


def _released_lattice(noisy, sigma):
    """The released counts times 2**k, and whether they are all integers."""
    k, _ = _histogram_ranges.noise_lattice(sigma)
    scaled = np.ldexp(noisy, k)
    return scaled, bool(np.all(scaled == np.round(scaled)))


@pytest.mark.parametrize("neighboring", ["replace_one", "add_remove"])
def test_the_release_is_counts_plus_exact_rounded_gaussian_noise(neighboring):
    # Every released count is an integer over 2**k: the counts times 2**k plus
    # round(s G). The noise, s times the lattice, follows the rounded
    # Gaussian's law (chi-square against its exact probabilities).
    X = _table(200)
    z = 1.3
    sigma = histogram_noise_scale(z, X.shape[1], neighboring)
    k, scale = _histogram_ranges.noise_lattice(sigma)
    counts = _counts(X).reshape(X.shape[1], -1)
    draws = []
    rng = np.random.default_rng(21)
    for _ in range(500):
        noisy = noisy_histograms(X, z, neighboring, rng)
        scaled, on_lattice = _released_lattice(noisy, sigma)
        assert on_lattice
        draws.append((scaled - np.ldexp(counts, k)).astype(np.int64).ravel())
    draws = np.concatenate(draws)
    assert draws.size >= 100_000
    # Binned by multiples of s / 4 (the law's mass on each bin, exactly).
    width = scale.scale // 4
    edges = np.arange(-12, 13) * width - width // 2
    cdf = stats.norm.cdf((edges + 0.5) / scale.scale)  # P(round(s G) <= edge)
    expected = np.diff(np.concatenate(([0.0], cdf, [1.0]))) * draws.size
    observed = np.bincount(np.searchsorted(edges, draws, side="left"), minlength=edges.size + 1)
    assert stats.chisquare(observed, expected).pvalue > 1e-4
    # The same test refutes noise 5 percent too small.
    smaller = np.rint(draws * 0.95).astype(np.int64)
    observed = np.bincount(np.searchsorted(edges, smaller, side="left"),
                           minlength=edges.size + 1)
    assert stats.chisquare(observed, expected).pvalue < 1e-6


def test_a_float_gaussian_substituted_back_is_seen_in_the_low_bits(monkeypatch):
    X = _table(200)
    sigma = histogram_noise_scale(1.3, X.shape[1], "replace_one")
    noisy = noisy_histograms(X, 1.3, "replace_one", np.random.default_rng(22))
    assert _released_lattice(noisy, sigma)[1]

    def float_noise(X, noise_multiplier, neighboring, rng):
        edges = histogram_grid()
        counts = np.stack([histogram_counts(X[:, j], edges) for j in range(X.shape[1])])
        return counts + rng.normal(0.0, sigma, counts.shape)

    assert not _released_lattice(float_noise(X, 1.3, "replace_one",
                                             np.random.default_rng(22)), sigma)[1]


def test_large_counts_take_the_integer_sum():
    # A noise scale above 2**24 rows: k = 0, the release is integers.
    X = np.zeros((5, 1))
    z = 2.0 ** 30
    noisy = noisy_histograms(X, z, "add_remove", np.random.default_rng(23))
    assert np.all(noisy == np.round(noisy)) and np.std(noisy) > 2.0 ** 28
