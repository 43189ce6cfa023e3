"""The exact rounded Gaussian sampler of two code trees, timed side by side.

Per tree and scale ``s``: nanoseconds per draw of
``backends.sample_rounded_gaussian`` on words drawn beforehand (the sampler
alone, one thread), the 64-bit words a draw uses on average, and the
nanoseconds per draw of one step's noise at MNIST's shape (7,850 draws) as a
fit draws it, ChaCha20 words included. Both trees
define a package named ``sklearn_dplssgd``, so each is timed in its own
subprocess (``--worker``) with the tree first on ``sys.path``; the parent
alternates old and new for ``--rounds`` rounds (the order flips every
round), so that a shared machine's changing load hits both alike, and
reports the medians, the new / old ratios and the load averages. Only the
public sampler is called, so any two trees that have it compare.

Run from the repository root::

    python benchmarks/bench_sampler_revisions.py --old /tmp/oldmain --new . [--rounds 3]
    python benchmarks/bench_sampler_revisions.py --old . --new . --quick

Writes ``exact_sampler_speed.md`` to ``--out`` (default
``benchmarks/results``; ``--quick`` defaults to a temporary folder).
"""

import argparse
import inspect
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

# The scales past 2**30 are timed only in a tree whose sampler takes them.
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
        import numpy as np
        count = count if self.chunk is None else self.chunk
        if self.served + count > self.stock.size:
            self.stock = np.concatenate((self.stock, self.fallback.words(count)))
        self.served += count
        return self.stock[self.served - count:self.served]


def words_per_draw(sample, scale, fallback, n_draws):
    """The 64-bit words a draw of ``sample`` uses, on average over ``n_draws`` (to 128 / n)."""
    import numpy as np
    counter = PregeneratedWords(np.empty(0, dtype=np.uint64), fallback, chunk=64)
    sample(n_draws, scale, source=counter)
    return counter.served / n_draws


def worker(n_draws):
    """Print, as JSON, {s: [ns per draw on words drawn beforehand, words per draw, ns per
    draw of a step's noise with its ChaCha20 words] or None where the tree refuses s},
    and {"chacha": ns per ChaCha20 word}."""
    from sklearn_dplssgd.backends import (
        ChaChaWords, ExactNoise, RoundedGaussianScale, SecureWords, sample_rounded_gaussian,
    )
    source = SecureWords()
    sample_rounded_gaussian(100, RoundedGaussianScale(1), source)  # compile / load
    results = {}
    for s in SCALES:
        try:
            scale = RoundedGaussianScale(s)
        except ValueError:
            results[s] = None
            continue
        words = words_per_draw(sample_rounded_gaussian, scale, source, min(n_draws, 100_000))
        # Twice the words used: more than any tree asks for at once (a
        # request beyond the stock would time os.urandom too).
        stock = source.words(int(2 * words * n_draws) + 4096)
        best = float("inf")
        for _ in range(3):
            start = time.perf_counter()
            sample_rounded_gaussian(n_draws, scale, PregeneratedWords(stock, source))
            best = min(best, time.perf_counter() - start)
        # A step's noise as a fit draws it (MNIST's shape: 7,850 draws), words included.
        # The trees compared may predate the factored grid (one grid_bits argument, not two).
        grid_bits = (16,) * (len(inspect.signature(ExactNoise).parameters) - 2)
        noise = ExactNoise(*grid_bits, scale, ChaChaWords())
        noise.draw(STEP_DRAWS)
        best_step = float("inf")
        for _ in range(30 if n_draws >= 100_000 else 3):
            start = time.perf_counter()
            noise.draw(STEP_DRAWS)
            best_step = min(best_step, time.perf_counter() - start)
        results[s] = [1e9 * best / n_draws, words, 1e9 * best_step / STEP_DRAWS]
    # The words alone: ChaCha20 keystream as a block of a step's noise asks for it.
    chacha = ChaChaWords()
    best_words = float("inf")
    for _ in range(30 if n_draws >= 100_000 else 3):
        start = time.perf_counter()
        chacha.words(16_384)
        best_words = min(best_words, time.perf_counter() - start)
    results["chacha"] = 1e9 * best_words / 16_384
    print(json.dumps(results))


def run_tree(tree, n_draws):
    tree = str(Path(tree).resolve())
    environment = dict(os.environ, PYTHONPATH=tree, NUMBA_NUM_THREADS="1")
    done = subprocess.run([sys.executable, __file__, "--worker", "--draws", str(n_draws)],
                          cwd=tree, env=environment, capture_output=True, text=True, check=True)
    return json.loads(done.stdout.strip().splitlines()[-1])


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--old", help="the old tree's root")
    parser.add_argument("--new", default=".", help="the new tree's root")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--draws", type=int, default=1_000_000)
    parser.add_argument("--quick", action="store_true", help="a smoke run: small and fast")
    parser.add_argument("--worker", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--out")
    args = parser.parse_args(argv)
    if args.worker:
        worker(args.draws)
        return 0
    if args.old is None:
        parser.error("--old is required")
    n_draws, rounds = (20_000, 1) if args.quick else (args.draws, args.rounds)
    out = Path(args.out) if args.out else (
        Path(tempfile.mkdtemp()) if args.quick else Path(__file__).resolve().parent / "results")
    out.mkdir(parents=True, exist_ok=True)
    timings = {"old": [], "new": []}
    loads = [os.getloadavg()]
    for round_ in range(rounds):
        order = ("old", "new") if round_ % 2 == 0 else ("new", "old")
        for name in order:
            timings[name].append(run_tree(getattr(args, name), n_draws))
            print(f"round {round_ + 1} {name}: {timings[name][-1]}", flush=True)
        loads.append(os.getloadavg())
    lines = [
        "# The exact rounded Gaussian sampler: old and new trees",
        "",
        "Written by `python benchmarks/bench_sampler_revisions.py --old <old tree> --new .`"
        + (" --quick" if args.quick else "") + f" ({rounds} rounds, {n_draws:,} draws).",
        "",
        "Measured on a shared machine (load averages over 1 minute before and after each "
        "round: " + ", ".join(f"{load[0]:.1f}" for load in loads) + "): the timings are "
        "disturbed by others' work; the trees were alternated and the medians of the rounds "
        "are given (each round's figure the best of 3 runs). ns per draw: "
        "`sample_rounded_gaussian` on words drawn beforehand, one thread (the sampler alone, "
        "not the words' making); words per draw: the 64-bit words a draw uses on average; "
        "step: ns per draw of `ExactNoise(16, scale, ChaChaWords()).draw(7850)`, one step's "
        "noise at MNIST's shape as a fit draws it (ChaCha20 words and sampler, one thread; "
        "best of 30); ChaCha20: ns per 64-bit word of `ChaChaWords().words(16384)` (best "
        "of 30), the words' share of a step being words per draw times it. A scale a tree "
        "refuses (past its largest s) shows as -.",
        "",
        "| scale s | old ns per draw | new ns per draw | new / old | old words per draw "
        "| new words per draw | old step ns per draw | new step ns per draw |",
        "|---|---|---|---|---|---|---|---|",
    ]

    def median(name, s, field):
        if timings[name][0][str(s)] is None:
            return None
        return statistics.median(r[str(s)][field] for r in timings[name])

    def cell(value, digits=0):
        return "-" if value is None else f"{value:.{digits}f}"

    for s in SCALES:
        old_ns, new_ns = median("old", s, 0), median("new", s, 0)
        ratio = None if old_ns is None or new_ns is None else new_ns / old_ns
        label = f"2**{s.bit_length() - 1}" if s > 1000 else f"{s}"
        lines.append(
            f"| {label} | {cell(old_ns)} | {cell(new_ns)} | {cell(ratio, 2)} "
            f"| {cell(median('old', s, 1), 2)} | {cell(median('new', s, 1), 2)} "
            f"| {cell(median('old', s, 2))} | {cell(median('new', s, 2))} |")
    chacha = {name: statistics.median(r["chacha"] for r in timings[name])
              for name in ("old", "new")}
    lines += ["", f"ChaCha20 ns per word: old tree {chacha['old']:.1f}, new tree "
              f"{chacha['new']:.1f}."]
    (out / "exact_sampler_speed.md").write_text("\n".join(lines) + "\n")
    print("\n".join(lines))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
