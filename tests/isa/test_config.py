"""AccelConfig: derived values against VTA's numbers, validation, presets, files."""

import dataclasses
import json

import pytest
from hypothesis import given

from isa import AccelConfig, ConfigError, MemId
from tests.strategies import configs

# VTA's sample configuration files, verbatim in content (vta-facts 1.1).
VTA_PYNQ_SAMPLE = """{
  "TARGET" : "pynq",
  "HW_VER" : "0.0.2",
  "LOG_INP_WIDTH" : 3,
  "LOG_WGT_WIDTH" : 3,
  "LOG_ACC_WIDTH" : 5,
  "LOG_BATCH" : 0,
  "LOG_BLOCK" : 4,
  "LOG_UOP_BUFF_SIZE" : 15,
  "LOG_INP_BUFF_SIZE" : 15,
  "LOG_WGT_BUFF_SIZE" : 18,
  "LOG_ACC_BUFF_SIZE" : 17
}
"""
VTA_TVM05_CONFIG = {
    "TARGET": "pynq",
    "HW_FREQ": 100,
    "HW_CLK_TARGET": 7,
    "HW_VER": "0.0.0",
    "LOG_INP_WIDTH": 3,
    "LOG_WGT_WIDTH": 3,
    "LOG_ACC_WIDTH": 5,
    "LOG_OUT_WIDTH": 3,
    "LOG_BATCH": 0,
    "LOG_BLOCK_IN": 4,
    "LOG_BLOCK_OUT": 4,
    "LOG_UOP_BUFF_SIZE": 15,
    "LOG_INP_BUFF_SIZE": 15,
    "LOG_WGT_BUFF_SIZE": 18,
    "LOG_ACC_BUFF_SIZE": 17,
}


def test_default_matches_vta_derived_values():
    cfg = AccelConfig.preset("default")
    assert cfg == AccelConfig()
    assert cfg.fingerprint == "1x16_i8w8a32_15_15_18_17"
    # vta-facts 1.1 derived-size table: element bytes, depths, index widths.
    assert [cfg.elem_bytes(m) for m in (MemId.UOP, MemId.INP, MemId.WGT, MemId.ACC, MemId.OUT)] == [
        4,
        16,
        256,
        64,
        16,
    ]
    assert (cfg.uop_buff_depth, cfg.inp_buff_depth, cfg.wgt_buff_depth, cfg.acc_buff_depth) == (
        8192,
        2048,
        1024,
        2048,
    )
    assert (
        cfg.log_uop_buff_depth,
        cfg.log_inp_buff_depth,
        cfg.log_wgt_buff_depth,
        cfg.log_acc_buff_depth,
    ) == (13, 11, 10, 11)
    assert cfg.out_buff_size == 32 * 1024
    assert cfg.out_buff_depth == 2048
    assert cfg.macs_per_cycle == 256
    assert cfg.peak_gops == pytest.approx(51.2)
    assert cfg.bus_bytes == 8
    assert cfg.shr_arg_bits == 6  # signed: >> 0..31 and << 1..32
    assert cfg.mul_arg_bits == 8


def test_presets_are_valid_and_distinct():
    names = AccelConfig.preset_names()
    assert {"default", "tiny"} <= set(names)
    fingerprints = {AccelConfig.preset(n).fingerprint for n in names}
    assert len(fingerprints) == len(names)
    tiny = AccelConfig.preset("tiny")
    assert (tiny.batch, tiny.block_in, tiny.block_out) == (1, 4, 4)
    larger = [n for n in names if AccelConfig.preset(n).macs_per_cycle > 256]
    assert larger, "at least one preset larger than the default"


def test_unknown_preset_names_the_choices():
    with pytest.raises(ConfigError, match="unknown preset.*default"):
        AccelConfig.preset("huge")


def test_frozen_and_hashable():
    cfg = AccelConfig()
    with pytest.raises(dataclasses.FrozenInstanceError):
        cfg.batch = 2  # type: ignore[misc]
    assert len({AccelConfig(), AccelConfig(), AccelConfig.preset("tiny")}) == 2


@pytest.mark.parametrize(
    ("changes", "parameter", "rule"),
    [
        ({"acc_width": 16}, "acc_width", "too narrow for a full dot product.*20 bits"),
        ({"block_in": 12}, "block_in", "power of two"),
        ({"inp_width": 4}, "inp_width", "power of two from 8 to 32"),
        ({"inp_buff_size": 3000}, "inp_buff_size", "power of two"),
        ({"wgt_buff_size": 256}, "wgt_buff_size", "at least two WGT elements"),
        ({"acc_buff_size": 1 << 21}, "GEMM format", "138 bits.*does not fit its 128-bit word"),
        ({"loop_iter_bits": 20}, "GEMM format", "does not fit its 128-bit word"),
        ({"uop_buff_size": 1 << 20}, "sram_addr_bits", "cannot address every buffer row"),
        ({"axi_width": 48}, "axi_width", "power of two"),
        ({"clock_mhz": 0}, "clock_mhz", "MHz"),
        ({"batch": True}, "batch", "must be an integer"),
        ({"alu_imm_bits": 40}, "alu_imm_bits", "acc_width"),
        ({"cmd_queue_depth": 0}, "cmd_queue_depth", "from 1 to 65536"),
    ],
)
def test_validation_names_parameter_value_and_rule(changes, parameter, rule):
    with pytest.raises(ConfigError, match=rule) as info:
        AccelConfig(**changes)
    assert info.value.parameter == parameter
    assert parameter in str(info.value)


def test_micro_op_that_does_not_fit_32_bits():
    # acc index 13 bits, src index max(inp 2, acc 13) = 13 bits, wgt index 8 bits: 34 > 32.
    # (A narrow immediate keeps the ALU instruction itself within 128 bits.)
    with pytest.raises(ConfigError, match="UOP format.*34 bits.*32-bit word"):
        AccelConfig(
            acc_buff_size=8192 * 64, inp_buff_size=4 * 16, wgt_buff_size=256 * 256, alu_imm_bits=8
        )


def test_smaller_block_with_default_buffers_overflows_the_instruction():
    # Halving the block doubles every depth: VTA's default word has no spare bit for that.
    with pytest.raises(ConfigError, match="GEMM format"):
        AccelConfig(block_in=8, block_out=8)
    assert (
        AccelConfig(
            block_in=8,
            block_out=8,
            inp_buff_size=16 * 1024,
            wgt_buff_size=64 * 1024,
            acc_buff_size=64 * 1024,
        ).log_inp_buff_depth
        == 11
    )


def test_replace_validates_and_rejects_unknown_names():
    assert AccelConfig().replace(block_in=32).block_in == 32
    with pytest.raises(ConfigError, match="not a configuration parameter"):
        AccelConfig().replace(blocks=8)
    with pytest.raises(ConfigError, match="acc_width"):
        AccelConfig().replace(acc_width=8)


@given(configs())
def test_json_round_trip(cfg):
    assert AccelConfig.from_json(cfg.to_json()) == cfg
    assert AccelConfig.from_dict(json.loads(cfg.to_json())) == cfg


def test_save_and_load(tmp_path):
    cfg = AccelConfig.preset("tiny")
    path = tmp_path / "tiny.json"
    cfg.save(path)
    assert AccelConfig.load(path) == cfg
    assert AccelConfig.resolve(str(path)) == cfg
    assert AccelConfig.resolve("tiny") == cfg


def test_resolve_rejects_neither_preset_nor_file(tmp_path):
    with pytest.raises(ConfigError, match="neither a preset"):
        AccelConfig.resolve(str(tmp_path / "missing.json"))


def test_bad_json_is_a_config_error(tmp_path):
    path = tmp_path / "bad.json"
    path.write_text("{not json")
    with pytest.raises(ConfigError, match="not valid JSON"):
        AccelConfig.load(path)
    path.write_text("[1, 2]")
    with pytest.raises(ConfigError, match="JSON object"):
        AccelConfig.load(path)


def test_reads_vta_sample_unchanged(tmp_path):
    path = tmp_path / "vta_config.json"
    path.write_text(VTA_PYNQ_SAMPLE)
    cfg = AccelConfig.from_vta_json(path)
    assert cfg == AccelConfig.preset("default")
    assert cfg.fingerprint == "1x16_i8w8a32_15_15_18_17"


def test_reads_vta_board_targets(tmp_path):
    data = json.loads(VTA_PYNQ_SAMPLE)
    data.update(TARGET="zcu104", HW_VER="0.0.1")
    path = tmp_path / "zcu104_sample.json"
    path.write_text(json.dumps(data))
    cfg = AccelConfig.from_vta_json(path)
    assert (cfg.axi_width, cfg.clock_mhz) == (128, 333.0)
    assert cfg == AccelConfig.preset("ultra96")


def test_reads_tvm05_style_config(tmp_path):
    path = tmp_path / "old.json"
    path.write_text(json.dumps({**VTA_TVM05_CONFIG, "LOG_BLOCK_OUT": 5, "HW_FREQ": 200}))
    cfg = AccelConfig.from_vta_json(path)
    assert (cfg.block_in, cfg.block_out, cfg.clock_mhz) == (16, 32, 200.0)
    assert cfg.fingerprint.startswith("1x16x32_i8w8a32_15_15_18_17")


@pytest.mark.parametrize(
    ("changes", "key", "rule"),
    [
        ({"LOG_OUT_WIDTH": 4}, "LOG_OUT_WIDTH", "must equal LOG_INP_WIDTH"),
        ({"LOG_MAGIC": 1}, "LOG_MAGIC", "not a key"),
        ({"LOG_BATCH": -1}, "LOG_BATCH", "log2"),
        ({"LOG_ACC_WIDTH": 4}, "acc_width", "too narrow"),
    ],
)
def test_bad_vta_configs(tmp_path, changes, key, rule):
    path = tmp_path / "vta.json"
    path.write_text(json.dumps({**VTA_TVM05_CONFIG, **changes}))
    with pytest.raises(ConfigError, match=rule) as info:
        AccelConfig.from_vta_json(path)
    assert info.value.parameter == key


def test_missing_vta_key(tmp_path):
    data = json.loads(VTA_PYNQ_SAMPLE)
    del data["LOG_WGT_BUFF_SIZE"]
    path = tmp_path / "vta.json"
    path.write_text(json.dumps(data))
    with pytest.raises(ConfigError, match="LOG_WGT_BUFF_SIZE.*missing"):
        AccelConfig.from_vta_json(path)


def test_fingerprint_tracks_every_primary_parameter():
    base = AccelConfig()
    variants = [
        base.replace(axi_width=128),
        base.replace(clock_mhz=200),
        base.replace(loop_iter_bits=13),
        base.replace(inp_buff_size=16 * 1024),
        base.replace(block_out=32),
        base.replace(cmd_queue_depth=16),
        base.replace(gemm_dsp_packing=False),
    ]
    assert len({v.fingerprint for v in variants} | {base.fingerprint}) == len(variants) + 1
