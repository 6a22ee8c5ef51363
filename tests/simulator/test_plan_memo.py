"""Plans shared by every run in the process (:mod:`simulator.memo`): the byte-bounded memo that
holds them behaves as a least-recently-used cache (against a plain reference model); a GEMM/ALU
plan is shared only between instructions and configurations it holds for (its checks run again
for another configuration; its key covers every field but the dependency flags and where the
micro-ops are) and cannot be changed; a transfer's plan only between runs with the same timing
parameters; a program's instruction tuple is checked once per configuration, and a bad one is
refused every time; and a run that finds its plans made gives what a run that makes them gives,
values, events and timing."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from isa import (
    AccelConfig,
    AluInsn,
    AluOp,
    FinishInsn,
    GemmInsn,
    TimingConfig,
)
from simulator import CycleSimulator, FunctionalSimulator, SimulationError, clear_memos
from simulator.loop_plans import FLAGS, LOOP_PLANS, plan_key
from simulator.memo import Memo
from simulator.transfer_plans import TRANSFER_PLANS
from tests.conformance.cases import CASES
from tests.simulator.test_errors import _UOP_LOAD

TINY = AccelConfig.preset("tiny")
_OPERATIONS = st.lists(
    st.one_of(
        st.tuples(st.just("put"), st.integers(0, 7), st.integers(0, 12)),
        st.tuples(st.just("get"), st.integers(0, 7), st.just(0)),
    ),
    max_size=40,
)


@given(st.integers(0, 24), _OPERATIONS)
def test_the_memo_keeps_the_most_recently_used_values_within_its_budget(budget, operations):
    memo: Memo[str] = Memo(budget)
    model: list[tuple[int, str, int]] = []  # (key, value, bytes), least recently used first
    for step, (action, key, nbytes) in enumerate(operations):
        held = {k: (v, n) for k, v, n in model}
        if action == "get":
            assert memo.get(key) == held.get(key, (None,))[0]
            if key in held:
                model = [e for e in model if e[0] != key] + [(key, *held[key])]
            continue
        memo.put(key, f"value {step}", nbytes)
        if nbytes <= budget:
            model = [e for e in model if e[0] != key] + [(key, f"value {step}", nbytes)]
            while sum(n for _, _, n in model) > budget:
                model.pop(0)
        assert memo.held == sum(n for _, _, n in model) <= budget
        assert len(memo) == len(model)
    for key, value, _ in model:
        assert memo.get(key) == value


def test_a_memo_budget_is_bytes():
    with pytest.raises(ValueError, match="budget"):
        Memo(-1)


def test_a_plan_made_for_one_configuration_is_checked_again_for_another():
    small = dataclasses.replace(TINY, acc_buff_size=TINY.acc_buff_size // 2)
    rows = TINY.acc_buff_depth
    # the steps reach accumulator row rows - 2: inside TINY's buffer, beyond the smaller one's
    gemm = GemmInsn(uop_bgn=0, uop_end=1, iter_out=3, iter_in=1, dst_factor_out=rows // 2 - 1)
    program = [_UOP_LOAD, gemm, FinishInsn()]
    FunctionalSimulator(TINY).run(program, np.zeros(4096, dtype=np.uint8))
    with pytest.raises(SimulationError, match=f"reaches ACC row {rows - 2} through dst_idx"):
        FunctionalSimulator(small).run(program, np.zeros(4096, dtype=np.uint8))


def _changed(value: object) -> object:
    if isinstance(value, bool):
        return not value
    if isinstance(value, AluOp):
        return next(op for op in AluOp if op is not value)
    assert isinstance(value, int)
    return value + 1


@pytest.mark.parametrize(
    "insn",
    [
        GemmInsn(uop_bgn=2, uop_end=5, iter_out=2, iter_in=3),
        AluInsn(uop_bgn=2, uop_end=5, iter_out=2, iter_in=3, alu_opcode=AluOp.SHR, imm=3),
    ],
    ids=["gemm", "alu"],
)
def test_a_plan_key_covers_every_field_but_the_flags_and_where_the_micro_ops_are(insn):
    key = plan_key(insn)
    assert plan_key(dataclasses.replace(insn, uop_bgn=7, uop_end=10)) == key
    for field in dataclasses.fields(insn):
        if field.name in ("uop_bgn", "uop_end"):
            continue
        changed = dataclasses.replace(insn, **{field.name: _changed(getattr(insn, field.name))})
        assert (plan_key(changed) == key) == (field.name in FLAGS), field.name


def _case_runs(case, timing: TimingConfig | None = None):
    built = case.build(TINY, 0)
    dram = built.dram.copy()
    stats = CycleSimulator(TINY, timing).run(built.program, dram)
    events = FunctionalSimulator(TINY).run(built.program, built.dram.copy()).events
    return dram, events, stats


_CASES = ["alu_shr_vec", "blocked_gemm_vt2", "conv2d_small", "compiled_conv3x3_rows_vt2"]


@pytest.mark.parametrize("name", _CASES)
def test_a_run_from_shared_plans_equals_a_run_that_makes_them(name):
    case = next(c for c in CASES if c.name == name)
    clear_memos()
    cold = _case_runs(case)
    assert len(LOOP_PLANS) > 0 and len(TRANSFER_PLANS) > 0
    warm = _case_runs(case)
    assert np.array_equal(warm[0], cold[0])
    assert warm[1:] == cold[1:]


def test_transfer_plans_are_shared_only_under_the_same_timing_parameters():
    case = next(c for c in CASES if c.name == "blocked_gemm_vt2")
    slow = TimingConfig(read_latency=9, write_response_latency=7)
    clear_memos()
    _case_runs(case)  # plans under the default timing
    after_default = _case_runs(case, slow)[2]
    clear_memos()
    alone = _case_runs(case, slow)[2]
    assert after_default == alone
    assert alone.cycles != _case_runs(case)[2].cycles


def test_shared_plans_cannot_be_changed():
    clear_memos()
    _case_runs(next(c for c in CASES if c.name == "blocked_gemm_vt2"))
    plan = next(iter(LOOP_PLANS._values.values()))[0]
    arrays = [a for a in plan.touched.values() if isinstance(a, np.ndarray)]
    arrays += [a for a in (plan.reached or {}).values()]
    assert arrays
    for array in arrays:
        with pytest.raises(ValueError, match="read-only"):
            array[...] = 0


def test_a_program_is_checked_once_and_a_bad_one_every_time(monkeypatch):
    checks = []
    validate = FunctionalSimulator._validate

    def counted(self, instructions):
        checks.append(len(instructions))
        validate(self, instructions)

    monkeypatch.setattr(FunctionalSimulator, "_validate", counted)
    built = next(c for c in CASES if c.name == "blocked_gemm_vt2").build(TINY, 0)
    clear_memos()
    for _ in range(3):
        FunctionalSimulator(TINY).run(built.program, built.dram.copy())
    assert len(checks) == 1
    copy = dataclasses.replace(built.program, instructions=list(built.program.instructions))
    FunctionalSimulator(TINY).run(copy, built.dram.copy())  # equal, but another tuple
    assert len(checks) == 2
    last = len(built.program.instructions) - 1
    bad = dataclasses.replace(
        built.program, instructions=[*built.program.instructions[:last], FinishInsn(), FinishInsn()]
    )
    for _ in range(2):
        with pytest.raises(SimulationError, match="FINISH must be the last"):
            FunctionalSimulator(TINY).run(bad, built.dram.copy())
