"""The step sequence and the accumulator window rule, against a brute-force reading of
SEMANTICS sections 5 and 6."""

from __future__ import annotations

from unittest import mock

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

import isa.steps
from isa import AluInsn, AluOp, GemmInsn, Operand, max_index, step_indices, window_violation


@st.composite
def loop_instructions(draw):
    kind = draw(st.sampled_from(["gemm", "gemm-reset", "alu", "alu-imm", "alu-reset"]))
    n = draw(st.integers(1, 4))
    loops = {
        "iter_out": draw(st.integers(1, 5)),
        "iter_in": draw(st.integers(1, 5)),
        "dst_factor_out": draw(st.integers(0, 3)),
        "dst_factor_in": draw(st.integers(0, 3)),
        "src_factor_out": draw(st.integers(0, 3)),
        "src_factor_in": draw(st.integers(0, 3)),
    }
    common = {"uop_bgn": 0, "uop_end": n, "reset_reg": kind.endswith("reset"), **loops}
    if kind.startswith("gemm"):
        insn = GemmInsn(wgt_factor_out=draw(st.integers(0, 2)), **common)
    else:
        insn = AluInsn(alu_opcode=AluOp.ADD, use_imm=kind == "alu-imm", **common)
    fields = st.lists(st.integers(0, 6), min_size=n, max_size=n).map(np.array)
    uops = {op: draw(fields) for op in Operand}
    return insn, uops


def _brute_steps(insn, uops):
    wgt = (getattr(insn, "wgt_factor_out", 0), getattr(insn, "wgt_factor_in", 0))
    return [
        (
            uops[Operand.DST][u] + i0 * insn.dst_factor_out + i1 * insn.dst_factor_in,
            uops[Operand.SRC][u] + i0 * insn.src_factor_out + i1 * insn.src_factor_in,
            uops[Operand.WGT][u] + i0 * wgt[0] + i1 * wgt[1],
        )
        for i0 in range(insn.iter_out)
        for i1 in range(insn.iter_in)
        for u in range(insn.uop_end - insn.uop_bgn)
    ]


@given(loop_instructions())
def test_steps_and_max_index_follow_the_loop_nest(case):
    insn, uops = case
    brute = _brute_steps(insn, uops)
    for column, operand in enumerate(Operand):
        if operand is Operand.WGT and isinstance(insn, AluInsn):
            continue  # the ALU has no weight operand
        got = step_indices(insn, uops[operand], operand).tolist()
        assert got == [step[column] for step in brute]
        assert max_index(insn, uops[operand], operand) == max(step[column] for step in brute)


@given(loop_instructions())
def test_window_check_finds_the_first_violation_of_the_whole_loop(case):
    insn, uops = case
    brute = _brute_steps(insn, uops)
    reads_src = isinstance(insn, AluInsn) and not (insn.use_imm or insn.reset_reg)
    reads_dst = not insn.reset_reg
    expected = None
    for k, (d, s, _) in enumerate(brute):
        recent = [brute[k - j][0] for j in (1, 2) if k - j >= 0]
        if (reads_dst and d in recent) or (reads_src and s in recent):
            expected = k
            break
    found = window_violation(insn, uops, 2)
    assert (found.step if found else None) == expected
    with mock.patch.object(isa.steps, "_SCAN_STEPS", 1):  # one iteration per scanned run
        found = window_violation(insn, uops, 2)
    assert (found.step if found else None) == expected


@pytest.mark.parametrize("kind", ["gemm", "alu", "alu-imm"])
@pytest.mark.parametrize(("n_uops", "iter_out", "iter_in"), [(0, 3, 4), (2, 0, 4), (2, 3, 0)])
def test_an_instruction_without_steps_breaks_no_window(kind, n_uops, iter_out, iter_in):
    """No micro-op or an empty loop: the instruction has no step (the brute-force reading has
    none), so none reads a row another writes, whichever operands it reads."""
    loops = {"uop_bgn": 0, "uop_end": n_uops, "iter_out": iter_out, "iter_in": iter_in}
    factors = {"dst_factor_out": 1, "dst_factor_in": 0, "src_factor_out": 0, "src_factor_in": 1}
    if kind == "gemm":
        insn = GemmInsn(**loops, **factors)
    else:
        insn = AluInsn(alu_opcode=AluOp.ADD, use_imm=kind == "alu-imm", **loops, **factors)
    uops = {op: np.zeros(n_uops, dtype=np.int64) for op in Operand}
    assert _brute_steps(insn, uops) == []
    assert window_violation(insn, uops, 2) is None
