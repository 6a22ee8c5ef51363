"""The compute module: LOAD UOP/ACC/ACC_8BIT, GEMM, ALU and FINISH (SEMANTICS 3, 5, 6, 7).

It owns the micro-op and accumulator buffers, reads INP and WGT and writes OUT through ports of
buffers the top level owns. GEMM and ALU steps come from the :class:`~hw.sequencer.LoopSequencer`
and flow down one pipeline without stalls::

    S0 micro-op read     S1 indices = micro-op + offsets     S2 INP/WGT (GEMM) or ACC read (ALU)
    GEMM: S3 operands -> GemmCore (latency L) -> S3+L-1 ACC[d] read -> S3+L ACC[d], OUT[d] write
    ALU imm:    S2 ACC[d] read -> S3 write                         (one step per cycle)
    ALU vector: S2 ACC[s] read, S3 ACC[d] read -> S4 write         (one step every two cycles)

A step reads ACC one cycle before the step issued just ahead of it writes, so the pipeline
needs the software's promise that a step does not read the row the previous step writes
(``cfg.acc_raw_window >= 1``; the ISA promises 2). An instruction completes, and pushes its
tokens, only once the pipeline has drained, so the window never spans two instructions.
"""

from __future__ import annotations

from amaranth.hdl import Module, Mux, Signal
from amaranth.lib import data, memory, stream, wiring
from amaranth.lib.wiring import In, Out

from hw.alu import TensorAlu
from hw.gemm import GemmCore
from hw.layouts import elem_bits, insn_layouts, is_any, load_types, row_layouts
from hw.loader import LoadEngine, buffer_port_signature
from hw.memport import ReadClientSignature
from hw.sequencer import LoopSequencer, loop_layout
from hw.slot import InstructionSlot
from hw.tokens import TokenPopSignature, TokenPushSignature
from isa import INSN_WIDTH, UOP_WIDTH, AccelConfig, MemId, Opcode, Stage

__all__ = ["Compute"]

#: How many earlier steps' accumulator writes a step's read may miss in this pipeline.
_RAW_DISTANCE = 1


class Compute(wiring.Component):
    """The compute module. ``finish`` pulses when FINISH retires."""

    def __init__(self, cfg: AccelConfig):
        assert cfg.acc_raw_window >= _RAW_DISTANCE, "the pipeline relies on the RAW window"
        self._cfg = cfg
        super().__init__(
            {
                "cmd": In(stream.Signature(INSN_WIDTH)),
                "l2g": Out(TokenPopSignature),
                "g2l": Out(TokenPushSignature),
                "s2g": Out(TokenPopSignature),
                "g2s": Out(TokenPushSignature),
                "read": Out(ReadClientSignature(cfg)),
                "inp": In(buffer_port_signature(cfg, MemId.INP, memory.ReadPort)),
                "wgt": In(buffer_port_signature(cfg, MemId.WGT, memory.ReadPort)),
                "out": In(buffer_port_signature(cfg, MemId.OUT, memory.WritePort)),
                "finish": Out(1),
                "idle": Out(1),
            }
        )

    def elaborate(self, platform) -> Module:
        m = Module()
        cfg = self._cfg
        layouts, rows = insn_layouts(cfg), row_layouts(cfg)

        m.submodules.slot = slot = InstructionSlot(cfg, prev=True, next=True)
        wiring.connect(m, wiring.flipped(self.cmd), slot.cmd)
        wiring.connect(m, slot.prev_pop, wiring.flipped(self.l2g))
        wiring.connect(m, slot.prev_push, wiring.flipped(self.g2l))
        wiring.connect(m, slot.next_pop, wiring.flipped(self.s2g))
        wiring.connect(m, slot.next_push, wiring.flipped(self.g2s))
        m.submodules.uop_mem = uop_mem = memory.Memory(
            shape=UOP_WIDTH, depth=cfg.uop_buff_depth, init=[]
        )
        m.submodules.acc_mem = acc_mem = memory.Memory(
            shape=elem_bits(cfg, MemId.ACC), depth=cfg.acc_buff_depth, init=[]
        )
        uop_rd, acc_rd, acc_wr = uop_mem.read_port(), acc_mem.read_port(), acc_mem.write_port()
        m.submodules.loader = loader = LoadEngine(cfg, (MemId.UOP, MemId.ACC))
        wiring.connect(m, loader.read, wiring.flipped(self.read))
        wiring.connect(m, loader.uop, uop_mem.write_port())
        m.submodules.sequencer = sequencer = LoopSequencer(cfg)
        m.submodules.gemm = gemm = GemmCore(cfg)
        m.submodules.alu = alu = TensorAlu(cfg)

        common = data.View(layouts.common, slot.insn)
        mem_insn = data.View(layouts.mem, slot.insn)
        gemm_insn = data.View(layouts.gemm, slot.insn)
        alu_insn = data.View(layouts.alu, slot.insn)
        is_load = common.opcode == Opcode.LOAD
        is_gemm = common.opcode == Opcode.GEMM
        is_alu = common.opcode == Opcode.ALU
        local_type = is_any(mem_insn.memory_type, load_types(Stage.COMPUTE))
        m.d.comb += [
            loader.insn.eq(mem_insn),
            loader.start.eq(slot.execute & is_load & local_type & (mem_insn.x_size != 0)),
            sequencer.cmd.valid.eq(slot.execute & (is_gemm | is_alu)),
            self.finish.eq(slot.retire & (common.opcode == Opcode.FINISH)),
            self.idle.eq(slot.idle),
        ]
        for name in loop_layout(cfg).members:
            from_alu = alu_insn[name] if name in layouts.alu.members else 0
            m.d.comb += sequencer.cmd.payload[name].eq(Mux(is_alu, from_alu, gemm_insn[name]))

        # The step pipeline (see the module docstring); v<n> marks a valid step in stage n.
        vector = is_alu & ~alu_insn.use_imm
        step = sequencer.step
        v1, v2, v3, v4 = (Signal(name=f"v{stage}") for stage in range(1, 5))
        offsets = Signal.like(step.payload)
        m.d.comb += [
            step.ready.eq(~(vector & v1)),
            uop_rd.addr.eq(step.payload.uop),
        ]
        m.d.sync += [v1.eq(step.valid & step.ready), offsets.eq(step.payload)]
        uop = data.View(layouts.uop, uop_rd.data)
        d2 = Signal.like(uop.dst_idx)
        s2 = Signal.like(offsets.src)
        w2 = Signal.like(uop.wgt_idx)
        d3, d4 = Signal.like(d2), Signal.like(d2)
        m.d.sync += [
            v2.eq(v1),
            d2.eq(uop.dst_idx + offsets.dst),
            s2.eq(uop.src_idx + offsets.src),
            w2.eq(uop.wgt_idx + offsets.wgt),
            v3.eq(v2),
            d3.eq(d2),
            v4.eq(v3 & vector),
            d4.eq(d3),
        ]
        m.d.comb += [
            self.inp.addr.eq(s2),
            self.wgt.addr.eq(w2),
            gemm.inp.eq(self.inp.data),
            gemm.wgt.eq(self.wgt.data),
        ]
        # GEMM: the destination travels beside the core's pipeline.
        gemm_valid = [v3] + [Signal(name=f"gv{n}") for n in range(1, gemm.latency + 1)]
        gemm_dst = [d3] + [Signal.like(d3, name=f"gd{n}") for n in range(1, gemm.latency + 1)]
        for n in range(1, gemm.latency + 1):
            m.d.sync += [gemm_valid[n].eq(gemm_valid[n - 1]), gemm_dst[n].eq(gemm_dst[n - 1])]
        with m.If(is_gemm):
            m.d.comb += acc_rd.addr.eq(gemm_dst[-2])
        with m.Elif(vector):
            m.d.comb += acc_rd.addr.eq(Mux(v3, d3, s2))
        with m.Else():
            m.d.comb += acc_rd.addr.eq(d2)

        acc = data.View(rows.acc, acc_rd.data)
        source = Signal(rows.acc)
        immediate = Signal(rows.acc)
        m.d.sync += source.eq(acc_rd.data)
        for b in range(cfg.batch):
            for o in range(cfg.block_out):
                m.d.comb += immediate[b][o].eq(alu_insn.imm)
        m.d.comb += [
            alu.op.eq(alu_insn.alu_opcode),
            alu.a.eq(acc_rd.data),
            alu.x.eq(Mux(alu_insn.use_imm, immediate, source)),
        ]
        result = Signal(rows.acc)
        write, address = Signal(), Signal.like(d2)
        with m.If(is_gemm):
            m.d.comb += [write.eq(gemm_valid[-1]), address.eq(gemm_dst[-1])]
            for b in range(cfg.batch):
                for o in range(cfg.block_out):
                    m.d.comb += result[b][o].eq(acc[b][o] + gemm.dot[b][o])
        with m.Else():
            m.d.comb += [
                write.eq(is_alu & Mux(vector, v4, v3)),
                address.eq(Mux(vector, d4, d3)),
                result.eq(alu.result),
            ]
        reset = Mux(is_alu, alu_insn.reset_reg, gemm_insn.reset_reg)
        value = Signal(rows.acc)
        narrow = Signal(rows.out)
        m.d.comb += value.eq(Mux(reset, 0, result))
        for b in range(cfg.batch):
            for o in range(cfg.block_out):
                m.d.comb += narrow[b][o].eq(value[b][o])
        m.d.comb += [
            acc_wr.en.eq(loader.acc.en | write),
            acc_wr.addr.eq(Mux(loader.acc.en, loader.acc.addr, address)),
            acc_wr.data.eq(Mux(loader.acc.en, loader.acc.data, value)),
            self.out.en.eq(write),
            self.out.addr.eq(address),
            self.out.data.eq(narrow),
        ]
        draining = v1 | v2 | v3 | v4
        for valid in gemm_valid[1:]:
            draining |= valid
        m.d.comb += slot.done.eq(~loader.busy & ~sequencer.busy & ~draining)
        return m
