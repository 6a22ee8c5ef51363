"""Addressing by rows: how the accelerator's lowering passes read a buffer access.

The accelerator moves and computes whole rows: an INP row is ``BATCH x BLOCK_IN`` elements, a WGT
row ``BLOCK_OUT x BLOCK_IN``, an ACC/OUT row ``BATCH x BLOCK_OUT``. A tensor in a packed layout
ends with those two dimensions; its leading dimensions number the rows. The helpers here split a
perfect loop nest into the loops inside one row (the *element* loops, innermost, covering the
row) and the loops over rows, and turn an access into its row index, with errors that name the
stage and the buffer.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import replace

from compiler.arith import ONE, from_linear, linear, simplify_expr
from compiler.errors import CompileError
from compiler.expr import Const, DType, Expr, Var
from compiler.loop_ir import Buffer, For, Scope, Stmt
from compiler.visit import free_vars
from isa import AccelConfig, MemId

__all__ = [
    "SRAM_MEMORY",
    "coefficient",
    "perfect_nest",
    "rewrite_top_down",
    "row_index",
    "row_shape",
    "split_element_loops",
]

#: The SRAM scopes and the buffer each one names.
SRAM_MEMORY = {Scope.ACCEL_INP: MemId.INP, Scope.ACCEL_WGT: MemId.WGT, Scope.ACCEL_ACC: MemId.ACC}


def row_shape(cfg: AccelConfig, mem: MemId) -> tuple[int, int]:
    """The (rows, columns) of elements in one row of ``mem``."""
    if mem is MemId.INP:
        return (cfg.batch, cfg.block_in)
    if mem is MemId.WGT:
        return (cfg.block_out, cfg.block_in)
    return (cfg.batch, cfg.block_out)


def perfect_nest(stmt: Stmt) -> tuple[list[For], Stmt]:
    """The loops of a perfect nest from ``stmt`` inward, and the statement inside them."""
    loops = []
    while isinstance(stmt, For):
        loops.append(stmt)
        stmt = stmt.body
    return loops, stmt


def split_element_loops(
    stage: str, loops: Sequence[For], buffer: Buffer, indices: Sequence[Expr], shape: tuple
) -> tuple[list[For], list[For]]:
    """(row loops, element loops) of a nest accessing ``buffer[indices]`` row by row.

    The last two indices must each be 0 (a dimension of extent 1) or a loop variable running
    over the whole dimension, and those loops must be the innermost of the nest.
    """
    if tuple(buffer.shape[-2:]) != tuple(shape):
        raise CompileError(
            f"buffer {buffer.name!r} of shape {buffer.shape} does not end in the accelerator's "
            f"row shape {shape}: use the packed layout",
            tensor=stage,
        )
    element_vars: list[Var] = []
    for dim, (index, extent) in enumerate(zip(indices[-2:], shape, strict=True)):
        if isinstance(index, Const) and index.value == 0 and extent == 1:
            continue
        loop = next((lp for lp in loops if lp.var is index), None)
        if loop is None or loop.extent != extent:
            raise CompileError(
                f"the access {buffer.name}[...] does not cover whole rows: dimension "
                f"{len(buffer.shape) - 2 + dim} must run over all {extent} elements inside the "
                "loops",
                tensor=stage,
            )
        element_vars.append(index)
    count = len(element_vars)
    inner = list(loops[len(loops) - count :]) if count else []
    if {lp.var for lp in inner} != set(element_vars):
        raise CompileError(
            f"the loops over the elements of a {buffer.name!r} row must be the innermost",
            tensor=stage,
        )
    return list(loops[: len(loops) - count]), inner


def row_index(stage: str, buffer: Buffer, indices: Sequence[Expr]) -> Expr:
    """The row of ``buffer[indices]`` (its last two dimensions are one row), simplified.

    Rows are numbered row-major over the leading dimensions, whatever the buffer's strides.
    """
    index: Expr = Const(0, DType.INT32)
    step = 1
    for dim in range(len(buffer.shape) - 3, -1, -1):
        index = index + indices[dim] * step
        step *= buffer.shape[dim]
    return simplify_expr(index)


def coefficient(stage: str, expr: Expr, var: Var) -> int:
    """The constant coefficient of ``var`` in the linear ``expr`` (0 when absent)."""
    form = linear(expr)
    for atom in form:
        if atom != ONE and atom is not var and var in free_vars(atom):
            raise CompileError(
                f"the index {from_linear(form)} is not linear in the loop {var.name!r}",
                tensor=stage,
            )
    return form.get(var, 0)


def rewrite_top_down(stmt: Stmt, fn: Callable[[Stmt], Stmt | None]) -> Stmt:
    """``stmt`` with the outermost statements ``fn`` replaces (``fn`` returns None to keep a
    statement and look inside it), rebuilt around them."""
    replaced = fn(stmt)
    if replaced is not None:
        return replaced
    changes = {}
    for name in stmt.children:
        value = getattr(stmt, name)
        if isinstance(value, Stmt):
            new = rewrite_top_down(value, fn)
            if new is not value:
                changes[name] = new
        elif isinstance(value, tuple) and value and all(isinstance(v, Stmt) for v in value):
            new_items = tuple(rewrite_top_down(v, fn) for v in value)
            if any(a is not b for a, b in zip(new_items, value, strict=True)):
                changes[name] = new_items
    return replace(stmt, **changes) if changes else stmt
