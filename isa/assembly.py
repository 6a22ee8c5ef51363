"""Text assembly: one line per instruction, every field named; exact round trips.

:data:`SYNTAX` is the syntax reference (``vtaforge asm --help`` prints it). :func:`disassemble`
writes every part of a program (configuration, micro-ops, segments with their bytes, regions,
instructions), so its text assembles back into an equal program.
"""

from __future__ import annotations

import dataclasses
import functools
from enum import IntEnum

from isa.config import AccelConfig
from isa.encoding import UOP_BYTES, encode, encode_uop
from isa.errors import AssemblyError, ConfigError, EncodingError, ProgramError
from isa.fields import Field, Format, InstructionSet, instruction_set
from isa.instructions import Instruction, MemInsn, Uop
from isa.opcodes import Opcode
from isa.program import DramRegion, DramSegment, Program, check_dram_region

__all__ = ["SYNTAX", "assemble", "disassemble", "format_insn", "format_uop"]

#: The assembly syntax, line by line.
SYNTAX = """\
One line per directive or instruction; ';' or '#' starts a comment.

  .config inp_width=8 wgt_width=8 ... alu_mul=True
  .config tiny
        the configuration: primary parameters (the rest keep their defaults) or a preset's
        name; optional when --config gives it (`vtaforge disasm` writes every parameter)
  .uop_base 4096
        DRAM address of the micro-op table, counted in 4-byte micro-ops (default 0)
  .uop dst_idx=0 src_idx=0 wgt_idx=0
        one micro-op of the table, in order
  .segment weights 0x1000
  .data 00ff7f80...
        a DRAM segment at a byte address and its initial bytes, as hex on the .data lines
        that follow (any number of them)
  .region out 0x1100 64
        a DRAM region (name, byte address, size in bytes) the program reads or writes
        without initial data: outputs and scratch. Segments, regions and the micro-op table
        are the program's whole DRAM footprint: `vtaforge sim` sizes DRAM from them and
        --input/--output name them.
  LOAD memory_type=INP sram_base=0 dram_base=256 y_size=1 x_size=4 x_stride=4 ...
  STORE memory_type=OUT ...
  GEMM reset_reg=0 uop_bgn=0 uop_end=1 iter_out=1 iter_in=1 ...
  ALU alu_opcode=SHR use_imm=1 imm=-3 ...
  FINISH
        an instruction: its mnemonic, then name=value for each field (`vtaforge isa layout`
        lists them). Enum fields take their names (memory_type=INP, alu_opcode=MAX), flags
        0 or 1, integers any Python integer literal (12, 0x1f, -3). Fields with a natural
        zero (flags, pads, loop factors, the immediate) may be left out. dram_base counts
        elements of the memory type (a LOAD INP's dram_base=256 is byte 256 * its element
        size); the dependency flags pop_prev_dep, pop_next_dep, push_prev_dep, push_next_dep
        order the load, compute and store modules (isa/SEMANTICS.md).
"""

_DATA_BYTES_PER_LINE = 32
_FLAG_NAMES = ("pop_prev_dep", "pop_next_dep", "push_prev_dep", "push_next_dep")
#: How a ``.config`` line spells a flag parameter (``alu_mul``); the disassembler writes ``True``.
_BOOLS = {"true": True, "false": False}


def _line_fields(fmt: Format) -> list[Field]:
    """The fields a line spells out: all but the opcode, the dependency flags last."""
    fields = [f for f in fmt.fields if f.name != "opcode"]
    return [f for f in fields if f.name not in _FLAG_NAMES] + [
        f for f in fields if f.name in _FLAG_NAMES
    ]


def _format_value(value: object) -> str:
    if isinstance(value, IntEnum):
        return value.name
    if isinstance(value, bool):
        return str(int(value))
    return str(value)


def _mnemonic(insn: Instruction) -> str:
    return insn.opcode.name


@functools.cache
def _tables() -> InstructionSet:
    """Field names, kinds and order, which every configuration shares (only widths differ)."""
    return instruction_set(AccelConfig())


def format_insn(insn: Instruction) -> str:
    """One assembly line for ``insn``, every field named."""
    fmt = _tables().for_record(insn)
    parts = [_mnemonic(insn)]
    parts += [f"{f.name}={_format_value(getattr(insn, f.name))}" for f in _line_fields(fmt)]
    return " ".join(parts)


def format_uop(uop: Uop) -> str:
    """One ``.uop`` line for ``uop``."""
    return f".uop dst_idx={uop.dst_idx} src_idx={uop.src_idx} wgt_idx={uop.wgt_idx}"


def disassemble(program: Program, *, listing: bool = False) -> str:
    """The program as assembly text that :func:`assemble` turns back into an equal program.

    With ``listing``, each instruction line ends in a comment with its index and encoded word.
    """
    cfg = program.config
    params = " ".join(f"{k}={v}" for k, v in cfg.to_dict().items())
    lines = [f"; vtaforge program for {cfg.fingerprint}", f".config {params}"]
    lines.append(f".uop_base {program.uop_base}")
    lines += [format_uop(u) for u in program.uops]
    for segment in program.segments:
        lines.append(f".segment {segment.name} {segment.address:#x}")
        data = segment.data
        for start in range(0, len(data), _DATA_BYTES_PER_LINE):
            lines.append(f".data {data[start : start + _DATA_BYTES_PER_LINE].hex()}")
    lines += [f".region {r.name} {r.address:#x} {r.size}" for r in program.regions]
    for index, insn in enumerate(program.instructions):
        line = format_insn(insn)
        if listing:
            line += f"  ; [{index}] {encode(insn, cfg):#034x}"
        lines.append(line)
    return "\n".join(lines) + "\n"


def _parse_int(text: str, what: str, line: int) -> int:
    try:
        return int(text, 0)
    except ValueError:
        raise AssemblyError(line, f"{what}: {text!r} is not an integer") from None


def _parse_assignments(tokens: list[str], line: int, context: str) -> dict[str, str]:
    values: dict[str, str] = {}
    for token in tokens:
        name, sep, value = token.partition("=")
        if not sep or not name or not value:
            raise AssemblyError(line, f"{context}: expected name=value, got {token!r}")
        if name in values:
            raise AssemblyError(line, f"{context}: field {name} is given twice")
        values[name] = value
    return values


def _parse_field(field: Field, text: str, line: int, context: str) -> object:
    if field.kind is bool:
        if text not in ("0", "1"):
            raise AssemblyError(line, f"{context}: flag {field.name}={text} must be 0 or 1")
        return text == "1"
    if issubclass(field.kind, IntEnum):
        members = {m.name: m for m in field.kind}
        if text.upper() in members:
            return members[text.upper()]
        raise AssemblyError(
            line,
            f"{context}: {field.name}={text} is not one of {', '.join(members)}",
        )
    return _parse_int(text, f"{context}: field {field.name}", line)


def _parse_record(
    fmt: Format, tokens: list[str], line: int, context: str, **fixed: object
) -> Instruction | Uop:
    fields = {f.name: f for f in _line_fields(fmt)}
    values = _parse_assignments(tokens, line, context)
    unknown = [name for name in values if name not in fields]
    if unknown:
        raise AssemblyError(
            line, f"{context}: unknown field {unknown[0]} (fields: {', '.join(fields)})"
        )
    required = [
        f.name
        for f in dataclasses.fields(fmt.record)
        if f.default is dataclasses.MISSING and f.name not in fixed
    ]
    missing = [name for name in required if name not in values]
    if missing:
        raise AssemblyError(line, f"{context}: missing field(s) {', '.join(missing)}")
    kwargs = {
        name: _parse_field(fields[name], value, line, context) for name, value in values.items()
    }
    try:
        return fmt.record(**kwargs, **fixed)
    except EncodingError as err:
        raise AssemblyError(line, f"{context}: {err.detail}") from None


def _parse_config(tokens: list[str], line: int) -> AccelConfig:
    if len(tokens) == 1 and "=" not in tokens[0]:  # a preset's name
        try:
            return AccelConfig.preset(tokens[0])
        except ConfigError as err:
            raise AssemblyError(line, f".config: {err}") from None
    values = _parse_assignments(tokens, line, ".config")
    params: dict[str, object] = {}
    for name, text in values.items():
        if text.lower() in _BOOLS:
            params[name] = _BOOLS[text.lower()]
            continue
        try:
            params[name] = int(text, 0)
        except ValueError:
            try:
                params[name] = float(text)
            except ValueError:
                raise AssemblyError(
                    line, f".config: {name}={text} is neither a number nor true/false"
                ) from None
    try:
        return AccelConfig.from_dict(params)
    except ConfigError as err:
        raise AssemblyError(line, f".config: {err}") from None


def assemble(text: str, config: AccelConfig | None = None) -> Program:
    """Parse assembly ``text`` into a program.

    The configuration comes from the text's ``.config`` line or from ``config``; when both are
    present they must agree. Any malformed line, or a value that does not fit its field under the
    configuration, raises AssemblyError with the 1-based line number.
    """
    cfg_line: tuple[AccelConfig, int] | None = None
    uop_base, uop_base_line = 0, 1
    uops: list[tuple[Uop, int]] = []
    insns: list[tuple[Instruction, int]] = []
    segments: list[tuple[str, int, bytearray, int]] = []
    regions: list[tuple[str, int, int, int]] = []
    isa = _tables()  # names and kinds; the widths of the chosen config are checked below
    for number, raw in enumerate(text.splitlines(), start=1):
        code = raw.split(";", 1)[0].split("#", 1)[0].strip()
        if not code:
            continue
        head, *tokens = code.split()
        keyword = head.lower()
        if keyword == ".config":
            if cfg_line is not None:
                raise AssemblyError(number, f".config given twice (first on line {cfg_line[1]})")
            cfg_line = (_parse_config(tokens, number), number)
        elif keyword == ".uop_base":
            if len(tokens) != 1:
                raise AssemblyError(number, ".uop_base takes one integer")
            uop_base, uop_base_line = _parse_int(tokens[0], ".uop_base", number), number
        elif keyword == ".uop":
            uops.append((_parse_record(isa.uop, tokens, number, ".uop"), number))
        elif keyword == ".segment":
            if len(tokens) != 2:
                raise AssemblyError(number, ".segment takes a name and a byte address")
            address = _parse_int(tokens[1], ".segment address", number)
            segments.append((tokens[0], address, bytearray(), number))
        elif keyword == ".region":
            if len(tokens) != 3:
                raise AssemblyError(number, ".region takes a name, a byte address and a size")
            address = _parse_int(tokens[1], ".region address", number)
            regions.append(
                (tokens[0], address, _parse_int(tokens[2], ".region size", number), number)
            )
        elif keyword == ".data":
            if not segments:
                raise AssemblyError(number, ".data before any .segment")
            try:
                segments[-1][2].extend(bytes.fromhex("".join(tokens)))
            except ValueError:
                raise AssemblyError(number, ".data: not an even run of hex digits") from None
        else:
            insns.append((_parse_insn(head, tokens, number, isa), number))
    cfg = _choose_config(cfg_line, config)
    for insn, number in insns:
        try:
            encode(insn, cfg)
        except EncodingError as err:
            raise AssemblyError(number, f"{insn.opcode.name}: {err.detail}") from None
    for uop, number in uops:
        try:
            encode_uop(uop, cfg)
        except EncodingError as err:
            raise AssemblyError(number, f".uop: {err.detail}") from None
    dram_segments = _place(cfg, segments, uop_base, uop_base_line, len(uops))
    dram_regions = [_region(cfg, *spec) for spec in regions]
    try:
        return Program(
            cfg,
            [i for i, _ in insns],
            [u for u, _ in uops],
            uop_base,
            dram_segments,
            dram_regions,
        )
    except ProgramError as err:
        last = max((spec[-1] for spec in (*segments, *regions)), default=1)
        raise AssemblyError(last, str(err)) from None


def _region(cfg: AccelConfig, name: str, address: int, size: int, number: int) -> DramRegion:
    """A ``.region`` line's region, inside ``cfg``'s DRAM address space."""
    try:
        region = DramRegion(name, address, size)
        check_dram_region(cfg, region.address, region.end, f"region {name}")
    except ProgramError as err:
        raise AssemblyError(number, f".region: {err}") from None
    return region


def _place(
    cfg: AccelConfig,
    segments: list[tuple[str, int, bytearray, int]],
    uop_base: int,
    uop_base_line: int,
    n_uops: int,
) -> list[DramSegment]:
    """The DRAM segments, each checked against ``cfg``'s DRAM address space, and the micro-op
    table's placement; an AssemblyError names the ``.segment`` or ``.uop_base`` line at fault."""
    placed = []
    for name, address, data, number in segments:
        try:
            segment = DramSegment(name, address, bytes(data))
            check_dram_region(cfg, segment.address, segment.end, f"segment {name}")
        except ProgramError as err:
            raise AssemblyError(number, f".segment: {err}") from None
        placed.append(segment)
    if uop_base < 0:
        raise AssemblyError(uop_base_line, f".uop_base: {uop_base} must be >= 0")
    start = uop_base * cfg.uop_elem_bytes
    try:
        check_dram_region(
            cfg, start, start + n_uops * UOP_BYTES, f"micro-op table at uop_base {uop_base}"
        )
    except ProgramError as err:
        raise AssemblyError(uop_base_line, f".uop_base: {err}") from None
    return placed


def _parse_insn(head: str, tokens: list[str], number: int, isa: InstructionSet) -> Instruction:
    try:
        opcode = Opcode[head.upper()]
    except KeyError:
        names = ", ".join(op.name for op in Opcode)
        raise AssemblyError(
            number, f"unknown mnemonic {head!r} (expected {names} or a directive)"
        ) from None
    fmt = isa.for_opcode(opcode)
    fixed = {"opcode": opcode} if fmt.record is MemInsn else {}
    return _parse_record(fmt, tokens, number, opcode.name, **fixed)


def _choose_config(
    cfg_line: tuple[AccelConfig, int] | None, config: AccelConfig | None
) -> AccelConfig:
    if cfg_line is None:
        if config is None:
            raise AssemblyError(1, "no .config line and no configuration given")
        return config
    cfg, number = cfg_line
    if config is not None and cfg != config:
        raise AssemblyError(
            number,
            f".config describes {cfg.fingerprint} but {config.fingerprint} was requested",
        )
    return cfg
