"""The AXI4-Lite control slave alone: the register map of ``isa.registers``, byte strobes,
SLVERR for unmapped offsets and read-only registers, the start pulse, the interrupt, and the
handshake rules (responses held until READY, address and data accepted in either order)."""

import random

import pytest

from hw.axi import AXI_RESP_OKAY, AXI_RESP_SLVERR
from hw.axilite import ControlSlave
from hw.layouts import byte_addr_bits
from isa import (
    MAGIC,
    REGISTER_MAP_VERSION,
    TOKEN_REGISTERS,
    AccelConfig,
    Control,
    ErrorFlag,
    ModuleFlag,
    Register,
    Status,
    config_id,
)
from tests.hw.axi_util import lite_read, lite_write, read_register, write_register
from tests.hw.util import TINY, run

SEEDS = [0, 1, 2]


def _run(cfg, bench):
    dut = ControlSlave(cfg)

    async def testbench(ctx):
        await bench(ctx, dut)

    run(dut, testbench)


@pytest.mark.parametrize("preset", ["tiny", "default"])
def test_identity_registers_name_the_configuration(preset):
    cfg = AccelConfig.preset(preset)

    async def bench(ctx, dut):
        rng = random.Random(0)
        assert await read_register(ctx, dut.s_axi, Register.MAGIC, rng) == MAGIC
        assert await read_register(ctx, dut.s_axi, Register.VERSION, rng) == REGISTER_MAP_VERSION
        assert await read_register(ctx, dut.s_axi, Register.CONFIG_ID, rng) == config_id(cfg)

    _run(cfg, bench)
    assert config_id(cfg) != config_id(cfg.replace(cmd_queue_depth=8))


@pytest.mark.parametrize("seed", SEEDS)
def test_writable_registers_take_byte_strobes(seed):
    async def bench(ctx, dut):
        rng = random.Random(seed)
        bus = dut.s_axi
        await write_register(ctx, bus, Register.INSN_COUNT, 0x11223344, rng)
        assert await lite_write(ctx, bus, Register.INSN_COUNT, 0xAABBCCDD, rng, 0b0101) == 0
        assert await read_register(ctx, bus, Register.INSN_COUNT, rng) == 0x11BB33DD
        assert ctx.get(dut.control.insn_count) == 0x11BB33DD

        # The 64-bit instruction address keeps the accelerator's address width only.
        width = byte_addr_bits(TINY)
        await write_register(ctx, bus, Register.INSN_ADDR_LO, 0x89ABCDE0, rng)
        await write_register(ctx, bus, Register.INSN_ADDR_HI, 0xFFFFFFFF, rng)
        high = (1 << (width - 32)) - 1
        assert await read_register(ctx, bus, Register.INSN_ADDR_HI, rng) == high
        assert await read_register(ctx, bus, Register.INSN_ADDR_LO, rng) == 0x89ABCDE0
        assert ctx.get(dut.control.insn_addr) == high << 32 | 0x89ABCDE0

    _run(TINY, bench)


@pytest.mark.parametrize("seed", SEEDS)
def test_unmapped_offsets_and_read_only_registers_answer_slverr(seed):
    async def bench(ctx, dut):
        rng = random.Random(seed)
        bus = dut.s_axi
        ctx.set(dut.control.cycles, 1234)
        for offset in (max(Register) + 4, 0x800, 0xFFC):
            assert await lite_read(ctx, bus, offset, rng) == (0, AXI_RESP_SLVERR)
            assert await lite_write(ctx, bus, offset, 1, rng) == AXI_RESP_SLVERR
        for register in Register:
            if not register.writable:
                assert await lite_write(ctx, bus, register, 0xFFFF, rng) == AXI_RESP_SLVERR
        assert await read_register(ctx, bus, Register.CYCLES, rng) == 1234
        assert await read_register(ctx, bus, Register.MAGIC, rng) == MAGIC
        # A refused write to CONTROL's neighbour started nothing.
        assert await lite_write(ctx, bus, Register.STATUS, Control.START, rng) == AXI_RESP_SLVERR
        assert await read_register(ctx, bus, Register.CONTROL, rng) == 0

    _run(TINY, bench)


def test_start_is_one_pulse():
    async def bench(ctx, dut):
        bus = dut.s_axi
        ctx.set(bus.awaddr, Register.CONTROL)
        ctx.set(bus.wdata, Control.START)
        ctx.set(bus.wstrb, 0xF)
        ctx.set(bus.awvalid, 1)
        ctx.set(bus.wvalid, 1)
        ctx.set(bus.bready, 1)
        starts = []
        for _ in range(10):
            *_, ready, start = await ctx.tick().sample(bus.awready, dut.control.start)
            starts.append(start)
            if ready:
                ctx.set(bus.awvalid, 0)
                ctx.set(bus.wvalid, 0)
        assert starts.count(1) == 1

    _run(TINY, bench)


def test_beat_counters_restart_at_a_launch_only():
    async def bench(ctx, dut):
        rng = random.Random(3)
        bus, control = dut.s_axi, dut.control

        async def beats(count):
            for _ in range(count):
                ctx.set(dut.events.read_beat, 1)
                ctx.set(dut.events.write_beat, 1)
                await ctx.tick()
            ctx.set(dut.events.read_beat, 0)
            ctx.set(dut.events.write_beat, 0)
            await ctx.tick()  # a beat is counted a cycle after it passes

        await beats(5)
        assert await read_register(ctx, bus, Register.READ_BEATS, rng) == 5
        assert await read_register(ctx, bus, Register.WRITE_BEATS, rng) == 5
        await write_register(ctx, bus, Register.CONTROL, Control.START, rng)
        await beats(2)
        assert await read_register(ctx, bus, Register.READ_BEATS, rng) == 2
        # While busy the accelerator ignores a start, and the counters go on.
        ctx.set(control.busy, 1)
        await write_register(ctx, bus, Register.CONTROL, Control.START, rng)
        await beats(1)
        assert await read_register(ctx, bus, Register.WRITE_BEATS, rng) == 3

    _run(TINY, bench)


def test_status_error_and_interrupt():
    async def bench(ctx, dut):
        rng = random.Random(5)
        bus, control = dut.s_axi, dut.control
        assert await read_register(ctx, bus, Register.STATUS, rng) == 0
        ctx.set(control.busy, 1)
        assert await read_register(ctx, bus, Register.STATUS, rng) == Status.BUSY
        ctx.set(control.busy, 0)
        ctx.set(control.done, 1)
        assert await read_register(ctx, bus, Register.STATUS, rng) == Status.DONE
        assert not ctx.get(dut.irq)
        await write_register(ctx, bus, Register.CONTROL, Control.IRQ_ENABLE, rng)
        assert await read_register(ctx, bus, Register.CONTROL, rng) == Control.IRQ_ENABLE
        assert ctx.get(dut.irq)
        ctx.set(control.done, 0)
        assert not ctx.get(dut.irq)

        # Bus errors are pulses from the AXI master; the register keeps them.
        ctx.set(dut.events.read_error, 1)
        await ctx.tick()
        ctx.set(dut.events.read_error, 0)
        expected = ErrorFlag.READ_RESPONSE
        assert await read_register(ctx, bus, Register.ERROR, rng) == expected
        ctx.set(control.error, 1)
        ctx.set(dut.events.write_error, 1)
        await ctx.tick()
        ctx.set(dut.events.write_error, 0)
        expected |= ErrorFlag.TOKEN_OVERFLOW | ErrorFlag.WRITE_RESPONSE
        assert await read_register(ctx, bus, Register.ERROR, rng) == expected
        assert await read_register(ctx, bus, Register.STATUS, rng) == Status.ERROR

    _run(TINY, bench)


def test_debug_registers_show_modules_and_tokens():
    async def bench(ctx, dut):
        rng = random.Random(6)
        status = dut.status
        ctx.set(status.fetch_busy, 1)
        ctx.set(status.compute_idle, 1)
        values = {}
        for index, token in enumerate(TOKEN_REGISTERS):
            values[token] = 1000 * (index + 1) + index
            ctx.set(status[token.value], values[token])
        modules = await read_register(ctx, dut.s_axi, Register.MODULES, rng)
        assert modules == ModuleFlag.FETCH_BUSY | ModuleFlag.COMPUTE_IDLE
        for token, register in TOKEN_REGISTERS.items():
            assert await read_register(ctx, dut.s_axi, register, rng) == values[token]

    _run(TINY, bench)


def test_read_response_waits_for_ready():
    """A read answered while the master is not ready keeps its data until it is (the helper
    checks that on every cycle it waits)."""

    async def bench(ctx, dut):
        rng = random.Random(7)
        for _ in range(10):
            data, resp = await lite_read(ctx, dut.s_axi, Register.MAGIC, rng)
            assert (data, resp) == (MAGIC, AXI_RESP_OKAY)

    _run(TINY, bench)


def test_a_second_read_waits_until_the_first_response_is_taken():
    async def bench(ctx, dut):
        bus = dut.s_axi
        ctx.set(bus.araddr, Register.MAGIC)
        ctx.set(bus.arvalid, 1)
        await ctx.tick().until(bus.arready)
        ctx.set(bus.araddr, Register.VERSION)  # the next request, while MAGIC's data waits
        for _ in range(5):
            *_, ready, valid, data = await ctx.tick().sample(bus.arready, bus.rvalid, bus.rdata)
            assert (ready, valid, data) == (0, 1, MAGIC)
        ctx.set(bus.rready, 1)
        *_, valid, data = await ctx.tick().sample(bus.rvalid, bus.rdata)
        assert (valid, data) == (1, MAGIC)
        await ctx.tick().until(bus.arready)
        ctx.set(bus.arvalid, 0)
        *_, valid, data = await ctx.tick().sample(bus.rvalid, bus.rdata)
        assert (valid, data) == (1, REGISTER_MAP_VERSION)

    _run(TINY, bench)
