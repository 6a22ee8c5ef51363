"""A model's CPU kernels, generated on this host from what its file describes.

A compiled model is data: its file describes each CPU step (operator, attributes, the shape and
dtype of every slot) and holds no machine code. Where a *kernel builder* is installed (the
compiler registers its LLVM backend's under the entry-point group :data:`KERNEL_GROUP`, as it
registers ``vtaforge compile`` under the command line's: ``runtime`` never imports
``compiler``), the steps it knows get native kernels, built once per host and kept in a cache
keyed by the step's description and the builder's target (``~/.cache/vtaforge/kernels``; the
``VTAFORGE_KERNEL_CACHE`` variable moves it). Everywhere else (a board without the compiler,
a step no builder knows, a build that fails) the step's numpy kernel of :mod:`runtime.opset`
runs; both give the same bytes for the quantization, layout and elementwise steps, and sums of
float products (convolutions, matrix products, average pools) within the builder's stated
tolerance (another order of the same sums).

A kernel is a shared library exporting :data:`LIBRARY_ENTRY`, called with one pointer per
input slot (in the step's order: a convolution's data, weights and bias; parameters are slots
of the DRAM image like any value), then the output's, into the model's DRAM image, then a null
parallel launcher (the loops run on the calling thread).
"""

from __future__ import annotations

import ctypes
import hashlib
import json
import os
import tempfile
from collections.abc import Callable, Collection, Sequence
from functools import cache
from pathlib import Path
from typing import Any, Protocol

from runtime.model.image import Step, TensorSlot

__all__ = [
    "KERNEL_GROUP",
    "LIBRARY_ENTRY",
    "HostKernels",
    "KernelBuilder",
    "kernel_builder",
    "kernel_cache_dir",
]

#: Where packages register a :class:`KernelBuilder` (``compiler`` registers its LLVM one).
KERNEL_GROUP = "vtaforge.kernels"
#: The symbol a kernel's shared library exports.
LIBRARY_ENTRY = "vtaforge_step"
#: The environment variable that moves the kernel cache.
CACHE_VARIABLE = "VTAFORGE_KERNEL_CACHE"

#: A loaded kernel: called with one ``c_void_p`` per input, then the output, then None.
Kernel = Callable[..., None]


class KernelBuilder(Protocol):
    """What builds native kernels for this host: the operators it knows, the target it
    compiles for (part of the cache key: another CPU builds other code) and the build."""

    ops: Collection[str]

    def target(self) -> str:
        """This host's target, as the builder compiles for it (triple, CPU, features)."""
        ...

    def build(
        self, op: str, inputs: Sequence[TensorSlot], output: TensorSlot, attrs: dict[str, Any]
    ) -> bytes | None:
        """The shared library of one step (exporting :data:`LIBRARY_ENTRY`), or None where
        the step keeps its numpy kernel."""
        ...


@cache
def kernel_builder() -> KernelBuilder | None:
    """The kernel builder registered under :data:`KERNEL_GROUP` (the first that loads), or
    None where none is installed."""
    from importlib.metadata import entry_points

    for entry in entry_points(group=KERNEL_GROUP):
        try:
            return entry.load()
        except ImportError:  # its package's dependencies are not installed here
            continue
    return None


def kernel_cache_dir() -> Path:
    """Where built kernels are kept: ``$VTAFORGE_KERNEL_CACHE``, else
    ``~/.cache/vtaforge/kernels``."""
    moved = os.environ.get(CACHE_VARIABLE)
    return Path(moved) if moved else Path.home() / ".cache" / "vtaforge" / "kernels"


class HostKernels:
    """The native kernels of a model's CPU steps on this host, from ``builder`` (None: none,
    every step runs numpy) through the cache in ``cache_dir``."""

    def __init__(self, builder: KernelBuilder | None, cache_dir: Path | None = None) -> None:
        self.builder = builder
        self.cache_dir = kernel_cache_dir() if cache_dir is None else cache_dir
        self._target = builder.target() if builder is not None else ""

    def kernel(self, step: Step, slots: Sequence[TensorSlot]) -> Kernel | None:
        """``step``'s kernel (its input slots, then its output, are ``slots``), or None where
        its numpy kernel runs: no builder, an operator the builder does not know. An OSError
        or a builder's error propagates: the caller decides to fall back."""
        builder = self.builder
        if builder is None or step.op not in builder.ops or len(step.outputs) != 1:
            return None
        path = self.cache_dir / f"{self._key(step, slots)}.so"
        if not path.is_file():
            library = builder.build(step.op, slots[:-1], slots[-1], dict(step.attrs))
            if library is None:
                return None
            self._store(path, library)
        return _load(path, len(slots))

    def _key(self, step: Step, slots: Sequence[TensorSlot]) -> str:
        """The cache key: what the kernel computes, and for which target."""
        described = {
            "op": step.op,
            "attrs": step.attrs,
            "slots": [(list(s.shape), s.dtype, s.layout) for s in slots],
            "target": self._target,
        }
        text = json.dumps(described, sort_keys=True, default=str)
        return hashlib.sha256(text.encode()).hexdigest()[:32]

    def _store(self, path: Path, library: bytes) -> None:
        """Write ``library`` at ``path`` whole or not at all (a concurrent run may race)."""
        path.parent.mkdir(parents=True, exist_ok=True)
        with tempfile.NamedTemporaryFile(dir=path.parent, suffix=".tmp", delete=False) as file:
            file.write(library)
        os.replace(file.name, path)


def _load(path: Path, pointers: int) -> Kernel:
    """The entry point of the library at ``path`` (``pointers`` buffers, then the launcher);
    AttributeError where it exports none."""
    library = ctypes.CDLL(str(path))
    entry = getattr(library, LIBRARY_ENTRY)
    entry.restype = None
    entry.argtypes = [ctypes.c_void_p] * (pointers + 1)
    return entry
