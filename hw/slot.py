"""The instruction slot every module executes through: take, pop, execute, push (SEMANTICS 2).

The slot takes an instruction from the module's command queue, waits until every counter its
pop flags name is non-zero, pops them and pulses ``execute``; the module runs the instruction
(``insn`` stays stable meanwhile) and raises ``done`` when it has completed, whereupon the slot
pushes the tokens its push flags name and pulses ``retire``. Flags toward a neighbour the module
does not have are ignored (the simulators reject them).
"""

from __future__ import annotations

from collections.abc import Callable

from amaranth.hdl import Module, Signal, Value
from amaranth.lib import data, stream, wiring
from amaranth.lib.wiring import In, Out

from hw.layouts import insn_layouts
from hw.tokens import TokenPopSignature, TokenPushSignature
from isa import INSN_WIDTH, AccelConfig

__all__ = ["InstructionSlot"]


class InstructionSlot(wiring.Component):
    """One module's instruction slot; ``prev``/``next`` say which neighbours it has.

    ``decode``, if given, maps an instruction word to flags (any width) that the slot registers
    as it takes the instruction, on ``flags``: what a module starts on when ``execute`` pulses
    is then a register, not a decoding of ``insn`` in the path from the token counters.
    """

    def __init__(
        self,
        cfg: AccelConfig,
        *,
        prev: bool,
        next: bool,
        decode: Callable[[Value], Value] | None = None,
    ):
        self._layout = insn_layouts(cfg).common
        self._sides = [side for side, present in (("prev", prev), ("next", next)) if present]
        self._decode = decode
        flags = len(Value.cast(decode(Signal(INSN_WIDTH)))) if decode else 0
        members = {
            "cmd": In(stream.Signature(INSN_WIDTH)),
            "insn": Out(INSN_WIDTH),
            "flags": Out(flags),
            "execute": Out(1),
            "done": In(1),
            "retire": Out(1),
            "idle": Out(1),
        }
        for side in self._sides:
            members[f"{side}_pop"] = Out(TokenPopSignature)
            members[f"{side}_push"] = Out(TokenPushSignature)
        super().__init__(members)

    def elaborate(self, platform) -> Module:
        m = Module()
        flags = data.View(self._layout, self.insn)
        ready = Signal()
        tokens_there = 1
        for side in self._sides:
            wanted = getattr(flags, f"pop_{side}_dep")
            tokens_there &= ~wanted | getattr(self, f"{side}_pop").available
        m.d.comb += ready.eq(tokens_there)
        with m.FSM():
            with m.State("TAKE"):
                m.d.comb += [self.idle.eq(1), self.cmd.ready.eq(1)]
                with m.If(self.cmd.valid):
                    m.d.sync += self.insn.eq(self.cmd.payload)
                    if self._decode:
                        m.d.sync += self.flags.eq(self._decode(self.cmd.payload))
                    m.next = "POP"
            with m.State("POP"), m.If(ready):
                m.d.comb += self.execute.eq(1)
                for side in self._sides:
                    m.d.comb += getattr(self, f"{side}_pop").pop.eq(
                        getattr(flags, f"pop_{side}_dep")
                    )
                m.next = "RUN"
            with m.State("RUN"), m.If(self.done):
                m.d.comb += self.retire.eq(1)
                for side in self._sides:
                    m.d.comb += getattr(self, f"{side}_push").push.eq(
                        getattr(flags, f"push_{side}_dep")
                    )
                m.next = "TAKE"
        return m
