"""The optional ALU multiplier (``alu_mul``): one configuration value, and every part of the ISA
follows: the configuration, its fingerprint and files, the field table, encode/decode, Program,
the assembler and the ProgramBuilder all refuse MUL where the configuration has none."""

from __future__ import annotations

import json
import struct
import zlib

import pytest
from hypothesis import given
from hypothesis import strategies as st

from isa import (
    AccelConfig,
    AluInsn,
    AluOp,
    AssemblyError,
    BuilderError,
    ConfigError,
    EncodingError,
    FinishInsn,
    Kernel,
    Loop,
    MemId,
    Program,
    ProgramBuilder,
    ProgramError,
    ProgramFormatError,
    Uop,
    assemble,
    decode,
    disassemble,
    encode,
    instruction_set,
)
from tests.strategies import configs, records

TINY = AccelConfig.preset("tiny")
NOMUL = TINY.replace(alu_mul=False)
REASON = r"alu_opcode=MUL is not available: this configuration has no ALU multiplier"


def _alu(op: AluOp, **fields) -> AluInsn:
    return AluInsn(alu_opcode=op, uop_bgn=0, uop_end=1, iter_out=1, iter_in=1, **fields)


# ---------------------------------------------------------------------- the configuration
def test_presets_keep_the_multiplier_and_their_names():
    for name in AccelConfig.preset_names():
        cfg = AccelConfig.preset(name)
        assert cfg.alu_mul is True
        assert cfg.alu_ops == tuple(AluOp)
        assert "nomul" not in cfg.fingerprint
    assert AccelConfig().fingerprint == "1x16_i8w8a32_15_15_18_17"


def test_without_mul_the_fingerprint_gains_a_suffix_and_the_ops_lose_mul():
    assert NOMUL.fingerprint == TINY.fingerprint + "_nomul"
    assert AccelConfig(alu_mul=False).fingerprint == "1x16_i8w8a32_15_15_18_17_nomul"
    assert NOMUL.alu_ops == (AluOp.MIN, AluOp.MAX, AluOp.ADD, AluOp.SHR)
    assert NOMUL.missing_alu_op(AluOp.MUL) == (
        "this configuration has no ALU multiplier (alu_mul=False)"
    )
    assert NOMUL.missing_alu_op(AluOp.ADD) is None and TINY.missing_alu_op(AluOp.MUL) is None
    assert NOMUL != TINY and len({NOMUL, TINY, TINY.replace(alu_mul=True)}) == 2


@pytest.mark.parametrize("value", [0, 1, "false", None, 1.0])
def test_alu_mul_must_be_a_bool(value):
    with pytest.raises(ConfigError, match="must be true or false") as info:
        TINY.replace(alu_mul=value)
    assert info.value.parameter == "alu_mul"


def test_files_carry_it_and_default_to_the_multiplier(tmp_path):
    text = NOMUL.to_json()
    assert json.loads(text)["alu_mul"] is False
    assert AccelConfig.from_json(text) == NOMUL
    path = tmp_path / "nomul.json"
    NOMUL.save(path)
    assert AccelConfig.resolve(str(path)) == NOMUL
    # Files written before the option, and VTA's own files, have no such key: a multiplier.
    params = TINY.to_dict()
    del params["alu_mul"]
    assert AccelConfig.from_dict(params) == TINY
    with pytest.raises(ConfigError, match="alu_mul=0: must be true or false"):
        AccelConfig.from_json(json.dumps({**params, "alu_mul": 0}))


# ---------------------------------------------------------------------- field table, encoding
def test_the_field_table_excludes_mul_and_keeps_every_bit_position():
    with_mul, without = instruction_set(TINY).alu, instruction_set(NOMUL).alu
    assert [(f.name, f.offset, f.width) for f in with_mul.fields] == [
        (f.name, f.offset, f.width) for f in without.fields
    ]
    assert without.field("alu_opcode").excluded[0][0] is AluOp.MUL
    assert not with_mul.field("alu_opcode").excluded
    assert "| alu_opcode | 3 | AluOp (no MUL) |" in without.table()
    assert "| alu_opcode | 3 | AluOp |" in with_mul.table()


@given(st.data())
def test_alu_instructions_round_trip_without_mul_and_mul_is_refused(data):
    """Every ALU instruction of a random configuration without MUL round-trips; the same
    instruction with MUL neither encodes nor, encoded where MUL exists, decodes."""
    cfg = data.draw(configs().map(lambda c: c.replace(alu_mul=False)))
    insn = data.draw(records(instruction_set(cfg).alu))
    assert insn.alu_opcode is not AluOp.MUL
    assert decode(encode(insn, cfg), cfg) == insn
    mul = AluInsn(**{**vars(insn), "alu_opcode": AluOp.MUL})
    with pytest.raises(EncodingError, match=REASON) as info:
        encode(mul, cfg)
    assert (info.value.insn, info.value.field) == ("AluInsn", "alu_opcode")
    word = encode(mul, cfg.replace(alu_mul=True))  # the same bits where MUL exists
    with pytest.raises(EncodingError, match=REASON) as info:
        decode(word, cfg)
    assert info.value.field == "alu_opcode"


# ---------------------------------------------------------------------- Program
def test_a_program_cannot_hold_mul_without_the_multiplier():
    insns = [_alu(AluOp.ADD, use_imm=True, imm=1), _alu(AluOp.MUL, use_imm=True, imm=3)]
    Program(TINY, [*insns, FinishInsn()])
    with pytest.raises(ProgramError, match=f"instruction 1: AluInsn: field {REASON}"):
        Program(NOMUL, [*insns, FinishInsn()])
    Program(NOMUL, [insns[0], FinishInsn()])


def test_a_program_file_for_no_multiplier_with_a_mul_word_does_not_load():
    """A file whose header says alu_mul=false but whose instructions hold MUL (written by hand,
    or by a tool that ignored the option) is refused with the instruction's index."""
    program = Program(TINY, [_alu(AluOp.MUL, use_imm=True, imm=3), FinishInsn()])
    forged = _with_header_config(program.to_bytes(), alu_mul=False)
    with pytest.raises(ProgramFormatError, match=f"instruction 0: ALU: field {REASON}"):
        Program.from_bytes(forged)


def _with_header_config(data: bytes, **changes) -> bytes:
    """``data`` (a program file) with its header's configuration changed, checksum redone."""
    preamble = struct.Struct("<8sHHI")
    magic, version, reserved, length = preamble.unpack_from(data)
    header = json.loads(data[preamble.size : preamble.size + length])
    cfg = AccelConfig.from_dict({**header["config"], **changes})
    header |= {"config": cfg.to_dict(), "fingerprint": cfg.fingerprint}
    raw = json.dumps(header, sort_keys=True).encode()
    body = preamble.pack(magic, version, reserved, len(raw)) + raw
    body += data[preamble.size + length : -4]
    return body + struct.pack("<I", zlib.crc32(body))


# ---------------------------------------------------------------------- assembler, builder
def test_the_assembler_names_the_line_of_a_mul():
    text = disassemble(Program(TINY, [_alu(AluOp.SHR, use_imm=True, imm=2), FinishInsn()]))
    assert "alu_mul=True" in text
    nomul_text = text.replace("alu_mul=True", "alu_mul=False")
    assert assemble(nomul_text).config == NOMUL
    lines = nomul_text.splitlines()
    number = next(i for i, line in enumerate(lines, start=1) if line.startswith("ALU "))
    lines[number - 1] = lines[number - 1].replace("alu_opcode=SHR", "alu_opcode=MUL")
    with pytest.raises(AssemblyError, match=f"ALU: field {REASON}") as info:
        assemble("\n".join(lines))
    assert info.value.line == number
    with pytest.raises(AssemblyError, match="no ALU multiplier"):
        assemble("ALU alu_opcode=MUL uop_bgn=0 uop_end=1 iter_out=1 iter_in=1\nFINISH", NOMUL)


@pytest.mark.parametrize(
    ("spelling", "value"), [("true", True), ("FALSE", False), ("False", False)]
)
def test_the_config_line_spells_the_flag_in_any_case(spelling, value):
    params = " ".join(f"{k}={v}" for k, v in TINY.to_dict().items() if k != "alu_mul")
    assert assemble(f".config {params} alu_mul={spelling}\nFINISH").config.alu_mul is value


def test_the_builder_refuses_mul_and_builds_every_other_op():
    kernel = Kernel((Uop(dst_idx=0, src_idx=1),), (Loop(2, dst_factor=2, src_factor=2),))
    b = ProgramBuilder(NOMUL)
    b.alloc("out", MemId.OUT, 1)
    for op in NOMUL.alu_ops:
        b.alu(kernel, op, imm=1)
        b.alu(kernel, op)
    with pytest.raises(BuilderError, match=f"alu: field {REASON}"):
        b.alu(kernel, AluOp.MUL, imm=3)
    with pytest.raises(BuilderError, match="no ALU multiplier"):
        b.alu(kernel, AluOp.MUL)
    program = b.finish()
    assert {i.alu_opcode for i in program.instructions if isinstance(i, AluInsn)} == set(
        NOMUL.alu_ops
    )
