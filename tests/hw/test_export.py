"""Verilog export of the tiny and default configurations, and the yosys resource estimate;
without the ALU multiplier (``alu_mul=False``), no multiplier and no DSP in the ALU."""

import pytest
from amaranth.back import rtlil, verilog

from hw.alu import TensorAlu
from hw.export import TOP_NAME, verilog_text, write_verilog
from hw.gemm import GemmCore
from hw.resources import EstimateError, estimate, estimate_verilog
from hw.top import Accelerator
from isa import AccelConfig
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


def test_estimate_counts_one_dsp_per_gemm_multiplier():
    """The tiny GEMM core alone: batch x block_in x block_out 8x8 multipliers, one DSP each."""
    text = verilog.convert(GemmCore(TINY), name="gemm")
    result = estimate_verilog(text, "gemm", "xc7z020")
    assert result.dsp == TINY.batch * TINY.block_in * TINY.block_out
    assert result.ff > 0 and result.lut > 0 and result.bram36 == 0
    assert result.fits
    rows = {name: (used, available) for name, used, available, _ in result.rows()}
    assert rows["DSP"] == (result.dsp, 220)
    assert "| DSP |" in result.table()


def test_without_mul_the_accelerator_loses_one_multiplier_per_alu_lane():
    """The whole design's ``$mul`` cells (the GEMM core's, the address arithmetic's and the
    ALU's): without ``alu_mul`` exactly the ALU's batch x block_out go."""
    lanes = TINY.batch * TINY.block_out
    counts = {
        mul: rtlil.convert(Accelerator(TINY.replace(alu_mul=mul)), name="top").count("cell $mul ")
        for mul in (True, False)
    }
    assert counts[True] - counts[False] == lanes


def test_estimate_of_an_alu_without_mul_has_no_dsp():
    """yosys maps nothing of the ALU to DSPs without its multiplier (with it: two DSP48E1 per
    lane, a 32 x 8-bit product)."""
    text = verilog.convert(TensorAlu(TINY.replace(alu_mul=False)), name="alu")
    result = estimate_verilog(text, "alu", "xc7z020")
    assert result.dsp == 0 and result.lut > 0


def test_estimate_rejects_an_unknown_part_before_synthesis():
    with pytest.raises(EstimateError, match="unknown part 'xc9'"):
        estimate(TINY, "xc9")
