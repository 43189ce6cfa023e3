"""A fit's generator is an AES-128-CTR keystream, keyed from the operating system.

The known answers are OpenSSL's (through the ``cryptography`` package): for a
key K and a counter c, ``AESCounter`` yields the 128-bit blocks
AES_K(c), AES_K(c + 1), ... with the counter block the little-endian bytes of
the 128-bit integer and each block read as two little-endian 64-bit words.
That is AES-128 in counter mode with a little-endian counter; OpenSSL's CTR
increments its counter block as a big-endian integer, so each block is
computed as the CTR encryption of 16 zero bytes from its own counter block.
"""

import copy
import pickle

import numpy as np
import pytest
from cryptography.hazmat.primitives.ciphers import Cipher, algorithms, modes
from randomgen import AESCounter

from sklearn_dplssgd import DPLSSGDClassifier, DPLSSGDRegressor
from sklearn_dplssgd._training import GeneratorWords, _randomness, make_generator

_KEY = bytes.fromhex("2b7e151628aed2a6abf7158809cf4f3c")  # FIPS-197's example key


def openssl_words(key, counter, n_words):
    """``n_words`` 64-bit words of AES-128-CTR under ``key`` (16 bytes) from block ``counter``."""
    stream = bytearray()
    for block in range((n_words + 1) // 2):
        nonce = ((counter + block) % 2**128).to_bytes(16, "little")
        stream += Cipher(algorithms.AES(key), modes.CTR(nonce)).encryptor().update(bytes(16))
    return np.frombuffer(bytes(stream), dtype="<u8")[:n_words].astype(np.uint64)


def _key_int(key):
    return int.from_bytes(key, "little")


def _key_bytes(words):
    """The 16 key bytes of a key given as two 64-bit words, low word first."""
    return b"".join(int(word).to_bytes(8, "little") for word in words)


def _matches_openssl(bit_generator, key, counter=0, n_words=64):
    return np.array_equal(bit_generator.random_raw(n_words), openssl_words(key, counter, n_words))


@pytest.mark.parametrize("counter", [0, 5, 2**64 - 3, 2**128 - 2])
@pytest.mark.parametrize("aesni", [True, False])
def test_aes_counter_is_openssl_aes_ctr(counter, aesni):
    rng = np.random.default_rng(2024)
    for key in (_KEY, rng.bytes(16)):
        bit_generator = AESCounter(key=_key_int(key), counter=counter)
        if not aesni:
            bit_generator.use_aesni = False  # the portable software AES
        # 67 words: across the 4-block buffer's refills, and an odd count.
        assert _matches_openssl(bit_generator, key, counter, 67)


def test_the_known_answer_fails_for_other_streams():
    # The check above would catch a generator that is not this keystream.
    assert not _matches_openssl(np.random.PCG64(_key_int(_KEY)), _KEY)
    assert not _matches_openssl(AESCounter(key=_key_int(_KEY) ^ 1), _KEY)
    assert not _matches_openssl(AESCounter(key=_key_int(_KEY), counter=1), _KEY)
    assert not _matches_openssl(AESCounter(key=_key_int(_KEY[::-1])), _KEY)


def test_default_key_is_128_bits_from_the_operating_system(monkeypatch):
    asked = []

    def urandom(n):
        asked.append(n)
        return _KEY[:n]

    monkeypatch.setattr(_randomness.os, "urandom", urandom)
    for random_state in (None, 3, np.random.default_rng(3)):
        rng, seeded = make_generator(random_state, reproducible=False)
        assert not seeded and isinstance(rng.bit_generator, AESCounter)
        assert _matches_openssl(rng.bit_generator, _KEY)
    assert asked == [16, 16, 16]
    # reproducible=True without a seed is not seeded either.
    rng, seeded = make_generator(None, reproducible=True)
    assert not seeded and _matches_openssl(rng.bit_generator, _KEY)


def test_default_generators_differ():
    first, _ = make_generator(5)
    second, _ = make_generator(5)
    assert not np.array_equal(first.bit_generator.random_raw(4),
                              second.bit_generator.random_raw(4))


@pytest.mark.parametrize("make_seed, seed_sequence", [
    (lambda: 3, lambda: np.random.SeedSequence(3)),
    (lambda: np.random.SeedSequence(3, spawn_key=(1,)),
     lambda: np.random.SeedSequence(3, spawn_key=(1,))),
    (lambda: np.random.default_rng(3),
     lambda: np.random.SeedSequence(
         np.random.default_rng(3).integers(0, 2**32, size=4, dtype=np.uint64).tolist())),
    (lambda: np.random.RandomState(3),
     lambda: np.random.SeedSequence(
         np.random.RandomState(3).randint(0, 2**32, size=4, dtype=np.uint64).tolist())),
])
def test_reproducible_key_is_derived_from_random_state(make_seed, seed_sequence):
    rng, seeded = make_generator(make_seed(), reproducible=True)
    assert seeded and isinstance(rng.bit_generator, AESCounter)
    key = _key_bytes(seed_sequence().generate_state(2, np.uint64))
    assert _matches_openssl(rng.bit_generator, key)


def test_caller_objects_are_not_advanced():
    generator = np.random.default_rng(11)
    before = copy.deepcopy(generator.bit_generator.state)
    rng, _ = make_generator(generator, reproducible=True)
    rng.random(10)
    assert generator.bit_generator.state == before

    sequence = np.random.SeedSequence(11)
    rng, _ = make_generator(sequence, reproducible=True)
    children = rng.spawn(2)
    assert sequence.n_children_spawned == 0
    # The fit's children are themselves reproducible.
    again = make_generator(sequence, reproducible=True)[0].spawn(2)
    for child, same in zip(children, again):
        np.testing.assert_array_equal(child.random(3), same.random(3))


def test_generator_words_are_the_aes_stream(monkeypatch):
    monkeypatch.setattr(_randomness.os, "urandom", lambda n: _KEY[:n])
    rng, _ = make_generator(None)
    source = GeneratorWords(rng)
    first = source.words(5)
    assert first.dtype == np.uint64 and first.flags.writeable
    rng.bit_generator.random_raw(3)  # the fit's other draws share the stream
    second = source.words(8)
    expected = openssl_words(_KEY, 0, 16)
    np.testing.assert_array_equal(first, expected[:5])
    np.testing.assert_array_equal(second, expected[8:])


def test_generator_survives_pickling():
    # The Dask backend ships the fit's generator to a worker and back.
    rng, _ = make_generator(None)
    rng.random(3)
    copied = pickle.loads(pickle.dumps(rng))
    np.testing.assert_array_equal(copied.random(5), rng.random(5))


def _data():
    rng = np.random.default_rng(0)
    X = rng.uniform(-1, 1, size=(300, 6))
    X /= np.maximum(1.0, np.linalg.norm(X, axis=1))[:, None]
    return X, X @ rng.normal(size=6)


@pytest.mark.filterwarnings("ignore::UserWarning")
@pytest.mark.parametrize("estimator", [
    DPLSSGDClassifier(classes=[0, 1], epsilon=1.0, max_iter=2, batch_size=32),
    DPLSSGDRegressor(epsilon=1.0, max_iter=2, batch_size=32, target_bounds=(-3.0, 3.0)),
])
def test_fits_repeat_only_when_reproducible(estimator):
    X, target = _data()
    y = (target > 0).astype(int) if isinstance(estimator, DPLSSGDClassifier) else target
    seeded = estimator.set_params(random_state=4, reproducible=True)
    first, second = (copy.deepcopy(seeded).fit(X, y) for _ in range(2))
    assert first.coef_.tobytes() == second.coef_.tobytes()
    assert np.asarray(first.intercept_).tobytes() == np.asarray(second.intercept_).tobytes()
    private = estimator.set_params(random_state=4, reproducible=False)
    one, other = (copy.deepcopy(private).fit(X, y) for _ in range(2))
    assert not np.array_equal(one.coef_, other.coef_)


@pytest.mark.filterwarnings("ignore::UserWarning")
def test_fitted_model_keeps_no_generator():
    # The key lives in the fit's generator only: the published model holds none.
    X, target = _data()
    fitted = DPLSSGDClassifier(classes=[0, 1], epsilon=1.0, max_iter=1, batch_size=32)
    fitted.fit(X, (target > 0).astype(int))
    published = pickle.dumps(fitted)
    assert b"AESCounter" not in published and b"numpy.random" not in published
    rng, _ = make_generator(None)
    assert b"AESCounter" in pickle.dumps(rng)  # what the check would find
