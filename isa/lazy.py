"""Packages whose public names are imported on first use (PEP 562): ``hw`` (so that pricing a
configuration does not load Amaranth), ``fpga`` and ``compiler.tune`` (so that their commands
register without them), ``runtime`` (so that the command line starts without the devices) and
``compiler`` (so that one compiler module does not load the whole compiler and LLVM)."""

from __future__ import annotations

import importlib
import sys
import types
from collections.abc import Callable, Collection, Mapping
from typing import Any

__all__ = ["keep_names", "lazy_names"]


def lazy_names(
    package: str, sources: Mapping[str, str], *, modules: Collection[str] = ()
) -> tuple[Callable[[str], Any], Callable[[], list[str]]]:
    """The module-level ``__getattr__`` and ``__dir__`` of ``package``, whose public names
    ``sources`` maps to the modules that define them (the names in ``modules`` are those
    modules themselves). A name is imported when first read and then bound in the package, so
    later reads cost nothing; any other name is an AttributeError."""

    def __getattr__(name: str) -> Any:
        source = sources.get(name)
        if source is None:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        module = importlib.import_module(source)
        value = module if name in modules else getattr(module, name)
        setattr(importlib.import_module(package), name, value)
        return value

    def __dir__() -> list[str]:
        return sorted(set(vars(importlib.import_module(package))) | set(sources))

    return __getattr__, __dir__


def keep_names(package: str, names: Collection[str]) -> None:
    """Let ``package``'s public ``names`` keep what they name (functions) when the submodule of
    the same name is imported: the import system binds a submodule as its package's attribute,
    and this package ignores that binding for these names (``import package.name`` still works:
    the module is in ``sys.modules``)."""
    kept = frozenset(names)

    class Package(types.ModuleType):
        def __setattr__(self, name: str, value: Any) -> None:
            if name in kept and isinstance(value, types.ModuleType):
                return
            super().__setattr__(name, value)

    sys.modules[package].__class__ = Package
