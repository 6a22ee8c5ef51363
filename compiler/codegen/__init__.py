"""Code generators: loop IR to machine code (LLVM for CPUs)."""

from compiler.codegen.llvm import LLVMModule, Target, codegen
from compiler.codegen.runtime import CompiledFunction

__all__ = ["CompiledFunction", "LLVMModule", "Target", "codegen"]
