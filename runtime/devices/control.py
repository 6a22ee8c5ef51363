"""The accelerator's control protocol, written once for every host that drives the AXI4-Lite
registers of :mod:`isa.registers`: the RTL device's cocotb testbench
(:mod:`runtime.devices.rtl_bench`) and the PYNQ board driver (:mod:`runtime.devices.pynq`).

A host supplies a :class:`RegisterBus` (32-bit register reads and writes, a wait for the
interrupt, a pause between polls, each bounded by the host's own time limit); a
:class:`Controller` runs the protocol on it:

1. :meth:`Controller.identify`: ``MAGIC`` and ``VERSION`` name a vtaforge accelerator with this
   register map, ``CONFIG_ID`` the configuration it was built for;
2. :meth:`Controller.run`: write ``INSN_COUNT``, ``INSN_ADDR_LO``, ``INSN_ADDR_HI``, read the
   address back (bits beyond the accelerator's address width read 0: an address it cannot reach
   is refused), write ``CONTROL = START`` (with ``IRQ_ENABLE`` when completion is by
   interrupt), wait for the interrupt or poll ``STATUS`` until ``DONE``, then read ``ERROR``,
   ``STATUS`` and the counters ``CYCLES``, ``READ_BEATS``, ``WRITE_BEATS``.

Every failure is a :class:`ControlError` carrying a snapshot of the readable registers.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from dataclasses import dataclass

from isa import (
    INSN_BYTES,
    MAGIC,
    REGISTER_BITS,
    REGISTER_MAP_VERSION,
    Control,
    ErrorFlag,
    Register,
    Status,
)
from isa.compat import StrEnum
from runtime.devices.base import DeviceError

__all__ = ["Completion", "ControlError", "Controller", "Finished", "RegisterBus"]

_WORD = (1 << REGISTER_BITS) - 1


class Completion(StrEnum):
    """How the host learns that the program finished."""

    INTERRUPT = "interrupt"  # IRQ_ENABLE set; wait for the irq line
    POLL = "poll"  # read STATUS until DONE


class ControlError(DeviceError):
    """The accelerator is not the one expected, cannot be given the program, did not finish in
    time, or reported an error; ``registers`` holds every readable register by name (empty when
    nothing was launched)."""

    def __init__(self, message: str, registers: dict[str, int] | None = None) -> None:
        self.registers = dict(registers or {})
        super().__init__(message)


@dataclass(frozen=True)
class Finished:
    """What the hardware counted for one program."""

    cycles: int
    read_beats: int
    write_beats: int


class RegisterBus(ABC):
    """A host's access to the control registers. Waits are bounded by the host's time limit
    (:attr:`time_limit` describes it), which runs from :meth:`started`."""

    #: The time limit, as messages name it ("5000 cycles", "10 s").
    time_limit: str

    @abstractmethod
    async def read(self, register: Register) -> int:
        """The 32-bit value of ``register``."""

    @abstractmethod
    async def write(self, register: Register, value: int) -> None:
        """Write a 32-bit ``value`` to ``register``."""

    def started(self) -> None:  # noqa: B027 (a hook: most buses need nothing here)
        """The program was launched: the time limit starts now."""

    @abstractmethod
    async def wait_interrupt(self) -> bool:
        """Wait for the interrupt; False if the time limit passed first."""

    @abstractmethod
    async def pause(self) -> bool:
        """Wait between two polls; False once the time limit has passed."""


@dataclass
class Controller:
    """The control protocol on ``bus`` for an accelerator whose ``CONFIG_ID`` must be
    ``expected_id`` (:func:`isa.config_id` of the host's configuration)."""

    bus: RegisterBus
    expected_id: int
    completion: Completion = Completion.INTERRUPT

    def __post_init__(self) -> None:
        self.completion = Completion(self.completion)

    async def identify(self) -> None:
        """Refuse hardware that is not a vtaforge accelerator of this register map and
        configuration."""
        magic = await self.bus.read(Register.MAGIC)
        version = await self.bus.read(Register.VERSION)
        if magic != MAGIC or version != REGISTER_MAP_VERSION:
            raise ControlError(f"not a vtaforge accelerator (MAGIC {magic:#x}, VERSION {version})")
        found = await self.bus.read(Register.CONFIG_ID)
        if found != self.expected_id:
            raise ControlError(
                f"the hardware was built for configuration id {found:#010x}, not "
                f"{self.expected_id:#010x}"
            )

    async def run(self, insn_addr: int, insn_count: int) -> Finished:
        """Launch the ``insn_count`` instructions at byte address ``insn_addr`` and wait for
        them; the hardware's counters, or ControlError."""
        if not 0 < insn_count <= _WORD:
            raise ControlError(f"instruction count {insn_count} must be in [1, {_WORD}]")
        if insn_addr < 0 or insn_addr % INSN_BYTES or insn_addr >> 2 * REGISTER_BITS:
            raise ControlError(
                f"instruction address {insn_addr:#x} must be a {INSN_BYTES}-byte aligned "
                f"{2 * REGISTER_BITS}-bit address"
            )
        await self.bus.write(Register.INSN_COUNT, insn_count)
        await self.bus.write(Register.INSN_ADDR_LO, insn_addr & _WORD)
        await self.bus.write(Register.INSN_ADDR_HI, insn_addr >> REGISTER_BITS)
        low = await self.bus.read(Register.INSN_ADDR_LO)
        high = await self.bus.read(Register.INSN_ADDR_HI)
        if (high << REGISTER_BITS | low) != insn_addr:
            raise ControlError(
                f"instruction address {insn_addr:#x} is beyond the accelerator's address space "
                f"(it reads back as {high << REGISTER_BITS | low:#x})"
            )
        interrupt = self.completion is Completion.INTERRUPT
        start = Control.START | Control.IRQ_ENABLE if interrupt else Control.START
        await self.bus.write(Register.CONTROL, start)
        self.bus.started()
        if not await (self.bus.wait_interrupt() if interrupt else self._polled()):
            raise ControlError(
                f"did not finish within {self.bus.time_limit}", await self.snapshot()
            )
        errors = ErrorFlag(await self.bus.read(Register.ERROR))
        status = Status(await self.bus.read(Register.STATUS))
        if errors or Status.DONE not in status:
            problems = ", ".join(flag.name for flag in ErrorFlag if flag in errors)
            raise ControlError(
                f"the accelerator reported {problems or f'STATUS {status!r}'}",
                await self.snapshot(),
            )
        return Finished(
            cycles=await self.bus.read(Register.CYCLES),
            read_beats=await self.bus.read(Register.READ_BEATS),
            write_beats=await self.bus.read(Register.WRITE_BEATS),
        )

    async def snapshot(self) -> dict[str, int]:
        """Every readable register, by name (for an error report)."""
        return {register.name: await self.bus.read(register) for register in Register}

    async def _polled(self) -> bool:
        while Status.DONE not in Status(await self.bus.read(Register.STATUS)):
            if not await self.bus.pause():
                return False
        return True
