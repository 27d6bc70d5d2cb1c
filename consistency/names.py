"""Names resolved on first use: a package's lazy export table.

It exists so that importing a package costs nothing until a name is used (``cc version`` must not
load numpy). This module imports only the standard library.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from importlib import import_module
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
