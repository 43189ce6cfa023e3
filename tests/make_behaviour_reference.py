"""Record the behaviour-kept reference from a revision's source tree.

Usage (from the repository root)::

    python tests/make_behaviour_reference.py . new tests/data/behaviour_reference.npz

or, for another revision's tree, ``git worktree add --detach /tmp/rev REV`` and
``/tmp/rev`` in place of ``.``.

The tree's package is imported in place of the working tree's; ``old`` or
``new`` says which spelling of the renamed settings it takes (see
``tests/behaviour_cases.py``).
"""

import importlib
import sys
from pathlib import Path

import numpy as np


def main(tree, api, output):
    sys.path.insert(0, str(Path(tree).resolve()))
    module = importlib.import_module("sklearn_dplssgd")
    assert Path(module.__file__).resolve().is_relative_to(Path(tree).resolve()), module.__file__
    sys.path.insert(1, str(Path(__file__).resolve().parent))
    from behaviour_cases import CASES, case_outputs

    arrays = {}
    for case in CASES:
        for key, value in case_outputs(case, module, api).items():
            arrays[f"{case['name']}/{key}"] = value
        print(case["name"], "recorded")
    np.savez_compressed(output, **arrays)


if __name__ == "__main__":
    main(*sys.argv[1:4])
