"""The ``fold_uop_loops`` pass: nests of compute steps become micro-op kernels.

A GEMM or ALU instruction runs its micro-ops inside two hardware loops whose counters advance
every row index by constant factors. For each loop nest around one compute step this pass
chooses which loops become the hardware loops (``iter_out``, ``iter_in``), the order in which
the others are unrolled into micro-ops, and, when the nest cannot be one instruction, how many
outer loops stay loops around it (one instruction per iteration). The choice is the one with
the fewest instructions, then the fewest micro-ops, among those that:

- fit the micro-op buffer (at most half of it, so the next kernel can load beside it),
- fit the instruction's loop fields (checked by encoding the instruction), and
- keep the accumulator read-after-write window (SEMANTICS 5-6): consecutive steps of a GEMM
  must write different rows. A reduction's order is free, so the loops can be reordered to
  achieve this (the tutorials' "write a different output location every step" rule).

An ALU step that reads rows the same instruction writes elsewhere would see a partly updated
buffer: that is a CompileError.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable, Sequence

import numpy as np

from compiler.accel.rows import coefficient, perfect_nest, rewrite_top_down
from compiler.accel.stmts import ComputeStep, UopKernel
from compiler.arith import ONE, linear, simplify_expr
from compiler.errors import CompileError
from compiler.expr import Var
from compiler.loop_ir import For, ForKind, LoweredFunc, Stmt
from isa import (
    AccelConfig,
    AluInsn,
    AluOp,
    EncodingError,
    GemmInsn,
    Operand,
    encode,
    window_violation,
)

__all__ = ["fold_uop_loops", "grid", "kernel_coefficients", "kernel_insn"]

_Loop = tuple[Var, int]


def fold_uop_loops(cfg: AccelConfig) -> Callable[[LoweredFunc], LoweredFunc]:
    """The pass for ``cfg`` (see the module docstring)."""

    def fold(stmt: Stmt) -> Stmt | None:
        loops, leaf = perfect_nest(stmt)
        if not isinstance(leaf, ComputeStep):
            return None
        return _fold(cfg, loops, leaf)

    def run(func: LoweredFunc) -> LoweredFunc:
        return LoweredFunc(func.name, func.params, rewrite_top_down(func.body, fold))

    return run


def kernel_insn(
    step: ComputeStep, loops: Sequence[_Loop], factors: dict[Operand, list[int]], uops: int
) -> GemmInsn | AluInsn:
    """The instruction that runs ``uops`` micro-ops of ``step`` inside ``loops`` (outermost
    first, at most two) advancing each operand by ``factors`` (one per loop)."""
    padded = [(None, 1)] * (2 - len(loops)) + list(loops)
    fields: dict[str, object] = {
        "uop_bgn": 0,
        "uop_end": uops,
        "iter_out": padded[0][1],
        "iter_in": padded[1][1],
        "reset_reg": step.reset,
    }
    for operand, (_, out_name, in_name) in (
        (op, op.value) for op in (Operand.DST, Operand.SRC, Operand.WGT)
    ):
        values = [0] * (2 - len(loops)) + factors[operand]
        if operand is Operand.WGT and not step.is_gemm:
            continue
        fields[out_name], fields[in_name] = values
    if step.is_gemm:
        return GemmInsn(**fields)
    return AluInsn(
        alu_opcode=step.alu_op or AluOp.ADD,
        use_imm=step.imm is not None,
        imm=step.imm or 0,
        **fields,
    )


def kernel_coefficients(kernel: UopKernel) -> dict[Operand, list[int]]:
    """Each operand's coefficient of the kernel's loops: the unrolled loops, then the hardware
    loops (their factors)."""
    return _coefficients(kernel.step, [var for var, _ in kernel.unrolled + kernel.loops])


def _coefficients(step: ComputeStep, variables: Sequence[Var]) -> dict[Operand, list[int]]:
    """Each operand's row-index coefficient of each of ``variables`` (0 for a missing one)."""
    rows = {Operand.DST: step.dst, Operand.SRC: step.src, Operand.WGT: step.wgt}
    return {
        operand: [
            coefficient(step.stage, row.index, var) if row is not None else 0 for var in variables
        ]
        for operand, row in rows.items()
    }


def _fold(cfg: AccelConfig, loops: list[For], step: ComputeStep) -> Stmt:
    for loop in loops:
        if loop.kind not in (ForKind.SERIAL, ForKind.UNROLLED):
            raise CompileError(
                f"the loop {loop.var.name!r} around a compute step is {loop.kind.value}",
                tensor=step.stage,
            )
    coefs = _coefficients(step, [loop.var for loop in loops])
    _check_alu_reads(step, loops, coefs)
    limit = max(1, cfg.uop_buff_depth // 2)
    for kept in range(len(loops) + 1):
        choice = _best(cfg, step, loops[kept:], {k: v[kept:] for k, v in coefs.items()}, limit)
        if choice is not None:
            unrolled, hw = choice
            result: Stmt = UopKernel(step, unrolled, hw)
            for loop in reversed(loops[:kept]):
                result = For(loop.var, loop.extent, ForKind.SERIAL, result)
            return result
    raise CompileError("no micro-op kernel can run this step", tensor=step.stage)


def _best(
    cfg: AccelConfig,
    step: ComputeStep,
    loops: Sequence[For],
    coefs: dict[Operand, list[int]],
    limit: int,
) -> tuple[tuple[_Loop, ...], tuple[_Loop, ...]] | None:
    """The feasible (unrolled, hardware) loops with the fewest micro-ops, or None."""
    positions = range(len(loops))
    candidates = []
    for count in (2, 1, 0):
        for hw in itertools.permutations(positions, count):
            rest = [p for p in positions if p not in hw]
            uops = int(np.prod([loops[p].extent for p in rest], dtype=np.int64))
            if uops > limit:
                continue
            candidates.append((uops, hw, rest))
    candidates.sort(key=lambda c: (c[0], [-loops[p].extent for p in c[1]]))
    for _, hw, rest in candidates:
        for order in _orders(rest, coefs[Operand.DST]):
            if _feasible(cfg, step, loops, coefs, hw, order):
                as_loop = lambda p: (loops[p].var, loops[p].extent)  # noqa: E731
                return tuple(map(as_loop, order)), tuple(map(as_loop, hw))
    return None


def _orders(rest: list[int], dst: list[int]) -> list[list[int]]:
    """Unrolling orders to try: the nest's own, then the destination-moving loops innermost."""
    moving_last = sorted(rest, key=lambda p: dst[p] != 0)
    return [rest] if moving_last == rest else [rest, moving_last]


def _feasible(
    cfg: AccelConfig,
    step: ComputeStep,
    loops: Sequence[For],
    coefs: dict[Operand, list[int]],
    hw: Sequence[int],
    order: Sequence[int],
) -> bool:
    grids = grid([loops[p].extent for p in order])
    uops = {
        operand: np.array([values[p] for p in order], dtype=np.int64) @ grids
        for operand, values in coefs.items()
    }
    hw_loops = [(loops[p].var, loops[p].extent) for p in hw]
    factors = {operand: [values[p] for p in hw] for operand, values in coefs.items()}
    try:
        insn = kernel_insn(step, hw_loops, factors, len(uops[Operand.DST]))
        encode(insn, cfg)
    except EncodingError:
        return False
    uops[Operand.SRC] = uops[Operand.SRC] + _source_offset(step, uops, hw_loops, factors)
    # The window compares rows for equality, so the rows' common offset does not matter.
    low = min(int(values.min()) for values in uops.values())
    shifted = {op: values - min(low, 0) for op, values in uops.items()}
    return window_violation(insn, shifted, cfg.acc_raw_window) is None


def _source_offset(
    step: ComputeStep,
    uops: dict[Operand, np.ndarray],
    loops: list[tuple[Var, int]],
    factors: dict[Operand, list[int]],
) -> int:
    """Where an ALU step's source rows lie relative to its destination rows (both without
    their loop terms): a constant in the same buffer; in another buffer, past every row the
    destination reaches (two live buffers never share a row)."""
    if step.is_gemm or step.src is None:
        return 0
    if step.src.buffer is step.dst.buffer:
        diff = linear(simplify_expr(step.src.index - step.dst.index))
        return diff.get(ONE, 0)

    def reach(operand: Operand, pick: Callable[..., int]) -> int:
        moves = [(extent - 1) * f for (_, extent), f in zip(loops, factors[operand], strict=True)]
        return int(pick(uops[operand])) + sum(pick(0, m) for m in moves)

    return reach(Operand.DST, max) - reach(Operand.SRC, min) + 1


def _check_alu_reads(step: ComputeStep, loops: Sequence[For], coefs: dict) -> None:
    """An ALU step must not read, from its own buffer, rows another step of the nest writes."""
    if step.is_gemm or step.src is None or step.src.buffer is not step.dst.buffer:
        return
    if step.src.index == step.dst.index:
        return
    loop_vars = {loop.var for loop in loops}
    diff = linear(simplify_expr(step.src.index - step.dst.index))
    if any(atom != ONE and atom not in loop_vars for atom in diff):
        raise CompileError(
            f"cannot tell which rows of {step.dst.buffer.name!r} the ALU reads",
            tensor=step.stage,
        )
    grids = grid([loop.extent for loop in loops])
    dst = np.array(coefs[Operand.DST], dtype=np.int64) @ grids
    src = np.array(coefs[Operand.SRC], dtype=np.int64) @ grids + diff.get(ONE, 0)
    if np.intersect1d(dst, src).size:
        raise CompileError(
            f"the ALU reads rows of {step.dst.buffer.name!r} that the same operation writes",
            tensor=step.stage,
        )


def grid(extents: Sequence[int]) -> np.ndarray:
    """Every combination of loop counters for ``extents`` (outermost first, the last varying
    fastest), one column each: shape ``(len(extents), product)``; one empty column when there
    are no loops."""
    if not extents:
        return np.zeros((0, 1), dtype=np.int64)
    return np.indices(extents, dtype=np.int64).reshape(len(extents), -1)
