"""The LOAD engine: 2-D strided loads with every padding, each memory type, against SEMANTICS 3."""

import numpy as np
from amaranth.hdl import Module
from amaranth.lib import memory, wiring
from hypothesis import given, settings
from hypothesis import strategies as st

from hw.loader import LoadEngine
from hw.sim import MemoryModel, MemoryTiming
from isa import MemId, MemInsn, Opcode, encode
from tests.hw.util import TINY, load_reference, run

DRAM_BYTES = 1 << 13


def harness(cfg, buffers):
    m = Module()
    m.submodules.engine = engine = LoadEngine(cfg, buffers)
    mems = {}
    for mem in buffers:
        mems[mem] = memory.Memory(
            shape=cfg.elem_bytes(mem) * 8, depth=cfg.buffer_depth(mem), init=[]
        )
        m.submodules[mem.name.lower()] = mems[mem]
        wiring.connect(m, getattr(engine, mem.name.lower()), mems[mem].write_port())
    return m, engine, mems


def expected_row(cfg, mem, raw):
    """ACC_8BIT bytes sign-extended to accumulator lanes; other types are raw bytes."""
    if mem is not MemId.ACC_8BIT:
        return int.from_bytes(raw, "little")
    lanes = np.frombuffer(raw, dtype=np.int8).astype(np.int64)
    width = cfg.acc_width
    return sum((int(v) & ((1 << width) - 1)) << (i * width) for i, v in enumerate(lanes))


def loads(mem):
    cfg, elem = TINY, TINY.elem_bytes(mem)
    pad = st.integers(0, 3)
    return st.builds(
        MemInsn,
        opcode=st.just(Opcode.LOAD),
        memory_type=st.just(mem),
        sram_base=st.integers(0, 12),
        dram_base=st.integers(0, DRAM_BYTES // elem // 4),
        y_size=st.integers(0, 3),
        x_size=st.integers(1, 5),
        x_stride=st.integers(0, 7),
        y_pad_0=pad,
        y_pad_1=pad,
        x_pad_0=pad,
        x_pad_1=pad,
    ).filter(
        lambda i: (
            cfg.buffer_depth(mem)
            > i.sram_base + (i.y_pad_0 + i.y_size + i.y_pad_1) * (i.x_pad_0 + i.x_size + i.x_pad_1)
        )
    )


MEMS = st.sampled_from([MemId.INP, MemId.WGT, MemId.UOP, MemId.ACC, MemId.ACC_8BIT])


@settings(max_examples=30)
@given(data=st.data(), seed=st.integers(0, 1000))
def test_loads_write_padded_rows(data, seed):
    cfg = TINY
    mem = data.draw(MEMS)
    insns = data.draw(st.lists(loads(mem), min_size=1, max_size=2))
    buffers = (MemId.INP, MemId.WGT) if mem in (MemId.INP, MemId.WGT) else (MemId.UOP, MemId.ACC)
    target = MemId.ACC if mem is MemId.ACC_8BIT else mem
    dut, engine, mems = harness(cfg, buffers)
    dram = np.random.default_rng(seed).integers(0, 256, DRAM_BYTES, dtype=np.uint8)
    model = MemoryModel(cfg, dram, timing=MemoryTiming((0, 5), 0.6, seed))
    elem = cfg.elem_bytes(mem)
    rows = [dram[i * elem : (i + 1) * elem].tobytes() for i in range(DRAM_BYTES // elem)]
    stale = (1 << (cfg.elem_bytes(target) * 8)) - 1  # marks rows a load must not touch

    async def bench(ctx):
        for insn in insns:
            for row in range(cfg.buffer_depth(target)):
                ctx.set(mems[target].data[row], stale)
            ctx.set(engine.insn.as_value(), encode(insn, cfg))
            ctx.set(engine.start, 1)
            await ctx.tick()
            ctx.set(engine.start, 0)
            await model.serve(ctx, engine.read, finished=~engine.busy, max_cycles=3000)
            want = load_reference(insn, rows)
            got = [ctx.get(mems[target].data[row]) for row in range(cfg.buffer_depth(target))]
            for offset, row in enumerate(want):
                value = 0 if row is None else expected_row(cfg, mem, row)
                assert got[insn.sram_base + offset] == value, (insn, offset)
            untouched = set(range(cfg.buffer_depth(target))) - {
                insn.sram_base + offset for offset in range(len(want))
            }
            assert all(got[row] == stale for row in untouched)

    run(dut, bench)
