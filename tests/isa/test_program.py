"""Program: validation, DRAM placement, and the binary file format's round trip and errors."""

import struct
import zlib

import numpy as np
import pytest
from hypothesis import given

from isa import (
    AccelConfig,
    ConfigMismatchError,
    DramSegment,
    FinishInsn,
    GemmInsn,
    Program,
    ProgramError,
    ProgramFormatError,
    Uop,
    encode,
)
from runtime.demo_gemm import demo_gemm_program
from tests.strategies import programs

TINY = AccelConfig.preset("tiny")


@given(programs())
def test_binary_round_trip(program):
    assert Program.from_bytes(program.to_bytes()) == program
    assert Program.from_bytes(program.to_bytes(), config=program.config) == program


def test_save_and_load(tmp_path):
    program = demo_gemm_program(AccelConfig())
    path = tmp_path / "demo.bin"
    program.save(path)
    assert Program.load(path) == program


def test_instruction_stream_is_little_endian_words():
    program = demo_gemm_program(AccelConfig())
    stream = program.instruction_bytes()
    assert len(stream) == 16 * len(program.instructions)
    for index, insn in enumerate(program.instructions):
        word = int.from_bytes(stream[16 * index : 16 * index + 16], "little")
        assert word == encode(insn, program.config)


def test_write_to_places_uops_and_segments():
    program = Program(
        AccelConfig(),
        [FinishInsn()],
        uops=[Uop(dst_idx=1, src_idx=2, wgt_idx=3)],
        uop_base=4,
        segments=[DramSegment("x", 100, b"\x01\x02\x03")],
    )
    dram = np.zeros(128, dtype=np.uint8)
    program.write_to(dram)
    assert dram[100:103].tolist() == [1, 2, 3]
    # uop at element 4 = byte 16: dst 1 | src 2 << 11 | wgt 3 << 22, little-endian.
    assert int.from_bytes(bytes(dram[16:20]), "little") == 1 | 2 << 11 | 3 << 22
    with pytest.raises(ProgramError, match="too small"):
        program.write_to(bytearray(50))


def test_overlapping_segments_are_rejected():
    with pytest.raises(ProgramError, match="segment a overlaps segment b at byte 0x8"):
        Program(TINY, [], segments=[DramSegment("a", 0, bytes(10)), DramSegment("b", 8, b"x")])
    with pytest.raises(ProgramError, match="micro-op table overlaps segment s"):
        Program(
            TINY, [], uops=[Uop(dst_idx=0, src_idx=0)] * 4, segments=[DramSegment("s", 12, b"x")]
        )
    with pytest.raises(ProgramError, match="used twice"):
        Program(TINY, [], segments=[DramSegment("a", 0, b"x"), DramSegment("a", 8, b"x")])


def test_program_rejects_non_records():
    with pytest.raises(ProgramError, match="instruction 1 is a int"):
        Program(TINY, [FinishInsn(), 3])
    with pytest.raises(ProgramError, match="uop_base"):
        Program(TINY, [], uop_base=-1)


def _file(program: Program) -> bytes:
    return program.to_bytes()


def test_truncated_files_are_refused_at_every_length():
    data = _file(demo_gemm_program(TINY))
    for length in range(len(data)):
        with pytest.raises(ProgramFormatError, match="truncated"):
            Program.from_bytes(data[:length])


def test_foreign_file():
    with pytest.raises(ProgramFormatError, match="not a vtaforge program"):
        Program.from_bytes(b"\x7fELF" + bytes(60))


def test_corrupt_file():
    data = bytearray(_file(demo_gemm_program(TINY)))
    data[-10] ^= 0x40
    with pytest.raises(ProgramFormatError, match="CRC-32"):
        Program.from_bytes(bytes(data))


def test_trailing_bytes():
    with pytest.raises(ProgramFormatError, match="3 unexpected bytes"):
        Program.from_bytes(_file(demo_gemm_program(TINY)) + b"abc")


def test_unsupported_version():
    data = bytearray(_file(demo_gemm_program(TINY)))
    struct.pack_into("<H", data, 8, 99)
    with pytest.raises(ProgramFormatError, match="format version 99"):
        Program.from_bytes(bytes(data))


def test_config_mismatch_names_the_differences(tmp_path):
    path = tmp_path / "tiny.bin"
    demo_gemm_program(TINY).save(path)
    with pytest.raises(ConfigMismatchError, match="built for 1x4_.*not 1x16_") as info:
        Program.load(path, config=AccelConfig())
    assert str(path) in str(info.value)
    assert info.value.differences["block_in"] == (4, 16)
    assert "uop_buff_size" in info.value.differences


def _rebuild(header: bytes, body: bytes) -> bytes:
    data = struct.pack("<8sHHI", b"VTAFORGE", 1, 0, len(header)) + header + body
    return data + struct.pack("<I", zlib.crc32(data))


@pytest.mark.parametrize(
    ("header", "match"),
    [
        (b"{not json", "not valid JSON"),
        (b"[]", "not a JSON object"),
        (b'{"fingerprint": "x"}', "'config' is missing"),
    ],
)
def test_malformed_headers(header, match):
    with pytest.raises(ProgramFormatError, match=match):
        Program.from_bytes(_rebuild(header, b""))


def test_header_fingerprint_must_match_its_config():
    data = _file(Program(TINY, [FinishInsn()]))
    header_len = struct.unpack_from("<I", data, 12)[0]
    header = data[16 : 16 + header_len].replace(b"1x4_", b"1x8_")
    body = data[16 + header_len : -4]
    with pytest.raises(ProgramFormatError, match="fingerprint 1x8_.* does not match"):
        Program.from_bytes(_rebuild(header, body))


def test_undecodable_instruction_is_located():
    good = _file(Program(TINY, [FinishInsn(), FinishInsn()]))
    header_len = struct.unpack_from("<I", good, 12)[0]
    header = good[16 : 16 + header_len]
    body = bytearray(good[16 + header_len : -4])
    body[16] = 7  # second instruction: opcode 7
    with pytest.raises(ProgramFormatError, match="instruction 1: unknown opcode 7"):
        Program.from_bytes(_rebuild(header, bytes(body)))


def test_unencodable_instruction_is_located_when_saving():
    program = Program(
        TINY, [FinishInsn(), GemmInsn(uop_bgn=5000, uop_end=1, iter_out=1, iter_in=1)]
    )
    with pytest.raises(Exception, match="instruction 1: GemmInsn: field uop_bgn=5000"):
        program.to_bytes()
