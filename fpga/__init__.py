"""FPGA flows: board descriptions (:mod:`fpga.boards`), the accelerator's ports as a board
design sees them (:mod:`fpga.signature`), the Vivado build plan of a Zynq board with its
processing system (:mod:`fpga.vivado`, written and run by :mod:`fpga.build`), and the
open-toolchain build of an ECP5 board (:mod:`fpga.ecp5`).

``fpga`` imports ``hw`` (and Amaranth); nothing below it imports ``fpga``. The names are
imported on first use (PEP 562), so the ``vtaforge fpga`` command registers without loading
Amaranth.
"""

from __future__ import annotations

from isa.lazy import lazy_names

#: Each public name and the module that defines it.
_SOURCES = {
    "AcceleratorSignature": "fpga.signature",
    "BOARDS": "fpga.boards",
    "BOARD_PYTHON": "fpga.package",
    "Board": "fpga.boards",
    "Bundle": "fpga.package",
    "Ecp5Build": "fpga.ecp5",
    "Ecp5Device": "fpga.boards",
    "Family": "fpga.boards",
    "FpgaError": "fpga.errors",
    "Port": "fpga.signature",
    "PsPort": "fpga.boards",
    "VivadoPlan": "fpga.vivado",
    "VivadoProject": "fpga.build",
    "ZynqPs": "fpga.boards",
    "accelerator_signature": "fpga.signature",
    "board": "fpga.boards",
    "build_ecp5": "fpga.ecp5",
    "project_tcl": "fpga.vivado",
    "run_vivado": "fpga.build",
    "write_bundle": "fpga.package",
    "write_vivado_project": "fpga.build",
}

__all__ = sorted(_SOURCES)


__getattr__, __dir__ = lazy_names(__name__, _SOURCES)
