"""Whole-accelerator simulation in Amaranth's simulator, with a Python memory model.

:func:`simulate` runs an :class:`isa.Program` on ``Accelerator(cfg)`` the way the other
simulators run it: it writes the program's micro-op table and segments into ``dram`` (a 1-D
``numpy.uint8`` array indexed by byte address), runs the program to FINISH, and leaves the
STOREs' results in ``dram``. The instruction stream is served from a read-only region just above
``dram`` (the next 4 KiB page), so ``dram`` changes only where the program stores.

:class:`MemoryTiming` shapes the memory model: read latency, and how often each channel is ready
(random back-pressure, seeded). The default is an ideal memory: always ready, one cycle.
"""

from __future__ import annotations

import random
import time
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
from amaranth.sim import Simulator

from hw.top import Accelerator
from isa import AccelConfig, FinishInsn, Program, VtaforgeError, check_config

__all__ = ["HwSimulationError", "MemoryModel", "MemoryTiming", "SimResult", "simulate"]

_PAGE = 4096


class HwSimulationError(VtaforgeError):
    """The RTL simulation cannot run a program or did not finish it (``status`` says where it
    stood: module activity and token counts)."""

    def __init__(self, message: str, status: dict[str, int] | None = None) -> None:
        self.status = status or {}
        if status:
            message += " (" + ", ".join(f"{k}={v}" for k, v in status.items()) + ")"
        super().__init__(message)


@dataclass(frozen=True)
class MemoryTiming:
    """Memory-model behaviour: each read burst's first beat comes ``read_latency`` cycles (a
    uniform draw from the inclusive range) after its request; every cycle each channel is
    ready, or has its next beat, with probability ``ready_probability``."""

    read_latency: tuple[int, int] = (1, 1)
    ready_probability: float = 1.0
    seed: int = 0

    def __post_init__(self) -> None:
        low, high = self.read_latency
        if not 0 <= low <= high:
            raise HwSimulationError(f"read_latency {self.read_latency} must be 0 <= low <= high")
        if not 0.0 < self.ready_probability <= 1.0:
            raise HwSimulationError(f"ready_probability {self.ready_probability} must be in (0, 1]")


@dataclass(frozen=True)
class SimResult:
    """``cycles``: the accelerator's cycle counter (launch to FINISH); ``read_beats`` and
    ``write_beats``: memory-port data beats; ``wall_seconds``: host time of the simulation."""

    cycles: int
    read_beats: int
    write_beats: int
    wall_seconds: float

    @property
    def cycles_per_second(self) -> float:
        """Simulated clock cycles per host second."""
        return self.cycles / self.wall_seconds if self.wall_seconds else 0.0


def simulate(
    cfg: AccelConfig,
    program: Program,
    dram: np.ndarray,
    *,
    max_cycles: int = 100_000,
    timing: MemoryTiming | None = None,
) -> SimResult:
    """Run ``program`` on the RTL of ``cfg``; ``dram`` is updated in place (see the module doc).

    Raises ConfigMismatchError if the program was built for another configuration, ProgramError
    if it does not fit ``dram``, and HwSimulationError if it has no FINISH, accesses memory
    outside ``dram``, overflows a token counter or does not finish within ``max_cycles``.
    """
    check_config(program.config, cfg)
    if not isinstance(dram, np.ndarray) or dram.dtype != np.uint8 or dram.ndim != 1:
        raise HwSimulationError("dram must be a 1-D numpy array of uint8")
    if not program.instructions or not isinstance(program.instructions[-1], FinishInsn):
        raise HwSimulationError("the program must end with FINISH, or it never raises done")
    program.write_to(dram)
    model = MemoryModel(cfg, dram, program.instruction_bytes(), timing or MemoryTiming())
    dut = Accelerator(cfg)
    outcome: dict[str, int] = {}

    async def testbench(ctx) -> None:
        control = dut.control
        ctx.set(control.insn_addr, model.insn_addr)
        ctx.set(control.insn_count, len(program.instructions))
        ctx.set(control.start, 1)
        await ctx.tick()
        ctx.set(control.start, 0)
        await model.serve(
            ctx,
            dut.mem,
            dut.mem,
            finished=control.done,
            max_cycles=max_cycles,
            status=lambda: _status(ctx, dut),
        )
        if ctx.get(control.error):
            raise HwSimulationError("a dependency-token counter overflowed", _status(ctx, dut))
        outcome["cycles"] = ctx.get(control.cycles)

    sim = Simulator(dut)
    sim.add_clock(1e-8)
    sim.add_testbench(testbench)
    started = time.perf_counter()
    sim.run()
    return SimResult(
        cycles=outcome["cycles"],
        read_beats=model.read_beats,
        write_beats=model.write_beats,
        wall_seconds=time.perf_counter() - started,
    )


class MemoryModel:
    """A DRAM model for the memory port (:mod:`hw.memport`), served from an async testbench.

    It holds ``dram`` and, read-only at :attr:`insn_addr` (the first 4 KiB page above
    ``dram``), the instruction stream ``insns``. It checks the AXI rules the port promises
    (bursts of at most 256 beats, not crossing 4 KiB, ``last`` on each burst's final write beat)
    and raises HwSimulationError for a read beat that starts outside both regions or a write
    strobe outside ``dram``.
    """

    def __init__(
        self,
        cfg: AccelConfig,
        dram: np.ndarray,
        insns: bytes = b"",
        timing: MemoryTiming | None = None,
    ):
        self.cfg = cfg
        self.dram = dram
        self.insn_addr = -(-len(dram) // _PAGE) * _PAGE
        self.insns = np.frombuffer(insns, dtype=np.uint8)
        self.timing = timing or MemoryTiming()
        self.rng = random.Random(self.timing.seed)
        self.read_beats = 0
        self.write_beats = 0
        self.bursts: list[tuple[str, int, int]] = []  # (channel, byte address, beats)

    # ------------------------------------------------------------------ byte access
    def _read(self, address: int, count: int) -> bytes:
        """One beat. A beat may run past the end of DRAM or of the instruction stream when the
        data it carries ends mid-beat; those bytes read as zero."""
        if 0 <= address < len(self.dram):
            return self.dram[address : address + count].tobytes().ljust(count, b"\0")
        offset = address - self.insn_addr
        if 0 <= offset < len(self.insns):
            return self.insns[offset : offset + count].tobytes().ljust(count, b"\0")
        raise HwSimulationError(
            f"read of {count} bytes at {address:#x} is outside DRAM ({len(self.dram)} bytes) "
            f"and the instruction stream"
        )

    def _write(self, address: int, data: int, strobes: int) -> None:
        for lane in range(self.cfg.bus_bytes):
            if strobes >> lane & 1:
                where = address + lane
                if not 0 <= where < len(self.dram):
                    raise HwSimulationError(
                        f"write to byte {where:#x} is outside DRAM ({len(self.dram)} bytes)"
                    )
                self.dram[where] = data >> (8 * lane) & 0xFF

    def _ready(self) -> bool:
        p = self.timing.ready_probability
        return p >= 1.0 or self.rng.random() < p

    def _burst(self, channel: str, payload: int, addr_bits: int) -> list[int]:
        address = payload & ((1 << addr_bits) - 1)
        beats = (payload >> addr_bits) + 1
        end = address + beats * self.cfg.bus_bytes
        if address % self.cfg.bus_bytes or (end - 1) // _PAGE != address // _PAGE:
            raise HwSimulationError(
                f"{channel} burst of {beats} beats at {address:#x} is unaligned or crosses a "
                f"4 KiB boundary"
            )
        self.bursts.append((channel, address, beats))
        return [address, beats]

    # ------------------------------------------------------------------ the port, cycle by cycle
    async def serve(
        self,
        ctx,
        read,
        write=None,
        *,
        finished,
        max_cycles: int,
        status: Callable[[], dict[str, int]] | None = None,
    ) -> int:
        """Serve ``read`` (``ar``/``r``) and ``write`` (``aw``/``w``/``b``, optional) until
        ``finished`` is sampled high; return the cycles served."""
        cfg = self.cfg
        bus = cfg.bus_bytes
        addr_bits = len(read.ar.payload.addr)
        data_mask = (1 << cfg.axi_width) - 1
        reads: deque[list[int]] = deque()  # [first cycle, address, beats left]
        writes: deque[list[int]] = deque()  # [address, beats left]
        responses: deque[int] = deque()
        sampled = [read.ar.valid, read.ar.payload.as_value(), read.r.ready, finished]
        if write is not None:
            sampled += [
                write.aw.valid,
                write.aw.payload.as_value(),
                write.w.valid,
                write.w.payload.as_value(),
                write.b.ready,
            ]
        cycle = 0
        while True:
            cycle += 1
            if cycle > max_cycles:
                raise HwSimulationError(
                    f"did not finish within {max_cycles} cycles", status() if status else None
                )
            ar_ready = self._ready()
            r_valid = bool(reads) and reads[0][0] <= cycle and self._ready()
            if r_valid:
                beat = int.from_bytes(self._read(reads[0][1], bus), "little")
                last = int(reads[0][2] == 1)
                ctx.set(read.r.payload.as_value(), beat | last << cfg.axi_width)
            ctx.set(read.ar.ready, ar_ready)
            ctx.set(read.r.valid, r_valid)
            if write is not None:
                aw_ready = self._ready()
                w_ready = bool(writes) and self._ready()
                b_valid = bool(responses) and self._ready()
                ctx.set(write.aw.ready, aw_ready)
                ctx.set(write.w.ready, w_ready)
                ctx.set(write.b.valid, b_valid)
            _, _, ar_valid, ar, r_ready, done, *written = await ctx.tick().sample(*sampled)
            if done:
                return cycle
            if ar_valid and ar_ready:
                low, high = self.timing.read_latency
                reads.append(
                    [cycle + self.rng.randint(low, high), *self._burst("ar", ar, addr_bits)]
                )
            if r_valid and r_ready:
                self.read_beats += 1
                reads[0][1] += bus
                reads[0][2] -= 1
                if reads[0][2] == 0:
                    reads.popleft()
            if write is None:
                continue
            aw_valid, aw, w_valid, w, b_ready = written
            if aw_valid and aw_ready:
                writes.append(self._burst("aw", aw, addr_bits))
            if w_valid and w_ready:
                self.write_beats += 1
                head = writes[0]
                self._write(head[0], w & data_mask, w >> cfg.axi_width & ((1 << bus) - 1))
                last = w >> (cfg.axi_width + bus) & 1
                head[0] += bus
                head[1] -= 1
                if (head[1] == 0) != bool(last):
                    raise HwSimulationError(
                        f"write burst ending {head[0]:#x}: last={last} with {head[1]} beats left"
                    )
                if last:
                    writes.popleft()
                    responses.append(cycle)
            if b_valid and b_ready:
                responses.popleft()


def _status(ctx, dut: Accelerator) -> dict[str, int]:
    status = dut.status
    return {name: ctx.get(status[name]) for name in status.shape().members}
