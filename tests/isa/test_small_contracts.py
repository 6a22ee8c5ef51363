"""Small contracts of the ISA package that mutation testing found unpinned (issue 17 item 18):
every bit of a control or status register's flags is its own, every register sits at the
offset the register map documents, and an assembly assignment with an empty name or value is
refused as such."""

from __future__ import annotations

import hashlib
import re

import pytest

import isa.registers
from isa import (
    AccelConfig,
    AssemblyError,
    Control,
    ErrorFlag,
    ModuleFlag,
    Register,
    Status,
    assemble,
    config_id,
)
from isa.tokens import Token


@pytest.mark.parametrize("flags", [Control, Status, ErrorFlag, ModuleFlag])
def test_register_flags_are_distinct_single_bits(flags):
    values = [int(member) for member in flags.__members__.values()]  # zero members too
    assert all(value > 0 and value & (value - 1) == 0 for value in values), values
    assert len(set(values)) == len(values)


def test_registers_sit_at_the_documented_offsets():
    """The map in isa.registers' docstring (what hosts and the RTL's testbench are written
    from): one 32-bit register per 4-byte offset; the four token counters between ``L2G`` and
    ``S2G`` follow one another in Token order."""
    table = re.findall(r"^``0x([0-9A-F]{2})``\s+``(\w+)``", isa.registers.__doc__, re.M)
    documented = {name: int(offset, 16) for offset, name in table}
    first = documented["L2G"]
    documented |= {token.name: first + 4 * i for i, token in enumerate(Token)}
    assert {register.name: register.value for register in Register} == documented


@pytest.mark.parametrize("token", ["x_size=", "=3", "x_size"])
def test_an_assignment_without_a_name_or_a_value_is_refused(token):
    cfg = AccelConfig.preset("tiny")
    line = f"LOAD memory_type=INP sram_base=0 dram_base=0 y_size=1 x_stride=1 {token}"
    with pytest.raises(AssemblyError, match=f"expected name=value, got {token!r}"):
        assemble(f".config {' '.join(f'{k}={v}' for k, v in cfg.to_dict().items())}\n{line}\n")


def test_config_ids_are_the_first_four_bytes_of_the_fingerprints_digest():
    """CONFIG_ID fills its 32 bits: the SHA-256 of each configuration's fingerprint, its first
    four bytes big-endian, distinct for the presets and variants a board may carry."""
    configs = [AccelConfig.preset(name) for name in ("default", "tiny")]
    configs += [c.replace(alu_mul=False) for c in configs]
    configs += [configs[0].replace(batch=2), configs[0].replace(block_out=32, block_in=32)]
    ids = [config_id(cfg) for cfg in configs]
    for cfg, value in zip(configs, ids, strict=True):
        digest = hashlib.sha256(cfg.fingerprint.encode()).digest()
        assert value == int.from_bytes(digest[:4], "big") and 0 <= value < 2**32
    assert len(set(ids)) == len(ids)
