"""Names resolved on first use: a package's lazy export table, and old module names kept as aliases.

Both exist so that importing a package costs nothing until a name is used (``cc version`` must not
load numpy). This module imports only the standard library.
"""

from __future__ import annotations

import importlib.machinery
import sys
import warnings
from collections.abc import Callable, Mapping
from importlib import import_module
from types import ModuleType
from typing import Any


def lazy_exports(package: str, where: Mapping[str, str]) -> Callable[[str], Any]:
    """A module ``__getattr__`` giving ``name`` from the module ``where[name]`` (absolute, or relative
    to ``package``), imported on first use."""

    def __getattr__(name: str) -> Any:
        module = where.get(name)
        if module is None:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        return getattr(import_module(module, package), name)

    return __getattr__


class _Alias:
    """Imports of an old module name (and, for a package, of its submodules) give the module at its
    new name: the same object, not a copy, with a :class:`DeprecationWarning` naming the new place.

    A meta-path finder and loader by duck typing: importing ``importlib.abc`` costs ~9 ms of start-up."""

    def __init__(self, renamed: Mapping[str, str]) -> None:
        self.renamed = dict(renamed)

    def new_name(self, fullname: str) -> str | None:
        for old, new in self.renamed.items():
            if fullname == old or fullname.startswith(old + "."):
                return new + fullname[len(old) :]
        return None

    def find_spec(self, fullname: str, path: Any = None, target: Any = None) -> importlib.machinery.ModuleSpec | None:
        new = self.new_name(fullname)
        return None if new is None else importlib.machinery.ModuleSpec(fullname, self)

    def create_module(self, spec: importlib.machinery.ModuleSpec) -> ModuleType:
        new = self.new_name(spec.name)
        assert new is not None
        module = import_module(new)
        # level 2 is the caller's import: the warnings module skips the import machinery's frames
        warnings.warn(f"{spec.name} is deprecated: import {new} instead", DeprecationWarning, stacklevel=2)
        spec.loader_state = module.__spec__  # the import system sets __spec__ to the alias's; exec_module restores it
        return module

    def exec_module(self, module: ModuleType) -> None:
        spec = module.__spec__
        assert spec is not None
        module.__spec__ = spec.loader_state


def deprecated_aliases(renamed: Mapping[str, str]) -> None:
    """Keep old module names importable: ``{"old.name": "new.name"}``; installed once per interpreter."""
    if not any(isinstance(f, _Alias) and f.renamed == dict(renamed) for f in sys.meta_path):
        sys.meta_path.insert(0, _Alias(renamed))  # before the path finder, which would load copies of submodules
