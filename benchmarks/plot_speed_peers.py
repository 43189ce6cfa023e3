"""Plot the committed speed results against peers and the hardware floor.

Reads ``benchmarks/results/speed.md`` (the "Time per epoch" table of
``bench_speed.py``) and ``benchmarks/results/speed_narrow.md`` (the table of
``bench_speed.py --narrow``) and writes ``speed_peers.png`` next to them:

* left, one epoch of MNIST-sized data (n = 60,000, d = 784, batch 256), 10
  classes and 2 classes: DPLSSGD, scikit-learn's ``SGDClassifier`` and the
  NumPy floor (the gather of each batch and the step's two matrix products);
* right, nanoseconds per row and epoch on narrow tables (n = 500,000) against
  the number of features, for the same three.

It runs no benchmark: rerun ``bench_speed.py`` (and ``--narrow``) to measure
again, then this script to redraw::

    python benchmarks/plot_speed_peers.py
"""

import argparse
from pathlib import Path

RESULTS = Path(__file__).resolve().parent / "results"


def _table(text, first_header):
    """The rows (lists of cells) of the Markdown table whose header starts so."""
    lines = text.splitlines()
    for i, line in enumerate(lines):
        if line.startswith("| " + first_header):
            rows = []
            for row in lines[i + 2:]:
                if not row.startswith("|"):
                    break
                rows.append([cell.strip() for cell in row.strip("|").split("|")])
            return rows
    raise ValueError(f"no table starting with {first_header!r}")


def epoch_times(path):
    """``{method: (ms per epoch with 10 classes, with 2 classes)}`` from speed.md."""
    rows = _table(path.read_text(encoding="utf-8"), "method")
    return {row[0]: (float(row[1]), float(row[3])) for row in rows}


def narrow_times(path):
    """``(features, DPLSSGD, gather floor, SGDClassifier)`` in ns from speed_narrow.md."""
    rows = _table(path.read_text(encoding="utf-8"), "features")
    return [tuple(float(cell) for cell in row[:4]) for row in rows]


def plot(results, out):
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    import matplotlib.ticker

    times = epoch_times(results / "speed.md")
    narrow = narrow_times(results / "speed_narrow.md")
    methods = [
        ("DPLSSGD float64, 1 thread", "DPLSSGD"),
        ("SGDClassifier(log_loss)", "SGDClassifier"),
        ("numpy floor, with gather, 1 thread", "NumPy floor"),
    ]
    colors = ["tab:blue", "tab:orange", "tab:green"]
    fig, (left, right) = plt.subplots(1, 2, figsize=(10, 3.8))
    width = 0.27
    for k, ((key, label), color) in enumerate(zip(methods, colors)):
        values = times[key]
        bars = left.bar([g + (k - 1) * width for g in range(2)], values, width,
                        label=label, color=color)
        left.bar_label(bars, fmt="%.0f", fontsize=8)
    left.set_xticks(range(2), ["10 classes", "2 classes"])
    left.set_ylabel("ms per epoch")
    left.set_title("MNIST size: n = 60,000, d = 784, batch 256")
    left.legend(fontsize=8)

    features = [row[0] for row in narrow]
    for column, (label, color) in enumerate(zip(
            ["DPLSSGD", "gather floor", "SGDClassifier"],
            ["tab:blue", "tab:green", "tab:orange"]), start=1):
        right.plot(features, [row[column] for row in narrow], "o-", label=label,
                   color=color)
    right.set_xscale("log")
    right.set_yscale("log")
    right.set_xticks(features, [f"{f:.0f}" for f in features])
    right.xaxis.set_minor_formatter(matplotlib.ticker.NullFormatter())
    right.set_xlabel("features")
    right.set_ylabel("ns per row and epoch")
    right.set_title("narrow tables: n = 500,000, binary, batch 1024")
    right.legend(fontsize=8)
    fig.suptitle("Time per epoch against scikit-learn's SGDClassifier and the "
                 "hardware floor (medians, 1 thread)", fontsize=10)
    fig.tight_layout()
    fig.savefig(out, dpi=100)
    plt.close(fig)


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--results", type=Path, default=RESULTS,
                        help="folder of speed.md and speed_narrow.md")
    parser.add_argument("--out", type=Path, default=None,
                        help="the PNG to write (default: speed_peers.png in --results)")
    args = parser.parse_args(argv)
    out = args.out or args.results / "speed_peers.png"
    plot(args.results, out)
    print(f"wrote {out}")


if __name__ == "__main__":
    main()
