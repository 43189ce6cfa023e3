"""The exact rounded Gaussian sampler: its speed against an older revision, and where it goes.

Two parts, written together to ``exact_sampler_speed.md``:

* old against new: ``bench_sampler_revisions.py`` run on an older revision
  of the package (``--old-rev``, extracted with ``git archive``; or a tree,
  ``--old``) and this tree, alternated round by round: ns per draw of
  ``sample_rounded_gaussian`` on words drawn beforehand, words per draw,
  and ns per draw of a step's noise at MNIST's shape with its ChaCha20
  words;
* this tree's kernel by part, on words drawn beforehand, one thread, at a
  fit's scale ``s = 2**35 + 1`` (noise multiplier 8 on the grid ``k1 = k2
  = 16``): compiled loops that do the common case's parts cumulatively
  (read the word and write a draw; the cell from the lookup table; the
  first link's squeeze and the sign; the rounding from x's 46 bits), then
  the kernel itself on words whose fields settle every draw in the common
  case (f's first bits all ones, no open lookup entry) and on uniform
  words (the rare rest included: open cells, chains, rejections, roundings
  that need more of x).

Run from the repository root::

    PYTHONPATH=. python benchmarks/bench_exact_sampler.py --old-rev 2c50df4 [--rounds 3]
    PYTHONPATH=. python benchmarks/bench_exact_sampler.py --old . --quick
"""

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
from numba import njit

sys.path.insert(0, str(Path(__file__).resolve().parent))
import bench_sampler_revisions  # noqa: E402

from sklearn_dplssgd.backends import SecureWords  # noqa: E402
from sklearn_dplssgd.backends._rounded_gaussian import (  # noqa: E402
    _F_LEAD_MASK, _LEAD_SHIFT, _SQUEEZE_SHIFT, _Y_MASK, _Y_SHIFT, DIGIT_CAPACITY, F_LEAD_BITS,
    _fill_rounded_gaussian, _kernel_parameters, _rounded_known,
)

PROFILE_SCALE = 2 ** 35 + 1


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


def old_tree(args, scratch):
    """The old tree's root: ``--old``, or ``--old-rev`` extracted into ``scratch``."""
    if args.old:
        return args.old
    root = Path(__file__).resolve().parent.parent
    archive = subprocess.run(["git", "archive", args.old_rev, "sklearn_dplssgd"], cwd=root,
                             capture_output=True, check=True).stdout
    subprocess.run(["tar", "-x", "-C", scratch], input=archive, check=True)
    return scratch


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    old = parser.add_mutually_exclusive_group(required=True)
    old.add_argument("--old", help="the old tree's root")
    old.add_argument("--old-rev", help="the old revision (git), extracted to a scratch folder")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--quick", action="store_true", help="a smoke run: small and fast")
    parser.add_argument("--out")
    args = parser.parse_args(argv)
    out = Path(args.out) if args.out else (
        Path(tempfile.mkdtemp()) if args.quick else Path(__file__).resolve().parent / "results")
    out.mkdir(parents=True, exist_ok=True)
    n_draws, repeats = (20_000, 1) if args.quick else (1_000_000, 5)
    with tempfile.TemporaryDirectory() as scratch, tempfile.TemporaryDirectory() as table_dir:
        root = str(Path(__file__).resolve().parent.parent)
        compare = ["--old", old_tree(args, scratch), "--new", root, "--out", table_dir,
                   "--rounds", str(args.rounds)] + (["--quick"] if args.quick else [])
        before = os.getloadavg()
        bench_sampler_revisions.main(compare)
        comparison = (Path(table_dir) / "exact_sampler_speed.md").read_text().splitlines()
    # The profile: rounds alternated with nothing else, medians.
    runs = [profile(n_draws, repeats) for _ in range(1 if args.quick else args.rounds)]
    after = os.getloadavg()
    command = ("`PYTHONPATH=. python benchmarks/bench_exact_sampler.py "
               + (f"--old-rev {args.old_rev}" if args.old_rev else "--old <old tree>")
               + (" --quick" if args.quick else f" --rounds {args.rounds}") + "`")
    lines = [comparison[0], "", f"Written by {command}: the comparison of the trees by "
             "`bench_sampler_revisions.py` (below), then this tree's kernel by part.", ""]
    lines += comparison[2:]
    lines += [
        "", "## This tree's kernel by part",
        "",
        f"ns per draw on words drawn beforehand (one thread, {n_draws:,} draws, s = 2**35 + 1, "
        f"best of {repeats}, median of {len(runs)} rounds; load averages over 1 minute "
        f"{before[0]:.1f} before the comparison, {after[0]:.1f} after the profile, on a shared "
        "machine). The first four rows are compiled loops doing the common case's parts "
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
