"""CPU implementations of declared tensor intrinsics, derived from their declarations.

An intrinsic's function takes the address of each operand (output first, then inputs), then
every operand's outer strides in elements (innermost strides are 1). It runs the declared compute
over its axes, the reductions outermost and the innermost output axis vectorized, and
*accumulates* into the output when the declaration is a reduction.
"""

from __future__ import annotations

from compiler.expr import Binary, Const, DType, Reduce, TensorRead, Var
from compiler.loop_ir import Buffer, For, ForKind, Load, LoweredFunc, Stmt, Store
from compiler.passes import flatten
from compiler.passes.simplify import simplify
from compiler.te import Tensor, TensorIntrin
from compiler.visit import transform

__all__ = ["lower_intrinsic"]


def _operand(tensor: Tensor) -> Buffer:
    outer = tuple(Var(f"{tensor.name}.stride{d}") for d in range(tensor.ndim - 1))
    strides = (*outer, Const(1, DType.INT32)) if tensor.ndim else ()
    return Buffer(tensor.name, tensor.shape, tensor.dtype, strides=strides)


def lower_intrinsic(intrin: TensorIntrin) -> LoweredFunc:
    """The loop IR of ``intrin``'s implementation (name: the intrinsic's name)."""
    op = intrin.output.op
    out = _operand(intrin.output)
    buffers = {tensor: _operand(tensor) for tensor in intrin.inputs}

    def load(node: object) -> Load | None:
        if isinstance(node, TensorRead):
            return Load(buffers[node.tensor], node.indices)
        return None

    index = tuple(axis.var for axis in op.axes)
    body = op.body
    if isinstance(body, Reduce):
        value = Binary(body.combiner.value, Load(out, index), transform(body.source, load))
        reduce_axes = body.axes
    else:
        value, reduce_axes = transform(body, load), ()
    stmt: Stmt = Store(out, index, value)
    for position, axis in enumerate(reversed(op.axes)):
        kind = ForKind.VECTORIZED if position == 0 else ForKind.SERIAL  # wide ones stay loops
        stmt = For(axis.var, axis.extent, kind, stmt)
    for axis in reversed(reduce_axes):
        stmt = For(axis.var, axis.extent, ForKind.SERIAL, stmt)
    func = LoweredFunc(intrin.name, (out, *(buffers[t] for t in intrin.inputs)), stmt)
    return simplify(flatten(func))
