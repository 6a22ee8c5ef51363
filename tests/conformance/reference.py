"""A slow, obviously-correct reference interpreter, written from ``isa/SEMANTICS.md`` alone.

It runs the instructions one at a time in program order, with Python integers and lists, and
shares nothing with the simulator except the instruction records and the micro-op decoder of
``isa``. For a valid program (token-correct and race-free) program order gives the same DRAM as
every legal schedule, so its DRAM must equal the functional simulator's. It checks nothing:
give it valid programs only.
"""

from __future__ import annotations

from isa import (
    AccelConfig,
    AluInsn,
    AluOp,
    FinishInsn,
    GemmInsn,
    MemId,
    MemInsn,
    Opcode,
    Program,
    Uop,
    decode_uop,
)

__all__ = ["reference_run"]


def _wrap(value: int, width: int) -> int:
    value &= (1 << width) - 1
    return value - (1 << width) if value >> (width - 1) else value


class _Reference:
    def __init__(self, cfg: AccelConfig, dram) -> None:
        self.cfg = cfg
        self.dram = dram
        b, bi, bo = cfg.batch, cfg.block_in, cfg.block_out
        self.uop = [Uop(dst_idx=0, src_idx=0, wgt_idx=0)] * cfg.uop_buff_depth
        self.inp = [[0] * (b * bi) for _ in range(cfg.inp_buff_depth)]
        self.wgt = [[0] * (bo * bi) for _ in range(cfg.wgt_buff_depth)]
        self.acc = [[0] * (b * bo) for _ in range(cfg.acc_buff_depth)]
        self.out = [[0] * (b * bo) for _ in range(cfg.acc_buff_depth)]

    # ---- DRAM elements
    def _read_element(self, mem: MemId, element: int):
        cfg = self.cfg
        size = cfg.elem_bytes(mem)
        raw = bytes(self.dram[element * size : (element + 1) * size])
        if mem is MemId.UOP:
            return decode_uop(int.from_bytes(raw, "little"), cfg)
        width = {
            MemId.INP: cfg.inp_width,
            MemId.WGT: cfg.wgt_width,
            MemId.ACC: cfg.acc_width,
            MemId.ACC_8BIT: 8,
        }[mem]
        step = width // 8
        return [
            int.from_bytes(raw[i : i + step], "little", signed=True) for i in range(0, size, step)
        ]

    def _zero_row(self, mem: MemId):
        if mem is MemId.UOP:
            return Uop(dst_idx=0, src_idx=0, wgt_idx=0)
        return [0] * len(self._buffer(mem)[0])

    def _buffer(self, mem: MemId):
        return {
            MemId.UOP: self.uop,
            MemId.INP: self.inp,
            MemId.WGT: self.wgt,
            MemId.ACC: self.acc,
            MemId.ACC_8BIT: self.acc,
        }[mem]

    # ---- instructions
    def load(self, insn: MemInsn) -> None:
        if insn.x_size == 0:
            return
        mem = insn.memory_type
        buffer = self._buffer(mem)
        width = insn.x_pad_0 + insn.x_size + insn.x_pad_1
        rows = []
        for _ in range(insn.y_pad_0 * width):
            rows.append(self._zero_row(mem))
        for y in range(insn.y_size):
            rows += [self._zero_row(mem) for _ in range(insn.x_pad_0)]
            for x in range(insn.x_size):
                rows.append(self._read_element(mem, insn.dram_base + y * insn.x_stride + x))
            rows += [self._zero_row(mem) for _ in range(insn.x_pad_1)]
        for _ in range(insn.y_pad_1 * width):
            rows.append(self._zero_row(mem))
        for offset, row in enumerate(rows):
            buffer[insn.sram_base + offset] = row

    def store(self, insn: MemInsn) -> None:
        if insn.x_size == 0:
            return
        cfg = self.cfg
        size = cfg.out_elem_bytes
        step = cfg.out_width // 8
        for y in range(insn.y_size):
            for x in range(insn.x_size):
                row = self.out[insn.sram_base + y * insn.x_size + x]
                data = b"".join(v.to_bytes(step, "little", signed=True) for v in row)
                element = insn.dram_base + y * insn.x_stride + x
                self.dram[element * size : (element + 1) * size] = data

    def _steps(self, insn: GemmInsn | AluInsn):
        wgt_out = getattr(insn, "wgt_factor_out", 0)
        wgt_in = getattr(insn, "wgt_factor_in", 0)
        for i0 in range(insn.iter_out):
            for i1 in range(insn.iter_in):
                for u in range(insn.uop_bgn, insn.uop_end):
                    uop = self.uop[u]
                    yield (
                        uop.dst_idx + i0 * insn.dst_factor_out + i1 * insn.dst_factor_in,
                        uop.src_idx + i0 * insn.src_factor_out + i1 * insn.src_factor_in,
                        uop.wgt_idx + i0 * wgt_out + i1 * wgt_in,
                    )

    def gemm(self, insn: GemmInsn) -> None:
        cfg = self.cfg
        b, bi, bo = cfg.batch, cfg.block_in, cfg.block_out
        for d, s, w in self._steps(insn):
            if insn.reset_reg:
                self.acc[d] = [0] * (b * bo)
            else:
                new = []
                for bb in range(b):
                    for oc in range(bo):
                        dot = sum(
                            self.inp[s][bb * bi + ic] * self.wgt[w][oc * bi + ic]
                            for ic in range(bi)
                        )
                        new.append(_wrap(self.acc[d][bb * bo + oc] + dot, cfg.acc_width))
                self.acc[d] = new
            self.out[d] = [_wrap(v, cfg.out_width) for v in self.acc[d]]

    def alu(self, insn: AluInsn) -> None:
        cfg = self.cfg
        for d, s, _ in self._steps(insn):
            if insn.reset_reg:  # a reset step reads nothing (SEMANTICS 6)
                new = [0] * len(self.acc[d])
            else:
                operands = [insn.imm] * len(self.acc[d]) if insn.use_imm else list(self.acc[s])
                new = [
                    self._alu_op(insn.alu_opcode, a, x)
                    for a, x in zip(self.acc[d], operands, strict=True)
                ]
            self.acc[d] = new
            self.out[d] = [_wrap(v, cfg.out_width) for v in new]

    def _alu_op(self, op: AluOp, a: int, x: int) -> int:
        cfg = self.cfg
        if op is AluOp.MIN:
            return min(a, x)
        if op is AluOp.MAX:
            return max(a, x)
        if op is AluOp.ADD:
            return _wrap(a + x, cfg.acc_width)
        if op is AluOp.MUL:
            return _wrap(a * _wrap(x, cfg.mul_arg_bits), cfg.acc_width)
        shift = _wrap(x, cfg.shr_arg_bits)
        return a >> shift if shift >= 0 else _wrap(a << -shift, cfg.acc_width)


def reference_run(program: Program, dram) -> None:
    """Run ``program`` in program order against ``dram`` (a bytearray or uint8 array)."""
    ref = _Reference(program.config, dram)
    program.write_to(dram)
    for insn in program.instructions:
        if isinstance(insn, MemInsn):
            (ref.load if insn.opcode is Opcode.LOAD else ref.store)(insn)
        elif isinstance(insn, GemmInsn):
            ref.gemm(insn)
        elif isinstance(insn, AluInsn):
            ref.alu(insn)
        else:
            assert isinstance(insn, FinishInsn)
