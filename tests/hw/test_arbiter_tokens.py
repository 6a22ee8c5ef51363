"""The read arbiter and the token counters, under random stalls."""

import random

import numpy as np
from amaranth.hdl import Signal
from hypothesis import given, settings
from hypothesis import strategies as st

from hw.arbiter import ReadArbiter
from hw.memport import AXI_PAGE_BYTES
from hw.sim import MemoryModel, MemoryTiming
from hw.tokens import TokenCounter
from tests.hw.util import TINY, run, send

DRAM_BYTES = 1 << 14
PAGE_BEATS = AXI_PAGE_BYTES // TINY.bus_bytes
BURST = st.tuples(st.integers(0, DRAM_BYTES // 8 - 16), st.integers(0, 15)).filter(
    lambda burst: burst[0] % PAGE_BEATS + burst[1] < PAGE_BEATS  # AXI: within a 4 KiB page
)
BURSTS = st.lists(BURST, min_size=0, max_size=5)


@settings(max_examples=10)
@given(requests=st.lists(BURSTS, min_size=3, max_size=3), seed=st.integers(0, 1000))
def test_each_client_gets_exactly_its_bursts_data(requests, seed):
    """Three clients' bursts, granted round-robin, with the memory's data routed back in order."""
    cfg = TINY
    rng = random.Random(seed)
    dram = np.random.default_rng(seed).integers(0, 256, DRAM_BYTES, dtype=np.uint8)
    model = MemoryModel(cfg, dram, timing=MemoryTiming((0, 6), 0.7, seed))
    dut = ReadArbiter(cfg, 3)
    finished = Signal()
    remaining = [len(bursts) for bursts in requests]

    def client_bench(index):
        client = dut.clients[index]
        bursts = requests[index]

        async def issue(ctx):
            await send(ctx, client.ar, [{"addr": b * 8, "len": n} for b, n in bursts], rng)

        async def receive(ctx):
            for beat, length in bursts:
                for index_in_burst in range(length + 1):
                    while True:
                        ready = rng.random() < 0.7
                        ctx.set(client.r.ready, ready)
                        *_, valid, r = await ctx.tick().sample(client.r.valid, client.r.payload)
                        if valid and ready:
                            break
                    address = (beat + index_in_burst) * 8
                    assert r.data == int.from_bytes(dram[address : address + 8], "little")
                    assert r.last == (index_in_burst == length)
                ctx.set(client.r.ready, 0)
                remaining[index] -= 1
            if not any(remaining):
                ctx.set(finished, 1)

        return issue, receive

    async def memory(ctx):
        if any(remaining):
            await model.serve(ctx, dut.bus, finished=finished, max_cycles=5000)

    benches = [bench for index in range(3) for bench in client_bench(index)]
    run(dut, memory, *benches)
    assert not any(remaining)
    assert [kind for kind, _, _ in model.bursts] == ["ar"] * sum(map(len, requests))


@settings(max_examples=15)
@given(events=st.lists(st.tuples(st.booleans(), st.booleans()), min_size=1, max_size=80))
def test_token_counter_counts_pushes_minus_granted_pops(events):
    dut = TokenCounter(TINY)

    async def bench(ctx):
        count = 0
        for push, pop in events:
            ctx.set(dut.producer.push, push)
            ctx.set(dut.consumer.pop, pop)
            assert ctx.get(dut.consumer.available) == (count > 0)
            await ctx.tick()
            count += push - (pop and count > 0)
            assert ctx.get(dut.count) == count
        assert not ctx.get(dut.overflow)

    run(dut, bench)


def test_token_counter_flags_a_push_beyond_its_width():
    dut = TokenCounter(TINY)
    top = (1 << TINY.token_counter_bits) - 1

    async def bench(ctx):
        ctx.set(dut.count, top)  # as after 2**bits - 1 pushes
        ctx.set(dut.producer.push, 1)
        await ctx.tick()
        assert ctx.get(dut.overflow)
        assert ctx.get(dut.count) == top

    run(dut, bench)
