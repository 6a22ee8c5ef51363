"""``Accelerator(cfg)``: fetch, load, compute and store joined by command queues, token
counters, the INP/WGT/OUT buffers and the memory arbiter.

Interfaces: ``control`` (:class:`~hw.control.ControlSignature`, flipped), ``mem``, the
AXI4-shaped memory port (:class:`~hw.memport.MemPortSignature`), and ``status`` (module activity
and token counts, for debugging a program that does not finish). Fetch, load and compute share
the read channels through a :class:`~hw.arbiter.ReadArbiter`; only store writes.
"""

from __future__ import annotations

from amaranth.hdl import Module, Signal, unsigned
from amaranth.lib import data, fifo, memory, wiring
from amaranth.lib.wiring import In, Out

from hw.arbiter import ReadArbiter
from hw.compute import Compute
from hw.control import ControlSignature
from hw.fetch import Fetch
from hw.layouts import elem_bits
from hw.load import Load
from hw.memport import MemPortSignature
from hw.store import Store
from hw.tokens import TokenCounter
from isa import INSN_WIDTH, AccelConfig, MemId

__all__ = ["TOKEN_QUEUES", "Accelerator", "status_layout"]

#: The four token counters: (name, producer module, consumer module) (SEMANTICS 2).
TOKEN_QUEUES = (
    ("l2g", "load", "compute"),
    ("g2l", "compute", "load"),
    ("g2s", "compute", "store"),
    ("s2g", "store", "compute"),
)


def status_layout(cfg: AccelConfig) -> data.StructLayout:
    """Debug status: which modules are busy or idle, and the four token counters."""
    members = {"fetch_busy": unsigned(1)}
    members.update({f"{name}_idle": unsigned(1) for name in ("load", "compute", "store")})
    members.update({name: unsigned(cfg.token_counter_bits) for name, _, _ in TOKEN_QUEUES})
    return data.StructLayout(members)


class Accelerator(wiring.Component):
    """The whole accelerator for ``cfg``."""

    def __init__(self, cfg: AccelConfig):
        self.cfg = cfg
        super().__init__(
            {
                "control": In(ControlSignature(cfg)),
                "mem": Out(MemPortSignature(cfg)),
                "status": Out(status_layout(cfg)),
            }
        )

    def elaborate(self, platform) -> Module:
        m = Module()
        cfg, control = self.cfg, self.control
        m.submodules.fetch = fetch = Fetch(cfg)
        m.submodules.load = load = Load(cfg)
        m.submodules.compute = compute = Compute(cfg)
        m.submodules.store = store = Store(cfg)
        modules = {"load": load, "compute": compute, "store": store}

        for name, module in modules.items():
            queue = fifo.SyncFIFOBuffered(width=INSN_WIDTH, depth=cfg.cmd_queue_depth)
            m.submodules[f"{name}_queue"] = queue
            wiring.connect(m, getattr(fetch, name), queue.w_stream)
            wiring.connect(m, queue.r_stream, module.cmd)

        overflow = 0
        for name, producer, consumer in TOKEN_QUEUES:
            m.submodules[name] = counter = TokenCounter(cfg)
            wiring.connect(m, getattr(modules[producer], name), counter.producer)
            wiring.connect(m, getattr(modules[consumer], name), counter.consumer)
            overflow |= counter.overflow
            m.d.comb += self.status[name].eq(counter.count)
        m.d.comb += self.status.fetch_busy.eq(fetch.busy)
        for name, module in modules.items():
            m.d.comb += self.status[f"{name}_idle"].eq(module.idle)

        for mem, writer, reader in (
            (MemId.INP, load, compute),
            (MemId.WGT, load, compute),
            (MemId.OUT, compute, store),
        ):
            buffer = memory.Memory(shape=elem_bits(cfg, mem), depth=cfg.buffer_depth(mem), init=[])
            m.submodules[f"{mem.name.lower()}_mem"] = buffer
            port = mem.name.lower()
            wiring.connect(m, getattr(writer, port), buffer.write_port())
            wiring.connect(m, getattr(reader, port), buffer.read_port())

        m.submodules.arbiter = arbiter = ReadArbiter(cfg, 3)
        for index, client in enumerate((fetch, load, compute)):
            wiring.connect(m, client.read, arbiter.clients[index])
        mem_port = wiring.flipped(self.mem)
        for channel in ("ar", "r"):
            wiring.connect(m, getattr(arbiter.bus, channel), getattr(mem_port, channel))
        for channel in ("aw", "w", "b"):
            wiring.connect(m, getattr(store.write, channel), getattr(mem_port, channel))

        running = Signal()
        m.d.comb += [
            fetch.start.eq(control.start & ~running),
            fetch.insn_addr.eq(control.insn_addr),
            fetch.insn_count.eq(control.insn_count),
            control.busy.eq(running),
            control.error.eq(overflow),
        ]
        with m.If(fetch.start):
            m.d.sync += [running.eq(1), control.done.eq(0), control.cycles.eq(0)]
        with m.Elif(running):
            m.d.sync += control.cycles.eq(control.cycles + 1)
            with m.If(compute.finish):
                m.d.sync += [running.eq(0), control.done.eq(1)]
        return m
