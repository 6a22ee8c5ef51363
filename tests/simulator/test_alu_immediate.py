"""The ALU with an immediate operand (one value for every lane, the common case) computes what
the lane-by-lane path computes with that value in every lane, for every operation, every
configuration's widths and the extreme values of both operands."""

import numpy as np
from hypothesis import given
from hypothesis import strategies as st

from isa import AccelConfig, AluOp
from simulator.state import alu_apply

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
