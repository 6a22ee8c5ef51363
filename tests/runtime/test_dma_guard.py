"""The board driver's DMA guard and relocation (``runtime.devices.dma``, used by the pynq
device): the byte span of each LOAD/STORE agrees with the functional simulator's DRAM bounds;
programs that reach outside the driver's buffers (a LOAD, a STORE's last strided row, the
micro-op table, the instruction stream) are refused before launch with the instruction named;
a relocated program computes the same bytes, moved."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest

from isa import (
    INSN_BYTES,
    AccelConfig,
    MemId,
    MemInsn,
    Opcode,
    Program,
    ProgramBuilder,
)
from runtime.devices import DeviceError
from runtime.devices.dma import Buffer, DmaGuardError, check_dma, relocate, transfer_span
from runtime.devices.pynq import place
from simulator import FunctionalSimulator, SimulationError
from tests.conformance.random_programs import random_program
from tests.runtime.test_devices import scale_program, with_insn

TINY = AccelConfig.preset("tiny")
PAGE = 4096


def _transfer(opcode: Opcode, mem: MemId, **fields) -> Program:
    """One LOAD or STORE (with the tokens that order it before FINISH) with ``fields``."""
    b = ProgramBuilder(TINY)
    buffer = b.extern("data", mem, 1, 0)
    move = b.load_2d if opcode is Opcode.LOAD else b.store_2d
    move(buffer, sram=0, y_size=1, x_size=1)
    return with_insn(b.finish(), opcode, **fields)


@pytest.mark.parametrize(
    ("opcode", "mem", "y_size", "x_size", "x_stride", "dram_base"),
    [
        (Opcode.LOAD, MemId.INP, 3, 2, 5, 7),
        (Opcode.LOAD, MemId.WGT, 2, 1, 1, 3),
        (Opcode.LOAD, MemId.ACC, 1, 4, 4, 0),
        (Opcode.LOAD, MemId.ACC_8BIT, 2, 3, 3, 10),
        (Opcode.STORE, MemId.OUT, 4, 2, 2, 9),
        (Opcode.STORE, MemId.OUT, 2, 3, 1, 1),  # overlapping rows
    ],
)
def test_transfer_span_is_the_dram_the_functional_simulator_needs(
    opcode, mem, y_size, x_size, x_stride, dram_base
):
    fields = dict(y_size=y_size, x_size=x_size, x_stride=x_stride, dram_base=dram_base)
    program = _transfer(opcode, mem, **fields)
    (insn,) = (i for i in program.instructions if isinstance(i, MemInsn) and i.x_size)
    _, end = transfer_span(TINY, insn)
    FunctionalSimulator(TINY).run(program, np.zeros(end, np.uint8))
    with pytest.raises(SimulationError, match="DRAM bytes"):
        FunctionalSimulator(TINY).run(program, np.zeros(end - 1, np.uint8))
    empty = dataclasses.replace(insn, x_size=0)
    assert transfer_span(TINY, empty) is None


def _buffers(program: Program, insn_addr: int) -> list[Buffer]:
    """Buffers exactly as large as the program's DRAM footprint and its instruction stream."""
    return [
        Buffer("DRAM", 0, program.dram_extent),
        Buffer("instructions", insn_addr, len(program.instructions) * INSN_BYTES),
    ]


def test_a_program_inside_its_buffers_passes_to_the_byte():
    program, _ = scale_program(TINY)
    check_dma(program, PAGE, _buffers(program, PAGE))


def test_a_load_or_store_outside_the_buffers_is_refused_naming_the_instruction():
    program, out = scale_program(TINY)
    stores, loads = (
        [i for i, insn in enumerate(program.instructions) if getattr(insn, "opcode", None) is op]
        for op in (Opcode.STORE, Opcode.LOAD)
    )
    elem = TINY.out_elem_bytes
    cases = [
        # a STORE one element past DRAM's end
        (with_insn(program, Opcode.STORE, dram_base=program.dram_extent // elem), stores[0]),
        # a STORE whose second row, one stride on, leaves DRAM
        (with_insn(program, Opcode.STORE, y_size=2, x_stride=program.dram_extent), stores[0]),
        # a LOAD far beyond
        (with_insn(program, Opcode.LOAD, dram_base=1 << 20), loads[0]),
    ]
    for bad, index in cases:
        with pytest.raises(DmaGuardError, match=rf"instruction {index} \(") as caught:
            check_dma(bad, PAGE, _buffers(program, PAGE))
        assert caught.value.index == index
        assert "outside the driver's buffers (DRAM [0x0" in str(caught.value)
        assert "refused before launch" in str(caught.value)
    assert out.end <= program.dram_extent


def test_the_instruction_stream_and_the_micro_op_table_must_be_owned_too():
    program = random_program(TINY, 3)
    assert program.uops
    check_dma(program, 0x10_0000, _buffers(program, 0x10_0000))
    short = [Buffer("DRAM", 0, program.dram_extent), Buffer("instructions", 0x10_0000, 16)]
    with pytest.raises(DmaGuardError, match="the instruction stream bytes") as caught:
        check_dma(program, 0x10_0000, short)
    assert caught.value.index is None
    start, end = program.uop_region
    around_table = [
        Buffer("DRAM below", 0, start),
        Buffer("DRAM above", end, program.dram_extent),
        *_buffers(program, 0x10_0000)[1:],
    ]
    with pytest.raises(DmaGuardError, match="the micro-op table bytes"):
        check_dma(program, 0x10_0000, around_table)


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_a_relocated_program_computes_the_same_bytes_moved(seed):
    program = random_program(TINY, seed)
    offset = 3 * PAGE
    expected = np.zeros(program.dram_extent, np.uint8)
    FunctionalSimulator(TINY).run(program, expected)
    moved = relocate(program, offset)
    assert moved.dram_extent == program.dram_extent + offset
    dram = np.zeros(moved.dram_extent, np.uint8)
    FunctionalSimulator(TINY).run(moved, dram)
    assert not dram[:offset].any()
    np.testing.assert_array_equal(dram[offset:], expected)


def test_relocation_refuses_misaligned_or_unreachable_offsets():
    program, _ = scale_program(TINY)
    with pytest.raises(DeviceError, match="not a multiple of its largest element"):
        relocate(program, 8)
    with pytest.raises(DeviceError, match="cannot move the program by .* DRAM address space"):
        relocate(program, 1 << TINY.dram_addr_bits)


def test_place_guards_the_moved_program_against_the_physical_buffers():
    program, _ = scale_program(TINY)
    dram_at, insns_at = 0x1F00_0000, 0x1F10_0000
    placed, stream = place(program, dram_at, program.dram_extent, insns_at)
    assert len(stream) == len(program.instructions) * INSN_BYTES
    assert placed.instructions[0].dram_base * TINY.acc_elem_bytes >= dram_at
    far = with_insn(program, Opcode.STORE, dram_base=program.dram_extent)
    with pytest.raises(DmaGuardError, match=r"STORE.* writes bytes \[0x1f0"):
        place(far, dram_at, program.dram_extent, insns_at)
