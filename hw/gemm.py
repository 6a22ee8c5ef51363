"""The GEMM core: BATCH x BLOCK_IN inputs times BLOCK_OUT x BLOCK_IN weights, one per cycle.

Every product is registered, then an adder tree sums BLOCK_IN products per output lane with a
register after each level, so a new pair of operands enters every cycle and its exact dot
products (``inp_width + wgt_width + log2(block_in)`` bits, which the configuration guarantees
fit the accumulator) leave :attr:`GemmCore.latency` cycles later.
"""

from __future__ import annotations

from amaranth.hdl import Module, Signal, signed
from amaranth.lib import data, wiring
from amaranth.lib.wiring import In, Out

from hw.layouts import row_layouts
from isa import AccelConfig

__all__ = ["GemmCore", "dot_layout"]


def _log2(value: int) -> int:
    return (value - 1).bit_length()


def dot_layout(cfg: AccelConfig) -> data.ArrayLayout:
    """The core's result: ``[batch][block_out]`` exact dot products."""
    width = cfg.inp_width + cfg.wgt_width + _log2(cfg.block_in)
    return data.ArrayLayout(data.ArrayLayout(signed(width), cfg.block_out), cfg.batch)


class GemmCore(wiring.Component):
    """``dot[b][o] = sum_i inp[b][i] * wgt[o][i]``, pipelined, :attr:`latency` cycles."""

    def __init__(self, cfg: AccelConfig):
        self._cfg = cfg
        rows = row_layouts(cfg)
        super().__init__({"inp": In(rows.inp), "wgt": In(rows.wgt), "dot": Out(dot_layout(cfg))})

    @property
    def latency(self) -> int:
        """Cycles from operands to their dot products: the product register plus one per level."""
        return 1 + _log2(self._cfg.block_in)

    def elaborate(self, platform) -> Module:
        m = Module()
        cfg = self._cfg
        product_shape = signed(cfg.inp_width + cfg.wgt_width)
        for b in range(cfg.batch):
            for o in range(cfg.block_out):
                terms = []
                for i in range(cfg.block_in):
                    product = Signal(product_shape, name=f"p_{b}_{o}_{i}")
                    m.d.sync += product.eq(self.inp[b][i] * self.wgt[o][i])
                    terms.append(product)
                level = 0
                while len(terms) > 1:
                    level += 1
                    sums = []
                    for pair in range(len(terms) // 2):
                        left, right = terms[2 * pair], terms[2 * pair + 1]
                        total = Signal(
                            signed(left.shape().width + 1), name=f"s{level}_{b}_{o}_{pair}"
                        )
                        m.d.sync += total.eq(left + right)
                        sums.append(total)
                    terms = sums
                m.d.comb += self.dot[b][o].eq(terms[0])
        return m
