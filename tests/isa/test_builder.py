"""ProgramBuilder: DRAM buffers, transfers, micro-op kernels and their cache, token folding,
the finish() epilogue, and a BuilderError for everything that cannot become a program."""

from __future__ import annotations

import numpy as np
import pytest

from isa import (
    AccelConfig,
    AluOp,
    BuilderError,
    FinishInsn,
    Kernel,
    Loop,
    MemId,
    MemInsn,
    Opcode,
    ProgramBuilder,
    Stage,
    Uop,
    stage_of,
)
from simulator import FunctionalSimulator
from tests.conformance.reference import reference_run

TINY = AccelConfig.preset("tiny")
DEFAULT = AccelConfig()
L, C, S = Stage.LOAD, Stage.COMPUTE, Stage.STORE


def _flags(insn) -> set[str]:
    names = ("pop_prev_dep", "pop_next_dep", "push_prev_dep", "push_next_dep")
    return {name for name in names if getattr(insn, name)}


def _run(program) -> np.ndarray:
    dram = np.zeros(program.dram_extent, dtype=np.uint8)
    FunctionalSimulator(program.config).run(program, dram)
    return dram


def _one(dst: int = 0, src: int = 0, loops=()) -> Kernel:
    return Kernel((Uop(dst_idx=dst, src_idx=src),), loops)


# ---------------------------------------------------------------------- DRAM buffers
def test_buffers_are_aligned_to_their_elements_and_become_segments():
    b = ProgramBuilder(DEFAULT, dram_start=4)
    uop = b.alloc("u", MemId.UOP, 1)
    inp = b.alloc("x", MemId.INP, 3, bytes(range(48)))
    wgt = b.alloc("w", MemId.WGT, 1)
    acc = b.alloc("a", MemId.ACC, 1)
    assert (uop.address, inp.address, wgt.address, acc.address) == (4, 16, 256, 512)
    assert b.dram_size == acc.end
    b.alu(_one(), AluOp.ADD, imm=1)
    program = b.finish()
    segments = {s.name: s for s in program.segments}
    assert segments["x"].data == bytes(range(48))
    assert segments["w"].data == bytes(256)
    assert program.uop_base * 4 >= acc.end  # the micro-op table follows the buffers
    assert program.dram_extent == b.dram_size


@pytest.mark.parametrize(
    ("call", "message"),
    [
        (lambda b: b.alloc("x", MemId.INP, 2, b"\0" * 5), "data has 5 bytes, the buffer 32"),
        (lambda b: b.alloc("x", MemId.INP, 0), "must be a positive integer"),
        (lambda b: b.alloc("two words", MemId.INP, 1), "non-empty word"),
        (lambda b: b.alloc("x", MemId.INP, 1, np.zeros((4, 4))[:, 0]), "C-contiguous"),
        (lambda b: b.extern("x", MemId.WGT, 1, 128), "0x80 is not aligned to its 256-byte WGT"),
        (lambda b: b.extern("x", MemId.INP, 1, -16), "must be an integer >= 0"),
        (lambda b: b.extern("x", MemId.INP, 0, 0), "must be a positive integer"),
        (lambda b: b.extern("x", MemId.INP, 1, 2**32), "buffer x"),
    ],
)
def test_bad_buffers(call, message):
    with pytest.raises(BuilderError, match=message):
        call(ProgramBuilder(DEFAULT))


@pytest.mark.parametrize("start", [-1, -4096])
def test_a_negative_dram_start_is_refused(start):
    with pytest.raises(BuilderError, match=f"dram_start={start} must be >= 0"):
        ProgramBuilder(DEFAULT, dram_start=start)
    assert ProgramBuilder(DEFAULT, dram_start=0).finish().dram_extent >= 0  # 0 is the least


def test_extern_buffers_are_the_callers_memory():
    """A buffer at an address the caller chose: no segment, and the micro-op table goes where
    dram_start says, not after it."""
    b = ProgramBuilder(DEFAULT, dram_start=4096)
    acc = b.extern("a", MemId.ACC, 1, 1024)
    out = b.extern("o", MemId.OUT, 1, 2048)
    b.load_2d(acc, sram=0, y_size=1, x_size=1)
    b.alu(_one(), AluOp.ADD, imm=1)
    b.dep_push(C, S)
    b.dep_pop(C, S)
    b.store_2d(out, sram=0, y_size=1, x_size=1)
    program = b.finish()
    assert program.segments == ()
    assert (acc.address, acc.end, out.address) == (1024, 1088, 2048)
    assert program.uop_region[0] >= 4096
    dram = np.zeros(program.dram_extent, dtype=np.uint8)
    dram[1024:1088].view(np.int32)[:] = np.arange(16)
    FunctionalSimulator(DEFAULT).run(program, dram)  # the caller's bytes in and out
    assert dram[2048:2064].view(np.int8).tolist() == list(range(1, 17))
    b2 = ProgramBuilder(DEFAULT)
    b2.alloc("x", MemId.INP, 1)
    with pytest.raises(BuilderError, match="used twice"):
        b2.extern("x", MemId.INP, 1, 64)


def test_buffer_names_are_unique():
    b = ProgramBuilder(DEFAULT)
    b.alloc("x", MemId.INP, 1)
    with pytest.raises(BuilderError, match="used twice"):
        b.alloc("x", MemId.WGT, 1)


# ---------------------------------------------------------------------- transfers
def test_load_2d_fills_every_field():
    b = ProgramBuilder(DEFAULT)
    x = b.alloc("x", MemId.INP, 40)
    b.load_2d(x, sram=5, y_size=3, x_size=4, x_stride=10, offset=2, y_pad_0=1, x_pad_1=2)
    (load,) = b.instructions
    assert load == MemInsn(
        opcode=Opcode.LOAD,
        memory_type=MemId.INP,
        sram_base=5,
        dram_base=x.address // 16 + 2,
        y_size=3,
        x_size=4,
        x_stride=10,
        y_pad_0=1,
        x_pad_1=2,
    )


@pytest.mark.parametrize(
    ("call", "message"),
    [
        (lambda b, x: b.load_2d(x, sram=0, y_size=3, x_size=4, x_stride=10), "up to 23"),
        (lambda b, x: b.load_2d(x, sram=0, y_size=1, x_size=1, offset=16), "holds 16 INP"),
        (lambda b, x: b.load_2d(x, sram=2046, y_size=1, x_size=4), "rows 2046..2049"),
        (lambda b, x: b.load_2d(x, sram=-1, y_size=1, x_size=1), "rows -1..-1 lie outside"),
        (lambda b, x: b.load_2d(x, sram=0, y_size=1, x_size=0), "x_size=0 must be >= 1"),
        (lambda b, x: b.load_2d(x, sram=0, y_size=1, x_size=1, y_pad_0=16), "y_pad_0=16"),
        (lambda b, x: b.load_2d(x, sram=0, y_size=1, x_size=1, memory_type=MemId.WGT), "aligned"),
        (lambda b, x: b.load_2d(x, sram=0, y_size=1, x_size=1, memory_type=MemId.OUT), "OUT"),
        (lambda b, x: b.load_2d(x, sram=0, y_size=1, x_size=1, memory_type=MemId.UOP), "UOP"),
        (lambda b, x: b.store_2d(x, sram=2047, y_size=1, x_size=2), "OUT buffer"),
    ],
)
def test_bad_transfers(call, message):
    b = ProgramBuilder(DEFAULT, dram_start=16)
    x = b.alloc("x", MemId.INP, 16)
    with pytest.raises(BuilderError, match=message):
        call(b, x)
    assert b.instructions == ()


def test_foreign_buffer_is_refused():
    other = ProgramBuilder(DEFAULT).alloc("x", MemId.INP, 1)
    with pytest.raises(BuilderError, match="not a buffer of this builder"):
        ProgramBuilder(DEFAULT).load_2d(other, sram=0, y_size=1, x_size=1)


# ---------------------------------------------------------------------- kernels
def test_kernel_loops_become_instruction_fields():
    b = ProgramBuilder(DEFAULT)
    kernel = Kernel(
        (Uop(dst_idx=1, src_idx=2, wgt_idx=3),),
        (Loop(4, dst_factor=5, src_factor=6, wgt_factor=7), Loop(8, 9, 10, 11)),
    )
    b.gemm(kernel)
    load, gemm = b.instructions
    assert (load.memory_type, load.x_size) == (MemId.UOP, 1)
    assert (gemm.iter_out, gemm.iter_in) == (4, 8)
    assert (gemm.dst_factor_out, gemm.src_factor_out, gemm.wgt_factor_out) == (5, 6, 7)
    assert (gemm.dst_factor_in, gemm.src_factor_in, gemm.wgt_factor_in) == (9, 10, 11)
    b.alu(_one(loops=(Loop(3, 1, 1),)), AluOp.MAX, imm=-5)
    alu = b.instructions[-1]
    assert (alu.iter_out, alu.iter_in, alu.use_imm, alu.imm) == (1, 3, True, -5)


@pytest.mark.parametrize(
    ("call", "message"),
    [
        (lambda b: b.gemm(Kernel((Uop(dst_idx=0, src_idx=0),) * 1025)), "1025 micro-ops"),
        (lambda b: b.gemm(_one(loops=(Loop(2, 1),) * 3)), "3 loop levels"),
        (lambda b: b.gemm(_one(loops=(Loop(1 << 14, 1),))), "iter_in=16384 does not fit"),
        (lambda b: b.gemm(_one(loops=(Loop(2, 1 << 8),))), "dst_factor_in=256 does not fit"),
        (lambda b: b.gemm(_one(loops=(Loop(0, 1),))), "extent 0"),
        (lambda b: b.gemm(_one(dst=1 << 8)), "micro-op 0: field dst_idx=256"),
        (lambda b: b.gemm(_one(loops=(Loop(200, 2),))), "reaches ACC row 398"),
        (lambda b: b.gemm(_one(loops=(Loop(3, 1, 200),))), "reaches INP row 400"),
        (lambda b: b.gemm(_one(loops=(Loop(2),))), "step 1 reads ACC row 0 \\(dst\\)"),
        (
            lambda b: b.alu(_one(1, 0, (Loop(3, 1, 1),)), AluOp.ADD),
            "step 1 reads ACC row 1 \\(src\\)",
        ),
        (lambda b: b.alu(_one(loops=(Loop(2, 1, 0, 1),)), AluOp.ADD), "no weight operand"),
    ],
)
def test_bad_kernels(call, message):
    b = ProgramBuilder(TINY)
    with pytest.raises(BuilderError, match=message):
        call(b)
    assert b.instructions == ()


def test_reset_kernels_do_not_check_inputs_or_the_window():
    b = ProgramBuilder(TINY)
    b.gemm(Kernel((Uop(dst_idx=0, src_idx=255, wgt_idx=255),), (Loop(2, 1, 200, 200),)), reset=True)
    assert len(b.instructions) == 2


def _uop_loads(program):
    return [
        i.sram_base
        for i in program.instructions
        if isinstance(i, MemInsn) and i.memory_type is MemId.UOP and i.x_size
    ]


def test_identical_kernels_load_once_and_the_ring_evicts():
    """Kernels of 400 micro-ops in a 1024-row buffer: A at 0, B at 400, C wraps to 0 and
    evicts A; B is still resident; A again goes after C at 400, evicting B."""
    b = ProgramBuilder(TINY)
    acc = b.alloc("acc", MemId.ACC, 256, np.arange(1024, dtype="<i4"))
    b.load_2d(acc, sram=0, y_size=1, x_size=256)

    def kernel(shift: int) -> Kernel:
        return Kernel(tuple(Uop(dst_idx=(i * 7 + shift) % 256, src_idx=0) for i in range(400)))

    a, bb, c = kernel(0), kernel(1), kernel(2)
    for k in (a, a, bb, c, bb, a):
        b.alu(k, AluOp.ADD, imm=1)
    b.alu(Kernel((Uop(dst_idx=0, src_idx=0),), (Loop(256, 1, 1),)), AluOp.SHR, imm=2)
    out = b.alloc("out", MemId.OUT, 256)
    b.dep_push(C, S)
    b.dep_pop(C, S)
    b.store_2d(out, sram=0, y_size=1, x_size=256)
    program = b.finish()
    assert _uop_loads(program) == [0, 400, 0, 400, 800]
    assert len(program.uops) == 400 * 3 + 1  # each distinct kernel once in DRAM
    dram = _run(program)
    reference = bytearray(program.dram_extent)
    reference_run(program, reference)
    assert dram.tobytes() == bytes(reference)


def test_a_kernel_below_the_next_one_stays_resident():
    """A at 0, then B placed after it at 400: A's rows lie below B's, so A is still resident
    and running it again loads nothing."""
    b = ProgramBuilder(TINY)
    acc = b.alloc("acc", MemId.ACC, 256, np.arange(1024, dtype="<i4"))
    b.load_2d(acc, sram=0, y_size=1, x_size=256)
    a, bb = (
        Kernel(tuple(Uop(dst_idx=(i * 7 + shift) % 256, src_idx=0) for i in range(400)))
        for shift in (0, 1)
    )
    for k in (a, bb, a):
        b.alu(k, AluOp.ADD, imm=1)
    out = b.alloc("out", MemId.OUT, 256)
    b.dep_push(C, S)
    b.dep_pop(C, S)
    b.store_2d(out, sram=0, y_size=1, x_size=256)
    program = b.finish()
    assert _uop_loads(program) == [0, 400]
    reference = bytearray(program.dram_extent)
    reference_run(program, reference)
    assert _run(program).tobytes() == bytes(reference)


# ---------------------------------------------------------------------- tokens
def test_push_folds_into_the_last_instruction_of_its_stage():
    b = ProgramBuilder(TINY)
    x = b.alloc("x", MemId.INP, 1)
    b.load_2d(x, sram=0, y_size=1, x_size=1)
    b.dep_push(L, C)
    assert len(b.instructions) == 1
    assert _flags(b.instructions[0]) == {"push_next_dep"}
    b.dep_push(L, C)  # the flag is taken: a load no-op carries the second push
    assert len(b.instructions) == 2
    nop = b.instructions[1]
    assert (nop.opcode, nop.memory_type, nop.x_size) == (Opcode.LOAD, MemId.INP, 0)
    assert _flags(nop) == {"push_next_dep"}
    b.dep_push(C, S)  # the last instruction is a load: a compute no-op pushes
    nop = b.instructions[2]
    assert (stage_of(nop), nop.memory_type, _flags(nop)) == (C, MemId.UOP, {"push_next_dep"})
    b.dep_push(S, C)
    nop = b.instructions[3]
    assert (nop.opcode, _flags(nop)) == (Opcode.STORE, {"push_prev_dep"})


def test_pops_wait_for_the_next_instruction_of_their_stage():
    b = ProgramBuilder(TINY)
    x = b.alloc("x", MemId.INP, 1)
    b.dep_pop(L, C)
    b.dep_pop(S, C)
    b.load_2d(x, sram=0, y_size=1, x_size=1)  # a load: the compute pops stay pending
    assert _flags(b.instructions[0]) == set()
    b.alu(_one(), AluOp.ADD, imm=1)  # its micro-op load comes first and takes both pops
    assert _flags(b.instructions[1]) == {"pop_prev_dep", "pop_next_dep"}
    assert _flags(b.instructions[2]) == set()
    b.dep_pop(L, C)
    b.dep_pop(L, C)  # the same pop again: the first is committed on a no-op
    nop = b.instructions[3]
    assert (nop.memory_type, nop.x_size, _flags(nop)) == (MemId.UOP, 0, {"pop_prev_dep"})
    b.dep_push(C, L)  # a push first commits its stage's pending pops, then folds onto them
    assert _flags(b.instructions[4]) == {"pop_prev_dep", "push_prev_dep"}


def test_only_neighbours_exchange_tokens():
    with pytest.raises(BuilderError, match="from LOAD to STORE"):
        ProgramBuilder(TINY).dep_push(L, S)
    with pytest.raises(BuilderError, match="from STORE to LOAD"):
        ProgramBuilder(TINY).dep_pop(S, L)


# ---------------------------------------------------------------------- finish
def test_finish_orders_every_load_and_store_and_drains_every_token():
    b = ProgramBuilder(TINY)
    x = b.alloc("x", MemId.INP, 2)
    out = b.alloc("out", MemId.OUT, 1)
    for _ in range(3):  # three credits to load nobody uses
        b.dep_push(C, L)
    b.dep_push(S, C)  # one credit to compute nobody uses
    b.load_2d(x, sram=0, y_size=1, x_size=2)
    b.store_2d(out, sram=0, y_size=1, x_size=1)
    program = b.finish()
    assert isinstance(program.instructions[-1], FinishInsn)
    assert not _flags(program.instructions[-1])
    _run(program)  # the simulator checks the FINISH rules: every counter 0, all ordered
    with pytest.raises(BuilderError, match="finish\\(\\) was called"):
        b.load_2d(x, sram=0, y_size=1, x_size=1)


def test_finish_refuses_pops_without_pushes():
    b = ProgramBuilder(TINY)
    b.dep_pop(L, C)
    with pytest.raises(BuilderError, match="more pops than pushes \\(l2g 1\\)"):
        b.finish()


def test_an_empty_program_is_just_finish():
    program = ProgramBuilder(TINY).finish()
    assert program.instructions == (FinishInsn(),)
    _run(program)
