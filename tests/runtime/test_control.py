"""The control protocol (``runtime.devices.control``) that the board driver and the RTL testbench
share, driven against the real AXI4-Lite register block (``hw.axilite.ControlSlave``) in
Amaranth's simulator, with the test playing the accelerator behind it: completion by interrupt
and by polling (twice on the same hardware: a poll must not see the previous run's DONE),
the registers it programs, and each way it refuses or fails."""

from __future__ import annotations

import random

import pytest
from amaranth.sim import Simulator

from hw.axilite import ControlSlave
from hw.layouts import byte_addr_bits
from isa import AccelConfig, Register, Status, config_id
from runtime.devices.control import Completion, ControlError, Controller, RegisterBus
from tests.hw.axi_util import read_register, write_register

TINY = AccelConfig.preset("tiny")
EXPECTED_ID = config_id(TINY)
_LIMIT = 300  # cycles a run may take before the bus gives up
_POLL = 5


class _SimBus(RegisterBus):
    """A RegisterBus on the slave's AXI4-Lite port, with random handshake delays."""

    def __init__(self, ctx, dut, seed: int) -> None:
        self.ctx, self.dut, self.rng = ctx, dut, random.Random(seed)
        self.time_limit = f"{_LIMIT} cycles"
        self.waited = 0

    async def read(self, register: Register) -> int:
        return await read_register(self.ctx, self.dut.s_axi, register, self.rng)

    async def write(self, register: Register, value: int) -> None:
        await write_register(self.ctx, self.dut.s_axi, register, value, self.rng)

    def started(self) -> None:
        self.waited = 0

    async def wait_interrupt(self) -> bool:
        while self.waited < _LIMIT:
            if self.ctx.get(self.dut.irq):
                return True
            await self.ctx.tick()
            self.waited += 1
        return False

    async def pause(self) -> bool:
        await self.ctx.tick().repeat(_POLL)
        self.waited += _POLL
        return self.waited < _LIMIT


def _simulate(run, *, durations=(), error: bool = False) -> list[tuple[int, int]]:
    """Run ``run(controller_factory)`` against a ControlSlave whose accelerator finishes each
    launch after the next of ``durations`` cycles (never, past the last), raising ``error`` if
    asked; return the (insn_count, insn_addr) seen at each launch."""
    dut = ControlSlave(TINY)
    launches: list[tuple[int, int]] = []

    async def accelerator(ctx):
        pending = list(durations)
        while True:  # (plain ticks: the simulation ends with this background bench waiting)
            await ctx.tick()
            if not ctx.get(dut.control.start):
                continue
            launches.append((ctx.get(dut.control.insn_count), ctx.get(dut.control.insn_addr)))
            ctx.set(dut.control.done, 0)
            ctx.set(dut.control.busy, 1)
            if not pending:
                continue  # one launch too many: it hangs
            cycles = pending.pop(0)
            for _ in range(cycles):
                await ctx.tick()
            ctx.set(dut.control.cycles, cycles)
            ctx.set(dut.control.error, error)
            ctx.set(dut.control.busy, 0)
            ctx.set(dut.control.done, 1)

    async def host(ctx):
        def controller(completion: Completion, expected: int = EXPECTED_ID) -> Controller:
            return Controller(_SimBus(ctx, dut, seed=0), expected, completion)

        await run(controller)

    sim = Simulator(dut)
    sim.add_clock(1e-8)
    sim.add_testbench(accelerator, background=True)
    sim.add_testbench(host)
    sim.run()
    return launches


@pytest.mark.parametrize("completion", list(Completion))
def test_a_run_programs_the_registers_waits_and_reads_the_cycles(completion):
    results = []

    async def run(controller):
        control = controller(completion)
        await control.identify()
        results.append(await control.run(0x1230, 7))
        results.append(await control.run(0x4560, 9))

    launches = _simulate(run, durations=(40, 25))
    assert launches == [(7, 0x1230), (9, 0x4560)]
    assert [r.cycles for r in results] == [40, 25]
    assert all(r.read_beats == r.write_beats == 0 for r in results)


def test_hardware_of_another_configuration_is_refused():
    async def run(controller):
        with pytest.raises(ControlError, match="built for configuration id .*, not 0x00000001"):
            await controller(Completion.POLL, expected=1).identify()

    _simulate(run)


def test_an_address_the_accelerator_cannot_reach_is_refused_before_launch():
    far = 1 << byte_addr_bits(TINY)

    async def run(controller):
        control = controller(Completion.INTERRUPT)
        with pytest.raises(ControlError, match="beyond the accelerator's address space"):
            await control.run(far, 3)
        for address, count in ((0x1238, 3), (0x1230, 0), (-16, 1)):
            with pytest.raises(ControlError, match="must be"):
                await control.run(address, count)

    assert _simulate(run, durations=(10,)) == []


@pytest.mark.parametrize("completion", list(Completion))
def test_a_run_that_never_finishes_times_out_with_the_registers(completion):
    async def run(controller):
        with pytest.raises(ControlError, match=f"did not finish within {_LIMIT} cycles") as caught:
            await controller(completion).run(0x100, 2)
        assert Status.BUSY in Status(caught.value.registers["STATUS"])
        assert caught.value.registers["INSN_COUNT"] == 2

    assert len(_simulate(run)) == 1


def test_an_error_flag_fails_the_run():
    async def run(controller):
        with pytest.raises(ControlError, match="the accelerator reported TOKEN_OVERFLOW"):
            await controller(Completion.POLL).run(0x100, 2)

    _simulate(run, durations=(12,), error=True)
