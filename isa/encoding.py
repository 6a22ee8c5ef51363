"""Encode instruction and micro-op records to integers and decode them back.

Words are plain Python integers (128-bit instructions, 32-bit micro-ops); bit 0 is the least
significant. In memory they are stored little-endian (:func:`insn_bytes`, :func:`uop_bytes`),
which is how VTA's structs lie in the DRAM of its little-endian hosts.
"""

from __future__ import annotations

import dataclasses
import functools
import operator
from collections.abc import Iterable

from isa.config import INSN_WIDTH, UOP_WIDTH, AccelConfig
from isa.errors import EncodingError
from isa.fields import Format, instruction_set
from isa.instructions import Instruction, Uop
from isa.opcodes import Opcode

__all__ = [
    "INSN_BYTES",
    "UOP_BYTES",
    "decode",
    "decode_uop",
    "encode",
    "encode_uop",
    "insn_bytes",
    "uop_bytes",
]

INSN_BYTES = INSN_WIDTH // 8
UOP_BYTES = UOP_WIDTH // 8


def _encode_record(record: Instruction | Uop, fmt: Format) -> int:
    name = type(record).__name__
    word = 0
    for field in fmt.fields:
        word |= field.pack(getattr(record, field.name), name)
    return word


def _as_word(word: object, width: int, what: str) -> int:
    """``word`` as a plain ``int`` when it is an integer (Python's or numpy's) of ``width``
    unsigned bits; otherwise an EncodingError. A bool is refused: it is not an encoded word."""
    if isinstance(word, bool):
        raise EncodingError(f"{word!r} is a bool, not a {width}-bit {what} word")
    try:
        value = operator.index(word)  # type: ignore[arg-type]
    except TypeError:
        raise EncodingError(
            f"{word!r} (a {type(word).__name__}) is not a {width}-bit {what} word"
        ) from None
    if not 0 <= value < (1 << width):
        raise EncodingError(f"{word!r} is not a {width}-bit {what} word")
    return value


def _decode_record(word: int, fmt: Format, name: str) -> dict[str, object]:
    """The field values of ``word``, already a ``fmt.width``-bit integer (:func:`_as_word`)."""
    reserved = word & fmt.reserved_mask
    if reserved:
        raise EncodingError(
            f"reserved bits are set (mask {reserved:#x}); they must be zero", insn=name
        )
    return {field.name: field.unpack(word, name) for field in fmt.fields}


def encode(insn: Instruction, cfg: AccelConfig) -> int:
    """The 128-bit word of ``insn`` under ``cfg``.

    Raises EncodingError naming the instruction and field when a value does not fit.
    """
    return _encode_remembered(insn, cfg)


def _format_of(record: Instruction | Uop, cfg: AccelConfig) -> Format:
    isa = instruction_set(cfg)
    return isa.uop if isinstance(record, Uop) else isa.for_record(record)


def _encode_remembered(record: Instruction | Uop, cfg: AccelConfig) -> int:
    """The word of an instruction or micro-op, remembered where the record is hashable."""
    try:
        return _encode_cached(record, cfg)
    except TypeError:  # a field holds an unhashable value: encoding it names the field
        return _encode_record(record, _format_of(record, cfg))


@functools.lru_cache(maxsize=1 << 16)
def _encode_cached(record: Instruction | Uop, cfg: AccelConfig) -> int:
    """:func:`encode` and :func:`encode_uop`, remembered: a run validates and writes every
    record, and sweeps and tests run the same programs again (a record and a configuration are
    immutable)."""
    return _encode_record(record, _format_of(record, cfg))


def decode(word: int, cfg: AccelConfig) -> Instruction:
    """The instruction record that ``word`` encodes under ``cfg``.

    Raises EncodingError for an unknown opcode, an invalid enum field or set reserved bits.
    """
    isa = instruction_set(cfg)
    word = _as_word(word, INSN_WIDTH, "instruction")
    opcode_field = isa.mem.field("opcode")
    raw_opcode = (word >> opcode_field.offset) & ((1 << opcode_field.width) - 1)
    try:
        opcode = Opcode(raw_opcode)
    except ValueError:
        raise EncodingError(
            f"unknown opcode {raw_opcode} in bits {opcode_field.bits}", field="opcode"
        ) from None
    fmt = isa.for_opcode(opcode)
    values = _decode_record(word, fmt, opcode.name)
    if not _takes_opcode(fmt.record):
        del values["opcode"]
    return fmt.record(**values)


@functools.cache
def _takes_opcode(record: type) -> bool:
    """Whether the record's constructor takes ``opcode`` (only LOAD/STORE share a record)."""
    return "opcode" in {f.name for f in dataclasses.fields(record)}


def encode_uop(uop: Uop, cfg: AccelConfig) -> int:
    """The 32-bit word of ``uop`` under ``cfg``."""
    return _encode_remembered(uop, cfg)


def decode_uop(word: int, cfg: AccelConfig) -> Uop:
    """The micro-op that the 32-bit ``word`` encodes under ``cfg``.

    Raises EncodingError for anything but an integer (Python's or numpy's, not a bool) that
    fits 32 unsigned bits, and for set reserved bits.
    """
    fmt = instruction_set(cfg).uop
    word = _as_word(word, UOP_WIDTH, "micro-op")
    return Uop(**_decode_record(word, fmt, "Uop"))  # type: ignore[arg-type]


def insn_bytes(insns: Iterable[Instruction], cfg: AccelConfig) -> bytes:
    """The instructions as they lie in DRAM: 16 little-endian bytes each.

    An EncodingError names the index of the instruction that does not encode.
    """
    out = bytearray()
    for index, insn in enumerate(insns):
        try:
            out += encode(insn, cfg).to_bytes(INSN_BYTES, "little")
        except EncodingError as err:
            raise err.at(index) from None
    return bytes(out)


def uop_bytes(uops: Iterable[Uop], cfg: AccelConfig) -> bytes:
    """The micro-op table as it lies in DRAM: 4 little-endian bytes each."""
    out = bytearray()
    for index, uop in enumerate(uops):
        try:
            out += encode_uop(uop, cfg).to_bytes(UOP_BYTES, "little")
        except EncodingError as err:
            raise EncodingError(
                f"micro-op {index}: {err.detail}", insn="Uop", field=err.field
            ) from None
    return bytes(out)
