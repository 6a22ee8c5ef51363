"""``runtime.open_device``: the fsim, sim and rtl devices run the same programs to the same bytes,
report what their level measures, start every job afresh, and refuse or report bad input with
typed errors (a wrong configuration, a program that hangs, an access outside DRAM)."""

from __future__ import annotations

import dataclasses
import threading

import numpy as np
import pytest

from hw.sim import simulate
from isa import (
    AccelConfig,
    AluOp,
    FinishInsn,
    Kernel,
    Loop,
    MemId,
    MemInsn,
    Opcode,
    ProgramBuilder,
    Stage,
    TimingConfig,
    Uop,
)
from runtime import DeviceError, DeviceKind, open_device
from runtime.devices import DEVICES, RtlRunError, rtl, rtl_build
from simulator import CycleSimulator, FunctionalSimulator
from tests.conformance.cases import CASES
from tests.conformance.runners import rtl_device

TINY = AccelConfig.preset("tiny")
_CASES = {case.name: case for case in CASES}


def scale_program(cfg: AccelConfig, factor: int = 3):
    """The README's example: 8 accumulator rows times ``factor``, stored to OUT."""
    b = ProgramBuilder(cfg)
    lanes = cfg.batch * cfg.block_out
    acc = b.alloc("acc", MemId.ACC, 8, np.arange(8 * lanes, dtype="<i4"))
    out = b.alloc("out", MemId.OUT, 8)
    b.load_2d(acc, sram=0, y_size=1, x_size=8)
    rows = Kernel((Uop(dst_idx=0, src_idx=0),), (Loop(8, dst_factor=1, src_factor=1),))
    b.alu(rows, AluOp.MUL, imm=factor)
    b.dep_push(Stage.COMPUTE, Stage.STORE)
    b.dep_pop(Stage.COMPUTE, Stage.STORE)
    b.store_2d(out, sram=0, y_size=1, x_size=8)
    return b.finish(), out


def store_only_program(cfg: AccelConfig):
    """Stores OUT rows 0..7 without computing them: zeros on a freshly opened device."""
    b = ProgramBuilder(cfg)
    out = b.alloc("out", MemId.OUT, 8, np.full(8 * cfg.out_elem_bytes, 0x5A, dtype=np.uint8))
    b.store_2d(out, sram=0, y_size=1, x_size=8)
    return b.finish(), out


def with_insn(program, opcode: Opcode, **fields):
    """``program`` with its first ``opcode`` memory instruction changed."""
    insns = list(program.instructions)
    index = next(i for i, insn in enumerate(insns) if getattr(insn, "opcode", None) is opcode)
    insns[index] = dataclasses.replace(insns[index], **fields)
    return dataclasses.replace(program, instructions=tuple(insns))


# ---------------------------------------------------------------------- open_device
def test_open_device_knows_its_kinds_and_refuses_others():
    assert set(DEVICES) == set(DeviceKind)
    assert open_device("fsim", TINY).kind is DeviceKind.FSIM
    with pytest.raises(
        DeviceError, match="unknown device kind 'gpu'; choose one of fsim, sim, rtl"
    ):
        open_device("gpu", TINY)
    with pytest.raises(DeviceError, match="cfg must be an isa.AccelConfig"):
        open_device("fsim", "tiny")
    with pytest.raises(DeviceError, match="device fsim: .*unexpected keyword argument 'speed'"):
        open_device("fsim", TINY, speed=2)
    with pytest.raises(DeviceError, match="ready_probability 0 must be in"):
        open_device("rtl", TINY, ready_probability=0)


def test_fsim_device_reports_the_simulators_counters():
    program, out = scale_program(TINY)
    device = open_device(DeviceKind.FSIM, TINY)
    dram = np.zeros(program.dram_extent, dtype=np.uint8)
    stats = device.run(program, dram)
    assert dram[out.address : out.end].view(np.int8).tolist() == [3 * i for i in range(32)]
    reference = FunctionalSimulator(TINY).run(program, np.zeros_like(dram))
    assert stats.counters == reference.counters
    assert stats.cycles is None and stats.cycles_per_second is None
    with pytest.raises(DeviceError, match="dram must be a 1-D numpy array of uint8, not an array"):
        device.run(program, np.zeros(4, dtype=np.int32))


def test_sim_device_gives_the_functional_bytes_and_the_cycle_models_stats():
    program, out = scale_program(TINY)
    timing = TimingConfig(read_latency=5)
    device = open_device("sim", TINY, timing=timing)
    dram = np.zeros(program.dram_extent, dtype=np.uint8)
    stats = device.run(program, dram)
    assert dram[out.address : out.end].view(np.int8).tolist() == [3 * i for i in range(32)]
    expected = CycleSimulator(TINY, timing).run(program, np.zeros_like(dram))
    assert (stats.cycles, stats.read_beats, stats.write_beats) == (
        expected.cycles,
        expected.read_beats,
        expected.write_beats,
    )
    assert stats.counters == expected.counters
    assert device.last_stats.cycles == stats.cycles
    slower = open_device("sim", TINY, timing=TimingConfig(read_latency=20)).run(
        program, np.zeros_like(dram)
    )
    assert slower.cycles > stats.cycles
    with pytest.raises(DeviceError, match="device sim: .*unexpected keyword argument"):
        open_device("sim", TINY, latency=3)


# ---------------------------------------------------------------------- rtl
@pytest.fixture(scope="module")
def device():
    return rtl_device(TINY, max_cycles=5_000)


def test_rtl_run_and_run_many_give_the_functional_simulators_bytes(device):
    names = ("gemm", "blocked_gemm_vt2", "acc_8bit_padded_load")
    builts = [_CASES[name].build(TINY, 2) for name in names]
    drams = [built.dram.copy() for built in builts]
    stats = device.run_many([(b.program, d) for b, d in zip(builts, drams, strict=True)])
    single = builts[0].dram.copy()
    alone = device.run(builts[0].program, single)
    np.testing.assert_array_equal(single, drams[0])
    assert alone.cycles == stats[0].cycles  # each job starts from reset: the same cycles
    for built, dram, stat in zip(builts, drams, stats, strict=True):
        built.check(dram)
        expected = built.dram.copy()
        FunctionalSimulator(TINY).run(built.program, expected)
        np.testing.assert_array_equal(dram, expected)
        assert stat.kind is DeviceKind.RTL
        assert 0 < stat.read_beats <= stat.cycles and 0 < stat.write_beats <= stat.cycles
        if built is not builts[1]:  # (the Amaranth simulation of the blocked GEMM is slow)
            # The bus carries the same beats as under the Amaranth simulation of the core.
            reference = simulate(TINY, built.program, built.dram.copy())
            beats = (reference.read_beats, reference.write_beats)
            assert (stat.read_beats, stat.write_beats) == beats
    assert device.run_many([]) == []


def test_rtl_jobs_start_with_zeroed_buffers(device):
    """A job must not see what the job before it left in SRAM (SEMANTICS 1)."""
    scaled, _ = scale_program(TINY)
    stored, out = store_only_program(TINY)
    drams = [np.zeros(p.dram_extent, dtype=np.uint8) for p in (scaled, stored)]
    device.run_many([(scaled, drams[0]), (stored, drams[1])])
    assert not drams[1][out.address : out.end].any()


def test_rtl_refuses_programs_it_cannot_run(device):
    program, _ = scale_program(TINY)
    dram = np.zeros(program.dram_extent, dtype=np.uint8)
    other, _ = scale_program(AccelConfig.preset("default"))
    with pytest.raises(DeviceError, match="job 1: program was built for 1x16"):
        device.run_many([(program, dram), (other, dram)])
    unfinished = dataclasses.replace(program, instructions=program.instructions[:-1])
    with pytest.raises(DeviceError, match="job 0: the program must end with FINISH"):
        device.run(unfinished, dram)
    with pytest.raises(DeviceError, match="job 0: DRAM of 4 bytes is too small"):
        device.run(program, np.zeros(4, dtype=np.uint8))


def test_rtl_reports_accesses_outside_dram_and_keeps_the_other_jobs(device):
    program, out = scale_program(TINY)
    far = 1 << 20  # an element far beyond DRAM and the instruction page
    bad_read = with_insn(program, Opcode.LOAD, dram_base=far)
    bad_write = with_insn(program, Opcode.STORE, dram_base=far)
    drams = [np.zeros(program.dram_extent, dtype=np.uint8) for _ in range(3)]
    jobs = [(bad_read, drams[0]), (program, drams[1]), (bad_write, drams[2])]
    with pytest.raises(RtlRunError, match="program 0 of the batch failed.*and 1 more") as caught:
        device.run_many(jobs)
    failures = caught.value.failures
    assert set(failures) == {0, 2}
    assert "READ_RESPONSE" in failures[0] and "outside the memory image" in failures[0]
    assert "WRITE_RESPONSE" in failures[2] and "outside DRAM" in failures[2]
    assert caught.value.stats[1].cycles > 0
    assert drams[1][out.address : out.end].view(np.int8).tolist() == [3 * i for i in range(32)]


def test_rtl_reports_a_program_that_never_finishes_with_the_debug_registers(device):
    wait = MemInsn(
        opcode=Opcode.LOAD,
        memory_type=MemId.UOP,
        sram_base=0,
        dram_base=0,
        y_size=0,
        x_size=0,
        x_stride=0,
        pop_prev_dep=True,  # waits for a token load never pushes
    )
    program, _ = scale_program(TINY)
    hung = dataclasses.replace(program, instructions=(wait, FinishInsn()))
    dram = np.zeros(program.dram_extent, dtype=np.uint8)
    with pytest.raises(RtlRunError, match="did not finish within 5000 cycles") as caught:
        device.run(hung, dram)
    message = str(caught.value)
    assert "STATUS=0x1" in message  # busy, not done
    assert "L2G=0x0" in message and "MODULES=" in message


def test_rtl_refuses_hardware_built_for_another_configuration(device, monkeypatch):
    """What a board driver checks first: the CONFIG_ID register."""
    monkeypatch.setattr(rtl, "config_id", lambda cfg: 0x12345678)
    program, _ = scale_program(TINY)
    with pytest.raises(RtlRunError, match="built for configuration id .*, not 0x12345678"):
        device.run(program, np.zeros(program.dram_extent, dtype=np.uint8))


def test_build_cache_builds_once_under_concurrency(tmp_path, monkeypatch):
    """Workers opening the same configuration at once share one build; a reopened cache is
    reused; a build that did not finish is redone."""
    builds = []

    def fake_verilate(verilog, build_dir):
        builds.append(build_dir)
        build_dir.mkdir(exist_ok=True)
        threading.Event().wait(0.2)  # long enough for the other thread to reach the lock

    monkeypatch.setattr(rtl_build, "_verilate", fake_verilate)
    monkeypatch.setattr(rtl_build, "_verilog", lambda cfg, cache: _fake_verilog(cache))
    results = []
    threads = [
        threading.Thread(target=lambda: results.append(rtl_build.build_model(TINY, tmp_path)))
        for _ in range(2)
    ]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert len(builds) == 1 and results[0] == results[1] == builds[0]
    assert rtl_build.build_model(TINY, tmp_path) == builds[0] and len(builds) == 1
    (builds[0] / ".complete").unlink()  # as if the build had been interrupted
    rtl_build.build_model(TINY, tmp_path)
    assert len(builds) == 2


def _fake_verilog(cache):
    path = cache / "fake.v"
    path.write_text("module vtaforge_axi; endmodule\n")
    return path
