"""The cycle-level simulator: closed forms, stepped == event-driven, latency hiding, stats.

The closed forms are written here from the timing parameters and the microarchitecture the
model mirrors (fetch's first burst is accepted on cycle 2; an instruction's last beat passes
fetch's beat buffer and its command queue in two cycles each; a module takes one cycle to take
an instruction and starts it the next; a token pushed on one cycle is seen on the next), so a
change to the model's timing that the parameters do not explain fails them.
"""

from __future__ import annotations

import dataclasses
import itertools
import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from isa import (
    AXI_PAGE_BYTES,
    AccelConfig,
    AluInsn,
    AluOp,
    ConfigError,
    DramSegment,
    FinishInsn,
    GemmInsn,
    MemId,
    MemInsn,
    Opcode,
    Program,
    ProgramBuilder,
    Stage,
    TimingConfig,
    Uop,
)
from runtime.programs import RESNET18_C2
from simulator import CycleSimulator, FunctionalSimulator, time_run
from simulator.machine import Machine
from simulator.ports import TransferRows
from tests.conformance.cases import CASES
from tests.conformance.conv_cases import build_conv2d
from tests.conformance.random_programs import random_program
from tests.conformance.test_random_programs import UNUSUAL

DEFAULT = AccelConfig.preset("default")
ULTRA96 = AccelConfig.preset("ultra96")  # the default core on a 128-bit bus
latencies = st.integers(1, 40)


def _mem(opcode: Opcode, mem: MemId, elems: int, **fields) -> MemInsn:
    return MemInsn(
        opcode=opcode,
        memory_type=mem,
        sram_base=0,
        dram_base=fields.pop("dram_base", 0),
        y_size=1 if elems else 0,
        x_size=elems,
        x_stride=elems,
        **fields,
    )


def _run(cfg: AccelConfig, timing: TimingConfig, insns, uops=(), data_bytes: int = 0):
    program = Program(cfg, insns, uops, 0, [DramSegment("data", 0, bytes(data_bytes))])
    dram = np.zeros(program.dram_extent + 64, dtype=np.uint8)
    return CycleSimulator(cfg, timing).run(program, dram)


def _fetch_insn_beats(cfg: AccelConfig) -> int:
    return 16 // cfg.bus_bytes


# ---------------------------------------------------------------------- closed forms
@settings(max_examples=40)
@given(elems=st.integers(1, 1500), latency=latencies, cfg=st.sampled_from([DEFAULT, ULTRA96]))
def test_a_lone_load_of_n_bytes(elems, latency, cfg):
    """LOAD INP (push l2g), a compute no-op popping it, FINISH: one fetch burst."""
    timing = TimingConfig(read_latency=latency)
    insns = [
        _mem(Opcode.LOAD, MemId.INP, elems, push_next_dep=True),
        _mem(Opcode.LOAD, MemId.UOP, 0, pop_prev_dep=True),
        FinishInsn(),
    ]
    stats = _run(cfg, timing, insns, data_bytes=elems * cfg.inp_elem_bytes)
    b = _fetch_insn_beats(cfg)
    beats = elems * cfg.inp_elem_bytes // cfg.bus_bytes
    load = stats.instructions[0]
    # dispatched when its last beat leaves the beat buffer, taken from the queue two later
    assert load.dispatched == 2 + latency + b - 1 + 2
    assert load.started == load.dispatched + 3
    # its walker hands the row to the splitter, the burst is accepted, data flows a beat a cycle
    assert load.retired - load.started == 2 + latency + beats
    # the no-op starts when l2g is visible and retires the next cycle; FINISH is taken, starts,
    # and retires on the three cycles after that
    assert stats.cycles == load.retired + 5 == 2 * latency + b + 13 + beats


@settings(max_examples=40)
@given(
    uops=st.integers(3, 12),
    iter_out=st.integers(1, 6),
    iter_in=st.integers(1, 40),
    kind=st.sampled_from(["gemm", "alu imm", "alu vector"]),
    timing=st.builds(
        TimingConfig,
        sequencer_latency=st.integers(1, 4),
        step_stages=st.integers(0, 5),
        gemm_product_stages=st.integers(0, 3),
        gemm_ii=st.integers(1, 3),
        alu_ii_imm=st.integers(1, 3),
        alu_ii_vector=st.integers(1, 4),
    ),
    cfg=st.sampled_from([DEFAULT, AccelConfig.preset("tiny")]),
)
def test_a_lone_gemm_or_alu_of_n_micro_ops(uops, iter_out, iter_in, kind, timing, cfg):
    loop = {"uop_bgn": 0, "uop_end": uops, "iter_out": iter_out, "iter_in": iter_in}
    if kind == "gemm":
        compute, ii = GemmInsn(**loop), timing.gemm_ii
    else:
        imm = kind == "alu imm"
        compute = AluInsn(alu_opcode=AluOp.ADD, use_imm=imm, **loop)
        ii = timing.alu_ii_imm if imm else timing.alu_ii_vector
    micro_ops = [Uop(dst_idx=i, src_idx=uops + i) for i in range(uops)]  # rows never repeat
    insns = [_mem(Opcode.LOAD, MemId.UOP, uops), compute, FinishInsn()]
    stats = _run(cfg, timing, insns, micro_ops)
    steps = uops * iter_out * iter_in
    stages = timing.step_stages + timing.gemm_product_stages + int(math.log2(cfg.block_in))
    run = stats.instructions[1]
    assert run.retired - run.started == timing.sequencer_latency + ii * (steps - 1) + stages + 1
    assert stats.cycles == run.retired + 3  # FINISH: taken, started, retired


@settings(max_examples=40)
@given(
    elems=st.integers(1, 200),
    steps=st.integers(1, 400),
    stored=st.integers(1, 200),
    latency=latencies,
    timing=st.builds(
        TimingConfig,
        write_response_latency=st.integers(1, 9),
        step_stages=st.integers(0, 5),
        gemm_ii=st.integers(1, 2),
    ),
)
def test_a_load_compute_store_chain(elems, steps, stored, latency, timing):
    """LOAD -> l2g -> GEMM (a reset: it reads nothing) -> g2s -> STORE -> s2g -> no-op, FINISH
    on the 128-bit bus, where the five instructions are one fetch burst."""
    cfg, timing = ULTRA96, dataclasses.replace(timing, read_latency=latency)
    stored = min(stored, steps)  # the GEMM writes the rows the store reads
    out_base = elems * cfg.inp_elem_bytes // cfg.out_elem_bytes
    insns = [
        _mem(Opcode.LOAD, MemId.INP, elems, push_next_dep=True),
        GemmInsn(
            reset_reg=True,
            uop_bgn=0,
            uop_end=1,
            iter_out=1,
            iter_in=steps,
            dst_factor_in=1,
            pop_prev_dep=True,
            push_next_dep=True,
        ),
        _mem(
            Opcode.STORE,
            MemId.OUT,
            stored,
            dram_base=out_base,
            pop_prev_dep=True,
            push_prev_dep=True,
        ),
        _mem(Opcode.LOAD, MemId.UOP, 0, pop_next_dep=True),
        FinishInsn(),
    ]
    data = elems * cfg.inp_elem_bytes + stored * cfg.out_elem_bytes
    stats = _run(cfg, timing, insns, data_bytes=data)
    load, gemm, store, _, _ = stats.instructions
    stages = timing.step_stages + timing.gemm_product_stages + int(math.log2(cfg.block_in))
    gemm_cycles = timing.sequencer_latency + timing.gemm_ii * (steps - 1) + stages + 1
    # a store: the burst is accepted two cycles in, beats flow from the next cycle (one OUT row
    # per beat here), and it retires the cycle after the response
    store_cycles = stored + 3 + timing.write_response_latency
    assert load.retired == 2 * latency + 9 + elems
    assert (gemm.started, gemm.retired) == (load.retired + 1, load.retired + 1 + gemm_cycles)
    assert (store.started, store.retired) == (gemm.retired + 1, gemm.retired + 1 + store_cycles)
    assert stats.cycles == store.retired + 5
    assert stats.cycles == 2 * latency + elems + gemm_cycles + stored + 19 + (
        timing.write_response_latency
    )


# ---------------------------------------------------------------------- stepped == event-driven
def _both(cfg: AccelConfig, program: Program, timing: TimingConfig):
    result = FunctionalSimulator(cfg, detect_races=False).run(
        program, np.zeros(program.dram_extent, dtype=np.uint8)
    )
    return time_run(cfg, result, timing), time_run(cfg, result, timing, stepped=True)


@pytest.mark.parametrize(
    ("case", "preset"),
    [(c, p) for c in CASES for p in c.presets],
    ids=lambda x: getattr(x, "name", x),
)
def test_stepped_and_event_driven_agree_on_every_conformance_program(case, preset):
    cfg = AccelConfig.preset(preset)
    built = case.build(cfg, 0)
    timing = TimingConfig(read_latency=3)
    result = FunctionalSimulator(cfg, detect_races=False).run(built.program, built.dram.copy())
    event, stepped = time_run(cfg, result, timing), time_run(cfg, result, timing, stepped=True)
    assert event == stepped  # cycles, every instruction's cycles, activities, bursts


timings = st.builds(
    TimingConfig,
    read_latency=st.integers(1, 12),
    write_response_latency=st.integers(1, 6),
    max_burst_beats=st.sampled_from([1, 2, 3, 16, 256]),
    outstanding_reads=st.integers(1, 5),
    outstanding_writes=st.integers(1, 5),
    shared_read_port=st.booleans(),
    fetch_buffer_insns=st.integers(1, 6),
    sequencer_latency=st.integers(1, 3),
    step_stages=st.integers(0, 4),
    alu_ii_vector=st.integers(1, 3),
)


#: buses of 4 and 32 bytes: elements and instructions several beats wide, or several per beat
NARROW_BUS, WIDE_BUS = (AccelConfig.preset("tiny").replace(axi_width=w) for w in (32, 256))


@settings(max_examples=60)
@given(
    seed=st.integers(0, 2**32 - 1),
    cfg=st.sampled_from(
        [AccelConfig.preset("tiny"), DEFAULT, ULTRA96, NARROW_BUS, WIDE_BUS, *UNUSUAL]
    ),
    timing=timings,
)
def test_stepped_and_event_driven_agree_on_random_programs(seed, cfg, timing):
    event, stepped = _both(cfg, random_program(cfg, seed), timing)
    assert event == stepped


@settings(max_examples=40)
@given(
    seed=st.integers(0, 2**32 - 1),
    cfg=st.sampled_from([AccelConfig.preset("tiny"), DEFAULT, NARROW_BUS]),
    depth=st.integers(1, 4),
    timing=timings,
)
def test_fetch_streaming_in_bulk_agrees_with_stepped_on_random_programs(seed, cfg, depth, timing):
    """Fetch streams a burst's beats and dispatches in bulk only into command queues that
    hold an instruction and have room: short queues put that room's end inside the bursts."""
    cfg = cfg.replace(cmd_queue_depth=depth)
    event, stepped = _both(cfg, random_program(cfg, seed), timing)
    assert event == stepped


@pytest.mark.parametrize(("y_size", "x_size", "gap"), [(1, 8, 0), (1, 8, 1), (2, 4, 0), (2, 3, 1)])
@pytest.mark.parametrize("max_burst_beats", [1, 16])
def test_narrow_elements_gather_into_a_beat_while_the_store_waits_for_a_burst(
    y_size, x_size, gap, max_burst_beats
):
    """Four OUT elements share a 64-byte beat; with one write outstanding and a slow
    response the store's reader holds a row while no burst is open: elements keep joining the
    beat every cycle, so the event-driven scheduler may not skip that time."""
    cfg = DEFAULT.replace(axi_width=512)
    builder = ProgramBuilder(cfg)
    out = builder.alloc("out", MemId.OUT, y_size * (x_size + gap))
    builder.store_2d(out, sram=0, y_size=y_size, x_size=x_size, x_stride=x_size + gap)
    timing = TimingConfig(
        read_latency=1,
        write_response_latency=4,
        max_burst_beats=max_burst_beats,
        outstanding_writes=1,
    )
    event, stepped = _both(cfg, builder.finish(), timing)
    assert event == stepped


@pytest.mark.parametrize("name", ["padded_load_all", "acc_8bit_load", "blocked_gemm_vt1"])
def test_a_load_run_alone_is_bounded_by_the_other_units_alone(name):
    """``Machine.quiet(t, port, module)``, the cycles a read port and the LOAD it serves may
    run on their own, is the least of every other unit's quiet time: the port and its module
    do not bound their own run (their own events are what LoadsAlone runs through). Checked on
    every cycle of a run ticked cycle by cycle, for each read port and its module, against the
    units' own answers; the run ends on the event-driven scheduler's cycle."""
    cfg = AccelConfig.preset("tiny")
    built = next(c for c in CASES if c.name == name).build(cfg, 0)
    timing = TimingConfig(read_latency=20)
    result = FunctionalSimulator(cfg, detect_races=False).run(built.program, built.dram.copy())
    machine = Machine(cfg, timing, sorted(result.events, key=lambda e: e.index), False)
    machine.tick(0)
    t, differs = 1, 0
    while machine.finisher.finished_at is None:
        for engine, module in machine.reader_modules.items():
            port = engine.port
            others = [p.quiet(t) for p in machine.ports if p is not port]
            others += [m.quiet(t) for m in machine.modules if m is not module]
            others += [machine.fetch.quiet(t), *(q.quiet(t) for q in machine.queue_list)]
            assert machine.quiet(t, port, module) == min(others)
            differs += min(others) != min([*others, module.quiet(t)])
        machine.tick(t)
        t += 1
    assert differs  # the run has cycles where the module alone would bound itself
    assert machine.finisher.finished_at == time_run(cfg, result, timing).cycles


@settings(max_examples=40)
@given(
    cfg=st.sampled_from([AccelConfig.preset("tiny"), DEFAULT, WIDE_BUS]),
    mem=st.sampled_from([MemId.INP, MemId.WGT]),
    y_size=st.integers(1, 6),
    x_size=st.integers(1, 40),  # at most 240 rows: the tiny buffers hold 256
    gap=st.integers(0, 300),
    first=st.integers(0, 600),
    second=st.integers(0, 600),
    pages=st.integers(0, 2),
    timing=timings,
)
def test_loads_of_equal_shape_take_equal_cycles(
    cfg, mem, y_size, x_size, gap, first, second, pages, timing
):
    """TransferRows.shape names what the event-driven scheduler plans once and replays: two
    LOADs of equal shape, wherever they are, run alike (stepped, so no plan is involved). A
    LOAD moved by whole 4 KiB pages always has its shape."""
    elem_bytes = cfg.elem_bytes(mem)
    page_elems = max(1, AXI_PAGE_BYTES // elem_bytes)
    runs = []
    for base in (first, second, first + pages * page_elems):
        rows = TransferRows(cfg, base * elem_bytes, elem_bytes, y_size, x_size, x_size + gap)
        load = MemInsn(
            opcode=Opcode.LOAD,
            memory_type=mem,
            sram_base=0,
            dram_base=base,
            y_size=y_size,
            x_size=x_size,
            x_stride=x_size + gap,
            push_next_dep=True,
        )
        insns = [load, _mem(Opcode.LOAD, MemId.UOP, 0, pop_prev_dep=True), FinishInsn()]
        end = (base + (y_size - 1) * (x_size + gap) + x_size) * elem_bytes
        program = Program(cfg, insns, (), 0, [DramSegment("data", 0, bytes(end))])
        result = FunctionalSimulator(cfg, detect_races=False).run(
            program, np.zeros(end, dtype=np.uint8)
        )
        stats = time_run(cfg, result, timing, stepped=True)
        start = stats.instructions[0].started
        bursts = [
            (b.beats, b.accepted - start, b.first - start, b.last - start)
            for b in stats.bursts
            if b.unit == "load"
        ]
        runs.append((rows.shape(), stats.instructions[0].duration, bursts))
    assert runs[2] == runs[0]
    if runs[1][0] == runs[0][0]:
        assert runs[1] == runs[0]


# ---------------------------------------------------------------------- what the stats show
def _timed(case_name: str, cfg: AccelConfig, timing: TimingConfig | None = None):
    built = next(c for c in CASES if c.name == case_name).build(cfg, 0)
    return CycleSimulator(cfg, timing).run(built.program, built.dram.copy())


def test_two_virtual_threads_hide_latency():
    tiny = AccelConfig.preset("tiny")
    one, two = (_timed(f"blocked_gemm_vt{n}", tiny) for n in (1, 2))
    assert two.gemm_utilisation > 1.2 * one.gemm_utilisation
    utilisation = []
    for threads in (1, 2):
        built = build_conv2d(DEFAULT, 0, dataclasses.replace(RESNET18_C2, threads=threads))
        stats = CycleSimulator(DEFAULT, detect_races=False).run(built.program, built.dram.copy())
        utilisation.append(stats.gemm_utilisation)
    assert utilisation[1] > utilisation[0]


@pytest.mark.parametrize("name", ["conv2d_small", "blocked_gemm_vt2", "padded_load_all"])
def test_stats_are_consistent(name):
    cfg = AccelConfig.preset("tiny")
    stats = _timed(name, cfg)
    for unit in stats.units.values():
        assert unit.total == stats.cycles
    by_module = {stage: [] for stage in Stage}
    for insn in stats.instructions:
        assert insn.dispatched < insn.taken < insn.started <= insn.retired <= stats.cycles
        assert insn.token_wait >= 0 and (insn.token_wait == 0 or insn.pops)
        by_module[insn.module].append(insn)
    for insns in by_module.values():  # each module runs its instructions in order, one at a time
        for before, after in itertools.pairwise(insns):
            assert before.retired < after.taken
    assert stats.instructions[-1].retired == stats.cycles  # FINISH
    reads = [b for b in stats.bursts if b.port == "read"]
    writes = [b for b in stats.bursts if b.port == "write"]
    assert sum(b.beats for b in reads) == stats.read_beats
    assert sum(b.beats for b in writes) == stats.write_beats
    assert stats.write_beats * cfg.bus_bytes >= stats.counters.out_store_nbytes
    fetched = [b.beats for b in reads if b.unit == "fetch"]
    assert sum(fetched) * cfg.bus_bytes == 16 * len(stats.instructions)
    for port in (reads, writes):  # one data beat per cycle on each port
        spans = sorted((b.first, b.last) for b in port)
        assert all(a[1] < b[0] for a, b in itertools.pairwise(spans))
    assert stats.gemm_utilisation == stats.counters.gemm_counter / stats.cycles
    assert stats.gops == pytest.approx(
        2 * cfg.macs_per_cycle * stats.counters.gemm_counter * cfg.clock_mhz / 1e3 / stats.cycles
    )
    assert stats.bytes_moved["inp"] == stats.counters.inp_load_nbytes
    table = stats.table()
    assert f"{stats.cycles:,}" in table and "GEMM utilisation" in table


def test_more_latency_costs_cycles_and_separate_ports_save_them():
    cfg = AccelConfig.preset("tiny")
    cycles = [_timed("conv2d_small", cfg, TimingConfig(read_latency=n)).cycles for n in (1, 8, 30)]
    assert cycles == sorted(cycles) and len(set(cycles)) == 3
    shared = _timed("blocked_gemm_vt2", cfg, TimingConfig(read_latency=20))
    separate = _timed(
        "blocked_gemm_vt2", cfg, TimingConfig(read_latency=20, shared_read_port=False)
    )
    assert separate.cycles < shared.cycles


def test_dram_and_counters_are_the_functional_simulators():
    cfg = AccelConfig.preset("tiny")
    built = next(c for c in CASES if c.name == "conv2d_small").build(cfg, 0)
    expected, dram = built.dram.copy(), built.dram.copy()
    result = FunctionalSimulator(cfg).run(built.program, expected)
    stats = CycleSimulator(cfg).run(built.program, dram)
    np.testing.assert_array_equal(dram, expected)
    assert stats.counters == result.counters


# ---------------------------------------------------------------------- the timing parameters
@pytest.mark.parametrize(
    ("field", "value"),
    [
        ("read_latency", 0),
        ("outstanding_reads", 0),
        ("max_burst_beats", 257),
        ("gemm_ii", -1),
        ("shared_read_port", 1),
        ("step_stages", 1.5),
    ],
)
def test_timing_config_rejects_bad_values(field, value):
    with pytest.raises(ConfigError, match=field):
        TimingConfig(**{field: value})


def test_timing_config_replace_and_derived_values():
    timing = TimingConfig().replace(read_latency=9)
    assert timing.read_latency == 9 and timing == TimingConfig(read_latency=9)
    with pytest.raises(ConfigError, match="bogus"):
        timing.replace(bogus=1)
    assert timing.fetch_burst_beats(DEFAULT) == 8  # 4 instructions of 2 beats
    assert timing.fetch_burst_beats(AccelConfig(axi_width=1024)) == 2
    assert timing.gemm_latency(DEFAULT) == 1 + 4  # product register + log2(16) adder levels
    assert timing.step_ii(gemm=False, use_imm=False) == 2
