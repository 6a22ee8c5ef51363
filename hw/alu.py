"""The tensor ALU: one accumulator row, lane by lane, combinational (SEMANTICS 6).

``result = op(a, x)`` for every ``[b][o]`` lane, with ``x`` the other operand (an accumulator
row or the sign-extended immediate broadcast by the caller). SHR reads ``x``'s low
``cfg.shr_arg_bits`` bits as a signed shift (negative shifts left); MUL multiplies by its low
``cfg.mul_arg_bits`` bits, signed. Results wrap to ``acc_width``. Only the opcodes of
``cfg.alu_ops`` are built: without ``alu_mul`` there is no multiplier at all. Any other opcode
(outside :class:`isa.AluOp`, or MUL without ``alu_mul``) leaves ``a`` unchanged: such a word
cannot be encoded.
"""

from __future__ import annotations

from amaranth.hdl import Module, Mux, Signal, signed
from amaranth.lib import wiring
from amaranth.lib.wiring import In, Out

from hw.layouts import insn_layouts, row_layouts
from isa import AccelConfig, AluOp

__all__ = ["TensorAlu"]


class TensorAlu(wiring.Component):
    """``result = op(a, x)`` on accumulator rows."""

    def __init__(self, cfg: AccelConfig):
        self._cfg = cfg
        rows = row_layouts(cfg)
        super().__init__(
            {
                "op": In(insn_layouts(cfg).alu["alu_opcode"].shape),
                "a": In(rows.acc),
                "x": In(rows.acc),
                "result": Out(rows.acc),
            }
        )

    def elaborate(self, platform) -> Module:
        m = Module()
        cfg = self._cfg
        for b in range(cfg.batch):
            for o in range(cfg.block_out):
                a, x, result = self.a[b][o], self.x[b][o], self.result[b][o]
                shift = Signal(signed(cfg.shr_arg_bits), name=f"shift_{b}_{o}")
                m.d.comb += shift.eq(x[: cfg.shr_arg_bits].as_signed())
                distance = Mux(shift < 0, -shift, shift).as_unsigned()
                with m.Switch(self.op):
                    with m.Case(AluOp.MIN):
                        m.d.comb += result.eq(Mux(a < x, a, x))
                    with m.Case(AluOp.MAX):
                        m.d.comb += result.eq(Mux(a > x, a, x))
                    with m.Case(AluOp.ADD):
                        m.d.comb += result.eq(a + x)
                    with m.Case(AluOp.SHR):
                        m.d.comb += result.eq(Mux(shift < 0, a << distance, a >> distance))
                    if AluOp.MUL in cfg.alu_ops:
                        with m.Case(AluOp.MUL):
                            m.d.comb += result.eq(a * x[: cfg.mul_arg_bits].as_signed())
                    with m.Default():
                        m.d.comb += result.eq(a)
        return m
