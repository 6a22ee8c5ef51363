"""Calling compiled functions on numpy arrays, with parallel loops spread over a thread pool.

Every argument is checked before native code runs (count, type, dtype, shape, contiguity,
writability of outputs, outputs overlapping other arguments), so a mistake raises a
:class:`CompileError` naming the parameter instead of corrupting memory. Calls into native code
go through ctypes, which releases the GIL, so the chunks of a parallel loop truly run at once.
"""

from __future__ import annotations

import ctypes
import os
from collections.abc import Sequence

import numpy as np

from compiler.errors import CompileError
from compiler.loop_ir import Buffer, LoweredFunc, Store
from compiler.visit import walk
from runtime.parallel import make_launcher

__all__ = ["CompiledFunction", "check_arguments", "output_positions"]


def output_positions(func: LoweredFunc) -> tuple[int, ...]:
    """The positions of ``func``'s parameters that it stores to."""
    stored = {n.buffer for n in walk(func.body) if isinstance(n, Store)}
    return tuple(i for i, p in enumerate(func.params) if p in stored)


def check_arguments(
    name: str, params: Sequence[Buffer], outputs: Sequence[int], arrays: Sequence[object]
) -> None:
    """Raise :class:`CompileError` naming the parameter unless ``arrays`` match ``params``
    (count, numpy type, dtype, shape, C order) and each output is writable and overlaps no other
    argument."""
    if len(arrays) != len(params):
        names = ", ".join(p.name for p in params)
        raise CompileError(f"takes {len(params)} arrays ({names}), got {len(arrays)}", op=name)
    for position, (array, param) in enumerate(zip(arrays, params, strict=True)):
        if not isinstance(array, np.ndarray):
            raise CompileError(
                f"argument {position} must be a numpy array, got {type(array).__name__}",
                tensor=param.name,
                op=name,
            )
        if array.dtype != param.dtype.numpy:
            raise CompileError(
                f"dtype is {array.dtype}, expected {param.dtype}",
                tensor=param.name,
                op=name,
            )
        if array.shape != param.shape:
            if array.ndim != len(param.shape):
                raise CompileError(
                    f"has {array.ndim} dimensions {array.shape}, expected {param.shape}",
                    tensor=param.name,
                    op=name,
                )
            dim = next(
                d for d, (x, y) in enumerate(zip(array.shape, param.shape, strict=True)) if x != y
            )
            raise CompileError(
                f"extent {array.shape[dim]}, expected {param.shape[dim]} (shape {array.shape}, "
                f"expected {param.shape})",
                tensor=param.name,
                axis=str(dim),
                op=name,
            )
        if not array.flags.c_contiguous:
            raise CompileError(
                "is not C-contiguous (use np.ascontiguousarray)",
                tensor=param.name,
                op=name,
            )
    for position in outputs:
        array, param = arrays[position], params[position]
        if not array.flags.writeable:
            raise CompileError("is an output but is read-only", tensor=param.name, op=name)
        for index, (other, other_param) in enumerate(zip(arrays, params, strict=True)):
            if index != position and np.may_share_memory(array, other):
                raise CompileError(
                    f"is an output and overlaps argument {other_param.name!r}",
                    tensor=param.name,
                    op=name,
                )


class CompiledFunction:
    """A compiled kernel: ``f(*arrays, num_threads=None)`` runs it on numpy arrays.

    ``num_threads`` (default: every CPU) is how many threads share each parallel loop; ``1``
    runs everything on the calling thread.
    """

    def __init__(self, func: LoweredFunc, address: int, keepalive: object, module: object) -> None:
        self.lowered = func
        self.module = module
        self._keepalive = keepalive
        self._params: tuple[Buffer, ...] = func.params
        self._outputs = output_positions(func)
        self._native = ctypes.CFUNCTYPE(None, *[ctypes.c_void_p] * (len(self._params) + 1))(address)
        self._launcher = make_launcher(func.name)

    @property
    def name(self) -> str:
        return self.lowered.name

    def __call__(self, *arrays: np.ndarray, num_threads: int | None = None) -> None:
        check_arguments(self.name, self._params, self._outputs, arrays)
        threads = (os.cpu_count() or 1) if num_threads is None else num_threads
        if not isinstance(threads, int) or threads < 1:
            raise CompileError(f"num_threads must be a positive integer, got {num_threads!r}")
        pointers = [a.ctypes.data for a in arrays]
        self._native(*pointers, self._launcher.pointer(threads))
        self._launcher.raise_error()
