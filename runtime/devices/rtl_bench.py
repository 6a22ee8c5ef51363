"""The cocotb testbench of the ``rtl`` device: it runs in the simulator process, on the Verilated
``AxiAccelerator`` (ports ``aclk``, ``aresetn``, ``m_axi_*``, ``s_axi_*``, ``irq``).

For a :class:`~runtime.devices.rtl_jobs.Batch` (plusarg ``+vtaforge_batch=PATH``) it checks the
hardware's identity registers once, then for each job: resets the accelerator and zeroes its
SRAM buffers (through VPI: each job starts as on a freshly opened device), puts the job's
memory image behind a cocotbext-axi ``AxiRam`` on ``m_axi``, and runs the board driver's
control protocol (:class:`runtime.devices.control.Controller`, here with an ``AxiLiteMaster`` on
``s_axi`` as its register bus): ``INSN_COUNT``, ``INSN_ADDR``, ``CONTROL = START |
IRQ_ENABLE``, the interrupt (or the cycle limit), then ``ERROR``, ``CYCLES`` and the beat
counters. The outcomes go to ``+vtaforge_outcomes=PATH``.
The test itself never fails: every problem is an outcome's ``error``, for the host to raise.
"""

from __future__ import annotations

import logging
import random
import time
import traceback
from pathlib import Path

import cocotb
from cocotb.clock import Clock
from cocotb.handle import HierarchyObject
from cocotb.triggers import ClockCycles, First, RisingEdge, Timer
from cocotb.utils import get_sim_time
from cocotbext.axi import AxiBus, AxiLiteBus, AxiLiteMaster, AxiRam
from cocotbext.axi.constants import AxiResp

from isa import MemId, Register
from runtime.devices import rtl_jobs
from runtime.devices.control import ControlError, Controller, RegisterBus

__all__ = ["run_batch"]

_PERIOD_NS = 10
_RESET_CYCLES = 4
_POLL_CYCLES = 16
#: The SRAM buffers of SEMANTICS 1, as the hardware names its memories (``hw.top``, ``hw.compute``).
_BUFFER_NAMES = frozenset(
    f"{mem.name.lower()}_mem" for mem in (MemId.UOP, MemId.INP, MemId.WGT, MemId.ACC, MemId.OUT)
)


class _BusFault(Exception):
    """An access outside the memory image (the AxiRam answers it with SLVERR)."""


class _Memory:
    """The memory the AxiRam serves: the whole AXI address space (``space`` bytes), of which
    the current job's image can be read and its DRAM part written. Any other access raises,
    and the first one is remembered for the error message."""

    def __init__(self, space: int) -> None:
        self.space = space
        self.load(rtl_jobs.RtlJob(b"", 0, 0, 0))

    def load(self, job: rtl_jobs.RtlJob) -> None:
        self.data = bytearray(job.image)
        self.writable = job.dram_bytes
        self.fault: str | None = None

    def __len__(self) -> int:
        return self.space

    def _check(self, key: slice, limit: int, what: str) -> None:
        if key.stop > limit:
            message = f"{what} of bytes {key.start:#x}..{key.stop - 1:#x} outside " + (
                f"DRAM ({self.writable} bytes)"
                if what == "write"
                else f"the memory image ({len(self.data)} bytes)"
            )
            self.fault = self.fault or message
            raise _BusFault(message)

    def __getitem__(self, key: slice) -> bytearray:
        self._check(key, len(self.data), "read")
        return self.data[key]

    def __setitem__(self, key: slice, value: bytes) -> None:
        self._check(key, self.writable, "write")
        self.data[key] = value


class _Buffers:
    """Every row of the accelerator's SRAM buffers, found once by name in the design."""

    def __init__(self, dut) -> None:
        found: dict[str, object] = {}

        def visit(handle, depth: int) -> None:
            for child in handle:
                if child._name in _BUFFER_NAMES:
                    found[child._name] = child
                elif depth and isinstance(child, HierarchyObject):
                    visit(child, depth - 1)

        visit(dut, depth=4)
        if set(found) != _BUFFER_NAMES:
            raise RuntimeError(
                f"expected the buffers {sorted(_BUFFER_NAMES)}, found {sorted(found)}"
            )
        self.rows = [memory[index] for memory in found.values() for index in range(len(memory))]

    def clear(self) -> None:
        for row in self.rows:
            row.value = 0


class _Bus(RegisterBus):
    """The driver's view (:class:`~runtime.devices.control.RegisterBus`): register reads and
    writes on ``s_axi``, the ``irq`` line, and a limit of ``max_cycles`` from the launch."""

    def __init__(self, dut, max_cycles: int) -> None:
        self.dut = dut
        self.bus = AxiLiteMaster(
            AxiLiteBus.from_prefix(dut, "s_axi"), dut.aclk, dut.aresetn, reset_active_level=False
        )
        self.max_cycles = max_cycles
        self.time_limit = f"{max_cycles} cycles"
        self._launched = 0  # the simulation time of the launch, in ns

    async def read(self, register: Register) -> int:
        response = await self.bus.read(register, 4)
        if response.resp != AxiResp.OKAY:
            raise RuntimeError(f"reading {register.name} answered {response.resp.name}")
        return int.from_bytes(response.data, "little")

    async def write(self, register: Register, value: int) -> None:
        response = await self.bus.write(register, value.to_bytes(4, "little"))
        if response.resp != AxiResp.OKAY:
            raise RuntimeError(f"writing {register.name} answered {response.resp.name}")

    def started(self) -> None:
        self._launched = round(get_sim_time("ns"))

    def _left_ns(self) -> int:
        return self.max_cycles * _PERIOD_NS - round(get_sim_time("ns") - self._launched)

    async def wait_interrupt(self) -> bool:
        if self.dut.irq.value:
            return True
        if self._left_ns() <= 0:
            return False
        timeout = Timer(self._left_ns(), unit="ns")
        return await First(RisingEdge(self.dut.irq), timeout) is not timeout

    async def pause(self) -> bool:
        await ClockCycles(self.dut.aclk, _POLL_CYCLES)
        return self._left_ns() > 0


@cocotb.test()
async def run_batch(dut) -> None:
    """Run every job of the batch (see the module docstring)."""
    logging.getLogger("cocotb").setLevel(logging.WARNING)
    batch_path = Path(cocotb.plusargs["vtaforge_batch"])
    outcomes_path = Path(cocotb.plusargs["vtaforge_outcomes"])
    batch = rtl_jobs.load(batch_path)
    Clock(dut.aclk, _PERIOD_NS, unit="ns").start()
    dut.aresetn.value = 0
    bus = _Bus(dut, batch.max_cycles)
    controller = Controller(bus, batch.config_id)
    memory = _Memory(1 << len(dut.m_axi_araddr))
    ram = AxiRam(
        AxiBus.from_prefix(dut, "m_axi"),
        dut.aclk,
        dut.aresetn,
        reset_active_level=False,
        mem=memory,
    )
    if batch.ready_probability < 1.0:
        _throttle(ram, batch.ready_probability, batch.seed)
    outcomes: list[rtl_jobs.RtlOutcome] = []
    try:
        buffers = _Buffers(dut)
        await _reset(dut)
        await controller.identify()
        for job in batch.jobs:
            memory.load(job)
            buffers.clear()
            outcomes.append(await _run_job(dut, controller, memory, job))
    except Exception:
        error = traceback.format_exc(limit=-3)
        outcomes += [rtl_jobs.RtlOutcome(error=error)] * (len(batch.jobs) - len(outcomes))
    rtl_jobs.save(outcomes, outcomes_path)


async def _reset(dut) -> None:
    dut.aresetn.value = 0
    await ClockCycles(dut.aclk, _RESET_CYCLES)
    dut.aresetn.value = 1
    await RisingEdge(dut.aclk)


async def _run_job(
    dut, controller: Controller, memory: _Memory, job: rtl_jobs.RtlJob
) -> rtl_jobs.RtlOutcome:
    """One job, from reset to its outcome, through the driver's control protocol."""
    started = time.perf_counter()
    await _reset(dut)
    try:
        finished = await controller.run(job.insn_addr, job.insn_count)
    except ControlError as err:
        fault = f": {memory.fault}" if memory.fault else ""
        return rtl_jobs.RtlOutcome(error=f"{err}{fault}", registers=err.registers)
    if memory.fault:
        return rtl_jobs.RtlOutcome(error=memory.fault, registers=await controller.snapshot())
    return rtl_jobs.RtlOutcome(
        dram=bytes(memory.data[: job.dram_bytes]),
        cycles=finished.cycles,
        read_beats=finished.read_beats,
        write_beats=finished.write_beats,
        wall_seconds=time.perf_counter() - started,
    )


def _throttle(ram: AxiRam, probability: float, seed: int) -> None:
    """Make each memory channel ready (or its next beat valid) with ``probability`` per
    cycle."""
    rng = random.Random(seed)

    def pauses():
        while True:
            yield rng.random() >= probability

    for channel in (
        ram.read_if.ar_channel,
        ram.read_if.r_channel,
        ram.write_if.aw_channel,
        ram.write_if.w_channel,
        ram.write_if.b_channel,
    ):
        channel.set_pause_generator(pauses())
