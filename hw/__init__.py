"""The accelerator in Amaranth HDL: fetch, load, compute, store, queues, SRAMs and the memory
and control interfaces, every width derived from an ``isa.AccelConfig``.

``Accelerator(cfg)`` is the accelerator; ``AxiAccelerator(cfg)`` puts it on a system bus (an
AXI4 master to DRAM, an AXI4-Lite control slave with the register map of ``isa.registers``, an
interrupt). :func:`simulate` runs an ``isa.Program`` on the accelerator in Amaranth's simulator;
:func:`write_verilog` exports either top level; :func:`estimate` synthesizes it with yosys and
counts FPGA resources against a part from :data:`PARTS`.
"""

from hw.axi import AxiLiteSignature, AxiMaster, AxiSignature
from hw.axi_top import AxiAccelerator
from hw.axilite import ControlSlave
from hw.control import ControlSignature
from hw.export import AXI_TOP_NAME, TOP_NAME, verilog_text, write_verilog
from hw.memport import MemPortSignature
from hw.parts import PARTS, Part
from hw.resources import EstimateError, ResourceEstimate, estimate, estimate_verilog
from hw.sim import HwSimulationError, MemoryModel, MemoryTiming, SimResult, simulate
from hw.top import Accelerator

__all__ = [
    "AXI_TOP_NAME",
    "PARTS",
    "TOP_NAME",
    "Accelerator",
    "AxiAccelerator",
    "AxiLiteSignature",
    "AxiMaster",
    "AxiSignature",
    "ControlSignature",
    "ControlSlave",
    "EstimateError",
    "HwSimulationError",
    "MemPortSignature",
    "MemoryModel",
    "MemoryTiming",
    "Part",
    "ResourceEstimate",
    "SimResult",
    "estimate",
    "estimate_verilog",
    "simulate",
    "verilog_text",
    "write_verilog",
]
