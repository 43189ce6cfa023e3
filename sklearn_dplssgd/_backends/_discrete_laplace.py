"""The discrete Laplace law on the integers, sampled exactly from random words (Numba).

``P(Y = y) proportional to exp(-e |y|)`` for a public rational ``e = s / t``
(:class:`DiscreteLaplaceScale`): added to an integer query of sensitivity 1
it is ``e``-DP (Ghosh, Roughgarden and Sundararajan, "Universally
utility-maximizing privacy mechanisms", STOC 2009), and as an integer drawn
with integer arithmetic only, no low bit betrays the query. The magnitude is
drawn as ``m a + b`` (``m = max(1, t // s)``), each ``Bernoulli(exp(-p / q))``
by the alternating-series trial of Canonne, Kamath and Steinke ("The
Discrete Gaussian for Differential Privacy", NeurIPS 2020, Algorithm 1), then
a sign bit, a negative zero restarting the draw. A magnitude above
:data:`LARGEST_MAGNITUDE` raises :class:`~._word_stream.SamplerCapacityError`
rather than truncate. The full argument: docs/privacy_argument.rst, "The
discrete Laplace sampler". The words come from a word source through
:func:`~._word_stream.draw_from_word_stream`.
"""

import fractions
import math

import numpy as np
from numba import njit

from ._word_stream import (
    CAPACITY_EXCEEDED, WORDS_EXHAUSTED, draw_from_word_stream, uniform_below,
)

__all__ = [
    "LARGEST_DENOMINATOR",
    "LARGEST_MAGNITUDE",
    "SMALLEST_PARAMETER",
    "DiscreteLaplaceScale",
    "sample_discrete_laplace",
]

# t and s are at most this: every product the kernel forms (m s <= max(s, t),
# b s < t, a uniform below t or below the number of a trial) stays in int64.
LARGEST_DENOMINATOR = 2 ** 62
LARGEST_MAGNITUDE = 2 ** 62
# The smallest e: beyond it a draw could pass LARGEST_MAGNITUDE with a
# probability that is no longer negligible (below exp(-4096) from here).
SMALLEST_PARAMETER = fractions.Fraction(1, 2 ** 50)
# Words requested per missing draw (a draw uses about eight on average).
_WORDS_PER_DRAW = 16


class DiscreteLaplaceScale:
    """The public parameter ``e = s / t`` of the discrete Laplace law ``exp(-e |y|)``.

    Parameters
    ----------
    numerator, denominator : int
        ``s`` and ``t``, positive integers at most ``2**62`` with ``s / t >=
        2**-50`` (:data:`SMALLEST_PARAMETER`).
    """

    def __init__(self, numerator, denominator):
        for name, value in (("numerator", numerator), ("denominator", denominator)):
            if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or not (
                    1 <= value <= LARGEST_DENOMINATOR):
                raise ValueError(
                    f"DiscreteLaplaceScale: {name} must be an integer in [1, 2**62].")
        self.numerator, self.denominator = int(numerator), int(denominator)
        if self.parameter < SMALLEST_PARAMETER:
            raise ValueError(
                "DiscreteLaplaceScale: the parameter s / t must be at least 2**-50 (a noise "
                "scale above 2**50).")

    @classmethod
    def at_most(cls, epsilon):
        """The largest parameter with a denominator ``2**62`` at most ``epsilon``.

        ``epsilon`` itself when its binary fraction fits (a float at or above
        ``2**-10`` always does), otherwise rounded down by less than
        ``2**-62``: the noise is never below the one asked for, and the law
        is ``epsilon``-DP on sensitivity-1 queries.

        Parameters
        ----------
        epsilon : float or fractions.Fraction
            Per-unit privacy loss, at least ``2**-50`` and at most ``2**62``.
        """
        if isinstance(epsilon, bool) or not isinstance(
                epsilon, (int, float, fractions.Fraction, np.integer, np.floating)):
            raise ValueError("DiscreteLaplaceScale.at_most: epsilon must be a number.")
        if isinstance(epsilon, (float, np.floating)) and not math.isfinite(epsilon):
            raise ValueError("DiscreteLaplaceScale.at_most: epsilon must be finite.")
        exact = fractions.Fraction(epsilon)
        if not SMALLEST_PARAMETER <= exact <= LARGEST_DENOMINATOR:
            raise ValueError(
                "DiscreteLaplaceScale.at_most: epsilon must lie in [2**-50, 2**62]; got "
                f"{float(epsilon)!r}.")
        if exact.denominator <= LARGEST_DENOMINATOR:
            return cls(exact.numerator, exact.denominator)
        return cls(math.floor(exact * LARGEST_DENOMINATOR), LARGEST_DENOMINATOR)

    @property
    def parameter(self):
        """``e = s / t`` exactly, as a ``fractions.Fraction``."""
        return fractions.Fraction(self.numerator, self.denominator)

    def epsilon_at_most(self):
        """A float no smaller than ``e`` (the privacy loss per unit, rounded safe)."""
        value = float(self.parameter)
        return value if fractions.Fraction(value) >= self.parameter else math.nextafter(
            value, math.inf)

    def sample(self, count, source=None):
        """``count`` exact draws (:func:`sample_discrete_laplace`)."""
        return sample_discrete_laplace(count, self, source)

    def __repr__(self):
        return f"DiscreteLaplaceScale({self.numerator}, {self.denominator})"

    def __eq__(self, other):
        return isinstance(other, DiscreteLaplaceScale) and self.parameter == other.parameter

    def __hash__(self):
        return hash(("discrete_laplace", self.parameter))


def sample_discrete_laplace(size, scale, source=None):
    """``size`` independent draws of the discrete Laplace law ``exp(-e |y|)``, exactly.

    ``source`` has ``words(count)`` (None: the operating system's CSPRNG).
    Returns int64 draws; a SamplerCapacityError past ``LARGEST_MAGNITUDE``.
    """
    if not isinstance(scale, DiscreteLaplaceScale):
        raise TypeError("sample_discrete_laplace: scale must be a DiscreteLaplaceScale.")
    size = int(size)
    if size < 0:
        raise ValueError("sample_discrete_laplace: size must be non-negative.")
    s, t = scale.numerator, scale.denominator
    return draw_from_word_stream(size, source, _WORDS_PER_DRAW, _fill_discrete_laplace,
                                 np.int64(s), np.int64(t), np.int64(max(1, t // s)),
                                 np.int64(LARGEST_MAGNITUDE))


# ---------------------------------------------------------------------------
# Compiled kernel. ``cursor[1]`` becomes nonzero when the words run out (or a
# draw passes the capacity); every loop checks it so that the kernel stops,
# and the fill restarts the unfinished draw from its first word.
# ---------------------------------------------------------------------------

@njit(cache=True, nogil=True, inline="always")
def _bernoulli_below_one(words, cursor, p, q):
    """Bernoulli(exp(-p / q)) for integers 0 <= p <= q, 1 <= q <= 2**62.

    Counts consecutive successes of Bernoulli(p / (q k)), k = 1, 2, ...; each
    is a trial of p / q and, for k > 1, an independent trial of 1 / k (so no
    product q k is formed). The result is a success when the count is even.
    """
    successes = np.int64(0)
    while cursor[1] == 0:
        if uniform_below(words, cursor, q) >= p:
            break
        if successes > 0 and uniform_below(words, cursor, successes + 1) != 0:
            break
        successes += 1
    return successes % 2 == 0


@njit(cache=True, nogil=True, inline="always")
def _bernoulli_exp(words, cursor, p, q):
    """Bernoulli(exp(-p / q)) for integers p >= 0, 1 <= q <= 2**62."""
    units = p // q
    one = np.int64(1)
    i = np.int64(0)
    while i < units and cursor[1] == 0:
        if not _bernoulli_below_one(words, cursor, one, one):
            return False
        i += 1
    return _bernoulli_below_one(words, cursor, p - units * q, q)


@njit(cache=True, nogil=True, inline="always")
def _discrete_laplace(words, cursor, s, t, m, largest):
    """One draw of P(y) proportional to exp(-s |y| / t), with m = max(1, t // s)."""
    while cursor[1] == 0:
        low = np.int64(0)
        if m > 1:
            while cursor[1] == 0:
                low = uniform_below(words, cursor, m)
                if _bernoulli_exp(words, cursor, low * s, t):
                    break
        high = np.int64(0)
        while cursor[1] == 0 and _bernoulli_exp(words, cursor, m * s, t):
            high += 1
            if high > (largest - low) // m and cursor[1] == 0:
                cursor[1] = CAPACITY_EXCEEDED
        negative = uniform_below(words, cursor, np.int64(2)) == 1
        magnitude = m * high + low
        if cursor[1] != 0 or (negative and magnitude == 0):
            continue
        return -magnitude if negative else magnitude
    return np.int64(0)


@njit(cache=True, nogil=True)
def _fill_discrete_laplace(out, start, words, s, t, m, largest, cursor):
    """Fill ``out[start:]`` until the words run out; return how many entries are filled."""
    for i in range(start, out.shape[0]):
        first_word = cursor[0]
        value = _discrete_laplace(words, cursor, s, t, m, largest)
        if cursor[1] == WORDS_EXHAUSTED:
            cursor[0] = first_word
            return i
        if cursor[1] != 0:
            return i
        out[i] = value
    return out.shape[0]
