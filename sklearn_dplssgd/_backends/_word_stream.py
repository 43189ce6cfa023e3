"""Exact samplers' random words: the word source, the restart of a draw, a uniform integer.

The exact samplers (:mod:`._rounded_gaussian`, :mod:`._discrete_laplace`) are
compiled kernels that see only arrays of uniform 64-bit words and scalars.
:func:`draw_from_word_stream` feeds such a kernel from a word source (any
object with ``words(count)``: a fit's generator through
:class:`~sklearn_dplssgd._training.GeneratorWords`, or :class:`SecureWords`,
the operating system's CSPRNG); when a buffer runs out in the middle of a
draw, that draw is restarted from its first word with the rest of the buffer
followed by fresh words, so the outputs are those an endless stream would
give (a draw is never discarded for being long, which would bias the law).
"""

import os

import numpy as np
from numba import njit

__all__ = [
    "CAPACITY_EXCEEDED",
    "SamplerCapacityError",
    "SecureWords",
    "WORDS_EXHAUSTED",
    "draw_from_word_stream",
    "uniform_below",
]

_INT63_MAX = np.int64(2 ** 63 - 1)


class SecureWords:
    """Uniform 64-bit words from the operating system's CSPRNG (``os.urandom``).

    Any object whose ``words(count)`` returns a writable ``uint64`` array of
    ``count`` uniform words may replace it (the tests pass a seeded one).
    """

    def words(self, count):
        """``count`` uniform words, as a writable uint64 array."""
        raw = bytearray(os.urandom(8 * int(count)))
        return np.frombuffer(raw, dtype="<u8").astype(np.uint64, copy=False)


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
    that ran out (:data:`WORDS_EXHAUSTED` in ``cursor[1]``), which restarts
    there with fresh words appended (module docstring). ``source`` is
    :class:`SecureWords` when None; ``words_per_draw`` words are requested per
    missing draw. Raises :class:`SamplerCapacityError` on
    :data:`CAPACITY_EXCEEDED`.
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
        buffer = buffer[cursor[0]:]
    return out


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
