"""The ChaCha20 word source against known-answer vectors."""

import numpy as np
import pytest

from sklearn_dplssgd.backends._chacha import ChaChaWords
from sklearn_dplssgd.backends._discrete_gaussian import (
    DiscreteGaussianScale, sample_discrete_gaussian,
)

# RFC 8439, section 2.3.2: key 00 01 .. 1f, nonce 00 00 00 09 00 00 00 4a 00 00 00 00,
# block counter 1, and the block after it. In the 64-bit counter layout the
# first nonce word is the counter's high half.
RFC_KEYSTREAM = (
    "10f1e7e4d13b5915500fdd1fa32071c4c7d1f4c733c068030422aa9ac3d46c4e"
    "d2826446079faa0914c2d705d98b02a2b5129cd1de164eb9cbd083e8a2503c4e"
    "0a88837739d7bf4ef8ccacb0ea2bb9d69d56c394aa351dfda5bf459f0a2e9fe8"
    "e721f89255f9c486bf21679c683d4f9c5cf2fa27865526005b06ca374c86af3b")
# From an independent implementation (OpenSSL through the cryptography
# package): key bytes (37 i + 11) mod 256, block counter 2**32 + 5 (its high
# half in state word 13), nonce words 7 and 9.
WIDE_COUNTER_KEYSTREAM = (
    "4806645e6fa0683785b3b49487d489cd53e3058cb4b5e577649a2283c348f40d"
    "d1b84b6bb74a12542f8810ffcd4df30553104d705812b6bd8097176c6be2be40"
    "994ce0d94d07e4ecc82352af96f5e59942d4e75c692013fc28ecf5ff19680201"
    "2243efce8742cc2985d8eee49ecf9598f2a7b9830b946c34d60759fd76569ebb")


def keystream_hex(source, n_words):
    return source.words(n_words).astype("<u8").tobytes().hex()


def test_the_rfc_8439_block_function_vector():
    source = ChaChaWords(key=bytes(range(32)), nonce=bytes.fromhex("0000004a00000000"),
                         first_block=1 + (0x09000000 << 32))
    assert keystream_hex(source, 16) == RFC_KEYSTREAM


def test_a_vector_with_the_counter_above_32_bits():
    source = ChaChaWords(key=bytes((37 * i + 11) % 256 for i in range(32)),
                         nonce=(7).to_bytes(4, "little") + (9).to_bytes(4, "little"),
                         first_block=2 ** 32 + 5)
    assert keystream_hex(source, 16) == WIDE_COUNTER_KEYSTREAM


def test_requests_continue_one_keystream():
    key, nonce = bytes(range(1, 33)), bytes(8)
    whole = ChaChaWords(key=key, nonce=nonce).words(1000)
    pieces = ChaChaWords(key=key, nonce=nonce)
    parts = [pieces.words(count) for count in (3, 0, 61, 64, 1, 871)]
    np.testing.assert_array_equal(np.concatenate(parts), whole)
    assert all(part.flags.writeable and part.dtype == np.uint64 for part in parts)


def test_fresh_instances_draw_fresh_keys_and_feed_the_sampler():
    first, second = ChaChaWords().words(64), ChaChaWords().words(64)
    assert not np.array_equal(first, second)
    draws = sample_discrete_gaussian(20_000, DiscreteGaussianScale.at_least(3.0),
                                     source=ChaChaWords())
    assert abs(draws.mean()) < 0.1 and abs(draws.var() - 9.0) < 0.5


@pytest.mark.parametrize("arguments", [dict(key=bytes(31)), dict(nonce=bytes(12))])
def test_bad_key_or_nonce_is_refused(arguments):
    with pytest.raises(ValueError, match="ChaChaWords"):
        ChaChaWords(**arguments)
