"""Assembly text: exact round trips and malformed lines reported with their line number."""

import pytest
from hypothesis import given

from isa import AccelConfig, AluOp, AssemblyError, FinishInsn, GemmInsn, assemble, disassemble
from runtime.demo_gemm import demo_gemm_program
from tests.strategies import programs

TINY = AccelConfig.preset("tiny")


@given(programs())
def test_round_trip(program):
    text = disassemble(program)
    assert assemble(text) == program
    assert assemble(disassemble(program, listing=True)) == program


def test_every_field_is_named():
    text = disassemble(demo_gemm_program(AccelConfig()))
    gemm = next(line for line in text.splitlines() if line.startswith("GEMM"))
    for name in (
        "reset_reg",
        "uop_bgn",
        "uop_end",
        "iter_out",
        "iter_in",
        "dst_factor_out",
        "dst_factor_in",
        "src_factor_out",
        "src_factor_in",
        "wgt_factor_out",
        "wgt_factor_in",
        "pop_prev_dep",
        "pop_next_dep",
        "push_prev_dep",
        "push_next_dep",
    ):
        assert f" {name}=" in gemm


def test_hand_written_source_with_defaults_and_comments():
    source = """
    ; a hand-written program
    gemm uop_bgn=0 uop_end=1 iter_out=2 iter_in=0x3   # loop factors default to 0
    ALU alu_opcode=shr use_imm=1 imm=-2 uop_bgn=0 uop_end=1 iter_out=1 iter_in=1
    FINISH pop_prev_dep=1
    """
    program = assemble(source, TINY)
    assert program.config == TINY
    assert program.instructions[0] == GemmInsn(uop_bgn=0, uop_end=1, iter_out=2, iter_in=3)
    assert program.instructions[1].alu_opcode is AluOp.SHR
    assert program.instructions[1].imm == -2
    assert program.instructions[2] == FinishInsn(pop_prev_dep=True)


BAD_LINES = [
    ("FOO x=1", "unknown mnemonic 'FOO'"),
    ("GEMM uop_bgn=0 uop_end=1 iter_out=1 iter_in=1 iter_ot=2", "unknown field iter_ot"),
    ("GEMM uop_bgn=0 uop_end=1 iter_out=1", "missing field\\(s\\) iter_in"),
    ("GEMM uop_bgn=0 uop_bgn=0 uop_end=1 iter_out=1 iter_in=1", "uop_bgn is given twice"),
    ("GEMM uop_bgn=zero uop_end=1 iter_out=1 iter_in=1", "'zero' is not an integer"),
    ("GEMM uop_bgn=0 uop_end=1 iter_out=1 iter_in=1 reset_reg=2", "must be 0 or 1"),
    ("GEMM uop_bgn=0 uop_end=1 iter_out=1 iter_in", "expected name=value"),
    ("GEMM uop_bgn=4096 uop_end=1 iter_out=1 iter_in=1", "uop_bgn=4096 does not fit its 10 bits"),
    ("ALU alu_opcode=SUB uop_bgn=0 uop_end=1 iter_out=1 iter_in=1", "SUB is not one of MIN"),
    ("LOAD memory_type=INP sram_base=0 dram_base=0 y_size=1 x_size=1", "missing field"),
    (".data 00ff", ".data before any .segment"),
    (".segment a 0x10\n.data 0g", "not an even run of hex digits"),
    (".uop dst_idx=1", "missing field\\(s\\) src_idx"),
    (".uop_base", ".uop_base takes one integer"),
    (".config block_in=3", "block_in=3: must be a power of two"),
    (".config block_in=x", "block_in=x is neither a number nor true/false"),
]


@pytest.mark.parametrize(("line", "match"), BAD_LINES)
def test_malformed_lines_name_their_line_number(line, match):
    source = "; header comment\nFINISH\n" + line + "\nFINISH\n"
    expected_line = 3 + line.count("\n")
    with pytest.raises(AssemblyError, match=match) as info:
        assemble(source, TINY)
    assert info.value.line == expected_line
    assert str(info.value).startswith(f"line {expected_line}:")


def test_config_must_agree_or_exist():
    text = disassemble(demo_gemm_program(TINY))
    with pytest.raises(AssemblyError, match="describes 1x4_.* but 1x16_.* was requested"):
        assemble(text, AccelConfig())
    with pytest.raises(AssemblyError, match="no .config line and no configuration"):
        assemble("FINISH\n")
    with pytest.raises(AssemblyError, match="given twice"):
        assemble(text + text.splitlines()[1] + "\n")


def test_overlapping_segments_in_source():
    source = ".segment a 0\n.data 0000\n.segment b 1\n.data 00\nFINISH\n"
    with pytest.raises(AssemblyError, match="segment a overlaps segment b"):
        assemble(source, TINY)
