"""The hardware/software contract: configuration, opcodes, field tables, encoding, programs.

``isa`` imports nothing else of vtaforge. Everything above it (simulators, hardware, compiler,
runtime) derives widths and layouts from an :class:`AccelConfig` through this package.
"""

from isa.assembly import assemble, disassemble, format_insn, format_uop
from isa.builder import DramBuffer, Kernel, Loop, ProgramBuilder
from isa.config import (
    ACC_RAW_WINDOW,
    INSN_WIDTH,
    MUL_ARG_BITS,
    TOKEN_COUNTER_BITS,
    UOP_WIDTH,
    AccelConfig,
)
from isa.encoding import (
    INSN_BYTES,
    UOP_BYTES,
    decode,
    decode_uop,
    encode,
    encode_uop,
    insn_bytes,
    uop_bytes,
)
from isa.errors import (
    AssemblyError,
    BuilderError,
    ConfigError,
    ConfigMismatchError,
    EncodingError,
    ProgramError,
    ProgramFormatError,
    VtaforgeError,
)
from isa.fields import Field, Format, InstructionSet, instruction_set
from isa.instructions import AluInsn, FinishInsn, GemmInsn, Instruction, MemInsn, Uop, stage_of
from isa.opcodes import AluOp, MemId, Opcode, Stage
from isa.program import DramSegment, Program, check_config
from isa.steps import (
    Operand,
    WindowViolation,
    max_index,
    operand_buffers,
    step_indices,
    window_violation,
)
from isa.tokens import Token, illegal_flags, popped_tokens, pushed_tokens, token_between

__all__ = [
    "ACC_RAW_WINDOW",
    "INSN_BYTES",
    "INSN_WIDTH",
    "MUL_ARG_BITS",
    "TOKEN_COUNTER_BITS",
    "UOP_BYTES",
    "UOP_WIDTH",
    "AccelConfig",
    "AluInsn",
    "AluOp",
    "AssemblyError",
    "BuilderError",
    "ConfigError",
    "ConfigMismatchError",
    "DramBuffer",
    "DramSegment",
    "EncodingError",
    "Field",
    "FinishInsn",
    "Format",
    "GemmInsn",
    "Instruction",
    "InstructionSet",
    "Kernel",
    "Loop",
    "MemId",
    "MemInsn",
    "Opcode",
    "Operand",
    "Program",
    "ProgramBuilder",
    "ProgramError",
    "ProgramFormatError",
    "Stage",
    "Token",
    "Uop",
    "VtaforgeError",
    "WindowViolation",
    "assemble",
    "check_config",
    "decode",
    "decode_uop",
    "disassemble",
    "encode",
    "encode_uop",
    "format_insn",
    "format_uop",
    "illegal_flags",
    "insn_bytes",
    "instruction_set",
    "max_index",
    "operand_buffers",
    "popped_tokens",
    "pushed_tokens",
    "stage_of",
    "step_indices",
    "token_between",
    "uop_bytes",
    "window_violation",
]
