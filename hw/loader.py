"""The LOAD engine shared by the load module (INP, WGT) and compute (UOP, ACC, ACC_8BIT).

It runs one LOAD instruction (SEMANTICS 3): the :class:`~hw.rows.RowRequester` reads the DRAM
rows, a :class:`~hw.dma.BeatUnpacker` per memory type turns the beats into elements, and the
writer fills the SRAM rows from ``sram_base`` on, line by line, inserting the zero rows of the
four pads. ACC_8BIT elements are sign-extended lane by lane into the ACC buffer's rows.
"""

from __future__ import annotations

from collections.abc import Sequence

from amaranth.hdl import Cat, Module, Signal, Value
from amaranth.lib import data, memory, wiring
from amaranth.lib.wiring import In, Out

from hw.dma import BeatUnpacker
from hw.layouts import elem_bits, insn_layouts, row_layouts
from hw.memport import ReadClientSignature
from hw.rows import RowRequester
from isa import AccelConfig, MemId

__all__ = ["LoadEngine", "buffer_port_signature"]


def buffer_port_signature(cfg: AccelConfig, mem: MemId, port: type) -> wiring.Signature:
    """The signature of a read or write ``port`` (``memory.ReadPort``/``WritePort``) of the
    on-chip buffer that ``mem`` addresses: one row per address, as raw bits."""
    depth = cfg.buffer_depth(mem)
    return port.Signature(addr_width=(depth - 1).bit_length(), shape=elem_bits(cfg, mem))


def _most(fields: Sequence[Value]) -> int:
    """The largest sum of ``fields`` (unsigned)."""
    return sum((1 << len(field)) - 1 for field in fields)


def _sources(buffers: Sequence[MemId]) -> tuple[MemId, ...]:
    """Memory types that write ``buffers``: ACC_8BIT loads write the ACC buffer too."""
    extra = (MemId.ACC_8BIT,) if MemId.ACC in buffers else ()
    return (*buffers, *extra)


class LoadEngine(wiring.Component):
    """Executes LOADs into ``buffers``; one write port per buffer, named after it (``inp``...).

    Pulse ``start`` with a LOAD of a supported memory type and ``x_size != 0`` on ``insn``
    (stable while ``busy``).
    """

    def __init__(self, cfg: AccelConfig, buffers: Sequence[MemId]):
        self._cfg = cfg
        self._buffers = tuple(buffers)
        self._sources = _sources(self._buffers)
        members = {
            "start": In(1),
            "insn": In(insn_layouts(cfg).mem),
            "busy": Out(1),
            "read": Out(ReadClientSignature(cfg)),
        }
        for mem in self._buffers:
            members[mem.name.lower()] = In(buffer_port_signature(cfg, mem, memory.WritePort))
        super().__init__(members)

    def elaborate(self, platform) -> Module:
        m = Module()
        cfg, insn = self._cfg, self.insn
        m.submodules.requester = requester = RowRequester(
            cfg,
            [cfg.elem_bytes(mem) for mem in self._sources],
            size_bits=len(insn.x_size),
            stride_bits=len(insn.x_stride),
        )
        wiring.connect(m, requester.burst, wiring.flipped(self.read.ar))
        m.d.comb += [
            requester.start.eq(self.start),
            requester.dram_base.eq(insn.dram_base),
            requester.y_size.eq(insn.y_size),
            requester.x_size.eq(insn.x_size),
            requester.x_stride.eq(insn.x_stride),
        ]
        for kind, mem in enumerate(self._sources):
            with m.If(insn.memory_type == mem):
                m.d.comb += requester.kind.eq(kind)

        # One unpacker per memory type; the current type's gets the beats and row descriptors.
        elements = {}
        for mem in self._sources:
            unpacker = BeatUnpacker(
                beat_bits=cfg.axi_width, elem_bits=elem_bits(cfg, mem), count_bits=len(insn.x_size)
            )
            m.submodules[f"unpack_{mem.name.lower()}"] = unpacker
            selected = insn.memory_type == mem
            lane_bits = len(unpacker.row.payload.lane)
            m.d.comb += [
                unpacker.row.payload.lane.eq(requester.rows.payload.addr_low[:lane_bits]),
                unpacker.row.payload.count.eq(requester.rows.payload.count),
                unpacker.row.valid.eq(requester.rows.valid & selected),
                unpacker.beat.payload.eq(self.read.r.payload.data),
                unpacker.beat.valid.eq(self.read.r.valid & selected),
            ]
            with m.If(selected):
                m.d.comb += [
                    requester.rows.ready.eq(unpacker.row.ready),
                    self.read.r.ready.eq(unpacker.beat.ready),
                ]
            elements[mem] = unpacker.elem

        # The writer: lines of (x_pad_0 + x_size + x_pad_1) rows, y_pad_0 + y_size + y_pad_1 times.
        # Whether the position is in the body (a DRAM row, not a pad) is kept in two flags,
        # one per axis, each set on the step past the pad before the body and cleared on the
        # step past the body: the element stream's ready (and so the read channel's) is then
        # a few gates from registers. The steps' positions are registered at the start, so no
        # adder lies between the writer's position and its flags or its SRAM write.
        writing = Signal()
        y_fields = (insn.y_pad_0, insn.y_size, insn.y_pad_1)
        x_fields = (insn.x_pad_0, insn.x_size, insn.x_pad_1)
        lines, width = sum(y_fields), sum(x_fields)
        # one value more than the most lines/columns: all ones is none (no pad before the body)
        line = Signal(range(_most(y_fields) + 1))
        column = Signal(range(_most(x_fields) + 1))
        address = Signal(len(insn.sram_base))
        last_line, last_column = Signal.like(line), Signal.like(column)
        # the last line/column before the body (all ones if none) and the body's last
        line_before, column_before = Signal.like(line), Signal.like(column)
        body_last_line, body_last_column = Signal.like(line), Signal.like(column)
        body_line, body_column = Signal(), Signal()
        body = body_line & body_column
        element_valid = Signal()
        for mem, elem in elements.items():
            selected = insn.memory_type == mem
            m.d.comb += elem.ready.eq(writing & body & selected)
            with m.If(selected):
                m.d.comb += element_valid.eq(elem.valid)
        write = writing & (~body | element_valid)
        for mem in self._buffers:
            port = getattr(self, mem.name.lower())
            row = Signal.like(port.data)
            with m.If(body):
                m.d.comb += row.eq(elements[mem].payload)
                if mem == MemId.ACC:
                    with m.If(insn.memory_type == MemId.ACC_8BIT):
                        m.d.comb += row.eq(self._widen(elements[MemId.ACC_8BIT].payload))
            writes_here = insn.memory_type == mem
            if mem == MemId.ACC:
                writes_here |= insn.memory_type == MemId.ACC_8BIT
            m.d.comb += [
                port.addr.eq(address),
                port.data.eq(row),
                port.en.eq(write & writes_here),
            ]
        # ``start`` comes with ``x_size != 0``: every line has a body column, and there is a
        # line unless all of y_pad_0, y_size and y_pad_1 are zero.
        with m.If(self.start):
            m.d.sync += [
                writing.eq((insn.y_pad_0 != 0) | (insn.y_size != 0) | (insn.y_pad_1 != 0)),
                line.eq(0),
                column.eq(0),
                address.eq(insn.sram_base),
                last_line.eq(lines - 1),
                last_column.eq(width - 1),
                line_before.eq(insn.y_pad_0 - 1),
                column_before.eq(insn.x_pad_0 - 1),
                body_last_line.eq(insn.y_pad_0 + insn.y_size - 1),
                body_last_column.eq(insn.x_pad_0 + insn.x_size - 1),
                body_line.eq((insn.y_pad_0 == 0) & (insn.y_size != 0)),
                body_column.eq(insn.x_pad_0 == 0),
            ]
        with m.Elif(write):
            m.d.sync += [
                address.eq(address + 1),
                column.eq(column + 1),
                body_column.eq(
                    (column != body_last_column) & (body_column | (column == column_before))
                ),
            ]
            with m.If(column == last_column):
                m.d.sync += [
                    column.eq(0),
                    line.eq(line + 1),
                    body_column.eq(insn.x_pad_0 == 0),
                    body_line.eq((line != body_last_line) & (body_line | (line == line_before))),
                ]
                with m.If(line == last_line):
                    m.d.sync += writing.eq(0)
        m.d.comb += self.busy.eq(writing | requester.busy)
        return m

    def _widen(self, raw) -> Cat:
        """ACC_8BIT: each signed byte lane sign-extended to an accumulator lane."""
        narrow = data.View(row_layouts(self._cfg).acc8, raw)
        width = self._cfg.acc_width
        return Cat(
            Cat(lane.as_unsigned(), lane[-1].replicate(width - len(lane)))
            for batch in narrow
            for lane in batch
        )
