"""FPGA parts the resource estimate compares against: capacities from the vendors' data sheets.

BRAM is counted in 36 Kb blocks (each holds two 18 Kb halves; an ECP5's 18 Kb DP16KD is half
of one). ``family`` is the yosys ``synth_xilinx -family`` name of a Xilinx part's architecture,
or ``ecp5`` for a Lattice ECP5, which yosys ``synth_ecp5`` maps and nextpnr-ecp5 places and
routes (``nextpnr`` holds the part's device, package and speed-grade options). ``multiplier``
is the signed operand widths of one hard multiplier (a DSP slice's, or an ECP5's MULT18X18D): the
GEMM core packs two products into one only where it holds the packed operand
(:class:`hw.gemm.GemmCore`). ``master_widths`` is the data widths of the ports through which
the part's processor serves DRAM to the fabric (empty for a part without one): the accelerator's
AXI master (``axi_width``) must be one of them.
"""

from __future__ import annotations

from dataclasses import dataclass

from isa import DSP_A_BITS, DSP_B_BITS

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
    multiplier: tuple[int, int] = (DSP_A_BITS, DSP_B_BITS)
    nextpnr: tuple[str, ...] = ()
    master_widths: tuple[int, ...] = ()

    def takes_master(self, bits: int) -> bool:
        """Whether an AXI master ``bits`` wide reaches DRAM on this part: one of the processor's
        port widths (any width on a part without a processor, whose fabric serves it)."""
        return not self.master_widths or bits in self.master_widths


PARTS: dict[str, Part] = {
    p.name: p
    for p in (
        # Zynq-7000: the PS7's HP and ACP ports are 32 or 64 bits wide.
        Part(
            "xc7z020",
            "xc7",
            lut=53_200,
            ff=106_400,
            dsp=220,
            bram36=140,
            boards="PYNQ-Z1/Z2",
            master_widths=(32, 64),
        ),
        Part(
            "xc7z010",
            "xc7",
            lut=17_600,
            ff=35_200,
            dsp=80,
            bram36=60,
            boards="Zybo Z7-10",
            master_widths=(32, 64),
        ),
        Part(
            "xczu3eg",
            "xcup",
            lut=70_560,
            ff=141_120,
            dsp=360,
            bram36=216,
            boards="Ultra96",
            multiplier=(27, 18),  # a DSP48E2's
            master_widths=(32, 64, 128),  # the PS8's HP ports
        ),
        # LFE5U-85F: 83,640 LUT4 and as many flip-flops, 156 18x18 multipliers (MULT18X18D),
        # 208 DP16KD block RAMs of 18 Kb.
        Part(
            "ecp5-85f",
            "ecp5",
            lut=83_640,
            ff=83_640,
            dsp=156,
            bram36=104,
            boards="ULX3S (LFE5U-85F-6BG381C)",
            multiplier=(18, 18),
            nextpnr=("--85k", "--package", "CABGA381", "--speed", "6"),
        ),
    )
}


def part(name: str) -> Part:
    """The part called ``name``; a KeyError lists the known ones."""
    try:
        return PARTS[name]
    except KeyError:
        raise KeyError(f"unknown part {name!r}; known parts: {', '.join(PARTS)}") from None
