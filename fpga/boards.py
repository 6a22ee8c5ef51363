"""The boards vtaforge builds for, as data: the FPGA part, the vendor's board preset, and for a
Zynq board the processing-system block with the names of its ports, clock, reset and interrupt
pins and of the configuration properties that switch them on.

A Zynq board is built with Vivado (:mod:`fpga.vivado`): the accelerator's AXI4 master reaches
DRAM through one of :attr:`ZynqPs.data_ports` (the first is the default: HP0, as FINN and hls4ml
use it; Zynq-7000's coherent ACP is VTA's choice), and the PS's general-purpose master
:attr:`ZynqPs.control_port` reaches the AXI4-Lite registers at :attr:`ZynqPs.control_base`. An
ECP5 board is built with the open toolchain (yosys, nextpnr, ecppack) on its resource part (the
chip of :data:`hw.PARTS`, with nextpnr's device, package and speed grade) and the pins of its
:class:`Ecp5Device`.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum

from fpga.errors import FpgaError
from hw.flow import ECP5
from hw.parts import PARTS
from isa import did_you_mean

__all__ = ["BOARDS", "Board", "Ecp5Device", "Family", "PsPort", "ZynqPs", "board"]

#: One Vivado IP configuration property and its value (without the ``CONFIG.`` prefix).
Setting = tuple[str, str]


class Family(StrEnum):
    """The FPGA family, which decides the flow."""

    ZYNQ_7000 = "zynq-7000"
    ZYNQ_US = "zynq-ultrascale+"
    ECP5 = "ecp5"


@dataclass(frozen=True)
class PsPort:
    """An AXI port of the processing system: its interface pin on the PS cell, the pin that
    clocks it, the settings that enable it, and for a port the accelerator's master uses, the
    property holding its data width, the widths it allows and the DRAM address segment it
    reaches."""

    name: str
    clock: str
    enable: tuple[Setting, ...]
    width_setting: str | None = None
    widths: tuple[int, ...] = ()
    ddr_segment: str | None = None
    coherent: bool = False


@dataclass(frozen=True)
class ZynqPs:
    """A Zynq processing-system block (``processing_system7`` or ``zynq_ultra_ps_e``)."""

    ip: str  # the IP's VLNV without its version
    automation: str  # the block-automation rule that applies the board preset
    automation_config: str  # that rule's -config dictionary
    clock: str  # the fabric clock output pin
    clock_setting: str  # the property that sets that clock, in MHz
    reset: str  # its active-low reset output pin
    irq: str  # the fabric-to-PS interrupt input pin
    irq_enable: tuple[Setting, ...]
    address_space: str  # the PS master's address space on the cell
    control_port: PsPort
    data_ports: tuple[PsPort, ...]
    control_base: int  # where the accelerator's registers are mapped

    def data_port(self, name: str | None = None) -> PsPort:
        """The data port called ``name`` (the default one when None)."""
        if name is None:
            return self.data_ports[0]
        for port in self.data_ports:
            if port.name.lower() == name.lower():
                return port
        names = [p.name for p in self.data_ports]
        raise FpgaError(
            f"the PS has no data port {name!r}; choose one of {', '.join(names)}"
            + did_you_mean(name, names)
        )


@dataclass(frozen=True)
class Ecp5Device:
    """The pins of an ECP5 board the open-toolchain build uses: the oscillator (and its
    frequency), two push buttons (reset, and the serial stimulus of :mod:`fpga.ecp5`'s
    harness) and an LED. The chip is the board's resource part."""

    clock_pin: str
    clock_mhz: float
    reset_pin: str
    stimulus_pin: str
    led_pin: str


@dataclass(frozen=True)
class Board:
    """One board: ``part`` is the full part name as the vendor's tools take it;
    ``resource_part`` names its entry in :data:`hw.PARTS` (resource estimates), if any."""

    name: str
    title: str
    family: Family
    part: str
    board_part: str | None = None
    resource_part: str | None = None
    ps: ZynqPs | None = None
    ecp5: Ecp5Device | None = None

    def __post_init__(self) -> None:
        vivado = self.family is not Family.ECP5
        if vivado != (self.ps is not None) or vivado == (self.ecp5 is not None):
            raise FpgaError(f"board {self.name}: a Zynq board has a PS, an ECP5 board a device")
        chip = PARTS.get(self.resource_part) if self.resource_part else None
        if not vivado and (chip is None or chip.family != ECP5):
            raise FpgaError(f"board {self.name}: an ECP5 board's resource part is an ECP5 chip")


_PS7_HP0 = PsPort(
    "S_AXI_HP0",
    "S_AXI_HP0_ACLK",
    (("PCW_USE_S_AXI_HP0", "1"),),
    width_setting="PCW_S_AXI_HP0_DATA_WIDTH",
    widths=(32, 64),
    ddr_segment="HP0_DDR_LOWOCM",
)
_PS7_ACP = PsPort(
    "S_AXI_ACP",
    "S_AXI_ACP_ACLK",
    (("PCW_USE_S_AXI_ACP", "1"), ("PCW_USE_DEFAULT_ACP_USER_VAL", "1")),
    widths=(64,),
    ddr_segment="ACP_DDR_LOWOCM",
    coherent=True,
)
#: Zynq-7000's PS: the first AXI-Lite peripheral of PYNQ overlays sits at 0x43C00000, as VTA's.
PS7 = ZynqPs(
    ip="xilinx.com:ip:processing_system7",
    automation="xilinx.com:bd_rule:processing_system7",
    automation_config='make_external "FIXED_IO, DDR" apply_board_preset "1" '
    'Master "Disable" Slave "Disable"',
    clock="FCLK_CLK0",
    clock_setting="PCW_FPGA0_PERIPHERAL_FREQMHZ",
    reset="FCLK_RESET0_N",
    irq="IRQ_F2P",
    irq_enable=(("PCW_USE_FABRIC_INTERRUPT", "1"), ("PCW_IRQ_F2P_INTR", "1")),
    address_space="Data",
    control_port=PsPort("M_AXI_GP0", "M_AXI_GP0_ACLK", (("PCW_USE_M_AXI_GP0", "1"),)),
    data_ports=(_PS7_HP0, _PS7_ACP),
    control_base=0x43C0_0000,
)
#: Zynq UltraScale+'s PS: HP0 is the slave ``S_AXI_HP0_FPD`` (``SAXIGP2``), the control master
#: ``M_AXI_HPM0_FPD`` (``MAXIGP0``) with its peripherals from 0xA0000000 (VTA's Ultra96 base).
PS8 = ZynqPs(
    ip="xilinx.com:ip:zynq_ultra_ps_e",
    automation="xilinx.com:bd_rule:zynq_ultra_ps_e",
    automation_config='apply_board_preset "1"',
    clock="pl_clk0",
    clock_setting="PSU__CRL_APB__PL0_REF_CTRL__FREQMHZ",
    reset="pl_resetn0",
    irq="pl_ps_irq0",
    irq_enable=(("PSU__USE__IRQ0", "1"),),
    address_space="Data",
    control_port=PsPort(
        "M_AXI_HPM0_FPD",
        "maxihpm0_fpd_aclk",
        (("PSU__USE__M_AXI_GP0", "1"), ("PSU__USE__M_AXI_GP1", "0")),
    ),
    data_ports=(
        PsPort(
            "S_AXI_HP0_FPD",
            "saxihp0_fpd_aclk",
            (("PSU__USE__S_AXI_GP2", "1"),),
            width_setting="PSU__SAXIGP2__DATA_WIDTH",
            widths=(32, 64, 128),
            ddr_segment="HP0_DDR_LOW",
        ),
    ),
    control_base=0xA000_0000,
)

#: Every board, by its command-line name.
BOARDS: dict[str, Board] = {
    b.name: b
    for b in (
        Board(
            "pynq-z1",
            "Digilent PYNQ-Z1",
            Family.ZYNQ_7000,
            "xc7z020clg400-1",
            board_part="www.digilentinc.com:pynq-z1:part0:1.0",
            resource_part="xc7z020",
            ps=PS7,
        ),
        Board(
            "pynq-z2",
            "TUL PYNQ-Z2",
            Family.ZYNQ_7000,
            "xc7z020clg400-1",
            board_part="tul.com.tw:pynq-z2:part0:1.0",
            resource_part="xc7z020",
            ps=PS7,
        ),
        Board(
            "ultra96-v2",
            "Avnet Ultra96-V2",
            Family.ZYNQ_US,
            "xczu3eg-sbva484-1-i",
            board_part="avnet.com:ultra96v2:part0:1.2",
            resource_part="xczu3eg",
            ps=PS8,
        ),
        Board(
            "ulx3s",
            "Radiona ULX3S (ECP5-85F)",
            Family.ECP5,
            "LFE5U-85F-6BG381C",
            resource_part="ecp5-85f",
            # pins of the ULX3S v3 constraints (ulx3s_v20.lpf): clk_25mhz, btn[1], btn[2], led[0]
            ecp5=Ecp5Device(
                clock_pin="G2",
                clock_mhz=25.0,
                reset_pin="R1",
                stimulus_pin="T1",
                led_pin="B2",
            ),
        ),
    )
}


def board(name: str) -> Board:
    """The board called ``name``; FpgaError lists the known ones."""
    try:
        return BOARDS[name]
    except KeyError:
        raise FpgaError(
            f"unknown board {name!r}; known boards: {', '.join(BOARDS)}"
            + did_you_mean(name, BOARDS)
        ) from None
