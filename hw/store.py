"""The store module: STORE OUT rows to DRAM (SEMANTICS 4).

Row ``y`` writes OUT rows ``sram_base + y*x_size + x`` to DRAM elements
``dram_base + y*x_stride + x``. A :class:`~hw.rows.RowRequester` issues the write bursts, the OUT
reader streams rows into a :class:`~hw.dma.BeatPacker`, and the beats leave on ``w`` with
``last`` set from the burst lengths issued on ``aw``. The instruction completes, and pushes
``s2g``, once every burst's write response has come back, so the data is in DRAM by then.
"""

from __future__ import annotations

from amaranth.hdl import Module, Signal, Value
from amaranth.lib import data, fifo, memory, stream, wiring
from amaranth.lib.wiring import In, Out

from hw.dma import BeatPacker
from hw.layouts import elem_bits, insn_layouts
from hw.loader import buffer_port_signature
from hw.memport import AXI_LEN_BITS, WriteClientSignature
from hw.rows import RowRequester
from hw.slot import InstructionSlot
from hw.tokens import TokenPopSignature, TokenPushSignature
from isa import INSN_WIDTH, WRITE_OUTSTANDING, AccelConfig, MemId

__all__ = ["Store"]

#: Write bursts that may await their data or response at once.
_OUTSTANDING = WRITE_OUTSTANDING


class Store(wiring.Component):
    """The store module."""

    def __init__(self, cfg: AccelConfig):
        self._cfg = cfg
        super().__init__(
            {
                "cmd": In(stream.Signature(INSN_WIDTH)),
                "g2s": Out(TokenPopSignature),
                "s2g": Out(TokenPushSignature),
                "out": In(buffer_port_signature(cfg, MemId.OUT, memory.ReadPort)),
                "write": Out(WriteClientSignature(cfg)),
                "idle": Out(1),
            }
        )

    def elaborate(self, platform) -> Module:
        m = Module()
        cfg = self._cfg
        layout = insn_layouts(cfg).mem

        def runs(word: Value) -> Value:
            """A STORE that moves rows (not a no-op)."""
            insn = data.View(layout, word)
            return (insn.memory_type == MemId.OUT) & (insn.x_size != 0)

        m.submodules.slot = slot = InstructionSlot(cfg, prev=True, next=False, decode=runs)
        wiring.connect(m, wiring.flipped(self.cmd), slot.cmd)
        wiring.connect(m, slot.prev_pop, wiring.flipped(self.g2s))
        wiring.connect(m, slot.prev_push, wiring.flipped(self.s2g))
        insn = data.View(layout, slot.insn)
        start = slot.execute & slot.flags

        m.submodules.requester = requester = RowRequester(
            cfg,
            [cfg.out_elem_bytes],
            size_bits=len(insn.x_size),
            stride_bits=len(insn.x_stride),
        )
        m.submodules.packer = packer = BeatPacker(
            beat_bits=cfg.axi_width,
            elem_bits=elem_bits(cfg, MemId.OUT),
            count_bits=len(insn.x_size),
        )
        lane_bits = len(packer.row.payload.lane)
        m.d.comb += [
            requester.start.eq(start),
            requester.kind.eq(0),
            requester.dram_base.eq(insn.dram_base),
            requester.y_size.eq(insn.y_size),
            requester.x_size.eq(insn.x_size),
            requester.x_stride.eq(insn.x_stride),
            packer.row.payload.lane.eq(requester.rows.payload.addr_low[:lane_bits]),
            packer.row.payload.count.eq(requester.rows.payload.count),
            packer.row.valid.eq(requester.rows.valid),
            requester.rows.ready.eq(packer.row.ready),
        ]

        # OUT reader: rows sram_base, sram_base + 1, ... one ahead of the packer.
        reading = Signal()
        column = Signal.like(insn.x_size)
        line = Signal.like(insn.y_size)
        pending = Signal()  # the read port holds an element the packer has not taken
        address = Signal.like(self.out.addr)
        # the last column and line, registered at the start so that no subtraction lies in the
        # comparisons behind each read
        last_column, last_line = Signal.like(column), Signal.like(line)
        advance = ~pending | packer.elem.ready
        m.d.comb += [
            self.out.addr.eq(address),
            self.out.en.eq(advance),
            packer.elem.payload.eq(self.out.data),
            packer.elem.valid.eq(pending),
        ]
        with m.If(start):
            m.d.sync += [
                reading.eq(insn.y_size != 0),
                column.eq(0),
                line.eq(0),
                address.eq(insn.sram_base),
                last_column.eq(insn.x_size - 1),
                last_line.eq(insn.y_size - 1),
            ]
        with m.Elif(advance):
            m.d.sync += pending.eq(reading)
            with m.If(reading):
                m.d.sync += [address.eq(address + 1), column.eq(column + 1)]
                with m.If(column == last_column):
                    m.d.sync += [column.eq(0), line.eq(line + 1)]
                    with m.If(line == last_line):
                        m.d.sync += reading.eq(0)

        # Bursts: aw, their lengths for w's last, and the responses still owed.
        m.submodules.lengths = lengths = fifo.SyncFIFO(width=AXI_LEN_BITS, depth=_OUTSTANDING)
        aw, w, b = self.write.aw, self.write.w, self.write.b
        owed = Signal(range(_OUTSTANDING + 1))
        sent = Signal(AXI_LEN_BITS)
        m.d.comb += [
            aw.payload.eq(requester.burst.payload),
            aw.valid.eq(requester.burst.valid & lengths.w_rdy & (owed < _OUTSTANDING)),
            requester.burst.ready.eq(aw.ready & lengths.w_rdy & (owed < _OUTSTANDING)),
            lengths.w_data.eq(requester.burst.payload.len),
            lengths.w_en.eq(aw.valid & aw.ready),
            w.payload.data.eq(packer.beat.payload.data),
            w.payload.strb.eq(packer.beat.payload.strb),
            w.payload.last.eq(sent == lengths.r_data),
            w.valid.eq(packer.beat.valid & lengths.r_rdy),
            packer.beat.ready.eq(w.ready & lengths.r_rdy),
            lengths.r_en.eq(w.valid & w.ready & w.payload.last),
            b.ready.eq(1),
        ]
        with m.If(w.valid & w.ready):
            m.d.sync += sent.eq(sent + 1)
            with m.If(w.payload.last):
                m.d.sync += sent.eq(0)
        issued = aw.valid & aw.ready
        answered = b.valid & b.ready
        with m.If(issued & ~answered):
            m.d.sync += owed.eq(owed + 1)
        with m.Elif(answered & ~issued):
            m.d.sync += owed.eq(owed - 1)
        finished = ~requester.busy & ~reading & ~pending & ~lengths.r_rdy & (owed == 0)
        m.d.comb += [slot.done.eq(finished), self.idle.eq(slot.idle)]
        return m
