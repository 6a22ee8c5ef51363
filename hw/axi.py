"""AXI4 and AXI4-Lite interfaces with their standard signal names, and the AXI4 master that puts
the accelerator's memory port (:mod:`hw.memport`) on a system bus.

:class:`AxiSignature` is an AXI4 master interface (``aw``/``w``/``b``/``ar``/``r`` channels,
``AxADDR``/``AxLEN``/``AxSIZE``/``AxBURST``/``AxID``/``AxCACHE``/``AxPROT``, ``xVALID``/
``xREADY``, ``WDATA``/``WSTRB``/``WLAST``, ``BRESP``, ``RDATA``/``RRESP``/``RLAST``), as the
master drives it; :class:`AxiLiteSignature` likewise for AXI4-Lite. Member names are the AXI
signal names in lower case, so a top level whose members are ``m_axi`` and ``s_axi`` exports
ports ``m_axi_awaddr``, ``s_axi_rdata``, ... (:mod:`hw.export`).

:class:`AxiMaster` needs no logic beyond constants: the memory port already keeps AXI4's rules
(bursts of at most 256 beats that never cross 4 KiB, VALID held with a stable payload until
READY, LAST on each burst's final write beat, byte strobes, read data in request order). Every
burst is INCR, of full-width beats (``AxSIZE = log2(cfg.bus_bytes)``), with ID 0. The master
reports each data beat and each response other than OKAY, for the control registers.
"""

from __future__ import annotations

from amaranth.hdl import Module
from amaranth.lib import wiring
from amaranth.lib.wiring import In, Out

from hw.layouts import byte_addr_bits
from hw.memport import AXI_LEN_BITS, MemPortSignature
from isa import REGISTER_BITS, AccelConfig

__all__ = [
    "AXI_BURST_INCR",
    "AXI_CACHE",
    "AXI_ID_BITS",
    "AXI_PROT",
    "AXI_RESP_OKAY",
    "AXI_RESP_SLVERR",
    "AxiLiteSignature",
    "AxiMaster",
    "AxiSignature",
    "BusEventSignature",
    "axi_signature",
]

#: Every transaction uses ID 0 (one ID: read data returns in request order).
AXI_ID_BITS = 1
#: AxBURST of an incrementing burst.
AXI_BURST_INCR = 0b01
#: AxCACHE: write-back, read- and write-allocate, as VTA's designs drive it (coherent through
#: Zynq's ACP; ignored by the non-coherent HP ports).
AXI_CACHE = 0b1111
#: AxPROT: unprivileged, secure, data access.
AXI_PROT = 0b000
#: xRESP values.
AXI_RESP_OKAY = 0b00
AXI_RESP_SLVERR = 0b10

_SIZE_BITS, _BURST_BITS, _CACHE_BITS, _PROT_BITS, _RESP_BITS = 3, 2, 4, 3, 2


class AxiSignature(wiring.Signature):
    """An AXI4 interface, master side: ``addr_bits`` of byte address, ``data_bits`` per beat."""

    def __init__(self, addr_bits: int, data_bits: int, id_bits: int = AXI_ID_BITS):
        members = {}
        for channel in ("aw", "ar"):
            members.update(
                {
                    f"{channel}id": Out(id_bits),
                    f"{channel}addr": Out(addr_bits),
                    f"{channel}len": Out(AXI_LEN_BITS),
                    f"{channel}size": Out(_SIZE_BITS),
                    f"{channel}burst": Out(_BURST_BITS),
                    f"{channel}cache": Out(_CACHE_BITS),
                    f"{channel}prot": Out(_PROT_BITS),
                    f"{channel}valid": Out(1),
                    f"{channel}ready": In(1),
                }
            )
        members.update(
            {
                "wdata": Out(data_bits),
                "wstrb": Out(data_bits // 8),
                "wlast": Out(1),
                "wvalid": Out(1),
                "wready": In(1),
                "bid": In(id_bits),
                "bresp": In(_RESP_BITS),
                "bvalid": In(1),
                "bready": Out(1),
                "rid": In(id_bits),
                "rdata": In(data_bits),
                "rresp": In(_RESP_BITS),
                "rlast": In(1),
                "rvalid": In(1),
                "rready": Out(1),
            }
        )
        super().__init__(members)


class AxiLiteSignature(wiring.Signature):
    """An AXI4-Lite interface of 32-bit registers, master side."""

    def __init__(self, addr_bits: int):
        super().__init__(
            {
                "awaddr": Out(addr_bits),
                "awprot": Out(_PROT_BITS),
                "awvalid": Out(1),
                "awready": In(1),
                "wdata": Out(REGISTER_BITS),
                "wstrb": Out(REGISTER_BITS // 8),
                "wvalid": Out(1),
                "wready": In(1),
                "bresp": In(_RESP_BITS),
                "bvalid": In(1),
                "bready": Out(1),
                "araddr": Out(addr_bits),
                "arprot": Out(_PROT_BITS),
                "arvalid": Out(1),
                "arready": In(1),
                "rdata": In(REGISTER_BITS),
                "rresp": In(_RESP_BITS),
                "rvalid": In(1),
                "rready": Out(1),
            }
        )


#: What the master reports, each a one-cycle pulse: a read or write data beat transferred, a
#: read beat or write response other than OKAY.
BusEventSignature = wiring.Signature(
    {name: Out(1) for name in ("read_beat", "write_beat", "read_error", "write_error")}
)


def axi_signature(cfg: AccelConfig) -> AxiSignature:
    """The accelerator's AXI4 master interface: its byte-address width, ``cfg.axi_width``-bit
    beats."""
    return AxiSignature(byte_addr_bits(cfg), cfg.axi_width)


class AxiMaster(wiring.Component):
    """The memory port (``port``, the accelerator's master connects here) as AXI4 (``axi``),
    and what passes on the bus as ``events`` (:data:`BusEventSignature`)."""

    def __init__(self, cfg: AccelConfig):
        self._cfg = cfg
        super().__init__(
            {
                "port": In(MemPortSignature(cfg)),
                "axi": Out(axi_signature(cfg)),
                "events": Out(BusEventSignature),
            }
        )

    def elaborate(self, platform) -> Module:
        m = Module()
        port, axi, events = self.port, self.axi, self.events
        size = (self._cfg.bus_bytes - 1).bit_length()
        for channel, request in (("ar", port.ar), ("aw", port.aw)):
            m.d.comb += [
                getattr(axi, f"{channel}id").eq(0),
                getattr(axi, f"{channel}addr").eq(request.payload.addr),
                getattr(axi, f"{channel}len").eq(request.payload.len),
                getattr(axi, f"{channel}size").eq(size),
                getattr(axi, f"{channel}burst").eq(AXI_BURST_INCR),
                getattr(axi, f"{channel}cache").eq(AXI_CACHE),
                getattr(axi, f"{channel}prot").eq(AXI_PROT),
                getattr(axi, f"{channel}valid").eq(request.valid),
                request.ready.eq(getattr(axi, f"{channel}ready")),
            ]
        m.d.comb += [
            axi.wdata.eq(port.w.payload.data),
            axi.wstrb.eq(port.w.payload.strb),
            axi.wlast.eq(port.w.payload.last),
            axi.wvalid.eq(port.w.valid),
            port.w.ready.eq(axi.wready),
            port.b.valid.eq(axi.bvalid),
            axi.bready.eq(port.b.ready),
            port.r.payload.data.eq(axi.rdata),
            port.r.payload.last.eq(axi.rlast),
            port.r.valid.eq(axi.rvalid),
            axi.rready.eq(port.r.ready),
            events.read_beat.eq(axi.rvalid & axi.rready),
            events.write_beat.eq(axi.wvalid & axi.wready),
            events.read_error.eq(events.read_beat & (axi.rresp != AXI_RESP_OKAY)),
            events.write_error.eq(axi.bvalid & axi.bready & (axi.bresp != AXI_RESP_OKAY)),
        ]
        return m
