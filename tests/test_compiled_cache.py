"""Numba's cache files follow every source a compiled function was built from.

Numba checks a cached function only against the file that defines it; a
kernel that calls a compiled function of another file kept the old callee
after that file changed. ``forget_stale_compiled_code`` (run when the
package is imported) removes the cache files of a module whose sources,
those it imports included, changed.
"""

import os
import subprocess
import sys
import textwrap
from pathlib import Path

import sklearn_dplssgd
from sklearn_dplssgd._utils import module_sources

PACKAGE = Path(sklearn_dplssgd.__file__).resolve().parent


def test_a_kernels_sources_include_the_residuals_and_flags_it_compiles_in():
    sources = module_sources(PACKAGE, "sklearn_dplssgd", PACKAGE / "_backends" / "_kernels.py")
    names = {path.relative_to(PACKAGE).as_posix() for path in sources}
    assert {"_backends/_kernels.py", "_training/_losses.py",
            "_utils/_numba_flags.py"} <= names
    # Only the layers a kernel may import from (never the estimators).
    assert not any(name.startswith(("linear_model/", "audit/")) for name in names)


CALLER = """
from numba import njit
from .callee import value

@njit(cache=True)
def kernel():
    return value()
"""
CALLEE = """
from numba import njit

@njit(cache=True)
def value():
    return {}
"""
RUN = """
import sys
sys.path.insert(0, {root!r})
import toy
from sklearn_dplssgd._utils import forget_stale_compiled_code
if {forget}:
    forget_stale_compiled_code("toy")
print(toy.caller.kernel())
"""


def _run(root, forget):
    script = RUN.format(root=str(root), forget=forget)
    done = subprocess.run([sys.executable, "-c", textwrap.dedent(script)], check=True,
                          capture_output=True, text=True, env={
                              **os.environ, "NUMBA_CACHE_DIR": str(root / "cache")})
    return int(done.stdout.strip().splitlines()[-1])


def test_a_changed_callee_is_compiled_again(tmp_path):
    package = tmp_path / "toy"
    package.mkdir()
    (package / "__init__.py").write_text("from . import caller, callee\n")
    (package / "caller.py").write_text(CALLER)
    (package / "callee.py").write_text(CALLEE.format(1))
    assert _run(tmp_path, forget=True) == 1
    # Same length, so that nothing but the content tells the change.
    (package / "callee.py").write_text(CALLEE.format(2))
    # Numba alone serves the caller's stale cache: the callee's old value.
    assert _run(tmp_path, forget=False) == 1
    assert _run(tmp_path, forget=True) == 2
    assert _run(tmp_path, forget=True) == 2
