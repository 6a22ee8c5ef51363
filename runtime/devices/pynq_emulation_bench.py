"""The cocotb testbench of the emulated PYNQ board (:mod:`runtime.devices.pynq_emulation`): it
runs in the simulator process, on the Verilated ``AxiAccelerator`` (ports ``aclk``,
``aresetn``, ``m_axi_*``, ``s_axi_*``, ``irq``), as the board's programmable logic.

It resets the accelerator once, as loading a bitstream does, then serves the host's requests
over the connection named by ``+vtaforge_board=SOCKET`` until the host closes it: ``("read",
offset)`` and ``("write", offset, value)`` become AXI4-Lite transactions on ``s_axi`` (an
``AxiLiteMaster``: the PS's general-purpose port), ``("wait_irq", cycles)`` runs the clock until
``irq`` is high or ``cycles`` have passed and answers its level. Each answer is ``(True,
value)`` or ``(False, message)``. The accelerator's ``m_axi`` is served by a cocotbext-axi
``AxiRam`` whose memory is the board's DRAM: the file ``+vtaforge_dram=PATH`` (the host writes
it when a buffer is flushed and reads it when one is invalidated) at physical address
``+vtaforge_dram_base=ADDRESS``; an access elsewhere is answered with SLVERR and logged.

The clock runs while the accelerator may be busy (from a write of ``CONTROL`` with ``START``
until the host has seen it finish: ``irq`` high, or ``DONE`` read in ``STATUS``), so that a host
polling from its own thread sees it progress; otherwise it stands still while the testbench
waits for the next request, and an idle board costs no CPU.
"""

from __future__ import annotations

import logging
import mmap
from multiprocessing.connection import Client, Connection
from pathlib import Path

import cocotb
from cocotb.clock import Clock
from cocotb.triggers import ClockCycles, First, RisingEdge, Timer
from cocotbext.axi import AxiBus, AxiLiteBus, AxiLiteMaster, AxiRam
from cocotbext.axi.constants import AxiResp

from isa import Control, Register, Status

__all__ = ["serve_board"]

_PERIOD_NS = 10
_RESET_CYCLES = 4
#: Clock cycles between two looks at the connection while the accelerator runs.
_IDLE_CYCLES = 64
#: Clock cycles before a wait for the interrupt looks at the line: ``irq`` falls a cycle after
#: the write that launches a program, and a board's host waits far longer than this between
#: that write and its wait (a level still high from the previous program is not an interrupt).
_IRQ_SETTLE_CYCLES = 2


class _Dram:
    """The memory the AxiRam serves: the whole AXI address space (``space`` bytes), of which
    the board's DRAM, ``path`` mapped at ``base``, can be read and written."""

    def __init__(self, path: Path, base: int, space: int) -> None:
        with path.open("r+b") as handle:
            self.map = mmap.mmap(handle.fileno(), 0)
        self.base, self.space = base, space
        self.log = logging.getLogger("cocotb.vtaforge.dram")

    def __len__(self) -> int:
        return self.space

    def _offset(self, key: slice, what: str) -> slice:
        start, stop = key.start - self.base, key.stop - self.base
        if start < 0 or stop > len(self.map):
            message = (
                f"{what} of bytes {key.start:#x}..{key.stop - 1:#x}, outside the board's DRAM "
                f"[{self.base:#x}, {self.base + len(self.map):#x})"
            )
            self.log.warning(message)
            raise IndexError(message)  # the AxiRam answers SLVERR
        return slice(start, stop)

    def __getitem__(self, key: slice) -> bytes:
        return self.map[self._offset(key, "read")]

    def __setitem__(self, key: slice, value: bytes) -> None:
        self.map[self._offset(key, "write")] = value


class _Fabric:
    """The accelerator as the host's requests reach it (see the module docstring)."""

    def __init__(self, dut, connection: Connection, dram: _Dram) -> None:
        self.dut, self.connection = dut, connection
        self.registers = AxiLiteMaster(
            AxiLiteBus.from_prefix(dut, "s_axi"), dut.aclk, dut.aresetn, reset_active_level=False
        )
        self.ram = AxiRam(
            AxiBus.from_prefix(dut, "m_axi"),
            dut.aclk,
            dut.aresetn,
            reset_active_level=False,
            mem=dram,
        )
        self.running = False

    async def serve(self) -> None:
        """Answer requests until the host closes the connection."""
        while True:
            if self.running and not self.connection.poll():
                await ClockCycles(self.dut.aclk, _IDLE_CYCLES)
                continue
            try:
                kind, *arguments = self.connection.recv()
            except EOFError:
                return
            try:
                reply = (True, await self._answer(kind, *arguments))
            except Exception as err:  # the host raises it as a DeviceError
                reply = (False, f"{kind} {arguments}: {err}")
            self.connection.send(reply)

    async def _answer(self, kind: str, *arguments: int) -> int | bool | None:
        if kind == "read":
            (offset,) = arguments
            response = await self.registers.read(offset, 4)
            self._check(response.resp, f"reading {offset:#x}")
            value = int.from_bytes(response.data, "little")
            if offset == Register.STATUS and Status.DONE & value:
                self.running = False
            return value
        if kind == "write":
            offset, value = arguments
            response = await self.registers.write(offset, value.to_bytes(4, "little"))
            self._check(response.resp, f"writing {offset:#x}")
            if offset == Register.CONTROL and Control.START & value:
                self.running = True
            return None
        if kind == "wait_irq":
            (cycles,) = arguments
            await ClockCycles(self.dut.aclk, _IRQ_SETTLE_CYCLES)
            if not self.dut.irq.value:
                await First(RisingEdge(self.dut.irq), Timer(cycles * _PERIOD_NS, unit="ns"))
            raised = bool(self.dut.irq.value)
            self.running = self.running and not raised
            return raised
        raise ValueError(f"unknown request {kind!r}")

    @staticmethod
    def _check(response: AxiResp, what: str) -> None:
        if response != AxiResp.OKAY:
            raise RuntimeError(f"{what} answered {response.name}")


@cocotb.test()
async def serve_board(dut) -> None:
    """Reset the accelerator, then serve the host (see the module docstring)."""
    logging.getLogger("cocotb").setLevel(logging.WARNING)
    dram = _Dram(
        Path(cocotb.plusargs["vtaforge_dram"]),
        int(cocotb.plusargs["vtaforge_dram_base"]),
        1 << len(dut.m_axi_araddr),
    )
    Clock(dut.aclk, _PERIOD_NS, unit="ns").start()
    dut.aresetn.value = 0
    fabric = _Fabric(dut, Client(cocotb.plusargs["vtaforge_board"], family="AF_UNIX"), dram)
    await ClockCycles(dut.aclk, _RESET_CYCLES)
    dut.aresetn.value = 1
    with fabric.connection:
        await fabric.serve()
