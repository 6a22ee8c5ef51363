"""The accelerator's lowering passes: each a pure function from a lowered function to a lowered
function, after the loop IR's own passes (:mod:`compiler.passes`) and before emission.

:func:`compiler.accel.lower.accel_pipeline` lists the pipeline's passes in the order they run:
``inject_dma`` (:mod:`~compiler.accel.passes.dma`), ``share_acc_storage`` and ``lower_alu``
(:mod:`~compiler.accel.passes.alu`), ``tensorize_gemm`` (:mod:`~compiler.accel.passes.gemm`),
``inject_virtual_thread`` (:mod:`~compiler.accel.passes.vthread`) and ``fold_uop_loops``
(:mod:`~compiler.accel.passes.uops`). ``insert_tokens`` (:mod:`~compiler.accel.passes.tokens`)
runs later, on the instruction stream the emitter (:mod:`compiler.accel.emit`) derives.
"""

from compiler.accel.passes.alu import lower_alu, share_acc_storage
from compiler.accel.passes.dma import inject_dma
from compiler.accel.passes.gemm import tensorize_gemm
from compiler.accel.passes.tokens import insert_tokens
from compiler.accel.passes.uops import fold_uop_loops
from compiler.accel.passes.vthread import inject_virtual_thread

__all__ = [
    "fold_uop_loops",
    "inject_dma",
    "inject_virtual_thread",
    "insert_tokens",
    "lower_alu",
    "share_acc_storage",
    "tensorize_gemm",
]
