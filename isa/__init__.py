"""The hardware/software contract: configuration, opcodes, field tables, encoding, programs.

``isa`` imports nothing else of vtaforge. Everything above it (simulators, hardware, compiler,
runtime) derives widths and layouts from an :class:`AccelConfig` through this package.
"""

from isa.assembly import assemble, disassemble, format_insn, format_uop
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
    "ConfigError",
    "ConfigMismatchError",
    "DramSegment",
    "EncodingError",
    "Field",
    "FinishInsn",
    "Format",
    "GemmInsn",
    "Instruction",
    "InstructionSet",
    "MemId",
    "MemInsn",
    "Opcode",
    "Program",
    "ProgramError",
    "ProgramFormatError",
    "Stage",
    "Uop",
    "VtaforgeError",
    "assemble",
    "check_config",
    "decode",
    "decode_uop",
    "disassemble",
    "encode",
    "encode_uop",
    "format_insn",
    "format_uop",
    "insn_bytes",
    "instruction_set",
    "stage_of",
    "uop_bytes",
]
