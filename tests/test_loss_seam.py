"""A loss is named in one place: its entry of ``_training._losses.LOSSES``.

Outside that module nothing compares a loss with a name or looks a loss up
by a literal name: the code asks the :class:`Loss` object (its attributes,
its codes, its constants). And every registered loss reaches the compiled
kernels through the dispatch built from the registry.
"""

import ast
from pathlib import Path

import numpy as np
import pytest

from sklearn_dplssgd._training._losses import LOSSES, residual

PACKAGE = Path(__file__).resolve().parent.parent / "sklearn_dplssgd"
LOSS_MODULE = PACKAGE / "_training" / "_losses.py"
MODULES = sorted(path for path in PACKAGE.rglob("*.py") if path != LOSS_MODULE)


def _literals(node):
    """The string constants of ``node``: itself, or the items of a tuple, list or set."""
    items = node.elts if isinstance(node, (ast.Tuple, ast.List, ast.Set)) else [node]
    return [item.value for item in items
            if isinstance(item, ast.Constant) and isinstance(item.value, str)]


def loss_name_tests(source):
    """``(line, name)`` of each comparison with, or subscript by, a literal loss name."""
    found = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Compare):
            operands = [node.left, *node.comparators]
        elif isinstance(node, ast.Subscript):
            operands = [node.slice]
        else:
            continue
        found += [(node.lineno, value) for operand in operands for value in _literals(operand)
                  if value in LOSSES]
    return found


def test_the_scan_finds_what_it_looks_for():
    source = (
        "if model.loss == 'huber':\n"
        "    pass\n"
        "if loss in ('log_loss', 'other'):\n"
        "    bound = LOSSES['squared_error'].constants\n"
        "message = \"use loss='huber'\"\n"
        "def f(loss='squared_error'):\n"
        "    return loss\n")
    assert loss_name_tests(source) == [(1, "huber"), (3, "log_loss"), (4, "squared_error")]


@pytest.mark.parametrize("path", MODULES, ids=lambda path: str(path.relative_to(PACKAGE)))
def test_no_module_tests_a_loss_by_its_name(path):
    found = loss_name_tests(path.read_text(encoding="utf-8"))
    assert not found, (
        f"{path.relative_to(PACKAGE)} tests a loss by its name at {found}: ask the Loss "
        "object of _training._losses.LOSSES (add an attribute there if it lacks one)")


def test_the_registry_gives_every_form_its_own_code():
    codes = [code for loss in LOSSES.values() for code in (loss.code, loss.multiclass_code)
             if code is not None]
    assert len(set(codes)) == len(codes)
    assert all(loss.kernel_code(1) == loss.code for loss in LOSSES.values())


@pytest.mark.parametrize("loss", LOSSES.values(), ids=lambda loss: loss.name)
def test_the_compiled_dispatch_reaches_every_loss(loss):
    # Through the kernels' entry, each code runs its own loss's functions.
    rng = np.random.default_rng(3)
    margins, target, threshold = rng.normal(size=3), 1.0, 0.7
    out = np.empty(1)
    residual(loss.code, margins[:1], target, threshold, out)
    assert out[0] == loss.value(margins[0], target, threshold)
    if loss.row is not None:
        expected, out = np.empty(3), np.empty(3)
        loss.row(margins, target, threshold, expected)
        residual(loss.multiclass_code, margins, target, threshold, out)
        np.testing.assert_array_equal(out, expected)
