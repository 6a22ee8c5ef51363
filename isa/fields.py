"""The field tables: one per instruction format, derived from an :class:`~isa.config.AccelConfig`.

A table lists each field's name, width and kind in order; :func:`instruction_set` places the
fields the way VTA's ``hw_spec.h`` bit-fields are placed by GCC (consecutively from bit 0, except
that a field never straddles a 64-bit word: it starts the next word instead). For the default
configuration this reproduces VTA's layout bit for bit (vta-facts 1.3, 1.6).

These tables are the single source of every bit position: the encoder and decoder
(:mod:`isa.encoding`), the assembler (:mod:`isa.assembly`), the hardware's Amaranth layouts and the
generated documentation (:meth:`Format.table`) all read them. They also carry the enum members a
configuration leaves out (``alu_opcode=MUL`` without ``alu_mul``), so that every reader refuses
those alike.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import IntEnum
from functools import cached_property, lru_cache
from typing import TYPE_CHECKING

from isa.config import ALU_OPCODE_BITS, INSN_WIDTH, MEMOP_ID_BITS, OPCODE_BITS, UOP_WIDTH
from isa.errors import ConfigError, EncodingError
from isa.instructions import AluInsn, FinishInsn, GemmInsn, Instruction, MemInsn, Uop
from isa.opcodes import AluOp, MemId, Opcode

if TYPE_CHECKING:
    from isa.config import AccelConfig

__all__ = ["Field", "Format", "InstructionSet", "instruction_set"]

#: GCC packs ``uint64_t`` bit-fields into 64-bit units; no field straddles two of them.
_WORD_BITS = 64


@dataclass(frozen=True)
class Field:
    """One field of a format: ``width`` bits at ``offset``; ``kind`` is ``bool``, ``int`` or an
    ``IntEnum``; ``signed`` fields hold two's-complement integers. ``excluded`` lists the enum
    members this configuration leaves out, each with the reason (MUL without ``alu_mul``): they
    neither encode nor decode."""

    name: str
    offset: int
    width: int
    kind: type
    signed: bool = False
    excluded: tuple[tuple[IntEnum, str], ...] = ()

    @property
    def mask(self) -> int:
        """The field's bits within the word."""
        return ((1 << self.width) - 1) << self.offset

    @property
    def msb(self) -> int:
        return self.offset + self.width - 1

    @property
    def bits(self) -> str:
        """Verilog-style bit range, e.g. ``[25:10]``."""
        return f"[{self.offset}]" if self.width == 1 else f"[{self.msb}:{self.offset}]"

    @cached_property
    def min(self) -> int:
        return -(1 << (self.width - 1)) if self.signed else 0

    @cached_property
    def max(self) -> int:
        return (1 << (self.width - 1)) - 1 if self.signed else (1 << self.width) - 1

    def check_available(self, value: int, insn: str) -> None:
        """Raise EncodingError naming the reason when ``value`` is an excluded member."""
        for member, reason in self.excluded:
            if value == member:
                raise EncodingError(
                    f"field {self.name}={member.name} is not available: {reason}",
                    insn=insn,
                    field=self.name,
                )

    def pack(self, value: int, insn: str) -> int:
        """Place ``value`` at this field's bits; raise EncodingError if it does not fit or is
        excluded."""
        self.check_available(value, insn)
        value = int(value)
        if not self.min <= value <= self.max:
            raise EncodingError(
                f"field {self.name}={value} does not fit its {self.width} bits "
                f"(range {self.min}..{self.max})",
                insn=insn,
                field=self.name,
            )
        return (value & ((1 << self.width) - 1)) << self.offset

    def unpack(self, word: int, insn: str) -> int | bool | IntEnum:
        """Extract this field from ``word`` as its kind; raise EncodingError on an invalid or
        excluded enum member."""
        raw = (word >> self.offset) & ((1 << self.width) - 1)
        if self.signed and raw >> (self.width - 1):
            raw -= 1 << self.width
        if self.kind is bool:
            return bool(raw)
        if issubclass(self.kind, IntEnum):
            try:
                member = self.kind(raw)
            except ValueError:
                raise EncodingError(
                    f"field {self.name} bits {self.bits} hold {raw}, which is no "
                    f"{self.kind.__name__}",
                    insn=insn,
                    field=self.name,
                ) from None
            self.check_available(member, insn)
            return member
        return raw

    @property
    def kind_name(self) -> str:
        """The kind as the docs print it: ``signed int``, ``bool``, ``AluOp (no MUL)``."""
        if self.signed:
            return "signed int"
        if self.excluded:
            return f"{self.kind.__name__} (no {', '.join(m.name for m, _ in self.excluded)})"
        return self.kind.__name__


@dataclass(frozen=True)
class Format:
    """A laid-out format: the record class it encodes and its placed fields."""

    name: str
    record: type
    width: int
    fields: tuple[Field, ...]

    def field(self, name: str) -> Field:
        for f in self.fields:
            if f.name == name:
                return f
        raise KeyError(name)

    def check_available(self, record: Instruction | Uop) -> None:
        """Raise EncodingError when a field of ``record`` holds a member this configuration
        excludes (the rest of :func:`isa.encode`'s checks are left to it)."""
        for f in self._restricted:
            f.check_available(getattr(record, f.name), type(record).__name__)

    @cached_property
    def _restricted(self) -> tuple[Field, ...]:
        return tuple(f for f in self.fields if f.excluded)

    @property
    def reserved_mask(self) -> int:
        """Bits no field uses; a valid word has them all zero."""
        used = 0
        for f in self.fields:
            used |= f.mask
        return ((1 << self.width) - 1) & ~used

    def table(self) -> str:
        """The layout as a Markdown table, reserved gaps included (for the docs and the CLI)."""
        rows = ["| bits | field | width | kind |", "|---|---|---|---|"]
        position = 0
        for f in sorted(self.fields, key=lambda f: f.offset):
            if f.offset > position:
                rows.append(_gap_row(position, f.offset))
            rows.append(f"| {f.bits} | {f.name} | {f.width} | {f.kind_name} |")
            position = f.offset + f.width
        if position < self.width:
            rows.append(_gap_row(position, self.width))
        return "\n".join(rows)


def _gap_row(start: int, end: int) -> str:
    bits = f"[{start}]" if end - start == 1 else f"[{end - 1}:{start}]"
    return f"| {bits} | (reserved) | {end - start} | zero |"


@dataclass(frozen=True)
class InstructionSet:
    """The five formats of one configuration."""

    mem: Format
    gemm: Format
    alu: Format
    finish: Format
    uop: Format

    def for_opcode(self, opcode: Opcode) -> Format:
        return {
            Opcode.LOAD: self.mem,
            Opcode.STORE: self.mem,
            Opcode.GEMM: self.gemm,
            Opcode.ALU: self.alu,
            Opcode.FINISH: self.finish,
        }[opcode]

    def for_record(self, record: Instruction | Uop) -> Format:
        for fmt in (self.mem, self.gemm, self.alu, self.finish, self.uop):
            if type(record) is fmt.record:
                return fmt
        raise EncodingError(
            f"{type(record).__name__} is not an instruction or micro-op record",
            insn=type(record).__name__,
        )

    @property
    def instruction_formats(self) -> tuple[Format, ...]:
        return (self.mem, self.gemm, self.alu, self.finish)


# (name, width, kind, signed)
_Spec = tuple[str, int, type, bool]


def _layout(
    name: str,
    record: type,
    width: int,
    specs: list[_Spec],
    excluded: dict[str, tuple[tuple[IntEnum, str], ...]] | None = None,
) -> Format:
    fields = []
    offset = 0
    for fname, fwidth, kind, signed in specs:
        if offset // _WORD_BITS != (offset + fwidth - 1) // _WORD_BITS:
            offset = (offset // _WORD_BITS + 1) * _WORD_BITS
        fields.append(Field(fname, offset, fwidth, kind, signed, (excluded or {}).get(fname, ())))
        offset += fwidth
    if offset > width:
        listing = ", ".join(f"{s[0]}:{s[1]}" for s in specs)
        raise ConfigError(
            f"{name} format",
            f"{offset} bits",
            f"does not fit its {width}-bit word (fields {listing}); deeper buffers widen the "
            f"index fields: shrink a buffer or an instruction-field width",
        )
    return Format(name, record, width, tuple(fields))


@lru_cache(maxsize=128)
def instruction_set(cfg: AccelConfig) -> InstructionSet:
    """Lay out every format for ``cfg``; raise ConfigError if one does not fit its word."""
    common: list[_Spec] = [
        ("opcode", OPCODE_BITS, Opcode, False),
        ("pop_prev_dep", 1, bool, False),
        ("pop_next_dep", 1, bool, False),
        ("push_prev_dep", 1, bool, False),
        ("push_next_dep", 1, bool, False),
    ]
    loop: list[_Spec] = [
        ("reset_reg", 1, bool, False),
        ("uop_bgn", cfg.log_uop_buff_depth, int, False),
        ("uop_end", cfg.log_uop_buff_depth + 1, int, False),
        ("iter_out", cfg.loop_iter_bits, int, False),
        ("iter_in", cfg.loop_iter_bits, int, False),
        ("dst_factor_out", cfg.log_acc_buff_depth, int, False),
        ("dst_factor_in", cfg.log_acc_buff_depth, int, False),
    ]
    mem = _layout(
        "MEM",
        MemInsn,
        INSN_WIDTH,
        [
            *common,
            ("memory_type", MEMOP_ID_BITS, MemId, False),
            ("sram_base", cfg.sram_addr_bits, int, False),
            ("dram_base", cfg.dram_addr_bits, int, False),
            ("y_size", cfg.mem_size_bits, int, False),
            ("x_size", cfg.mem_size_bits, int, False),
            ("x_stride", cfg.mem_stride_bits, int, False),
            ("y_pad_0", cfg.mem_pad_bits, int, False),
            ("y_pad_1", cfg.mem_pad_bits, int, False),
            ("x_pad_0", cfg.mem_pad_bits, int, False),
            ("x_pad_1", cfg.mem_pad_bits, int, False),
        ],
    )
    gemm = _layout(
        "GEMM",
        GemmInsn,
        INSN_WIDTH,
        [
            *common,
            *loop,
            ("src_factor_out", cfg.log_inp_buff_depth, int, False),
            ("src_factor_in", cfg.log_inp_buff_depth, int, False),
            ("wgt_factor_out", cfg.log_wgt_buff_depth, int, False),
            ("wgt_factor_in", cfg.log_wgt_buff_depth, int, False),
        ],
    )
    alu = _layout(
        "ALU",
        AluInsn,
        INSN_WIDTH,
        [
            *common,
            *loop,
            ("src_factor_out", cfg.log_acc_buff_depth, int, False),
            ("src_factor_in", cfg.log_acc_buff_depth, int, False),
            ("alu_opcode", ALU_OPCODE_BITS, AluOp, False),
            ("use_imm", 1, bool, False),
            ("imm", cfg.alu_imm_bits, int, True),
        ],
        {"alu_opcode": tuple((op, why) for op in AluOp if (why := cfg.missing_alu_op(op)))},
    )
    finish = _layout("FINISH", FinishInsn, INSN_WIDTH, common)
    uop = _layout(
        "UOP",
        Uop,
        UOP_WIDTH,
        [
            ("dst_idx", cfg.log_acc_buff_depth, int, False),
            ("src_idx", max(cfg.log_inp_buff_depth, cfg.log_acc_buff_depth), int, False),
            ("wgt_idx", cfg.log_wgt_buff_depth, int, False),
        ],
    )
    return InstructionSet(mem, gemm, alu, finish, uop)
