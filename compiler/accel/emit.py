"""The emitter: a lowered accelerator function becomes an :class:`isa.Program`.

The program is static (DESIGN principle 6), so the emitter runs the function's loops
itself. It lays the arguments out in DRAM (each in the memory type its transfers use, aligned
as the DMA needs), places every SRAM buffer at fixed rows (a stack per memory following the
allocations' nesting; a tile that does not fit is a CompileError naming the buffer and the
rows), walks the loops to produce the instruction stream (:mod:`compiler.accel.stream`),
inserts the dependency tokens (:mod:`compiler.accel.passes.tokens`) and writes it through the
:class:`isa.ProgramBuilder`, which also places the micro-op kernels in the micro-op buffer,
reusing a resident kernel instead of loading it again.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np

from compiler.accel.evaluate import Env, compile_expr
from compiler.accel.passes.tokens import insert_tokens
from compiler.accel.passes.uops import grid, kernel_coefficients
from compiler.accel.rows import SRAM_MEMORY, row_shape
from compiler.accel.stmts import Dma, SramRow, UopKernel, buffer_rows
from compiler.accel.stream import KernelRun, Transfer, emit
from compiler.errors import CompileError
from compiler.expr import Var
from compiler.loop_ir import (
    Allocate,
    AttrStmt,
    Buffer,
    CallIntrinsic,
    For,
    IfThenElse,
    LoweredFunc,
    Scope,
    Seq,
    Stmt,
    Store,
)
from compiler.visit import children, walk
from isa import (
    AccelConfig,
    BuilderError,
    DramBuffer,
    Kernel,
    Loop,
    MemId,
    Operand,
    Program,
    ProgramBuilder,
    Uop,
)

__all__ = ["Generated", "generate"]

#: The micro-op fields in their order in ``(dst, src, wgt)`` tuples.
_OPERANDS = (Operand.DST, Operand.SRC, Operand.WGT)


@dataclass(frozen=True)
class Generated:
    """A generated program, where its arguments live, and its stream with the tokens."""

    program: Program
    layout: dict[str, DramBuffer]
    ops: tuple
    tokens: tuple


def generate(
    cfg: AccelConfig,
    func: LoweredFunc,
    placement: Sequence[int] | None = None,
    uop_start: int = 0,
) -> Generated:
    """The program of the lowered accelerator function ``func`` (see the module docstring).

    Without ``placement`` the arguments get zeroed DRAM segments of their own, from address 0.
    With it, argument ``k`` lives at byte ``placement[k]`` of a DRAM image the caller owns (the
    program carries no segment for it) and the micro-op table starts at byte ``uop_start``.
    """
    _check_lowered(func)
    if placement is not None and len(placement) != len(func.params):
        raise CompileError(
            f"placement gives {len(placement)} addresses for {len(func.params)} arguments",
            op=func.name,
        )
    try:
        builder = ProgramBuilder(cfg, dram_start=uop_start)
    except BuilderError as err:
        raise CompileError(str(err), op="codegen") from None
    layout = _layout(cfg, func, builder, placement)
    bases = _place(cfg, func)
    ops: list = []
    _Walker(cfg, layout, bases, ops).run(func.body, {})
    tokens = insert_tokens(cfg, ops)
    try:
        emit(builder, ops, tokens)
        program = builder.finish()
    except BuilderError as err:
        raise CompileError(str(err), op="codegen") from None
    return Generated(program, layout, tuple(ops), tuple(tokens))


def _check_lowered(func: LoweredFunc) -> None:
    """Every statement left must be one the accelerator runs; name the stage that is not."""
    for node in walk(func.body):
        if isinstance(node, Store):
            buffer = node.buffer
            if buffer.scope is Scope.ACCEL_ACC:
                hint = "needs pragma alu (or tensorize with env.gemm)"
            elif buffer.scope in SRAM_MEMORY or any(buffer is p for p in func.params):
                hint = "is a copy stage without the dma_copy pragma"
            else:
                hint = (
                    f"lives in {buffer.scope.value} memory: set_scope it to an accelerator "
                    "scope (env.inp_scope, env.wgt_scope or env.acc_scope)"
                )
            raise CompileError(f"stage {buffer.name!r} {hint}", tensor=buffer.name)
        if isinstance(node, CallIntrinsic):
            raise CompileError(
                f"intrinsic {node.intrin.name!r} is not the accelerator's GEMM", op=node.intrin.name
            )


# --------------------------------------------------------------------------- DRAM layout
def _layout(
    cfg: AccelConfig, func: LoweredFunc, builder: ProgramBuilder, placement: Sequence[int] | None
) -> dict:
    """Each argument as a DRAM buffer of the memory type its transfers use (at its
    ``placement`` address, owned by the caller, where one is given)."""
    memory: dict[Buffer, MemId] = {}
    for node in walk(func.body):
        if isinstance(node, Dma):
            known = memory.setdefault(node.dram, node.mem)
            if known is not node.mem:
                raise CompileError(
                    f"is moved both as {known.name} and as {node.mem.name} elements",
                    tensor=node.dram.name,
                )
    layout = {}
    for index, param in enumerate(func.params):
        if param not in memory:
            raise CompileError(
                "is an argument that no dma_copy stage moves (cache_read it into an "
                "accelerator scope, or copy the result out with dma_copy)",
                tensor=param.name,
            )
        mem = memory[param]
        rows, cols = row_shape(cfg, MemId.ACC if mem in (MemId.ACC_8BIT, MemId.OUT) else mem)
        elems = param.size // (rows * cols)
        try:
            if placement is None:
                layout[param.name] = builder.alloc(param.name, mem, elems)
            else:
                layout[param.name] = builder.extern(param.name, mem, elems, placement[index])
        except BuilderError as err:
            raise CompileError(str(err), tensor=param.name) from None
    return layout


# ------------------------------------------------------------------------- SRAM placement
def _place(cfg: AccelConfig, func: LoweredFunc) -> dict[Buffer, int]:
    """The first row of every SRAM buffer: a stack per memory, following the nesting."""
    bases: dict[Buffer, int] = {}
    top = {mem: 0 for mem in SRAM_MEMORY.values()}

    def visit(stmt: Stmt) -> None:
        if isinstance(stmt, Allocate) and stmt.buffer.scope in SRAM_MEMORY:
            mem = SRAM_MEMORY[stmt.buffer.scope]
            rows = buffer_rows(stmt.buffer)
            depth = cfg.buffer_depth(mem)
            if top[mem] + rows > depth:
                size = cfg.elem_bytes(mem)
                raise CompileError(
                    f"does not fit the {mem.name} buffer: it needs rows {top[mem]}.."
                    f"{top[mem] + rows - 1} ({rows * size} bytes after the "
                    f"{top[mem] * size} bytes of the buffers allocated around it, "
                    f"{(top[mem] + rows) * size} in all), the buffer has {depth} rows "
                    f"({depth * size} bytes)",
                    tensor=stmt.buffer.name,
                )
            bases[stmt.buffer] = top[mem]
            top[mem] += rows
            visit(stmt.body)
            top[mem] -= rows
            return
        for child in children(stmt):
            if isinstance(child, Stmt):
                visit(child)

    visit(func.body)
    return bases


# ------------------------------------------------------------------------------ the walk
class _Walker:
    """Runs the loops, appending one stream operation per transfer and kernel run."""

    def __init__(self, cfg: AccelConfig, layout: dict, bases: dict[Buffer, int], ops: list) -> None:
        self.cfg = cfg
        self.layout = layout
        self.bases = bases
        self.ops = ops
        self._compiled: dict[int, Callable[[Env], object]] = {}
        self._coefficients: dict[int, dict[Operand, list[int]]] = {}
        self._kernels: dict[tuple, Kernel] = {}

    def run(self, stmt: Stmt, env: dict[Var, int]) -> None:
        if isinstance(stmt, Seq):
            for part in stmt.stmts:
                self.run(part, env)
        elif isinstance(stmt, For):
            for value in range(stmt.extent):
                env[stmt.var] = value
                self.run(stmt.body, env)
            del env[stmt.var]
        elif isinstance(stmt, Allocate | AttrStmt):
            self.run(stmt.body, env)
        elif isinstance(stmt, IfThenElse):
            branch = stmt.then if self._value(stmt.cond, env) else stmt.otherwise
            if branch is not None:
                self.run(branch, env)
        elif isinstance(stmt, Dma):
            self.ops.extend(self._transfers(stmt, env))
        elif isinstance(stmt, UopKernel):
            self.ops.append(self._kernel(stmt, env))
        else:
            raise CompileError(f"the accelerator cannot run a {type(stmt).__name__}")

    def _value(self, expr: object, env: Env) -> int:
        fn = self._compiled.get(id(expr))
        if fn is None:
            fn = self._compiled[id(expr)] = compile_expr(expr)
        return fn(env)

    def _row(self, row: SramRow, env: Env) -> int:
        if row.buffer not in self.bases:
            raise CompileError(f"buffer {row.buffer.name!r} is used outside its allocation")
        return self.bases[row.buffer] + self._value(row.index, env)

    # ----------------------------------------------------------------------- transfers
    def _transfers(self, dma: Dma, env: Env) -> list[Transfer]:
        ylo, yhi = self._bounds(dma.y_bounds, dma.y_extent, env)
        xlo, xhi = self._bounds(dma.x_bounds, dma.x_extent, env)
        sram = self._row(dma.sram, env)
        dram = self.layout[dma.dram.name]
        make = lambda **kw: Transfer(dma.stage, dma.opcode, dma.mem, dram, **kw)  # noqa: E731
        if yhi > ylo and xhi > xlo:
            offset = self._value(dma.dram_index, env) + ylo * dma.x_stride + xlo
            pads = (ylo, dma.y_extent - yhi, xlo, dma.x_extent - xhi)
            return [
                make(
                    offset=offset,
                    sram=sram,
                    y_size=yhi - ylo,
                    x_size=xhi - xlo,
                    x_stride=dma.x_stride,
                    pads=pads,
                )
            ]
        # Nothing of the region is in DRAM: zero lines, as many as one pad field holds at once.
        most = (1 << self.cfg.mem_pad_bits) - 1
        transfers = []
        for first in range(0, dma.y_extent, most):
            lines = min(most, dma.y_extent - first)
            transfers.append(
                make(
                    offset=0,
                    sram=sram + first * dma.x_extent,
                    y_size=0,
                    x_size=dma.x_extent,
                    x_stride=dma.x_extent,
                    pads=(lines, 0, 0, 0),
                )
            )
        return transfers

    def _bounds(self, bounds: tuple | None, extent: int, env: Env) -> tuple[int, int]:
        if bounds is None:
            return 0, extent
        lo = min(max(self._value(bounds[0], env), 0), extent)
        hi = max(min(self._value(bounds[1], env), extent), lo)
        return lo, hi

    # ------------------------------------------------------------------------- kernels
    def _kernel(self, kernel: UopKernel, env: Env) -> KernelRun:
        step = kernel.step
        rows = (step.dst, step.src, step.wgt)
        inner = dict(env)
        for var, _ in kernel.unrolled + kernel.loops:
            inner[var] = 0
        bases = tuple(self._row(row, inner) if row is not None else 0 for row in rows)
        key = (id(kernel), bases)
        if key not in self._kernels:  # the same kernel at the same rows: built once
            self._kernels[key] = self._build_kernel(kernel, bases)
        return KernelRun(step.stage, self._kernels[key], step.reset, step.alu_op, step.imm)

    def _build_kernel(self, kernel: UopKernel, bases: tuple[int, int, int]) -> Kernel:
        if id(kernel) not in self._coefficients:
            self._coefficients[id(kernel)] = kernel_coefficients(kernel)
        coefs = self._coefficients[id(kernel)]
        extents = [extent for _, extent in kernel.unrolled]
        counters = grid(extents)
        columns = [
            base + np.array(coefs[field][: len(extents)], dtype=np.int64) @ counters
            for base, field in zip(bases, _OPERANDS, strict=True)
        ]
        uops = tuple(
            Uop(dst_idx=int(d), src_idx=int(s), wgt_idx=int(w))
            for d, s, w in zip(*columns, strict=True)
        )
        loops = tuple(
            Loop(
                extent,
                dst_factor=coefs[Operand.DST][len(extents) + i],
                src_factor=coefs[Operand.SRC][len(extents) + i],
                wgt_factor=coefs[Operand.WGT][len(extents) + i],
            )
            for i, (_, extent) in enumerate(kernel.loops)
        )
        return Kernel(uops, loops)
