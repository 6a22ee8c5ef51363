"""Enumerations of the ISA: instruction opcodes, memory (buffer) ids, ALU opcodes and the
pipeline stage that executes each instruction (vta-facts 1.2, 1.4, 1.5, 1.7)."""

from __future__ import annotations

from enum import IntEnum

__all__ = ["AluOp", "MemId", "Opcode", "Stage"]


class Opcode(IntEnum):
    """The 3-bit instruction opcode in bits [2:0] of every instruction."""

    LOAD = 0
    STORE = 1
    GEMM = 2
    FINISH = 3
    ALU = 4


class MemId(IntEnum):
    """The ``memory_type`` field of LOAD and STORE: which on-chip buffer is addressed."""

    UOP = 0
    WGT = 1
    INP = 2
    ACC = 3
    OUT = 4
    ACC_8BIT = 5


class AluOp(IntEnum):
    """The tensor ALU's ``alu_opcode``. SHR with a negative operand shifts left."""

    MIN = 0
    MAX = 1
    ADD = 2
    SHR = 3
    MUL = 4


class Stage(IntEnum):
    """The decoupled module that executes an instruction, in pipeline order.

    ``prev`` dependency flags talk to the stage with the next lower value, ``next`` flags to the
    next higher one; LOAD has no previous and STORE no next neighbour.
    """

    LOAD = 1
    COMPUTE = 2
    STORE = 3
