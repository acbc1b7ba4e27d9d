"""The module paths before the layered layout (issue 14), kept working for one release.

``import loom_nb.rank`` still works and gives the very module ``loom_nb.core.rank``, with a
:class:`DeprecationWarning` naming the new path. A finder on ``sys.meta_path`` does it, so no
stub file sits in the package beside the real modules (the folder list shows the layers).
"""

from __future__ import annotations

import importlib
import importlib.abc
import importlib.util
import sys
import warnings

MOVED = {
    "loom_nb.classify": "loom_nb.core.classify",
    "loom_nb.config": "loom_nb.core.config",
    "loom_nb.engine": "loom_nb.core.engine",
    "loom_nb.errors": "loom_nb.core.errors",
    "loom_nb.graph": "loom_nb.core.graph",
    "loom_nb.lexical": "loom_nb.core.lexical",
    "loom_nb.pack": "loom_nb.core.pack",
    "loom_nb.rank": "loom_nb.core.rank",
    "loom_nb.store": "loom_nb.core.store",
    "loom_nb.tokens": "loom_nb.core.tokens",
    "loom_nb.decisions": "loom_nb.chat.decisions",
    "loom_nb.replay": "loom_nb.chat.replay",
    "loom_nb.session": "loom_nb.chat.session",
    "loom_nb.evaluate": "loom_nb.evaluation.run",
    "loom_nb.mine": "loom_nb.evaluation.mine",
    "loom_nb.tuning": "loom_nb.evaluation.tuning",
}
"""Old module path → where it lives now."""


def moved_message(old: str) -> str:
    return f"{old} moved to {MOVED[old]}; import it from there (or from loom_nb), the old path goes in the next release"


class MovedModuleFinder(importlib.abc.MetaPathFinder, importlib.abc.Loader):
    """Resolves an old module path to the moved module itself (same object, same state)."""

    def find_spec(self, fullname, path=None, target=None):
        if fullname not in MOVED:
            return None
        return importlib.util.spec_from_loader(fullname, self)

    def create_module(self, spec):
        return None  # a throwaway module: exec_module swaps in the real one

    def exec_module(self, module) -> None:
        warnings.warn(moved_message(module.__name__), DeprecationWarning, stacklevel=2)
        # the import system returns whatever sys.modules holds once this returns
        sys.modules[module.__name__] = importlib.import_module(MOVED[module.__name__])


NAMESAKES = ("loom_nb.classify", "loom_nb.rank")
"""Old module paths that share their name with a public function (``loom_nb.rank``,
``loom_nb.classify``). Importing a module sets it as an attribute of its package, which
would put the module where the function was; these paths are aliased up front instead, so
they import without the warning but never shadow the function."""


def install() -> None:
    """Put the finder on ``sys.meta_path`` once, and alias :data:`NAMESAKES`."""
    if not any(isinstance(f, MovedModuleFinder) for f in sys.meta_path):
        sys.meta_path.append(MovedModuleFinder())
    for old in NAMESAKES:
        if old not in sys.modules:
            sys.modules[old] = importlib.import_module(MOVED[old])


def old_attribute(name: str):
    """``loom_nb.rank`` as an attribute (no import statement): the moved module, with the warning."""
    old = f"loom_nb.{name}"
    if old not in MOVED:
        raise AttributeError(f"module 'loom_nb' has no attribute {name!r}")
    warnings.warn(moved_message(old), DeprecationWarning, stacklevel=3)
    with warnings.catch_warnings():  # said once, above, where the caller can see it
        warnings.simplefilter("ignore", DeprecationWarning)
        return importlib.import_module(old)
