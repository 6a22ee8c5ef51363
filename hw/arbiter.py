"""The read arbiter: several read clients share the memory port's ``ar``/``r`` channels.

Bursts are granted round-robin; a granted burst's client enters the route queue (a FIFO, one
flag per client in each of its ``outstanding`` registers, the head in the first: the beats' routing
decodes nothing), and the data beats, which the memory returns in request order, go to the
client at its head until the beat marked ``last``. A client must accept every beat of each burst
it requests without waiting on another client (the read clients here either write SRAM or reserve
buffer space before asking).

A client's ``ar.ready`` is its turn (the grant it gets whenever it requests) with the bus's
ready, whatever its own ``ar.valid``: as a stream's ready may be, and as no client looks at it
without its valid. So no path runs from a client's request, through the arbitration, back to its
own handshake.
"""

from __future__ import annotations

from amaranth.hdl import Array, Cat, Module, Mux, Signal
from amaranth.lib import wiring
from amaranth.lib.wiring import In, Out

from hw.memport import ReadClientSignature
from isa import READ_OUTSTANDING, AccelConfig

__all__ = ["ReadArbiter"]


class ReadArbiter(wiring.Component):
    """Round-robin arbiter of ``clients`` read masters onto one (``bus``), with up to
    ``outstanding`` bursts in flight."""

    def __init__(self, cfg: AccelConfig, clients: int, *, outstanding: int = READ_OUTSTANDING):
        self._count = clients
        self._outstanding = outstanding
        super().__init__(
            {
                "clients": In(ReadClientSignature(cfg)).array(clients),
                "bus": Out(ReadClientSignature(cfg)),
            }
        )

    def elaborate(self, platform) -> Module:
        m = Module()
        n = self._count
        # route[k]: the client of the k-th oldest burst in flight, one flag per client (none
        # set past the last): as a SyncFIFO, a burst pushed is at the head a cycle later
        route = [Signal(n, name=f"route{k}") for k in range(self._outstanding)]
        room = ~route[-1].any()
        push, pop = Signal(), Signal()
        bus = self.bus
        previous = Signal(range(n))
        grant = Signal(range(n))
        requesting = Signal()
        holding = Signal()  # a presented burst keeps its grant until accepted (AXI stability)
        held = Signal(range(n))
        with m.If(holding):
            m.d.comb += [grant.eq(held), requesting.eq(1)]
        with m.Else(), m.Switch(previous):
            for start in range(n):
                with m.Case(start):
                    order = [(start + step) % n for step in range(1, n + 1)]
                    with m.If(self.clients[order[0]].ar.valid):
                        m.d.comb += [grant.eq(order[0]), requesting.eq(1)]
                    for index in order[1:]:
                        with m.Elif(self.clients[index].ar.valid):
                            m.d.comb += [grant.eq(index), requesting.eq(1)]
        requests = Array(client.ar.payload for client in self.clients)
        m.d.comb += [
            bus.ar.valid.eq(requesting & room),
            bus.ar.payload.eq(requests[grant]),
            push.eq(bus.ar.valid & bus.ar.ready),
        ]
        # turn[i]: client i has the grant if it requests (the held one, or none ahead of it in
        # the round-robin order requests)
        turn = [Signal(name=f"turn{index}") for index in range(n)]
        with m.If(holding):
            m.d.comb += [turn[index].eq(held == index) for index in range(n)]
        with m.Else(), m.Switch(previous):
            for start in range(n):
                with m.Case(start):
                    order = [(start + step) % n for step in range(1, n + 1)]
                    for position, index in enumerate(order):
                        ahead = [self.clients[other].ar.valid for other in order[:position]]
                        m.d.comb += turn[index].eq(~Cat(*ahead).any() if ahead else 1)
        for index, client in enumerate(self.clients):
            m.d.comb += client.ar.ready.eq(bus.ar.ready & room & turn[index])
        with m.If(push):
            m.d.sync += [previous.eq(grant), holding.eq(0)]
        with m.Elif(bus.ar.valid):
            m.d.sync += [held.eq(grant), holding.eq(1)]

        head = route[0]
        readies = Cat(client.r.ready for client in self.clients)
        for index, client in enumerate(self.clients):
            m.d.comb += [
                client.r.payload.eq(bus.r.payload),
                client.r.valid.eq(bus.r.valid & head[index]),
            ]
        m.d.comb += [
            bus.r.ready.eq((head & readies).any()),
            pop.eq(bus.r.valid & bus.r.ready & bus.r.payload.last),
        ]
        # A pop shifts the queue down; a push fills the first free register after it.
        shifted = [
            Mux(pop, later, here) for here, later in zip(route, [*route[1:], 0], strict=True)
        ]
        granted = Cat(grant == index for index in range(n))
        for k, register in enumerate(shifted):
            first_free = ~register.any() & (1 if k == 0 else shifted[k - 1].any())
            m.d.sync += route[k].eq(Mux(push & first_free, granted, register))
        return m
