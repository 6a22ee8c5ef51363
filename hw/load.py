"""The load module: LOAD INP and LOAD WGT into the input and weight buffers (SEMANTICS 3).

It pops ``g2l`` and pushes ``l2g`` (its next neighbour is compute); the buffers belong to the
top level, which gives this module their write ports and compute their read ports.
"""

from __future__ import annotations

from amaranth.hdl import Module, Value
from amaranth.lib import data, memory, stream, wiring
from amaranth.lib.wiring import In, Out

from hw.layouts import insn_layouts, is_any
from hw.loader import LoadEngine, buffer_port_signature
from hw.memport import ReadClientSignature
from hw.slot import InstructionSlot
from hw.tokens import TokenPopSignature, TokenPushSignature
from isa import INSN_WIDTH, AccelConfig, MemId

__all__ = ["Load"]

_BUFFERS = (MemId.INP, MemId.WGT)


class Load(wiring.Component):
    """The load module."""

    def __init__(self, cfg: AccelConfig):
        self._cfg = cfg
        super().__init__(
            {
                "cmd": In(stream.Signature(INSN_WIDTH)),
                "g2l": Out(TokenPopSignature),
                "l2g": Out(TokenPushSignature),
                "read": Out(ReadClientSignature(cfg)),
                "inp": In(buffer_port_signature(cfg, MemId.INP, memory.WritePort)),
                "wgt": In(buffer_port_signature(cfg, MemId.WGT, memory.WritePort)),
                "idle": Out(1),
            }
        )

    def elaborate(self, platform) -> Module:
        m = Module()
        layout = insn_layouts(self._cfg).mem

        def runs(word: Value) -> Value:
            """A LOAD of this module's buffers that moves rows (not a no-op)."""
            insn = data.View(layout, word)
            return is_any(insn.memory_type, _BUFFERS) & (insn.x_size != 0)

        m.submodules.slot = slot = InstructionSlot(self._cfg, prev=False, next=True, decode=runs)
        m.submodules.loader = loader = LoadEngine(self._cfg, _BUFFERS)
        wiring.connect(m, wiring.flipped(self.cmd), slot.cmd)
        wiring.connect(m, slot.next_pop, wiring.flipped(self.g2l))
        wiring.connect(m, slot.next_push, wiring.flipped(self.l2g))
        wiring.connect(m, loader.read, wiring.flipped(self.read))
        wiring.connect(m, loader.inp, wiring.flipped(self.inp))
        wiring.connect(m, loader.wgt, wiring.flipped(self.wgt))
        m.d.comb += [
            loader.insn.eq(data.View(layout, slot.insn)),
            loader.start.eq(slot.execute & slot.flags),
            slot.done.eq(~loader.busy),
            self.idle.eq(slot.idle),
        ]
        return m
