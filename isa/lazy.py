"""Packages whose public names are imported on first use (PEP 562): ``hw`` (so that pricing a
configuration does not load Amaranth), ``fpga`` (so that its command registers without it) and
``compiler`` (so that one compiler module does not load the whole compiler and LLVM)."""

from __future__ import annotations

import importlib
from collections.abc import Callable, Collection, Mapping
from typing import Any

__all__ = ["lazy_names"]


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
