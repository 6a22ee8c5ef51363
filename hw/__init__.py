"""The accelerator in Amaranth HDL: fetch, load, compute, store, queues, SRAMs and the memory
and control interfaces, every width derived from an ``isa.AccelConfig``.

``Accelerator(cfg)`` is the accelerator; ``AxiAccelerator(cfg)`` puts it on a system bus (an
AXI4 master to DRAM, an AXI4-Lite control slave with the register map of ``isa.registers``, an
interrupt). :func:`simulate` runs an ``isa.Program`` on the accelerator in Amaranth's simulator;
:func:`write_verilog` exports either top level; :func:`estimate` synthesizes it with yosys and
counts FPGA resources against a part from :data:`PARTS` (the open flow of :mod:`hw.flow`, which
the ECP5 board build runs too); :func:`resource_model` estimates the
same counts in microseconds from the configuration alone (:mod:`hw.cost`).

The names are imported on first use (PEP 562), so ``import hw.cost`` or ``hw.parts`` does not
pull in Amaranth: ``runtime`` prices configurations on a machine without it.
"""

from __future__ import annotations

from isa.lazy import lazy_names

#: Each public name and the module that defines it.
_SOURCES = {
    "AXI_TOP_NAME": "hw.export",
    "HARNESS_NAME": "hw.export",
    "PARTS": "hw.parts",
    "TOP_NAME": "hw.export",
    "Accelerator": "hw.top",
    "AxiAccelerator": "hw.axi_top",
    "AxiLiteSignature": "hw.axi",
    "AxiMaster": "hw.axi",
    "AxiSignature": "hw.axi",
    "ControlSignature": "hw.control",
    "ControlSlave": "hw.axilite",
    "HwSimulationError": "hw.sim",
    "MemPortSignature": "hw.memport",
    "MemoryModel": "hw.sim",
    "MemoryTiming": "hw.sim",
    "Part": "hw.parts",
    "ResourceCounts": "hw.cost",
    "ResourceEstimate": "hw.resources",
    "SimResult": "hw.sim",
    "SynthesisError": "hw.flow",
    "estimate": "hw.resources",
    "estimate_verilog": "hw.resources",
    "harness_verilog_text": "hw.export",
    "resource_model": "hw.cost",
    "simulate": "hw.sim",
    "verilog_text": "hw.export",
    "write_verilog": "hw.export",
}

__all__ = sorted(_SOURCES)


__getattr__, __dir__ = lazy_names(__name__, _SOURCES)
