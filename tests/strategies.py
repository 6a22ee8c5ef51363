"""Hypothesis strategies shared by the whole suite: configurations, instructions, programs.

Instruction strategies are derived from the field tables, so every field is drawn over its full
range for the configuration at hand (enum fields over the members it does not exclude: no MUL
without ``alu_mul``); the golden tests pin the tables themselves to VTA's layout.
"""

from __future__ import annotations

from enum import IntEnum

from hypothesis import reject
from hypothesis import strategies as st

from isa import (
    AccelConfig,
    ConfigError,
    DramSegment,
    Format,
    MemInsn,
    Opcode,
    Program,
    instruction_set,
)


@st.composite
def configs(draw: st.DrawFn) -> AccelConfig:
    """Random valid configurations, buffer sizes drawn as depths so most draws are valid."""
    inp_width = draw(st.sampled_from([8, 16]))
    wgt_width = draw(st.sampled_from([8, 16]))
    acc_width = draw(st.sampled_from([16, 32, 64]))
    batch = draw(st.sampled_from([1, 2, 4]))
    block_in = draw(st.sampled_from([1, 2, 4, 8, 16, 32]))
    block_out = draw(st.sampled_from([1, 2, 4, 8, 16, 32]))
    elems = {
        "uop": 4,
        "inp": batch * block_in * inp_width // 8,
        "wgt": block_out * block_in * wgt_width // 8,
        "acc": batch * block_out * acc_width // 8,
    }
    sizes = {
        f"{name}_buff_size": elem << draw(st.integers(1, 13 if name == "uop" else 11))
        for name, elem in elems.items()
    }
    try:
        return AccelConfig(
            inp_width=inp_width,
            wgt_width=wgt_width,
            acc_width=acc_width,
            batch=batch,
            block_in=block_in,
            block_out=block_out,
            axi_width=draw(st.sampled_from([32, 64, 128, 256, 512])),
            clock_mhz=draw(st.sampled_from([50.0, 100.0, 142.86, 200.0, 333.0])),
            loop_iter_bits=draw(st.integers(4, 14)),
            mem_pad_bits=draw(st.integers(1, 4)),
            alu_imm_bits=draw(st.integers(8, 16)),
            alu_mul=draw(st.booleans()),
            **sizes,
        )
    except ConfigError:
        reject()


def _field_strategy(field) -> st.SearchStrategy:
    if field.kind is bool:
        return st.booleans()
    if issubclass(field.kind, IntEnum):
        excluded = {member for member, _ in field.excluded}
        return st.sampled_from([m for m in field.kind if m not in excluded])
    return st.integers(field.min, field.max)


def records(fmt: Format) -> st.SearchStrategy:
    """Records of ``fmt`` with every field drawn over its whole range."""
    fields = {f.name: _field_strategy(f) for f in fmt.fields if f.name != "opcode"}
    if fmt.record is MemInsn:
        fields["opcode"] = st.sampled_from([Opcode.LOAD, Opcode.STORE])
    return st.builds(fmt.record, **fields)


def instructions(cfg: AccelConfig) -> st.SearchStrategy:
    """Any encodable instruction for ``cfg``."""
    return st.one_of([records(fmt) for fmt in instruction_set(cfg).instruction_formats])


@st.composite
def programs(draw: st.DrawFn, cfg: AccelConfig | None = None) -> Program:
    """Random (not necessarily runnable) programs: instructions, micro-ops and segments."""
    cfg = cfg if cfg is not None else draw(configs())
    insns = draw(st.lists(instructions(cfg), max_size=20))
    uops = draw(st.lists(records(instruction_set(cfg).uop), max_size=8))
    uop_base = draw(st.integers(0, 64))
    cursor = (uop_base + len(uops)) * cfg.uop_elem_bytes
    segments = []
    for index in range(draw(st.integers(0, 3))):
        cursor += draw(st.integers(0, 64))
        data = draw(st.binary(max_size=80))
        segments.append(DramSegment(f"seg{index}", cursor, data))
        cursor += len(data)
    return Program(cfg, insns, uops, uop_base, segments)
