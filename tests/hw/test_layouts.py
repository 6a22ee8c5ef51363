"""hw.layouts: the Amaranth layouts are the isa field tables, bit for bit."""

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from hw.layouts import format_layout, insn_layouts, row_layouts
from isa import AccelConfig, MemId, encode, encode_uop, instruction_set
from tests.strategies import instructions, records

PRESETS = [AccelConfig.preset(name) for name in ("tiny", "default", "large")]


@pytest.mark.parametrize("cfg", PRESETS, ids=lambda c: c.fingerprint)
def test_every_field_sits_where_the_field_table_puts_it(cfg):
    isa = instruction_set(cfg)
    for fmt in (*isa.instruction_formats, isa.uop):
        layout = format_layout(fmt)
        assert layout.size == fmt.width
        for field in fmt.fields:
            member = layout[field.name]
            assert member.offset == field.offset
            assert member.shape.width == field.width
            assert member.shape.signed == field.signed
        reserved = [name for name in layout.members if name.startswith("reserved")]
        reserved_bits = sum(layout[name].shape.width for name in reserved)
        assert reserved_bits == bin(fmt.reserved_mask).count("1")


@settings(max_examples=50)
@given(data=st.data())
def test_layout_views_decode_encoded_words(data):
    cfg = data.draw(st.sampled_from(PRESETS))
    insn = data.draw(instructions(cfg))
    fmt = instruction_set(cfg).for_record(insn)
    view = format_layout(fmt).from_bits(encode(insn, cfg))
    for field in fmt.fields:
        assert view[field.name] == int(getattr(insn, field.name))


@settings(max_examples=30)
@given(data=st.data())
def test_uop_layout_decodes_micro_ops(data):
    cfg = data.draw(st.sampled_from(PRESETS))
    uop = data.draw(records(instruction_set(cfg).uop))
    view = insn_layouts(cfg).uop.from_bits(encode_uop(uop, cfg))
    assert (view.dst_idx, view.src_idx, view.wgt_idx) == (
        uop.dst_idx,
        uop.src_idx,
        uop.wgt_idx,
    )


@pytest.mark.parametrize("cfg", PRESETS, ids=lambda c: c.fingerprint)
def test_buffer_rows_are_dram_elements(cfg):
    rows = row_layouts(cfg)
    assert rows.inp.size == cfg.elem_bytes(MemId.INP) * 8
    assert rows.wgt.size == cfg.elem_bytes(MemId.WGT) * 8
    assert rows.acc.size == cfg.elem_bytes(MemId.ACC) * 8
    assert rows.out.size == cfg.elem_bytes(MemId.OUT) * 8
    assert rows.acc8.size == cfg.elem_bytes(MemId.ACC_8BIT) * 8
