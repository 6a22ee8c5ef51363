"""Dependency-token counters between neighbouring modules (SEMANTICS 2).

A counter of ``cfg.token_counter_bits`` bits replaces VTA's token FIFO: the producer pulses
``push``, the consumer pulses ``pop`` when ``available`` (count > 0). A push that would pass the
maximum leaves the count saturated and raises the sticky ``overflow`` flag, which the top level
reports as an error.
"""

from __future__ import annotations

from amaranth.hdl import Module
from amaranth.lib import wiring
from amaranth.lib.wiring import In, Out

from isa import AccelConfig

__all__ = ["TokenCounter", "TokenPopSignature", "TokenPushSignature"]

#: The producer's side of a counter.
TokenPushSignature = wiring.Signature({"push": Out(1)})
#: The consumer's side: ``pop`` only while ``available``.
TokenPopSignature = wiring.Signature({"pop": Out(1), "available": In(1)})


class TokenCounter(wiring.Component):
    """One token counter; ``count`` is visible for status and debugging."""

    def __init__(self, cfg: AccelConfig):
        super().__init__(
            {
                "producer": In(TokenPushSignature),
                "consumer": In(TokenPopSignature),
                "count": Out(cfg.token_counter_bits),
                "overflow": Out(1),
            }
        )

    def elaborate(self, platform) -> Module:
        m = Module()
        push = self.producer.push
        # ``available`` (count > 0) is a register kept with the count, not a comparison of it:
        # the consumer's decision to start an instruction waits on it.
        available = self.consumer.available
        pop = self.consumer.pop & available
        full = self.count == (1 << len(self.count)) - 1
        with m.If(push & ~pop):
            m.d.sync += available.eq(1)
            with m.If(full):
                m.d.sync += self.overflow.eq(1)
            with m.Else():
                m.d.sync += self.count.eq(self.count + 1)
        with m.Elif(pop & ~push):
            m.d.sync += [self.count.eq(self.count - 1), available.eq(self.count != 1)]
        return m
