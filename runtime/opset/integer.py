"""The accelerator's integer arithmetic, shared by the quantized operators' kernels.

Operands are int8, products accumulate in int32 (wrapping as the accumulator does), ``>>`` is an
arithmetic shift (it rounds toward minus infinity, as the ALU's SHR does; adding ``2**(shift-1)``
first, folded into a bias where there is one, makes it round to nearest), clips saturate and
the final cast keeps the low 8 bits, as a STORE of an accumulator row to the output buffer does.
"""

from __future__ import annotations

import numpy as np

from simulator.exact import exact_matmul

__all__ = ["half", "product", "requantize", "wrap32"]


def product(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """``a @ b`` of integer matrices, exactly, as int64 (through float BLAS where exact)."""
    return exact_matmul(a, b, np.iinfo(a.dtype).bits, np.iinfo(b.dtype).bits)


def wrap32(values: np.ndarray) -> np.ndarray:
    """int64 values reduced to int32 with two's-complement wrap-around."""
    return values.astype(np.int64).astype(np.int32)


def requantize(
    acc: np.ndarray, bias: np.ndarray | None, shift: int, lo: int, hi: int
) -> np.ndarray:
    """``clip((acc + bias) >> shift, lo, hi)`` as int8, the sums wrapping at 32 bits."""
    if bias is not None:
        acc = wrap32(acc) + bias.astype(np.int64)
    return np.clip(wrap32(acc) >> np.int32(shift), lo, hi).astype(np.int8)


def half(shift: int) -> int:
    """What rounds a shift right by ``shift`` to nearest (ties up)."""
    return 1 << (shift - 1) if shift else 0
