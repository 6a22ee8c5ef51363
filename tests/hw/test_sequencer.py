"""The loop sequencer's index streams, with random back-pressure, against SEMANTICS 5's loops."""

import random

from hypothesis import given, settings
from hypothesis import strategies as st

from hw.sequencer import LoopSequencer, loop_layout
from tests.hw.util import TINY, run

LAYOUT = loop_layout(TINY)


def width(name: str) -> int:
    return LAYOUT[name].shape.width


def expected_steps(loop: dict) -> list[tuple[int, int, int, int]]:
    """(uop, dst, src, wgt) offsets of every step, wrapped to the index widths."""
    steps = []
    for i0 in range(loop["iter_out"]):
        for i1 in range(loop["iter_in"]):
            for uop in range(loop["uop_bgn"], loop["uop_end"]):
                offsets = [
                    (i0 * loop[f"{n}_factor_out"] + i1 * loop[f"{n}_factor_in"])
                    % (1 << width(f"{n}_factor_in"))
                    for n in ("dst", "src", "wgt")
                ]
                steps.append((uop, *offsets))
    return steps


def factor(name: str) -> st.SearchStrategy:
    return st.one_of(st.integers(0, 5), st.integers(0, (1 << width(name)) - 1))


LOOPS = st.fixed_dictionaries(
    {
        "uop_bgn": st.integers(0, 4),
        "uop_end": st.integers(0, 6),
        "iter_out": st.integers(0, 3),
        "iter_in": st.integers(0, 4),
        **{
            f"{n}_factor_{lvl}": factor(f"{n}_factor_{lvl}")
            for n in ("dst", "src", "wgt")
            for lvl in ("out", "in")
        },
    }
)


@settings(max_examples=25)
@given(loops=st.lists(LOOPS, min_size=1, max_size=3), seed=st.integers(0, 1000))
def test_steps_follow_the_two_level_loop(loops, seed):
    dut = LoopSequencer(TINY)
    rng = random.Random(seed)

    async def bench(ctx):
        for loop in loops:
            want = expected_steps(loop)
            ctx.set(dut.cmd.payload, LAYOUT.const(loop))
            ctx.set(dut.cmd.valid, 1)
            await ctx.tick()
            ctx.set(dut.cmd.valid, 0)
            got, lasts = [], []
            for _ in range(4 * len(want) + 4):
                ready = rng.random() < 0.7
                ctx.set(dut.step.ready, ready)
                *_, valid, step = await ctx.tick().sample(dut.step.valid, dut.step.payload)
                if not valid:
                    break
                if ready:
                    got.append((step.uop, step.dst, step.src, step.wgt))
                    lasts.append(step.last)
            assert got == want
            assert lasts == [0] * (len(want) - 1) + [1] * bool(want)
            assert not ctx.get(dut.busy)

    run(dut, bench)
