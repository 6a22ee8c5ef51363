"""Hand-written whole programs for the RTL, each with the DRAM bytes numpy says it must store.

Every program is token-ordered (SEMANTICS 2, 7) and ends with the store's last token drained
into compute before FINISH. :func:`dump_acc` makes a program's full accumulator values visible:
it stores OUT (the low byte of each lane), shifts the rows right by 8 and stores again, four
times, so the stored bytes rebuild each 32-bit lane.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

import numpy as np

from isa import (
    AccelConfig,
    AluInsn,
    AluOp,
    DramSegment,
    FinishInsn,
    GemmInsn,
    Instruction,
    MemId,
    MemInsn,
    Opcode,
    Program,
    Uop,
)
from runtime.demo_gemm import DEMO_ROWS, DEMO_TILES, demo_gemm_program
from tests.hw.util import alu_reference, wrap

__all__ = ["Case", "all_cases"]

DRAM_BYTES = 0x4000


@dataclass(frozen=True)
class Case:
    """A program and the bytes it must leave in DRAM: ``expected`` maps address -> bytes."""

    name: str
    program: Program
    expected: dict[int, bytes]


def transfer(
    opcode: Opcode, mem: MemId, sram: int, dram_elem: int, y: int, x: int, stride: int, **extra
) -> MemInsn:
    """A LOAD or STORE of ``y`` rows of ``x`` elements, ``stride`` elements apart in DRAM."""
    return MemInsn(
        opcode=opcode,
        memory_type=mem,
        sram_base=sram,
        dram_base=dram_elem,
        y_size=y,
        x_size=x,
        x_stride=stride,
        **extra,
    )


def load(mem: MemId, *args: int, **extra) -> MemInsn:
    return transfer(Opcode.LOAD, mem, *args, **extra)


def store(*args: int, **flags) -> MemInsn:
    return transfer(Opcode.STORE, MemId.OUT, *args, **flags)


def rows_loop(rows: int, *, src: int = 0) -> dict:
    """ALU loop fields walking micro-op 0 (dst 0, src ``src``... see the uop table) over rows."""
    return {
        "uop_bgn": src,
        "uop_end": src + 1,
        "iter_out": 1,
        "iter_in": rows,
        "dst_factor_in": 1,
        "src_factor_in": 1,
    }


def drain() -> list[Instruction]:
    """Compute waits for the store's last token, then FINISH."""
    return [load(MemId.UOP, 0, 0, 0, 0, 0, pop_next_dep=True), FinishInsn()]


def dump_acc(cfg: AccelConfig, rows: int, out_elem: int) -> list[Instruction]:
    """Store ACC rows [0, rows) as 4 OUT byte planes at DRAM elements out_elem + k*rows.

    The instruction before must have pushed g2s (its OUT writes are what the first store reads).
    Uses micro-op 0 = (dst 0, src 0).
    """
    insns: list[Instruction] = []
    for plane in range(cfg.acc_width // cfg.out_width):
        if plane:
            insns.append(
                AluInsn(
                    alu_opcode=AluOp.SHR,
                    use_imm=True,
                    imm=cfg.out_width,
                    pop_next_dep=True,
                    push_next_dep=True,
                    **rows_loop(rows),
                )
            )
        insns.append(
            store(0, out_elem + plane * rows, 1, rows, rows, pop_prev_dep=True, push_prev_dep=True)
        )
    return insns


def planes_to_acc(cfg: AccelConfig, lanes: np.ndarray) -> dict[int, bytes]:
    """What :func:`dump_acc` stores for accumulator ``lanes`` (rows x lanes int64), by plane."""
    planes = [
        ((lanes >> (cfg.out_width * k)) & 0xFF).astype(np.uint8)
        for k in range(cfg.acc_width // cfg.out_width)
    ]
    return np.concatenate(planes).tobytes()


def _acc_bytes(values: np.ndarray) -> bytes:
    return values.astype("<i4").tobytes()


def demo_case(cfg: AccelConfig) -> Case:
    program = demo_gemm_program(cfg)
    inp = np.frombuffer(program.segments[0].data, dtype=np.int8)
    inp = inp.reshape(DEMO_ROWS, cfg.batch, cfg.block_in).astype(np.int64)
    wgt = np.frombuffer(program.segments[1].data, dtype=np.int8)
    wgt = wgt.reshape(DEMO_TILES, cfg.block_out, cfg.block_in).astype(np.int64)
    acc = np.einsum("rbi,toi->rtbo", inp, wgt)  # OUT row r * tiles + t holds [b][o]
    out = np.clip(acc >> 8, 0, 127).astype(np.int8)
    stored = next(i for i in program.instructions if i.opcode is Opcode.STORE)
    return Case("demo_gemm", program, {stored.dram_base * cfg.out_elem_bytes: out.tobytes()})


def alu_case(cfg: AccelConfig, seed: int = 1) -> Case:
    """Every ALU op, with an immediate and with a vector operand, and a reset, on random rows."""
    rng = np.random.default_rng(seed)
    lanes = cfg.batch * cfg.block_out
    rows = 3
    edges = np.array([-(2**31), 2**31 - 1, -1, 0, 1, 31, -32, 33, 127, -129], dtype=np.int64)
    groups = [(op, use_imm) for op in AluOp for use_imm in (True, False)] + [("reset", True)]
    imms = [int(v) for v in rng.integers(-(2**15), 2**15, len(groups))]
    imms[[g[0] for g in groups].index(AluOp.SHR)] = -5  # a left shift by immediate
    dst = rng.integers(-(2**31), 2**31, (len(groups) * rows, lanes))
    src = rng.integers(-(2**31), 2**31, (len(groups) * rows, lanes))
    dst.ravel()[: len(edges)] = edges
    src.ravel()[-len(edges) :] = edges
    total = 2 * len(groups) * rows
    acc_addr = 0x1000
    out_elem = 0x2000 // cfg.out_elem_bytes
    acc_elem = acc_addr // cfg.acc_elem_bytes
    uops = [Uop(dst_idx=0, src_idx=0)]
    uops += [Uop(dst_idx=g * rows, src_idx=(len(groups) + g) * rows) for g in range(len(groups))]
    insns: list[Instruction] = [
        load(MemId.UOP, 0, 0, 1, len(uops), len(uops)),
        load(MemId.ACC, 0, acc_elem, 1, total, total),
    ]
    expected = dst.copy()
    for index, (op, use_imm) in enumerate(groups):
        first = index * rows
        fields = {
            "uop_bgn": index + 1,
            "uop_end": index + 2,
            "iter_out": 1,
            "iter_in": rows,
            "dst_factor_in": 1,
            "src_factor_in": 1,
        }
        if op == "reset":
            insns.append(
                AluInsn(alu_opcode=AluOp.ADD, reset_reg=True, use_imm=True, imm=5, **fields)
            )
            expected[first : first + rows] = 0
            continue
        insns.append(AluInsn(alu_opcode=op, use_imm=use_imm, imm=imms[index], **fields))
        for r in range(first, first + rows):
            for lane in range(lanes):
                x = imms[index] if use_imm else int(src[r, lane])
                expected[r, lane] = alu_reference(cfg, op, int(dst[r, lane]), x)
    insns[-1] = replace(insns[-1], push_next_dep=True)
    rows_dumped = len(groups) * rows
    insns += dump_acc(cfg, rows_dumped, out_elem) + drain()
    program = Program(
        cfg,
        insns,
        uops,
        segments=[DramSegment("acc", acc_addr, _acc_bytes(np.concatenate([dst, src])))],
    )
    return Case(
        "alu_every_op", program, {out_elem * cfg.out_elem_bytes: planes_to_acc(cfg, expected)}
    )


def padded_acc_case(cfg: AccelConfig, *, eight_bit: bool, seed: int = 2) -> Case:
    """A strided LOAD ACC (or ACC_8BIT) with all four pads, dumped whole."""
    rng = np.random.default_rng(seed)
    lanes = cfg.batch * cfg.block_out
    y, x, stride, pads = 2, 3, 5, (1, 2, 1, 2)  # y_pad_0, y_pad_1, x_pad_0, x_pad_1
    mem = MemId.ACC_8BIT if eight_bit else MemId.ACC
    elem = cfg.elem_bytes(mem)
    base_elem = 0x1000 // elem + 3
    dtype = np.int8 if eight_bit else np.int32
    info = np.iinfo(dtype)
    table = rng.integers(info.min, info.max + 1, (y * stride, lanes)).astype(dtype)
    width = pads[2] + x + pads[3]
    grid = np.zeros((pads[0] + y + pads[1], width, lanes), dtype=np.int64)
    for row in range(y):
        grid[pads[0] + row, pads[2] : pads[2] + x] = table[row * stride : row * stride + x]
    rows = grid.shape[0] * width
    out_elem = 0x2000 // cfg.out_elem_bytes
    insns = [
        load(MemId.UOP, 0, 0, 1, 1, 1),
        load(
            mem,
            0,
            base_elem,
            y,
            x,
            stride,
            y_pad_0=pads[0],
            y_pad_1=pads[1],
            x_pad_0=pads[2],
            x_pad_1=pads[3],
        ),
        AluInsn(alu_opcode=AluOp.SHR, use_imm=True, imm=0, push_next_dep=True, **rows_loop(rows)),
        *dump_acc(cfg, rows, out_elem),
        *drain(),
    ]
    program = Program(
        cfg,
        insns,
        [Uop(dst_idx=0, src_idx=0)],
        segments=[DramSegment("table", base_elem * elem, table.astype(dtype).tobytes())],
    )
    name = "padded_acc8" if eight_bit else "padded_acc"
    return Case(
        name,
        program,
        {out_elem * cfg.out_elem_bytes: planes_to_acc(cfg, grid.reshape(rows, lanes))},
    )


def two_round_gemm_case(cfg: AccelConfig, seed: int = 3) -> Case:
    """Two rounds of load -> GEMM -> requantise -> store reusing the same buffer rows, so every
    write-after-read between modules is ordered by tokens. Round 0's weight row straddles a
    4 KiB boundary (two bursts); outputs go to odd element addresses with an odd row stride
    (sub-beat writes with strobes)."""
    rng = np.random.default_rng(seed)
    rows, tiles = 3, 2
    inp_bytes, wgt_bytes, out_bytes = cfg.inp_elem_bytes, cfg.wgt_elem_bytes, cfg.out_elem_bytes
    inp_elem = [0x1000 // inp_bytes - 1, 0x1800 // inp_bytes + 1]
    wgt_elem = [0x2000 // wgt_bytes - 1, 0x2400 // wgt_bytes]
    out_elem = [0x3000 // out_bytes + 1, 0x3400 // out_bytes + 3]
    out_stride = 2 * tiles + 1
    segments, expected, insns = [], {}, [load(MemId.UOP, 0, 0, 1, 1, 1)]
    for r in range(2):
        inp = rng.integers(-128, 128, (rows, cfg.batch, cfg.block_in)).astype(np.int8)
        wgt = rng.integers(-128, 128, (tiles, cfg.block_out, cfg.block_in)).astype(np.int8)
        segments += [
            DramSegment(f"inp{r}", inp_elem[r] * inp_bytes, inp.tobytes()),
            DramSegment(f"wgt{r}", wgt_elem[r] * wgt_bytes, wgt.tobytes()),
        ]
        acc = np.einsum("rbi,toi->rtbo", inp.astype(np.int64), wgt.astype(np.int64))
        out = np.vectorize(lambda v: wrap(int(v) >> 4, 8))(acc).astype(np.int8)
        for i in range(rows):
            address = (out_elem[r] + i * out_stride) * out_bytes
            expected[address] = out[i].tobytes()
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
        insns += [
            load(MemId.INP, 0, inp_elem[r], rows, 1, 1, pop_next_dep=bool(r)),
            load(MemId.WGT, 0, wgt_elem[r], 1, tiles, tiles, push_next_dep=True),
            load(MemId.INP, 0, 0, 0, 0, 0),  # a load no-op between them
            GemmInsn(reset_reg=True, pop_next_dep=bool(r), **grid),
            GemmInsn(pop_prev_dep=True, push_prev_dep=(r == 0), **grid),
            AluInsn(
                alu_opcode=AluOp.SHR,
                use_imm=True,
                imm=4,
                push_next_dep=True,
                **rows_loop(rows * tiles),
            ),
            store(0, out_elem[r], rows, tiles, out_stride, pop_prev_dep=True, push_prev_dep=True),
            store(0, 0, 0, 0, 0),  # a store no-op
        ]
    insns += drain()
    program = Program(
        cfg, insns, [Uop(dst_idx=0, src_idx=0, wgt_idx=0)], uop_base=0, segments=segments
    )
    return Case("two_round_gemm", program, expected)


def all_cases(cfg: AccelConfig) -> list[Case]:
    return [
        demo_case(cfg),
        alu_case(cfg),
        padded_acc_case(cfg, eight_bit=False),
        padded_acc_case(cfg, eight_bit=True),
        two_round_gemm_case(cfg),
    ]
