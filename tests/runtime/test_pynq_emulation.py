"""The ``pynq`` board driver, unchanged, on the emulated board of
:mod:`runtime.devices.pynq_emulation`, whose logic is the Verilated RTL (built once under
``build/rtl``): a compiled model gives the functional simulator's bytes and the ``rtl`` device's
cycles, by interrupt and by polling; the DMA guard refuses a program before anything is
launched; a program that never finishes times out with the registers; hardware built for
another configuration fails the identity check; ``vtaforge run --device pynq --emulate``."""

from __future__ import annotations

import dataclasses
import json
import re
import sys

import numpy as np
import pytest

from fpga.boards import BOARDS
from fpga.signature import IRQ, SLAVE
from fpga.vivado import CELLS
from isa import CONTROL_ADDR_BITS, AccelConfig, FinishInsn, GemmInsn, Opcode, Register
from runtime.cli import main
from runtime.devices import DeviceError
from runtime.devices import pynq_emulation as emulation
from runtime.devices.control import ControlError
from runtime.devices.dma import DmaGuardError
from runtime.devices.pynq import BD_MODULE, PynqDevice
from runtime.devices.pynq_emulation import (
    MEMORY_BASE,
    EmulatedBoard,
    EmulatedPynqDevice,
    write_overlay,
)
from runtime.devices.pynq_emulation_hwh import (
    ACCELERATOR_CELL,
    CONTROL_BASE,
    PS_CELL,
    PS_IRQ,
    read_handoff,
    write_handoff,
)
from runtime.model import Model, ModelImage
from tests.conformance.runners import RTL_CACHE, rtl_device
from tests.runtime.test_devices import scale_program, with_insn
from tests.runtime.vtaf_files import tiny_model

TINY = AccelConfig.preset("tiny")


def _device(cfg: AccelConfig = TINY, **options) -> EmulatedPynqDevice:
    return EmulatedPynqDevice(cfg, cache_dir=RTL_CACHE, **options)


@pytest.mark.parametrize("completion", ["interrupt", "poll"])
def test_a_compiled_model_gives_fsims_bytes_and_the_rtl_devices_cycles(completion):
    tiny = tiny_model()
    model = Model(ModelImage.from_bytes(tiny.data))
    with _device(completion=completion) as device:
        run = model.run(tiny.x, device=device)
        assert device.board.dram.buffers == 0  # the driver freed every buffer
    np.testing.assert_array_equal(run.output, tiny.expected)  # tiny.expected: fsim's
    cycles = [step.cycles for step in run.report.accel_steps]
    assert len(cycles) == 6 and all(cycles)
    # The same programs on the rtl device (each on zeros: the accelerator's timing does not
    # depend on the data) and on sim under the memory timing of their shared AxiRam.
    programs = [s.program for s in model.image.steps if s.program is not None]
    jobs = [(program, np.zeros(model.image.dram_bytes, np.uint8)) for program in programs]
    assert [s.cycles for s in rtl_device(TINY).run_many(jobs)] == cycles
    sim = model.run(tiny.x, device="sim", timing=device.memory_timing)
    assert [step.cycles for step in sim.report.accel_steps] == cycles
    assert run.report.device == "pynq"


def test_the_dma_guard_refuses_a_program_before_anything_is_launched():
    program, out = scale_program(TINY)
    far = with_insn(program, Opcode.STORE, dram_base=program.dram_extent)
    with _device() as device:
        with pytest.raises(DmaGuardError, match=r"instruction \d+ \(STORE .*outside the driver's"):
            device.run(far, np.zeros(program.dram_extent, np.uint8))
        assert device.board.request("read", Register.STATUS) == 0  # never started
        assert device.board.dram.buffers == 0
        dram = np.zeros(program.dram_extent, np.uint8)
        assert device.run(program, dram).cycles > 0  # the board still runs what the guard passes
    assert dram[out.address : out.end].view(np.int8).tolist() == [3 * i for i in range(32)]


@pytest.mark.parametrize("completion", ["interrupt", "poll"])
def test_a_program_that_never_finishes_times_out_with_the_registers(completion):
    # a GEMM that waits for a token no LOAD pushes
    blocked = GemmInsn(pop_prev_dep=True, uop_bgn=0, uop_end=1, iter_out=1, iter_in=1)
    program, _ = scale_program(TINY)
    hung = dataclasses.replace(program, instructions=(blocked, FinishInsn()))
    device = _device(completion=completion, timeout_s=0.5)
    with device, pytest.raises(ControlError, match=r"did not finish within 0\.5 s") as caught:
        device.run(hung, np.zeros(program.dram_extent, np.uint8))
    assert caught.value.registers["STATUS"] == 1  # busy, not done


def test_hardware_built_for_another_configuration_fails_the_identity_check():
    with pytest.raises(ControlError, match="built for configuration id"):
        _device(AccelConfig.preset("default"), hardware=TINY)


def test_a_design_without_the_interrupt_wired_runs_by_polling_only():
    board = EmulatedBoard()
    try:
        bitstream = write_overlay(TINY, board.folder, RTL_CACHE)
        hwh = bitstream.with_suffix(".hwh")
        hwh.write_text(re.sub(r"<CONNECTIONS>.*?</CONNECTIONS>", "", hwh.read_text(), flags=re.S))
        with board.installed():
            with pytest.raises(DeviceError, match="accelerator has no interrupt: use completion="):
                PynqDevice(TINY, bitstream=bitstream)
            device = PynqDevice(TINY, bitstream=bitstream, completion="poll")  # loads it again
        program, out = scale_program(TINY)
        dram = np.zeros(program.dram_extent, np.uint8)
        assert device.run(program, dram).cycles > 0
        assert dram[out.address : out.end].view(np.int8).tolist() == [3 * i for i in range(32)]
    finally:
        board.close()


def test_an_emulated_bitstream_names_the_python_that_runs_its_logic(tmp_path):
    """The ``.bit`` names this Python, which runs the testbench in a process of its own: a
    bitstream loaded as given runs the same; one whose Python is gone, or that names none,
    is a DeviceError saying so."""
    bitstream = write_overlay(TINY, tmp_path, RTL_CACHE)
    description = json.loads(bitstream.read_text())
    assert description["launcher"] == sys.executable
    program, out = scale_program(TINY)
    with _device(bitstream=bitstream) as device:
        dram = np.zeros(program.dram_extent, np.uint8)
        device.run(program, dram)
    assert dram[out.address : out.end].view(np.int8).tolist() == [3 * i for i in range(32)]
    for launcher, error in (
        (str(tmp_path / "no-python"), "cannot start the programmable logic"),
        (None, "is not an emulated bitstream .launcher None is not a path"),
    ):
        bitstream.write_text(json.dumps({**description, "launcher": launcher}))
        with pytest.raises(DeviceError, match=error):
            _device(bitstream=bitstream)
    with pytest.raises(DeviceError, match="the hardware or an emulated bitstream, not both"):
        _device(bitstream=bitstream, hardware=AccelConfig.preset("default"))


def test_the_handoff_describes_the_board_design_fpga_builds():
    ps = BOARDS["pynq-z2"].ps
    assert (ps.control_base, ps.irq) == (CONTROL_BASE, PS_IRQ)
    assert (CELLS["ps"], CELLS["accelerator"]) == (PS_CELL, ACCELERATOR_CELL)
    handoff = read_handoff(write_handoff("vtaforge_tiny"), "vtaforge_tiny.hwh")
    (name, ip), *others = handoff.ip_dict.items()
    assert name == ACCELERATOR_CELL and not others
    assert ip["phys_addr"] == CONTROL_BASE and ip["addr_range"] == 1 << CONTROL_ADDR_BITS
    assert ip["type"] == f"xilinx.com:module_ref:{BD_MODULE}:1.0" and ip["mem_id"] == SLAVE
    assert list(handoff.interrupt_pins) == [f"{ACCELERATOR_CELL}/{IRQ}"]
    with pytest.raises(DeviceError, match="broken.hwh: not a hardware handoff"):
        read_handoff("<EDKSYSTEM>", "broken.hwh")


def test_the_boards_memory_and_buses_refuse_what_a_board_would():
    board = EmulatedBoard(memory_bytes=4 * 4096)
    try:
        pynq = board.module
        first = pynq.allocate(shape=(5000,), dtype=np.uint8)
        second = pynq.allocate(shape=(10,), dtype=np.int32)
        assert (first.physical_address, second.physical_address) == (
            MEMORY_BASE,
            MEMORY_BASE + 2 * 4096,
        )
        first.freebuffer()
        third = pynq.allocate(shape=(4096,), dtype=np.uint8)
        assert third.physical_address == MEMORY_BASE  # the first free range that fits
        with pytest.raises(DeviceError, match="cannot allocate 8192 bytes"):
            pynq.allocate(shape=(8192,), dtype=np.uint8)
        third.freebuffer()
        with pytest.raises(DeviceError, match="freed twice"):
            third.freebuffer()
        second[:] = np.arange(10)
        with pytest.raises(DeviceError, match="a whole buffer, not a view"):
            second[2:].flush()
        second.flush()
        second[:] = 0
        second.invalidate()  # what DRAM holds: what was flushed
        assert second.tolist() == list(range(10))
        with pytest.raises(DeviceError, match="no bitstream is loaded"):
            pynq.MMIO(CONTROL_BASE, 4096).read(0)
    finally:
        board.close()
    assert not board.folder.exists()


# ----------------------------------------------------------------------------- command line
def _cli_files(tmp_path):
    tiny = tiny_model()
    path, x = tmp_path / "tiny.vtaf", tmp_path / "x.npy"
    path.write_bytes(tiny.data)
    np.save(x, tiny.x)
    return tiny, str(path), str(x)


def test_vtaforge_run_device_pynq_emulate(tmp_path, capsys, monkeypatch):
    monkeypatch.setattr(emulation, "default_cache_dir", lambda: RTL_CACHE)
    tiny, path, x = _cli_files(tmp_path)
    out = tmp_path / "out.npz"
    status = main(["run", path, "--device", "pynq", "--emulate", "--input", x, "-o", str(out)])
    printed = capsys.readouterr().out
    assert status == 0
    assert re.search(
        r"6 accelerator and \d+ CPU steps on pynq \(emulated\), [\d,]+ cycles", printed
    )
    np.testing.assert_array_equal(next(iter(np.load(out).values())), tiny.expected)


@pytest.mark.parametrize(
    ("options", "error"),
    [
        (["--device", "pynq"], "--device pynq needs --bitstream FILE.bit (on a PYNQ board)"),
        (["--device", "sim", "--emulate"], "--bitstream and --emulate go with --device pynq"),
        (["--device", "pynq", "--emulate", "--trace", "t.json"], "need a timed device"),
        (["--device", "pynq", "--bitstream", "overlay.bit"], "needs the `pynq` package"),
    ],
)
def test_vtaforge_run_device_pynq_refusals(tmp_path, capsys, monkeypatch, options, error):
    monkeypatch.setitem(sys.modules, "pynq", None)  # as off the board
    _, path, x = _cli_files(tmp_path)
    assert main(["run", path, "--input", x, *options]) != 0
    assert error in capsys.readouterr().err
