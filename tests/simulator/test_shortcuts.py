"""Shortcuts of the functional simulator's GEMM/ALU path against the general computations: the
ALU with an immediate operand (one value for every lane, the common case) computes what the
lane-by-lane path computes with that value in every lane, for every operation, every
configuration's widths and the extreme values of both operands; the read-after-write window
is skipped only where the search would find nothing; events made without their classes'
``__init__`` (:meth:`~simulator.Event.of`) are the events ``__init__`` makes."""

import dataclasses

import numpy as np
import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from isa import (
    AccelConfig,
    AluInsn,
    AluOp,
    GemmInsn,
    Operand,
    operand_buffers,
    step_indices,
    window_violation,
)
from simulator import FunctionalSimulator
from simulator.loop_plans import _window_free
from simulator.state import alu_apply
from tests.conformance.cases import CASES

_CONFIGS = [AccelConfig.preset(name) for name in AccelConfig.preset_names()]


@st.composite
def _cases(draw):
    cfg = draw(st.sampled_from(_CONFIGS))
    low, high = -(1 << (cfg.acc_width - 1)), (1 << (cfg.acc_width - 1)) - 1
    values = st.one_of(st.sampled_from([low, high, 0, -1, 1]), st.integers(low, high))
    lanes = draw(st.lists(values, min_size=1, max_size=24))
    return cfg, draw(st.sampled_from(list(AluOp))), np.array(lanes, dtype=np.int64), draw(values)


@given(_cases())
def test_an_immediate_matches_the_same_operand_in_every_lane(case):
    cfg, op, lanes, immediate = case
    expected = alu_apply(cfg, op, lanes, np.full(lanes.shape, immediate, dtype=np.int64))
    result = alu_apply(cfg, op, lanes, immediate)
    assert result.dtype == np.int64
    np.testing.assert_array_equal(result, expected)


def test_every_shift_amount_of_the_field_is_covered():
    """SHR reads the low ``shr_arg_bits`` of the operand as a signed amount: both directions,
    the full left shift and wrapped amounts agree with the lane-by-lane path."""
    lanes = np.array([-(1 << 31), -5, -1, 0, 1, 7, (1 << 31) - 1], dtype=np.int64)
    for cfg in _CONFIGS:
        for amount in range(-(1 << cfg.shr_arg_bits), 1 << cfg.shr_arg_bits):
            wide = lanes.clip(-(1 << (cfg.acc_width - 1)), (1 << (cfg.acc_width - 1)) - 1)
            expected = alu_apply(cfg, AluOp.SHR, wide, np.full(wide.shape, amount))
            np.testing.assert_array_equal(alu_apply(cfg, AluOp.SHR, wide, amount), expected)


@st.composite
def _loops(draw):
    """A small GEMM or ALU instruction and its micro-ops' fields, by operand."""
    factors = st.integers(0, 3)
    common = {
        "uop_bgn": 0,
        "uop_end": draw(st.integers(1, 3)),
        "iter_out": draw(st.integers(1, 4)),
        "iter_in": draw(st.integers(1, 4)),
        "dst_factor_out": draw(factors),
        "dst_factor_in": draw(factors),
        "src_factor_out": draw(factors),
        "src_factor_in": draw(factors),
        "reset_reg": draw(st.booleans()),
    }
    if draw(st.booleans()):
        insn = GemmInsn(**common, wgt_factor_out=draw(factors), wgt_factor_in=draw(factors))
    else:
        op, use_imm = draw(st.sampled_from(list(AluOp))), draw(st.booleans())
        insn = AluInsn(**common, alu_opcode=op, use_imm=use_imm)
    fields = st.lists(st.integers(0, 6), min_size=common["uop_end"], max_size=common["uop_end"])
    return insn, {op: np.array(draw(fields), dtype=np.int64) for op in Operand}


_SOURCE_READS_A_WRITE = (  # step 1 reads row 0 (src), which step 0 writes (dst)
    AluInsn(uop_bgn=0, uop_end=2, iter_out=1, iter_in=1, alu_opcode=AluOp.ADD),
    {Operand.DST: np.array([0, 1]), Operand.SRC: np.array([0, 0]), Operand.WGT: np.zeros(2)},
)


@settings(max_examples=400)
@example(_SOURCE_READS_A_WRITE, 2)
@given(_loops(), st.integers(1, 6))
def test_the_window_shortcut_never_skips_a_violation(loop, window):
    """The functional simulator skips the read-after-write search where no step can read a
    row another step writes (:func:`simulator.loop_plans._window_free`): wherever it does, the
    search finds nothing."""
    insn, bases = loop
    steps = [{op: step_indices(insn, bases[op], op) for op in operand_buffers(insn)}]
    written = np.unique(steps[0][Operand.DST])
    if _window_free(insn, steps, written):
        assert window_violation(insn, bases, window) is None


@pytest.mark.parametrize("name", ["padded_load_all", "alu_add_vec", "blocked_gemm_vt2"])
def test_events_have_their_classes_fields_and_equal_those_init_makes(name):
    cfg = AccelConfig.preset("tiny")
    built = next(c for c in CASES if c.name == name).build(cfg, 0)
    events = FunctionalSimulator(cfg).run(built.program, built.dram.copy()).events
    assert {type(e).__name__ for e in events} >= {"LoadEvent", "StoreEvent", "FinishEvent"}
    for event in events:
        assert set(vars(event)) == {f.name for f in dataclasses.fields(event)}
        made = type(event)(**vars(event))
        assert made == event and hash(made) == hash(event) and repr(made) == repr(event)
