"""The only glue between the ISA and the hardware: Amaranth layouts derived from ``isa``.

Instruction and micro-op layouts are built from the field tables of
:func:`isa.instruction_set`, so every bit position and width comes from there; reserved gaps
become padding fields named ``reserved<offset>``. Buffer rows are :class:`ArrayLayout`s of the
element widths in :class:`~isa.AccelConfig`, in the order DRAM stores them (INP ``[b][ic]``,
WGT ``[oc][ic]``, ACC/OUT ``[b][oc]``, lane 0 in the least significant bits).
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from functools import cache

from amaranth.hdl import Cat, Value, signed, unsigned
from amaranth.lib import data

from isa import (
    INSN_WIDTH,
    UOP_WIDTH,
    AccelConfig,
    Format,
    MemId,
    MemInsn,
    Opcode,
    Stage,
    instruction_set,
    stage_of,
)

__all__ = [
    "ACC8_WIDTH",
    "InsnLayouts",
    "RowLayouts",
    "byte_addr_bits",
    "elem_bits",
    "format_layout",
    "insn_layouts",
    "is_any",
    "load_types",
    "row_layouts",
]

#: ACC_8BIT loads read one byte per lane (SEMANTICS 3), whatever the configuration.
ACC8_WIDTH = 8


def format_layout(fmt: Format) -> data.StructLayout:
    """A :class:`StructLayout` of ``fmt.width`` bits with every field of ``fmt`` at its offset.

    Signed fields get a signed shape; enum and flag fields are plain unsigned bits (compare them
    with the enum's integer value). Gaps become ``reserved<offset>`` padding fields.
    """
    members: dict[str, object] = {}
    position = 0
    for field in sorted(fmt.fields, key=lambda f: f.offset):
        if field.offset > position:
            members[f"reserved{position}"] = unsigned(field.offset - position)
        members[field.name] = signed(field.width) if field.signed else unsigned(field.width)
        position = field.offset + field.width
    if position < fmt.width:
        members[f"reserved{position}"] = unsigned(fmt.width - position)
    return data.StructLayout(members)


@dataclass(frozen=True)
class InsnLayouts:
    """The layouts of one configuration's instruction formats (128 bits) and micro-op (32)."""

    mem: data.StructLayout
    gemm: data.StructLayout
    alu: data.StructLayout
    common: data.StructLayout  # the FINISH format: opcode and dependency flags only
    uop: data.StructLayout


@cache
def insn_layouts(cfg: AccelConfig) -> InsnLayouts:
    """Instruction and micro-op layouts of ``cfg`` (see :func:`format_layout`)."""
    isa = instruction_set(cfg)
    layouts = InsnLayouts(
        mem=format_layout(isa.mem),
        gemm=format_layout(isa.gemm),
        alu=format_layout(isa.alu),
        common=format_layout(isa.finish),
        uop=format_layout(isa.uop),
    )
    assert all(
        layout.size == INSN_WIDTH for layout in (layouts.mem, layouts.gemm, layouts.alu)
    ) and (layouts.uop.size == UOP_WIDTH)
    return layouts


@dataclass(frozen=True)
class RowLayouts:
    """One row of each on-chip buffer, and the ACC_8BIT DRAM element."""

    inp: data.ArrayLayout  # [batch][block_in] of signed inp_width
    wgt: data.ArrayLayout  # [block_out][block_in] of signed wgt_width
    acc: data.ArrayLayout  # [batch][block_out] of signed acc_width
    out: data.ArrayLayout  # [batch][block_out] of signed out_width
    acc8: data.ArrayLayout  # [batch][block_out] of signed 8-bit (ACC_8BIT in DRAM)


@cache
def row_layouts(cfg: AccelConfig) -> RowLayouts:
    """Buffer-row layouts of ``cfg``; each row's size equals its DRAM element size."""

    def grid(width: int, rows: int, cols: int) -> data.ArrayLayout:
        return data.ArrayLayout(data.ArrayLayout(signed(width), cols), rows)

    return RowLayouts(
        inp=grid(cfg.inp_width, cfg.batch, cfg.block_in),
        wgt=grid(cfg.wgt_width, cfg.block_out, cfg.block_in),
        acc=grid(cfg.acc_width, cfg.batch, cfg.block_out),
        out=grid(cfg.out_width, cfg.batch, cfg.block_out),
        acc8=grid(ACC8_WIDTH, cfg.batch, cfg.block_out),
    )


def load_types(stage: Stage) -> tuple[MemId, ...]:
    """Memory types whose LOADs :func:`isa.stage_of` routes to ``stage``."""
    return tuple(
        mem
        for mem in MemId
        if stage_of(
            MemInsn(
                opcode=Opcode.LOAD,
                memory_type=mem,
                sram_base=0,
                dram_base=0,
                y_size=0,
                x_size=0,
                x_stride=0,
            )
        )
        is stage
    )


def is_any(value: Value, members: Iterable[int]) -> Value:
    """Whether ``value`` equals one of ``members``."""
    return Cat(value == member for member in members).any()


def elem_bits(cfg: AccelConfig, mem: MemId) -> int:
    """Bits of one DRAM element of memory type ``mem``."""
    return cfg.elem_bytes(mem) * 8


def byte_addr_bits(cfg: AccelConfig) -> int:
    """Width of a DRAM byte address: any element a ``dram_base`` field can name, of any type."""
    widest = max(cfg.elem_bytes(mem) for mem in MemId)
    return cfg.dram_addr_bits + (widest - 1).bit_length()
