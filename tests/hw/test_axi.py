"""The AXI top level in Amaranth's simulator: programs launched through the AXI4-Lite
registers, memory served over AXI4 by a slave that checks the master's protocol on every cycle
(VALID and payload held until READY, INCR full-width bursts within 4 KiB, WLAST on each
burst's final beat). DRAM must equal the functional simulator's, the write strobes must enable
exactly the bytes the program stores, and the beat counters must count what the bus carried."""

import random

import numpy as np
import pytest

from hw.axi import AXI_RESP_OKAY, AxiMaster
from hw.axi_top import AxiAccelerator
from isa import AccelConfig, Control, ErrorFlag, Register, Status
from simulator import FunctionalSimulator, StoreEvent
from tests.conformance.cases import CASES
from tests.conformance.random_programs import random_program
from tests.hw.axi_util import AxiMemory, read_register, write_register
from tests.hw.util import TINY, run

_CASES = {case.name: case for case in CASES}


def run_axi(cfg, program, dram, seed, *, ready=0.7, faulty=()):
    """Run ``program`` on the AXI top of ``cfg`` against ``dram`` (changed in place); return
    the registers read at the end and the memory model."""
    program.write_to(dram)
    rng = random.Random(seed)
    memory = AxiMemory(cfg, dram, program.instruction_bytes(), rng, ready, faulty)
    dut = AxiAccelerator(cfg)
    registers = {}

    async def host(ctx):
        bus = dut.s_axi
        await write_register(ctx, bus, Register.INSN_COUNT, len(program.instructions), rng)
        await write_register(ctx, bus, Register.INSN_ADDR_LO, memory.insn_addr, rng)
        await write_register(ctx, bus, Register.INSN_ADDR_HI, 0, rng)
        await write_register(ctx, bus, Register.CONTROL, Control.START | Control.IRQ_ENABLE, rng)
        await ctx.tick().until(dut.irq)
        for register in (Register.STATUS, Register.ERROR, Register.CYCLES):
            registers[register] = await read_register(ctx, bus, register, rng)
        for register in (Register.READ_BEATS, Register.WRITE_BEATS):
            registers[register] = await read_register(ctx, bus, register, rng)

    async def serve(ctx):
        await memory.serve(ctx, dut.m_axi, until=dut.irq)

    run(dut, host, serve)
    return registers, memory


def stored_bytes(cfg, program, dram_bytes):
    """Per DRAM byte, whether one of the program's STOREs writes it (from the functional
    simulator's events)."""
    dram = np.zeros(dram_bytes, dtype=np.uint8)
    result = FunctionalSimulator(cfg).run(program, dram)
    stored = np.zeros(dram_bytes, dtype=bool)
    for event in result.events:
        if isinstance(event, StoreEvent):
            for y in range(event.y_size):
                start = event.dram_address + y * event.x_stride * event.elem_bytes
                stored[start : start + event.x_size * event.elem_bytes] = True
    return stored


def programs(cfg, wide: bool):
    """A blocked GEMM with two virtual threads (tiny only: it is the slowest), a padded
    ACC_8BIT load, and random programs."""
    if not wide:
        yield "blocked_gemm_vt2", _CASES["blocked_gemm_vt2"].build(cfg, 0)
    yield "acc_8bit_padded_load", _CASES["acc_8bit_padded_load"].build(cfg, 1)
    for seed in (11, 12)[: 1 if wide else 2]:
        yield f"random{seed}", random_program(cfg, seed)


@pytest.mark.parametrize(
    ("cfg", "name", "item"),
    [
        pytest.param(cfg, name, item, id=f"{label}-{name}")
        for label, cfg, wide in (
            ("tiny", TINY, False),
            ("tiny-bus128", TINY.replace(axi_width=128), True),
        )
        for name, item in programs(cfg, wide)
    ],
)
def test_programs_over_axi_match_the_functional_simulator(cfg, name, item):
    program = getattr(item, "program", item)
    initial = getattr(item, "dram", np.zeros(program.dram_extent, dtype=np.uint8))
    expected = initial.copy()
    FunctionalSimulator(cfg).run(program, expected)
    dram = initial.copy()
    registers, memory = run_axi(cfg, program, dram, seed=len(name))
    np.testing.assert_array_equal(dram, expected, err_msg=name)
    assert registers[Register.STATUS] == Status.DONE
    assert registers[Register.ERROR] == 0
    assert registers[Register.CYCLES] > 0
    beats = {
        kind: sum(b for channel, _, b in memory.bursts if channel == kind) for kind in ("ar", "aw")
    }
    assert registers[Register.READ_BEATS] == beats["ar"]
    assert registers[Register.WRITE_BEATS] == beats["aw"]
    # The strobes enabled the stored bytes and nothing else (a stray strobe could write a byte
    # with its old value and leave DRAM unchanged).
    stored = stored_bytes(cfg, program, len(dram))
    np.testing.assert_array_equal(memory.strobed > 0, stored)


@pytest.mark.parametrize("where", ["read", "write"])
def test_error_responses_reach_the_error_register(where):
    cfg = TINY
    built = _CASES["gemm"].build(cfg, 0)
    region = built.outputs[0] if where == "write" else built.program.segments[0]
    faulty = range(region.address, region.end)
    dram = built.dram.copy()
    registers, _ = run_axi(cfg, built.program, dram, seed=3, faulty=(faulty,))
    expected = ErrorFlag.WRITE_RESPONSE if where == "write" else ErrorFlag.READ_RESPONSE
    assert registers[Register.ERROR] == expected
    assert registers[Register.STATUS] == Status.DONE | Status.ERROR
    if where == "write":
        assert not dram[region.address : region.end].any()


def test_master_constants_follow_the_configuration():
    """AxSIZE is the beat width; the shim adds no cycle: a beat accepted on the bus is the
    port's beat in the same cycle."""
    cfg = AccelConfig.preset("ultra96")
    dut = AxiMaster(cfg)

    async def bench(ctx):
        ctx.set(dut.port.ar.payload.addr, 0x1230)
        ctx.set(dut.port.ar.payload.len, 7)
        ctx.set(dut.port.ar.valid, 1)
        assert ctx.get(dut.axi.arsize) == 4  # 16-byte beats
        assert (ctx.get(dut.axi.araddr), ctx.get(dut.axi.arlen)) == (0x1230, 7)
        assert ctx.get(dut.axi.arvalid)
        ctx.set(dut.axi.rvalid, 1)
        ctx.set(dut.port.r.ready, 1)
        ctx.set(dut.axi.rresp, AXI_RESP_OKAY)
        assert ctx.get(dut.events.read_beat) and not ctx.get(dut.events.read_error)
        ctx.set(dut.axi.rresp, 0b11)  # DECERR
        assert ctx.get(dut.events.read_error)

    run(dut, bench, clock=False)
