"""Which configurations run a program (issue 17 item 13): only the parameters that change the
ISA or the memory map make a program incompatible; and a VTA file's TARGET (item 9)."""

import dataclasses
import json

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from isa import AccelConfig, ConfigError, ConfigMismatchError, Program, check_config
from runtime.demo_gemm import demo_gemm_program
from simulator import FunctionalSimulator
from tests.vta_configs import VTA_DEFAULT_LOGS

#: Values that keep the default configuration valid, for every primary parameter.
_OTHER_VALUES = {
    "inp_width": 16,
    "wgt_width": 16,
    "acc_width": 64,
    "batch": 2,
    "block_in": 32,
    "block_out": 32,
    "uop_buff_size": 16 * 1024,
    "inp_buff_size": 16 * 1024,
    "wgt_buff_size": 128 * 1024,
    "acc_buff_size": 64 * 1024,
    "axi_width": 128,
    "clock_mhz": 150.0,
    "cmd_queue_depth": 64,
    "gemm_dsp_packing": False,
    "sram_addr_bits": 17,
    "dram_addr_bits": 31,
    "mem_size_bits": 15,
    "mem_stride_bits": 15,
    "mem_pad_bits": 3,
    "loop_iter_bits": 13,
    "alu_imm_bits": 15,
    "alu_mul": False,
}
_NOT_ISA = {"axi_width", "clock_mhz", "cmd_queue_depth", "gemm_dsp_packing"}


def test_the_isa_parameters_come_from_the_definition():
    names = [f.name for f in dataclasses.fields(AccelConfig)]
    assert set(_OTHER_VALUES) == set(names)  # this table covers every parameter
    assert AccelConfig.isa_parameters() == tuple(n for n in names if n not in _NOT_ISA)


@pytest.mark.parametrize("name", sorted(_OTHER_VALUES))
def test_one_changed_parameter(name):
    base = AccelConfig()
    other = base.replace(**{name: _OTHER_VALUES[name]})
    if name in _NOT_ISA:
        check_config(base, other)  # accepted
        return
    with pytest.raises(ConfigMismatchError) as caught:
        check_config(base, other)
    assert set(caught.value.differences) == {name}
    assert f"{name} {getattr(base, name)} != {getattr(other, name)}" in str(caught.value)


@given(st.sampled_from(AccelConfig.preset_names()), st.sampled_from(AccelConfig.preset_names()))
def test_compatible_exactly_when_the_isa_parameters_agree(a, b):
    mine, theirs = AccelConfig.preset(a), AccelConfig.preset(b)
    same = all(getattr(mine, k) == getattr(theirs, k) for k in AccelConfig.isa_parameters())
    if same:
        check_config(mine, theirs)
    else:
        with pytest.raises(ConfigMismatchError):
            check_config(mine, theirs)


def test_a_program_runs_on_a_faster_clock_and_loads_for_it():
    program = demo_gemm_program(AccelConfig())
    faster = AccelConfig().replace(clock_mhz=150, axi_width=128, cmd_queue_depth=64)
    assert Program.from_bytes(program.to_bytes(), config=faster) == program
    expected = np.zeros(program.dram_extent, dtype=np.uint8)
    FunctionalSimulator(program.config).run(program, expected)
    dram = np.zeros(program.dram_extent, dtype=np.uint8)
    FunctionalSimulator(faster).run(program, dram)
    assert np.array_equal(dram, expected)


def _vta_file(**target):
    return json.dumps({**target, **VTA_DEFAULT_LOGS})


@pytest.mark.parametrize("target", [1, None, ["ultra96"], {"name": "pynq"}, True])
def test_a_vta_target_that_is_not_a_string_is_a_config_error(target):
    with pytest.raises(ConfigError, match="TARGET") as caught:
        AccelConfig.from_json(_vta_file(TARGET=target))
    assert caught.value.parameter == "TARGET"


def test_a_vta_target_string_still_chooses_the_platform():
    assert AccelConfig.from_json(_vta_file(TARGET="ultra96")).axi_width == 128
    assert AccelConfig.from_json(_vta_file()).axi_width == 64
