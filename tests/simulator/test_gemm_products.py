"""The functional simulator's GEMM groups its products two ways (``simulator.loop_plans``): as
im2col classes (rows that multiply the same weight rows, one long-reduction product per class)
or by weight row. Both must give the reference interpreter's DRAM, whatever the micro-ops and
loops, and a long reduction of maximum-magnitude odd products (which float32 would round) stays
exact."""

from __future__ import annotations

import numpy as np
from hypothesis import assume, given, settings
from hypothesis import strategies as st

from isa import (
    AccelConfig,
    BuilderError,
    DramBuffer,
    Kernel,
    Loop,
    MemId,
    Program,
    ProgramBuilder,
    Stage,
    Uop,
)
from simulator import FunctionalSimulator
from simulator.loop_plans import GemmSteps, Im2col, gemm_steps
from tests.conformance.reference import reference_run

TINY = AccelConfig.preset("tiny")
DEFAULT = AccelConfig.preset("default")
ROWS = 16  # input, weight and accumulator rows the programs below use


def _gemm_program(cfg: AccelConfig, kernel: Kernel, inputs: np.ndarray, weights: np.ndarray):
    """Load ``inputs``/``weights`` (int8, whole SRAM rows), zero ROWS accumulator rows, run
    ``kernel``, store the ROWS output rows."""
    b = ProgramBuilder(cfg)
    inp = b.alloc("inp", MemId.INP, len(inputs), inputs.tobytes())
    wgt = b.alloc("wgt", MemId.WGT, len(weights), weights.tobytes())
    out = b.alloc("out", MemId.OUT, ROWS)
    b.load_2d(inp, sram=0, y_size=1, x_size=len(inputs))
    b.load_2d(wgt, sram=0, y_size=1, x_size=len(weights))
    b.dep_push(Stage.LOAD, Stage.COMPUTE)
    b.dep_pop(Stage.LOAD, Stage.COMPUTE)
    b.gemm(Kernel((Uop(dst_idx=0, src_idx=0),), (Loop(ROWS, dst_factor=1),)), reset=True)
    b.gemm(kernel)
    b.dep_push(Stage.COMPUTE, Stage.STORE)
    b.dep_pop(Stage.COMPUTE, Stage.STORE)
    b.store_2d(out, sram=0, y_size=1, x_size=ROWS)
    return b.finish(), out


def _assert_equals_reference(program: Program, out: DramBuffer) -> None:
    dram = np.zeros(max(program.dram_extent, out.end), dtype=np.uint8)
    program.write_to(dram)
    expected = bytearray(dram.tobytes())
    reference_run(program, expected)
    FunctionalSimulator(program.config).run(program, dram)
    np.testing.assert_array_equal(dram, np.frombuffer(expected, dtype=np.uint8))


def _operands(cfg: AccelConfig, rng: np.random.Generator, inp_rows: int, wgt_rows: int):
    inputs = rng.integers(-128, 128, (inp_rows, cfg.batch * cfg.block_in), dtype=np.int8)
    weights = rng.integers(-128, 128, (wgt_rows, cfg.block_out * cfg.block_in), dtype=np.int8)
    return inputs, weights


@settings(max_examples=60, deadline=None)
@given(
    batch=st.sampled_from([1, 2]),
    uops=st.lists(
        st.tuples(st.integers(0, 3), st.integers(0, 3), st.integers(0, 3)), min_size=1, max_size=4
    ),
    loops=st.lists(
        st.tuples(st.integers(1, 3), st.integers(0, 2), st.integers(0, 2), st.integers(0, 2)),
        max_size=2,
    ),
    seed=st.integers(0, 2**16),
)
def test_any_gemm_kernel_equals_the_reference(batch, uops, loops, seed):
    cfg = TINY.replace(batch=batch)
    rng = np.random.default_rng(seed)
    kernel = Kernel(
        tuple(Uop(dst_idx=d, src_idx=s, wgt_idx=w) for d, s, w in uops),
        tuple(Loop(e, dst_factor=d, src_factor=s, wgt_factor=w) for e, d, s, w in loops),
    )
    try:
        program, out = _gemm_program(cfg, kernel, *_operands(cfg, rng, ROWS, ROWS))
    except BuilderError:  # the kernel breaks the read-after-write window: not a program
        assume(False)
    _assert_equals_reference(program, out)


def test_a_convolution_like_kernel_runs_as_im2col_classes_and_others_by_weight_row():
    # 4 output rows x 2 output channel blocks, each summing 3 taps x 2 input channel blocks
    dst = np.repeat(np.arange(8), 6)
    taps = np.tile(np.arange(6), 8)
    src, wgt = dst % 4 + taps, (dst // 4) * 6 + taps
    steps = gemm_steps(dst, src, wgt)
    assert isinstance(steps, Im2col)
    assert steps.dst.shape == (2, 4) and steps.src.shape == (2, 4, 6)
    uneven = gemm_steps(dst[:-1], src[:-1], wgt[:-1])  # the last row gets one product less
    assert isinstance(uneven, GemmSteps)


def test_a_long_reduction_of_large_products_is_exact():
    """120 weight rows x 16 lanes = 1920 products of 100..127 x 127 per output: the sums pass
    2**24, beyond which float32 (which a reduction of 1024 terms would still use) rounds odd
    values; the low byte that the STORE keeps shows any rounding."""
    rng = np.random.default_rng(7)
    terms = 120
    inputs = rng.integers(100, 128, (terms + ROWS, DEFAULT.block_in), dtype=np.int8)
    weights = np.full((terms, DEFAULT.block_out * DEFAULT.block_in), 127, dtype=np.int8)
    kernel = Kernel(  # output d, term t: input row t + d times weight row t
        (Uop(dst_idx=0, src_idx=0, wgt_idx=0),),
        (Loop(terms, src_factor=1, wgt_factor=1), Loop(ROWS, dst_factor=1, src_factor=1)),
    )
    _assert_equals_reference(*_gemm_program(DEFAULT, kernel, inputs, weights))
