"""The DRAM side of a 2-D transfer: the row walk and its AXI bursts.

Row ``y`` of a transfer is ``x_size`` contiguous elements at element address
``dram_base + y * x_stride`` (SEMANTICS 3, 4). For each row the :class:`RowRequester` hands its
beats to a :class:`~hw.dma.BurstSplitter` (whose bursts leave on ``burst``) and then describes
the row on ``rows`` (the element address's low bits, from which a converter takes its lane, and
the element count), so the data side can convert beats and elements in the same order.
"""

from __future__ import annotations

from collections.abc import Sequence

from amaranth.hdl import Module, Signal, unsigned
from amaranth.lib import data, stream, wiring
from amaranth.lib.wiring import In, Out

from hw.dma import BurstSplitter
from hw.layouts import byte_addr_bits
from hw.memport import AXI_MAX_BEATS, burst_layout
from isa import AccelConfig

__all__ = ["RowRequester"]


def _log2(value: int) -> int:
    return (value - 1).bit_length()


class RowRequester(wiring.Component):
    """Walks the rows of one transfer whose element size is ``elem_bytes[kind]``.

    Pulse ``start`` with the transfer's fields on the inputs (held stable while ``busy``).
    ``size_bits`` is the width of ``x_size``/``y_size``; ``stride_bits`` that of ``x_stride``.
    """

    def __init__(
        self,
        cfg: AccelConfig,
        elem_bytes: Sequence[int],
        *,
        size_bits: int,
        stride_bits: int,
        max_beats: int = AXI_MAX_BEATS,
    ):
        self._cfg = cfg
        self._elem_bytes = tuple(elem_bytes)
        self._max_beats = max_beats
        self._row_byte_bits = size_bits + _log2(max(elem_bytes)) + 1  # a row's byte count
        low_bits = _log2(cfg.bus_bytes // min(min(elem_bytes), cfg.bus_bytes)) or 1
        super().__init__(
            {
                "start": In(1),
                "kind": In(range(len(self._elem_bytes))),
                "dram_base": In(byte_addr_bits(cfg)),
                "y_size": In(size_bits),
                "x_size": In(size_bits),
                "x_stride": In(stride_bits),
                "busy": Out(1),
                "burst": Out(stream.Signature(burst_layout(cfg))),
                "rows": Out(
                    stream.Signature(
                        data.StructLayout({"addr_low": unsigned(low_bits), "count": size_bits})
                    )
                ),
            }
        )

    def elaborate(self, platform) -> Module:
        m = Module()
        cfg = self._cfg
        m.submodules.splitter = splitter = BurstSplitter(cfg, max_beats=self._max_beats)
        wiring.connect(m, splitter.burst, wiring.flipped(self.burst))
        walking = Signal()
        # the rows after the current one, counted down from y_size - 1 (set at the start, so no
        # subtraction precedes the comparison that ends the walk)
        rows_left = Signal.like(self.y_size)
        elem_addr = Signal(byte_addr_bits(cfg))
        # The row's first and last bytes are registered as the row's element address is (the
        # first row's from the transfer's fields, each next one a stride further), so the burst
        # splitter takes the row's first and last beats straight from registers.
        wide = max(byte_addr_bits(cfg), self._row_byte_bits) + 1
        byte_addr = Signal(byte_addr_bits(cfg))
        last_byte = Signal(wide)
        first_byte = Signal(byte_addr_bits(cfg))  # the first row's
        first_end = Signal(wide)  # one past the first row's last byte
        stride_bytes = Signal(wide)
        with m.Switch(self.kind):
            for kind, size in enumerate(self._elem_bytes):
                with m.Case(kind):
                    m.d.comb += [
                        first_byte.eq(self.dram_base << _log2(size)),
                        first_end.eq(
                            (self.dram_base << _log2(size)) + (self.x_size << _log2(size))
                        ),
                        stride_bytes.eq(self.x_stride << _log2(size)),
                    ]
        shift = _log2(cfg.bus_bytes)
        m.d.comb += [
            splitter.cmd.payload.first.eq(byte_addr >> shift),
            splitter.cmd.payload.last.eq(last_byte >> shift),
            self.rows.payload.addr_low.eq(elem_addr),
            self.rows.payload.count.eq(self.x_size),
            self.busy.eq(walking | splitter.busy),
        ]
        with m.FSM():
            with m.State("IDLE"), m.If(self.start & (self.y_size != 0) & (self.x_size != 0)):
                m.d.sync += [
                    walking.eq(1),
                    rows_left.eq(self.y_size - 1),
                    elem_addr.eq(self.dram_base),
                    byte_addr.eq(first_byte),
                    last_byte.eq(first_end - 1),
                ]
                m.next = "BURSTS"
            with m.State("BURSTS"):
                m.d.comb += splitter.cmd.valid.eq(1)
                with m.If(splitter.cmd.ready):
                    m.next = "ROW"
            with m.State("ROW"):
                m.d.comb += self.rows.valid.eq(1)
                with m.If(self.rows.ready):
                    m.d.sync += [
                        rows_left.eq(rows_left - 1),
                        elem_addr.eq(elem_addr + self.x_stride),
                        byte_addr.eq(byte_addr + stride_bytes),
                        last_byte.eq(last_byte + stride_bytes),
                    ]
                    with m.If(rows_left == 0):
                        m.d.sync += walking.eq(0)
                        m.next = "IDLE"
                    with m.Else():
                        m.next = "BURSTS"
        return m
