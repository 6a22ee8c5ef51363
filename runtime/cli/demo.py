"""``vtaforge demo`` (what ``make demo`` runs): a small GEMM program listed, encoded, round-tripped
through assembly and binary, and checked on the functional simulator against numpy."""

from __future__ import annotations

import argparse

import numpy as np

from isa import AccelConfig, Program, assemble, disassemble, encode_uop
from runtime.cli.command import Command
from runtime.cli.common import add_config_option
from simulator import FunctionalSimulator

__all__ = ["DEMO"]


def _configure(parser: argparse.ArgumentParser) -> None:
    add_config_option(parser)


def _run(args: argparse.Namespace) -> int:
    from runtime.demo_gemm import demo_expected_output, demo_gemm_program

    cfg = AccelConfig.resolve(args.config)
    program = demo_gemm_program(cfg)
    print(f"Demo: a 4x4-block GEMM with a >>8, relu, clip epilogue on {cfg.fingerprint}")
    print(
        f"({cfg.macs_per_cycle} MACs/cycle, peak {cfg.peak_gops:g} GOPS at {cfg.clock_mhz:g} MHz)\n"
    )
    print("Disassembly (each instruction ends with its index and 128-bit word):")
    print(disassemble(program, listing=True), end="")
    print("\nMicro-op words:")
    for index, uop in enumerate(program.uops):
        print(f"  [{index}] {encode_uop(uop, cfg):#010x}")
    print(
        f"\nInstruction stream in DRAM ({len(program.instruction_bytes())} bytes, little-endian):"
    )
    stream = program.instruction_bytes()
    for start in range(0, len(stream), 16):
        print(f"  {start:#06x}: {stream[start : start + 16].hex(' ')}")
    same_text = assemble(disassemble(program)) == program
    same_binary = Program.from_bytes(program.to_bytes()) == program
    print(
        f"\nround trips: assembly {'ok' if same_text else 'FAILED'}, "
        f"binary {'ok' if same_binary else 'FAILED'}"
    )
    address, expected = demo_expected_output(program)
    dram = np.zeros(program.dram_extent, dtype=np.uint8)
    counters = FunctionalSimulator(cfg).run(program, dram).counters
    matches = dram[address : address + len(expected)].tobytes() == expected
    print(
        f"functional simulator: output {'matches' if matches else 'DIFFERS FROM'} numpy "
        f"({counters.gemm_counter} GEMM and {counters.alu_counter} ALU steps, "
        f"{counters.out_store_nbytes} bytes stored)"
    )
    print(
        "(saved with Program.save, it runs as `vtaforge sim FILE.bin --output outputs=OUT.npy`; "
        "examples/ holds it as assembly)"
    )
    return 0 if same_text and same_binary and matches else 1


DEMO = Command("demo", "run the demo (what `make demo` runs)", _configure, _run)
