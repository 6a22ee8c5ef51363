"""The compute module: LOAD UOP/ACC/ACC_8BIT, GEMM, ALU and FINISH (SEMANTICS 3, 5, 6, 7).

It owns the micro-op and accumulator buffers, reads INP and WGT and writes OUT through ports of
buffers the top level owns. GEMM and ALU steps come from the :class:`~hw.sequencer.LoopSequencer`
and flow down one pipeline without stalls (Sn: n cycles after the step leaves the sequencer;
C1, C2: a step's two computing stages)::

    S0 micro-op read     S1 micro-op registered     S2 indices = micro-op + offsets: INP/WGT read
    S3 the INP/WGT rows registered
    GEMM:       S4 rows -> GemmCore (latency L) -> C1 = S4+L: ACC[d] + dot products registered
                -> C2 -> S6+L write                                   (ACC[d] read in S2+L)
    ALU imm:    S2 ACC[d] read -> C1 = S4 -> C2 -> S6 write            (one step per cycle)
    ALU vector: S2 ACC[s] read, S3 ACC[d] read -> C1 = S5 -> C2 -> S7 write   (one every two)

No BRAM's read data feeds arithmetic before a register (the rows read in Sn are registered in
Sn+1), the ALU (:class:`~hw.alu.TensorAlu`) takes C1 and C2 (its multipliers' outputs are
registered), and every result is registered before it is written (the write stage writes ACC[d]
and, narrowed, OUT[d]). Every valid step runs through all 6 + L stages, so an instruction's last
step leaves the pipeline 6 + L cycles after it issued (``TimingConfig.step_stages = 6`` outside
the core).

A step reads ACC four cycles before it writes. The row read is registered in the next cycle, and
a write to that row in the cycle of the read or in the next one replaces it there (two bypass
paths beside the BRAM's output), so a step sees the writes of the steps three or more before it
but may miss those of the two just before it: the pipeline needs the software's promise
``cfg.acc_raw_window >= 2`` (SEMANTICS 5). An instruction completes, and pushes its tokens, only
once the pipeline has drained, so the window never spans two instructions.
"""

from __future__ import annotations

from amaranth.hdl import Cat, Module, Mux, Signal, Value
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
_RAW_DISTANCE = 2
#: The stage in which a step's operands enter the GEMM core (and an ALU step with an
#: immediate computes).
_CORE_STAGE = 4


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

        def starts(word: Value) -> Value:
            """Flags of what the instruction starts: a LOAD that moves rows, a loop."""
            common, mem = data.View(layouts.common, word), data.View(layouts.mem, word)
            loads = is_any(mem.memory_type, load_types(Stage.COMPUTE)) & (mem.x_size != 0)
            loops = (common.opcode == Opcode.GEMM) | (common.opcode == Opcode.ALU)
            return Cat((common.opcode == Opcode.LOAD) & loads, loops)

        m.submodules.slot = slot = InstructionSlot(cfg, prev=True, next=True, decode=starts)
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
        is_gemm = common.opcode == Opcode.GEMM
        is_alu = common.opcode == Opcode.ALU
        m.d.comb += [
            loader.insn.eq(mem_insn),
            loader.start.eq(slot.execute & slot.flags[0]),
            sequencer.cmd.valid.eq(slot.execute & slot.flags[1]),
            self.finish.eq(slot.retire & (common.opcode == Opcode.FINISH)),
            self.idle.eq(slot.idle),
        ]
        for name in loop_layout(cfg).members:
            from_alu = alu_insn[name] if name in layouts.alu.members else 0
            m.d.comb += sequencer.cmd.payload[name].eq(Mux(is_alu, from_alu, gemm_insn[name]))

        # The step pipeline (see the module docstring). valid[n]: a step is in stage n;
        # dst[n]: its accumulator row (from stage 2 on, when its indices are known).
        assert alu.latency == 1, "the second computing stage waits for the ALU's register"
        vector = is_alu & ~alu_insn.use_imm
        step = sequencer.step
        gemm_stage = _CORE_STAGE + gemm.latency  # a GEMM step's dot products leave the core
        last = gemm_stage + 2  # its write stage: every step, ALU too, runs through them all
        valid = [step.valid & step.ready] + [Signal(name=f"v{n}") for n in range(1, last + 1)]
        # The micro-op read in S1 and the step's offsets are registered, and S2 adds them: the
        # BRAM's output (an ECP5's DP16KD takes nearly 6 ns from its clock) feeds a register.
        offsets = [None, Signal.like(step.payload, name="o1"), Signal.like(step.payload, name="o2")]
        m.d.comb += [
            step.ready.eq(~(vector & valid[1])),
            uop_rd.addr.eq(step.payload.uop),
        ]
        uop = Signal(layouts.uop)
        m.d.sync += [offsets[1].eq(step.payload), offsets[2].eq(offsets[1]), uop.eq(uop_rd.data)]
        dst = [None, None, Signal.like(uop.dst_idx, name="d2")]
        dst += [Signal.like(dst[2], name=f"d{n}") for n in range(3, gemm_stage + 1)]
        s2 = Signal.like(offsets[2].src)
        w2 = Signal.like(uop.wgt_idx)
        m.d.comb += [
            dst[2].eq(uop.dst_idx + offsets[2].dst),
            s2.eq(uop.src_idx + offsets[2].src),
            w2.eq(uop.wgt_idx + offsets[2].wgt),
        ]
        for n in range(1, last + 1):
            m.d.sync += valid[n].eq(valid[n - 1])
        for n in range(3, gemm_stage + 1):
            m.d.sync += dst[n].eq(dst[n - 1])

        # S2 reads INP and WGT; S3 registers their rows, which enter the GEMM core in S4.
        operands_inp = Signal.like(self.inp.data)
        operands_wgt = Signal.like(self.wgt.data)
        m.d.comb += [
            self.inp.addr.eq(s2),
            self.wgt.addr.eq(w2),
            gemm.inp.eq(operands_inp),
            gemm.wgt.eq(operands_wgt),
        ]
        m.d.sync += [operands_inp.eq(self.inp.data), operands_wgt.eq(self.wgt.data)]

        # ACC is read two stages before a step's first computing stage (C1), and the row read
        # is registered: ``acc_row`` holds it in C1 (``source`` holds the row read a cycle
        # earlier: a vector ALU step's ACC[s]). The port returns a row as it was before the
        # cycle's write; the steps' writes of the cycle of the read (``bypass_row``,
        # registered) and of the next (``value``) replace it in ``acc_row`` when they write its
        # row, so the BRAM's output feeds nothing but that register. (A LOAD's writes need no
        # bypass: the steps of the instructions after it start once it has finished.)
        with m.If(is_gemm):
            m.d.comb += acc_rd.addr.eq(dst[gemm_stage - 2])
        with m.Elif(vector):
            m.d.comb += acc_rd.addr.eq(Mux(valid[3], dst[3], s2))
        with m.Else():
            m.d.comb += acc_rd.addr.eq(dst[2])
        acc_row = Signal(rows.acc)
        source = Signal(rows.acc)  # the ALU's other operand: the immediate or ACC[s]
        # the write stage's registers (declared here, driven below)
        write, address, value = Signal(), Signal.like(dst[2]), Signal(rows.acc)
        read_row = Signal.like(acc_rd.addr)  # the row whose data the port returns
        bypass, bypass_row = Signal(), Signal(rows.acc)
        latest = write & (address == read_row)
        m.d.sync += [
            read_row.eq(acc_rd.addr),
            bypass.eq(write & (address == acc_rd.addr)),
            bypass_row.eq(value),
            acc_row.eq(Mux(latest, value, Mux(bypass, bypass_row, acc_rd.data))),
        ]
        # ``source`` takes the immediate when the instruction has one (it is the instruction's
        # throughout), so no multiplexer lies between the register and the ALU.
        immediate = Signal(rows.acc)
        for b in range(cfg.batch):
            for o in range(cfg.block_out):
                m.d.comb += immediate[b][o].eq(alu_insn.imm)
        m.d.sync += source.eq(Mux(alu_insn.use_imm, immediate, acc_row))
        m.d.comb += [alu.op.eq(alu_insn.alu_opcode), alu.a.eq(acc_row), alu.x.eq(source)]

        # C1: GEMM's dot products arrive and ACC[d] + dot is registered; an ALU step's operands
        # enter the ALU. C2, a cycle later: the sum or the ALU's result is ready.
        computing, row = Signal(), Signal.like(dst[2])
        with m.If(is_gemm):
            m.d.comb += [computing.eq(valid[gemm_stage]), row.eq(dst[gemm_stage])]
        with m.Else():
            # with an immediate, the stage the core's operands enter; a vector step, a stage
            # later (it reads two rows)
            imm, vec = _CORE_STAGE, _CORE_STAGE + 1
            m.d.comb += [
                computing.eq(Mux(vector, valid[vec], valid[imm])),
                row.eq(Mux(vector, dst[vec], dst[imm])),
            ]
        total = Signal(rows.acc)
        for b in range(cfg.batch):
            for o in range(cfg.block_out):
                m.d.sync += total[b][o].eq(acc_row[b][o] + gemm.dot[b][o])
        ready, ready_row = Signal(), Signal.like(row)
        m.d.sync += [ready.eq(computing), ready_row.eq(row)]
        result = Mux(is_gemm, total, alu.result)
        reset = Mux(is_alu, alu_insn.reset_reg, gemm_insn.reset_reg)

        # The write stage: the result registered, written to ACC and (narrowed) to OUT.
        m.d.sync += [write.eq(ready), address.eq(ready_row), value.eq(Mux(reset, 0, result))]
        narrow = Signal(rows.out)
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
        draining = valid[1]
        for busy in valid[2:]:
            draining |= busy
        m.d.comb += slot.done.eq(~loader.busy & ~sequencer.busy & ~draining)
        return m
