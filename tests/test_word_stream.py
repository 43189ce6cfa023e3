"""The exact samplers' word plumbing: the secure source, and draws that restart with more words."""

import numpy as np

from sklearn_dplssgd._backends import RoundedGaussianScale, SecureWords, sample_rounded_gaussian


class SeededWords:
    """A deterministic word source for the tests only (the seam the samplers offer)."""

    def __init__(self, seed, per_request=None):
        self.rng = np.random.default_rng(seed)
        self.per_request = per_request
        self.requests = 0
        self.served = 0

    def words(self, count):
        count = count if self.per_request is None else self.per_request
        self.requests += 1
        self.served += count
        return self.rng.integers(0, 2 ** 64, size=count, dtype=np.uint64, endpoint=False)


def test_the_secure_source_gives_distinct_uniform_words():
    words = SecureWords().words(4096)
    assert words.dtype == np.uint64 and words.shape == (4096,) and words.flags.writeable
    assert np.unique(words).size == 4096
    # Each of the 64 bits is set about half the time (binomial, 4096 draws).
    bits = (words[:, None] >> np.arange(64, dtype=np.uint64)) & np.uint64(1)
    assert np.all(np.abs(bits.mean(axis=0) - 0.5) < 0.05)
    draws = sample_rounded_gaussian(10_000, RoundedGaussianScale(2))
    assert abs(draws.mean()) < 0.1 and abs(draws.var() - 4.08) < 0.4


def test_draws_depend_on_the_word_stream_only_not_on_the_buffers():
    # A draw that runs out of words restarts from its first word with more
    # appended: three words a request give the draws of one long request.
    scale = RoundedGaussianScale(3)
    in_one = sample_rounded_gaussian(2000, scale, SeededWords(6, per_request=200_000))
    crumbs = SeededWords(6, per_request=3)
    in_crumbs = sample_rounded_gaussian(2000, scale, crumbs)
    np.testing.assert_array_equal(in_one, in_crumbs)
    assert crumbs.requests > 600
