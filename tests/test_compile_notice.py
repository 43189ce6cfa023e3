"""The one-line notice while a fit compiles the Numba kernels of its input kind."""

import logging
import os
import subprocess
import sys
from pathlib import Path
from types import SimpleNamespace

import numpy as np
from numba import njit
from numba.core import event

from sklearn_dplssgd._backends import _kernels
from sklearn_dplssgd._utils._compile_notice import (
    LOGGER_NAME, CompileNotice, install_compile_notice,
)

REPO_ROOT = Path(__file__).resolve().parent.parent


def _module_function(module):
    def kernel():
        pass

    kernel.__module__ = module
    return kernel


def _event(status, module):
    dispatcher = SimpleNamespace(py_func=_module_function(module))
    return event.Event("numba:compile", status, data={"dispatcher": dispatcher})


def _compile(notice, module, inner=()):
    """Send the events of compiling a function of ``module`` (and inner ones) to ``notice``."""
    notice.notify(_event(event.EventStatus.START, module))
    for name in inner:
        _compile(notice, name)
    notice.notify(_event(event.EventStatus.END, module))


def test_one_notice_per_input_kind_and_process(caplog):
    notice = CompileNotice()
    with caplog.at_level(logging.WARNING, logger=LOGGER_NAME):
        # A sparse fit: its kernel compiles the dense module's helpers inside
        # it, then the shared optimizer steps at the top level.
        _compile(notice, "sklearn_dplssgd._backends._sparse",
                 inner=["sklearn_dplssgd._backends._kernels"])
        _compile(notice, "sklearn_dplssgd._training._optimizers")
        _compile(notice, "sklearn_dplssgd._backends._sparse")
        assert [record.getMessage() for record in caplog.records] == [
            "sklearn_dplssgd: compiling the Numba kernels for sparse input; this fit takes "
            "several seconds longer, once: the kernels are then cached on disk for later runs."]
        # The first dense fit is announced; the second and user code are not.
        _compile(notice, "sklearn_dplssgd._backends._kernels")
        _compile(notice, "sklearn_dplssgd._backends._kernels")
        _compile(notice, "my_project.kernels")
    messages = [record.getMessage() for record in caplog.records]
    assert len(messages) == 2 and "for dense input" in messages[1]
    assert {record.name for record in caplog.records} == {LOGGER_NAME}
    assert notice.announced == {"sparse", "dense"}


def test_shared_kernels_alone_are_announced_once(caplog):
    notice = CompileNotice()
    with caplog.at_level(logging.WARNING, logger=LOGGER_NAME):
        _compile(notice, "sklearn_dplssgd._training._optimizers")
        _compile(notice, "sklearn_dplssgd._backends._threads")
        _compile(notice, "not_sklearn_dplssgd._backends._kernels")
    assert len(caplog.records) == 1
    assert "for the training steps" in caplog.records[0].getMessage()


def test_a_real_compilation_is_announced(caplog):
    # A new, uncached dispatcher of a package kernel: Numba compiles it on
    # the first call and sends its compile events to a registered listener.
    # (Its own logger: the package's listener may announce the same event.)
    notice = CompileNotice(logger=logging.getLogger("test_compile_notice"))
    event.register("numba:compile", notice)
    try:
        with caplog.at_level(logging.WARNING, logger="test_compile_notice"):
            fresh = njit(_kernels.copy_rows.py_func)
            target = np.zeros((1, 2))
            fresh(np.array([[3.0, 4.0]]), target)
            assert target.tolist() == [[3.0, 4.0]]
            fresh(np.ones((2, 1)), np.zeros((2, 1)))  # already compiled: no event, no notice
    finally:
        event.unregister("numba:compile", notice)
    assert notice.announced == {"dense"}
    assert [record.getMessage().split(";")[0] for record in caplog.records
            if record.name == "test_compile_notice"] == [
        "sklearn_dplssgd: compiling the Numba kernels for dense input"]


def test_importing_the_package_installs_the_notice():
    # In a new process with no logging configured: importing sklearn_dplssgd
    # registered its notice with Numba, and a compilation of a package kernel
    # prints the line to stderr. (A fresh dispatcher, so that no disk cache
    # is involved; benchmarks/bench_first_fit.py runs whole first fits on an
    # empty cache, which would cost a full compilation here.)
    script = (
        "import numpy as np\n"
        "from numba import njit\n"
        "import sklearn_dplssgd\n"
        "from sklearn_dplssgd._backends import _kernels\n"
        "njit(_kernels.copy_rows.py_func)(np.ones((1, 2)), np.zeros((1, 2)))\n"
    )
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(
        [str(REPO_ROOT)] + ([env["PYTHONPATH"]] if env.get("PYTHONPATH") else []))
    run = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                         env=env, timeout=300, cwd=REPO_ROOT)
    assert run.returncode == 0, run.stderr[-2000:]
    assert run.stderr.count(
        "sklearn_dplssgd: compiling the Numba kernels for dense input") == 1, run.stderr
    assert install_compile_notice() is install_compile_notice()
