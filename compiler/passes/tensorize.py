"""The ``tensorize`` pass: a loop nest marked for tensorization becomes one intrinsic call.

The schedule marks the loops from a ``tensorize`` axis inward. The pass checks that they compute
what the declared intrinsic computes: a perfect nest whose loop extents equal the intrinsic's
axes (spatial loops are those the store indexes, in order; then the reduction loops) around one
store whose value matches the intrinsic's body node for node, each load standing for one of the
intrinsic's inputs. Every operand must be addressed linearly by the loops, with unit stride in
its innermost dimension; the call passes each operand's base address and its outer strides. A
reduction intrinsic accumulates: the nest's initialisation stays outside the call.
"""

from __future__ import annotations

from dataclasses import fields

from compiler.arith import ONE, from_linear, linear, simplify_expr
from compiler.errors import CompileError
from compiler.expr import Binary, Const, DType, Expr, IterVar, Reduce, TensorRead, Var
from compiler.loop_ir import (
    AttrKey,
    AttrStmt,
    Buffer,
    BufferAddress,
    CallIntrinsic,
    For,
    Load,
    LoweredFunc,
    Stmt,
    Store,
)
from compiler.visit import free_vars, substitute, transform

__all__ = ["tensorize"]


def tensorize(func: LoweredFunc) -> LoweredFunc:
    """``func`` with every tensorize-marked nest replaced by a :class:`CallIntrinsic`."""

    def replace(node: object) -> Stmt | None:
        if isinstance(node, AttrStmt) and node.key is AttrKey.TENSORIZE:
            return _call(node.value, node.body)
        return None

    return LoweredFunc(func.name, func.params, transform(func.body, replace))


def _fail(intrin: object, message: str) -> CompileError:
    return CompileError(f"cannot tensorize: {message}", op=intrin.name)


def _nest(intrin: object, region: Stmt) -> tuple[list[For], Store]:
    loops = []
    while isinstance(region, For):
        loops.append(region)
        region = region.body
    if not isinstance(region, Store):
        raise _fail(
            intrin, f"the loops hold a {type(region).__name__}, not a single store (a tail guard?)"
        )
    return loops, region


def _call(intrin: object, region: Stmt) -> CallIntrinsic:
    loops, store = _nest(intrin, region)
    op = intrin.output.op
    stored = set().union(*(free_vars(i) for i in store.indices)) if store.indices else set()
    spatial = [loop for loop in loops if loop.var in stored]
    reduce = [loop for loop in loops if loop.var not in stored]
    body = op.body
    axes_s = [a for a in op.axes if a.extent > 1]
    axes_r = [a for a in (body.axes if isinstance(body, Reduce) else ()) if a.extent > 1]
    for kind, mine, theirs in (("spatial", spatial, axes_s), ("reduction", reduce, axes_r)):
        got = [loop.extent for loop in mine]
        want = [axis.extent for axis in theirs]
        if got != want:
            raise _fail(intrin, f"{kind} loop extents {got} differ from the intrinsic's {want}")
    to_axis = {
        loop.var: axis.var for loop, axis in zip(spatial + reduce, axes_s + axes_r, strict=True)
    }
    unit = [a.var for a in op.axes if a.extent == 1]
    if isinstance(body, Reduce):
        value = store.value
        if not (
            isinstance(value, Binary)
            and value.op is body.combiner.value
            and value.a == Load(store.buffer, store.indices)
        ):
            raise _fail(intrin, "the store is not an accumulation like the intrinsic's")
        source, pattern = value.b, body.source
        unit += [a.var for a in body.axes if a.extent == 1]
    else:
        source, pattern = store.value, body
    pattern = substitute(pattern, {v: Const(0, DType.INT32) for v in unit})
    reads: dict[object, tuple[Buffer, tuple[Expr, ...], tuple[Expr, ...]]] = {}
    _match(intrin, source, pattern, reads)
    out_indices = tuple(Const(0, DType.INT32) if a.extent == 1 else a.var for a in op.axes)
    operands = [(store.buffer, store.indices, out_indices)]
    for tensor in intrin.inputs:
        if tensor not in reads:
            raise _fail(intrin, f"the loops never read the intrinsic's input {tensor.name!r}")
        operands.append(reads[tensor])
    addresses, strides = [], []
    for buffer, mine, theirs in operands:
        base, outer = _operand(intrin, buffer, mine, theirs, to_axis)
        addresses.append(BufferAddress(buffer, (base,)))
        strides.extend(Const(s, DType.INT32) for s in outer)
    return CallIntrinsic(intrin, (*addresses, *strides))


def _match(intrin: object, mine: Expr, theirs: Expr, reads: dict) -> None:
    """Check ``mine`` has ``theirs``'s shape; record which buffer stands for each input."""
    if isinstance(theirs, TensorRead):
        if not isinstance(mine, Load):
            raise _fail(intrin, f"expected a load for {theirs.tensor.name!r}")
        known = reads.setdefault(theirs.tensor, (mine.buffer, mine.indices, theirs.indices))
        if known[0] is not mine.buffer:
            raise _fail(intrin, f"input {theirs.tensor.name!r} is read from two buffers")
        return
    if type(mine) is not type(theirs) or isinstance(theirs, Var | IterVar):
        raise _fail(intrin, f"{type(mine).__name__} does not match {type(theirs).__name__}")
    for item in fields(theirs):
        if item.name in theirs.children:
            a, b = getattr(mine, item.name), getattr(theirs, item.name)
            pairs = zip(a, b, strict=True) if isinstance(b, tuple) else [(a, b)]
            if isinstance(b, tuple) and len(a) != len(b):
                raise _fail(intrin, "argument counts differ")
            for x, y in pairs:
                _match(intrin, x, y, reads)
        elif getattr(mine, item.name) != getattr(theirs, item.name):
            raise _fail(intrin, f"{type(mine).__name__}.{item.name} differs")


def _operand(
    intrin: object,
    buffer: Buffer,
    mine: tuple[Expr, ...],
    theirs: tuple[Expr, ...],
    to_axis: dict[Var, Var],
) -> tuple[Expr, list[int]]:
    """The base offset of an operand and its outer strides, checked against every loop."""
    form = linear(simplify_expr(buffer.offset(mine)))
    for atom in form:
        if atom != ONE and not isinstance(atom, Var) and free_vars(atom) & set(to_axis):
            raise _fail(intrin, f"{buffer.name!r} is not addressed linearly by the loops")
    base = from_linear({a: c for a, c in form.items() if a not in to_axis})
    their_forms = [linear(simplify_expr(index)) for index in theirs]
    strides = []
    for _dim, their in enumerate(their_forms):
        axis = next((a for a in their if a != ONE), None)
        loop = next((v for v, a in to_axis.items() if a is axis), None)
        strides.append(0 if loop is None else form.get(loop, 0) // their[axis])
    for loop, axis in to_axis.items():
        want = sum(
            their.get(axis, 0) * stride for their, stride in zip(their_forms, strides, strict=True)
        )
        if form.get(loop, 0) != want:
            raise _fail(intrin, f"{buffer.name!r} is not strided like the intrinsic's operand")
    if strides and their_forms[-1] and strides[-1] not in (0, 1):
        raise _fail(intrin, f"{buffer.name!r} must be contiguous in its innermost dimension")
    return base, strides[:-1]
