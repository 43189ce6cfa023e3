"""The discrete Gaussian on the integers, sampled exactly from secure random words (Numba).

The sampler is Algorithm 3 of Canonne, Kamath and Steinke, "The Discrete
Gaussian for Differential Privacy" (NeurIPS 2020): discrete Laplace proposals
of integer scale ``t``, each accepted with probability
``exp(-(|y| - s^2 / t)^2 / (2 s^2))``, that Bernoulli drawn by the alternating
series of their Algorithm 1 from Bernoulli trials of rational probability. It
is written here anew, with integer arithmetic only: every probability is a
ratio of two int64 numbers and every Bernoulli trial an exact comparison of a
uniform integer with the numerator. No floating-point value takes part in a
draw, so the output's law is the discrete Gaussian exactly (up to the public
truncation of :data:`PROPOSAL_LIMIT`, below), not a float64 approximation of
it whose low bits could betray the data.

The variance is a public rational ``s^2 = t m / Q`` (:class:`DiscreteGaussianScale`):
then ``s^2 / t = m / Q`` and the acceptance exponent is
``(Q |y| - m)^2 / (2 t m Q)``, a ratio of integers that fit int64 when
``2 t m Q <= 2**53`` (checked when the scale is built).

Randomness: uniform 64-bit words from a word source, by default
:class:`SecureWords` (the operating system's CSPRNG, ``os.urandom``), drawn in
Python in bulk and consumed by the compiled kernel, which sees only arrays
and scalars. NumPy's ``Generator`` is never used here. The kernel's output is
a deterministic function of the stream of words; when a buffer runs out in
the middle of a draw, that draw is restarted from its first word with the
rest of the buffer followed by fresh words, so the outputs are those an
endless stream would give (a draw is never discarded for being long, which
would bias the law).
"""

import fractions
import math
import os

import numpy as np
from numba import njit

__all__ = [
    "CAPACITY_EXCEEDED",
    "DiscreteGaussianScale",
    "MAX_DENOMINATOR",
    "PROPOSAL_LIMIT_BITS",
    "SamplerCapacityError",
    "SecureWords",
    "WORDS_EXHAUSTED",
    "draw_from_word_stream",
    "sample_discrete_gaussian",
    "uniform_below",
]

# 2 t m Q, the denominator of the acceptance exponent, stays at most this:
# its numerator (Q |y| - m)^2 then fits int64 up to |y| of about 40 s (a
# proposal beyond it takes the slower exact product form, see _accept).
MAX_DENOMINATOR = 2 ** 53
# Proposals of |y| * Q beyond 2**PROPOSAL_LIMIT_BITS are rejected (the law is
# the discrete Gaussian conditioned on |y| <= 2**62 / Q; with s Q <= 2**26 the
# mass left out is below exp(-2**70): see the privacy argument).
PROPOSAL_LIMIT_BITS = 62
_INT63_MAX = np.int64(2 ** 63 - 1)
_SQRT_INT63 = np.int64(3037000499)  # floor(sqrt(2**63 - 1)): a*a fits int64 below it
# Words drawn per requested sample in one request to the source (the kernel
# uses about 10 to 14; a short buffer only costs another request).
_WORDS_PER_SAMPLE = 16


class DiscreteGaussianScale:
    """The public variance ``s^2 = t * m / Q`` of a discrete Gaussian, as integers.

    Parameters
    ----------
    t : int
        The scale of the discrete Laplace proposals (any ``t >= 1`` is exact;
        ``floor(s) + 1`` is the efficient choice).
    m, q : int
        Positive integers with ``s^2 = t * m / q``.

    Raises
    ------
    ValueError
        If a number is not a positive integer or ``2 t m q`` exceeds
        :data:`MAX_DENOMINATOR`.
    """

    def __init__(self, t, m, q):
        for name, value in (("t", t), ("m", m), ("q", q)):
            if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or value < 1:
                raise ValueError(f"DiscreteGaussianScale: {name} must be a positive integer.")
        self.t, self.m, self.q = int(t), int(m), int(q)
        if 2 * self.t * self.m * self.q > MAX_DENOMINATOR:
            raise ValueError(
                "DiscreteGaussianScale: 2 t m q must be at most 2**53 (the scale is too large "
                "or its grid too fine for exact int64 arithmetic).")

    @classmethod
    def at_least(cls, std):
        """The scale on the public grid whose variance is the smallest at or above ``std**2``.

        The grid: ``t = floor(std) + 1`` and ``Q`` the largest power of two with
        ``std * Q <= 2**26``, then ``m = ceil(std**2 Q / t)`` exactly (the float
        ``std`` is a rational). The variance exceeds ``std**2`` by less than
        ``t / Q`` (a relative ``2**-25`` or less above ``std = 1``), so the noise
        is never below the one requested.

        Parameters
        ----------
        std : float
            The smallest standard deviation acceptable, ``0 < std <= 2**25``.
        """
        if not (isinstance(std, (int, float, np.floating, np.integer))
                and math.isfinite(std) and 0 < std <= 2 ** 25):
            raise ValueError("DiscreteGaussianScale.at_least: std must be in (0, 2**25].")
        t = math.floor(std) + 1
        q = 2 ** max(0, math.floor(26 - math.log2(std)))
        while True:
            m = math.ceil(fractions.Fraction(float(std)) ** 2 * q / t)
            if 2 * t * m * q <= MAX_DENOMINATOR or q == 1:
                return cls(t, m, q)
            q //= 2

    def sample(self, count, source=None):
        """``count`` exact draws of ``N_Z(0, s^2)`` (:func:`sample_discrete_gaussian`)."""
        return sample_discrete_gaussian(count, self, source)

    @property
    def std(self):
        """``s`` as a float: the scale parameter of the law (as the rounded Gaussian's)."""
        return math.sqrt(float(self.variance))

    @property
    def variance(self):
        """``s^2`` exactly, as a ``fractions.Fraction``."""
        return fractions.Fraction(self.t * self.m, self.q)

    def variance_at_most(self):
        """A float no larger than ``s^2`` (what an accountant may assume; it errs safe)."""
        value = float(self.variance)
        return value if fractions.Fraction(value) <= self.variance else math.nextafter(value, 0)

    def __repr__(self):
        return f"DiscreteGaussianScale(t={self.t}, m={self.m}, q={self.q})"

    def __eq__(self, other):
        return isinstance(other, DiscreteGaussianScale) and (
            (self.t, self.m, self.q) == (other.t, other.m, other.q))

    def __hash__(self):
        return hash((self.t, self.m, self.q))


class SecureWords:
    """Uniform 64-bit words from the operating system's CSPRNG (``os.urandom``).

    The sampler's production word source. Any object with a ``words(count)``
    method returning a writable ``uint64`` array of ``count`` uniform words
    may replace it (the tests pass a deterministic one).
    """

    def words(self, count):
        """``count`` uniform words, as a writable uint64 array."""
        raw = bytearray(os.urandom(8 * int(count)))
        return np.frombuffer(raw, dtype="<u8").astype(np.uint64, copy=False)


def sample_discrete_gaussian(size, scale, source=None):
    """``size`` independent draws of the discrete Gaussian ``N_Z(0, s^2)``, exactly.

    Parameters
    ----------
    size : int
        How many draws.
    scale : DiscreteGaussianScale
        The public variance.
    source : object with ``words(count)``, optional
        Where the random words come from; :class:`SecureWords` when None.

    Returns
    -------
    ndarray of int64, shape (size,)
    """
    if not isinstance(scale, DiscreteGaussianScale):
        raise TypeError("sample_discrete_gaussian: scale must be a DiscreteGaussianScale.")
    size = int(size)
    if size < 0:
        raise ValueError("sample_discrete_gaussian: size must be non-negative.")
    limit = np.int64((2 ** PROPOSAL_LIMIT_BITS) // scale.q)
    return draw_from_word_stream(size, source, _WORDS_PER_SAMPLE, _fill_discrete_gaussian,
                                 np.int64(scale.t), np.int64(scale.m), np.int64(scale.q), limit)


class SamplerCapacityError(RuntimeError):
    """An exact sampler needed more random digits than its fixed capacity holds.

    The sampler fails closed rather than truncate a draw (which would bias its
    law); the event's probability is negligible (see the sampler's module).
    """


# The codes a fill kernel leaves in ``cursor[1]``: the words ran out (the
# unfinished draw restarts with more), or a draw passed the sampler's capacity.
WORDS_EXHAUSTED = 1
CAPACITY_EXCEEDED = 2


def draw_from_word_stream(size, source, words_per_draw, fill, *parameters):
    """``size`` int64 draws of a compiled ``fill`` kernel fed from a word source.

    The kernel is called as ``fill(out, start, words, *parameters, cursor)``:
    it fills ``out[start:]`` until the words run out and returns how many
    entries are filled, leaving in ``cursor[0]`` the first word of the draw
    that ran out (:data:`WORDS_EXHAUSTED` in ``cursor[1]``). That draw is
    restarted there with fresh words appended, so that the outputs are those
    an endless stream of words would give: a draw is never discarded for
    being long, which would bias the law. A kernel that reads half-words
    leaves in ``cursor[2]`` the half of word ``cursor[0]`` where that draw
    starts, and reads it there on the next call (others leave it 0).

    Parameters
    ----------
    size : int
        How many draws.
    source : object with ``words(count)`` or None
        Where the random words come from; :class:`SecureWords` when None.
    words_per_draw : int or float
        Words requested per missing draw (a short request only costs another).
    fill : compiled function
        The kernel (see above).
    *parameters
        The kernel's scalars, between ``words`` and ``cursor``.

    Returns
    -------
    ndarray of int64, shape (size,)

    Raises
    ------
    SamplerCapacityError
        If the kernel reports :data:`CAPACITY_EXCEEDED`.
    """
    source = SecureWords() if source is None else source
    out = np.empty(size, dtype=np.int64)
    done = 0
    buffer = np.empty(0, dtype=np.uint64)
    cursor = np.zeros(3, dtype=np.int64)
    while done < size:
        fresh = np.ascontiguousarray(source.words(int(words_per_draw * (size - done)) + 64),
                                     dtype=np.uint64)
        buffer = np.concatenate((buffer, fresh)) if buffer.size else fresh
        # A new buffer starts at its first word, in the half-word left (if any).
        cursor[0] = cursor[1] = 0
        done = fill(out, done, buffer, *parameters, cursor)
        if cursor[1] == CAPACITY_EXCEEDED:
            raise SamplerCapacityError(
                "the exact sampler needed more random digits than its capacity in one draw "
                "(an event of negligible probability); it refuses to truncate the draw.")
        # cursor[0]: the first word of the draw that ran out (the words before
        # it are spent); the draw restarts there with more words appended.
        buffer = buffer[cursor[0]:]
    return out


# ---------------------------------------------------------------------------
# Compiled kernel. ``cursor[0]`` is the next word, ``cursor[1]`` is set to 1
# when the words run out; every loop checks it so that the kernel stops. The
# helpers are inlined: a call passing arrays costs reference counting that
# made the sampler three times slower.
# ---------------------------------------------------------------------------

@njit(cache=True, nogil=True, inline="always")
def uniform_below(words, cursor, n):
    """A uniform integer in [0, n), 1 <= n < 2**63, from 63-bit words by rejection."""
    # 2**63 mod n: words below it are rejected so that the rest, 2**63 - rem
    # values, split into whole blocks of n.
    rem = ((_INT63_MAX % n) + 1) % n
    while cursor[0] < words.shape[0]:
        value = np.int64(words[cursor[0]] >> np.uint64(1))
        cursor[0] += 1
        if value >= rem:
            return value % n
    cursor[1] = WORDS_EXHAUSTED
    return np.int64(0)


@njit(cache=True, nogil=True, inline="always")
def _bernoulli_ratio(words, cursor, num, den):
    """Bernoulli(num / den) for integers 0 <= num <= den."""
    if num >= den:
        return True
    if num <= 0:
        return False
    return uniform_below(words, cursor, den) < num


@njit(cache=True, nogil=True, inline="always")
def _bernoulli_exp_fraction(words, cursor, num, den):
    """Bernoulli(exp(-num / den)) for 0 <= num <= den (CKS Algorithm 1, gamma in [0, 1]).

    Counts the trials A_k ~ Bernoulli(gamma / k) until one fails; the result
    is 1 when that count is odd. Bernoulli(gamma / k) is drawn as
    Bernoulli(gamma) and Bernoulli(1 / k), two independent exact trials (no
    product den * k that could overflow).
    """
    k = np.int64(1)
    while cursor[1] == 0:
        if not _bernoulli_ratio(words, cursor, num, den):
            break
        if k > 1 and uniform_below(words, cursor, k) != 0:
            break
        k += 1
    return k % 2 == 1


@njit(cache=True, nogil=True, inline="always")
def _bernoulli_exp(words, cursor, num, den):
    """Bernoulli(exp(-num / den)) for integers num >= 0, den >= 1: exp(-1) per whole unit."""
    whole = num // den
    i = np.int64(0)
    while i < whole and cursor[1] == 0:
        if not _bernoulli_exp_fraction(words, cursor, np.int64(1), np.int64(1)):
            return False
        i += 1
    return _bernoulli_exp_fraction(words, cursor, num - whole * den, den)


@njit(cache=True, nogil=True, inline="always")
def _discrete_laplace(words, cursor, t, limit):
    """A draw of P(y) proportional to exp(-|y| / t), |y| <= limit (CKS Algorithm 2, s = 1)."""
    while cursor[1] == 0:
        u = uniform_below(words, cursor, t)
        if not _bernoulli_exp(words, cursor, u, t):
            continue
        v = np.int64(0)
        one = np.int64(1)
        while cursor[1] == 0 and _bernoulli_exp_fraction(words, cursor, one, one):
            v += 1
        if v > (limit - u) // t:
            continue  # beyond the public truncation: a rejection, never an overflow
        x = u + t * v
        negative = uniform_below(words, cursor, np.int64(2)) == 1
        if negative and x == 0:
            continue
        return -x if negative else x
    return np.int64(0)


@njit(cache=True, nogil=True, inline="always")
def _accept(words, cursor, a, den):
    """Bernoulli(exp(-a**2 / den)) for integers a >= 0, den >= 1.

    Below sqrt(2**63) the exponent is the int64 ratio a*a / den. Beyond it (a
    proposal some 40 standard deviations out, never met in practice) it is the
    product of ``a`` independent Bernoulli(exp(-a / den)) trials, exact as well.
    """
    if a <= _SQRT_INT63:
        return _bernoulli_exp(words, cursor, a * a, den)
    i = np.int64(0)
    while i < a and cursor[1] == 0:
        if not _bernoulli_exp(words, cursor, a, den):
            return False
        i += 1
    return True


@njit(cache=True, nogil=True, inline="always")
def _discrete_gaussian(words, cursor, t, m, q, limit):
    """One draw of N_Z(0, t m / q) (CKS Algorithm 3)."""
    den = 2 * t * m * q
    while cursor[1] == 0:
        y = _discrete_laplace(words, cursor, t, limit)
        a = abs(q * abs(y) - m)
        if _accept(words, cursor, a, den):
            return y
    return np.int64(0)


@njit(cache=True, nogil=True)
def _fill_discrete_gaussian(out, start, words, t, m, q, limit, cursor):
    """Fill ``out[start:]`` until the words run out; return how many entries are filled.

    On return ``cursor[0]`` is the first word of the unfinished draw (or the
    end of the words used when all are filled).
    """
    for i in range(start, out.shape[0]):
        first_word = cursor[0]
        value = _discrete_gaussian(words, cursor, t, m, q, limit)
        if cursor[1] != 0:
            cursor[0] = first_word
            return i
        out[i] = value
    return out.shape[0]
