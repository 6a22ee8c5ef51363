"""How fast the ISA layer turns instructions into words and back.

A compiled ResNet-18 is on the order of 10^5 instructions, so encoding, decoding, assembling and
saving must not dominate compile time. The peer is a hand-written shift-and-or encoder for the
GEMM format with VTA's default bit positions hard-coded (what a C runtime does): the floor our
table-driven encoder is measured against.
"""

from __future__ import annotations

import random

from _harness import best_of, report

from isa import AccelConfig, GemmInsn, Program, assemble, decode, disassemble, encode
from runtime.demo_gemm import demo_gemm_program

N = 2000


def _hand_encode_gemm(i: GemmInsn) -> int:
    """VTA's default GEMM layout written out by hand (vta-facts 1.3)."""
    return (
        2
        | i.pop_prev_dep << 3
        | i.pop_next_dep << 4
        | i.push_prev_dep << 5
        | i.push_next_dep << 6
        | i.reset_reg << 7
        | i.uop_bgn << 8
        | i.uop_end << 21
        | i.iter_out << 35
        | i.iter_in << 49
        | i.dst_factor_out << 64
        | i.dst_factor_in << 75
        | i.src_factor_out << 86
        | i.src_factor_in << 97
        | i.wgt_factor_out << 108
        | i.wgt_factor_in << 118
    )


def main() -> None:
    cfg = AccelConfig()
    rng = random.Random(0)
    gemms = [
        GemmInsn(
            uop_bgn=rng.randrange(4096),
            uop_end=rng.randrange(4096, 8192),
            iter_out=rng.randrange(1, 64),
            iter_in=rng.randrange(1, 64),
            dst_factor_out=rng.randrange(64),
            src_factor_out=rng.randrange(64),
            wgt_factor_in=rng.randrange(64),
            pop_prev_dep=rng.random() < 0.5,
        )
        for _ in range(N)
    ]
    assert all(encode(g, cfg) == _hand_encode_gemm(g) for g in gemms)
    words = [encode(g, cfg) for g in gemms]
    demo = demo_gemm_program(cfg)
    program = Program(cfg, list(demo.instructions) * (N // len(demo.instructions)), demo.uops)
    text = disassemble(program)
    blob = program.to_bytes()
    n_prog = len(program.instructions)

    hand = best_of(lambda: [_hand_encode_gemm(g) for g in gemms]) / N
    rows = []
    for what, seconds, count in [
        ("encode (GEMM)", best_of(lambda: [encode(g, cfg) for g in gemms]), N),
        ("decode (GEMM)", best_of(lambda: [decode(w, cfg) for w in words]), N),
        ("disassemble", best_of(lambda: disassemble(program)), n_prog),
        ("assemble", best_of(lambda: assemble(text)), n_prog),
        ("save (to_bytes)", best_of(program.to_bytes), n_prog),
        ("load (from_bytes)", best_of(lambda: Program.from_bytes(blob)), n_prog),
    ]:
        per = seconds / count
        rows.append([what, 1.0 / per, per / hand])
    rows.append(["peer: hand-coded encode", 1.0 / hand, 1.0])
    report("isa_codec", ["operation", "instructions/s", "x hand-coded encode time"], rows)


if __name__ == "__main__":
    main()
