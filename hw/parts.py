"""FPGA parts the resource estimate compares against: capacities from the vendors' data sheets.

BRAM is counted in 36 Kb blocks (each holds two 18 Kb halves). ``family`` is the yosys
``synth_xilinx -family`` name of the part's architecture.
"""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ["PARTS", "Part", "part"]


@dataclass(frozen=True)
class Part:
    """One FPGA part and its capacity."""

    name: str
    family: str
    lut: int
    ff: int
    dsp: int
    bram36: int
    boards: str


PARTS: dict[str, Part] = {
    p.name: p
    for p in (
        Part("xc7z020", "xc7", lut=53_200, ff=106_400, dsp=220, bram36=140, boards="PYNQ-Z1/Z2"),
        Part("xc7z010", "xc7", lut=17_600, ff=35_200, dsp=80, bram36=60, boards="Zybo Z7-10"),
        Part("xczu3eg", "xcup", lut=70_560, ff=141_120, dsp=360, bram36=216, boards="Ultra96"),
    )
}


def part(name: str) -> Part:
    """The part called ``name``; a KeyError lists the known ones."""
    try:
        return PARTS[name]
    except KeyError:
        raise KeyError(f"unknown part {name!r}; known parts: {', '.join(PARTS)}") from None
