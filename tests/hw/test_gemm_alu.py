# amaranth: UnusedElaboratable=no
# (the PackedMultiplier constructions a test expects to be refused are never elaborated)
"""The GEMM core and the tensor ALU on random vectors, against numpy and SEMANTICS 6: the GEMM
core with and without DSP packing, elaborated for an ECP5 part (whose multipliers cannot hold a
packed operand), and its packed multiplier alone; the ALU also without its multiplier
(``alu_mul=False``)."""

import numpy as np
import pytest
from amaranth.back import rtlil
from amaranth.hdl import Fragment
from hypothesis import given, settings
from hypothesis import strategies as st

from hw.alu import MUL_SLICE_BITS, TensorAlu
from hw.gemm import GemmCore, PackedMultiplier
from hw.parts import Part, part
from isa import AccelConfig, AluOp, ConfigError
from tests.hw.util import TINY, alu_reference, pack, run, unpack

LANES = TINY.batch * TINY.block_out


#: The tiny configuration's GEMM core with one multiplier per product, and with one lane
#: (an odd block_out: nothing to pair), next to TINY's packed one; and TINY's elaborated for the
#: ECP5-85F, whose 18 x 18 multipliers cannot hold a packed operand.
UNPACKED = TINY.replace(gemm_dsp_packing=False)
ONE_LANE = TINY.replace(block_out=1)
ECP5 = part("ecp5-85f")
GEMM_CONFIGS = pytest.mark.parametrize(
    ("cfg", "target"),
    [(TINY, None), (UNPACKED, None), (ONE_LANE, None), (TINY, ECP5)],
    ids=["packed", "unpacked", "one_lane", "ecp5"],
)


def _stream_gemm(
    cfg: AccelConfig, inp: np.ndarray, wgt: np.ndarray, target: Part | None = None
) -> np.ndarray:
    """The dot products a GemmCore of ``cfg`` (elaborated for the part ``target``) streams for
    operands ``inp[n]``, ``wgt[n]`` fed one pair a cycle, read :attr:`GemmCore.latency` cycles
    after each."""
    count, lanes = len(inp), cfg.batch * cfg.block_out
    dut = GemmCore(cfg)
    dot_width = len(dut.dot.as_value()) // lanes
    got = []

    async def bench(ctx):
        for step in range(count + dut.latency):
            if step < count:
                ctx.set(dut.inp.as_value(), pack(inp[step].ravel().tolist(), cfg.inp_width))
                ctx.set(dut.wgt.as_value(), pack(wgt[step].ravel().tolist(), cfg.wgt_width))
            await ctx.tick()
            if step + 1 >= dut.latency:
                got.append(unpack(ctx.get(dut.dot.as_value()), dot_width, lanes))

    run(Fragment.get(dut, target), bench)
    return np.array(got[:count]).reshape(count, cfg.batch, cfg.block_out)


@GEMM_CONFIGS
@settings(max_examples=5)
@given(seed=st.integers(0, 2**32 - 1), count=st.integers(1, 12))
def test_gemm_core_streams_exact_dot_products(cfg, target, seed, count):
    rng = np.random.default_rng(seed)
    inp = rng.integers(-128, 128, (count, cfg.batch, cfg.block_in))
    wgt = rng.integers(-128, 128, (count, cfg.block_out, cfg.block_in))
    inp[0], wgt[0] = -128, -128  # the largest positive sum
    expected = np.einsum("nbi,noi->nbo", inp, wgt)
    assert np.array_equal(_stream_gemm(cfg, inp, wgt, target), expected)


@GEMM_CONFIGS
def test_gemm_core_is_exact_on_extreme_operands(cfg, target):
    """Every combination of -128, -1, 0, 1 and 127 in an input element and the two weights of
    a lane pair, then all -128 (the largest sum) and -128 against 127 (the smallest)."""
    extremes = np.array([-128, -1, 0, 1, 127])
    triples = np.array(np.meshgrid(extremes, extremes, extremes)).reshape(3, -1).T
    inp = np.empty((len(triples) + 2, cfg.batch, cfg.block_in), dtype=np.int64)
    wgt = np.empty((len(triples) + 2, cfg.block_out, cfg.block_in), dtype=np.int64)
    for n, (x, w0, w1) in enumerate(triples):
        inp[n] = x
        wgt[n, 0::2], wgt[n, 1::2] = w0, w1
    inp[-2], wgt[-2] = -128, -128
    inp[-1], wgt[-1] = -128, 127
    expected = np.einsum("nbi,noi->nbo", inp, wgt)
    assert np.array_equal(_stream_gemm(cfg, inp, wgt, target), expected)


def test_gemm_core_packs_two_products_per_multiplier_at_the_same_latency():
    """The packed core of TINY (block_out 4) builds half the multipliers of the unpacked one,
    the odd lane of a one-lane core is left unpacked, and the latency is the same."""
    products = TINY.batch * TINY.block_in * TINY.block_out
    assert TINY.gemm_packed_pairs == TINY.block_out // 2
    assert ONE_LANE.gemm_packed_pairs == 0
    for cfg, multipliers in ((TINY, products // 2), (UNPACKED, products), (ONE_LANE, 4)):
        core = GemmCore(cfg)
        assert core.latency == 1 + 2  # the product register and log2(block_in = 4) levels
        assert rtlil.convert(core, name="gemm").count("cell $mul ") == multipliers


@pytest.mark.parametrize(
    ("name", "packs"), [("xc7z020", True), ("xczu3eg", True), ("ecp5-85f", False)]
)
def test_gemm_core_packs_only_where_the_parts_multiplier_holds_a_packed_operand(name, packs):
    """Elaborated for a part, TINY's core packs on a DSP48E1 (25 x 18) or DSP48E2 (27 x 18),
    whose A port holds the 25-bit packed operand, and not on an ECP5's 18 x 18 multiplier (two
    of them and an adder would make each packed product): one multiplier per product there."""
    products = TINY.batch * TINY.block_in * TINY.block_out
    text = rtlil.convert(GemmCore(TINY), name="gemm", platform=part(name))
    assert text.count("cell $mul ") == (products // 2 if packs else products)
    assert TINY.gemm_pairs_packed_by(*part(name).multiplier) == (TINY.gemm_packed_pairs * packs)


def _signed_range(bits: int) -> st.SearchStrategy[int]:
    """Integers of ``bits`` signed bits, their extremes drawn often."""
    low, high = -(1 << (bits - 1)), (1 << (bits - 1)) - 1
    return st.one_of(st.sampled_from([low, low + 1, -1, 0, 1, high]), st.integers(low, high))


@settings(max_examples=20)
@given(data=st.data())
def test_packed_multiplier_gives_both_products(data):
    """The packing arithmetic for the configuration's widths: ``x * w0`` and ``x * w1`` out of
    one multiplication, one cycle later, for any operands of those widths."""
    cfg = TINY
    triples = data.draw(
        st.lists(
            st.tuples(
                _signed_range(cfg.inp_width),
                _signed_range(cfg.wgt_width),
                _signed_range(cfg.wgt_width),
            ),
            min_size=1,
            max_size=40,
        )
    )
    dut = PackedMultiplier(cfg)

    async def bench(ctx):
        for x, w0, w1 in triples:
            ctx.set(dut.x, x)
            ctx.set(dut.w0, w0)
            ctx.set(dut.w1, w1)
            await ctx.tick()
            assert (ctx.get(dut.p0), ctx.get(dut.p1)) == (x * w0, x * w1), (x, w0, w1)

    run(dut, bench)


@pytest.mark.parametrize(
    ("changes", "pairs"),
    [
        ({}, 2),  # int8: a 25-bit packed operand, an 8-bit input
        ({"block_out": 8}, 4),
        ({"block_out": 1}, 0),  # nothing to pair
        ({"gemm_dsp_packing": False}, 0),
        ({"wgt_width": 16, "acc_width": 64}, 0),  # 16 + 24 + 1 = 41 bits > 25
        ({"inp_width": 16, "acc_width": 64}, 0),  # 8 + 24 + 1 = 33 bits > 25
    ],
)
def test_packing_applies_only_where_both_products_fit_a_dsp(changes, pairs):
    cfg = TINY.replace(**changes)
    assert cfg.gemm_packed_pairs == pairs
    if not pairs:
        with pytest.raises(ConfigError, match="gemm_dsp_packing.*packs no GEMM products"):
            PackedMultiplier(cfg)


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
