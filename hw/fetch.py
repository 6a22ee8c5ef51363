"""The fetch module: reads the instruction stream and routes it to the command queues.

On ``start`` it reads ``insn_count`` 128-bit instructions from byte address ``insn_addr``
(16-byte aligned) and sends each, in program order, to the load, compute or store queue as
:func:`isa.stage_of` does: LOAD UOP/ACC/ACC_8BIT, GEMM, ALU and FINISH to compute, STORE to
store, other LOADs to load. It
stalls while the next instruction's queue is full (SEMANTICS 2). Read bursts are issued only
while the beat buffer has room for all their data, so a stalled fetch never holds up another
client's data on the shared read channel.
"""

from __future__ import annotations

from amaranth.hdl import Module, Mux, Signal
from amaranth.lib import data, fifo, stream, wiring
from amaranth.lib.wiring import In, Out

from hw.control import REGISTER_BITS
from hw.dma import BeatUnpacker
from hw.layouts import byte_addr_bits, insn_layouts, is_any, load_types
from hw.memport import ReadClientSignature
from hw.rows import RowRequester
from isa import INSN_BYTES, INSN_WIDTH, AccelConfig, Opcode, Stage, fetch_buffer_beats

__all__ = ["Fetch"]


class Fetch(wiring.Component):
    """The fetch module; ``busy`` until every instruction has entered its queue."""

    def __init__(self, cfg: AccelConfig):
        self._cfg = cfg
        queue = stream.Signature(INSN_WIDTH)
        super().__init__(
            {
                "start": In(1),
                "insn_addr": In(byte_addr_bits(cfg)),
                "insn_count": In(REGISTER_BITS),
                "busy": Out(1),
                "read": Out(ReadClientSignature(cfg)),
                "load": Out(queue),
                "compute": Out(queue),
                "store": Out(queue),
            }
        )

    def elaborate(self, platform) -> Module:
        m = Module()
        cfg = self._cfg
        depth = fetch_buffer_beats(cfg)  # isa.FETCH_BUFFER_INSNS instructions
        m.submodules.requester = requester = RowRequester(
            cfg, [INSN_BYTES], size_bits=REGISTER_BITS, stride_bits=1, max_beats=depth
        )
        m.submodules.buffer = buffer = fifo.SyncFIFOBuffered(width=cfg.axi_width, depth=depth)
        m.submodules.unpacker = unpacker = BeatUnpacker(
            beat_bits=cfg.axi_width, elem_bits=INSN_WIDTH, count_bits=REGISTER_BITS
        )
        lane_bits = len(unpacker.row.payload.lane)
        m.d.comb += [
            requester.start.eq(self.start),
            requester.kind.eq(0),
            requester.dram_base.eq(self.insn_addr >> (INSN_BYTES - 1).bit_length()),
            requester.y_size.eq(1),
            requester.x_size.eq(self.insn_count),
            requester.x_stride.eq(0),
            unpacker.row.payload.lane.eq(requester.rows.payload.addr_low[:lane_bits]),
            unpacker.row.payload.count.eq(requester.rows.payload.count),
            unpacker.row.valid.eq(requester.rows.valid),
            requester.rows.ready.eq(unpacker.row.ready),
        ]

        # Credits: the buffer's room for beats not yet requested (its depth less the beats
        # requested and not yet taken out of it). The next room is worked out from registers
        # for each outcome of this cycle (a burst requested or not, a beat taken or not) and
        # the handshakes only pick one, so no adder follows the arbiter's grant or the queues'.
        room = Signal(range(depth + 1), init=depth)
        burst = requester.burst
        length = burst.payload.len  # beats - 1
        fits = length < room
        ar = self.read.ar
        m.d.comb += [
            ar.payload.eq(burst.payload),
            ar.valid.eq(burst.valid & fits),
            burst.ready.eq(ar.ready & fits),
            buffer.w_data.eq(self.read.r.payload.data),
            buffer.w_en.eq(self.read.r.valid),
            self.read.r.ready.eq(buffer.w_rdy),
        ]
        wiring.connect(m, buffer.r_stream, unpacker.beat)
        taken = buffer.r_en & buffer.r_rdy
        requested = ar.valid & ar.ready
        m.d.sync += room.eq(
            Mux(
                requested,
                Mux(taken, room - length, room - length - 1),
                Mux(taken, room + 1, room),
            )
        )

        # Routing, as isa.stage_of: a LOAD goes to compute only for compute's memory types, so
        # a LOAD of any other type (a no-op when x_size is 0, else an error) goes to load.
        insn = data.View(insn_layouts(cfg).mem, unpacker.elem.payload)
        compute_type = is_any(insn.memory_type, load_types(Stage.COMPUTE))
        to_load = (insn.opcode == Opcode.LOAD) & ~compute_type
        to_store = insn.opcode == Opcode.STORE
        to_compute = ~to_load & ~to_store
        remaining = Signal(REGISTER_BITS)
        for queue, chosen in (
            (self.load, to_load),
            (self.store, to_store),
            (self.compute, to_compute),
        ):
            m.d.comb += [
                queue.payload.eq(unpacker.elem.payload),
                queue.valid.eq(unpacker.elem.valid & chosen),
            ]
            with m.If(chosen):
                m.d.comb += unpacker.elem.ready.eq(queue.ready)
        with m.If(self.start):
            m.d.sync += remaining.eq(self.insn_count)
        with m.Elif(unpacker.elem.valid & unpacker.elem.ready):
            m.d.sync += remaining.eq(remaining - 1)
        m.d.comb += self.busy.eq((remaining != 0) | requester.busy)
        return m
