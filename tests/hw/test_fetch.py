"""Fetch: the instruction stream routed to the command queues in program order (isa.stage_of),
under random memory timing and queue stalls, on narrow and wide buses and unaligned streams."""

import random

import numpy as np
from amaranth.hdl import Signal
from hypothesis import given, settings
from hypothesis import strategies as st

from hw.fetch import Fetch
from hw.sim import MemoryModel, MemoryTiming
from isa import (
    INSN_BYTES,
    FinishInsn,
    MemId,
    MemInsn,
    Opcode,
    Stage,
    encode,
    insn_bytes,
    stage_of,
)
from tests.hw.util import TINY, run
from tests.strategies import instructions

CONFIGS = [TINY, TINY.replace(axi_width=256), TINY.replace(axi_width=32)]


@settings(max_examples=12)
@given(data=st.data(), seed=st.integers(0, 1000))
def test_instructions_reach_their_queues_in_order(data, seed):
    cfg = data.draw(st.sampled_from(CONFIGS))
    program = data.draw(st.lists(instructions(cfg), min_size=0, max_size=14))
    offset = data.draw(st.integers(0, 3)) * INSN_BYTES  # the stream may start mid-beat
    got, want = fetch(cfg, program, offset, seed)
    assert got == want


def test_every_load_type_goes_where_stage_of_says():
    loads = [
        MemInsn(
            opcode=op, memory_type=mem, sram_base=0, dram_base=0, y_size=0, x_size=0, x_stride=0
        )
        for op in (Opcode.LOAD, Opcode.STORE)
        for mem in MemId
    ]
    got, want = fetch(TINY, [*loads, FinishInsn()], 0, 0)
    assert got == want
    assert len(want[Stage.LOAD]) == 3  # INP, WGT and OUT: only compute's types leave load


def fetch(cfg, program, offset, seed):
    """Run fetch on ``program`` placed ``offset`` bytes into the stream; return what each queue
    received and what isa.stage_of says it should."""
    rng = random.Random(seed)
    stream = b"\0" * offset + insn_bytes(program, cfg)
    model = MemoryModel(cfg, np.zeros(64, dtype=np.uint8), stream, MemoryTiming((0, 4), 0.7, seed))
    dut = Fetch(cfg)
    want = {stage: [encode(i, cfg) for i in program if stage_of(i) is stage] for stage in Stage}
    got = {stage: [] for stage in Stage}
    queues = {Stage.LOAD: dut.load, Stage.COMPUTE: dut.compute, Stage.STORE: dut.store}
    finished = Signal()

    async def start(ctx):
        ctx.set(dut.insn_addr, model.insn_addr + offset)
        ctx.set(dut.insn_count, len(program))
        ctx.set(dut.start, 1)
        await ctx.tick()
        ctx.set(dut.start, 0)
        await model.serve(ctx, dut.read, finished=finished, max_cycles=4000)

    async def drain(ctx):
        await ctx.tick()
        while ctx.get(dut.busy):
            readies = {stage: rng.random() < 0.5 for stage in queues}
            for stage, queue in queues.items():
                ctx.set(queue.ready, readies[stage])
            sampled = [s for q in queues.values() for s in (q.valid, q.payload)]
            *_, lv, lp, cv, cp, sv, sp = await ctx.tick().sample(*sampled)
            for stage, valid, payload in (
                (Stage.LOAD, lv, lp),
                (Stage.COMPUTE, cv, cp),
                (Stage.STORE, sv, sp),
            ):
                if valid and readies[stage]:
                    got[stage].append(payload)
        ctx.set(finished, 1)

    run(dut, start, drain)
    return got, want
