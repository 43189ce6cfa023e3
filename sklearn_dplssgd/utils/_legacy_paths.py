"""The module paths of the flat layout, still importable (for pickles made before the split).

Until the package was split into layers, every module sat at the top level
(``sklearn_dplssgd._classifier``, ``sklearn_dplssgd._accounting``, ...), and a
pickle of a fitted estimator names the module of each class it holds. A finder
at the front of :data:`sys.meta_path` answers those old names, and only those,
with the module that now holds the classes: the same module object, so a class
unpickled through an old path *is* the current class.
"""

import importlib
import importlib.abc
import importlib.util
import sys

__all__ = ["LEGACY_MODULES", "install_legacy_paths"]

# Old module (relative to the package) -> the module holding its names now.
LEGACY_MODULES = {
    "_accounting": "accounting._events",
    "_array_api": "backends._array_api",
    "_array_api_predict": "backends._array_api_predict",
    "_base": "linear_model._base",
    "_calibration": "accounting._calibration",
    "_calibration_cache": "accounting._calibration_cache",
    "_classifier": "linear_model._classifier",
    "_clipping": "backends._clipping",
    "_compile_notice": "utils._compile_notice",
    "_defaults": "training._defaults",
    "_docstrings": "linear_model._docstrings",
    "_dp_encoder": "preprocessing._dp_encoder",
    "_dp_scaler": "preprocessing._dp_scaler",
    "_event_json": "accounting._event_json",
    "_feature_bounds": "linear_model._feature_bounds",
    "_kernels": "backends._kernels",
    "_ledger": "accounting._ledger",
    "_losses": "training._losses",
    # Split between the mechanisms' modules; the package re-exports all three classes.
    "_mechanism": "mechanisms",
    "_mechanisms": "mechanisms",
    "_mechanisms._gradient": "mechanisms._gradient",
    "_mechanisms._output": "mechanisms.output_perturbation._release",
    "_mechanisms._release": "mechanisms._release",
    "_numba_flags": "utils._numba_flags",
    "_optimizers": "training._optimizers",
    "_output_perturbation": "mechanisms.output_perturbation._accounting",
    "_output_release": "mechanisms.output_perturbation._descent",
    "_paper_bound": "accounting._paper_bound",
    "_prefetch": "backends._prefetch",
    "_randomness": "training._randomness",
    "_regressor": "linear_model._regressor",
    "_report": "accounting._report",
    "_row_norms": "backends._row_norms",
    "_scaler": "preprocessing._scaler",
    "_schedules": "training._schedules",
    "_search": "model_selection._search",
    "_search_steps": "model_selection._search_steps",
    "_sgd": "backends._numpy",
    "_smoothing": "training._smoothing",
    "_sparse": "backends._sparse",
    "_steps": "backends._steps",
    "_streaming": "training._streaming",
    "_threads": "backends._threads",
    "_training": "training._loop",
    "_validation": "utils._validation",
    "_weights": "linear_model._weights",
}


class _AliasLoader(importlib.abc.Loader):
    """Loads an old name as the module that now holds its names (no second copy)."""

    def __init__(self, target):
        self.target = target
        self.target_spec = None

    def create_module(self, spec):
        module = importlib.import_module(self.target)
        self.target_spec = module.__spec__
        return module

    def exec_module(self, module):
        # The import system set the old name's spec on the module: give it
        # back its own, so that it keeps one name (reloads, tracebacks).
        module.__spec__ = self.target_spec


class _LegacyPathFinder(importlib.abc.MetaPathFinder):
    """Answers the flat layout's module names, and no other."""

    def __init__(self, package):
        self.package = package

    def find_spec(self, fullname, path=None, target=None):
        prefix = self.package + "."
        if not fullname.startswith(prefix):
            return None
        new = LEGACY_MODULES.get(fullname[len(prefix):])
        if new is None:
            return None
        return importlib.util.spec_from_loader(fullname, _AliasLoader(prefix + new))


def install_legacy_paths(package):
    """Put the finder of the old module paths of ``package`` in front of the import system.

    Installed once (a second call leaves the one there). It must come first:
    the standard finder would load an old submodule path found under a new
    package's folder (``_mechanisms._gradient``) a second time, with classes
    of its own.
    """
    if not any(isinstance(finder, _LegacyPathFinder) and finder.package == package
               for finder in sys.meta_path):
        sys.meta_path.insert(0, _LegacyPathFinder(package))
