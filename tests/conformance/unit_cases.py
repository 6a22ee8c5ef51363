"""VTA's instruction tests (``test_vta_insn.py``, vta-facts 6) as conformance cases.

Save/load out, padded ACC loads with each pad, every ALU operation with and without an
immediate (MUL and left shifts included), relu, shift-and-scale, and ACC_8BIT loads. Results are
stored through :func:`store_acc_planes` where the full accumulator width matters, so a wrong high
bit cannot hide behind the 8-bit output path.
"""

from __future__ import annotations

import numpy as np

from isa import AccelConfig, AluOp, Kernel, Loop, MemId, ProgramBuilder, Uop
from isa import Stage as S
from tests.conformance.common import (
    Built,
    ConformanceCase,
    Expectation,
    as_bytes,
    built,
    planes_of,
    random_ints,
    row_kernel,
    store_acc_planes,
    wrap_np,
)

__all__ = ["UNIT_CASES"]


def _acc_block(cfg: AccelConfig, rows: int) -> tuple[int, ...]:
    return (rows, cfg.batch, cfg.block_out)


def _save_load_out(cfg: AccelConfig, seed: int) -> Built:
    """ACC load, copy (SHR by 0), store: the accumulator wraps to the output width."""
    rng = np.random.default_rng(seed)
    rows = 6
    values = random_ints(rng, cfg.acc_width, _acc_block(cfg, rows))
    b = ProgramBuilder(cfg)
    acc = b.alloc("acc", MemId.ACC, rows, as_bytes(values, cfg.acc_width))
    out = b.alloc("out", MemId.OUT, rows)
    b.load_2d(acc, sram=0, y_size=1, x_size=rows)
    b.alu(row_kernel(0, 0, rows), AluOp.SHR, imm=0)
    b.dep_push(S.COMPUTE, S.STORE)
    b.dep_pop(S.COMPUTE, S.STORE)
    b.store_2d(out, sram=0, y_size=1, x_size=rows)
    expected = wrap_np(values, cfg.out_width)
    return built(b.finish(), [Expectation("save_load_out", out, expected, cfg.out_width)])


def _padded_load(memory_type: MemId, pads: tuple[int, int, int, int]):
    """A 3 x 5 tile loaded with pads (y0, y1, x0, x1), every bit of every row stored."""

    def build(cfg: AccelConfig, seed: int) -> Built:
        rng = np.random.default_rng(seed)
        height, width = 3, 5
        y0, y1, x0, x1 = pads
        data_width = cfg.acc_width if memory_type is MemId.ACC else 8
        values = random_ints(rng, data_width, (height, width, cfg.batch, cfg.block_out))
        b = ProgramBuilder(cfg)
        src = b.alloc("tile", memory_type, height * width, as_bytes(values, data_width))
        b.load_2d(
            src, sram=0, y_size=height, x_size=width, y_pad_0=y0, y_pad_1=y1, x_pad_0=x0, x_pad_1=x1
        )
        rows = (y0 + height + y1) * (x0 + width + x1)
        out, _ = store_acc_planes(b, rows, first=0, scratch=rows, name="planes")
        padded = np.pad(values, ((y0, y1), (x0, x1), (0, 0), (0, 0)))
        expected = planes_of(padded.reshape(rows, cfg.batch, cfg.block_out), cfg)
        return built(b.finish(), [Expectation("padded_load", out, expected, cfg.out_width)])

    return build


def _alu_numpy(cfg: AccelConfig, op: AluOp, a: np.ndarray, x: np.ndarray) -> np.ndarray:
    """SEMANTICS section 6 on exact Python integers (object arrays)."""
    a, x = a.astype(object), np.broadcast_to(x, a.shape).astype(object)
    if op is AluOp.MIN:
        result = np.minimum(a, x)
    elif op is AluOp.MAX:
        result = np.maximum(a, x)
    elif op is AluOp.ADD:
        result = a + x
    elif op is AluOp.MUL:
        result = a * wrap_np(x.astype(np.int64), cfg.mul_arg_bits).astype(object)
    else:
        shift = wrap_np(x.astype(np.int64), cfg.shr_arg_bits).astype(object)
        result = np.where(shift >= 0, a >> np.maximum(shift, 0), a << np.maximum(-shift, 0))
    return wrap_np(result, cfg.acc_width)


def _imm_range(cfg: AccelConfig, op: AluOp) -> tuple[int, int]:
    if op is AluOp.SHR:  # every right and left shift the operand can express
        return -cfg.acc_width, cfg.acc_width - 1
    return -(1 << (cfg.alu_imm_bits - 1)), (1 << (cfg.alu_imm_bits - 1)) - 1


def _alu(op: AluOp, use_imm: bool, imm_sign: int = 0):
    """ALU ``op`` on ``rows`` accumulator rows against an immediate or ``rows`` other rows.

    Vector cases spell one micro-op per row (VTA's "no uop compression"), immediate cases walk
    one micro-op with a loop. ``imm_sign`` forces the immediate's sign (negative: left shift).
    """

    def build(cfg: AccelConfig, seed: int) -> Built:
        rng = np.random.default_rng(seed)
        rows = 8
        a = random_ints(rng, cfg.acc_width, _acc_block(cfg, rows))
        if use_imm:
            low, high = _imm_range(cfg, op)
            low, high = (low, -1) if imm_sign < 0 else (low, high)
            x = np.int64(rng.integers(low, high, endpoint=True))
            data = a
        else:
            x = random_ints(rng, cfg.acc_width, _acc_block(cfg, rows))
            data = np.concatenate([a, x])
        b = ProgramBuilder(cfg)
        acc = b.alloc("acc", MemId.ACC, len(data), as_bytes(data, cfg.acc_width))
        b.load_2d(acc, sram=0, y_size=1, x_size=len(data))
        if use_imm:
            b.alu(row_kernel(0, 0, rows), op, imm=int(x))
        else:
            b.alu(Kernel(tuple(Uop(dst_idx=i, src_idx=rows + i) for i in range(rows))), op)
        out, _ = store_acc_planes(b, rows, first=0, scratch=2 * rows, name="planes")
        expected = planes_of(_alu_numpy(cfg, op, a, x), cfg)
        return built(b.finish(), [Expectation(f"alu {op.name}", out, expected, cfg.out_width)])

    return build


def _relu(cfg: AccelConfig, seed: int) -> Built:
    """VTA's test_relu: max(x, 0), min(x, 127), stored as int8."""
    rng = np.random.default_rng(seed)
    rows = 16
    values = random_ints(rng, cfg.acc_width, _acc_block(cfg, rows), -400, 400)
    b = ProgramBuilder(cfg)
    acc = b.alloc("acc", MemId.ACC, rows, as_bytes(values, cfg.acc_width))
    out = b.alloc("out", MemId.OUT, rows)
    b.load_2d(acc, sram=0, y_size=1, x_size=rows)
    b.alu(row_kernel(0, 0, rows), AluOp.MAX, imm=0)
    b.alu(row_kernel(0, 0, rows), AluOp.MIN, imm=127)
    b.dep_push(S.COMPUTE, S.STORE)
    b.dep_pop(S.COMPUTE, S.STORE)
    b.store_2d(out, sram=0, y_size=1, x_size=rows)
    return built(b.finish(), [Expectation("relu", out, np.clip(values, 0, 127), cfg.out_width)])


def _shift_and_scale(cfg: AccelConfig, seed: int) -> Built:
    """VTA's test_shift_and_scale: (x + imm) >> imm, every accumulator bit checked."""
    rng = np.random.default_rng(seed)
    rows = 16
    values = random_ints(rng, cfg.acc_width, _acc_block(cfg, rows))
    add, shift = int(rng.integers(-1000, 1000)), int(rng.integers(1, 8))
    b = ProgramBuilder(cfg)
    acc = b.alloc("acc", MemId.ACC, rows, as_bytes(values, cfg.acc_width))
    b.load_2d(acc, sram=0, y_size=1, x_size=rows)
    b.alu(Kernel((Uop(dst_idx=0, src_idx=0),), (Loop(rows, dst_factor=1),)), AluOp.ADD, imm=add)
    b.alu(row_kernel(0, 0, rows), AluOp.SHR, imm=shift)
    out, _ = store_acc_planes(b, rows, first=0, scratch=rows, name="planes")
    expected = planes_of(wrap_np(values + add, cfg.acc_width) >> shift, cfg)
    return built(b.finish(), [Expectation("shift_and_scale", out, expected, cfg.out_width)])


def _raw_distance(cfg: AccelConfig, seed: int) -> Built:
    """Steps that read the accumulator row written three steps before, the nearest the
    read-after-write window allows (SEMANTICS 5), and four steps before: GEMM and ADD with an
    immediate over rows 0, 1, 2 (then 0..3) in turn for several rounds, then ADD without one
    (each row doubled). A pipeline that reads a row before an earlier step's write of it has
    landed loses that step's contribution."""
    rng = np.random.default_rng(seed)
    rows, rounds, doublings = 4, 4, 2
    values = random_ints(rng, cfg.acc_width, _acc_block(cfg, rows), -1000, 1000)
    inp = random_ints(rng, cfg.inp_width, (rounds, cfg.batch, cfg.block_in))
    wgt = random_ints(rng, cfg.wgt_width, (rows, cfg.block_out, cfg.block_in))
    imm = int(rng.integers(-1000, 1000))
    b = ProgramBuilder(cfg)
    acc = b.alloc("acc", MemId.ACC, rows, as_bytes(values, cfg.acc_width))
    inp_buf = b.alloc("inp", MemId.INP, rounds, as_bytes(inp, cfg.inp_width))
    wgt_buf = b.alloc("wgt", MemId.WGT, rows, as_bytes(wgt, cfg.wgt_width))
    b.load_2d(inp_buf, sram=0, y_size=1, x_size=rounds)
    b.load_2d(wgt_buf, sram=0, y_size=1, x_size=rows)
    b.dep_push(S.LOAD, S.COMPUTE)
    b.dep_pop(S.LOAD, S.COMPUTE)
    b.load_2d(acc, sram=0, y_size=1, x_size=rows)
    dots = np.einsum("ibc,roc->rbo", inp, wgt)  # summed over the rounds
    expected = values.copy()
    for period in (3, rows):
        gemm_steps = [Uop(dst_idx=r, src_idx=0, wgt_idx=r) for r in range(period)]
        b.gemm(Kernel(gemm_steps, (Loop(rounds, src_factor=1),)))
        alu_steps = [Uop(dst_idx=r, src_idx=r) for r in range(period)]
        b.alu(Kernel(alu_steps, (Loop(rounds),)), AluOp.ADD, imm=imm)
        expected[:period] += dots[:period] + rounds * imm
    every_row = [Uop(dst_idx=r, src_idx=r) for r in range(rows)]
    b.alu(Kernel(every_row, (Loop(doublings),)), AluOp.ADD)
    out, _ = store_acc_planes(b, rows, first=0, scratch=rows, name="out")
    expected = wrap_np(expected << doublings, cfg.acc_width)
    return built(b.finish(), [Expectation("acc", out, planes_of(expected, cfg), cfg.out_width)])


_PADS = {"y0": (2, 0, 0, 0), "y1": (0, 2, 0, 0), "x0": (0, 0, 2, 0), "x1": (0, 0, 0, 2)}
_PADS["all"] = (1, 1, 1, 1)

UNIT_CASES: tuple[ConformanceCase, ...] = (
    ConformanceCase("save_load_out", _save_load_out),
    *(
        ConformanceCase(f"padded_load_{name}", _padded_load(MemId.ACC, pads))
        for name, pads in _PADS.items()
    ),
    ConformanceCase("acc_8bit_load", _padded_load(MemId.ACC_8BIT, (0, 0, 0, 0))),
    ConformanceCase("acc_8bit_padded_load", _padded_load(MemId.ACC_8BIT, (1, 2, 2, 1))),
    *(
        ConformanceCase(
            f"alu_{op.name.lower()}_{'imm' if imm else 'vec'}",
            _alu(op, imm),
            uses_mul=op is AluOp.MUL,
        )
        for op in AluOp
        for imm in (True, False)
    ),
    ConformanceCase("alu_shr_imm_negative", _alu(AluOp.SHR, True, imm_sign=-1)),
    ConformanceCase("relu", _relu),
    ConformanceCase("shift_and_scale", _shift_and_scale),
    ConformanceCase("acc_raw_distance", _raw_distance),
)
