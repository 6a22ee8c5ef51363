"""The ALU's MUL and SHR with an accumulator row as the operand (the per-channel fixed-point
requantisation's multiply and shift): lowered to one vector step each and bit-exact on fsim
against numpy's own arithmetic, for operand rows over the whole int32 range (MUL reads the low
8 bits, which is what the cast to int8 says) and every shift 0..31."""

from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from compiler.accel.stmts import ComputeStep
from isa import AluOp
from tests.compiler.accel.helpers import alu_case, env_of, with_loops

TINY = env_of("tiny")


def _steps(case) -> list[tuple]:
    _, after = case.around("lower_alu")
    return [
        (s.alu_op, s.imm, s.src.buffer.name if s.src is not None else None)
        for s, _ in with_loops(after, ComputeStep)
    ]


def _run(case, x: np.ndarray, y: np.ndarray) -> np.ndarray:
    out = np.zeros(case.args[-1].shape, np.int8)
    case.build()(x, y, out)
    return out


def _wrap32(values: np.ndarray) -> np.ndarray:
    return values.astype(np.int64).astype(np.int32)


def _multiply_case():
    return alu_case(
        TINY,
        lambda x, y: x * y.astype("int8").astype("int32"),
        lambda x, y: _wrap32(x.astype(np.int64) * y.astype(np.int8)),
    )


def test_a_multiply_by_a_row_cast_to_int8_is_one_vector_mul():
    assert _steps(_multiply_case()) == [(AluOp.MUL, None, "Y_buf")]


def test_a_right_shift_by_a_row_is_one_vector_shr():
    case = alu_case(TINY, lambda x, y: x >> y, lambda x, y: x >> y)
    assert _steps(case) == [(AluOp.SHR, None, "Y_buf")]


@settings(max_examples=25, deadline=None)
@given(st.integers(0, 2**32 - 1))
def test_a_multiply_by_a_row_reads_its_low_8_bits_signed(seed):
    case = _multiply_case()
    rng = np.random.default_rng(seed)
    shape = case.args[-1].shape
    x = rng.integers(-(2**31), 2**31, shape, dtype=np.int64).astype(np.int32)
    y = rng.integers(-(2**31), 2**31, shape, dtype=np.int64).astype(np.int32)
    expected = _wrap32(x.astype(np.int64) * y.astype(np.int8)).astype(np.int8)
    np.testing.assert_array_equal(_run(case, x, y), expected)


@settings(max_examples=25, deadline=None)
@given(st.integers(0, 2**32 - 1))
def test_a_right_shift_by_a_row_takes_every_amount_0_to_31(seed):
    case = alu_case(TINY, lambda x, y: x >> y, lambda x, y: x >> y)
    rng = np.random.default_rng(seed)
    shape = case.args[-1].shape
    x = rng.integers(-(2**31), 2**31, shape, dtype=np.int64).astype(np.int32)
    y = rng.integers(0, 32, shape, dtype=np.int32)
    y.ravel()[:2] = (0, 31)
    np.testing.assert_array_equal(_run(case, x, y), (x >> y).astype(np.int8))
