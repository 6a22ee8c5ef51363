"""The accelerator's integer arithmetic, shared by the quantized operators' kernels.

Operands are int8, products accumulate in int32 (wrapping as the accumulator does), ``>>`` is an
arithmetic shift (it rounds toward minus infinity, as the ALU's SHR does; adding ``2**(shift-1)``
first, folded into a bias where there is one, makes it round to nearest), clips saturate and
the final cast keeps the low 8 bits, as a STORE of an accumulator row to the output buffer does.

Requantisation has two forms. VTA's, for power-of-two scales: ``clip((acc + bias) >> shift)``.
The fixed-point one, for any scale per output channel (per-channel weight scales): the
accumulator shifted right by ``shift`` (0 unless its product with the multiplier could leave
32 bits), times an int8 ``multiplier`` per channel (the ALU's MUL reads 8 bits), plus the
``bias`` (at the product's scale, with the rounding constant of the last shift in it), shifted
right by a per-channel amount ``shifts`` (the ALU's SHR of an accumulator row):
``clip((((acc >> shift) * multiplier + bias) >> shifts)``, every step wrapping at 32 bits.
"""

from __future__ import annotations

import numpy as np

from simulator.exact import exact_matmul

__all__ = ["MAX_SHIFT", "half", "product", "requantize", "wrap32"]

#: The largest right shift of a 32-bit accumulator that requantisation uses.
MAX_SHIFT = 31


def product(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """``a @ b`` of integer matrices, exactly, as int64 (through float BLAS where exact)."""
    return exact_matmul(a, b, np.iinfo(a.dtype).bits, np.iinfo(b.dtype).bits)


def wrap32(values: np.ndarray) -> np.ndarray:
    """int64 values reduced to int32 with two's-complement wrap-around."""
    return values.astype(np.int64).astype(np.int32)


def requantize(
    acc: np.ndarray,
    bias: np.ndarray | None,
    shift: int,
    lo: int,
    hi: int,
    multiplier: np.ndarray | None = None,
    shifts: np.ndarray | None = None,
) -> np.ndarray:
    """``clip((acc + bias) >> shift, lo, hi)`` as int8, the sums wrapping at 32 bits; with a
    ``multiplier`` and ``shifts`` (and a ``bias``, each broadcast against ``acc`` as the bias
    is), the fixed-point form ``clip((((acc >> shift) * multiplier + bias) >> shifts, lo, hi)``
    (module docstring)."""
    if multiplier is None:
        if bias is not None:
            acc = wrap32(acc) + bias.astype(np.int64)
        return np.clip(wrap32(acc) >> np.int32(shift), lo, hi).astype(np.int8)
    scaled = wrap32(acc).astype(np.int64) >> shift
    scaled = wrap32(scaled * multiplier.astype(np.int8).astype(np.int64)).astype(np.int64)
    scaled = wrap32(scaled + bias.astype(np.int64)).astype(np.int64)
    return np.clip(scaled >> shifts.astype(np.int64), lo, hi).astype(np.int8)


def half(shift: int) -> int:
    """What rounds a shift right by ``shift`` to nearest (ties up)."""
    return 1 << (shift - 1) if shift else 0
