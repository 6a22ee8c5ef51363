"""The accelerator in Amaranth HDL: fetch, load, compute, store, queues, SRAMs and the memory
and control interfaces, every width derived from an ``isa.AccelConfig``.

``Accelerator(cfg)`` is the top level; :func:`simulate` runs an ``isa.Program`` on it in
Amaranth's simulator; :func:`write_verilog` exports it; :func:`estimate` synthesizes it with
yosys and counts FPGA resources against a part from :data:`PARTS`.
"""

from hw.control import ControlSignature
from hw.export import TOP_NAME, verilog_text, write_verilog
from hw.memport import MemPortSignature
from hw.parts import PARTS, Part
from hw.resources import EstimateError, ResourceEstimate, estimate, estimate_verilog
from hw.sim import HwSimulationError, MemoryModel, MemoryTiming, SimResult, simulate
from hw.top import Accelerator

__all__ = [
    "PARTS",
    "TOP_NAME",
    "Accelerator",
    "ControlSignature",
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
