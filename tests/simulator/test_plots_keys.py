"""What the plots show (issue 17 item 16): the timeline's every colour in its legend and a
fetch row; a roofline names the runs it cannot place; overlapping runs keyed and labelled
beside their points."""

import numpy as np

from isa import AccelConfig, AluOp, Kernel, Loop, MemId, ProgramBuilder, Stage, TimingConfig, Uop
from runtime.demo_gemm import demo_gemm_program
from simulator import CycleSimulator
from simulator.plots import roofline_figure, timeline_figure

TINY = AccelConfig.preset("tiny")


def _run(program, timing=None):
    dram = np.zeros(program.dram_extent, dtype=np.uint8)
    return CycleSimulator(program.config, timing or TimingConfig()).run(program, dram)


def _alu_only():
    b = ProgramBuilder(TINY)
    acc = b.alloc("acc", MemId.ACC, 8, np.arange(32, dtype="<i4"))
    out = b.alloc("out", MemId.OUT, 8)
    b.load_2d(acc, sram=0, y_size=1, x_size=8)
    b.alu(
        Kernel((Uop(dst_idx=0, src_idx=0),), (Loop(8, dst_factor=1, src_factor=1),)),
        AluOp.ADD,
        imm=1,
    )
    b.dep_push(Stage.COMPUTE, Stage.STORE)
    b.dep_pop(Stage.COMPUTE, Stage.STORE)
    b.store_2d(out, sram=0, y_size=1, x_size=8)
    return b.finish()


def _close(fig):
    import matplotlib.pyplot as plt

    plt.close(fig)


def test_timeline_has_a_fetch_row_and_every_colour_in_its_legend():
    stats = _run(demo_gemm_program(TINY))
    fig = timeline_figure(stats)
    ax = fig.axes[0]
    assert [t.get_text() for t in ax.get_yticklabels()] == [
        "fetch",
        "load",
        "compute",
        "store",
        "read port",
        "write port",
    ]
    legend = {
        t.get_text(): h
        for t, h in zip(ax.get_legend().get_texts(), ax.get_legend().legend_handles, strict=True)
    }
    rows = {"read": 4, "write": 5}
    for port, unit in {(b.port, b.unit) for b in stats.bursts}:
        name = next(n for n in legend if n.startswith(f"{port} burst: {unit}"))
        colour = tuple(legend[name].get_facecolor()[:3])
        bars = [c for c in ax.collections if len(c.get_paths()) and _row(c) == rows[port]]
        drawn = [c for c in bars if tuple(c.get_facecolor()[0][:3]) == colour]
        count = sum(len(c.get_paths()) for c in drawn)
        assert count == sum(b.port == port and b.unit == unit for b in stats.bursts)
    # The fetch row (y = 0) holds one bar per instruction-fetch burst.
    fetch_bars = [c for c in ax.collections if len(c.get_paths()) and _row(c) == 0]
    assert sum(len(c.get_paths()) for c in fetch_bars) == sum(
        b.unit == "fetch" for b in stats.bursts
    )
    _close(fig)


def _row(collection):
    """The timeline row a collection of bars lies on."""
    ys = {
        round((p.vertices[:, 1].min() + p.vertices[:, 1].max()) / 2) for p in collection.get_paths()
    }
    return ys.pop() if len(ys) == 1 else None


def test_a_run_without_gemm_operations_is_named_not_dropped():
    alu, gemm = _run(_alu_only()), _run(demo_gemm_program(TINY))
    assert alu.ops == 0 and gemm.ops > 0
    for runs in ([("alu only", alu)], [("alu only", alu), ("gemm", gemm)]):
        fig = roofline_figure(runs)
        texts = [t.get_text() for t in fig.axes[0].texts]
        note = next(t for t in texts if t.startswith("not placed"))
        assert "no GEMM operations" in note and note.endswith("alu only")
        _close(fig)


def test_runs_at_one_place_are_keyed_and_labelled_beside_their_points():
    program = demo_gemm_program(TINY)
    runs = [("1 thread", _run(program)), ("default", _run(program, TimingConfig(read_latency=2)))]
    fig = roofline_figure(runs)
    ax = fig.axes[0]
    keys = [t.get_text() for t in ax.get_legend().get_texts()]
    for label, stats in runs:
        assert any(k.startswith(f"{label}: {stats.gops:.3g} GOPS") for k in keys)
    annotations = {a.get_text(): a for a in ax.texts}
    offsets = []
    for label, stats in runs:
        note = annotations[label]
        assert note.xy == (stats.arithmetic_intensity, stats.gops)  # at its point
        dx, dy = note.xyann
        assert 0 < dx <= 10 and abs(dy) <= 20  # beside it, within a few points
        offsets.append(dy)
    assert len(set(offsets)) == 2  # two runs at one place: labels stacked, not on each other
    markers = {
        line.get_marker()
        for line in ax.lines
        if line.get_label().startswith(("1 thread", "default"))
    }
    assert len(markers) == 2
    _close(fig)


def test_the_timeline_draws_each_token_wait_from_taken_to_start():
    """Each hatched bar is an instruction's wait for its tokens: from the cycle after its
    module took it to the cycle it started (where its own bar begins)."""
    stats = _run(demo_gemm_program(TINY))
    waits = {(i.taken + 1, i.started) for i in stats.instructions if i.token_wait > 0}
    assert waits  # the demo's modules do wait for tokens
    fig = timeline_figure(stats)
    try:
        drawn = set()
        for collection in fig.axes[0].collections:
            if collection.get_hatch() != "//":
                continue
            for path in collection.get_paths():
                xs = path.vertices[:, 0]
                drawn.add((round(float(xs.min())), round(float(xs.max()))))
        assert drawn == waits
    finally:
        _close(fig)
