"""Code generators: loop IR to machine code (LLVM for CPUs, NVPTX for CUDA GPUs)."""

from compiler.codegen.gpu_function import GpuFunction
from compiler.codegen.llvm import LLVMModule, codegen
from compiler.codegen.nvptx import CudaTarget, PtxModule, codegen_nvptx
from compiler.codegen.runtime import CompiledFunction
from compiler.codegen.target import Target

__all__ = [
    "CompiledFunction",
    "CudaTarget",
    "GpuFunction",
    "LLVMModule",
    "PtxModule",
    "Target",
    "codegen",
    "codegen_nvptx",
]
