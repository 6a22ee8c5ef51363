"""Resource estimates: yosys ``synth_xilinx`` on the exported Verilog, counted per resource.

Synthesis runs the native ``yosys`` (Debian's package; the WebAssembly build's ABC9 step exits
silently, see YoWASP/yosys#29), flattened, and reads its ``stat -json`` report. LUTs include
LUTs used as distributed RAM or shift registers; BRAM is counted in 36 Kb blocks (an 18 Kb block
is half of one). The numbers are pre-placement estimates, not a fitted design.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from hw.export import TOP_NAME, verilog_text
from hw.parts import Part, part
from isa import AccelConfig, VtaforgeError

__all__ = [
    "EstimateError",
    "ResourceEstimate",
    "estimate",
    "estimate_cached",
    "estimate_verilog",
]

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
    """What a design uses of ``part``; ``seconds`` is the synthesis time."""

    part: Part
    lut: int
    lut_memory: int
    ff: int
    dsp: int
    bram36: float
    seconds: float
    tool: str

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
        }

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> ResourceEstimate:
        """The estimate :meth:`to_dict` wrote."""
        fields = ("lut", "lut_memory", "ff", "dsp", "bram36", "seconds", "tool")
        return cls(part=_part(data["part"]), **{name: data[name] for name in fields})

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
    cfg: AccelConfig, part_name: str = "xc7z020", *, timeout: float = 3600.0
) -> ResourceEstimate:
    """Synthesize ``Accelerator(cfg)`` for ``part_name`` and count its resources."""
    _part(part_name)  # an unknown part fails before the export
    return estimate_verilog(verilog_text(cfg), TOP_NAME, part_name, timeout=timeout)


def estimate_cached(
    cfg: AccelConfig, directory: str | Path, part_name: str = "xc7z020", *, timeout: float = 3600.0
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
    result = estimate(cfg, part_name, timeout=timeout)
    path.parent.mkdir(parents=True, exist_ok=True)
    temporary = path.with_name(f".{path.name}.{os.getpid()}")
    temporary.write_text(json.dumps({"config": cfg.to_dict(), **result.to_dict()}, indent=2) + "\n")
    temporary.replace(path)
    return result


def estimate_verilog(
    text: str, top: str, part_name: str = "xc7z020", *, timeout: float = 3600.0
) -> ResourceEstimate:
    """Synthesize the Verilog ``text`` (top module ``top``) for ``part_name``."""
    target = _part(part_name)
    yosys = shutil.which("yosys")
    if yosys is None:
        raise EstimateError("yosys is not installed (Debian package 'yosys'; `make setup`)")
    with tempfile.TemporaryDirectory(prefix="vtaforge-synth-") as work:
        source, report = Path(work) / "design.v", Path(work) / "stat.json"
        source.write_text(text)
        script = (
            f"read_verilog {source}; synth_xilinx -flatten -family {target.family} -top {top}; "
            f"tee -q -o {report} stat -json"
        )
        started = time.perf_counter()
        try:
            done = subprocess.run(
                [yosys, "-q", "-p", script], capture_output=True, text=True, timeout=timeout
            )
        except subprocess.TimeoutExpired:
            raise EstimateError(f"synthesis took longer than {timeout:g} s") from None
        seconds = time.perf_counter() - started
        if done.returncode != 0 or not report.exists():
            tail = (done.stdout + done.stderr).strip().splitlines()[-5:]
            raise EstimateError(
                f"yosys failed (exit {done.returncode}): " + " / ".join(tail or ["no output"])
            )
        version = _version(yosys)
        return _count(json.loads(report.read_text()), top, target, seconds, version)


def _part(name: str) -> Part:
    try:
        return part(name)
    except KeyError as err:
        raise EstimateError(str(err.args[0])) from None


def _version(yosys: str) -> str:
    return subprocess.run([yosys, "-V"], capture_output=True, text=True).stdout.strip()


def _count(report: dict, top: str, target: Part, seconds: float, tool: str) -> ResourceEstimate:
    modules = report.get("modules", {})
    cells = modules.get(f"\\{top}", modules.get(top, {})).get("num_cells_by_type")
    if cells is None:
        raise EstimateError(f"the yosys report has no module {top}")
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
