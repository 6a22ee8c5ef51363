"""The read arbiter: several read clients share the memory port's ``ar``/``r`` channels.

Bursts are granted round-robin; a granted burst's client index enters a FIFO, and the data
beats, which the memory returns in request order, go to the client at its head until the beat
marked ``last``. A client must accept every beat of each burst it requests without waiting on
another client (the read clients here either write SRAM or reserve buffer space before asking).
"""

from __future__ import annotations

from amaranth.hdl import Array, Module, Signal
from amaranth.lib import fifo, wiring
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
        m.submodules.route = route = fifo.SyncFIFO(
            width=max(1, (n - 1).bit_length()), depth=self._outstanding
        )
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
            bus.ar.valid.eq(requesting & route.w_rdy),
            bus.ar.payload.eq(requests[grant]),
            route.w_data.eq(grant),
            route.w_en.eq(bus.ar.valid & bus.ar.ready),
        ]
        for index, client in enumerate(self.clients):
            m.d.comb += client.ar.ready.eq(route.w_en & (grant == index))
        with m.If(route.w_en):
            m.d.sync += [previous.eq(grant), holding.eq(0)]
        with m.Elif(bus.ar.valid):
            m.d.sync += [held.eq(grant), holding.eq(1)]

        head = route.r_data
        readies = Array(client.r.ready for client in self.clients)
        for index, client in enumerate(self.clients):
            m.d.comb += [
                client.r.payload.eq(bus.r.payload),
                client.r.valid.eq(bus.r.valid & route.r_rdy & (head == index)),
            ]
        m.d.comb += [
            bus.r.ready.eq(route.r_rdy & readies[head]),
            route.r_en.eq(bus.r.valid & bus.r.ready & bus.r.payload.last),
        ]
        return m
