"""The GEMM core and the tensor ALU on random vectors, against numpy and SEMANTICS 6; the ALU
also without its multiplier (``alu_mul=False``)."""

import numpy as np
import pytest
from amaranth.back import rtlil
from hypothesis import given, settings
from hypothesis import strategies as st

from hw.alu import MUL_SLICE_BITS, TensorAlu
from hw.gemm import GemmCore
from isa import AccelConfig, AluOp
from tests.hw.util import TINY, alu_reference, pack, run, unpack

LANES = TINY.batch * TINY.block_out


@settings(max_examples=5)
@given(seed=st.integers(0, 2**32 - 1), count=st.integers(1, 12))
def test_gemm_core_streams_exact_dot_products(seed, count):
    cfg = TINY
    rng = np.random.default_rng(seed)
    shape_inp = (count, cfg.batch, cfg.block_in)
    shape_wgt = (count, cfg.block_out, cfg.block_in)
    inp = rng.integers(-128, 128, shape_inp)
    wgt = rng.integers(-128, 128, shape_wgt)
    inp[0], wgt[0] = -128, -128  # the largest positive sum
    expected = np.einsum("nbi,noi->nbo", inp, wgt)
    dut = GemmCore(cfg)
    dot_width = len(dut.dot.as_value()) // LANES
    got = []

    async def bench(ctx):
        for step in range(count + dut.latency):
            if step < count:
                ctx.set(dut.inp.as_value(), pack(inp[step].ravel().tolist(), cfg.inp_width))
                ctx.set(dut.wgt.as_value(), pack(wgt[step].ravel().tolist(), cfg.wgt_width))
            await ctx.tick()
            if step + 1 >= dut.latency:
                got.append(unpack(ctx.get(dut.dot.as_value()), dot_width, LANES))

    run(dut, bench)
    assert np.array_equal(np.array(got[:count]).reshape(expected.shape), expected)


EDGES = [-(2**31), -(2**31) + 1, -65, -64, -33, -32, -31, -1, 0, 1, 31, 32, 33, 127, 2**31 - 1]
LANE = st.one_of(st.sampled_from(EDGES), st.integers(-(2**31), 2**31 - 1))
LANES_OF = st.lists(LANE, min_size=LANES, max_size=LANES)
#: The tiny configuration without the ALU multiplier: every other opcode behaves the same.
NOMUL = TINY.replace(alu_mul=False)


def _vectors(cfg: AccelConfig) -> st.SearchStrategy:
    """(op, a, x) triples over the opcodes ``cfg`` implements."""
    return st.lists(st.tuples(st.sampled_from(cfg.alu_ops), LANES_OF, LANES_OF), max_size=60)


def _stream(cfg: AccelConfig, vectors) -> list[list[int]]:
    """The ALU's results for ``vectors`` ((op, a, x) triples), one entering per cycle, each
    read :attr:`TensorAlu.latency` cycles after its operands."""
    dut = TensorAlu(cfg)
    got = []

    async def bench(ctx):
        for step in range(len(vectors) + dut.latency):
            if step < len(vectors):
                op, a, x = vectors[step]
                ctx.set(dut.op, op)
                ctx.set(dut.a.as_value(), pack(a, cfg.acc_width))
                ctx.set(dut.x.as_value(), pack(x, cfg.acc_width))
            await ctx.tick()
            if step + 1 >= dut.latency:
                got.append(unpack(ctx.get(dut.result.as_value()), cfg.acc_width, LANES))

    run(dut, bench)
    return got[: len(vectors)]


@pytest.mark.parametrize("cfg", [TINY, NOMUL], ids=["tiny", "tiny_nomul"])
@settings(max_examples=8)
@given(data=st.data())
def test_tensor_alu_matches_the_semantics(cfg, data):
    vectors = data.draw(_vectors(cfg).filter(bool))
    expected = [
        [alu_reference(cfg, op, ai, xi) for ai, xi in zip(a, x, strict=True)]
        for op, a, x in vectors
    ]
    assert _stream(cfg, vectors) == expected


def test_tensor_alu_shift_range_covers_both_directions():
    """SHR by the full signed range of its operand's low shr_arg_bits bits."""
    cfg = TINY
    shifts = range(-(1 << (cfg.shr_arg_bits - 1)), 1 << (cfg.shr_arg_bits - 1))
    a = [-(2**31), 0x12345678, -7, 1]
    got = _stream(cfg, [(AluOp.SHR, a, [shift] * LANES) for shift in shifts])
    for shift, lanes in zip(shifts, got, strict=True):
        assert lanes == [alu_reference(cfg, AluOp.SHR, v, shift) for v in a], shift


def test_without_mul_the_alu_builds_no_multiplier():
    slices = -(-TINY.acc_width // MUL_SLICE_BITS)  # one multiplier per slice of each lane
    assert rtlil.convert(TensorAlu(TINY), name="alu").count("cell $mul ") == LANES * slices
    assert "$mul" not in rtlil.convert(TensorAlu(NOMUL), name="alu")


@settings(max_examples=4)
@given(a=LANES_OF, x=LANES_OF)
def test_without_mul_a_mul_opcode_passes_its_operand_through(a, x):
    """No level can produce a MUL word for such a configuration (it does not encode); were one
    to arrive, the ALU would treat it as any opcode it lacks: ``result = a``."""
    assert _stream(NOMUL, [(AluOp.MUL, a, x)]) == [a]
