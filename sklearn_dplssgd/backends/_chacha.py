"""A ChaCha20 keystream keyed from os.urandom: secure random words at compiled speed (Numba).

The exact sampler needs about 14 uniform 64-bit words a draw; asking the
operating system for every one of them costs more than the draw itself.
:class:`ChaChaWords` asks it once, for a 256-bit key and a 64-bit nonce, and
expands them with the ChaCha20 block function (D. J. Bernstein, "ChaCha, a
variant of Salsa20", 2008; the block function as specified in RFC 8439,
section 2.3, with the original 64-bit block counter in state words 12 and 13
and a 64-bit nonce in words 14 and 15). A stream cipher's keystream under a
secret random key cannot be told from uniform without the key: it is what
the operating system's own generator does. Every instance draws a fresh key,
and its counter never repeats (a 64-bit block counter, checked), so no block
of keystream is ever used twice.

Independent streams for threads: :meth:`ChaChaWords.substream` gives stream
``i`` of an instance, the same key with the nonce ``N xor (i + 1)`` (``N``
the instance's own nonce). Distinct indices give distinct nonces, none equal
to ``N``, and each stream's counter runs from 0 without repeating: so no
input (nonce, counter) of the block function is used twice under the key,
and the blocks of all the streams together are outputs of one pseudorandom
function at distinct inputs, which cannot be told from independent uniform
words without the key. A substream cannot be split again (its streams'
nonces could meet its siblings').
"""

import os

import numpy as np
from numba import njit

__all__ = ["LANES", "ChaChaWords", "chacha20_blocks"]

# "expand 32-byte k", the ChaCha constant words.
_CONSTANTS = np.array([0x61707865, 0x3320646E, 0x79622D32, 0x6B206574], dtype=np.uint32)
_MAX_BLOCKS = 2 ** 64


# Blocks computed side by side (lanes): the quarter rounds then run on
# vectors of lanes, which the compiler turns into SIMD. On an AVX-512 machine
# (shared, loaded) 8 lanes gave about 0.6 GB/s of keystream, 16 lanes 1.5,
# 32 lanes 2.0 and 64 lanes 2.1; a request is rounded up to whole groups
# (32 blocks, 2 KiB), which the next request uses.
LANES = 32
_QUARTER_ROUNDS = ((0, 4, 8, 12), (1, 5, 9, 13), (2, 6, 10, 14), (3, 7, 11, 15),
                   (0, 5, 10, 15), (1, 6, 11, 12), (2, 7, 8, 13), (3, 4, 9, 14))


@njit(cache=True, nogil=True)
def chacha20_blocks(constants, key, nonce, first_block, n_groups, out):
    """Write ``LANES * n_groups`` ChaCha20 keystream blocks (16 uint32 words each) to ``out``.

    Parameters
    ----------
    constants : uint32 array of 4
    key : uint32 array of 8
        The 256-bit key, as little-endian words.
    nonce : uint32 array of 2
        The 64-bit nonce (state words 14 and 15).
    first_block : uint64
        The block counter of the first block (state words 12, low, and 13).
    n_groups : int
    out : uint32 array of at least ``16 * LANES * n_groups``
    """
    state = np.empty((16, LANES), dtype=np.uint32)
    x = np.empty((16, LANES), dtype=np.uint32)
    for group in range(n_groups):
        for j in range(LANES):
            counter = first_block + np.uint64(LANES * group + j)
            for i in range(4):
                state[i, j] = constants[i]
            for i in range(8):
                state[4 + i, j] = key[i]
            state[12, j] = np.uint32(counter & np.uint64(0xFFFFFFFF))
            state[13, j] = np.uint32(counter >> np.uint64(32))
            state[14, j] = nonce[0]
            state[15, j] = nonce[1]
        x[:, :] = state
        for _ in range(10):  # 20 rounds: a column round and a diagonal round each
            for (a, b, c, d) in _QUARTER_ROUNDS:
                for j in range(LANES):
                    # uint32 arithmetic wraps modulo 2**32, as the cipher needs.
                    xa = np.uint32(x[a, j] + x[b, j])
                    xd = x[d, j] ^ xa
                    xd = np.uint32((xd << np.uint32(16)) | (xd >> np.uint32(16)))
                    xc = np.uint32(x[c, j] + xd)
                    xb = x[b, j] ^ xc
                    xb = np.uint32((xb << np.uint32(12)) | (xb >> np.uint32(20)))
                    xa = np.uint32(xa + xb)
                    xd = xd ^ xa
                    xd = np.uint32((xd << np.uint32(8)) | (xd >> np.uint32(24)))
                    xc = np.uint32(xc + xd)
                    xb = xb ^ xc
                    xb = np.uint32((xb << np.uint32(7)) | (xb >> np.uint32(25)))
                    x[a, j] = xa
                    x[b, j] = xb
                    x[c, j] = xc
                    x[d, j] = xd
        for j in range(LANES):
            base = 16 * (LANES * group + j)
            for i in range(16):
                out[base + i] = np.uint32(x[i, j] + state[i, j])


class ChaChaWords:
    """Uniform 64-bit words: the ChaCha20 keystream under a key from ``os.urandom``.

    A word source for ``sample_discrete_gaussian`` (its ``words(count)``).
    The key and nonce are drawn when the instance is made and never leave it;
    successive requests continue the keystream (no block is used twice).

    Parameters
    ----------
    key : bytes of length 32, optional
        For the tests' known-answer vectors only; None (the default) draws a
        fresh key from the operating system. A known key makes the stream
        known to whoever knows it.
    nonce : bytes of length 8, optional
        Likewise.
    first_block : int, default=0
        The block counter of the first block (for the known-answer vectors).
    """

    def __init__(self, key=None, nonce=None, first_block=0):
        key = os.urandom(32) if key is None else bytes(key)
        nonce = os.urandom(8) if nonce is None else bytes(nonce)
        if len(key) != 32 or len(nonce) != 8:
            raise ValueError("ChaChaWords: key must be 32 bytes and nonce 8 bytes.")
        self._key = np.frombuffer(key, dtype="<u4").astype(np.uint32)
        self._nonce = np.frombuffer(nonce, dtype="<u4").astype(np.uint32)
        self._next_block = int(first_block)
        # Whole blocks are generated; the unused words of the last one wait here.
        self._spare = np.empty(0, dtype=np.uint64)
        self._splittable = True

    def substream(self, index):
        """Stream ``index`` of this key: an independent ``ChaChaWords`` (see the module notes).

        The same index gives the same words again (a block of work computed
        twice draws the same noise), so each stream must feed one use only.

        Parameters
        ----------
        index : int
            In ``[0, 2**64 - 1)``.
        """
        index = int(index)
        if not self._splittable:
            raise ValueError("ChaChaWords.substream: a substream cannot be split again.")
        if not 0 <= index < 2 ** 64 - 1:
            raise ValueError("ChaChaWords.substream: index must be in [0, 2**64 - 1).")
        nonce = int.from_bytes(self._nonce.astype("<u4").tobytes(), "little") ^ (index + 1)
        stream = ChaChaWords(key=self._key.astype("<u4").tobytes(),
                             nonce=nonce.to_bytes(8, "little"))
        stream._splittable = False
        return stream

    def words(self, count):
        """The next ``count`` words of the keystream, as a writable uint64 array."""
        count = int(count)
        if count < 0:
            raise ValueError("ChaChaWords.words: count must be non-negative.")
        needed = max(0, count - self._spare.size)
        n_groups = -(-needed // (8 * LANES))  # a block holds 8 uint64 words
        n_blocks = LANES * n_groups
        if self._next_block + n_blocks > _MAX_BLOCKS:
            raise RuntimeError("ChaChaWords: the keystream is exhausted; make a new instance.")
        # The keystream is written straight into the returned array, after
        # the spare words of the last request (no further copy of the bulk).
        held = self._spare.size
        stream = np.empty(held + 8 * n_blocks, dtype=np.uint64)
        stream[:held] = self._spare
        chacha20_blocks(_CONSTANTS, self._key, self._nonce, np.uint64(self._next_block),
                        n_groups, stream[held:].view(np.uint32))
        self._next_block += n_blocks
        self._spare = stream[count:].copy()
        return stream[:count]
