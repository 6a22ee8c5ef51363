"""Encoding: round trips for random configs, VTA golden words, and typed errors."""

import pytest
from hypothesis import given
from hypothesis import strategies as st

from isa import (
    AccelConfig,
    AluInsn,
    AluOp,
    EncodingError,
    FinishInsn,
    GemmInsn,
    MemId,
    MemInsn,
    Opcode,
    Stage,
    Uop,
    decode,
    decode_uop,
    encode,
    encode_uop,
    instruction_set,
    stage_of,
)
from tests.strategies import configs, instructions, records

DEFAULT = AccelConfig()


@given(st.data())
def test_instruction_round_trip_for_random_configs(data):
    cfg = data.draw(configs())
    insn = data.draw(instructions(cfg))
    word = encode(insn, cfg)
    assert 0 <= word < 1 << 128
    assert decode(word, cfg) == insn


@given(st.data())
def test_uop_round_trip_for_random_configs(data):
    cfg = data.draw(configs())
    uop = data.draw(records(instruction_set(cfg).uop))
    word = encode_uop(uop, cfg)
    assert 0 <= word < 1 << 32
    assert decode_uop(word, cfg) == uop


@given(configs())
def test_fields_never_overlap_and_stay_inside_their_word(cfg):
    for fmt in (*instruction_set(cfg).instruction_formats, instruction_set(cfg).uop):
        used = 0
        for field in fmt.fields:
            assert field.mask & used == 0, f"{fmt.name}.{field.name} overlaps"
            assert field.msb < fmt.width
            # GCC's rule, which VTA's layout follows: no field straddles a 64-bit unit.
            assert field.offset // 64 == field.msb // 64
            used |= field.mask


# Golden words, computed by hand from VTA's bit table (vta-facts 1.3, 1.6): each literal is the
# sum of the shifted field values written beside it, never produced by our encoder.
GOLDEN = [
    (
        # x_pad_1=4<<124 | x_pad_0=3<<120 | y_pad_1=2<<116 | y_pad_0=1<<112 | x_stride=7<<96
        # | x_size=4<<80 | y_size=3<<64 | dram_base=0x1234<<26 | sram_base=5<<10
        # | memory_type=INP(2)<<7 | pop_next_dep=1<<4 | opcode=LOAD(0)
        0x4321000700040003_00000048D0001510,
        MemInsn(
            opcode=Opcode.LOAD,
            memory_type=MemId.INP,
            sram_base=5,
            dram_base=0x1234,
            y_size=3,
            x_size=4,
            x_stride=7,
            y_pad_0=1,
            y_pad_1=2,
            x_pad_0=3,
            x_pad_1=4,
            pop_next_dep=True,
        ),
    ),
    (
        # x_stride=16<<96 | x_size=16<<80 | y_size=1<<64 | dram_base=0x100<<26
        # | sram_base=0x20<<10 | memory_type=OUT(4)<<7 | push_prev_dep=1<<5 | pop_prev_dep=1<<3
        # | opcode=STORE(1)
        0x0000001000100001_0000000400008229,
        MemInsn(
            opcode=Opcode.STORE,
            memory_type=MemId.OUT,
            sram_base=0x20,
            dram_base=0x100,
            y_size=1,
            x_size=16,
            x_stride=16,
            pop_prev_dep=True,
            push_prev_dep=True,
        ),
    ),
    (
        # wgt_factor_in=1<<118 | wgt_factor_out=6<<108 | src_factor_out=3<<86
        # | dst_factor_in=1<<75 | dst_factor_out=2<<64 | iter_in=9<<49 | iter_out=5<<35
        # | uop_end=17<<21 | uop_bgn=3<<8 | push_next_dep=1<<6 | opcode=GEMM(2)
        0x0040600000C00802_0012002802200342,
        GemmInsn(
            uop_bgn=3,
            uop_end=17,
            iter_out=5,
            iter_in=9,
            dst_factor_out=2,
            dst_factor_in=1,
            src_factor_out=3,
            src_factor_in=0,
            wgt_factor_out=6,
            wgt_factor_in=1,
            push_next_dep=True,
        ),
    ),
    (
        # imm=-3 (0xFFFD)<<112 | use_imm=1<<111 | alu_opcode=SHR(3)<<108 | src_factor_in=1<<97
        # | dst_factor_in=1<<75 | iter_in=16<<49 | iter_out=1<<35 | uop_end=1<<21
        # | reset_reg=1<<7 | pop_prev_dep=1<<3 | opcode=ALU(4)
        0xFFFDB00200000800_002000080020008C,
        AluInsn(
            reset_reg=True,
            uop_bgn=0,
            uop_end=1,
            iter_out=1,
            iter_in=16,
            dst_factor_in=1,
            src_factor_in=1,
            alu_opcode=AluOp.SHR,
            use_imm=True,
            imm=-3,
            pop_prev_dep=True,
        ),
    ),
    (
        # push_prev_dep=1<<5 | opcode=FINISH(3)
        0x23,
        FinishInsn(push_prev_dep=True),
    ),
]


@pytest.mark.parametrize(("word", "insn"), GOLDEN, ids=lambda x: getattr(x, "opcode", "w"))
def test_golden_words_decode_and_reencode(word, insn):
    assert decode(word, DEFAULT) == insn
    assert encode(insn, DEFAULT) == word


def test_golden_uop():
    # wgt_idx=0x2AA<<22 | src_idx=0x3FF<<11 | dst_idx=5
    word = 0xAA9FF805
    uop = Uop(dst_idx=5, src_idx=0x3FF, wgt_idx=0x2AA)
    assert decode_uop(word, DEFAULT) == uop
    assert encode_uop(uop, DEFAULT) == word


def test_field_overflow_names_instruction_field_value_and_width():
    insn = MemInsn(
        opcode=Opcode.LOAD,
        memory_type=MemId.INP,
        sram_base=1 << 16,
        dram_base=0,
        y_size=1,
        x_size=1,
        x_stride=1,
    )
    with pytest.raises(EncodingError, match="MemInsn: field sram_base=65536 .*16 bits") as info:
        encode(insn, DEFAULT)
    assert info.value.field == "sram_base"


@pytest.mark.parametrize("imm", [32768, -32769])
def test_signed_immediate_range(imm):
    insn = AluInsn(uop_bgn=0, uop_end=1, iter_out=1, iter_in=1, alu_opcode=AluOp.ADD, imm=imm)
    with pytest.raises(EncodingError, match=r"imm=.*range -32768\.\.32767"):
        encode(insn, DEFAULT)


def test_config_dependent_width():
    # uop_bgn has 13 bits by default but 10 on the tiny config.
    insn = GemmInsn(uop_bgn=2000, uop_end=2001, iter_out=1, iter_in=1)
    assert decode(encode(insn, DEFAULT), DEFAULT) == insn
    with pytest.raises(EncodingError, match="uop_bgn=2000 does not fit its 10 bits"):
        encode(insn, AccelConfig.preset("tiny"))


@pytest.mark.parametrize("opcode", [5, 6, 7])
def test_unknown_opcode(opcode):
    with pytest.raises(EncodingError, match=f"unknown opcode {opcode} in bits \\[2:0\\]"):
        decode(opcode, DEFAULT)


def test_invalid_memory_type():
    word = 6 << 7  # LOAD with memory_type 6
    with pytest.raises(EncodingError, match="memory_type bits \\[9:7\\] hold 6") as info:
        decode(word, DEFAULT)
    assert info.value.field == "memory_type"


def test_invalid_alu_opcode():
    word = 4 | (5 << 108)
    with pytest.raises(EncodingError, match="alu_opcode .* hold 5, which is no AluOp"):
        decode(word, DEFAULT)


@pytest.mark.parametrize(("word", "what"), [(2 | 1 << 63, "GEMM"), (3 | 1 << 100, "FINISH")])
def test_reserved_bits_must_be_zero(word, what):
    with pytest.raises(EncodingError, match=f"{what}: reserved bits are set"):
        decode(word, DEFAULT)


@pytest.mark.parametrize("word", [-1, 1 << 128, "0x3"])
def test_decode_rejects_non_words(word):
    with pytest.raises(EncodingError, match="not a 128-bit instruction word"):
        decode(word, DEFAULT)


def test_uop_overflow():
    with pytest.raises(EncodingError, match="dst_idx=2048 does not fit its 11 bits"):
        encode_uop(Uop(dst_idx=2048, src_idx=0), DEFAULT)


@pytest.mark.parametrize(
    ("make", "match"),
    [
        (lambda: GemmInsn(uop_bgn=0, uop_end=1, iter_out=1, iter_in=1, reset_reg=2), "flag"),
        (lambda: GemmInsn(uop_bgn="0", uop_end=1, iter_out=1, iter_in=1), "must be an integer"),
        (lambda: AluInsn(uop_bgn=0, uop_end=1, iter_out=1, iter_in=1, alu_opcode=9), "AluOp"),
        (
            lambda: MemInsn(
                opcode=Opcode.GEMM,
                memory_type=MemId.INP,
                sram_base=0,
                dram_base=0,
                y_size=1,
                x_size=1,
                x_stride=1,
            ),
            "not LOAD or STORE",
        ),
    ],
)
def test_records_check_types(make, match):
    with pytest.raises(EncodingError, match=match):
        make()


def test_flags_normalise_to_bool():
    insn = FinishInsn(pop_prev_dep=1)
    assert insn.pop_prev_dep is True
    assert insn == FinishInsn(pop_prev_dep=True)


@pytest.mark.parametrize(
    ("insn", "stage"),
    [
        (
            MemInsn(
                opcode=Opcode.LOAD,
                memory_type=m,
                sram_base=0,
                dram_base=0,
                y_size=1,
                x_size=1,
                x_stride=1,
            ),
            s,
        )
        for m, s in [
            (MemId.INP, Stage.LOAD),
            (MemId.WGT, Stage.LOAD),
            (MemId.UOP, Stage.COMPUTE),
            (MemId.ACC, Stage.COMPUTE),
            (MemId.ACC_8BIT, Stage.COMPUTE),
        ]
    ]
    + [
        (
            MemInsn(
                opcode=Opcode.STORE,
                memory_type=MemId.OUT,
                sram_base=0,
                dram_base=0,
                y_size=1,
                x_size=1,
                x_stride=1,
            ),
            Stage.STORE,
        ),
        (GemmInsn(uop_bgn=0, uop_end=1, iter_out=1, iter_in=1), Stage.COMPUTE),
        (FinishInsn(), Stage.COMPUTE),
    ],
)
def test_routing_follows_vta(insn, stage):
    assert stage_of(insn) is stage
