"""The exact-noise mode's foundation: sampler speed and the epsilon it costs.

Two measurements, written to ``exact_noise.md``:

1. The exact discrete Gaussian sampler (``backends.sample_discrete_gaussian``,
   os.urandom words): nanoseconds per sample, one thread, at several scales,
   and the share of that spent drawing the words. Timings on a shared machine
   are disturbed by the others' load: the load average is recorded.
2. The accounting: for a fit calibrated by the ordinary mode to epsilon 1
   (PLD, the library's default), the epsilon that the exact mode's bound
   (``accounting.exact_noise_epsilon``: RDP of the subsampled multivariate
   discrete Gaussian at integer orders, grid 2**-k C, sensitivity
   2**k + sqrt(D)/2) certifies for the same noise, and beside it Zhu and
   Wang's general subsampling bound (factor 3), MNIST-shaped (K = 10,
   d = 784) and Adult-shaped (K = 1, d = 104), at batch 256, 4,096 and the
   ``"auto"`` batch. Not disturbed by load.

Run from the repository root::

    python benchmarks/bench_exact_noise.py [--quick] [--out benchmarks/results]
"""

import argparse
import math
import os
import time
from pathlib import Path

from sklearn_dplssgd.accounting import calibrate_noise, compute_epsilon, exact_noise_epsilon
from sklearn_dplssgd.backends import (
    ChaChaWords, DiscreteGaussianScale, SecureWords, grid_norm_bound, sample_discrete_gaussian,
)

RESULTS = Path(__file__).resolve().parent / "results"
DELTA = 1e-5


def sampler_rows(n_samples, scales, repeats):
    rows = []
    source = SecureWords()
    sample_discrete_gaussian(100, DiscreteGaussianScale.at_least(1.0))  # compile / load
    for std in scales:
        scale = DiscreteGaussianScale.at_least(std)
        best = math.inf
        for _ in range(repeats):
            start = time.perf_counter()
            sample_discrete_gaussian(n_samples, scale, source=source)
            best = min(best, time.perf_counter() - start)
        start = time.perf_counter()
        source.words(16 * n_samples)
        words_time = time.perf_counter() - start
        rows.append((std, 1e9 * best / n_samples, 1e9 * words_time / n_samples))
    return rows


def word_source_rows(n_words, repeats):
    """MB/s of each secure word source, alternated (the machine's load moves between runs)."""
    sources = {"os.urandom (SecureWords)": SecureWords(), "ChaCha20 (ChaChaWords)": ChaChaWords()}
    best = dict.fromkeys(sources, 0.0)
    for source in sources.values():
        source.words(1024)  # compile / load
    for _ in range(repeats):
        for name, source in sources.items():
            start = time.perf_counter()
            source.words(n_words)
            best[name] = max(best[name], 8e-6 * n_words / (time.perf_counter() - start))
    return list(best.items())


def accounting_rows(settings, grid_bits_list):
    rows = []
    for name, n_rows, n_features, n_outputs, batch, epochs in settings:
        sample_rate = batch / n_rows
        n_steps = math.ceil(epochs * n_rows / batch)
        dimension = n_outputs * (n_features + 1)
        for neighboring in ("replace_one", "add_remove"):
            calibration = calibrate_noise(1.0, DELTA, sample_rate=sample_rate, n_steps=n_steps,
                                          neighboring=neighboring)
            z = calibration.noise_multiplier
            # The continuous Gaussian's RDP epsilon at the same noise: what the
            # exact mode would cost with a tight subsampling bound (no factor 3).
            gaussian_rdp = compute_epsilon(z, DELTA, sample_rate=sample_rate, n_steps=n_steps,
                                           accountant="rdp", neighboring=neighboring)
            for grid_bits in grid_bits_list:
                scale = DiscreteGaussianScale.at_least(z * 2.0 ** grid_bits)
                epsilon = exact_noise_epsilon(
                    variance=scale.variance_at_most(),
                    sensitivity_squared=grid_norm_bound(grid_bits, dimension),
                    sample_rate=sample_rate, n_steps=n_steps, delta=DELTA,
                    neighboring=neighboring)
                general = exact_noise_epsilon(
                    variance=scale.variance_at_most(),
                    sensitivity_squared=grid_norm_bound(grid_bits, dimension),
                    sample_rate=sample_rate, n_steps=n_steps, delta=DELTA,
                    neighboring=neighboring, symmetric=False)
                rows.append((name, batch, n_steps, neighboring, z, grid_bits,
                             calibration.epsilon, gaussian_rdp, epsilon, general))
    return rows


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="a smoke run: small and fast")
    parser.add_argument("--out", default=str(RESULTS))
    args = parser.parse_args(argv)
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    if args.quick:
        sampler = sampler_rows(20_000, [1.0, 1000.0], 1)
        sources = word_source_rows(100_000, 1)
        settings = [("MNIST-shaped", 60_000, 784, 10, 256, 2)]
        grid_bits_list = [16]
    else:
        sampler = sampler_rows(1_000_000, [0.5, 1.0, 3.0, 1000.0, 2.0 ** 20], 3)
        sources = word_source_rows(2_000_000, 5)
        settings = [("MNIST-shaped", 60_000, 784, 10, 256, 20),
                    ("MNIST-shaped", 60_000, 784, 10, 4096, 20),
                    ("MNIST-shaped", 60_000, 784, 10, 1875, 32),
                    ("Adult-shaped", 32_561, 104, 1, 256, 10),
                    ("Adult-shaped", 32_561, 104, 1, 1018, 32)]
        grid_bits_list = [12, 16, 20]
    load = os.getloadavg()
    accounting = accounting_rows(settings, grid_bits_list)
    lines = [
        "# Exact noise: sampler speed and epsilon cost",
        "",
        "Written by `benchmarks/bench_exact_noise.py`" + (" --quick" if args.quick else "") + ".",
        "",
        "## The exact discrete Gaussian sampler (one thread, os.urandom words)",
        "",
        f"Measured on a shared machine (load average {load[0]:.1f}, {load[1]:.1f}, "
        f"{load[2]:.1f} over 1, 5, 15 minutes): the timings are disturbed by others' work. "
        "Best of the repeats.",
        "",
        "| std s | ns per sample | of which os.urandom (16 words) |",
        "|---|---|---|",
    ]
    lines += [f"| {std:g} | {total:.0f} | {words:.0f} |" for std, total, words in sampler]
    lines += ["", "Word sources (best of the runs, alternated):", "",
              "| source | MB/s |", "|---|---|"]
    lines += [f"| {name} | {rate:.0f} |" for name, rate in sources]
    lines += [
        "",
        "## Epsilon of the exact mode at the ordinary mode's noise (target epsilon 1, "
        f"delta {DELTA:g})",
        "",
        "The ordinary mode's epsilon is the PLD accountant's (the library's default); the "
        "exact mode's is the bound of docs/privacy_argument.rst (RDP of the subsampled "
        "discrete Gaussian at integer orders, grid 2**-k C). Ratio = exact / ordinary. "
        "Gaussian RDP: the continuous Gaussian's epsilon at the same noise by dp-accounting's "
        "RDP accountant (its own orders, fractional ones included; group-of-two under "
        "replace-one). Zhu-Wang: the exact mode's epsilon with Zhu and Wang's general "
        "subsampling bound (factor 3) in place of the symmetric-pair one.",
        "",
        "| data | batch | steps | adjacency | z | k | ordinary epsilon (PLD) | Gaussian RDP "
        "| exact epsilon | ratio | Zhu-Wang |",
        "|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    lines += [f"| {name} | {batch} | {steps} | {neighboring} | {z:.4f} | {k} | {ordinary:.4f} "
              f"| {rdp:.4f} | {exact:.4f} | {exact / ordinary:.3f} | {general:.4f} |"
              for name, batch, steps, neighboring, z, k, ordinary, rdp, exact, general
              in accounting]
    (out / "exact_noise.md").write_text("\n".join(lines) + "\n")
    print("\n".join(lines))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
