"""The instruction and micro-op records of the two-level ISA.

Field names are VTA's (``hw_spec.h``). Records are frozen dataclasses that check the *types* of
their fields on construction (flags become ``bool``, enum fields their enum); whether a value fits
its field depends on the configuration and is checked by :func:`isa.encode`. Fields with a
natural zero (dependency flags, pads, loop factors, the immediate) default to it, and the
assembler uses those same defaults for fields a line leaves out.
"""

from __future__ import annotations

import dataclasses
import functools
from dataclasses import dataclass
from enum import IntEnum
from typing import ClassVar, get_type_hints

from isa.errors import EncodingError
from isa.opcodes import AluOp, MemId, Opcode, Stage

__all__ = [
    "AluInsn",
    "FinishInsn",
    "GemmInsn",
    "Instruction",
    "MemInsn",
    "Uop",
    "stage_of",
]


@functools.cache
def _field_kinds(cls: type) -> tuple[tuple[str, type], ...]:
    """(name, annotated type) of each dataclass field of ``cls``, resolved once per class."""
    hints = get_type_hints(cls)
    return tuple((f.name, hints[f.name]) for f in dataclasses.fields(cls))


@dataclass(frozen=True, kw_only=True)
class _Record:
    """Normalises and type-checks fields from their annotations."""

    def __post_init__(self) -> None:
        for name, kind in _field_kinds(type(self)):
            object.__setattr__(self, name, self._coerce(name, getattr(self, name), kind))

    def _coerce(self, name: str, value: object, kind: type) -> object:
        insn = type(self).__name__
        if kind is bool:
            if value in (0, 1) and isinstance(value, int):  # bool is an int too
                return bool(value)
            raise EncodingError(
                f"field {name}={value!r} must be a flag (0 or 1)", insn=insn, field=name
            )
        if isinstance(kind, type) and issubclass(kind, IntEnum):
            try:
                return kind(value)
            except ValueError:
                raise EncodingError(
                    f"field {name}={value!r} is not a {kind.__name__} "
                    f"({', '.join(m.name for m in kind)})",
                    insn=insn,
                    field=name,
                ) from None
        if isinstance(value, bool) or not isinstance(value, int):
            raise EncodingError(f"field {name}={value!r} must be an integer", insn=insn, field=name)
        return int(value)


@dataclass(frozen=True, kw_only=True)
class _DepFlags(_Record):
    """The four dependency-token flags every instruction carries (vta-facts 1.5)."""

    pop_prev_dep: bool = False
    pop_next_dep: bool = False
    push_prev_dep: bool = False
    push_next_dep: bool = False


@dataclass(frozen=True, kw_only=True)
class MemInsn(_DepFlags):
    """LOAD or STORE: a 2-D strided transfer between DRAM and an on-chip buffer.

    ``dram_base`` and ``x_stride`` count elements of ``memory_type`` (not bytes); ``sram_base``
    counts buffer rows. Pads (zero-fill, LOAD only) are in elements. ``x_size == 0`` is a no-op
    that only carries dependency flags.
    """

    opcode: Opcode
    memory_type: MemId
    sram_base: int
    dram_base: int
    y_size: int
    x_size: int
    x_stride: int
    y_pad_0: int = 0
    y_pad_1: int = 0
    x_pad_0: int = 0
    x_pad_1: int = 0

    def __post_init__(self) -> None:
        super().__post_init__()
        if self.opcode not in (Opcode.LOAD, Opcode.STORE):
            raise EncodingError(
                f"opcode {self.opcode.name} is not LOAD or STORE", insn="MemInsn", field="opcode"
            )


@dataclass(frozen=True, kw_only=True)
class _LoopInsn(_DepFlags):
    """Fields shared by GEMM and ALU: a micro-op range run over a two-level loop."""

    reset_reg: bool = False
    uop_bgn: int
    uop_end: int
    iter_out: int
    iter_in: int
    dst_factor_out: int = 0
    dst_factor_in: int = 0
    src_factor_out: int = 0
    src_factor_in: int = 0


@dataclass(frozen=True, kw_only=True)
class GemmInsn(_LoopInsn):
    """GEMM: for each loop iteration and micro-op, ACC[dst] += INP[src] x WGT[wgt]^T
    (or ACC[dst] = 0 when ``reset_reg``); indices advance by the loop factors."""

    opcode: ClassVar[Opcode] = Opcode.GEMM
    wgt_factor_out: int = 0
    wgt_factor_in: int = 0


@dataclass(frozen=True, kw_only=True)
class AluInsn(_LoopInsn):
    """ALU: ACC[dst] = op(ACC[dst], imm if ``use_imm`` else ACC[src]), lane by lane.

    ``imm`` is signed; for SHR a negative operand shifts left.
    """

    opcode: ClassVar[Opcode] = Opcode.ALU
    alu_opcode: AluOp
    use_imm: bool = False
    imm: int = 0


@dataclass(frozen=True, kw_only=True)
class FinishInsn(_DepFlags):
    """FINISH: raises "done" once every earlier compute instruction has completed."""

    opcode: ClassVar[Opcode] = Opcode.FINISH


@dataclass(frozen=True, kw_only=True)
class Uop(_Record):
    """A micro-op: the accumulator, input (ACC for ALU) and weight row indices of one step."""

    dst_idx: int
    src_idx: int
    wgt_idx: int = 0


Instruction = MemInsn | GemmInsn | AluInsn | FinishInsn

_COMPUTE_MEMORY = (MemId.UOP, MemId.ACC, MemId.ACC_8BIT)


def stage_of(insn: Instruction) -> Stage:
    """The module that executes ``insn`` (vta-facts 1.2): INP/WGT loads go to the load module,
    UOP/ACC/ACC_8BIT loads, GEMM, ALU and FINISH to compute, STORE to the store module."""
    if isinstance(insn, MemInsn):
        if insn.opcode is Opcode.STORE:
            return Stage.STORE
        return Stage.COMPUTE if insn.memory_type in _COMPUTE_MEMORY else Stage.LOAD
    return Stage.COMPUTE
