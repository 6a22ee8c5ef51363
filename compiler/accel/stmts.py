"""The accelerator's statements in the loop IR, produced by the accelerator's lowering passes.

Each replaces a loop nest of plain stores: :class:`Dma` a copy between DRAM and an SRAM buffer
(one 2-D LOAD or STORE), :class:`ComputeStep` one micro-op's worth of GEMM or ALU work on whole
SRAM rows, and :class:`UopKernel` a loop nest of compute steps folded into one GEMM or ALU
instruction (micro-ops plus the two hardware loops). Rows are :class:`SramRow`: a buffer and a
row index relative to its start, so that virtual threads can replicate buffers and the emitter
can place them. Every field that may depend on a loop variable is an expression,
listed in ``children`` so the generic traversals (``substitute``, ``simplify``) reach it.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import ClassVar

from compiler.expr import Expr, Node, Var
from compiler.loop_ir import Buffer, Stmt
from isa import AluOp, MemId, Opcode, Stage

__all__ = ["ComputeStep", "Dma", "SramRow", "UopKernel", "buffer_rows", "transfer_module"]


def transfer_module(opcode: Opcode, mem: MemId) -> Stage:
    """The module that runs a LOAD or STORE of ``mem`` (``isa.stage_of``'s rule)."""
    if opcode is Opcode.STORE:
        return Stage.STORE
    return Stage.LOAD if mem in (MemId.INP, MemId.WGT) else Stage.COMPUTE


def buffer_rows(buffer: Buffer) -> int:
    """SRAM rows of ``buffer``: the product of its dimensions before the last two (one row)."""
    rows = 1
    for extent in buffer.shape[:-2]:
        rows *= extent
    return rows


@dataclass(frozen=True)
class SramRow(Node):
    """Row ``index`` of the SRAM ``buffer`` (rows of ``BATCH x BLOCK`` elements)."""

    buffer: Buffer
    index: Expr
    children: ClassVar = ("index",)

    def describe(self, fmt: Callable[[Expr], str]) -> str:
        return f"{self.buffer.name}[{fmt(self.index)}]"


@dataclass(frozen=True)
class Dma(Stmt):
    """One 2-D transfer (LOAD or STORE of ``mem``) between ``dram`` and SRAM rows from ``sram``.

    The SRAM side is ``y_extent`` lines of ``x_extent`` rows, written densely; the DRAM side is
    element ``dram_index + y * x_stride + x``. ``y_bounds`` / ``x_bounds`` (``lo``, ``hi``), when
    set, say which lines / columns exist in DRAM: the others are zero padding (LOAD only).
    ``stage`` names the copy stage, for errors.
    """

    stage: str
    opcode: Opcode
    mem: MemId
    sram: SramRow
    dram: Buffer
    dram_index: Expr
    y_extent: int
    x_extent: int
    x_stride: int
    y_bounds: tuple[Expr, Expr] | None = None
    x_bounds: tuple[Expr, Expr] | None = None
    children: ClassVar = ("sram", "dram_index", "y_bounds", "x_bounds")

    def describe(self, fmt: Callable[[Expr], str]) -> str:
        def bounds(name: str, value: tuple[Expr, Expr] | None) -> str:
            return "" if value is None else f", {name} in [{fmt(value[0])}, {fmt(value[1])})"

        sram = self.sram.describe(fmt)
        dram = f"{self.dram.name}[{fmt(self.dram_index)} + y*{self.x_stride} + x]"
        src, dst = (dram, sram) if self.opcode is Opcode.LOAD else (sram, dram)
        return (
            f"dma.{self.opcode.name.lower()} {self.mem.name} {dst} <- {src} for y < "
            f"{self.y_extent}, x < {self.x_extent}{bounds('y', self.y_bounds)}"
            f"{bounds('x', self.x_bounds)}"
        )


@dataclass(frozen=True)
class ComputeStep(Stmt):
    """One step of GEMM (``alu_op`` None) or ALU work on accumulator row ``dst``.

    GEMM: ``dst += src (INP row) x wgt (WGT row)``, or ``dst = 0`` with ``reset``. ALU:
    ``dst = alu_op(dst, imm)`` when ``imm`` is set, else ``alu_op(dst, src)`` (``src`` an
    accumulator row); ``reset`` zeroes ``dst``.
    """

    stage: str
    dst: SramRow
    src: SramRow | None = None
    wgt: SramRow | None = None
    reset: bool = False
    alu_op: AluOp | None = None
    imm: int | None = None
    children: ClassVar = ("dst", "src", "wgt")

    @property
    def is_gemm(self) -> bool:
        return self.alu_op is None

    def describe(self, fmt: Callable[[Expr], str]) -> str:
        dst = self.dst.describe(fmt)
        if self.reset:
            return f"{dst} = 0"
        if self.is_gemm:
            assert self.src is not None and self.wgt is not None
            return f"{dst} += gemm({self.src.describe(fmt)}, {self.wgt.describe(fmt)})"
        operand = str(self.imm) if self.imm is not None else self.src.describe(fmt)
        return f"{dst} = alu.{self.alu_op.name.lower()}({dst}, {operand})"


@dataclass(frozen=True)
class UopKernel(Stmt):
    """``step`` run over loops: the ``unrolled`` ones become one micro-op each (outermost
    first, in execution order) and the ``loops`` (at most two, outermost first) become the
    instruction's ``iter_out`` / ``iter_in``. The loop variables are bound here."""

    step: ComputeStep
    unrolled: tuple[tuple[Var, int], ...]
    loops: tuple[tuple[Var, int], ...]
    children: ClassVar = ("step",)

    def describe(self, fmt: Callable[[Expr], str]) -> str:
        def loops(pairs: tuple[tuple[Var, int], ...]) -> str:
            return ", ".join(f"{var.name} < {extent}" for var, extent in pairs) or "-"

        kind = "gemm" if self.step.is_gemm else "alu"
        return (
            f"{kind}.kernel(loops: {loops(self.loops)}; micro-ops: {loops(self.unrolled)}) "
            f"{self.step.describe(fmt)}"
        )

    @property
    def uop_count(self) -> int:
        count = 1
        for _, extent in self.unrolled:
            count *= extent
        return count
