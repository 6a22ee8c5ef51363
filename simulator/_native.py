"""Which modules of the simulator run compiled.

``setup.py`` compiles the timing model's modules and the functional simulator's core with mypyc,
puts each build beside its source (``ports.py`` -> ``ports.cpython-311-x86_64-linux-gnu.so``) and
records the digest of every source it compiled in ``_compiled.json``. Python's import system
prefers a build, so after an edit of a source it would run the old code: :func:`_use_fresh_builds`
(run when this module is imported, which the package does first) makes the package import every
compiled module from its source instead, with a warning, as soon as a source's digest differs from
the recorded one (or nothing was recorded). The builds call each other natively, so they are used
all together or not at all.
"""

from __future__ import annotations

import hashlib
import importlib.abc
import importlib.machinery
import importlib.util
import json
import sys
import warnings
from pathlib import Path

__all__ = ["compiled_modules"]

_PACKAGE = Path(__file__).parent
_NAME = __name__.rpartition(".")[0]


def _builds() -> dict[str, Path]:
    """The package's modules with a compiled build beside their source: name -> build."""
    builds = {}
    for suffix in importlib.machinery.EXTENSION_SUFFIXES:
        for path in _PACKAGE.glob(f"*{suffix}"):
            name = path.name[: -len(suffix)]
            if (_PACKAGE / f"{name}.py").exists():
                builds[name] = path
    return builds


class _FromSource(importlib.abc.MetaPathFinder):
    """Finds ``modules`` of the package in their Python sources, ahead of their builds."""

    def __init__(self, modules: set[str]) -> None:
        self.modules = {f"{_NAME}.{name}" for name in modules}

    def find_spec(self, fullname, path, target=None):
        if fullname not in self.modules:
            return None
        source = _PACKAGE / f"{fullname.rpartition('.')[2]}.py"
        return importlib.util.spec_from_file_location(fullname, source)


def _recorded() -> dict[str, str]:
    """The digests the build recorded, by module (none: nothing usable was recorded)."""
    try:
        recorded = json.loads((_PACKAGE / "_compiled.json").read_text())
    except (OSError, ValueError):
        return {}
    return recorded if isinstance(recorded, dict) else {}


def _use_fresh_builds() -> None:
    """Import the compiled modules from their sources if one of them is not what was compiled
    (see the module docstring)."""
    builds = _builds()
    if not builds:
        return
    recorded = _recorded()
    stale = sorted(
        name
        for name in builds
        if recorded.get(name) != hashlib.sha256((_PACKAGE / f"{name}.py").read_bytes()).hexdigest()
    )
    if stale:
        warnings.warn(
            f"{', '.join(f'{_NAME}/{name}.py' for name in stale)} differs from what the "
            f"compiled simulator was built from: it runs interpreted, several times slower "
            f"(rebuild it with `make setup`)",
            RuntimeWarning,
            stacklevel=2,
        )
        sys.meta_path.insert(0, _FromSource(set(builds)))


def compiled_modules() -> list[str]:
    """The package's modules that run compiled in this process (imported from a build)."""
    suffixes = tuple(importlib.machinery.EXTENSION_SUFFIXES)
    return sorted(
        name.rpartition(".")[2]
        for name, module in list(sys.modules.items())
        if name.startswith(f"{_NAME}.") and str(getattr(module, "__file__", "")).endswith(suffixes)
    )


_use_fresh_builds()
