"""Every bit that no field of a format uses is reserved: a word with any one of them set, the
top one included, is refused by ``decode``/``decode_uop``, and a word one past the format's width
is no word (issue 17 item 18). The reserved bits are worked out here from the field offsets and
widths, not from ``Format.reserved_mask``."""

from __future__ import annotations

import pytest

from isa import (
    INSN_WIDTH,
    UOP_WIDTH,
    AccelConfig,
    EncodingError,
    MemInsn,
    Opcode,
    decode,
    decode_uop,
    instruction_set,
)

PRESETS = ("tiny", "default", "large")


def _unused_bits(fmt) -> list[int]:
    used = {bit for f in fmt.fields for bit in range(f.offset, f.offset + f.width)}
    return [bit for bit in range(fmt.width) if bit not in used]


def _formats(cfg: AccelConfig):
    """Each instruction format with the word of its record with every field 0 but the opcode."""
    for fmt in instruction_set(cfg).instruction_formats:
        opcode = Opcode.LOAD if fmt.record is MemInsn else fmt.record.opcode
        yield fmt, int(opcode) << fmt.field("opcode").offset


def test_every_unused_instruction_bit_is_reserved():
    checked = set()
    for preset in PRESETS:
        cfg = AccelConfig.preset(preset)
        for fmt, base in _formats(cfg):
            decode(base, cfg)  # the base word itself is valid
            for bit in _unused_bits(fmt):
                with pytest.raises(EncodingError, match="reserved bits are set"):
                    decode(base | 1 << bit, cfg)
                checked.add(bit)
    assert INSN_WIDTH - 1 in checked  # the top bit is reserved in some format


def test_every_unused_micro_op_bit_is_reserved():
    checked = set()
    for preset in PRESETS:
        cfg = AccelConfig.preset(preset)
        decode_uop(0, cfg)
        for bit in _unused_bits(instruction_set(cfg).uop):
            with pytest.raises(EncodingError, match="reserved bits are set"):
                decode_uop(1 << bit, cfg)
            checked.add(bit)
    assert UOP_WIDTH - 1 in checked  # the top bit is reserved where the indices are narrow


@pytest.mark.parametrize(
    ("decoder", "width"), [(decode, INSN_WIDTH), (decode_uop, UOP_WIDTH)], ids=["insn", "uop"]
)
def test_a_word_one_bit_too_wide_is_refused(decoder, width):
    cfg = AccelConfig.preset("tiny")
    for word in (1 << width, (1 << width) | 3, (1 << (width + 1)) - 1):
        with pytest.raises(EncodingError, match=f"not a {width}-bit"):
            decoder(word, cfg)
