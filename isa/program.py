"""``Program``: an accelerator program as an artefact, and its binary file format.

A program holds its configuration, its instructions, its micro-op table (placed in DRAM at
``uop_base``, counted in micro-op elements as a LOAD UOP's ``dram_base`` is), optional DRAM
segments (initial data: weights, inputs, biases) at byte addresses, and optional DRAM regions
(named bytes it reads or writes without initial data: outputs, scratch, tensors its caller
places). Segments, regions and the micro-op table together are its whole DRAM footprint
(:attr:`Program.dram_extent`), so any device can size DRAM from the program alone. It can be
saved, loaded, disassembled (:mod:`isa.assembly`) and run on any device whose configuration has
the same ISA and memory map (:func:`check_config`).

Binary format, little-endian::

    offset 0   8s   magic b"VTAFORGE"
           8   u16  format version (2; version 1, which had no regions, is read too)
          10   u16  reserved, 0
          12   u32  header length H
          16   H    header: UTF-8 JSON {fingerprint, config, instructions, uops, uop_base,
                    segments: [{name, address, size}], regions: [{name, address, size}]}
               16 bytes per instruction, 4 bytes per micro-op, then each segment's bytes
               u32  CRC-32 of everything before it
"""

from __future__ import annotations

import itertools
import json
import struct
import zlib
from collections.abc import Iterable, MutableSequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from isa.config import AccelConfig
from isa.encoding import INSN_BYTES, UOP_BYTES, decode, decode_uop, insn_bytes, uop_bytes
from isa.errors import (
    ConfigError,
    ConfigMismatchError,
    EncodingError,
    ProgramError,
    ProgramFormatError,
)
from isa.fields import instruction_set
from isa.files import PROGRAM, read_file
from isa.instructions import AluInsn, FinishInsn, GemmInsn, Instruction, MemInsn, Uop

__all__ = [
    "FORMAT_VERSION",
    "MAGIC",
    "READABLE_VERSIONS",
    "DramRegion",
    "DramSegment",
    "Program",
    "check_config",
    "check_dram_region",
]

MAGIC = b"VTAFORGE"
FORMAT_VERSION = 2
#: Versions :meth:`Program.from_bytes` reads: 1 (no regions) and the current one.
READABLE_VERSIONS = (1, FORMAT_VERSION)
_PREAMBLE = struct.Struct("<8sHHI")
_CRC = struct.Struct("<I")
_INSN_TYPES = (MemInsn, GemmInsn, AluInsn, FinishInsn)


@dataclass(frozen=True)
class DramSegment:
    """Initial DRAM contents: ``data`` placed at byte ``address``."""

    name: str
    address: int
    data: bytes

    def __post_init__(self) -> None:
        _check_name_and_address("segment", self.name, self.address)
        object.__setattr__(self, "data", bytes(self.data))

    @property
    def end(self) -> int:
        """First byte address after the segment."""
        return self.address + len(self.data)

    @property
    def region(self) -> DramRegion:
        """The bytes the segment occupies, as a region."""
        return DramRegion(self.name, self.address, len(self.data))


@dataclass(frozen=True)
class DramRegion:
    """``size`` bytes at byte ``address`` that a program reads or writes without giving them
    initial data: an output, scratch, or a tensor its caller places. Regions may overlap each
    other and the segments (one tensor seen under two names)."""

    name: str
    address: int
    size: int

    def __post_init__(self) -> None:
        _check_name_and_address("region", self.name, self.address)
        if isinstance(self.size, bool) or not isinstance(self.size, int) or self.size < 0:
            raise ProgramError(f"region {self.name}: size {self.size!r} must be an integer >= 0")

    @property
    def end(self) -> int:
        """First byte address after the region."""
        return self.address + self.size


def _check_name_and_address(what: str, name: object, address: object) -> None:
    if not isinstance(name, str) or not name or any(c.isspace() for c in name):
        raise ProgramError(f"{what} name {name!r} must be a non-empty word")
    if isinstance(address, bool) or not isinstance(address, int) or address < 0:
        raise ProgramError(f"{what} {name}: address {address!r} must be an integer >= 0")


@dataclass(frozen=True)
class Program:
    """Instructions, micro-op table, initial DRAM segments and further DRAM regions for one
    configuration.

    Construction checks the parts' types, the DRAM placement (everything inside the address
    space; segments and the micro-op table disjoint, regions clear of the micro-op table; names
    unique among segments and regions),
    and that every instruction is one the configuration has (no MUL without ``alu_mul``);
    whether field values fit their widths is checked when the program is encoded.
    """

    config: AccelConfig
    instructions: tuple[Instruction, ...]
    uops: tuple[Uop, ...] = ()
    uop_base: int = 0
    segments: tuple[DramSegment, ...] = field(default=())
    regions: tuple[DramRegion, ...] = field(default=())

    def __post_init__(self) -> None:
        if not isinstance(self.config, AccelConfig):
            raise ProgramError(f"config must be an AccelConfig, not {type(self.config).__name__}")
        object.__setattr__(self, "instructions", tuple(self.instructions))
        object.__setattr__(self, "uops", tuple(self.uops))
        object.__setattr__(self, "segments", tuple(self.segments))
        object.__setattr__(self, "regions", tuple(self.regions))
        formats = instruction_set(self.config)
        for index, insn in enumerate(self.instructions):
            if not isinstance(insn, _INSN_TYPES):
                raise ProgramError(
                    f"instruction {index} is a {type(insn).__name__}, not an instruction record"
                )
            try:  # an operation the configuration lacks (MUL without alu_mul)
                formats.for_record(insn).check_available(insn)
            except EncodingError as err:
                raise ProgramError(str(err.at(index))) from None
        for index, uop in enumerate(self.uops):
            if not isinstance(uop, Uop):
                raise ProgramError(f"micro-op {index} is a {type(uop).__name__}, not a Uop")
        for kind, parts in (("segment", self.segments), ("region", self.regions)):
            record = DramSegment if kind == "segment" else DramRegion
            for index, part in enumerate(parts):
                if not isinstance(part, record):
                    raise ProgramError(
                        f"{kind} {index} is a {type(part).__name__}, not a {record.__name__}"
                    )
        if (
            isinstance(self.uop_base, bool)
            or not isinstance(self.uop_base, int)
            or (self.uop_base < 0)
        ):
            raise ProgramError(f"uop_base {self.uop_base!r} must be an integer >= 0")
        self._check_regions()

    def _check_regions(self) -> None:
        """Every segment and region lies inside the configuration's DRAM address space
        (``2**dram_addr_bits`` bytes), no two segments (or the micro-op table) overlap, no
        region overlaps the micro-op table, and names are unique among segments and regions."""
        for region in self.regions:
            check_dram_region(self.config, region.address, region.end, f"region {region.name}")
        regions = [(s.address, s.end, f"segment {s.name}") for s in self.segments]
        for start, end, what in regions:
            check_dram_region(self.config, start, end, what)
        start, end = self.uop_region
        check_dram_region(
            self.config,
            start,
            end,
            f"micro-op table ({len(self.uops)} at uop_base {self.uop_base})",
        )
        if self.uops:
            regions.append((*self.uop_region, "micro-op table"))
            start, end = self.uop_region
            for region in self.regions:
                if region.address < end and start < region.end:
                    raise ProgramError(
                        f"region {region.name} overlaps the micro-op table at bytes "
                        f"[{start:#x}, {end:#x})"
                    )
        names = [s.name for s in (*self.segments, *self.regions)]
        for name in names:
            if names.count(name) > 1:
                raise ProgramError(f"segment or region name {name} is used twice")
        regions.sort()
        for (_, end_a, what_a), (start_b, _, what_b) in itertools.pairwise(regions):
            if start_b < end_a:
                raise ProgramError(f"{what_a} overlaps {what_b} at byte {start_b:#x}")

    @property
    def fingerprint(self) -> str:
        return self.config.fingerprint

    @property
    def uop_region(self) -> tuple[int, int]:
        """Byte addresses ``[start, end)`` of the micro-op table in DRAM."""
        start = self.uop_base * self.config.uop_elem_bytes
        return start, start + len(self.uops) * UOP_BYTES

    @property
    def dram_extent(self) -> int:
        """Bytes of DRAM the program needs: up to the end of its micro-op table, segments and
        regions (0 when it has none)."""
        ends = [s.end for s in (*self.segments, *self.regions)]
        if self.uops:
            ends.append(self.uop_region[1])
        return max(ends, default=0)

    def named_regions(self) -> dict[str, DramRegion]:
        """Every segment and region by name, as regions (where ``--input``/``--output`` of
        ``vtaforge sim`` find them)."""
        return {r.name: r for r in (*(s.region for s in self.segments), *self.regions)}

    def instruction_bytes(self) -> bytes:
        """The encoded instruction stream (what the fetch module reads)."""
        return insn_bytes(self.instructions, self.config)

    def uop_table_bytes(self) -> bytes:
        """The encoded micro-op table (what LOAD UOP instructions read)."""
        return uop_bytes(self.uops, self.config)

    def write_to(self, dram: MutableSequence[int] | Any) -> None:
        """Copy the micro-op table and the segments into ``dram`` (a bytearray or a 1-D uint8
        array indexed by byte address)."""
        if len(dram) < self.dram_extent:
            raise ProgramError(
                f"DRAM of {len(dram)} bytes is too small: the program needs {self.dram_extent}"
            )
        if self.uops:
            start, end = self.uop_region
            dram[start:end] = memoryview(self.uop_table_bytes())
        for segment in self.segments:
            dram[segment.address : segment.end] = memoryview(segment.data)

    # ------------------------------------------------------------------ binary file format
    def to_bytes(self) -> bytes:
        header = json.dumps(
            {
                "fingerprint": self.fingerprint,
                "config": self.config.to_dict(),
                "instructions": len(self.instructions),
                "uops": len(self.uops),
                "uop_base": self.uop_base,
                "segments": [
                    {"name": s.name, "address": s.address, "size": len(s.data)}
                    for s in self.segments
                ],
                "regions": [
                    {"name": r.name, "address": r.address, "size": r.size} for r in self.regions
                ],
            },
            sort_keys=True,
        ).encode()
        body = bytearray(_PREAMBLE.pack(MAGIC, FORMAT_VERSION, 0, len(header)))
        body += header
        body += self.instruction_bytes()
        body += self.uop_table_bytes()
        for segment in self.segments:
            body += segment.data
        body += _CRC.pack(zlib.crc32(body))
        return bytes(body)

    @classmethod
    def from_bytes(cls, data: bytes, *, config: AccelConfig | None = None) -> Program:
        """Parse a binary program; with ``config``, refuse one built for another configuration."""
        return _parse(bytes(data), config)

    def save(self, path: str | Path) -> None:
        Path(path).write_bytes(self.to_bytes())

    @classmethod
    def load(cls, path: str | Path, *, config: AccelConfig | None = None) -> Program:
        """The program saved at ``path`` (a regular file within :data:`isa.files.PROGRAM`'s
        limit, else :class:`~isa.files.UserFileError`); with ``config``, one built for another
        configuration is refused (ConfigMismatchError naming the differences)."""
        data = read_file(path, PROGRAM)
        try:
            return _parse(data, config)
        except ConfigMismatchError as err:
            raise ConfigMismatchError(f"{path}: {err}", err.differences) from None
        except ProgramFormatError as err:
            raise ProgramFormatError(f"{path}: {err}") from None


def check_dram_region(cfg: AccelConfig, start: int, end: int, what: str) -> None:
    """Raise ProgramError naming ``what`` when bytes ``[start, end)`` do not fit the DRAM address
    space of ``cfg`` (``2**dram_addr_bits`` bytes)."""
    limit = 1 << cfg.dram_addr_bits
    if end > limit:
        raise ProgramError(
            f"{what} at bytes [{start:#x}, {end:#x}) ends past the {limit:#x}-byte DRAM address "
            f"space (dram_addr_bits={cfg.dram_addr_bits})"
        )


def check_config(program_config: AccelConfig, expected: AccelConfig) -> None:
    """Raise ConfigMismatchError naming every parameter where ``program_config`` differs from
    ``expected`` in the ISA or the memory map (:meth:`AccelConfig.isa_parameters`); the clock,
    the bus width and the queue depths do not make a program incompatible."""
    if program_config == expected:
        return
    mine, theirs = program_config.to_dict(), expected.to_dict()
    differences = {
        k: (mine[k], theirs[k]) for k in AccelConfig.isa_parameters() if mine[k] != theirs[k]
    }
    if not differences:
        return
    listing = ", ".join(f"{k} {a} != {b}" for k, (a, b) in differences.items())
    raise ConfigMismatchError(
        f"program was built for {program_config.fingerprint}, not {expected.fingerprint} "
        f"({listing})",
        differences,
    )


def _parse(data: bytes, expected: AccelConfig | None) -> Program:
    if len(data) < _PREAMBLE.size:
        raise ProgramFormatError(
            f"truncated: {len(data)} bytes is shorter than the {_PREAMBLE.size}-byte preamble"
        )
    magic, version, _, header_len = _PREAMBLE.unpack_from(data)
    if magic != MAGIC:
        raise ProgramFormatError(f"not a vtaforge program (magic {magic!r}, expected {MAGIC!r})")
    if version not in READABLE_VERSIONS:
        readable = " and ".join(map(str, READABLE_VERSIONS))
        raise ProgramFormatError(
            f"format version {version} is not supported (this build reads versions {readable})"
        )
    header_end = _PREAMBLE.size + header_len
    if len(data) < header_end + _CRC.size:
        raise ProgramFormatError(
            f"truncated: the header needs {header_end} bytes, the file has {len(data)}"
        )
    header = _parse_header(data[_PREAMBLE.size : header_end], version)
    n_insns, n_uops = header["instructions"], header["uops"]
    sizes = [s["size"] for s in header["segments"]]
    total = header_end + n_insns * INSN_BYTES + n_uops * UOP_BYTES + sum(sizes) + _CRC.size
    if len(data) < total:
        raise ProgramFormatError(f"truncated: expected {total} bytes, the file has {len(data)}")
    if len(data) > total:
        raise ProgramFormatError(f"{len(data) - total} unexpected bytes after the program")
    (crc,) = _CRC.unpack_from(data, total - _CRC.size)
    if crc != zlib.crc32(data[: total - _CRC.size]):
        raise ProgramFormatError("corrupt: the CRC-32 checksum does not match the contents")
    try:
        cfg = AccelConfig.from_dict(header["config"])
    except ConfigError as err:
        raise ProgramFormatError(f"header config is invalid: {err}") from None
    if header["fingerprint"] != cfg.fingerprint:
        raise ProgramFormatError(
            f"header fingerprint {header['fingerprint']} does not match its config "
            f"({cfg.fingerprint})"
        )
    if expected is not None:
        check_config(cfg, expected)
    offset = header_end
    insns = []
    for index, word in enumerate(_words(data, offset, n_insns, INSN_BYTES)):
        try:
            insns.append(decode(word, cfg))
        except EncodingError as err:
            raise ProgramFormatError(str(err.at(index))) from None
    offset += n_insns * INSN_BYTES
    uops = []
    for index, word in enumerate(_words(data, offset, n_uops, UOP_BYTES)):
        try:
            uops.append(decode_uop(word, cfg))
        except EncodingError as err:
            raise ProgramFormatError(f"micro-op {index}: {err.detail}") from None
    offset += n_uops * UOP_BYTES
    try:
        segments = []
        for spec in header["segments"]:
            segments.append(
                DramSegment(spec["name"], spec["address"], data[offset : offset + spec["size"]])
            )
            offset += spec["size"]
        regions = [DramRegion(r["name"], r["address"], r["size"]) for r in header["regions"]]
        return Program(cfg, insns, uops, header["uop_base"], segments, regions)
    except ProgramError as err:
        raise ProgramFormatError(f"inconsistent program: {err}") from None


def _words(data: bytes, offset: int, count: int, size: int) -> Iterable[int]:
    for i in range(count):
        start = offset + i * size
        yield int.from_bytes(data[start : start + size], "little")


def _parse_header(raw: bytes, version: int) -> dict[str, Any]:
    try:
        header = json.loads(raw.decode())
    except (UnicodeDecodeError, json.JSONDecodeError) as err:
        raise ProgramFormatError(f"the header is not valid JSON ({err})") from None
    except ValueError as err:  # an integer too long to convert (sys.int_info limit)
        raise ProgramFormatError(f"the header is not usable JSON ({err})") from None
    except RecursionError:
        raise ProgramFormatError("the header is not usable JSON (nested too deeply)") from None
    if not isinstance(header, dict):
        raise ProgramFormatError("the header is not a JSON object")
    if version == 1:  # version 1 had no regions
        header = {**header, "regions": []}
    for key, kind in (
        ("fingerprint", str),
        ("config", dict),
        ("instructions", int),
        ("uops", int),
        ("uop_base", int),
        ("segments", list),
        ("regions", list),
    ):
        if not isinstance(header.get(key), kind) or isinstance(header.get(key), bool):
            raise ProgramFormatError(f"header field {key!r} is missing or not a {kind.__name__}")
    for key in ("instructions", "uops", "uop_base"):
        if header[key] < 0:
            raise ProgramFormatError(f"header field {key!r} is negative")
    for kind in ("segment", "region"):
        for index, spec in enumerate(header[f"{kind}s"]):
            if (
                not isinstance(spec, dict)
                or not isinstance(spec.get("name"), str)
                or not isinstance(spec.get("address"), int)
                or not isinstance(spec.get("size"), int)
                or spec["size"] < 0
                or spec["address"] < 0
            ):
                raise ProgramFormatError(f"header {kind} {index} is malformed: {spec!r}")
    return header
