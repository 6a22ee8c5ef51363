"""The only glue between the ISA and the hardware: Amaranth layouts derived from ``isa``.

Instruction and micro-op layouts are built from the field tables of
:func:`isa.instruction_set`, so every bit position and width comes from there; reserved gaps
become padding fields named ``reserved<offset>``. Buffer rows are :class:`ArrayLayout`s of the
element widths in :class:`~isa.AccelConfig`, in the order DRAM stores them (INP ``[b][ic]``,
WGT ``[oc][ic]``, ACC/OUT ``[b][oc]``, lane 0 in the least significant bits).
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cache

from amaranth.hdl import signed, unsigned
from amaranth.lib import data

from isa import (
    INSN_WIDTH,
    UOP_WIDTH,
    AccelConfig,
    Format,
    MemId,
    instruction_set,
)

__all__ = [
    "ACC8_WIDTH",
    "InsnLayouts",
    "RowLayouts",
    "byte_addr_bits",
    "elem_bits",
    "format_layout",
    "insn_layouts",
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


def elem_bits(cfg: AccelConfig, mem: MemId) -> int:
    """Bits of one DRAM element of memory type ``mem``."""
    return cfg.elem_bytes(mem) * 8


def byte_addr_bits(cfg: AccelConfig) -> int:
    """Width of a DRAM byte address: any element a ``dram_base`` field can name, of any type."""
    widest = max(cfg.elem_bytes(mem) for mem in MemId)
    return cfg.dram_addr_bits + (widest - 1).bit_length()
