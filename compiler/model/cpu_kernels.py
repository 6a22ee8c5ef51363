"""CPU steps compiled by the LLVM backend into shared libraries: the kernel builder that
``runtime.model`` finds under the ``vtaforge.kernels`` entry point (:data:`LLVM_KERNELS`).

The steps that connect the host's float world to the accelerator (``QuantizeLinear``,
``DequantizeLinear``, ``Pack``, ``Unpack`` and ``PackWeights``) are declared as tensor
expressions, scheduled (the innermost axis vectorised), compiled for the CPU ``target`` and
linked into a shared library; ``runtime`` builds it on the host that loads a model, from the
step's description (the model file carries no machine code: :mod:`runtime.model.kernels`), and
calls it through ctypes, with one pointer per input, then the output, into the model's DRAM
image. Each expression is the numpy kernel's arithmetic exactly (float32 division, rounding
half to even, saturation), so both give the same bytes.

The float32 steps that dominate real models (convolutions, products, pooling, the elementwise
operators: :data:`~compiler.model.cpu_kernels_float.FLOAT_OPS`, whose module states how close
each is to its numpy kernel) are declared from the same description through the tuned CPU
templates and called the same way, with one pointer per input slot (data, weights, bias:
parameters are slots of the DRAM image too). Any other CPU step, and any attribute combination
a declaration does not handle, keeps its numpy kernel (:mod:`runtime.opset`).
"""

from __future__ import annotations

import hashlib
import math
import tempfile
from collections.abc import Callable, Sequence
from functools import cache
from pathlib import Path
from typing import Any

from compiler import te
from compiler.codegen import codegen
from compiler.lower import lower
from compiler.model.cpu_kernels_float import FLOAT_OPS
from compiler.schedule import create_schedule
from compiler.te import Tensor
from runtime.model import LIBRARY_ENTRY, TensorSlot

__all__ = ["LIBRARY_OPS", "LLVM_KERNELS", "LlvmKernels", "cpu_library"]


def _quantize(x: Tensor, out: TensorSlot, *, scale: float, zero_point: int, dtype: str) -> Tensor:
    del dtype  # int8, the output slot's
    info = (-128.0, 127.0)

    def value(*i):
        q = te.round(x(*i) / te.const(scale, "float32")) + te.const(float(zero_point), "float32")
        return te.max(te.min(q, info[1]), info[0]).astype("int8")

    return te.compute(out.shape, value, name="quantized")


def _dequantize(x: Tensor, out: TensorSlot, *, scale: float, zero_point: int, dtype: str):
    del dtype  # the input's
    return te.compute(
        out.shape,
        lambda *i: (
            (x(*i).astype("int32") - zero_point).astype("float32") * te.const(scale, "float32")
        ),
        name="dequantized",
    )


def _pack(x: Tensor, out: TensorSlot, *, batch: int, block: int, channels: int) -> Tensor:
    def value(*i):
        n, c, spatial, b, k = i[0], i[1], i[2:-2], i[-2], i[-1]
        channel = c * block + k
        inside = channel < channels
        safe = te.if_then_else(inside, channel, 0)
        read = x(n * batch + b, safe, *spatial)
        return te.if_then_else(inside, read, te.const(0, out.dtype))

    return te.compute(out.shape, value, name="packed")


def _unpack(x: Tensor, out: TensorSlot, *, batch: int, block: int, channels: int) -> Tensor:
    del channels  # the output's
    return te.compute(
        out.shape,
        lambda n, c, *s: x(n // batch, c // block, *s, n % batch, c % block),
        name="unpacked",
    )


def _pack_weights(w: Tensor, out: TensorSlot, *, block: int) -> Tensor:
    depth, columns = w.shape[1:]

    def value(g, n, k, i, j):
        row, column = k * block + j, n * block + i
        inside = te.all_of(row < depth, column < columns)
        read = w(g, te.if_then_else(inside, row, 0), te.if_then_else(inside, column, 0))
        return te.if_then_else(inside, read, te.const(0, out.dtype))

    return te.compute(out.shape, value, name="packed_weights")


#: The CPU steps compiled into libraries, by operator name.
LIBRARY_OPS: dict[str, Callable[..., Tensor]] = {
    "QuantizeLinear": _quantize,
    "DequantizeLinear": _dequantize,
    "Pack": _pack,
    "Unpack": _unpack,
    "PackWeights": _pack_weights,
}


def cpu_library(
    op: str, inputs: Sequence[TensorSlot], output: TensorSlot, attrs: dict[str, Any], target: str
) -> bytes | None:
    """The shared library (its bytes) computing CPU step ``op`` for ``target``, or None where
    the step keeps its numpy kernel. The library's entry takes one pointer per input slot, in
    the step's order, then the output's, then the parallel launcher."""
    declare = LIBRARY_OPS.get(op)
    if declare is not None:
        if len(inputs) != 1:
            return None
        x = te.placeholder(inputs[0].shape, inputs[0].dtype, "x")
        out = declare(x, output, **attrs)
        s = create_schedule(out)
        inner = s[out].op.axis[-1]
        if output.shape[-1] % 4 == 0:
            s[out].vectorize(inner)
        args = [x, out]
    else:
        declared = FLOAT_OPS[op](inputs, output, attrs) if op in FLOAT_OPS else None
        if declared is None:
            return None
        s, args = declared
        # a declaration may read a slot flat (its bytes are contiguous), never past its end
        sizes = [math.prod(t.shape) for t in args]
        if sizes != [math.prod(slot.shape) for slot in (*inputs, output)]:
            return None
    module = codegen(lower(s, args, LIBRARY_ENTRY), target)
    with tempfile.TemporaryDirectory() as scratch:
        return module.export_library(Path(scratch) / "step.so").read_bytes()


class LlvmKernels:
    """The host's kernel builder (:class:`runtime.model.kernels.KernelBuilder`): the operators
    of :data:`LIBRARY_OPS` and :data:`~compiler.model.cpu_kernels_float.FLOAT_OPS`, compiled
    for this host's CPU."""

    ops = frozenset(LIBRARY_OPS) | frozenset(FLOAT_OPS)

    def target(self) -> str:
        """This host's triple, CPU and features, and a digest of the compiler's sources (a
        changed code generator builds new kernels, not the cached ones)."""
        from compiler.codegen.target import Target

        host = Target.host()
        return f"{host.triple} {host.cpu} {host.features} {_sources_digest()}"

    def build(
        self, op: str, inputs: Sequence[TensorSlot], output: TensorSlot, attrs: dict[str, Any]
    ) -> bytes | None:
        return cpu_library(op, inputs, output, attrs, "llvm")


@cache
def _sources_digest() -> str:
    """A digest of every source file of the compiler."""
    root = Path(__file__).resolve().parents[1]
    digest = hashlib.sha256()
    for path in sorted(root.rglob("*.py")):
        digest.update(path.relative_to(root).as_posix().encode())
        digest.update(path.read_bytes())
    return digest.hexdigest()[:16]


#: What the ``vtaforge.kernels`` entry point names.
LLVM_KERNELS = LlvmKernels()
