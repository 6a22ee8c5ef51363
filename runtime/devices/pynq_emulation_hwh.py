"""The hardware handoff (``.hwh``) of the emulated PYNQ board: the XML Vivado exports beside a
bitstream, which PYNQ's ``Overlay`` reads for its IP dictionary and interrupt pins.

:func:`write_handoff` writes the subset of that file PYNQ's parser reads, for the block design
``fpga.vivado`` builds on a Zynq-7000 (runtime does not import fpga; the test checks every name
here against it): the PS module (``processing_system7``) whose ``MEMORYMAP`` maps the
accelerator's AXI4-Lite slave at :data:`CONTROL_BASE` over ``2**isa.CONTROL_ADDR_BITS`` bytes,
and the accelerator, a module reference to :data:`runtime.devices.pynq.BD_MODULE`, whose
``irq`` port drives the PS's ``IRQ_F2P`` (PYNQ accepts a single interrupt wired there without
an AXI interrupt controller). :func:`read_handoff` parses such a file as PYNQ does: each
``MEMRANGE`` of a PS master becomes an ``ip_dict`` entry named by its instance, typed by that
instance's VLNV; each interrupt output wired to the PS's fabric interrupt becomes an
``interrupt_pins`` entry named ``INSTANCE/PORT``.
"""

from __future__ import annotations

import xml.etree.ElementTree as ElementTree
from dataclasses import dataclass
from typing import Any

from isa import CONTROL_ADDR_BITS
from runtime.devices.base import DeviceError
from runtime.devices.pynq import BD_MODULE

__all__ = [
    "ACCELERATOR_CELL",
    "CONTROL_BASE",
    "PS_CELL",
    "PS_IRQ",
    "Handoff",
    "read_handoff",
    "write_handoff",
]

#: The block design's cells (``fpga.vivado.CELLS``) and the Zynq-7000 PS they meet.
PS_CELL, ACCELERATOR_CELL = "ps", "accelerator"
#: Where the PS's general-purpose master maps the registers (``fpga.boards.PS7.control_base``).
CONTROL_BASE = 0x43C0_0000
#: The PS's fabric interrupt input (``fpga.boards.PS7.irq``) and control master.
PS_IRQ, _PS_MASTER = "IRQ_F2P", "M_AXI_GP0"
_PS_VLNV = "xilinx.com:ip:processing_system7:5.5"
#: The PS modules whose memory map PYNQ reads, and each one's fabric interrupt input.
_PS_IRQS = {"processing_system7": PS_IRQ, "zynq_ultra_ps_e": "pl_ps_irq0"}
#: The accelerator's AXI4-Lite slave and interrupt (``fpga.signature.SLAVE``, ``IRQ``).
_SLAVE, _IRQ = "s_axi", "irq"


@dataclass(frozen=True)
class Handoff:
    """What an overlay knows of its design: ``ip_dict`` (name to ``phys_addr``,
    ``addr_range``, ``type``, ``fullpath``, ``mem_id``) and ``interrupt_pins`` (``INSTANCE/PORT``
    to ``controller``, ``index``, ``fullpath``), shaped as PYNQ's."""

    ip_dict: dict[str, dict[str, Any]]
    interrupt_pins: dict[str, dict[str, Any]]


def write_handoff(name: str, control_base: int = CONTROL_BASE) -> str:
    """The ``.hwh`` text of the board design ``name`` with the registers at ``control_base``."""
    root = ElementTree.Element("EDKSYSTEM", EDWVERSION="1.2", VIVADOVERSION="2024.1")
    ElementTree.SubElement(
        root, "SYSTEMINFO", ARCH="zynq", DEVICE="7z020", PACKAGE="clg400", NAME=name
    )
    modules = ElementTree.SubElement(root, "MODULES")
    ps = _module(modules, PS_CELL, "processing_system7", _PS_VLNV)
    ElementTree.SubElement(
        ElementTree.SubElement(ps, "MEMORYMAP"), "MEMRANGE", _memrange(control_base)
    )
    _port(ps, PS_IRQ, "I", ACCELERATOR_CELL, _IRQ)
    accelerator = _module(
        modules, ACCELERATOR_CELL, BD_MODULE, f"xilinx.com:module_ref:{BD_MODULE}:1.0"
    )
    _port(accelerator, _IRQ, "O", PS_CELL, PS_IRQ)
    ElementTree.indent(root)
    return '<?xml version="1.0" encoding="UTF-8"?>\n' + ElementTree.tostring(root, "unicode") + "\n"


def read_handoff(text: str, source: str) -> Handoff:
    """The IP dictionary and interrupt pins of the ``.hwh`` ``text`` (read from ``source``, for
    messages); DeviceError where it is not a hardware handoff."""
    try:
        root = ElementTree.fromstring(text)
    except ElementTree.ParseError as err:
        raise DeviceError(f"{source}: not a hardware handoff ({err})") from None
    modules = {m.get("INSTANCE"): m for m in root.iter("MODULE")}
    ip_dict: dict[str, dict[str, Any]] = {}
    pins: dict[str, dict[str, Any]] = {}
    for ps_name, ps in modules.items():
        irq = _PS_IRQS.get(ps.get("MODTYPE", ""))
        if irq is None:
            continue
        for memrange in ps.iterfind("MEMORYMAP/MEMRANGE"):
            instance = memrange.get("INSTANCE", "")
            base, high = _hex(memrange, "BASEVALUE", source), _hex(memrange, "HIGHVALUE", source)
            ip_dict[instance] = {
                "phys_addr": base,
                "addr_range": high - base + 1,
                "type": modules[instance].get("VLNV") if instance in modules else None,
                "fullpath": instance,
                "mem_id": memrange.get("SLAVEBUSINTERFACE"),
            }
        for instance, module in modules.items():
            for port in module.iterfind("PORTS/PORT[@SIGIS='INTERRUPT']"):
                wired = {(c.get("INSTANCE"), c.get("PORT")) for c in port.iter("CONNECTION")}
                if port.get("DIR") == "O" and (ps_name, irq) in wired:
                    path = f"{instance}/{port.get('NAME')}"
                    pins[path] = {"controller": ps_name, "index": 0, "fullpath": path}
    return Handoff(ip_dict, pins)


def _module(parent: ElementTree.Element, instance: str, modtype: str, vlnv: str):
    return ElementTree.SubElement(
        parent,
        "MODULE",
        FULLNAME=f"/{instance}",
        INSTANCE=instance,
        MODTYPE=modtype,
        VLNV=vlnv,
        IPTYPE="PERIPHERAL",
    )


def _memrange(base: int) -> dict[str, str]:
    return {
        "ADDRESSBLOCK": "reg0",
        "BASENAME": "C_BASEADDR",
        "BASEVALUE": f"0x{base:08X}",
        "HIGHNAME": "C_HIGHADDR",
        "HIGHVALUE": f"0x{base + (1 << CONTROL_ADDR_BITS) - 1:08X}",
        "INSTANCE": ACCELERATOR_CELL,
        "IS_DATA": "TRUE",
        "MASTERBUSINTERFACE": _PS_MASTER,
        "MEMTYPE": "REGISTER",
        "SLAVEBUSINTERFACE": _SLAVE,
    }


def _port(module: ElementTree.Element, name: str, direction: str, instance: str, pin: str):
    ports = module.find("PORTS")
    if ports is None:
        ports = ElementTree.SubElement(module, "PORTS")
    port = ElementTree.SubElement(
        ports, "PORT", DIR=direction, NAME=name, SIGIS="INTERRUPT", SIGNAME=f"{instance}_{pin}"
    )
    connections = ElementTree.SubElement(port, "CONNECTIONS")
    ElementTree.SubElement(connections, "CONNECTION", INSTANCE=instance, PORT=pin)


def _hex(element: ElementTree.Element, key: str, source: str) -> int:
    try:
        return int(element.get(key, ""), 16)
    except ValueError:
        raise DeviceError(f"{source}: MEMRANGE {key} {element.get(key)!r} is not hex") from None
