"""The ``tensorize_gemm`` pass: GEMM nests become compute steps on whole rows.

The generic ``tensorize`` pass (``compiler.passes``) checks that the loops from the tensorize
axis inward compute exactly the declared ``env.gemm`` intrinsic and replaces them with a call
taking each operand's element address and strides. Here each call becomes a
:class:`~compiler.accel.stmts.ComputeStep` on accumulator, input and weight *rows* (each operand
must live in its SRAM scope, densely, one row per intrinsic), and the reduction's
initialisation (a nest storing 0 into an accumulator buffer) becomes a reset step over the
same rows. The loops around the steps stay: ``fold_uop_loops`` turns them into micro-op kernels.
"""

from __future__ import annotations

from collections.abc import Callable

from compiler.accel.rows import (
    perfect_nest,
    rewrite_top_down,
    row_index,
    row_shape,
    split_element_loops,
)
from compiler.accel.stmts import ComputeStep, SramRow
from compiler.arith import from_linear, linear, simplify_expr
from compiler.errors import CompileError
from compiler.expr import Cast, Const, Expr
from compiler.loop_ir import BufferAddress, CallIntrinsic, For, LoweredFunc, Scope, Stmt, Store
from compiler.passes import tensorize
from compiler.visit import transform
from isa import AccelConfig, MemId

__all__ = ["tensorize_gemm"]

_OPERAND_SCOPE = {"out": Scope.ACCEL_ACC, "inp": Scope.ACCEL_INP, "wgt": Scope.ACCEL_WGT}
#: The intrinsic's inputs are named after their scopes (``Env.gemm``).
_ROLE_OF_SCOPE = {Scope.ACCEL_INP.value: "inp", Scope.ACCEL_WGT.value: "wgt"}


def tensorize_gemm(cfg: AccelConfig) -> Callable[[LoweredFunc], LoweredFunc]:
    """The pass for ``cfg`` (see the module docstring)."""

    def run(func: LoweredFunc) -> LoweredFunc:
        func = tensorize(func)

        def step(node: object) -> object:
            if isinstance(node, CallIntrinsic):
                return _gemm_step(cfg, node)
            return None

        body = transform(func.body, step)
        body = rewrite_top_down(body, lambda stmt: _reset_nest(cfg, stmt))
        return LoweredFunc(func.name, func.params, body)

    return run


def _operand_row(
    cfg: AccelConfig, stage: str, role: str, address: Expr, stride: Expr | None
) -> SramRow:
    if not isinstance(address, BufferAddress):
        raise CompileError(f"the GEMM's {role} operand is not a buffer address", tensor=stage)
    buffer = address.buffer
    scope = _OPERAND_SCOPE[role]
    if buffer.scope is not scope:
        raise CompileError(
            f"the GEMM reads its {role} operand from {buffer.name!r} in "
            f"{buffer.scope.value}; it must be in {scope.value} (cache it there)",
            tensor=stage,
        )
    mem = {"out": MemId.ACC, "inp": MemId.INP, "wgt": MemId.WGT}[role]
    rows, cols = row_shape(cfg, mem)
    if tuple(buffer.shape[-2:]) != (rows, cols) or buffer.strides is not None:
        raise CompileError(
            f"{buffer.name!r} of shape {buffer.shape} must be dense and end in one "
            f"{rows} x {cols} {mem.name} row",
            tensor=stage,
        )
    if rows > 1 and stride is not None and not (isinstance(stride, Const) and stride.value == cols):
        raise CompileError(
            f"the GEMM's {role} operand {buffer.name!r} is not one dense row", tensor=stage
        )
    form = linear(simplify_expr(address.indices[0]))
    row_elems = rows * cols
    if any(coef % row_elems for coef in form.values()):
        raise CompileError(
            f"the GEMM's {role} operand {buffer.name!r} does not start at a row boundary",
            tensor=stage,
        )
    row = from_linear({atom: coef // row_elems for atom, coef in form.items()})
    return SramRow(buffer, simplify_expr(row))


def _gemm_step(cfg: AccelConfig, call: CallIntrinsic) -> ComputeStep:
    """The compute step of one ``env.gemm`` call: the output first, then the inputs in the
    intrinsic's order, then one row stride per operand."""
    operands = len(call.intrin.inputs) + 1
    addresses, strides = call.args[:operands], call.args[operands:]
    out = addresses[0]
    stage = out.buffer.name if isinstance(out, BufferAddress) else call.intrin.name
    roles = ["out"] + [_ROLE_OF_SCOPE.get(t.name, t.name) for t in call.intrin.inputs]
    if sorted(roles) != ["inp", "out", "wgt"]:
        raise CompileError(
            f"intrinsic {call.intrin.name!r} is not the accelerator's GEMM (use env.gemm)",
            tensor=stage,
        )
    rows = {
        role: _operand_row(cfg, stage, role, address, strides[i] if strides else None)
        for i, (role, address) in enumerate(zip(roles, addresses, strict=True))
    }
    return ComputeStep(stage, dst=rows["out"], src=rows["inp"], wgt=rows["wgt"])


def _reset_nest(cfg: AccelConfig, stmt: Stmt) -> Stmt | None:
    """A nest storing 0 into every element of accumulator rows, as reset steps in the row
    loops; None when ``stmt`` is not one."""
    if not isinstance(stmt, For | Store):
        return None
    loops, store = perfect_nest(stmt)
    if not isinstance(store, Store) or store.buffer.scope is not Scope.ACCEL_ACC:
        return None
    value = store.value
    while isinstance(value, Cast):
        value = value.value
    if not (isinstance(value, Const) and value.value == 0):
        return None
    stage = store.buffer.name
    shape = row_shape(cfg, MemId.ACC)
    rows, _ = split_element_loops(stage, loops, store.buffer, store.indices, shape)
    dst = SramRow(store.buffer, row_index(stage, store.buffer, store.indices))
    result: Stmt = ComputeStep(stage, dst=dst, reset=True)
    for loop in reversed(rows):
        result = For(loop.var, loop.extent, loop.kind, result)
    return result
