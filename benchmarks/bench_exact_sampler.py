"""The exact rounded Gaussian sampler: its speed per scale, and where a draw's time goes.

Two parts, written together to ``exact_sampler_speed.md``:

* per scale ``s``: nanoseconds per draw of
  ``backends.sample_rounded_gaussian`` on words drawn beforehand (the sampler
  alone, one thread), the 64-bit words a draw uses on average, and the
  nanoseconds per draw of one step's noise at MNIST's shape (7,850 draws)
  as a fit draws it, ChaCha20 words included; medians of ``--rounds``
  rounds;
* the kernel by part, on words drawn beforehand, one thread, at a
  fit's scale ``s = 2**35 + 1`` (noise multiplier 8 on the grid ``k1 = k2
  = 16``): compiled loops that do the common case's parts cumulatively
  (read the word and write a draw; the cell from the lookup table; the
  first link's squeeze and the sign; the rounding from x's 46 bits), then
  the kernel itself on words whose fields settle every draw in the common
  case (f's first bits all ones, no open lookup entry) and on uniform
  words (the rare rest included: open cells, chains, rejections, roundings
  that need more of x).

Run from the repository root::

    NUMBA_NUM_THREADS=1 PYTHONPATH=. python benchmarks/bench_exact_sampler.py [--rounds 3]
    PYTHONPATH=. python benchmarks/bench_exact_sampler.py --quick
"""

import argparse
import os
import statistics
import tempfile
import time
from pathlib import Path

import numpy as np
from numba import njit

from sklearn_dplssgd.backends import (
    ChaChaWords, ExactNoise, RoundedGaussianScale, SecureWords, sample_rounded_gaussian,
)
from sklearn_dplssgd.backends._rounded_gaussian import (
    _F_LEAD_MASK, _LEAD_SHIFT, _SQUEEZE_SHIFT, _Y_MASK, _Y_SHIFT, DIGIT_CAPACITY, F_LEAD_BITS,
    _fill_rounded_gaussian, _kernel_parameters, _rounded_known,
)

PROFILE_SCALE = 2 ** 35 + 1
SCALES = (1, 3, 1000, 2 ** 20, 2 ** 40, 2 ** 52)
# The noise draws of one step at MNIST's shape: K (d + 1) = 10 x 785.
STEP_DRAWS = 7850


class PregeneratedWords:
    """A word source serving words drawn beforehand (a sampler timed alone), counting them.

    With ``chunk``, each request is served ``chunk`` words whatever its size
    (the sampler asks again), so that ``served`` exceeds the words the
    sampler used by less than the last chunk and its request's margin.

    Parameters
    ----------
    words : uint64 array
        The words to serve first; more are drawn from ``fallback`` if needed.
    fallback : object with ``words(count)``
        The source of any words beyond ``words``.
    chunk : int, optional
    """

    def __init__(self, words, fallback, chunk=None):
        self.stock, self.fallback, self.chunk, self.served = words, fallback, chunk, 0

    def words(self, count):
        count = count if self.chunk is None else self.chunk
        if self.served + count > self.stock.size:
            self.stock = np.concatenate((self.stock, self.fallback.words(count)))
        self.served += count
        return self.stock[self.served - count:self.served]


def words_per_draw(sample, scale, fallback, n_draws):
    """The 64-bit words a draw of ``sample`` uses, on average over ``n_draws`` (to 128 / n)."""
    counter = PregeneratedWords(np.empty(0, dtype=np.uint64), fallback, chunk=64)
    sample(n_draws, scale, source=counter)
    return counter.served / n_draws


def scale_rows(n_draws, repeats):
    """{s: (ns per draw on words drawn beforehand, words per draw, ns per draw of a step's
    noise with its ChaCha20 words)}, and ns per ChaCha20 word."""
    source = SecureWords()
    sample_rounded_gaussian(100, RoundedGaussianScale(1), source)  # compile / load
    rows = {}
    for s in SCALES:
        scale = RoundedGaussianScale(s)
        words = words_per_draw(sample_rounded_gaussian, scale, source, min(n_draws, 100_000))
        # Twice the words used: a request beyond the stock would time os.urandom too.
        stock = source.words(int(2 * words * n_draws) + 4096)
        best = best_seconds(
            lambda: sample_rounded_gaussian(n_draws, scale, PregeneratedWords(stock, source)),
            repeats)
        noise = ExactNoise(16, 16, scale, ChaChaWords())
        noise.draw(STEP_DRAWS)
        best_step = best_seconds(lambda: noise.draw(STEP_DRAWS), 10 * repeats)
        rows[s] = (1e9 * best / n_draws, words, 1e9 * best_step / STEP_DRAWS)
    chacha = ChaChaWords()
    return rows, 1e9 * best_seconds(lambda: chacha.words(16_384), 10 * repeats) / 16_384


@njit(cache=True, nogil=True)
def _profile_parts(words, lookup, s, parts, out):
    """The common case's first ``parts`` parts over every word (timing scaffold only).

    1: the word read, a draw written (its fields); 2: and the cell from the
    lookup table; 3: and the first link's squeeze and the sign; 4: and the
    rounding from x's 46 bits. Returns a checksum so that nothing is left out.
    """
    one = np.uint64(1)
    checksum = np.int64(0)
    for n in range(words.shape[0]):
        word = words[n]
        lead = np.int64(word >> _LEAD_SHIFT)
        y = np.int64((word >> _Y_SHIFT) & _Y_MASK)
        f_lead = np.int64((word >> one) & _F_LEAD_MASK)
        value = y
        if parts >= 2:
            cell = np.int64(lookup[lead])
            value += cell
            if parts >= 3:
                settled = cell >= 0 and f_lead > cell >> _SQUEEZE_SHIFT
                if (word & one) == one:
                    value = -value
                checksum += settled
                if parts >= 4:
                    rounded, fixed = _rounded_known(cell, y, s)
                    value += rounded
                    checksum += fixed
        out[n] = value
    return checksum


def best_seconds(function, repeats):
    best = float("inf")
    for _ in range(repeats):
        start = time.perf_counter()
        function()
        best = min(best, time.perf_counter() - start)
    return best


def profile(n_draws, repeats):
    """Rows (part, ns per draw) of this tree's kernel at ``PROFILE_SCALE``, and words per draw."""
    words = SecureWords().words(int(1.2 * n_draws) + 4096)
    parameters = _kernel_parameters(PROFILE_SCALE, DIGIT_CAPACITY, 0)
    lookup = parameters[1]
    out = np.empty(n_draws, dtype=np.int64)
    rows = []
    names = ("read the word, write a draw", "+ the cell (lookup table)",
             "+ the first link's squeeze and the sign", "+ the rounding from x's 46 bits")
    for parts, name in enumerate(names, start=1):
        _profile_parts(words[:n_draws], lookup, np.int64(PROFILE_SCALE), parts, out)
        seconds = best_seconds(lambda: _profile_parts(
            words[:n_draws], lookup, np.int64(PROFILE_SCALE), parts, out), repeats)
        rows.append((name, 1e9 * seconds / n_draws))
    # Every word settled by its fields: f's first bits all ones, an open
    # lookup entry's bucket moved to its neighbour (timing only: not the law).
    settling = words | np.uint64(((1 << F_LEAD_BITS) - 1) << 1)
    leads = (settling >> _LEAD_SHIFT).astype(np.int64)
    settling[lookup[leads] < 0] ^= np.uint64(1 << 48)
    settling[lookup[(settling >> _LEAD_SHIFT).astype(np.int64)] < 0] ^= np.uint64(3 << 48)

    def kernel(stream):
        cursor = np.zeros(3, dtype=np.int64)
        filled = _fill_rounded_gaussian(out, 0, stream, *parameters, cursor)
        assert filled == n_draws, "the profile's words ran out"
        return cursor[0]

    for name, stream in (("the kernel, every draw settled by its word", settling),
                         ("the kernel on uniform words (the rare rest included)", words)):
        kernel(stream)
        rows.append((name, 1e9 * best_seconds(lambda: kernel(stream), repeats) / n_draws))
    return rows, kernel(words) / n_draws


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--quick", action="store_true", help="a smoke run: small and fast")
    parser.add_argument("--out")
    args = parser.parse_args(argv)
    out = Path(args.out) if args.out else (
        Path(tempfile.mkdtemp()) if args.quick else Path(__file__).resolve().parent / "results")
    out.mkdir(parents=True, exist_ok=True)
    n_draws, repeats = (20_000, 1) if args.quick else (1_000_000, 5)
    rounds = 1 if args.quick else args.rounds
    before = os.getloadavg()
    scales = [scale_rows(n_draws, repeats) for _ in range(rounds)]
    # The profile: rounds alternated with nothing else, medians.
    runs = [profile(n_draws, repeats) for _ in range(rounds)]
    after = os.getloadavg()
    command = ("`NUMBA_NUM_THREADS=1 PYTHONPATH=. python benchmarks/bench_exact_sampler.py"
               + (" --quick" if args.quick else f" --rounds {rounds}") + "`")
    lines = [
        "# The exact rounded Gaussian sampler", "",
        f"Written by {command}. Measured on a shared machine (load averages over 1 minute "
        f"{before[0]:.1f} at the start, {after[0]:.1f} at the end): the timings are disturbed "
        "by others' work; medians of the rounds.", "",
        "## Per scale", "",
        f"ns per draw: `sample_rounded_gaussian` on words drawn beforehand ({n_draws:,} draws, "
        f"best of {repeats}), one thread (the sampler alone, not the words' making); words per "
        "draw: the 64-bit words a draw uses on average; step: ns per draw of "
        f"`ExactNoise(16, 16, scale, ChaChaWords()).draw({STEP_DRAWS})`, one step's noise at "
        f"MNIST's shape as a fit draws it (ChaCha20 words and sampler, best of {10 * repeats}).",
        "",
        "| scale s | ns per draw | words per draw | step ns per draw |",
        "|---|---|---|---|",
    ]
    for s in SCALES:
        label = f"2**{s.bit_length() - 1}" if s > 1000 else f"{s}"
        ns, words, step = (statistics.median(run[0][s][field] for run in scales)
                           for field in range(3))
        lines.append(f"| {label} | {ns:.0f} | {words:.2f} | {step:.0f} |")
    lines += ["", "ChaCha20 ns per 64-bit word (`ChaChaWords().words(16384)`): "
              f"{statistics.median(run[1] for run in scales):.1f}."]
    lines += [
        "", "## The kernel by part",
        "",
        f"ns per draw on words drawn beforehand (one thread, {n_draws:,} draws, s = 2**35 + 1, "
        f"best of {repeats}). The first four rows are compiled loops doing the common case's parts "
        "cumulatively (a timing scaffold, not the sampler); the kernel's rows are "
        "`_fill_rounded_gaussian` itself. Words per draw on uniform words: "
        f"{statistics.median(run[1] for run in runs):.3f}.",
        "",
        "| part (cumulative) | ns per draw |",
        "|---|---|",
    ]
    for index, (name, _) in enumerate(runs[0][0]):
        lines.append(f"| {name} | {statistics.median(run[0][index][1] for run in runs):.1f} |")
    (out / "exact_sampler_speed.md").write_text("\n".join(lines) + "\n")
    print("\n".join(lines))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
