"""Verilog export (through Amaranth's RTLIL backend and yosys) of ``Accelerator(cfg)``, or with
``axi=True`` of :class:`~hw.axi_top.AxiAccelerator`, the system-bus top level.

The AXI top's ports carry the standard names that tools attach to by prefix (Vivado's interface
inference, cocotbext-axi's ``from_prefix``): ``aclk``, ``aresetn`` (active low, synchronous),
``m_axi_<signal>`` (the AXI4 master), ``s_axi_<signal>`` (the AXI4-Lite control slave) and
``irq``.

:func:`harness_verilog_text` wraps the accelerator (or its AXI top) for place and route on a
part with fewer pins than it has port bits (module :data:`HARNESS_NAME`, ports ``clk``, ``rst``
(active high, synchronous), ``stimulus`` and ``led``): every input bit comes from a shift register
fed by ``stimulus``, and ``led`` is the registered XOR of every output bit, each registered first,
so nothing is optimized away and the paths measured are the accelerator's (a path to an output
ends at a register just outside it, as a register slice of a Zynq interconnect would take it).
The ECP5 resource estimate (:mod:`hw.resources`) places the core in it; the ULX3S board build
(:mod:`fpga.ecp5`) the AXI top.

Given a ``part`` (:mod:`hw.parts`), the export elaborates for it (as Amaranth's ``platform``):
the GEMM core then packs its products only where the part's multiplier holds a packed operand
(:class:`hw.gemm.GemmCore`); the results and the cycles are the same.
"""

from __future__ import annotations

from pathlib import Path

from amaranth.back import verilog
from amaranth.hdl import Cat, ClockDomain, Elaboratable, Module, Signal, Value, ValueCastable
from amaranth.lib.wiring import Component, Flow

from hw.axi_top import AxiAccelerator
from hw.parts import Part
from hw.top import Accelerator
from isa import AccelConfig

__all__ = [
    "AXI_TOP_NAME",
    "HARNESS_NAME",
    "TOP_NAME",
    "harness_verilog_text",
    "verilog_text",
    "write_verilog",
]

#: The Verilog module name of the accelerator's own top level.
TOP_NAME = "vtaforge_accelerator"
#: The Verilog module name of the AXI top level.
AXI_TOP_NAME = "vtaforge_axi"
#: The Verilog module name of the place-and-route harness (:func:`harness_verilog_text`).
HARNESS_NAME = "vtaforge_harness"


def verilog_text(cfg: AccelConfig, *, axi: bool = False, part: Part | None = None) -> str:
    """The Verilog source for ``cfg``: the accelerator (module :data:`TOP_NAME`), or with
    ``axi`` the AXI top level (module :data:`AXI_TOP_NAME`), elaborated for ``part``."""
    if not axi:
        return verilog.convert(Accelerator(cfg), name=TOP_NAME, platform=part, emit_src=False)
    top = _AxiClocked(AxiAccelerator(cfg))
    return verilog.convert(top, name=AXI_TOP_NAME, platform=part, ports=top.ports(), emit_src=False)


def harness_verilog_text(cfg: AccelConfig, *, axi: bool = False, part: Part | None = None) -> str:
    """The Verilog of ``Accelerator(cfg)`` (with ``axi``: of the AXI top level) inside the
    place-and-route harness (module :data:`HARNESS_NAME`; see the module docstring),
    elaborated for ``part``."""
    harness = _Harness(AxiAccelerator(cfg) if axi else Accelerator(cfg))
    ports = [harness.stimulus, harness.led]
    return verilog.convert(harness, name=HARNESS_NAME, platform=part, ports=ports, emit_src=False)


def write_verilog(cfg: AccelConfig, path: str | Path, *, axi: bool = False) -> int:
    """Write the Verilog of ``cfg`` (see :func:`verilog_text`) to ``path``; return its size in
    bytes."""
    text = verilog_text(cfg, axi=axi)
    Path(path).write_text(text)
    return len(text.encode())


class _AxiClocked(Elaboratable):
    """The AXI top level clocked by ``aclk`` and reset by ``aresetn``, its interface signals as
    ports named ``<interface>_<signal>``."""

    def __init__(self, inner: AxiAccelerator):
        self.inner = inner
        self.aclk = Signal()
        self.aresetn = Signal()

    def ports(self) -> dict[str, tuple[Signal, None]]:
        ports = {"aclk": (self.aclk, None), "aresetn": (self.aresetn, None)}
        for path, _, value in self.inner.signature.flatten(self.inner):
            signal = value.as_value() if isinstance(value, ValueCastable) else value
            ports["_".join(map(str, path))] = (signal, None)
        return ports

    def elaborate(self, platform) -> Module:
        m = Module()
        m.domains.sync = sync = ClockDomain("sync")
        m.d.comb += [sync.clk.eq(self.aclk), sync.rst.eq(~self.aresetn)]
        m.submodules.top = self.inner
        return m


class _Harness(Elaboratable):
    """``inner``'s inputs on a shift register fed by ``stimulus``; ``led``, the registered XOR
    of its registered outputs (so the timing is the accelerator's, not the XOR tree's)."""

    def __init__(self, inner: Component):
        self.inner = inner
        self.stimulus = Signal()
        self.led = Signal()

    def elaborate(self, platform) -> Module:
        m = Module()
        m.submodules.accelerator = inner = self.inner
        inputs, outputs = [], []
        for _, member, value in inner.signature.flatten(inner):
            (outputs if member.flow is Flow.Out else inputs).append(Value.cast(value))
        shift = Signal(sum(len(value) for value in inputs))
        m.d.sync += shift.eq(Cat(self.stimulus, shift[:-1]))
        m.d.comb += Cat(*inputs).eq(shift)
        sampled = Signal(sum(len(value) for value in outputs))
        m.d.sync += [sampled.eq(Cat(*outputs)), self.led.eq(sampled.xor())]
        return m
