"""The library against other private learners on the accuracy runner's splits.

Peers, each run only where it is installed (a missing one is named in the
results and skipped):

* Opacus (PyTorch): DP-SGD on a linear model (one ``nn.Linear`` layer,
  cross-entropy), Poisson sampling, the noise calibrated to (epsilon, delta)
  by ``make_private_with_epsilon`` with its RDP accountant, clip 1, batch 64,
  15 epochs, SGD at learning rate 0.5;
* diffprivlib: ``LogisticRegression`` (objective perturbation) with
  ``data_norm`` the public bound on a row's norm.

The library is ``DPLSSGDClassifier`` at its defaults. All are given the same
features, mapped to [-1, 1] from the public bounds of ``accuracy.py``, and
scored on the same held-out splits; delta 1e-5 where a peer takes one. The
peers' adjacency is theirs (Opacus and diffprivlib: add/remove one row), the
library's replace-one, which is the stronger guarantee at the same epsilon.

Run from the repository root::

    python benchmarks/peers.py             # peers.md, a few minutes
    python benchmarks/peers.py --quick     # a smoke run
"""

import argparse
import math
import sys
import time
import warnings
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
import accuracy  # noqa: E402
from _data import machine_note  # noqa: E402

DELTA = 1e-5
PEERS = ("DPLSSGDClassifier", "Opacus", "diffprivlib")


def _available(peer):
    module = {"Opacus": "opacus", "diffprivlib": "diffprivlib"}.get(peer)
    if module is None:
        return True
    try:
        __import__(module)
    except ImportError:
        return False
    return True


def _opacus(X_train, y_train, X_test, epsilon, n_classes, seed):
    import torch
    from opacus import PrivacyEngine

    torch.manual_seed(seed)
    data = torch.utils.data.TensorDataset(torch.tensor(X_train, dtype=torch.float32),
                                          torch.tensor(y_train, dtype=torch.long))
    loader = torch.utils.data.DataLoader(data, batch_size=64, shuffle=True)
    model = torch.nn.Linear(X_train.shape[1], n_classes)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.5)
    epochs = 15
    model, optimizer, loader = PrivacyEngine(accountant="rdp").make_private_with_epsilon(
        module=model, optimizer=optimizer, data_loader=loader, target_epsilon=epsilon,
        target_delta=DELTA, epochs=epochs, max_grad_norm=1.0)
    loss = torch.nn.CrossEntropyLoss()
    for _ in range(epochs):
        for X_batch, y_batch in loader:
            if len(y_batch) == 0:
                continue
            optimizer.zero_grad()
            loss(model(X_batch), y_batch).backward()
            optimizer.step()
    with torch.no_grad():
        return model(torch.tensor(X_test, dtype=torch.float32)).argmax(1).numpy()


def _diffprivlib(X_train, y_train, X_test, epsilon, seed):
    from diffprivlib.models import LogisticRegression

    model = LogisticRegression(epsilon=epsilon, data_norm=math.sqrt(X_train.shape[1]),
                               random_state=seed)
    return model.fit(X_train, y_train).predict(X_test)


def run_cell(peer, data, epsilon, split):
    """One fit's test accuracy of ``peer`` on ``split``."""
    from sklearn.model_selection import train_test_split

    from sklearn_dplssgd import BoundedScaler, DPLSSGDClassifier

    X, y, bounds, _ = data
    X = BoundedScaler(*bounds).fit_transform(X)
    X_train, X_test, y_train, y_test = train_test_split(
        X, y, test_size=0.25, random_state=split, stratify=y)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        if peer == "Opacus":
            predicted = _opacus(X_train, y_train, X_test, epsilon, int(y.max()) + 1, split)
        elif peer == "diffprivlib":
            predicted = _diffprivlib(X_train, y_train, X_test, epsilon, split)
        else:
            model = DPLSSGDClassifier(epsilon=epsilon, delta=DELTA).fit(X_train, y_train)
            predicted = model.predict(X_test)
    return float(np.mean(predicted == y_test))


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--tables", nargs="+", default=["digits", "breast_cancer"],
                        choices=[t for t in accuracy.TABLES if t != "diabetes"])
    parser.add_argument("--epsilons", nargs="+", type=float, default=[1.0, 4.0])
    parser.add_argument("--splits", type=int, default=3)
    parser.add_argument("--mnist-dir", default=str(accuracy.DEFAULT_MNIST_DIR))
    parser.add_argument("--adult-dir", default=str(accuracy.DEFAULT_ADULT_DIR))
    parser.add_argument("--out", default=str(accuracy.RESULTS), help="folder of peers.md")
    parser.add_argument("--quick", action="store_true", help="breast cancer, epsilon 1, 1 split")
    argv = sys.argv[1:] if argv is None else argv
    args = parser.parse_args(argv)
    if args.quick:
        args.tables, args.epsilons, args.splits = ["breast_cancer"], [1.0], 1
    start = time.perf_counter()
    peers = [peer for peer in PEERS if _available(peer)]
    missing = [peer for peer in PEERS if peer not in peers]
    for peer in missing:
        print(f"{peer} is not installed, skipping it")
    lines = ["# The library against its peers", "",
             "Written by `benchmarks/peers.py` (its docstring says how each peer is set up). "
             f"Test accuracy, the mean +- standard error over {args.splits} held-out splits "
             "(those of `accuracy.py`). Peers not installed, skipped: "
             f"{', '.join(missing) or 'none'}.", "",
             "Command: `python benchmarks/peers.py " + " ".join(argv) + "`", ""]
    for table in args.tables:
        data = accuracy.load_table(table, args.mnist_dir, args.adult_dir)
        if data is None:
            print(f"{table}: its files are not present, skipping it")
            continue
        lines += [f"## {table}", "",
                  "| peer | " + " | ".join(f"epsilon {e:g}" for e in args.epsilons) + " |",
                  "|---|" + "---|" * len(args.epsilons)]
        for peer in peers:
            cells = []
            for epsilon in args.epsilons:
                scores = [run_cell(peer, data, epsilon, split) for split in range(args.splits)]
                mean, error = accuracy.summarize(scores)
                print(f"{table} {peer} epsilon {epsilon:g}: {mean:.3f} +- {error:.3f}")
                cells.append(f"{mean:.3f} +- {error:.3f}")
            lines.append(f"| {peer} | " + " | ".join(cells) + " |")
        lines.append("")
    lines.append(f"Machine: {machine_note()}; {(time.perf_counter() - start) / 60:.1f} min.")
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    (out / "peers.md").write_text("\n".join(lines) + "\n", encoding="utf-8")
    print(f"wrote {out / 'peers.md'}")


if __name__ == "__main__":
    main()
