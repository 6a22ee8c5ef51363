"""``AxiAccelerator(cfg)``: the accelerator as a system-bus peripheral, the top level that a board
design or an RTL testbench instantiates.

Interfaces: ``m_axi``, the AXI4 master to DRAM (:class:`~hw.axi.AxiMaster` in front of the
accelerator's memory port); ``s_axi``, the AXI4-Lite control slave
(:class:`~hw.axilite.ControlSlave`, the register map of :mod:`isa.registers`); and ``irq``, high
while ``DONE`` and ``IRQ_ENABLE``. In Verilog (:func:`hw.export.verilog_text` with ``axi=True``)
the ports are named ``m_axi_awaddr``, ``s_axi_rdata``, ..., ``irq``, with the clock ``aclk`` and
the active-low synchronous reset ``aresetn`` of AXI.
"""

from __future__ import annotations

from amaranth.hdl import Module
from amaranth.lib import wiring
from amaranth.lib.wiring import In, Out

from hw.axi import AxiLiteSignature, AxiMaster, axi_signature
from hw.axilite import ControlSlave
from hw.top import Accelerator
from isa import CONTROL_ADDR_BITS, AccelConfig

__all__ = ["AxiAccelerator"]


class AxiAccelerator(wiring.Component):
    """The accelerator for ``cfg`` behind an AXI4 master and an AXI4-Lite control slave."""

    def __init__(self, cfg: AccelConfig):
        self.cfg = cfg
        super().__init__(
            {
                "m_axi": Out(axi_signature(cfg)),
                "s_axi": In(AxiLiteSignature(CONTROL_ADDR_BITS)),
                "irq": Out(1),
            }
        )

    def elaborate(self, platform) -> Module:
        m = Module()
        m.submodules.core = core = Accelerator(self.cfg)
        m.submodules.master = master = AxiMaster(self.cfg)
        m.submodules.registers = registers = ControlSlave(self.cfg)
        wiring.connect(m, core.mem, master.port)
        wiring.connect(m, registers.control, core.control)
        wiring.connect(m, master.events, registers.events)
        wiring.connect(m, master.axi, wiring.flipped(self.m_axi))
        wiring.connect(m, wiring.flipped(self.s_axi), registers.s_axi)
        m.d.comb += [registers.status.eq(core.status), self.irq.eq(registers.irq)]
        return m
