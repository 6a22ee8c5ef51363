"""The cocotb testbench of the ``rtl`` device: it runs in the simulator process, on the Verilated
``AxiAccelerator`` (ports ``aclk``, ``aresetn``, ``m_axi_*``, ``s_axi_*``, ``irq``).

For a :class:`~runtime.devices.rtl_jobs.Batch` (plusarg ``+vtaforge_batch=PATH``) it checks the
hardware's identity registers once, then for each job: resets the accelerator and zeroes its
SRAM buffers (through VPI: each job starts as on a freshly opened device), puts the job's
memory image behind a cocotbext-axi ``AxiRam`` on ``m_axi``, programs the control registers
through an ``AxiLiteMaster`` on ``s_axi`` as a driver would (``INSN_COUNT``, ``INSN_ADDR``,
``CONTROL = START | IRQ_ENABLE``), waits for the interrupt (or the cycle limit), and reads back
``CYCLES``, the beat counters and ``ERROR``. The outcomes go to ``+vtaforge_outcomes=PATH``.
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
from cocotbext.axi import AxiBus, AxiLiteBus, AxiLiteMaster, AxiRam
from cocotbext.axi.constants import AxiResp

from isa import MAGIC, REGISTER_MAP_VERSION, Control, ErrorFlag, MemId, Register, Status
from runtime.devices import rtl_jobs

__all__ = ["run_batch"]

_PERIOD_NS = 10
_RESET_CYCLES = 4
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


class _Host:
    """The driver's view: register reads and writes on ``s_axi``."""

    def __init__(self, dut) -> None:
        self.bus = AxiLiteMaster(
            AxiLiteBus.from_prefix(dut, "s_axi"), dut.aclk, dut.aresetn, reset_active_level=False
        )

    async def read(self, register: Register) -> int:
        response = await self.bus.read(register, 4)
        if response.resp != AxiResp.OKAY:
            raise RuntimeError(f"reading {register.name} answered {response.resp.name}")
        return int.from_bytes(response.data, "little")

    async def write(self, register: Register, value: int) -> None:
        response = await self.bus.write(register, value.to_bytes(4, "little"))
        if response.resp != AxiResp.OKAY:
            raise RuntimeError(f"writing {register.name} answered {response.resp.name}")

    async def snapshot(self) -> dict[str, int]:
        """Every readable register, by name (for an error report)."""
        return {register.name: await self.read(register) for register in Register}


@cocotb.test()
async def run_batch(dut) -> None:
    """Run every job of the batch (see the module docstring)."""
    logging.getLogger("cocotb").setLevel(logging.WARNING)
    batch_path = Path(cocotb.plusargs["vtaforge_batch"])
    outcomes_path = Path(cocotb.plusargs["vtaforge_outcomes"])
    batch = rtl_jobs.load(batch_path)
    Clock(dut.aclk, _PERIOD_NS, unit="ns").start()
    dut.aresetn.value = 0
    host = _Host(dut)
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
        await _check_identity(host, batch.config_id)
        for job in batch.jobs:
            memory.load(job)
            buffers.clear()
            outcomes.append(await _run_job(dut, host, memory, job, batch.max_cycles))
    except Exception:
        error = traceback.format_exc(limit=-3)
        outcomes += [rtl_jobs.RtlOutcome(error=error)] * (len(batch.jobs) - len(outcomes))
    rtl_jobs.save(outcomes, outcomes_path)


async def _reset(dut) -> None:
    dut.aresetn.value = 0
    await ClockCycles(dut.aclk, _RESET_CYCLES)
    dut.aresetn.value = 1
    await RisingEdge(dut.aclk)


async def _check_identity(host: _Host, expected_id: int) -> None:
    """What a board driver checks first: a vtaforge accelerator, this register map, this
    configuration."""
    magic = await host.read(Register.MAGIC)
    version = await host.read(Register.VERSION)
    found_id = await host.read(Register.CONFIG_ID)
    if magic != MAGIC or version != REGISTER_MAP_VERSION:
        raise RuntimeError(f"not a vtaforge accelerator (MAGIC {magic:#x}, VERSION {version})")
    if found_id != expected_id:
        raise RuntimeError(
            f"the hardware was built for configuration id {found_id:#010x}, not {expected_id:#010x}"
        )


async def _run_job(
    dut, host: _Host, memory: _Memory, job: rtl_jobs.RtlJob, max_cycles: int
) -> rtl_jobs.RtlOutcome:
    """One job, from reset to its outcome."""
    started = time.perf_counter()
    await _reset(dut)
    await host.write(Register.INSN_COUNT, job.insn_count)
    await host.write(Register.INSN_ADDR_LO, job.insn_addr & 0xFFFF_FFFF)
    await host.write(Register.INSN_ADDR_HI, job.insn_addr >> 32)
    await host.write(Register.CONTROL, Control.START | Control.IRQ_ENABLE)
    if not dut.irq.value:
        timeout = Timer(max_cycles * _PERIOD_NS, unit="ns")
        if await First(RisingEdge(dut.irq), timeout) is timeout:
            return rtl_jobs.RtlOutcome(
                error=f"did not finish within {max_cycles} cycles",
                registers=await host.snapshot(),
            )
    errors = ErrorFlag(await host.read(Register.ERROR))
    status = Status(await host.read(Register.STATUS))
    if errors or memory.fault or Status.DONE not in status:
        problems = [flag.name for flag in ErrorFlag if flag in errors]
        message = f"the accelerator reported {', '.join(problems) or f'STATUS {status!r}'}"
        return rtl_jobs.RtlOutcome(
            error=message + (f": {memory.fault}" if memory.fault else ""),
            registers=await host.snapshot(),
        )
    return rtl_jobs.RtlOutcome(
        dram=bytes(memory.data[: job.dram_bytes]),
        cycles=await host.read(Register.CYCLES),
        read_beats=await host.read(Register.READ_BEATS),
        write_beats=await host.read(Register.WRITE_BEATS),
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
