"""The GEMM core: BATCH x BLOCK_IN inputs times BLOCK_OUT x BLOCK_IN weights, one per cycle.

Every product is registered, then an adder tree sums BLOCK_IN products per output lane with a
register after each level, so a new pair of operands enters every cycle and its exact dot
products (``inp_width + wgt_width + log2(block_in)`` bits, which the configuration guarantees
fit the accumulator) leave :attr:`GemmCore.latency` cycles later.

Where the configuration packs DSPs (:attr:`isa.AccelConfig.gemm_packed_pairs`), the products of
output lanes ``2k`` and ``2k + 1`` with the same input element come from one multiplier, a
:class:`PackedMultiplier`, and are unpacked before the adder tree: the same values on the same
cycle, from half the DSP slices. Elaborated for a :class:`hw.parts.Part` (Amaranth's
``platform``: :mod:`hw.export` passes the part it exports for) the core packs only where that
part's multiplier holds a packed operand: an ECP5's 18 x 18 MULT18X18D does not, and its packed
product would take two of them and an adder in the fabric, where two products take two and none.
"""

from __future__ import annotations

from amaranth.hdl import Cat, Module, Mux, Signal, signed
from amaranth.lib import data, wiring
from amaranth.lib.wiring import In, Out

from hw.layouts import row_layouts
from hw.parts import Part
from isa import AccelConfig, ConfigError

__all__ = ["GemmCore", "PackedMultiplier", "dot_layout"]


def _log2(value: int) -> int:
    return (value - 1).bit_length()


def dot_layout(cfg: AccelConfig) -> data.ArrayLayout:
    """The core's result: ``[batch][block_out]`` exact dot products."""
    width = cfg.inp_width + cfg.wgt_width + _log2(cfg.block_in)
    return data.ArrayLayout(data.ArrayLayout(signed(width), cfg.block_out), cfg.batch)


class PackedMultiplier(wiring.Component):
    """``p0 = x * w0`` and ``p1 = x * w1`` from one registered multiplication, one cycle after
    the operands (signed ``inp_width``-bit ``x``, ``wgt_width``-bit weights).

    The multiplier's operand is the weights side by side, ``w0`` sign-extended to
    ``s = cfg.gemm_pack_shift`` bits (the width of a product) below ``w1``: no adder lies
    between the operands' registers and the multiplier. As a number that operand is
    ``(w1 + n) * 2**s + w0`` with ``n = 1`` when ``w0 < 0``, so the product is
    ``r = (x*w1 + x*n) * 2**s + x*w0``: the low product is ``r``'s low ``s`` bits (signed), and
    the high one ``r``'s next ``s`` bits, plus one when the low product is negative (its sign
    bit ``r[s - 1]``: the floor division by ``2**s`` borrowed it), less ``x*n``, which is
    registered beside the product. The operand takes ``wgt_width + s`` signed bits, within the
    ``wgt_width + s + 1`` that the configuration checks fit a DSP's A port before it packs
    (:attr:`isa.AccelConfig.gemm_packed_pairs`); a configuration that packs no pairs is a
    ConfigError here.
    """

    def __init__(self, cfg: AccelConfig):
        if not cfg.gemm_packed_pairs:
            raise ConfigError(
                "gemm_dsp_packing",
                cfg.gemm_dsp_packing,
                f"{cfg.fingerprint} packs no GEMM products (disabled, or inp_width="
                f"{cfg.inp_width} and wgt_width={cfg.wgt_width} do not fit one DSP)",
            )
        self._shift = cfg.gemm_pack_shift
        weight, product = signed(cfg.wgt_width), signed(cfg.gemm_pack_shift)
        super().__init__(
            {
                "x": In(signed(cfg.inp_width)),
                "w0": In(weight),
                "w1": In(weight),
                "p0": Out(product),
                "p1": Out(product),
            }
        )

    def elaborate(self, platform) -> Module:
        m = Module()
        shift = self._shift
        low = Signal(signed(shift))
        m.d.comb += low.eq(self.w0)  # sign-extended: wiring only
        packed = Cat(low, self.w1).as_signed()
        result = Signal(signed(len(packed) + self.x.shape().width))
        borrowed = Signal(signed(self.x.shape().width + 1))  # -x*n: w1 was taken as w1 + n
        m.d.sync += [
            result.eq(packed * self.x),
            borrowed.eq(Mux(self.w0 < 0, -self.x, 0)),
        ]
        m.d.comb += [
            self.p0.eq(result[:shift].as_signed()),
            self.p1.eq(result[shift : 2 * shift].as_signed() + borrowed + result[shift - 1]),
        ]
        return m


class GemmCore(wiring.Component):
    """``dot[b][o] = sum_i inp[b][i] * wgt[o][i]``, pipelined, :attr:`latency` cycles."""

    def __init__(self, cfg: AccelConfig):
        self._cfg = cfg
        rows = row_layouts(cfg)
        super().__init__({"inp": In(rows.inp), "wgt": In(rows.wgt), "dot": Out(dot_layout(cfg))})

    @property
    def latency(self) -> int:
        """Cycles from operands to their dot products: the product register plus one per level
        (packed or not)."""
        return 1 + _log2(self._cfg.block_in)

    def elaborate(self, platform) -> Module:
        m = Module()
        cfg = self._cfg
        pairs = cfg.gemm_packed_pairs
        if isinstance(platform, Part):
            pairs = min(pairs, cfg.gemm_pairs_packed_by(*platform.multiplier))
        for b in range(cfg.batch):
            products = self._products(m, b, pairs)
            for o in range(cfg.block_out):
                terms = [products[o, i] for i in range(cfg.block_in)]
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

    def _products(self, m: Module, b: int, pairs: int) -> dict[tuple[int, int], Signal]:
        """The registered products ``inp[b][i] * wgt[o][i]`` of batch row ``b`` by ``(o, i)``:
        lanes ``2k`` and ``2k + 1`` below ``2 * pairs`` from packed multipliers, the others
        from one multiplier each."""
        cfg = self._cfg
        inp, wgt = self.inp[b], self.wgt
        products: dict[tuple[int, int], Signal] = {}
        for i in range(cfg.block_in):
            for k in range(pairs):
                pair = m.submodules[f"pack_{b}_{2 * k}_{i}"] = PackedMultiplier(cfg)
                m.d.comb += [
                    pair.x.eq(inp[i]),
                    pair.w0.eq(wgt[2 * k][i]),
                    pair.w1.eq(wgt[2 * k + 1][i]),
                ]
                products[2 * k, i], products[2 * k + 1, i] = pair.p0, pair.p1
            for o in range(2 * pairs, cfg.block_out):
                product = Signal(signed(cfg.inp_width + cfg.wgt_width), name=f"p_{b}_{o}_{i}")
                m.d.sync += product.eq(inp[i] * wgt[o][i])
                products[o, i] = product
        return products
