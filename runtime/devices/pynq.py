"""The ``pynq`` device: programs run on the accelerator's bitstream on a PYNQ board.

``open_device("pynq", cfg, bitstream="overlay/NAME.bit")`` loads the overlay that ``vtaforge fpga
build`` exports (the ``.hwh`` beside the ``.bit``), finds the accelerator in it by its module,
and checks its identity registers (:meth:`runtime.devices.control.Controller.identify`). Each
run allocates two physically contiguous buffers (``pynq.allocate``): one for the program's DRAM
and one for its instruction stream; moves the program to the DRAM buffer's physical address
(:func:`runtime.devices.dma.relocate`); refuses it, before anything is launched, if any of its
transfers reaches outside the two buffers (:func:`runtime.devices.dma.check_dma`); copies DRAM
in, runs the control protocol (completion by ``interrupt`` or ``poll``, within ``timeout_s``
seconds), and copies DRAM back out.

Only the calls into ``pynq`` (``Overlay``, ``allocate``, ``MMIO``, ``Interrupt``) are specific to
the board; ``pynq`` is imported when a device is opened, and where it is missing opening one
raises DeviceError naming it.
"""

from __future__ import annotations

import asyncio
import importlib
import math
import time
from collections.abc import Coroutine
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from types import ModuleType
from typing import Any, TypeVar

import numpy as np

from isa import (
    INSN_BYTES,
    AccelConfig,
    Program,
    VtaforgeError,
    config_id,
)
from runtime.devices.base import (
    Device,
    DeviceError,
    DeviceKind,
    RunStats,
    check_run,
    prepare_launch,
)
from runtime.devices.control import Completion, Controller, RegisterBus
from runtime.devices.dma import Buffer, check_dma, relocate

__all__ = ["BD_MODULE", "PynqDevice", "place"]

#: The module the board design references for the accelerator (``fpga.signature.BD_MODULE``;
#: runtime does not import fpga): the overlay's IP whose type names it is the accelerator.
BD_MODULE = "vtaforge_bd"
_POLL_SECONDS = 1e-4
_T = TypeVar("_T")


def place(
    program: Program, dram_address: int, dram_bytes: int, insn_address: int
) -> tuple[Program, bytes]:
    """``program`` moved to a DRAM buffer of ``dram_bytes`` at physical ``dram_address``, and its
    instruction stream for the buffer at ``insn_address``, after the DMA guard has checked every
    transfer against those two buffers (DmaGuardError, a DeviceError, otherwise)."""
    placed = relocate(program, dram_address)
    buffers = [
        Buffer("DRAM", dram_address, dram_bytes),
        Buffer("instructions", insn_address, len(program.instructions) * INSN_BYTES),
    ]
    check_dma(placed, insn_address, buffers)
    try:
        return placed, placed.instruction_bytes()
    except VtaforgeError as err:
        raise DeviceError(
            f"the program moved to {dram_address:#x} cannot be encoded: {err}"
        ) from err


class _MmioBus(RegisterBus):
    """The control registers through ``pynq.MMIO``, the interrupt through ``pynq.Interrupt``."""

    def __init__(self, mmio: Any, interrupt: Any, timeout_s: float) -> None:
        self.mmio, self.interrupt, self.timeout_s = mmio, interrupt, timeout_s
        self.time_limit = f"{timeout_s:g} s"
        self._deadline = math.inf

    async def read(self, register) -> int:
        return int(self.mmio.read(int(register)))

    async def write(self, register, value: int) -> None:
        self.mmio.write(int(register), int(value))

    def started(self) -> None:
        self._deadline = time.monotonic() + self.timeout_s

    async def wait_interrupt(self) -> bool:
        try:
            await asyncio.wait_for(self.interrupt.wait(), self._deadline - time.monotonic())
        except TimeoutError:
            return False
        return True

    async def pause(self) -> bool:
        await asyncio.sleep(_POLL_SECONDS)
        return time.monotonic() < self._deadline


class PynqDevice(Device):
    """The bitstream ``bitstream`` (a ``.bit`` with its ``.hwh`` beside it) for ``cfg`` on
    this PYNQ board; ``completion`` is ``"interrupt"`` or ``"poll"``; a program that has not
    finished after ``timeout_s`` seconds fails."""

    kind = DeviceKind.PYNQ

    def __init__(
        self,
        cfg: AccelConfig,
        *,
        bitstream: str | Path,
        completion: Completion | str = Completion.INTERRUPT,
        timeout_s: float = 10.0,
    ) -> None:
        if not isinstance(bitstream, str | Path) or Path(bitstream).suffix != ".bit":
            raise DeviceError(f"bitstream must be the path of a .bit file, not {bitstream!r}")
        if completion not in set(Completion):
            choices = ", ".join(c.value for c in Completion)
            raise DeviceError(f"completion {completion!r} must be one of {choices}")
        real = isinstance(timeout_s, int | float) and not isinstance(timeout_s, bool)
        if not (real and 0 < timeout_s < math.inf):
            raise DeviceError(f"timeout_s {timeout_s!r} must be a positive number of seconds")
        super().__init__(cfg)
        pynq = _import_pynq()
        bitstream = Path(bitstream)
        for path in (bitstream, bitstream.with_suffix(".hwh")):
            if not path.is_file():
                raise DeviceError(f"{path} does not exist: `vtaforge fpga build` exports both")
        self.completion = Completion(completion)
        self._allocate = pynq.allocate
        overlay = pynq.Overlay(str(bitstream))
        name, ip = _accelerator(overlay.ip_dict, bitstream)
        interrupt = None
        if self.completion is Completion.INTERRUPT:
            pins = [
                pin for pin in getattr(overlay, "interrupt_pins", {}) if pin.startswith(f"{name}/")
            ]
            if not pins:
                raise DeviceError(f"{bitstream}: {name} has no interrupt: use completion='poll'")
            interrupt = pynq.Interrupt(pins[0])
        mmio = pynq.MMIO(ip["phys_addr"], ip["addr_range"])
        self._controller = Controller(
            _MmioBus(mmio, interrupt, float(timeout_s)), config_id(cfg), self.completion
        )
        _complete(self._controller.identify())

    def run(self, program: Program, dram: np.ndarray) -> RunStats:
        """Run ``program`` against ``dram`` (changed in place) on the board."""
        check_run(program, dram)
        prepare_launch(program, self.cfg, dram)
        count = len(program.instructions)
        data = self._allocate(shape=(max(len(dram), 1),), dtype=np.uint8)
        insns = self._allocate(shape=(count * INSN_BYTES,), dtype=np.uint8)
        try:
            _, stream = place(program, data.physical_address, len(dram), insns.physical_address)
            data[: len(dram)] = dram
            insns[:] = np.frombuffer(stream, dtype=np.uint8)
            data.flush()
            insns.flush()
            started = time.perf_counter()
            finished = _complete(self._controller.run(insns.physical_address, count))
            seconds = time.perf_counter() - started
            data.invalidate()
            dram[:] = data[: len(dram)]
        finally:
            data.freebuffer()
            insns.freebuffer()
        return RunStats(
            self.kind,
            seconds,
            cycles=finished.cycles,
            read_beats=finished.read_beats,
            write_beats=finished.write_beats,
        )


def _complete(coroutine: Coroutine[Any, Any, _T]) -> _T:
    """Run ``coroutine`` to its end, also where this thread already runs an event loop (a
    Jupyter notebook on the board): then on a thread of its own."""
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return asyncio.run(coroutine)
    with ThreadPoolExecutor(max_workers=1) as pool:
        return pool.submit(asyncio.run, coroutine).result()


def _import_pynq() -> ModuleType:
    try:
        return importlib.import_module("pynq")
    except ImportError as err:
        raise DeviceError(
            "the pynq device needs the `pynq` package, which runs on a PYNQ board (install it "
            f"there: pip install pynq); it cannot be imported here ({err})"
        ) from None


def _accelerator(ip_dict: dict[str, dict[str, Any]], bitstream: Path) -> tuple[str, dict]:
    """The overlay's accelerator: the one IP whose type is the module :data:`BD_MODULE`."""
    found = [(n, ip) for n, ip in ip_dict.items() if f":{BD_MODULE}:" in str(ip.get("type"))]
    if len(found) != 1:
        raise DeviceError(
            f"{bitstream}: expected one {BD_MODULE} accelerator in the overlay, found "
            f"{len(found)} among {', '.join(ip_dict) or 'no IP'}"
        )
    return found[0]
