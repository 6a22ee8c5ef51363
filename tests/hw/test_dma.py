"""Burst splitting and beat/element conversion under random back-pressure."""

import random

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from hw.dma import BeatPacker, BeatUnpacker, BurstSplitter
from hw.memport import AXI_PAGE_BYTES
from tests.hw.util import TINY, receive, run, send


@settings(max_examples=20)
@given(
    runs=st.lists(
        st.tuples(st.integers(0, 3 * AXI_PAGE_BYTES // 8), st.integers(1, 1300)),
        min_size=1,
        max_size=3,
    ),
    max_beats=st.sampled_from([1, 2, 8, 256]),
    seed=st.integers(0, 1000),
)
def test_bursts_are_the_greedy_split_within_axi_limits(runs, max_beats, seed):
    bus = TINY.bus_bytes
    dut = BurstSplitter(TINY, max_beats=max_beats)
    rng = random.Random(seed)

    async def bench(ctx):
        for first, beats in runs:
            ctx.set(dut.cmd.payload, {"first": first, "last": first + beats - 1})
            ctx.set(dut.cmd.valid, 1)
            await ctx.tick()
            ctx.set(dut.cmd.valid, 0)
            address, end = first * bus, (first + beats) * bus
            while ctx.get(dut.busy):
                ready = rng.random() < 0.6
                ctx.set(dut.burst.ready, ready)
                *_, valid, burst = await ctx.tick().sample(dut.burst.valid, dut.burst.payload)
                if valid and ready:
                    # as long as the page, the run and max_beats allow (AXI4 rules)
                    room = AXI_PAGE_BYTES - address % AXI_PAGE_BYTES
                    size = min(room, end - address, max_beats * bus)
                    assert (burst.addr, burst.len) == (address, size // bus - 1)
                    address += size
            assert address == end

    run(dut, bench)


WIDTHS = [(64, 32), (64, 64), (64, 128), (64, 512), (256, 32), (256, 128), (128, 2048)]


def rows_strategy(beat_bits, elem_bits):
    lanes = max(1, beat_bits // elem_bits)
    return st.lists(st.tuples(st.integers(0, lanes - 1), st.integers(1, 9)), min_size=1, max_size=4)


@pytest.mark.parametrize(("beat_bits", "elem_bits"), WIDTHS)
@settings(max_examples=6)
@given(data=st.data(), seed=st.integers(0, 1000))
def test_unpacker_yields_each_rows_elements(beat_bits, elem_bits, data, seed):
    rows = data.draw(rows_strategy(beat_bits, elem_bits))
    rng = random.Random(seed)
    lanes = max(1, beat_bits // elem_bits)
    beats, want = [], []
    for lane, count in rows:
        # The row's elements sit from `lane` on, in a run of whole beats of random fill.
        elems = [rng.getrandbits(elem_bits) for _ in range(count)]
        want += elems
        span = (
            -(-(lane + count) * elem_bits // beat_bits)
            if lanes > 1
            else count * elem_bits // beat_bits
        )
        run_bits = 0
        for index, value in enumerate(elems):
            run_bits |= value << ((lane + index) * elem_bits)
        for index in range(span):
            beats.append(run_bits >> (index * beat_bits) & ((1 << beat_bits) - 1))
    dut = BeatUnpacker(beat_bits=beat_bits, elem_bits=elem_bits, count_bits=8)
    got = []

    async def rows_in(ctx):
        await send(ctx, dut.row, [{"lane": lane, "count": count} for lane, count in rows], rng)

    async def beats_in(ctx):
        await send(ctx, dut.beat, beats, rng)

    async def elems_out(ctx):
        got.extend(await receive(ctx, dut.elem, len(want), rng))

    run(dut, rows_in, beats_in, elems_out)
    assert got == want


@pytest.mark.parametrize(("beat_bits", "elem_bits"), WIDTHS)
@settings(max_examples=6)
@given(data=st.data(), seed=st.integers(0, 1000))
def test_packer_writes_exactly_each_rows_bytes(beat_bits, elem_bits, data, seed):
    rows = data.draw(rows_strategy(beat_bits, elem_bits))
    rng = random.Random(seed)
    elem_bytes, beat_bytes = elem_bits // 8, beat_bits // 8
    dut = BeatPacker(beat_bits=beat_bits, elem_bits=elem_bits, count_bits=8)
    elems = [[rng.getrandbits(elem_bits) for _ in range(count)] for _, count in rows]
    want, got = bytearray(), bytearray()
    for (lane, _), values in zip(rows, elems, strict=True):
        # Bytes of the beats a row writes, '?' where the strobes must be off.
        first = lane * elem_bytes if beat_bits > elem_bits else 0
        body = b"".join(v.to_bytes(elem_bytes, "little") for v in values)
        total = -(-(first + len(body)) // beat_bytes) * beat_bytes
        want += b"?" * first + body + b"?" * (total - first - len(body))
    flat = [value for values in elems for value in values]

    async def rows_in(ctx):
        await send(ctx, dut.row, [{"lane": lane, "count": count} for lane, count in rows], rng)

    async def elems_in(ctx):
        await send(ctx, dut.elem, flat, rng)

    async def beats_out(ctx):
        beats = await receive(ctx, dut.beat, len(want) // beat_bytes, rng)
        for beat in beats:
            raw = beat.data.to_bytes(beat_bytes, "little")
            got.extend(
                b"".join(raw[i : i + 1] if beat.strb >> i & 1 else b"?" for i in range(beat_bytes))
            )

    run(dut, rows_in, elems_in, beats_out)
    assert bytes(got) == bytes(want)
