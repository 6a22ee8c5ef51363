"""Hostile inputs meet typed errors: malformed program headers and configuration files, DRAM
addresses beyond the configuration's address space, non-integer words, and micro-ops that do not
fit their fields when a program runs."""

import struct
import zlib

import numpy as np
import pytest

import isa
from isa import (
    AccelConfig,
    AssemblyError,
    ConfigError,
    DramSegment,
    EncodingError,
    FinishInsn,
    Program,
    ProgramError,
    ProgramFormatError,
    Uop,
    disassemble,
)
from simulator.errors import SimulationError
from simulator.functional import FunctionalSimulator

TINY = AccelConfig.preset("tiny")
_PREAMBLE = struct.Struct("<8sHHI")


def _with_header(header: bytes) -> bytes:
    """A real program's bytes with its JSON header replaced by ``header``; the header length in
    the preamble and the trailing CRC-32 are fixed up, so the header parser is reached."""
    data = Program(TINY, [FinishInsn()]).to_bytes()
    magic, version, reserved, header_len = _PREAMBLE.unpack_from(data)
    rest = data[_PREAMBLE.size + header_len : -4]  # instruction words; the CRC is rebuilt
    body = _PREAMBLE.pack(magic, version, reserved, len(header)) + header + rest
    return body + struct.pack("<I", zlib.crc32(body))


def test_rebuilt_header_still_parses():
    """The helper itself is sound: the original header, rebuilt, gives the original program."""
    data = Program(TINY, [FinishInsn()]).to_bytes()
    (header_len,) = struct.unpack_from("<I", data, 12)
    header = data[_PREAMBLE.size : _PREAMBLE.size + header_len]
    assert Program.from_bytes(_with_header(header)) == Program(TINY, [FinishInsn()])


@pytest.mark.parametrize(
    ("header", "match"),
    [
        (b'{"instructions": ' + b"1" * 5000 + b"}", "header is not usable JSON"),
        (b"[" * 50000, "nested too deeply"),
    ],
    ids=["huge-integer", "deep-nesting"],
)
def test_unparseable_header_is_a_format_error(header, match):
    with pytest.raises(ProgramFormatError, match=match):
        Program.from_bytes(_with_header(header))


def test_unparseable_header_in_a_file_names_the_file(tmp_path):
    path = tmp_path / "bad.vtaprog"
    path.write_bytes(_with_header(b"[" * 50000))
    with pytest.raises(ProgramFormatError, match="bad.vtaprog"):
        Program.load(path)


@pytest.mark.parametrize(
    "text",
    ['{"batch": ' + "1" * 5000 + "}", "[" * 100000],
    ids=["huge-integer", "deep-nesting"],
)
def test_unparseable_config_json_is_a_config_error(text):
    with pytest.raises(ConfigError, match="mine.json") as info:
        AccelConfig.from_json(text, source="mine.json")
    assert info.value.parameter == "file"


def test_config_file_not_utf8_is_a_config_error(tmp_path):
    path = tmp_path / "binary.json"
    path.write_bytes(b"\xff" + TINY.to_json().encode())
    with pytest.raises(ConfigError, match="binary.json.*UTF-8"):
        AccelConfig.load(path)


def test_segment_beyond_dram_address_space():
    with pytest.raises(ProgramError, match="segment x.*DRAM address space"):
        Program(TINY, [FinishInsn()], segments=[DramSegment("x", 2**64, b"\0")])


def test_segment_ending_past_dram_address_space():
    limit = 1 << TINY.dram_addr_bits
    with pytest.raises(ProgramError, match="segment x"):
        Program(TINY, [FinishInsn()], segments=[DramSegment("x", limit - 1, b"\0\0")])


def test_segment_at_the_top_of_dram_address_space_is_allowed():
    limit = 1 << TINY.dram_addr_bits
    program = Program(TINY, [FinishInsn()], segments=[DramSegment("x", limit - 2, b"\0\0")])
    assert program.dram_extent == limit


def test_uop_base_beyond_dram_address_space():
    with pytest.raises(ProgramError, match="micro-op table.*DRAM address space"):
        Program(TINY, [FinishInsn()], uops=[Uop(dst_idx=0, src_idx=0)], uop_base=2**40)


def test_out_of_range_address_in_a_file_is_a_format_error():
    header = Program(TINY, [FinishInsn()]).to_bytes()
    (header_len,) = struct.unpack_from("<I", header, 12)
    text = header[_PREAMBLE.size : _PREAMBLE.size + header_len].decode()
    huge = text.replace('"uop_base": 0', f'"uop_base": {2**80}')
    assert huge != text
    with pytest.raises(ProgramFormatError, match="DRAM address space"):
        Program.from_bytes(_with_header(huge.encode()))


def test_assembler_segment_beyond_dram_address_space_names_its_line():
    program = Program(TINY, [FinishInsn()], segments=[DramSegment("a", 0, b"\1")])
    lines = disassemble(program).splitlines()
    index = next(i for i, line in enumerate(lines) if line.startswith(".segment a"))
    lines[index] = ".segment a 0x10000000000000000"
    lines.append(".segment b 0x100")
    lines.append(".data 02")
    with pytest.raises(AssemblyError, match="DRAM address space") as info:
        isa.assemble("\n".join(lines))
    assert info.value.line == index + 1


def test_assembler_uop_base_beyond_dram_address_space_names_its_line():
    program = Program(TINY, [FinishInsn()], uops=[Uop(dst_idx=0, src_idx=0)])
    lines = disassemble(program).splitlines()
    index = next(i for i, line in enumerate(lines) if line.startswith(".uop_base"))
    lines[index] = ".uop_base 0x10000000000"
    with pytest.raises(AssemblyError, match="DRAM address space") as info:
        isa.assemble("\n".join(lines))
    assert info.value.line == index + 1


@pytest.mark.parametrize(
    "word", [None, 1.5, "0x1", b"", np.float64(3.0), True, False, np.bool_(True)], ids=repr
)
@pytest.mark.parametrize("decoder", [isa.decode, isa.decode_uop], ids=["decode", "decode_uop"])
def test_decoders_refuse_non_integer_words(decoder, word):
    with pytest.raises(EncodingError):
        decoder(word, TINY)


@pytest.mark.parametrize("kind", [np.int64, np.uint32, np.uint64])
def test_decoders_accept_numpy_integers(kind):
    uop = Uop(dst_idx=3, src_idx=2, wgt_idx=1)
    decoded = isa.decode_uop(kind(isa.encode_uop(uop, TINY)), TINY)
    assert decoded == uop
    assert all(type(getattr(decoded, name)) is int for name in ("dst_idx", "src_idx", "wgt_idx"))
    word = isa.encode(FinishInsn(), TINY)
    assert isa.decode(np.uint64(word), TINY) == FinishInsn()


def test_run_with_unencodable_micro_op_is_a_simulation_error():
    program = Program(TINY, [FinishInsn()], uops=[Uop(dst_idx=256, src_idx=0)])
    dram = np.zeros(program.dram_extent + 64, dtype=np.uint8)
    with pytest.raises(SimulationError, match="micro-op 0.*dst_idx"):
        FunctionalSimulator(TINY).run(program, dram)
