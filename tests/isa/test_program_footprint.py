"""A program's whole DRAM footprint (issue 17 items 8 and 11): regions beside segments, in the
binary format (version 2; version 1 still read) and in assembly, exact round trips of both."""

import dataclasses
import json
import struct
import zlib

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from isa import (
    AccelConfig,
    AssemblyError,
    DramRegion,
    FinishInsn,
    MemId,
    Program,
    ProgramBuilder,
    ProgramError,
    ProgramFormatError,
    assemble,
    disassemble,
)
from isa.program import FORMAT_VERSION, READABLE_VERSIONS
from runtime.demo_gemm import demo_expected_output, demo_gemm_program
from simulator import FunctionalSimulator
from tests.strategies import programs

TINY = AccelConfig.preset("tiny")
_PREAMBLE = struct.Struct("<8sHHI")


@st.composite
def programs_with_regions(draw):
    """Random programs (tests.strategies) plus regions after everything else in DRAM."""
    program = draw(programs())
    cursor = program.dram_extent
    regions = []
    for index in range(draw(st.integers(0, 3))):
        cursor += draw(st.integers(0, 64))
        size = draw(st.integers(0, 96))
        regions.append(DramRegion(f"region{index}", cursor, size))
        if draw(st.booleans()):  # regions may overlap each other
            cursor += size
    return dataclasses.replace(program, regions=regions)


@given(programs_with_regions())
def test_binary_round_trip_keeps_regions(program):
    assert Program.from_bytes(program.to_bytes()) == program


@given(programs_with_regions())
def test_disassembly_reassembles_into_an_identical_program(program):
    text = disassemble(program)
    assert assemble(text) == program
    assert assemble(disassemble(program, listing=True)) == program


@given(programs_with_regions())
def test_dram_extent_covers_every_part(program):
    ends = [program.uop_region[1]] if program.uops else []
    ends += [s.end for s in program.segments] + [r.end for r in program.regions]
    assert program.dram_extent == max(ends, default=0)
    assert set(program.named_regions()) == {p.name for p in (*program.segments, *program.regions)}


def _version_1(program: Program) -> bytes:
    """``program`` (without regions) as a format-1 file: no "regions" in the header."""
    data = program.to_bytes()
    _, _, _, length = _PREAMBLE.unpack_from(data)
    header = json.loads(data[_PREAMBLE.size : _PREAMBLE.size + length])
    del header["regions"]
    raw = json.dumps(header).encode()
    rest = data[_PREAMBLE.size + length : -4]
    body = _PREAMBLE.pack(b"VTAFORGE", 1, 0, len(raw)) + raw + rest
    return body + struct.pack("<I", zlib.crc32(body))


def test_version_1_files_are_still_read():
    program = dataclasses.replace(demo_gemm_program(TINY), regions=())
    assert 1 in READABLE_VERSIONS and FORMAT_VERSION == 2
    assert Program.from_bytes(_version_1(program)) == program


def test_an_unknown_version_is_refused_naming_the_versions_read():
    data = bytearray(demo_gemm_program(TINY).to_bytes())
    data[8:10] = (7).to_bytes(2, "little")
    with pytest.raises(ProgramFormatError, match=r"format version 7 .*reads versions 1 and 2"):
        Program.from_bytes(bytes(data))


def test_demo_program_carries_its_output_and_runs_in_its_own_extent():
    for preset in AccelConfig.preset_names():
        program = demo_gemm_program(AccelConfig.preset(preset))
        address, expected = demo_expected_output(program)
        assert program.named_regions()["outputs"] == DramRegion("outputs", address, len(expected))
        loaded = Program.from_bytes(program.to_bytes())
        dram = np.zeros(loaded.dram_extent, dtype=np.uint8)
        FunctionalSimulator(loaded.config).run(loaded, dram)
        assert dram[address : address + len(expected)].tobytes() == expected


def test_builder_extern_buffers_become_regions():
    b = ProgramBuilder(TINY)
    acc = b.alloc("acc", MemId.ACC, 4)
    out = b.extern("out", MemId.OUT, 4, 0x4000)
    b.load_2d(acc, sram=0, y_size=1, x_size=4)
    program = b.finish()
    assert program.regions == (DramRegion("out", out.address, out.nbytes),)
    assert program.dram_extent == out.end


@pytest.mark.parametrize(
    ("regions", "message"),
    [
        ([DramRegion("r", 0x10, 4)], "region r overlaps the micro-op table"),
        ([DramRegion("x", 0x100, 4)], "segment or region name x is used twice"),
        ([DramRegion("r", (1 << 32) - 2, 4)], "ends past the 0x100000000-byte DRAM"),
    ],
)
def test_regions_are_checked(regions, message):
    from isa import DramSegment, Uop

    with pytest.raises(ProgramError, match=message):
        Program(
            TINY,
            [FinishInsn()],
            uops=[Uop(dst_idx=0, src_idx=0, wgt_idx=0)] * 4,
            uop_base=2,
            segments=[DramSegment("x", 0x200, b"\1")],
            regions=regions,
        )


@pytest.mark.parametrize("bad", [("r", -1, 4), ("r", 0, -4), ("two words", 0, 4), ("r", 0, 1.5)])
def test_a_bad_region_is_a_program_error(bad):
    with pytest.raises(ProgramError):
        DramRegion(*bad)


def test_a_region_that_is_not_a_region_record_is_refused():
    with pytest.raises(ProgramError, match="region 0 is a tuple"):
        Program(TINY, [FinishInsn()], regions=[("r", 0, 4)])


@pytest.mark.parametrize(
    ("line", "message"),
    [
        (".region out 0x100", "line 2: .region takes a name, a byte address and a size"),
        (".region out 0x100 many", "line 2: .region size: 'many' is not an integer"),
        (".region out 0x100000000 4", "line 2: .region: region out at bytes"),
        (".region out -4 4", "line 2: .region: region out: address -4"),
    ],
)
def test_assembly_region_errors_name_the_line(line, message):
    with pytest.raises(AssemblyError, match=message):
        assemble(f".config tiny\n{line}\nFINISH\n")


def test_config_line_takes_a_preset_name():
    assert assemble(".config tiny\nFINISH\n").config == TINY
    with pytest.raises(AssemblyError, match=r"line 1: .config: .*did you mean 'tiny'"):
        assemble(".config tinny\nFINISH\n")
