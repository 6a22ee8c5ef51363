"""GPU kernels to PTX: the LLVM backend's emitter, retargeted to ``nvptx64-nvidia-cuda``.

A lowered GPU function (after :data:`compiler.lower.GPU_PIPELINE`) becomes one kernel: each
buffer parameter is a global-memory pointer (``addrspace(1)``), a loop bound to a grid axis
reads its index from ``llvm.nvvm.read.ptx.sreg.{ctaid,tid}.{x,y,z}`` instead of looping (an axis
launched with extent 1 is the constant 0), a shared buffer is a module global in
``addrspace(3)``, a local (or other per-thread) buffer a stack slot that LLVM promotes to
registers, and a :class:`~compiler.passes.gpu.Barrier` calls ``llvm.nvvm.barrier0``
(``bar.sync 0``). ``exp`` and ``log``, which NVPTX has no instruction for, go through PTX's
base-2 approximations. The kernel carries the ``ptx_kernel`` calling convention and the
``nvvm.annotations`` kernel entry (which LLVM 22 folds into the calling convention). Everything
else (expressions, loads, stores, serial, unrolled and vectorized loops, guards) is the CPU
emitter's, inherited unchanged. The PTX text is what LLVM's NVPTX backend prints for the
target's ``sm_XX``; the CUDA driver JIT-compiles it for the GPU it runs on.
"""

from __future__ import annotations

import math
import re
from collections.abc import Sequence
from dataclasses import dataclass

import llvmlite.binding as llvm
import llvmlite.ir as ir

from compiler.codegen.llvm import _INDEX, _Emitter, _Intrinsics, _llvm_type, optimise
from compiler.codegen.target import initialise
from compiler.errors import CompileError
from compiler.loop_ir import Allocate, CallIntrinsic, For, ForKind, LoweredFunc, Scope, Stmt
from compiler.passes.gpu import Barrier, LaunchConfig, launch_config
from compiler.te import ThreadTag

__all__ = ["CudaTarget", "PtxModule", "codegen_nvptx"]

TRIPLE = "nvptx64-nvidia-cuda"
_GLOBAL, _SHARED = 1, 3  # NVPTX address spaces
_I32 = ir.IntType(32)
#: The register each grid tag reads (``llvm.nvvm.read.ptx.sreg.<name>``).
_SREG = {
    ThreadTag.BLOCK_X: "ctaid.x",
    ThreadTag.BLOCK_Y: "ctaid.y",
    ThreadTag.BLOCK_Z: "ctaid.z",
    ThreadTag.THREAD_X: "tid.x",
    ThreadTag.THREAD_Y: "tid.y",
    ThreadTag.THREAD_Z: "tid.z",
}
#: What NVPTX has no instruction for (LLVM aborts the process on them), computed through the
#: base-2 approximations PTX has: ``exp(x) = ex2(x * log2(e))``, ``log(x) = lg2(x) * ln(2)``.
_BASE2 = {
    "exp": ("llvm.nvvm.ex2.approx.f", math.log2(math.e), None),
    "log": ("llvm.nvvm.lg2.approx.f", None, math.log(2.0)),
}


@dataclass(frozen=True)
class CudaTarget:
    """An NVIDIA GPU architecture (``sm_80``: A100; ``sm_90``: H100) and its per-block limits:
    threads per block and *static* shared memory (48 KiB on every CUDA architecture)."""

    arch: str = "sm_80"
    max_threads_per_block: int = 1024
    max_shared_bytes: int = 48 * 1024

    def __post_init__(self) -> None:
        if not re.fullmatch(r"sm_\d{2,3}a?", self.arch) or int(self.arch[3:].rstrip("a")) < 80:
            raise CompileError(
                f"unsupported CUDA architecture {self.arch!r} (sm_80 or later, e.g. 'sm_80', "
                "'sm_90': the kernels use sm_80's NaN-propagating min/max)"
            )

    @classmethod
    def parse(cls, spec: str | CudaTarget) -> CudaTarget:
        """``"cuda"`` (sm_80) or ``"cuda -arch=sm_90"``."""
        if isinstance(spec, CudaTarget):
            return spec
        words = spec.split() if isinstance(spec, str) else []
        if not words or words[0] != "cuda":
            raise CompileError(f"unknown GPU target {spec!r} (expected 'cuda -arch=sm_XX')")
        options = {}
        for word in words[1:]:
            key, _, value = word.partition("=")
            if key != "-arch" or not value:
                raise CompileError(f"unknown target option {word!r} in {spec!r} (only -arch)")
            options["arch"] = value
        return cls(**options)

    def machine(self) -> llvm.TargetMachine:
        initialise()
        target = llvm.Target.from_triple(TRIPLE)
        return target.create_target_machine(cpu=self.arch, features="", opt=3)


@dataclass(frozen=True)
class PtxModule:
    """One kernel: its PTX text, optimised LLVM IR, lowered function and launch extents."""

    ptx: str
    ir_text: str
    func: LoweredFunc
    launch: LaunchConfig
    target: CudaTarget


class _KernelEmitter(_Emitter):
    """The CPU emitter with a kernel's signature, grid indices, shared memory and barriers."""

    def declare(self) -> ir.Function:
        pointer = ir.PointerType(addrspace=_GLOBAL)
        params = [pointer] * len(self.func.params) + [_INDEX] * len(self.stride_vars)
        function = ir.Function(self.module, ir.FunctionType(ir.VoidType(), params), self.func.name)
        function.calling_convention = "ptx_kernel"
        annotations = self.module.add_named_metadata("nvvm.annotations")
        kernel = ir.MetaDataString(self.module, "kernel")
        annotations.add(self.module.add_metadata([function, kernel, ir.Constant(_I32, 1)]))
        return function

    def stmt(self, s: Stmt) -> None:
        if isinstance(s, Barrier):
            self.b.call(self._declared("llvm.nvvm.barrier0", ir.VoidType()), [])
        elif isinstance(s, CallIntrinsic):
            raise CompileError("tensor intrinsics have no GPU implementation", op=s.intrin.name)
        else:
            super().stmt(s)

    def loop(self, s: For) -> None:
        if s.kind is not ForKind.THREAD_BINDING:
            super().loop(s)
            return
        if s.extent == 1:  # launched with extent 1: the index is 0
            self.scope.values[s.var] = ir.Constant(_INDEX, 0)
        else:
            register = _SREG[ThreadTag(s.thread)]
            index = self.b.call(self._declared(f"llvm.nvvm.read.ptx.sreg.{register}", _I32), [])
            self.scope.values[s.var] = self.b.zext(index, _INDEX)
        self.stmt(s.body)

    def allocate(self, s: Allocate) -> None:
        buffer = s.buffer
        if buffer.scope is not Scope.SHARED:  # per thread: registers once promoted
            self.scope.pointers[buffer] = self._entry_alloca(_llvm_type(buffer.dtype), buffer.size)
            self.stmt(s.body)
            return
        array = ir.ArrayType(_llvm_type(buffer.dtype), buffer.size)
        name = f"{buffer.name}.shared{len(self.module.globals)}"
        memory = ir.GlobalVariable(self.module, array, name, addrspace=_SHARED)
        memory.linkage = "internal"
        memory.initializer = ir.Constant(array, ir.Undefined)
        memory.align = 16
        memory.type = ir.PointerType(addrspace=_SHARED)  # opaque: indexed by element below
        self.scope.pointers[buffer] = memory
        self.stmt(s.body)

    def _declared(self, name: str, result: ir.Type, params: Sequence[ir.Type] = ()) -> ir.Function:
        existing = self.module.globals.get(name)
        if existing is not None:
            return existing
        return ir.Function(self.module, ir.FunctionType(result, list(params)), name)

    def _intrinsic(self, name: str, typ: ir.Type, arity: int) -> ir.Function:
        if name not in _BASE2:
            return super()._intrinsic(name, typ, arity)
        full = f"vtaforge.{name}.{typ}"
        existing = self.module.globals.get(full)
        if existing is not None:
            return existing
        helper = ir.Function(self.module, ir.FunctionType(typ, [typ]), full)
        helper.linkage = "internal"
        helper.attributes.add("alwaysinline")
        builder = ir.IRBuilder(helper.append_basic_block())
        (value,) = helper.args
        if isinstance(typ, ir.VectorType):  # lane by lane: the approximations are scalar
            result = ir.Constant(typ, ir.Undefined)
            scalar = self._intrinsic(name, typ.element, 1)
            for lane in range(typ.count):
                at = ir.Constant(_I32, lane)
                element = builder.call(scalar, [builder.extract_element(value, at)])
                result = builder.insert_element(result, element, at)
            builder.ret(result)
            return helper
        approximation, scale_in, scale_out = _BASE2[name]
        if scale_in is not None:
            value = builder.fmul(value, ir.Constant(typ, scale_in), flags=("fast",))
        value = builder.call(self._declared(approximation, typ, [typ]), [value])
        if scale_out is not None:
            value = builder.fmul(value, ir.Constant(typ, scale_out), flags=("fast",))
        builder.ret(value)
        return helper


def codegen_nvptx(func: LoweredFunc, target: CudaTarget | str = "cuda") -> PtxModule:
    """The PTX of the lowered GPU function ``func`` (checked by
    :func:`~compiler.passes.gpu.launch_config` against ``target``'s limits first)."""
    target = CudaTarget.parse(target)
    launch = launch_config(func, target.max_threads_per_block, target.max_shared_bytes)
    machine = target.machine()
    module = ir.Module(name=func.name)
    module.triple = TRIPLE
    module.data_layout = str(machine.target_data)
    _KernelEmitter(module, func, _Intrinsics())
    parsed = optimise(module, machine, func.name)
    try:
        ptx = machine.emit_assembly(parsed)
    except RuntimeError as error:
        raise CompileError(f"the NVPTX backend failed: {error}", op=func.name) from None
    return PtxModule(ptx, str(parsed), func, launch, target)
