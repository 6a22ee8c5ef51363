"""The ``pynq`` device. A PYNQ board cannot exist here, so a stand-in ``pynq`` module plays it:
physical memory that ``allocate`` hands out page by page, and the accelerator's register block
behind ``MMIO`` that runs the fetched instruction stream on the functional simulator when START
is written. Everything of the driver above the ``pynq`` calls runs for real: the identity
check, relocation into the physical buffers, the DMA guard, the control protocol (by interrupt
and by polling) and the copies in and out. Without ``pynq``, opening the device names it."""

from __future__ import annotations

import asyncio
import sys
from types import ModuleType

import numpy as np
import pytest

from fpga.signature import BD_MODULE as FPGA_BD_MODULE
from isa import (
    INSN_BYTES,
    MAGIC,
    REGISTER_MAP_VERSION,
    AccelConfig,
    Control,
    Opcode,
    Register,
    Status,
    config_id,
)
from runtime import DeviceError, open_device
from runtime.devices.control import ControlError
from runtime.devices.dma import DmaGuardError
from runtime.devices.pynq import BD_MODULE
from simulator import FunctionalSimulator
from tests.conformance.random_programs import random_program
from tests.runtime.test_devices import scale_program, with_insn

TINY = AccelConfig.preset("tiny")
_PAGE = 4096
_CYCLES = 1234  # what the stand-in's CYCLES register reports


class _Buffer(np.ndarray):
    """A ``pynq.allocate`` buffer: a view of the board's physical memory."""

    def flush(self) -> None:
        pass

    def invalidate(self) -> None:
        pass

    def freebuffer(self) -> None:
        self.board.freed.append(self.physical_address)


class _Board:
    """Physical memory and the accelerator's registers (see the module docstring)."""

    def __init__(self, cfg: AccelConfig, memory_bytes: int = 1 << 20) -> None:
        self.cfg = cfg
        self.memory = np.zeros(memory_bytes, np.uint8)
        self.free = 16 * _PAGE  # nothing is allocated at physical address 0
        self.freed: list[int] = []
        self.writes: list[tuple[Register, int]] = []
        self.registers = {r: 0 for r in Register}
        self.registers |= {
            Register.MAGIC: MAGIC,
            Register.VERSION: REGISTER_MAP_VERSION,
            Register.CONFIG_ID: config_id(cfg),
        }

    def allocate(self, shape: tuple[int], dtype) -> _Buffer:
        (size,) = shape
        buffer = self.memory[self.free : self.free + size].view(_Buffer)
        buffer.physical_address, buffer.board = self.free, self
        self.free += -(-size // _PAGE) * _PAGE
        return buffer

    def read(self, offset: int) -> int:
        return self.registers[Register(offset)]

    def write(self, offset: int, value: int) -> None:
        register = Register(offset)
        self.writes.append((register, value))
        self.registers[register] = value
        if register is Register.CONTROL and value & Control.START:
            self._execute()

    def _execute(self) -> None:
        regs = self.registers
        address = regs[Register.INSN_ADDR_HI] << 32 | regs[Register.INSN_ADDR_LO]
        stream = self.memory[address : address + regs[Register.INSN_COUNT] * INSN_BYTES]
        words = [
            int.from_bytes(stream[i : i + INSN_BYTES], "little")
            for i in range(0, len(stream), INSN_BYTES)
        ]
        FunctionalSimulator(self.cfg).run(words, self.memory)
        regs[Register.STATUS] = Status.DONE
        regs[Register.CYCLES] = _CYCLES

    def starts(self) -> int:
        return sum(1 for r, v in self.writes if r is Register.CONTROL and v & Control.START)


def _pynq_module(board: _Board, ip_type: str = f"xilinx.com:module_ref:{BD_MODULE}:1.0"):
    module = ModuleType("pynq")

    class Overlay:
        def __init__(self, path: str) -> None:
            self.ip_dict = {
                "ps": {
                    "phys_addr": 0,
                    "addr_range": 0,
                    "type": "xilinx.com:ip:processing_system7:5.5",
                },
                "accelerator": {"phys_addr": 0x43C0_0000, "addr_range": _PAGE, "type": ip_type},
            }
            self.interrupt_pins = {"accelerator/irq": {}}

    class Interrupt:
        def __init__(self, pin: str) -> None:
            assert pin == "accelerator/irq"

        async def wait(self) -> None:
            assert board.registers[Register.CONTROL] & Control.IRQ_ENABLE

    module.Overlay = Overlay
    module.Interrupt = Interrupt
    module.MMIO = lambda base, size: board
    module.allocate = board.allocate
    return module


@pytest.fixture
def bitstream(tmp_path):
    path = tmp_path / "vtaforge_tiny.bit"
    path.write_bytes(b"bit")
    path.with_suffix(".hwh").write_text("<hwh/>")
    return path


@pytest.fixture
def board(monkeypatch):
    board = _Board(TINY)
    monkeypatch.setitem(sys.modules, "pynq", _pynq_module(board))
    return board


@pytest.mark.parametrize("completion", ["interrupt", "poll"])
@pytest.mark.parametrize("seed", [0, 1])
def test_programs_run_on_the_board_give_the_functional_simulators_bytes(
    board, bitstream, completion, seed
):
    program = random_program(TINY, seed)
    expected = np.zeros(program.dram_extent, np.uint8)
    FunctionalSimulator(TINY).run(program, expected)
    device = open_device("pynq", TINY, bitstream=bitstream, completion=completion)
    dram = np.zeros(program.dram_extent, np.uint8)
    stats = device.run(program, dram)
    np.testing.assert_array_equal(dram, expected)
    assert stats.cycles == _CYCLES and stats.kind.value == "pynq"
    written = dict(board.writes)
    assert written[Register.INSN_COUNT] == len(program.instructions)
    assert written[Register.INSN_ADDR_LO] in board.freed  # the instruction buffer, freed after
    assert len(board.freed) == 2
    irq = Control.IRQ_ENABLE in Control(written[Register.CONTROL])
    assert irq == (completion == "interrupt")


def test_a_program_reaching_outside_its_buffers_is_refused_before_launch(board, bitstream):
    program, _ = scale_program(TINY)
    device = open_device("pynq", TINY, bitstream=bitstream)
    far = with_insn(program, Opcode.STORE, dram_base=program.dram_extent)
    with pytest.raises(
        DmaGuardError, match=r"instruction \d+ \(STORE .*outside the driver's buffers"
    ):
        device.run(far, np.zeros(program.dram_extent, np.uint8))
    assert board.starts() == 0 and len(board.freed) == 2
    assert not board.memory.any()  # nothing was copied either


def test_hardware_for_another_configuration_is_refused(monkeypatch, bitstream):
    board = _Board(AccelConfig.preset("default"))
    monkeypatch.setitem(sys.modules, "pynq", _pynq_module(board))
    with pytest.raises(ControlError, match="built for configuration id"):
        open_device("pynq", TINY, bitstream=bitstream)


def test_an_overlay_without_the_accelerator_is_refused(monkeypatch, bitstream):
    monkeypatch.setitem(sys.modules, "pynq", _pynq_module(_Board(TINY), ip_type="other:ip:x:1.0"))
    with pytest.raises(DeviceError, match=f"expected one {BD_MODULE} accelerator .* found 0"):
        open_device("pynq", TINY, bitstream=bitstream)
    assert BD_MODULE == FPGA_BD_MODULE  # the module the board design references


def test_without_pynq_opening_names_the_missing_package(monkeypatch, bitstream):
    monkeypatch.setitem(sys.modules, "pynq", None)  # as where it is not installed
    with pytest.raises(DeviceError, match="needs the `pynq` package, which runs on a PYNQ board"):
        open_device("pynq", TINY, bitstream=bitstream)


@pytest.mark.parametrize(
    ("options", "match"),
    [
        ({"bitstream": "overlay.hwh"}, "path of a .bit file"),
        ({"bitstream": 3}, "path of a .bit file"),
        ({"completion": "irq"}, "completion 'irq' must be one of interrupt, poll"),
        ({"timeout_s": 0}, "timeout_s 0 must be a positive"),
        ({"timeout_s": float("nan")}, "timeout_s nan"),
    ],
)
def test_bad_options_are_refused(board, bitstream, options, match):
    with pytest.raises(DeviceError, match=match):
        open_device("pynq", TINY, **{"bitstream": bitstream, **options})


def test_a_missing_hardware_handoff_is_named(board, bitstream):
    bitstream.with_suffix(".hwh").unlink()
    with pytest.raises(DeviceError, match=r"vtaforge_tiny\.hwh does not exist"):
        open_device("pynq", TINY, bitstream=bitstream)


def test_the_device_works_from_inside_a_running_event_loop(board, bitstream):
    """As in a Jupyter notebook on the board, where an event loop is already running."""
    program, out = scale_program(TINY)
    dram = np.zeros(program.dram_extent, np.uint8)

    async def notebook_cell():
        device = open_device("pynq", TINY, bitstream=bitstream)
        return device.run(program, dram)

    assert asyncio.run(notebook_cell()).cycles == _CYCLES
    assert dram[out.address : out.end].view(np.int8).tolist() == [3 * i for i in range(32)]
