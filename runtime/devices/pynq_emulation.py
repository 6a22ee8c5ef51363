"""The ``pynq`` device without a board: the board driver (:class:`runtime.devices.pynq.PynqDevice`,
unchanged) on an emulated PYNQ board whose programmable logic is the Verilated RTL of
``AxiAccelerator(cfg)``, the AXI top level the bitstream is built from.

:class:`EmulatedBoard` emulates the parts of the ``pynq`` package the driver calls, as a module
(:attr:`EmulatedBoard.module`) installed as ``pynq`` while the driver opens the device:

- ``Overlay(path)`` "downloads" an emulated bitstream (:func:`write_overlay`: a ``.bit`` naming
  the Verilator build and the Python that made it, beside the ``.hwh`` of the board design,
  :mod:`runtime.devices.pynq_emulation_hwh`): it starts the programmable logic, a process of
  that Python (:mod:`runtime.devices.pynq_emulation_logic`) where the testbench
  :mod:`runtime.devices.pynq_emulation_bench` resets the accelerator and serves the host, and
  exposes the ``ip_dict`` and ``interrupt_pins`` read from the ``.hwh``. The host side (this
  module and the driver) needs neither Verilator nor cocotb, so it runs on the board runtime's
  Python too (:mod:`fpga.package`);
- ``MMIO(phys_addr, length)`` reads and writes 32-bit words of the accelerator's AXI4-Lite
  registers, each an AXI4-Lite transaction on the simulated ``s_axi``;
- ``allocate(shape, dtype)`` hands out page-aligned buffers of the board's DRAM (a file the
  simulator maps, from physical address :data:`MEMORY_BASE`) with their ``physical_address``.
  As on the board's non-coherent HP port, the array the host writes is its cached copy: the
  accelerator sees it after ``flush()``, and the host sees what the accelerator wrote after
  ``invalidate()``; ``freebuffer()`` returns it;
- ``Interrupt(pin).wait()`` returns once the accelerator's ``irq`` line is high.

:class:`EmulatedPynqDevice` is the driver opened on such a board: the identity check, the
relocation into the allocated buffers, the DMA guard, the launch, completion by interrupt or by
polling, and the copies in and out are the driver's own code. Its memory is the ``rtl``
device's (a cocotbext-axi ``AxiRam``, always ready), so its cycle counts are the ``rtl``
device's and :data:`runtime.devices.rtl.AXI_RAM_TIMING` makes the ``sim`` device's equal them.
"""

from __future__ import annotations

import asyncio
import json
import os
import socket
import subprocess
import sys
import tempfile
import threading
import time
import weakref
from collections.abc import Iterator
from contextlib import contextmanager, suppress
from dataclasses import dataclass
from multiprocessing.connection import Connection
from pathlib import Path
from shutil import rmtree
from types import ModuleType
from typing import Any

import numpy as np

from isa import AXI_PAGE_BYTES, AccelConfig, TimingConfig
from runtime.devices.base import DeviceError, refuse
from runtime.devices.control import Completion
from runtime.devices.pynq import PynqDevice
from runtime.devices.pynq_emulation_hwh import ACCELERATOR_CELL, read_handoff, write_handoff
from runtime.devices.rtl import AXI_RAM_TIMING
from runtime.devices.rtl_build import build_model, default_cache_dir, log_tail
from simulator.arguments import config_problem

__all__ = [
    "DEFAULT_MEMORY_BYTES",
    "MEMORY_BASE",
    "EmulatedBoard",
    "EmulatedBuffer",
    "EmulatedPynqDevice",
    "write_overlay",
]

#: The physical address of the emulated board's DRAM that ``allocate`` hands out (within a
#: PYNQ-Z1/Z2's 512 MiB, where its contiguous-memory pool lies).
MEMORY_BASE = 0x1000_0000
DEFAULT_MEMORY_BYTES = 64 << 20
#: The module the programmable logic's process runs.
_LOGIC = "runtime.devices.pynq_emulation_logic"
#: What an emulated ``.bit`` file holds: this format name, the build folder, the Python that
#: runs its testbench and the configuration.
_BITSTREAM_FORMAT = "vtaforge emulated bitstream"
#: Simulated cycles per look at the interrupt line (between them the host's event loop runs).
_IRQ_CYCLES = 4096
#: How long the simulator process may take to start and connect (Verilator model, cocotb).
_START_SECONDS = 120.0
_NO_BITSTREAM = "no bitstream is loaded: create a pynq.Overlay first"


def write_overlay(hardware: AccelConfig, folder: Path, cache_dir: Path | None = None) -> Path:
    """Build (or find in ``cache_dir``, :func:`~runtime.devices.rtl_build.default_cache_dir`
    when None) the Verilator model of ``hardware``'s AXI top level and write its emulated
    overlay into ``folder``: ``vtaforge_FINGERPRINT.bit`` (naming the build and this Python,
    which runs its testbench) and the ``.hwh`` beside it. Returns the ``.bit``'s path."""
    build_dir = build_model(hardware, cache_dir if cache_dir is not None else default_cache_dir())
    bitstream = folder / f"vtaforge_{hardware.fingerprint}.bit"
    description = {
        "format": _BITSTREAM_FORMAT,
        "model": str(build_dir),
        "launcher": sys.executable,
        "config": hardware.fingerprint,
    }
    bitstream.write_text(json.dumps(description) + "\n")
    bitstream.with_suffix(".hwh").write_text(write_handoff(bitstream.stem))
    return bitstream


class EmulatedBuffer(np.ndarray):
    """A ``pynq.allocate`` buffer: the host's cached copy of ``nbytes`` of the board's DRAM at
    ``physical_address`` (see the module docstring)."""

    physical_address: int
    _memory: _Dram

    def flush(self) -> None:
        """Write the host's copy to DRAM, where the accelerator reads it."""
        self._dram().write(self.physical_address, self._bytes())

    def invalidate(self) -> None:
        """Read DRAM into the host's copy, after the accelerator wrote it."""
        self._dram().read_into(self.physical_address, self._bytes())

    def freebuffer(self) -> None:
        """Give the DRAM back to the allocator."""
        self._dram().free(self.physical_address)

    def _dram(self) -> _Dram:
        memory = getattr(self, "_memory", None)
        if memory is None:  # a slice or other view of a buffer
            raise DeviceError(
                "flush, invalidate and freebuffer apply to a whole buffer, not a view"
            )
        return memory

    def _bytes(self) -> memoryview:
        return memoryview(self.view(np.ndarray)).cast("B")


class _Dram:
    """The board's DRAM: ``size`` bytes of the file ``path`` at physical address ``base``, and
    the allocator of its pages (first fit)."""

    def __init__(self, path: Path, base: int, size: int) -> None:
        self.path, self.base, self.size = path, base, size
        self._fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_TRUNC, 0o600)
        os.ftruncate(self._fd, size)
        self._used: dict[int, int] = {}  # physical address -> bytes, of each live buffer

    def allocate(self, shape: Any, dtype: Any = np.uint32) -> EmulatedBuffer:
        """A zeroed buffer of ``shape`` and ``dtype`` at the lowest free page-aligned address;
        DeviceError when no free range is large enough."""
        buffer = np.zeros(shape, dtype).view(EmulatedBuffer)
        pages = -(-max(buffer.nbytes, 1) // AXI_PAGE_BYTES) * AXI_PAGE_BYTES
        address = self.base
        for start in sorted(self._used):
            if start - address >= pages:
                break
            address = max(address, start + self._used[start])
        if address + pages > self.base + self.size:
            raise DeviceError(
                f"cannot allocate {buffer.nbytes} bytes: the emulated board's {self.size >> 20} "
                f"MiB of DRAM hold {len(self._used)} buffers ({sum(self._used.values())} bytes)"
            )
        self._used[address] = pages
        buffer.physical_address, buffer._memory = address, self
        return buffer

    def free(self, address: int) -> None:
        if self._used.pop(address, None) is None:
            raise DeviceError(f"no buffer is allocated at {address:#x} (freed twice?)")

    @property
    def buffers(self) -> int:
        """How many buffers are allocated and not freed."""
        return len(self._used)

    def write(self, address: int, data: memoryview) -> None:
        os.pwrite(self._fd, data, self._offset(address, len(data)))

    def read_into(self, address: int, data: memoryview) -> None:
        os.preadv(self._fd, [data], self._offset(address, len(data)))

    def _offset(self, address: int, size: int) -> int:
        used = self._used.get(address)
        if used is None or size > used:
            raise DeviceError(f"{size} bytes at {address:#x} are not an allocated buffer")
        return address - self.base

    def close(self) -> None:
        os.close(self._fd)


@dataclass
class _Overlay:
    """What ``pynq.Overlay`` gives the driver: the design's IP and interrupt pins."""

    bitfile_name: str
    ip_dict: dict[str, dict[str, Any]]
    interrupt_pins: dict[str, dict[str, Any]]


class _Mmio:
    """``pynq.MMIO``: 32-bit words of the accelerator's register block, the window
    ``[phys_addr, phys_addr + length)`` of the overlay's memory map."""

    def __init__(self, board: EmulatedBoard, phys_addr: int, length: int) -> None:
        if board.registers is None:
            raise DeviceError(_NO_BITSTREAM)
        base, size = board.registers
        if not (base <= phys_addr and phys_addr + length <= base + size):
            raise DeviceError(
                f"MMIO [{phys_addr:#x}, {phys_addr + length:#x}) is not the accelerator's "
                f"registers [{base:#x}, {base + size:#x})"
            )
        self.board, self.offset, self.length = board, phys_addr - base, length

    def read(self, offset: int = 0, length: int = 4) -> int:
        """The word at byte ``offset``."""
        return self.board.request("read", self._address(offset, length))

    def write(self, offset: int, value: int) -> None:
        """Write the word ``value`` at byte ``offset``."""
        self.board.request("write", self._address(offset, 4), int(value) & 0xFFFF_FFFF)

    def _address(self, offset: int, length: int) -> int:
        if length != 4 or offset % 4 or not 0 <= offset < self.length:
            raise DeviceError(
                f"MMIO access of {length} bytes at offset {offset:#x}: the registers take "
                f"aligned 32-bit words below {self.length:#x}"
            )
        return self.offset + offset


class _Interrupt:
    """``pynq.Interrupt``: one of the overlay's interrupt pins."""

    def __init__(self, board: EmulatedBoard, pin: str) -> None:
        if pin not in board.overlay.interrupt_pins:
            known = ", ".join(board.overlay.interrupt_pins) or "none"
            raise DeviceError(f"the overlay has no interrupt pin {pin!r} (it has {known})")
        self.board = board

    async def wait(self) -> None:
        """Return once the interrupt line is high (the simulated clock runs meanwhile; this
        coroutine yields between looks, so a caller's timeout can cancel it)."""
        while not self.board.request("wait_irq", _IRQ_CYCLES):
            await asyncio.sleep(0)


class _Simulator:
    """The simulator process of one downloaded bitstream (its testbench run by ``launcher``,
    a Python with Verilator and cocotb), and the connection to its testbench. Requests are
    answered one at a time, in order."""

    def __init__(self, build_dir: Path, launcher: str, folder: Path, dram: _Dram) -> None:
        self.folder = folder
        address = str(folder / "board.socket")
        plusargs = [
            f"+vtaforge_board={address}",
            f"+vtaforge_dram={dram.path}",
            f"+vtaforge_dram_base={dram.base}",
        ]
        self._failure: DeviceError | None = None
        self._lock = threading.Lock()
        with suppress(FileNotFoundError):  # a previous bitstream's simulator used it
            os.unlink(address)
        with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as server:
            server.bind(address)
            server.listen(1)
            server.settimeout(0.2)
            self._thread = threading.Thread(
                target=self._simulate, args=(launcher, build_dir, plusargs), daemon=True
            )
            self._thread.start()
            self.connection = Connection(self._accept(server).detach())

    def _simulate(self, launcher: str, build_dir: Path, plusargs: list[str]) -> None:
        command = [launcher, "-m", _LOGIC, str(build_dir), str(self.folder), *plusargs]
        try:
            done = subprocess.run(
                command, cwd=self.folder, capture_output=True, text=True, check=False
            )
        except OSError as err:
            self._failure = DeviceError(f"cannot start the programmable logic ({err})")
            return
        if done.returncode:
            said = done.stderr.strip() or f"exit status {done.returncode}"
            self._failure = DeviceError(f"the programmable logic stopped: {said}")

    def _accept(self, server: socket.socket) -> socket.socket:
        deadline = time.monotonic() + _START_SECONDS
        while time.monotonic() < deadline:
            with suppress(TimeoutError):
                connection = server.accept()[0]
                connection.setblocking(True)  # Connection reads and writes its descriptor
                return connection
            if not self._thread.is_alive():
                raise self._failure or DeviceError(
                    f"the simulator exited before it connected:\n{log_tail(self.folder)}"
                )
        raise DeviceError(
            f"the simulator did not connect within {_START_SECONDS:g} s:\n{log_tail(self.folder)}"
        )

    def request(self, *message: Any) -> Any:
        """The testbench's answer to ``message``; DeviceError if it failed or the simulator
        stopped."""
        with self._lock:
            try:
                self.connection.send(message)
                ok, answer = self.connection.recv()
            except (EOFError, OSError):
                self._thread.join(timeout=10)
                raise self._failure or DeviceError(
                    f"the simulator stopped:\n{log_tail(self.folder)}"
                ) from None
        if not ok:
            raise DeviceError(f"the emulated board refused {answer}")
        return answer

    def close(self) -> None:
        """Close the connection: the testbench returns and the simulator exits."""
        self.connection.close()
        self._thread.join(timeout=30)


class EmulatedBoard:
    """A PYNQ board in this process (see the module docstring), with ``memory_bytes`` of DRAM
    from :data:`MEMORY_BASE`; its files live in :attr:`folder` until :meth:`close`."""

    def __init__(self, memory_bytes: int = DEFAULT_MEMORY_BYTES) -> None:
        if not (isinstance(memory_bytes, int) and AXI_PAGE_BYTES <= memory_bytes <= 1 << 30):
            raise DeviceError(f"memory_bytes {memory_bytes!r} must be 4 KiB to 1 GiB")
        self.folder = Path(tempfile.mkdtemp(prefix="vtaforge-pynq-"))
        self.dram = _Dram(self.folder / "dram", MEMORY_BASE, memory_bytes)
        self._simulator: _Simulator | None = None
        self.overlay = _Overlay("", {}, {})
        #: The loaded design's register window of the accelerator: base, bytes.
        self.registers: tuple[int, int] | None = None
        self.module = ModuleType("pynq", "The emulated pynq package of a vtaforge EmulatedBoard.")
        self.module.Overlay = self._download
        self.module.MMIO = lambda phys_addr, length=4: _Mmio(self, phys_addr, length)
        self.module.allocate = self.dram.allocate
        self.module.Interrupt = lambda pin: _Interrupt(self, pin)
        self._finalizer = weakref.finalize(self, _shut, None, self.dram, self.folder)

    def _download(self, bitfile_name: str) -> _Overlay:
        """``pynq.Overlay``: load the emulated bitstream ``bitfile_name`` (the simulator of the
        build it names starts, the accelerator is reset) and read its ``.hwh``."""
        bitstream = Path(bitfile_name)
        try:
            description = json.loads(bitstream.read_text())
            if description.get("format") != _BITSTREAM_FORMAT:
                raise ValueError(f"format {description.get('format')!r}")
            build_dir, launcher = Path(description["model"]), description["launcher"]
            if not isinstance(launcher, str):
                raise ValueError(f"launcher {launcher!r} is not a path")
        except (OSError, ValueError, KeyError, TypeError) as err:
            raise DeviceError(f"{bitstream} is not an emulated bitstream ({err})") from None
        hwh = bitstream.with_suffix(".hwh")
        handoff = read_handoff(hwh.read_text(), str(hwh))
        ip = handoff.ip_dict.get(ACCELERATOR_CELL)
        if ip is None:
            raise DeviceError(f"{hwh} maps no {ACCELERATOR_CELL} registers")
        if self._simulator is not None:  # a new bitstream replaces the old one
            self._simulator.close()
            self._simulator = None
        self._simulator = _Simulator(build_dir, launcher, self.folder, self.dram)
        self._finalizer.detach()
        self._finalizer = weakref.finalize(self, _shut, self._simulator, self.dram, self.folder)
        self.registers = (ip["phys_addr"], ip["addr_range"])
        self.overlay = _Overlay(str(bitstream), handoff.ip_dict, handoff.interrupt_pins)
        return self.overlay

    def request(self, *message: Any) -> Any:
        """The programmable logic's answer to ``message`` (the testbench's protocol)."""
        if self._simulator is None:
            raise DeviceError(_NO_BITSTREAM)
        return self._simulator.request(*message)

    @contextmanager
    def installed(self) -> Iterator[ModuleType]:
        """Within the block, ``import pynq`` gives :attr:`module` (what was there before is put
        back after)."""
        previous = sys.modules.get("pynq")
        sys.modules["pynq"] = self.module
        try:
            yield self.module
        finally:
            if previous is None:
                sys.modules.pop("pynq", None)
            else:
                sys.modules["pynq"] = previous

    def close(self) -> None:
        """Stop the simulator and delete the board's files (idempotent)."""
        self._finalizer()
        self._simulator = None


def _shut(simulator: _Simulator | None, dram: _Dram, folder: Path) -> None:
    if simulator is not None:
        simulator.close()
    dram.close()
    rmtree(folder, ignore_errors=True)


class EmulatedPynqDevice(PynqDevice):
    """The ``pynq`` driver for ``cfg`` on an :class:`EmulatedBoard` whose bitstream is built
    from ``hardware`` (``cfg`` when None; another configuration's hardware fails the driver's
    identity check), or is the emulated ``bitstream`` given (from :func:`write_overlay`: then
    nothing is built here, and neither Verilator nor cocotb is needed in this process).
    ``completion`` and ``timeout_s`` (host seconds: the simulation runs at tens of thousands of
    cycles a second) are the driver's; ``cache_dir`` holds the Verilator builds (as the ``rtl``
    device's); ``memory_bytes`` is the board's DRAM. :meth:`close` (or leaving a ``with``
    block) stops the simulator."""

    def __init__(
        self,
        cfg: AccelConfig,
        *,
        completion: Completion | str = Completion.INTERRUPT,
        timeout_s: float = 600.0,
        hardware: AccelConfig | None = None,
        bitstream: Path | None = None,
        cache_dir: Path | None = None,
        memory_bytes: int = DEFAULT_MEMORY_BYTES,
    ) -> None:
        hardware = cfg if hardware is None else hardware
        if not isinstance(hardware, AccelConfig):
            raise DeviceError(f"hardware must be an isa.AccelConfig, not {type(hardware).__name__}")
        if bitstream is not None and hardware is not cfg:
            raise DeviceError("give the hardware or an emulated bitstream, not both")
        refuse(config_problem(hardware))
        self.board = EmulatedBoard(memory_bytes)
        try:
            if bitstream is None:
                bitstream = write_overlay(hardware, self.board.folder, cache_dir)
            with self.board.installed():
                super().__init__(
                    cfg, bitstream=bitstream, completion=completion, timeout_s=timeout_s
                )
        except BaseException:
            self.board.close()
            raise

    @property
    def memory_timing(self) -> TimingConfig:
        """The timing under which the ``sim`` device reproduces this device's cycle counts."""
        return AXI_RAM_TIMING

    def close(self) -> None:
        """Stop the simulator (the device cannot run afterwards)."""
        self.board.close()

    def __enter__(self) -> EmulatedPynqDevice:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()
