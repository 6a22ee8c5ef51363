"""The two-level loop sequencer of GEMM and ALU instructions (SEMANTICS 5, 6).

For ``i0 < iter_out``, ``i1 < iter_in``, ``u`` in ``[uop_bgn, uop_end)`` it emits one step per
cycle: the micro-op index ``u`` and the offsets ``i0 * factor_out + i1 * factor_in`` for the
destination, source and weight indices, computed by running sums (no multipliers). Offsets wrap
at their index widths, as the buffers' indices do. An instruction with an empty loop emits
nothing.
"""

from __future__ import annotations

from amaranth.hdl import Module, Signal, unsigned
from amaranth.lib import data, stream, wiring
from amaranth.lib.wiring import In, Out

from hw.layouts import insn_layouts
from isa import AccelConfig

__all__ = ["LoopSequencer", "loop_layout", "step_layout"]

_INDICES = ("dst", "src", "wgt")


def _width(layout: data.StructLayout, name: str) -> int:
    return layout[name].shape.width


def loop_layout(cfg: AccelConfig) -> data.StructLayout:
    """The loop fields of GEMM and ALU; ``src`` factors are as wide as the wider of the two."""
    gemm, alu = insn_layouts(cfg).gemm, insn_layouts(cfg).alu
    members = {
        name: unsigned(_width(gemm, name)) for name in ("uop_bgn", "uop_end", "iter_out", "iter_in")
    }
    for index in _INDICES:
        for level in ("out", "in"):
            name = f"{index}_factor_{level}"
            widths = [_width(layout, name) for layout in (gemm, alu) if name in layout.members]
            members[name] = unsigned(max(widths))
    return data.StructLayout(members)


def step_layout(cfg: AccelConfig) -> data.StructLayout:
    """One step: micro-op index, the three index offsets, and whether it is the last."""
    loops = loop_layout(cfg)
    members = {"uop": loops["uop_bgn"].shape}
    members.update({index: loops[f"{index}_factor_in"].shape for index in _INDICES})
    members["last"] = unsigned(1)
    return data.StructLayout(members)


class LoopSequencer(wiring.Component):
    """Takes one loop on ``cmd`` (when not ``busy``) and emits its steps on ``step``."""

    def __init__(self, cfg: AccelConfig):
        super().__init__(
            {
                "cmd": In(stream.Signature(loop_layout(cfg))),
                "step": Out(stream.Signature(step_layout(cfg))),
                "busy": Out(1),
            }
        )

    def elaborate(self, platform) -> Module:
        m = Module()
        loop = Signal.like(self.cmd.payload)
        uop = Signal.like(loop.uop_bgn)
        inner = Signal.like(loop.iter_in)
        outer = Signal.like(loop.iter_out)
        # Per index: the offset at the start of the current outer iteration, and the current one.
        base = {index: Signal.like(self.step.payload[index]) for index in _INDICES}
        offset = {index: Signal.like(self.step.payload[index]) for index in _INDICES}
        # Each counter's last value is registered with the loop, so no subtraction lies in the
        # comparisons that decide the next step (and the stream's handshake fans out to).
        final_uop, final_inner, final_outer = (
            Signal.like(uop),
            Signal.like(inner),
            Signal.like(outer),
        )
        last_uop = uop == final_uop
        last_inner = inner == final_inner
        last_outer = outer == final_outer
        m.d.comb += [
            self.cmd.ready.eq(~self.busy),
            self.step.valid.eq(self.busy),
            self.step.payload.uop.eq(uop),
            self.step.payload.last.eq(last_uop & last_inner & last_outer),
        ]
        for index in _INDICES:
            m.d.comb += self.step.payload[index].eq(offset[index])
        with m.If(self.cmd.valid & self.cmd.ready):
            c = self.cmd.payload
            m.d.sync += [
                loop.eq(c),
                uop.eq(c.uop_bgn),
                final_uop.eq(c.uop_end - 1),
                final_inner.eq(c.iter_in - 1),
                final_outer.eq(c.iter_out - 1),
                inner.eq(0),
                outer.eq(0),
                self.busy.eq((c.iter_out != 0) & (c.iter_in != 0) & (c.uop_bgn < c.uop_end)),
            ]
            for index in _INDICES:
                m.d.sync += [base[index].eq(0), offset[index].eq(0)]
        with m.If(self.step.valid & self.step.ready):
            with m.If(~last_uop):
                m.d.sync += uop.eq(uop + 1)
            with m.Else():
                m.d.sync += uop.eq(loop.uop_bgn)
                with m.If(~last_inner):
                    m.d.sync += inner.eq(inner + 1)
                    for index in _INDICES:
                        step_in = loop[f"{index}_factor_in"]
                        m.d.sync += offset[index].eq(offset[index] + step_in)
                with m.Else():
                    m.d.sync += [inner.eq(0), outer.eq(outer + 1)]
                    for index in _INDICES:
                        step_out = loop[f"{index}_factor_out"]
                        m.d.sync += [
                            base[index].eq(base[index] + step_out),
                            offset[index].eq(base[index] + step_out),
                        ]
                    with m.If(last_outer):
                        m.d.sync += self.busy.eq(0)
        return m
