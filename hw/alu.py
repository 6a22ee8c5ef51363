"""The tensor ALU: one accumulator row, lane by lane, in two pipeline stages (SEMANTICS 6).

``result = op(a, x)`` for every ``[b][o]`` lane, of the operands (and ``op``) given
:attr:`TensorAlu.latency` cycles earlier, with ``x`` the other operand (an accumulator row or the
sign-extended immediate broadcast by the caller). SHR reads ``x``'s low ``cfg.shr_arg_bits`` bits
as a signed shift (negative shifts left); MUL multiplies by its low ``cfg.mul_arg_bits`` bits,
signed. Results wrap to ``acc_width``. Only the opcodes of ``cfg.alu_ops`` are built: without
``alu_mul`` there is no multiplier at all. Any other opcode (outside :class:`isa.AluOp`, or MUL
without ``alu_mul``) leaves ``a`` unchanged: such a word cannot be encoded.

The first stage computes ADD and SHR and registers the chosen one (``a`` for the others); for
MIN and MAX it registers ``x`` and whether ``a < x`` beside it, so that no comparison's carry
chain drives a 32-bit multiplexer in that cycle. MUL multiplies each :data:`MUL_SLICE_BITS`-bit
slice of ``a`` by the factor (one hardware multiplier each) and registers the partial products,
so no multiplier's output feeds more logic in its cycle. The second stage adds the partial
products and picks MUL's sum, MIN's or MAX's operand, or the registered result.
"""

from __future__ import annotations

from amaranth.hdl import Module, Mux, Signal, signed
from amaranth.lib import wiring
from amaranth.lib.wiring import In, Out

from hw.layouts import insn_layouts, row_layouts
from isa import AccelConfig, AluOp

__all__ = ["MUL_SLICE_BITS", "TensorAlu"]

#: MUL's partial products: slices of ``a`` this wide (the top one signed) times the factor,
#: each within one 18x18 (ECP5) or 25x18 (DSP48E1) multiplier.
MUL_SLICE_BITS = 16


class TensorAlu(wiring.Component):
    """``result = op(a, x)`` on accumulator rows, :attr:`latency` cycles after the operands."""

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

    @property
    def latency(self) -> int:
        """Cycles from the operands to their result: the first stage's register."""
        return 1

    def elaborate(self, platform) -> Module:
        m = Module()
        cfg = self._cfg
        multiply = AluOp.MUL in cfg.alu_ops
        is_mul, is_min, is_max = Signal(), Signal(), Signal()
        m.d.sync += [is_min.eq(self.op == AluOp.MIN), is_max.eq(self.op == AluOp.MAX)]
        if multiply:
            m.d.sync += is_mul.eq(self.op == AluOp.MUL)
        for b in range(cfg.batch):
            for o in range(cfg.block_out):
                a, x, result = self.a[b][o], self.x[b][o], self.result[b][o]
                # SHR's signed shift n: right by n's low bits when n >= 0; left by -n = ~n + 1
                # otherwise, done as a left shift by one and then by ~n, so no adder negates n.
                shift = x[: cfg.shr_arg_bits]
                negative, low = shift[-1], shift[:-1]
                shifted = Mux(negative, (a << 1) << ~low, a >> low)
                picked = Signal.like(result, name=f"picked_{b}_{o}")
                other = Signal.like(result, name=f"other_{b}_{o}")
                less = Signal(name=f"less_{b}_{o}")
                m.d.sync += [other.eq(x), less.eq(a < x)]
                # MIN takes x unless a < x, MAX takes x if a < x (either when they are equal)
                chosen = Mux((is_min & ~less) | (is_max & less), other, picked)
                with m.Switch(self.op):
                    with m.Case(AluOp.ADD):
                        m.d.sync += picked.eq(a + x)
                    with m.Case(AluOp.SHR):
                        m.d.sync += picked.eq(shifted)
                    with m.Default():
                        m.d.sync += picked.eq(a)
                if not multiply:
                    m.d.comb += result.eq(chosen)
                    continue
                factor = x[: cfg.mul_arg_bits].as_signed()
                product = 0
                for low in range(0, cfg.acc_width, MUL_SLICE_BITS):
                    piece = a[low : low + MUL_SLICE_BITS]
                    top = low + MUL_SLICE_BITS >= cfg.acc_width
                    partial = piece.as_signed() if top else piece.as_unsigned()
                    term = Signal(
                        signed(len(piece) + 1 + cfg.mul_arg_bits), name=f"mul{low}_{b}_{o}"
                    )
                    m.d.sync += term.eq(partial * factor)
                    product += term << low
                m.d.comb += result.eq(Mux(is_mul, product, chosen))
        return m
