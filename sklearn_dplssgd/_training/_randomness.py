"""Where a fit's randomness comes from: fresh entropy, or a seed that claims nothing.

Every batch and every noise draw of a fit comes from the one generator
:func:`make_generator` returns: a NumPy ``Generator`` on an AES-128 counter-mode
keystream (``randomgen.AESCounter``, AES-NI where the CPU has it). Its key
decides whether the fit is private (see the privacy guide's section on seeds).
"""

import copy
import numbers
import os
import warnings

import numpy as np
from randomgen import AESCounter

from .._utils import PrivacyLeakWarning

__all__ = [
    "GeneratorWords",
    "IGNORED_SEED_MESSAGE",
    "derived_generator",
    "REPRODUCIBLE_MESSAGE",
    "make_generator",
    "random_state_error",
    "warn_about_seed",
]


def random_state_error(value):
    """The ``random_state`` constraint: a message, or None when valid."""
    if value is None or isinstance(
        value, (np.random.Generator, np.random.RandomState, np.random.SeedSequence)
    ):
        return None
    if isinstance(value, numbers.Integral) and not isinstance(value, (bool, np.bool_)):
        return None if value >= 0 else f"must be a non-negative int; got {value!r}."
    return (
        "must be None, a non-negative int, a numpy Generator, RandomState or "
        f"SeedSequence; got {value!r}."
    )


IGNORED_SEED_MESSAGE = (
    "random_state is not used to draw the noise and the batches unless "
    "reproducible=True: a seed that others may know (it is in the model's "
    "get_params() and its pickle) would let them regenerate the noise and "
    "remove it, and clones sharing a seed would share their noise. The fit "
    "draws fresh operating-system entropy instead."
)
REPRODUCIBLE_MESSAGE = (
    "reproducible=True: the noise and the batches are a function of "
    "random_state, which the model's get_params() and pickle carry, so "
    "anyone holding the model can regenerate the noise and remove it. The fit "
    "is not private and reports epsilon_=inf; use it for tests and research "
    "on public data only."
)


# AES-128 takes a 128-bit key.
_KEY_BYTES = 16


def warn_about_seed(random_state, reproducible):
    """The warnings of a fit given a seed: ignored by default, not private when used."""
    if random_state is not None and not reproducible:
        warnings.warn(IGNORED_SEED_MESSAGE, UserWarning)
    if random_state is not None and reproducible:
        warnings.warn(REPRODUCIBLE_MESSAGE, PrivacyLeakWarning)


def make_generator(random_state, reproducible=False):
    """The ``numpy.random.Generator`` that draws a fit's batches and noise.

    Its bit generator is AES-128 in counter mode (``randomgen.AESCounter``):
    every draw of the fit is a function of one AES-CTR keystream, which
    nobody without the key can predict or tell from uniform bits.

    By default the key is 128 bits from the operating system's
    cryptographically secure source (``os.urandom``), whatever
    ``random_state`` is: the noise must not be regenerable by anyone who sees
    the seed (it travels with the model in ``get_params()`` and in its
    pickle), and two clones given the same seed must not share their noise
    (their difference would be noise-free).

    With ``reproducible=True`` the key is derived from ``random_state`` so
    that fits can be repeated exactly (not private): an int or a
    ``SeedSequence`` is read through a ``SeedSequence``, a ``Generator`` gives
    128 bits drawn from a copy of it, a legacy ``RandomState`` is consumed as
    scikit-learn does, but for 128 bits of its output (not 31); the key is
    that ``SeedSequence``'s ``generate_state(2, uint64)``, low word first.
    The caller's objects are never advanced or kept.

    Parameters
    ----------
    random_state : None, int, Generator, RandomState or SeedSequence
    reproducible : bool, default=False

    Returns
    -------
    rng : numpy.random.Generator
        A generator owned by the fit alone.
    seeded : bool
        Whether the generator is a function of ``random_state`` (the fit is
        then reproducible and not private).
    """
    if not reproducible or random_state is None:
        key = int.from_bytes(os.urandom(_KEY_BYTES), "little")
        # The bit generator also takes a SeedSequence of fresh OS entropy of
        # its own, unrelated to the key: Generator.spawn's children (the
        # PyTorch noise's seed) are fresh too.
        return np.random.Generator(AESCounter(key=key)), False
    return np.random.Generator(_keyed_bit_generator(_seed_sequence(random_state))), True


def derived_generator(entropy):
    """An AES-CTR generator keyed from ``entropy`` (a sequence of non-negative ints).

    For a draw that must be repeatable from secret words of a fit's own
    generator (a Dask partition's batches at a step, from the partition's
    secret seed and the step): as secret as those words.
    """
    return np.random.Generator(_keyed_bit_generator(np.random.SeedSequence(list(entropy))))


def _keyed_bit_generator(seed_sequence):
    """AES-CTR keyed by ``seed_sequence.generate_state(2, uint64)``.

    That is how ``AESCounter`` keys itself from a ``SeedSequence``; seeded so
    (rather than given the key) it keeps the sequence, and
    ``Generator.spawn`` gives children that are themselves reproducible.
    """
    return AESCounter(seed=seed_sequence)


def _seed_sequence(random_state):
    """A ``SeedSequence`` of the fit's own, read from ``random_state`` without advancing it."""
    if isinstance(random_state, np.random.SeedSequence):
        # A copy: spawning children from the fit's generator must not count
        # against the caller's sequence.
        return np.random.SeedSequence(
            random_state.entropy, spawn_key=random_state.spawn_key,
            pool_size=random_state.pool_size,
            n_children_spawned=random_state.n_children_spawned)
    if isinstance(random_state, np.random.Generator):
        words = copy.deepcopy(random_state).integers(0, 2**32, size=4, dtype=np.uint64)
    elif isinstance(random_state, np.random.RandomState):
        words = random_state.randint(0, 2**32, size=4, dtype=np.uint64)
    else:
        return np.random.SeedSequence(random_state)
    return np.random.SeedSequence(words.tolist())


class GeneratorWords:
    """Uniform 64-bit words from a fit's generator: the exact samplers' word source.

    The words are the generator's own bit stream (``random_raw``): for a
    generator of :func:`make_generator`, consecutive 64-bit words of its
    AES-CTR keystream. A fit's batches, noise and selections are so drawn from
    one secret stream, in the order they are asked for.

    Parameters
    ----------
    rng : numpy.random.Generator
        The fit's generator (:func:`make_generator`); it is advanced.
    """

    def __init__(self, rng):
        self._bits = rng.bit_generator

    def words(self, count):
        """The next ``count`` words, as a writable uint64 array."""
        return np.asarray(self._bits.random_raw(int(count)), dtype=np.uint64)
