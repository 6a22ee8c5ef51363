"""The instruction stream: the accelerator operations a lowered function runs, in program order.

The emitter (:mod:`compiler.accel.emit`) walks the lowered function's loops and produces one
record per transfer and per micro-op kernel run (:class:`Transfer`, :class:`KernelRun`), each
knowing the module that runs it and the SRAM rows it reads and writes. :func:`insert_tokens` (in
:mod:`compiler.accel.passes.tokens`) orders them; :func:`emit` writes them through the
:class:`isa.ProgramBuilder`.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from compiler.accel.stmts import transfer_module
from isa import (
    AluOp,
    DramBuffer,
    GemmInsn,
    Kernel,
    MemId,
    Opcode,
    Operand,
    ProgramBuilder,
    Stage,
    step_indices,
)

__all__ = ["SHARED", "KernelRows", "KernelRun", "Transfer", "emit", "format_stream"]

#: The SRAM buffers that two modules share, so that tokens must order their accesses.
SHARED = (MemId.INP, MemId.WGT, MemId.OUT)


@dataclass(frozen=True)
class Transfer:
    """One LOAD or STORE: ``y_size`` lines of ``x_size`` elements from element ``offset`` of
    ``dram`` (``x_stride`` apart) to / from SRAM rows from ``sram``, with zero padding."""

    stage_name: str
    opcode: Opcode
    mem: MemId
    dram: DramBuffer
    offset: int
    sram: int
    y_size: int
    x_size: int
    x_stride: int
    pads: tuple[int, int, int, int] = (0, 0, 0, 0)  # y_pad_0, y_pad_1, x_pad_0, x_pad_1

    @property
    def stage(self) -> Stage:
        return transfer_module(self.opcode, self.mem)

    @property
    def rows(self) -> int:
        y0, y1, x0, x1 = self.pads
        return (y0 + self.y_size + y1) * (x0 + self.x_size + x1)

    def accesses(self, _: KernelRows) -> tuple[list, list]:
        """(reads, writes): (memory, row array) pairs in the shared SRAM buffers."""
        rows = np.arange(self.sram, self.sram + self.rows)
        if self.opcode is Opcode.STORE:
            return [(MemId.OUT, rows)], []
        return [], [(self.mem, rows)] if self.mem in SHARED else []

    def emit(self, b: ProgramBuilder) -> None:
        common = {
            "sram": self.sram,
            "y_size": self.y_size,
            "x_size": self.x_size,
            "x_stride": self.x_stride,
            "offset": self.offset,
        }
        if self.opcode is Opcode.STORE:
            b.store_2d(self.dram, **common)
        else:
            y0, y1, x0, x1 = self.pads
            b.load_2d(
                self.dram,
                memory_type=self.mem,
                y_pad_0=y0,
                y_pad_1=y1,
                x_pad_0=x0,
                x_pad_1=x1,
                **common,
            )

    def __str__(self) -> str:
        pads = "" if not any(self.pads) else f" pad={self.pads}"
        return (
            f"{self.opcode.name.lower()} {self.mem.name} {self.dram.name}+{self.offset} "
            f"<-> sram {self.sram} [{self.y_size}x{self.x_size} stride {self.x_stride}]{pads}"
            f"  ({self.stage_name})"
        )


@dataclass(frozen=True)
class KernelRun:
    """One GEMM (``alu_op`` None) or ALU instruction over ``kernel``."""

    stage_name: str
    kernel: Kernel
    reset: bool = False
    alu_op: AluOp | None = None
    imm: int | None = None

    stage = Stage.COMPUTE

    def accesses(self, rows: KernelRows) -> tuple[list, list]:
        """(reads, writes): (memory, row array) pairs in the shared SRAM buffers."""
        return rows(self.kernel, self.alu_op is None and not self.reset)

    def emit(self, b: ProgramBuilder) -> None:
        if self.alu_op is None:
            b.gemm(self.kernel, reset=self.reset)
        else:
            b.alu(self.kernel, self.alu_op, imm=self.imm, reset=self.reset)

    def __str__(self) -> str:
        what = "gemm" if self.alu_op is None else f"alu {self.alu_op.name}"
        if self.reset:
            what += " reset"
        elif self.imm is not None:
            what += f" imm={self.imm}"
        loops = " x ".join(str(lp.extent) for lp in self.kernel.loops) or "1"
        return f"{what}: {len(self.kernel.uops)} uops x ({loops})  ({self.stage_name})"


class KernelRows:
    """The rows each kernel's steps touch, computed once per kernel (one per stream)."""

    def __init__(self) -> None:
        self._cache: dict[tuple[Kernel, bool], tuple[list, list]] = {}

    def __call__(self, kernel: Kernel, multiplies: bool) -> tuple[list, list]:
        key = (kernel, multiplies)
        if key not in self._cache:
            self._cache[key] = self._compute(kernel, multiplies)
        return self._cache[key]

    @staticmethod
    def _compute(kernel: Kernel, multiplies: bool) -> tuple[list, list]:
        loops = list(kernel.loops)
        while len(loops) < 2:
            loops.insert(0, None)
        outer, inner = loops
        insn = GemmInsn(
            uop_bgn=0,
            uop_end=len(kernel.uops),
            iter_out=outer.extent if outer else 1,
            iter_in=inner.extent if inner else 1,
            dst_factor_out=outer.dst_factor if outer else 0,
            dst_factor_in=inner.dst_factor if inner else 0,
            src_factor_out=outer.src_factor if outer else 0,
            src_factor_in=inner.src_factor if inner else 0,
            wgt_factor_out=outer.wgt_factor if outer else 0,
            wgt_factor_in=inner.wgt_factor if inner else 0,
        )

        def rows(operand: Operand) -> np.ndarray:
            base = np.array([getattr(u, operand.uop_field) for u in kernel.uops])
            return np.unique(step_indices(insn, base, operand))

        writes = [(MemId.OUT, rows(Operand.DST))]
        reads = [(MemId.INP, rows(Operand.SRC)), (MemId.WGT, rows(Operand.WGT))]
        return (reads if multiplies else []), writes


def emit(builder: ProgramBuilder, ops: list, tokens: list[tuple[set, set]]) -> None:
    """Write ``ops`` with their token pops and pushes through ``builder``."""
    for op, (pops, pushes) in zip(ops, tokens, strict=True):
        for source in sorted(pops):
            builder.dep_pop(source, op.stage)
        op.emit(builder)
        for dest in sorted(pushes):
            builder.dep_push(op.stage, dest)


def format_stream(ops: list, tokens: list[tuple[set, set]]) -> str:
    """The stream as text, one operation a line with its module and tokens."""
    lines = []
    for index, (op, (pops, pushes)) in enumerate(zip(ops, tokens, strict=True)):
        pop = "".join(f" pop<{s.name.lower()}" for s in sorted(pops))
        push = "".join(f" push>{s.name.lower()}" for s in sorted(pushes))
        lines.append(f"{index:5d} {op.stage.name.lower():7s} {op}{pop}{push}")
    return "\n".join(lines)
