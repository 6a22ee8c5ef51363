"""What a board driver checks and changes before it lets the accelerator's DMA loose on physical
memory: :func:`check_dma`, the guard that refuses a program reaching outside the buffers the
driver owns, and :func:`relocate`, which moves a program (written for DRAM from address 0) to
the physical address of the buffer that holds its DRAM.

The accelerator reaches memory in three ways (``isa/SEMANTICS.md``): the fetch module reads the
instruction stream (16 bytes per instruction from ``INSN_ADDR``); LOAD and STORE move 2-D
transfers of ``y_size`` rows of ``x_size`` elements, rows ``x_stride`` elements apart, from
element ``dram_base`` (elements of the LOAD's memory type, of OUT for a STORE; a LOAD UOP reads
the micro-op table); and the driver itself copies the micro-op table and the data segments in.
Every one of those byte ranges must lie inside one owned :class:`Buffer`.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from dataclasses import dataclass

from isa import INSN_BYTES, AccelConfig, MemId, MemInsn, Opcode, Program, ProgramError
from runtime.devices.base import DeviceError
from simulator.errors import describe

__all__ = ["Buffer", "DmaGuardError", "check_dma", "relocate", "transfer_span"]


@dataclass(frozen=True)
class Buffer:
    """Bytes ``[address, address + size)`` of physical memory the driver owns."""

    name: str
    address: int
    size: int

    @property
    def end(self) -> int:
        return self.address + self.size

    def holds(self, start: int, end: int) -> bool:
        return self.address <= start and end <= self.end

    def __str__(self) -> str:
        return f"{self.name} [{self.address:#x}, {self.end:#x})"


class DmaGuardError(DeviceError):
    """A program would make the accelerator read or write memory outside the driver's
    buffers; ``index`` is the instruction (None for the instruction stream, the micro-op table or
    a data segment)."""

    def __init__(self, message: str, index: int | None = None) -> None:
        self.index = index
        super().__init__(message)


def transfer_span(cfg: AccelConfig, insn: MemInsn) -> tuple[int, int] | None:
    """The DRAM bytes ``[start, end)`` a LOAD or STORE touches, or None for an empty one."""
    if not (insn.x_size and insn.y_size):
        return None
    elem = cfg.elem_bytes(insn.memory_type if insn.opcode is Opcode.LOAD else MemId.OUT)
    start = insn.dram_base * elem
    return start, start + ((insn.y_size - 1) * insn.x_stride + insn.x_size) * elem


def check_dma(program: Program, insn_addr: int, buffers: Sequence[Buffer]) -> None:
    """Raise DmaGuardError unless the instruction stream at ``insn_addr``, the micro-op table,
    the data segments and every LOAD/STORE transfer of ``program`` each lie inside one of
    ``buffers``."""
    stream_end = insn_addr + len(program.instructions) * INSN_BYTES
    _within(buffers, insn_addr, stream_end, "the instruction stream")
    if program.uops:
        _within(buffers, *program.uop_region, "the micro-op table")
    for segment in program.segments:
        _within(buffers, segment.address, segment.end, f"data segment {segment.name}")
    for index, insn in enumerate(program.instructions):
        span = transfer_span(program.config, insn) if isinstance(insn, MemInsn) else None
        if span is not None:
            verb = "reads" if insn.opcode is Opcode.LOAD else "writes"
            _within(buffers, *span, f"{describe(index, insn)} {verb}", index)


def relocate(program: Program, offset: int) -> Program:
    """``program`` moved ``offset`` bytes up in memory: every LOAD/STORE's ``dram_base``, the
    micro-op table, the segments and the regions. ``offset`` must be a multiple of every
    element size (a buffer's page-aligned address is), and the moved program must fit the DRAM
    address space; DeviceError otherwise. Whether each moved ``dram_base`` fits its field is
    checked when the program is encoded."""
    cfg = program.config
    widest = max(cfg.elem_bytes(mem) for mem in MemId)
    if offset < 0 or offset % widest:
        raise DeviceError(
            f"cannot move a program by {offset:#x} bytes: not a multiple of its largest "
            f"element ({widest} bytes)"
        )

    def moved(insn):
        if not isinstance(insn, MemInsn):
            return insn
        mem = insn.memory_type if insn.opcode is Opcode.LOAD else MemId.OUT
        return dataclasses.replace(insn, dram_base=insn.dram_base + offset // cfg.elem_bytes(mem))

    try:
        return dataclasses.replace(
            program,
            instructions=tuple(moved(insn) for insn in program.instructions),
            uop_base=program.uop_base + offset // cfg.uop_elem_bytes,
            segments=tuple(
                dataclasses.replace(s, address=s.address + offset) for s in program.segments
            ),
            regions=tuple(
                dataclasses.replace(r, address=r.address + offset) for r in program.regions
            ),
        )
    except ProgramError as err:
        raise DeviceError(f"cannot move the program by {offset:#x} bytes: {err}") from None


def _within(
    buffers: Sequence[Buffer], start: int, end: int, what: str, index: int | None = None
) -> None:
    if any(buffer.holds(start, end) for buffer in buffers):
        return
    owned = ", ".join(map(str, buffers)) or "none"
    raise DmaGuardError(
        f"{what} bytes [{start:#x}, {end:#x}), outside the driver's buffers ({owned}): "
        "refused before launch",
        index,
    )
