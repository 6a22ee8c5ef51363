"""The demo program ``make demo`` shows: a small blocked GEMM with a requantising epilogue.

It follows VTA's ``test_gemm`` unit test: 4 input rows (BATCH x BLOCK_IN each) times 4 weight
tiles (BLOCK_OUT x BLOCK_IN each) give a 4 x 4 grid of output blocks, computed by one micro-op run
over a two-level loop; then ``>> 8``, ``max 0`` and ``min 127`` on the tensor ALU, and a store.
Dependency tokens order load -> compute -> store, and a final no-op drains the store's token.
The inputs and weights are DRAM segments, the output a DRAM region, so the program carries its
whole DRAM footprint.
"""

from __future__ import annotations

import random

import numpy as np

from isa import (
    AccelConfig,
    AluInsn,
    AluOp,
    DramRegion,
    DramSegment,
    FinishInsn,
    GemmInsn,
    MemId,
    MemInsn,
    Opcode,
    Program,
    Uop,
)

__all__ = ["DEMO_ROWS", "DEMO_TILES", "demo_expected_output", "demo_gemm_program"]

DEMO_ROWS = 4
DEMO_TILES = 4
_DATA_START = 0x1000  # the micro-op table sits below


def _align_up(address: int, alignment: int) -> int:
    return -(-address // alignment) * alignment


def _addresses(cfg: AccelConfig) -> tuple[int, int, int]:
    """DRAM byte addresses of the inputs, weights and outputs, aligned to their element size
    (dram_base counts elements)."""
    inp_addr = _align_up(_DATA_START, cfg.inp_elem_bytes)
    wgt_addr = _align_up(inp_addr + DEMO_ROWS * cfg.inp_elem_bytes, cfg.wgt_elem_bytes)
    out_addr = _align_up(wgt_addr + DEMO_TILES * cfg.wgt_elem_bytes, cfg.out_elem_bytes)
    return inp_addr, wgt_addr, out_addr


def demo_expected_output(program: Program) -> tuple[int, bytes]:
    """Where the demo ``program`` stores its output, and the bytes numpy computes for it:
    ``clip((inputs x weights^T) >> 8, 0, 127)`` for every (row, tile) pair."""
    cfg = program.config
    data = {segment.name: segment.data for segment in program.segments}
    inputs = np.frombuffer(data["inputs"], dtype=f"<i{cfg.inp_width // 8}").astype(np.int64)
    weights = np.frombuffer(data["weights"], dtype=f"<i{cfg.wgt_width // 8}").astype(np.int64)
    inputs = inputs.reshape(DEMO_ROWS, cfg.batch, cfg.block_in)
    weights = weights.reshape(DEMO_TILES, cfg.block_out, cfg.block_in)
    result = np.clip(np.einsum("rbi,toi->rtbo", inputs, weights) >> 8, 0, 127)
    return _addresses(cfg)[2], result.astype(f"<i{cfg.out_width // 8}").tobytes()


def demo_gemm_program(cfg: AccelConfig, seed: int = 0) -> Program:
    """The demo GEMM program for ``cfg``, with seeded random int8 inputs and weights in DRAM."""
    rng = random.Random(seed)
    rows, tiles = DEMO_ROWS, DEMO_TILES
    out_rows = rows * tiles
    inp_data = bytes(rng.randrange(256) for _ in range(rows * cfg.inp_elem_bytes))
    wgt_data = bytes(rng.randrange(256) for _ in range(tiles * cfg.wgt_elem_bytes))
    inp_addr, wgt_addr, out_addr = _addresses(cfg)

    def mem(opcode: Opcode, memory_type: MemId, dram_addr: int, count: int, **flags: bool):
        return MemInsn(
            opcode=opcode,
            memory_type=memory_type,
            sram_base=0,
            dram_base=dram_addr // cfg.elem_bytes(memory_type),
            y_size=1,
            x_size=count,
            x_stride=count,
            **flags,
        )

    # One micro-op; the loops walk it over the grid: acc[i*tiles + j] += inp[i] x wgt[j].
    grid = {
        "uop_bgn": 0,
        "uop_end": 1,
        "iter_out": rows,
        "iter_in": tiles,
        "dst_factor_out": tiles,
        "dst_factor_in": 1,
        "src_factor_out": 1,
        "wgt_factor_in": 1,
    }
    # The same micro-op walked over every accumulator row, for the ALU epilogue.
    rows_loop = {
        "uop_bgn": 0,
        "uop_end": 1,
        "iter_out": 1,
        "iter_in": out_rows,
        "dst_factor_in": 1,
        "src_factor_in": 1,
    }
    instructions = [
        mem(Opcode.LOAD, MemId.UOP, 0, 1),
        GemmInsn(reset_reg=True, **grid),
        mem(Opcode.LOAD, MemId.INP, inp_addr, rows),
        mem(Opcode.LOAD, MemId.WGT, wgt_addr, tiles, push_next_dep=True),
        GemmInsn(pop_prev_dep=True, **grid),
        AluInsn(alu_opcode=AluOp.SHR, use_imm=True, imm=8, **rows_loop),
        AluInsn(alu_opcode=AluOp.MAX, use_imm=True, imm=0, **rows_loop),
        AluInsn(alu_opcode=AluOp.MIN, use_imm=True, imm=127, push_next_dep=True, **rows_loop),
        mem(Opcode.STORE, MemId.OUT, out_addr, out_rows, pop_prev_dep=True, push_prev_dep=True),
        mem(Opcode.LOAD, MemId.UOP, 0, 0, pop_next_dep=True),  # no-op: drain store's token
        FinishInsn(),
    ]
    return Program(
        cfg,
        instructions,
        uops=[Uop(dst_idx=0, src_idx=0, wgt_idx=0)],
        uop_base=0,
        segments=[
            DramSegment("inputs", inp_addr, inp_data),
            DramSegment("weights", wgt_addr, wgt_data),
        ],
        regions=[DramRegion("outputs", out_addr, out_rows * cfg.out_elem_bytes)],
    )
