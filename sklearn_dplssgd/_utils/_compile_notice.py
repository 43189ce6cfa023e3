"""A one-line notice while a fit compiles the Numba kernels.

The kernels are compiled the first time each input kind is used and cached
on disk (``cache=True``), so the first fit in a new environment takes
several seconds longer than the next ones: about 3 s for dense or sparse
input, about 1.5 s more for the first sparse fit after a dense one.
Without a word this looks like a hang. Numba broadcasts a ``"numba:compile"`` event
around every compilation (not around a load from its cache), through its
public event API (:mod:`numba.core.event`); the listener here logs one line
through the ``"sklearn_dplssgd"`` logger the first time in a process that a
kernel of the package is compiled for an input kind. It reads the name of
the compiled function's module only, never an argument's value.
"""

import logging
import threading

from numba.core import event

__all__ = ["CompileNotice", "LOGGER_NAME", "install_compile_notice"]

LOGGER_NAME = "sklearn_dplssgd"
_PACKAGE = "sklearn_dplssgd."

# The module whose kernels serve each input kind. The package's other
# kernels (optimizer steps, thread helpers) are shared: they compile within
# a fit of either kind, after that kind's own kernels.
_KINDS = {
    "sklearn_dplssgd._backends._kernels": "dense",
    "sklearn_dplssgd._backends._sparse": "sparse",
}
_SHARED = "shared"

_MESSAGES = {
    "dense": "for dense input",
    "sparse": "for sparse input",
    _SHARED: "for the training steps",
}


def _message(kind):
    return (
        f"sklearn_dplssgd: compiling the Numba kernels {_MESSAGES[kind]}; this fit takes "
        "several seconds longer, once: the kernels are then cached on disk for later runs."
    )


class CompileNotice(event.Listener):
    """Logs one line the first time in a process a kernel of an input kind compiles.

    Registered for Numba's ``"numba:compile"`` event, which Numba sends
    around the compilation of a function, and around the compilation of
    each function it calls inside. Only the outermost compilation of a
    thread is considered, so that a kernel of one kind compiling a helper
    of another module is announced as its own kind. The notice goes through
    the ``"sklearn_dplssgd"`` logger at level WARNING (so that it shows
    without any logging configuration, as the first fit's delay does);
    ``logging.getLogger("sklearn_dplssgd").setLevel(logging.ERROR)`` hides it.

    Parameters
    ----------
    logger : logging.Logger, optional
        Where the notice goes (the ``"sklearn_dplssgd"`` logger by default).
    """

    def __init__(self, logger=None):
        self.logger = logging.getLogger(LOGGER_NAME) if logger is None else logger
        self.announced = set()
        self._lock = threading.Lock()
        self._depth = threading.local()

    def on_start(self, ev):
        depth = getattr(self._depth, "value", 0)
        self._depth.value = depth + 1
        if depth:
            return  # compiled as part of an outer function, which was considered
        dispatcher = (ev.data or {}).get("dispatcher")
        module = getattr(getattr(dispatcher, "py_func", None), "__module__", None) or ""
        if not module.startswith(_PACKAGE):
            return
        kind = _KINDS.get(module, _SHARED)
        with self._lock:
            # A shared kernel is announced only when nothing was: then it is
            # the whole of this fit's compilation.
            if kind in self.announced or (kind == _SHARED and self.announced):
                return
            self.announced.add(kind)
        self.logger.warning(_message(kind))

    def on_end(self, ev):
        self._depth.value = max(getattr(self._depth, "value", 1) - 1, 0)


_installed = []


def install_compile_notice():
    """Register the process's :class:`CompileNotice` with Numba (once) and return it."""
    if not _installed:
        notice = CompileNotice()
        event.register("numba:compile", notice)
        _installed.append(notice)
    return _installed[0]
