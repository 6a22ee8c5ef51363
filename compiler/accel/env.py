"""The accelerator as a compilation target: VTA's ``vta.get_env()`` without globals.

``Env(cfg)`` derives everything a schedule for the accelerator needs from one
:class:`isa.AccelConfig`: the GEMM core's shape (``BATCH``, ``BLOCK_IN``, ``BLOCK_OUT``), the
element types, the SRAM scopes, the pragma names the lowering passes look for, the GEMM tensor
intrinsic and the ``target`` that :func:`compiler.build` compiles for.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cached_property

from compiler.errors import CompileError
from compiler.expr import DType
from compiler.loop_ir import Scope
from compiler.te import TensorIntrin, cast, compute, decl_tensor_intrin, placeholder, reduce_axis
from compiler.te import sum as te_sum
from isa import AccelConfig

__all__ = ["ALU", "DMA_COPY", "AccelTarget", "Env"]

#: The pragma that turns a copy stage into LOAD/STORE instructions.
DMA_COPY = "dma_copy"
#: The pragma that turns an elementwise stage in the accumulator scope into ALU instructions.
ALU = "alu"


@dataclass(frozen=True)
class AccelTarget:
    """Compile for the accelerator of configuration ``cfg`` (``compiler.build``'s target)."""

    cfg: AccelConfig

    @property
    def kind(self) -> str:
        return "accel"

    def __str__(self) -> str:
        return f"accel -config={self.cfg.fingerprint}"


def _int_dtype(bits: int, what: str) -> str:
    name = f"int{bits}"
    try:
        DType.of(name)
    except CompileError:
        raise CompileError(f"{what} of {bits} bits has no tensor dtype (int8/16/32)") from None
    return name


@dataclass(frozen=True)
class Env:
    """Everything a schedule for the accelerator of ``cfg`` uses (VTA's ``Environment``)."""

    cfg: AccelConfig

    def __post_init__(self) -> None:
        if not isinstance(self.cfg, AccelConfig):
            raise CompileError(f"Env needs an AccelConfig, not {type(self.cfg).__name__}")

    # ------------------------------------------------------------------ the GEMM core
    @property
    def BATCH(self) -> int:
        return self.cfg.batch

    @property
    def BLOCK_IN(self) -> int:
        return self.cfg.block_in

    @property
    def BLOCK_OUT(self) -> int:
        return self.cfg.block_out

    @property
    def INP_WIDTH(self) -> int:
        return self.cfg.inp_width

    @property
    def WGT_WIDTH(self) -> int:
        return self.cfg.wgt_width

    @property
    def ACC_WIDTH(self) -> int:
        return self.cfg.acc_width

    @property
    def OUT_WIDTH(self) -> int:
        return self.cfg.out_width

    # ------------------------------------------------------------------ element types
    @property
    def inp_dtype(self) -> str:
        return _int_dtype(self.cfg.inp_width, "the input width")

    @property
    def wgt_dtype(self) -> str:
        return _int_dtype(self.cfg.wgt_width, "the weight width")

    @property
    def acc_dtype(self) -> str:
        return _int_dtype(self.cfg.acc_width, "the accumulator width")

    @property
    def out_dtype(self) -> str:
        return _int_dtype(self.cfg.out_width, "the output width")

    # ------------------------------------------------------------------ scopes and pragmas
    inp_scope = Scope.ACCEL_INP.value
    wgt_scope = Scope.ACCEL_WGT.value
    acc_scope = Scope.ACCEL_ACC.value
    dma_copy = DMA_COPY
    alu = ALU

    @cached_property
    def gemm(self) -> TensorIntrin:
        """The GEMM core as a tensor intrinsic: ``out[b, o] += sum_i inp[b, i] * wgt[o, i]``
        on one accumulator row (``BATCH x BLOCK_OUT``), accumulating in ``acc_dtype``."""
        inp = placeholder((self.BATCH, self.BLOCK_IN), self.inp_dtype, self.inp_scope)
        wgt = placeholder((self.BLOCK_OUT, self.BLOCK_IN), self.wgt_dtype, self.wgt_scope)
        k = reduce_axis(self.BLOCK_IN, name="k")
        acc = self.acc_dtype
        out = compute(
            (self.BATCH, self.BLOCK_OUT),
            lambda i, j: te_sum(cast(acc, inp[i, k]) * cast(acc, wgt[j, k]), axis=k),
            name="gemm",
        )
        return decl_tensor_intrin(out, "gemm")

    @property
    def target(self) -> AccelTarget:
        return AccelTarget(self.cfg)
