# amaranth: UnusedElaboratable=no
"""The accelerator's ports as a board design sees them, derived from the Amaranth top level
(``hw.AxiAccelerator(cfg)``'s signature and :mod:`hw.export`'s port naming), never typed again:
the clock ``aclk``, the reset ``aresetn``, the AXI4 master ``m_axi_*``, the AXI4-Lite slave
``s_axi_*`` and the interrupt ``irq``.

:func:`bd_wrapper_verilog` writes the Verilog module a Vivado block design references: the
exported top level inside, and on each port an ``X_INTERFACE_INFO`` attribute that associates it
with its AXI interface, clock, reset or interrupt (Vivado's module-reference flow reads them, so
no IP packaging is needed).
"""

from __future__ import annotations

from dataclasses import dataclass

from amaranth.hdl import Shape
from amaranth.lib.wiring import Flow

from hw import AXI_TOP_NAME, AxiAccelerator
from isa import AccelConfig

__all__ = [
    "BD_MODULE",
    "CLOCK",
    "IRQ",
    "MASTER",
    "RESET",
    "SLAVE",
    "AcceleratorSignature",
    "Port",
    "accelerator_signature",
    "bd_wrapper_verilog",
]

#: The module the block design references (:func:`bd_wrapper_verilog`).
BD_MODULE = "vtaforge_bd"
#: Interface and signal names of the AXI top level (:mod:`hw.export`).
MASTER, SLAVE, IRQ, CLOCK, RESET = "m_axi", "s_axi", "irq", "aclk", "aresetn"


@dataclass(frozen=True)
class Port:
    """One port of the top level: its Verilog name and width, whether the accelerator drives
    it, and the interface it belongs to (None for the clock, reset and interrupt)."""

    name: str
    width: int
    output: bool
    interface: str | None = None

    @property
    def signal(self) -> str:
        """The AXI signal name within its interface (``AWADDR``), or the port's own name."""
        if self.interface is None:
            return self.name
        return self.name.removeprefix(f"{self.interface}_").upper()


@dataclass(frozen=True)
class AcceleratorSignature:
    """Every port of the AXI top level for one configuration."""

    ports: tuple[Port, ...]

    def port(self, name: str) -> Port:
        return next(p for p in self.ports if p.name == name)

    def interface(self, name: str) -> tuple[Port, ...]:
        return tuple(p for p in self.ports if p.interface == name)

    @property
    def master_addr_bits(self) -> int:
        return self.port(f"{MASTER}_araddr").width

    @property
    def master_data_bits(self) -> int:
        return self.port(f"{MASTER}_rdata").width

    @property
    def slave_addr_bits(self) -> int:
        return self.port(f"{SLAVE}_araddr").width


def accelerator_signature(cfg: AccelConfig) -> AcceleratorSignature:
    """The ports of ``hw.AxiAccelerator(cfg)`` as :func:`hw.write_verilog` exports them."""
    ports = [Port(CLOCK, 1, False), Port(RESET, 1, False)]
    for path, member in AxiAccelerator(cfg).signature.members.flatten():
        if not member.is_port:
            continue
        interface = path[0] if len(path) > 1 else None
        ports.append(
            Port(
                "_".join(map(str, path)),
                Shape.cast(member.shape).width,
                member.flow is Flow.Out,
                interface,
            )
        )
    return AcceleratorSignature(tuple(ports))


def bd_wrapper_verilog(signature: AcceleratorSignature, clock_hz: int) -> str:
    """A Verilog module :data:`BD_MODULE` with the ports of ``signature``, each carrying its
    Vivado interface association (the interface's parameters on its first port), around an
    instance of the exported top level."""
    parameters = {
        MASTER: f"PROTOCOL AXI4, ADDR_WIDTH {signature.master_addr_bits}, "
        f"DATA_WIDTH {signature.master_data_bits}",
        SLAVE: f"PROTOCOL AXI4LITE, ADDR_WIDTH {signature.slave_addr_bits}, DATA_WIDTH 32",
        CLOCK: f"ASSOCIATED_BUSIF {MASTER}:{SLAVE}, ASSOCIATED_RESET {RESET}, FREQ_HZ {clock_hz}",
        RESET: "POLARITY ACTIVE_LOW",
        IRQ: "SENSITIVITY LEVEL_HIGH",
    }
    declarations = []
    for port in signature.ports:
        key = port.interface or port.name
        attributes = f'X_INTERFACE_INFO = "{_interface_info(port)}"'
        if key in parameters:
            attributes += f', X_INTERFACE_PARAMETER = "{parameters.pop(key)}"'
        direction = "output" if port.output else "input"
        width = f" [{port.width - 1}:0]" if port.width > 1 else ""
        declarations.append(f"  (* {attributes} *)\n  {direction} wire{width} {port.name}")
    connections = ",\n".join(f"    .{p.name}({p.name})" for p in signature.ports)
    return (
        "// The vtaforge accelerator for a Vivado block design (a module reference).\n"
        f"module {BD_MODULE} (\n"
        + ",\n".join(declarations)
        + f"\n);\n  {AXI_TOP_NAME} accelerator (\n{connections}\n  );\nendmodule\n"
    )


def _interface_info(port: Port) -> str:
    """The ``X_INTERFACE_INFO`` of one port: the interface type, the interface's name and the
    port's logical signal in it."""
    if port.interface in (MASTER, SLAVE):
        return f"xilinx.com:interface:aximm:1.0 {port.interface} {port.signal}"
    kind, logical = {
        CLOCK: ("clock", "CLK"),
        RESET: ("reset", "RST"),
        IRQ: ("interrupt", "INTERRUPT"),
    }[port.name]
    return f"xilinx.com:signal:{kind}:1.0 {port.name} {logical}"
