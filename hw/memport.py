"""The accelerator's memory port: five valid/ready channels shaped like AXI4.

=======  =========  ============================================================
channel  direction  payload
=======  =========  ============================================================
``ar``   out        read burst: ``addr`` (byte address of the first beat, beat-aligned),
                    ``len`` (beats - 1, AXI's 8-bit ``ARLEN``)
``r``    in         read data beat: ``data`` (``cfg.axi_width`` bits), ``last``
``aw``   out        write burst: ``addr``, ``len`` as for ``ar``
``w``    in->out    write data beat: ``data``, ``strb`` (one bit per byte), ``last``
``b``    in         write response: one per burst, after its last beat is written
=======  =========  ============================================================

Read data returns in request order (one AXI ID). Bursts never cross a 4 KiB boundary and are at
most 256 beats (AXI4 rules), so :class:`hw.axi.AxiMaster` puts the port on AXI4 with wiring
only.
"""

from __future__ import annotations

from amaranth.hdl import unsigned
from amaranth.lib import data, stream, wiring
from amaranth.lib.wiring import In, Out

from hw.layouts import byte_addr_bits
from isa import AXI_MAX_BEATS, AXI_PAGE_BYTES, AccelConfig

__all__ = [
    "AXI_LEN_BITS",
    "AXI_MAX_BEATS",
    "AXI_PAGE_BYTES",
    "MemPortSignature",
    "ReadClientSignature",
    "WriteClientSignature",
    "burst_layout",
]

#: AXI4 burst length field (ARLEN/AWLEN, beats - 1) for bursts of up to ``isa.AXI_MAX_BEATS``
#: beats; no burst crosses an ``isa.AXI_PAGE_BYTES`` boundary.
AXI_LEN_BITS = (AXI_MAX_BEATS - 1).bit_length()


def burst_layout(cfg: AccelConfig) -> data.StructLayout:
    """Payload of ``ar`` and ``aw``."""
    return data.StructLayout({"addr": unsigned(byte_addr_bits(cfg)), "len": unsigned(AXI_LEN_BITS)})


def _read_beat(cfg: AccelConfig) -> data.StructLayout:
    return data.StructLayout({"data": unsigned(cfg.axi_width), "last": unsigned(1)})


def _write_beat(cfg: AccelConfig) -> data.StructLayout:
    return data.StructLayout(
        {"data": unsigned(cfg.axi_width), "strb": unsigned(cfg.bus_bytes), "last": unsigned(1)}
    )


class ReadClientSignature(wiring.Signature):
    """A read master: bursts out on ``ar``, beats back on ``r``."""

    def __init__(self, cfg: AccelConfig):
        super().__init__(
            {
                "ar": Out(stream.Signature(burst_layout(cfg))),
                "r": In(stream.Signature(_read_beat(cfg))),
            }
        )


class WriteClientSignature(wiring.Signature):
    """A write master: bursts on ``aw``, beats on ``w``, one response per burst on ``b``."""

    def __init__(self, cfg: AccelConfig):
        super().__init__(
            {
                "aw": Out(stream.Signature(burst_layout(cfg))),
                "w": Out(stream.Signature(_write_beat(cfg))),
                "b": In(stream.Signature(unsigned(0))),
            }
        )


class MemPortSignature(wiring.Signature):
    """The whole memory port of the accelerator (master side): read and write channels."""

    def __init__(self, cfg: AccelConfig):
        read = ReadClientSignature(cfg).members
        write = WriteClientSignature(cfg).members
        super().__init__({**dict(read), **dict(write)})
