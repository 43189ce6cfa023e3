"""Where a fit's randomness comes from: fresh entropy, or a seed that claims nothing.

Every batch and every noise draw of a fit comes from the one generator
:func:`make_generator` returns. Its source decides whether the fit is private
(see the privacy guide's section on seeds).
"""

import copy
import numbers
import warnings

import numpy as np

from ..utils import PrivacyLeakWarning

__all__ = [
    "GeneratorWords",
    "IGNORED_SEED_MESSAGE",
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


def warn_about_seed(random_state, reproducible):
    """The warnings of a fit given a seed: ignored by default, not private when used."""
    if random_state is not None and not reproducible:
        warnings.warn(IGNORED_SEED_MESSAGE, UserWarning)
    if random_state is not None and reproducible:
        warnings.warn(REPRODUCIBLE_MESSAGE, PrivacyLeakWarning)


def make_generator(random_state, reproducible=False):
    """The ``numpy.random.Generator`` that draws a fit's batches and noise.

    By default every fit draws 128 bits of fresh operating-system entropy,
    whatever ``random_state`` is: the noise must not be regenerable by anyone
    who sees the seed (it travels with the model in ``get_params()`` and in
    its pickle), and two clones given the same seed must not share their
    noise (their difference would be noise-free).

    With ``reproducible=True`` the generator is derived from ``random_state``
    so that fits can be repeated exactly (not private). The caller's objects
    are never advanced or kept: a ``Generator`` is copied, a ``SeedSequence``
    only read. A legacy ``RandomState`` is consumed as scikit-learn does, but
    for 128 bits of its output (not 31).

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
        # SeedSequence() draws 128 bits from the operating system's CSPRNG.
        return np.random.default_rng(np.random.SeedSequence()), False
    if isinstance(random_state, np.random.Generator):
        return copy.deepcopy(random_state), True
    if isinstance(random_state, np.random.RandomState):
        words = random_state.randint(0, 2**32, size=4, dtype=np.uint64)
        return np.random.default_rng(np.random.SeedSequence(words.tolist())), True
    return np.random.default_rng(random_state), True


class GeneratorWords:
    """Uniform 64-bit words from a fit's generator: the exact samplers' word source.

    The words are the generator's own bit stream (``random_raw``), so a fit's
    batches, noise and selections are drawn from one secret stream, in the
    order they are asked for.

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
