"""Building blocks of every DMA client: burst splitting and beat/element conversion.

A transfer row is ``count`` contiguous elements of ``elem_bits`` at an element-aligned byte
address. Elements and beats are powers of two, so either an element spans whole beats
(``elem_bits >= beat_bits``) or a beat holds several elements and a row may start and end in the
middle of one (``lane`` is the first element's position in its beat). The converters are built
for one element width; the row streams tell them where each row starts and how long it is.
"""

from __future__ import annotations

from amaranth.hdl import Cat, Const, Module, Mux, Signal, Value, unsigned
from amaranth.lib import data, stream, wiring
from amaranth.lib.wiring import In, Out

from hw.layouts import byte_addr_bits
from hw.memport import AXI_MAX_BEATS, AXI_PAGE_BYTES, burst_layout
from isa import AccelConfig

__all__ = ["BeatPacker", "BeatUnpacker", "BurstSplitter", "row_layout"]


def _log2(value: int) -> int:
    return (value - 1).bit_length()


class BurstSplitter(wiring.Component):
    """Splits the run of consecutive beats ``first`` to ``last`` (beat indices, inclusive,
    ``last >= first``) into AXI bursts of at most ``max_beats`` (a power of two) that do not
    cross a 4 KiB page: each burst is as long as those limits and the run allow, so the bursts
    are the greedy split, in order.

    ``burst`` carries ``addr`` (bytes) and ``len`` (beats - 1). ``busy`` is high while a
    command is being split.
    """

    def __init__(self, cfg: AccelConfig, *, max_beats: int = AXI_MAX_BEATS):
        assert 1 <= max_beats <= AXI_MAX_BEATS and cfg.bus_bytes <= AXI_PAGE_BYTES
        assert max_beats & (max_beats - 1) == 0, "the split relies on power-of-two limits"
        self._bus_bytes = cfg.bus_bytes
        self._max_beats = max_beats
        beat_bits = byte_addr_bits(cfg) - _log2(cfg.bus_bytes)
        run = data.StructLayout({"first": unsigned(beat_bits), "last": unsigned(beat_bits)})
        super().__init__(
            {
                "cmd": In(stream.Signature(run)),
                "burst": Out(stream.Signature(burst_layout(cfg))),
                "busy": Out(1),
            }
        )

    def elaborate(self, platform) -> Module:
        m = Module()
        page_beats = AXI_PAGE_BYTES // self._bus_bytes
        limit = min(self._max_beats, page_beats)
        low = _log2(limit)  # a beat offset's bits below the limit; the page's bits above them
        top = _log2(page_beats) - low  # (both powers of two: ``limit`` divides the page)

        # The burst on offer is described by registers only, so its address and length leave
        # without logic, and each next burst is derived from them through at most a short
        # increment and a few multiplexers (no adder feeds a comparison feeding a minimum):
        # the page and the offset in it, whether the run ends in this page and then ``span``
        # (its last beat's offset less this one), and the pages after this one it reaches.
        page = Signal(len(self.cmd.payload.first) - low - top)
        offset = Signal(low + top)
        same = Signal()
        span = Signal(low + top)
        pages = Signal.like(page)
        end = Signal(low + top)  # the run's last beat's offset in its page
        length = Signal(low)  # the burst's beats - 1
        final = Signal()  # the burst is the run's last

        def field_is(value: Value, k: int) -> Value:
            """``value``'s bits from ``low`` up (a multiple of ``limit``) equal ``k``."""
            return Const(0 <= k < 1 << top) if top == 0 else value[low:] == k

        def plan(same: Value, span_k: int, span: Value, room_k: int, offset: Value):
            """The length and finality of the burst at ``offset``: up to the run's end when it
            ends within ``limit`` (``span``'s upper field is ``span_k``: 0 for ``span`` itself)
            in this page, else up to the page's end when that is within ``limit`` (the
            offset's upper field is ``room_k``: all ones), else ``limit`` beats."""
            short_run = field_is(span, span_k)
            short_page = field_is(offset, room_k)
            return (
                Mux(
                    same,
                    Mux(short_run, span[:low], limit - 1),
                    Mux(short_page, ~offset[:low], limit - 1),
                ),
                same & short_run,
            )

        ones = (1 << top) - 1
        m.d.comb += [
            self.cmd.ready.eq(~self.busy),
            self.burst.valid.eq(self.busy),
            self.burst.payload.addr.eq(Cat(Const(0, _log2(self._bus_bytes)), offset, page)),
            self.burst.payload.len.eq(length),
        ]
        with m.If(self.cmd.valid & self.cmd.ready):
            first, last = self.cmd.payload.first, self.cmd.payload.last
            split = len(offset)
            first_span = (last[:split] - first[:split])[:split]
            first_same = first[split:] == last[split:]
            plan_length, plan_final = plan(first_same, 0, first_span, ones, first[:split])
            m.d.sync += [
                page.eq(first[split:]),
                offset.eq(first[:split]),
                same.eq(first_same),
                span.eq(first_span),
                pages.eq(last[split:] - first[split:]),
                end.eq(last[:split]),
                length.eq(plan_length),
                final.eq(plan_final),
                self.busy.eq(1),
            ]
        with m.If(self.burst.valid & self.burst.ready):
            with m.If(final):
                m.d.sync += self.busy.eq(0)
            with m.Elif(~same & field_is(offset, ones)):
                # This burst ends its page: the next starts the next page.
                next_same = pages == 1
                next_length, next_final = plan(next_same, 0, end, ones, Const(0, len(offset)))
                m.d.sync += [
                    page.eq(page + 1),
                    offset.eq(0),
                    same.eq(next_same),
                    span.eq(end),
                    pages.eq(pages - 1),
                    length.eq(next_length),
                    final.eq(next_final),
                ]
            with m.Else():
                # This burst is ``limit`` beats within its page: the next starts ``limit`` on,
                # and its plan is read off this one's fields (span less, offset more, by one).
                next_length, next_final = plan(same, 1, span, ones - 1, offset)
                m.d.sync += [
                    offset.eq(offset + limit),
                    span.eq(span - limit),
                    length.eq(next_length),
                    final.eq(next_final),
                ]
        return m


def row_layout(beat_bits: int, elem_bits: int, count_bits: int) -> data.StructLayout:
    """A row descriptor: first element's ``lane`` in its beat and the element ``count``."""
    lanes = max(1, beat_bits // elem_bits)
    return data.StructLayout({"lane": unsigned(_log2(lanes)), "count": unsigned(count_bits)})


class BeatUnpacker(wiring.Component):
    """Turns read beats into the elements of rows described on ``row``.

    Wide elements (``elem_bits >= beat_bits``) are gathered from whole beats and need no row
    descriptor (``row`` is always ready). Narrow ones are picked from the beats' lanes: each row
    starts at its ``lane`` and the rest of its last beat is dropped.
    """

    def __init__(self, *, beat_bits: int, elem_bits: int, count_bits: int):
        self._beat_bits = beat_bits
        self._elem_bits = elem_bits
        super().__init__(
            {
                "row": In(stream.Signature(row_layout(beat_bits, elem_bits, count_bits))),
                "beat": In(stream.Signature(unsigned(beat_bits))),
                "elem": Out(stream.Signature(unsigned(elem_bits))),
            }
        )

    def elaborate(self, platform) -> Module:
        m = Module()
        beat, elem, row = self.beat, self.elem, self.row
        if self._elem_bits >= self._beat_bits:
            beats = self._elem_bits // self._beat_bits
            index = Signal(range(beats))
            gather = Signal(self._elem_bits - self._beat_bits)
            complete = index == beats - 1
            m.d.comb += [
                row.ready.eq(1),
                elem.payload.eq(Cat(gather, beat.payload) if beats > 1 else beat.payload),
                elem.valid.eq(beat.valid & complete),
                beat.ready.eq(~complete | elem.ready),
            ]
            with m.If(beat.valid & beat.ready):
                m.d.sync += index.eq(Mux(complete, 0, index + 1))
                if beats > 1:
                    m.d.sync += gather.word_select(index, self._beat_bits).eq(beat.payload)
            return m
        active, lane, end_of_beat = _row_cursor(m, row, elem, self._beat_bits // self._elem_bits)
        m.d.comb += [
            elem.payload.eq(beat.payload.word_select(lane, self._elem_bits)),
            elem.valid.eq(active & beat.valid),
            beat.ready.eq(active & elem.ready & end_of_beat),
        ]
        return m


class BeatPacker(wiring.Component):
    """Turns the elements of rows described on ``row`` into write beats with byte strobes.

    The dual of :class:`BeatUnpacker`: wide elements become whole beats; narrow ones are placed
    in their lanes, and the first and last beats of a row strobe only the bytes the row writes.
    """

    def __init__(self, *, beat_bits: int, elem_bits: int, count_bits: int):
        self._beat_bits = beat_bits
        self._elem_bits = elem_bits
        super().__init__(
            {
                "row": In(stream.Signature(row_layout(beat_bits, elem_bits, count_bits))),
                "elem": In(stream.Signature(unsigned(elem_bits))),
                "beat": Out(
                    stream.Signature(
                        data.StructLayout(
                            {"data": unsigned(beat_bits), "strb": unsigned(beat_bits // 8)}
                        )
                    )
                ),
            }
        )

    def elaborate(self, platform) -> Module:
        m = Module()
        beat, elem, row = self.beat, self.elem, self.row
        strb_bits = self._beat_bits // 8
        if self._elem_bits >= self._beat_bits:
            beats = self._elem_bits // self._beat_bits
            index = Signal(range(beats))
            complete = index == beats - 1
            m.d.comb += [
                row.ready.eq(1),
                beat.payload.data.eq(elem.payload.word_select(index, self._beat_bits)),
                beat.payload.strb.eq(Const(-1, strb_bits)),
                beat.valid.eq(elem.valid),
                elem.ready.eq(beat.ready & complete),
            ]
            with m.If(beat.valid & beat.ready):
                m.d.sync += index.eq(Mux(complete, 0, index + 1))
            return m
        elem_bytes = self._elem_bits // 8
        active, lane, emit = _row_cursor(m, row, elem, self._beat_bits // self._elem_bits)
        held_data = Signal(self._beat_bits)
        held_strb = Signal(strb_bits)
        merged_data = Signal(self._beat_bits)
        merged_strb = Signal(strb_bits)
        m.d.comb += [
            merged_data.eq(held_data),
            merged_strb.eq(held_strb),
            merged_data.word_select(lane, self._elem_bits).eq(elem.payload),
            merged_strb.word_select(lane, elem_bytes).eq(Const(-1, elem_bytes)),
        ]
        m.d.comb += [
            beat.payload.data.eq(merged_data),
            beat.payload.strb.eq(merged_strb),
            beat.valid.eq(active & elem.valid & emit),
            elem.ready.eq(active & (~emit | beat.ready)),
        ]
        with m.If(elem.valid & elem.ready):
            with m.If(emit):
                m.d.sync += [held_data.eq(0), held_strb.eq(0)]
            with m.Else():
                m.d.sync += [held_data.eq(merged_data), held_strb.eq(merged_strb)]
        return m


def _row_cursor(m: Module, row, elem, lanes: int) -> tuple[Signal, Signal, Value]:
    """Track the current row of narrow elements: take a descriptor from ``row`` when idle, then
    step a lane per ``elem`` handshake. Returns (row active, current lane, whether the current
    element is the last of its beat or of its row)."""
    active = Signal()
    lane = Signal.like(row.payload.lane)
    left = Signal.like(row.payload.count)
    # Whether the current element is the row's last, registered beside the count (rather than
    # compared with it) because the stream's ready depends on it.
    final = Signal()
    m.d.comb += row.ready.eq(~active)
    with m.If(row.valid & row.ready):
        m.d.sync += [
            lane.eq(row.payload.lane),
            left.eq(row.payload.count),
            active.eq(row.payload.count != 0),
            final.eq(row.payload.count == 1),
        ]
    with m.If(elem.valid & elem.ready):
        m.d.sync += [lane.eq(lane + 1), left.eq(left - 1), final.eq(left == 2)]
        with m.If(final):
            m.d.sync += active.eq(0)
    return active, lane, (lane == lanes - 1) | final
