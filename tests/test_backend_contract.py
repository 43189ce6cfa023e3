"""Every training backend implements the contract the one training loop calls.

:class:`sklearn_dplssgd._training.TrainingBackend` lists the loop's calls; each
backend class (and the audit's substitute) must implement every method with a
signature that accepts the loop's arguments, under the same names, so the next
backend (a GPU, a cluster) has a checked contract instead of a docstring.
"""

import ast
import inspect
import textwrap
from pathlib import Path

import pytest

from sklearn_dplssgd._backends import (
    ArrayApiTraining, DaskTraining, NumpyTraining,
)
from sklearn_dplssgd._mechanisms import NoiseFreeDescent
from sklearn_dplssgd._training import TrainingBackend
from sklearn_dplssgd._training import _loop

from implementation_checks import SubstitutedKernelTraining

BACKENDS = (NumpyTraining, ArrayApiTraining, DaskTraining, NoiseFreeDescent,
            SubstitutedKernelTraining)
ATTRIBUTES = ("xp", "params")


def contract_methods(protocol=TrainingBackend):
    return {name: member for name, member in vars(protocol).items()
            if inspect.isfunction(member) and not name.startswith("_")}


def positional_names(function):
    return [parameter.name for parameter in inspect.signature(function).parameters.values()
            if parameter.kind in (parameter.POSITIONAL_ONLY, parameter.POSITIONAL_OR_KEYWORD)]


def signature_problems(backend, protocol=TrainingBackend):
    """What ``backend`` lacks or gets wrong of the contract (empty when it complies)."""
    problems = []
    for name, expected in contract_methods(protocol).items():
        method = getattr(backend, name, None)
        if method is None or not callable(method):
            problems.append(f"{name} is missing")
            continue
        wanted = positional_names(expected)
        try:
            inspect.signature(method).bind(*wanted)
        except TypeError as error:
            problems.append(f"{name}{inspect.signature(method)} cannot take {wanted}: {error}")
            continue
        if positional_names(method)[:len(wanted)] != wanted:
            problems.append(f"{name}{inspect.signature(method)} names its parameters "
                            f"otherwise than {wanted}")
    return problems


def test_the_contract_lists_what_the_loop_calls():
    # Every attribute the loop reads on its backend is in the contract, and
    # the contract has nothing the loop does not use.
    tree = ast.parse(Path(_loop.__file__).read_text(encoding="utf-8"))
    called = {node.attr for node in ast.walk(tree) if isinstance(node, ast.Attribute)
              and isinstance(node.value, ast.Name) and node.value.id == "backend"}
    assert called == set(contract_methods()) | set(ATTRIBUTES)
    assert set(TrainingBackend.__annotations__) == set(ATTRIBUTES)
    assert len(contract_methods()) >= 12


def test_every_contract_method_is_documented():
    for name, method in contract_methods().items():
        assert method.__doc__ and ("Returns" in method.__doc__ or "Yields" in method.__doc__), name


@pytest.mark.parametrize("backend", BACKENDS, ids=lambda backend: backend.__name__)
def test_every_backend_implements_the_contract(backend):
    assert signature_problems(backend) == []
    # The attributes: a class attribute, or set by the constructor.
    tree = ast.parse(textwrap.dedent(inspect.getsource(backend.__init__)))
    assigned = {node.attr for node in ast.walk(tree) if isinstance(node, ast.Attribute)
                and isinstance(node.ctx, ast.Store) and getattr(node.value, "id", "") == "self"}
    for attribute in ATTRIBUTES:
        assert attribute in assigned or any(attribute in vars(cls) for cls in backend.__mro__), (
            attribute)


def test_the_contract_check_finds_a_broken_backend():
    class Broken(NoiseFreeDescent):
        add_to_average = NoiseFreeDescent.new_average  # takes no arguments

        def gradient_sum(self, params, chunk_start, local_step):
            return None

    del_smooth = type("WithoutSmooth", (), {
        name: method for name, method in vars(NoiseFreeDescent).items() if name != "smooth"})
    problems = signature_problems(Broken)
    assert any(problem.startswith("add_to_average") for problem in problems)
    assert any(problem.startswith("gradient_sum") for problem in problems)
    assert signature_problems(del_smooth) == ["smooth is missing"]
