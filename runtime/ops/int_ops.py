"""Integer numpy kernels of the quantized operators and the layout changes: the accelerator's
arithmetic, exactly.

Operands are int8, products accumulate in int32 (wrapping as the accumulator does), ``>>`` is an
arithmetic shift (it rounds toward minus infinity, as the ALU's SHR does; adding ``2**(shift-1)``
first, folded into a bias where there is one, makes it round to nearest), clips saturate and
the final cast keeps the low 8 bits, as a STORE of an accumulator row to the output buffer does.
These are the semantics of the accelerator templates in ``compiler.accel.ops``; a quantized
graph run with them is the bit-exact oracle of every accelerator run.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from runtime.ops.windows import conv_windows
from simulator.exact import exact_matmul

__all__ = ["INT_KERNELS", "pack", "unpack"]


def _product(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """``a @ b`` of integer matrices, exactly, as int64 (through float BLAS where exact)."""
    return exact_matmul(a, b, np.iinfo(a.dtype).bits, np.iinfo(b.dtype).bits)


def _wrap32(values: np.ndarray) -> np.ndarray:
    """int64 values reduced to int32 with two's-complement wrap-around."""
    return values.astype(np.int64).astype(np.int32)


def _requantize(acc: np.ndarray, bias: np.ndarray | None, shift: int, lo: int, hi: int):
    """``clip((acc + bias) >> shift, lo, hi)`` as int8, the sums wrapping at 32 bits."""
    if bias is not None:
        acc = _wrap32(acc) + bias.astype(np.int64)
    return np.clip(_wrap32(acc) >> np.int32(shift), lo, hi).astype(np.int8)


def _half(shift: int) -> int:
    """What rounds a shift right by ``shift`` to nearest (ties up)."""
    return 1 << (shift - 1) if shift else 0


def qconv(
    x: np.ndarray,
    w: np.ndarray,
    bias: np.ndarray | None = None,
    *,
    strides: tuple[int, int],
    pads: tuple[int, int, int, int],
    dilations: tuple[int, int],
    groups: int,
    shift: int,
    lo: int = -128,
    hi: int = 127,
) -> np.ndarray:
    """``clip((x * w + bias) >> shift, lo, hi)`` as int8 (NCHW, OIHW, an int32 bias per channel
    at the accumulator's scale)."""
    n = x.shape[0]
    o, cg, kh, kw = w.shape
    windows = conv_windows(x, (kh, kw), strides, pads, dilations, 0)
    oh, ow = windows.shape[2:4]
    og = o // groups
    out = np.empty((n, o, oh, ow), np.int64)
    for g in range(groups):
        # (N, OH, OW, C*KH*KW) @ (C*KH*KW, O): an exact integer product through float BLAS
        part = windows[:, g * cg : (g + 1) * cg].transpose(0, 2, 3, 1, 4, 5)
        cols = part.reshape(n * oh * ow, cg * kh * kw)
        weights = w[g * og : (g + 1) * og].reshape(og, cg * kh * kw)
        product = _product(cols, weights.T)
        out[:, g * og : (g + 1) * og] = product.reshape(n, oh, ow, og).transpose(0, 3, 1, 2)
    b = None if bias is None else bias.reshape(1, -1, 1, 1)
    return _requantize(out, b, shift, lo, hi)


def qdense(
    x: np.ndarray,
    w: np.ndarray,
    bias: np.ndarray | None = None,
    *,
    shift: int,
    lo: int = -128,
    hi: int = 127,
) -> np.ndarray:
    """``clip((x @ w.T + bias) >> shift, lo, hi)`` as int8 (x ``[N, K]``, w ``[M, K]``)."""
    return _requantize(_product(x, w.T), bias, shift, lo, hi)


def qadd(
    a: np.ndarray,
    b: np.ndarray,
    *,
    a_shift: int,
    b_shift: int,
    shift: int,
    lo: int = -128,
    hi: int = 127,
) -> np.ndarray:
    """``clip(((a << a_shift) + (b << b_shift) + 2**(shift-1)) >> shift, lo, hi)`` as int8:
    the shift rounds to nearest."""
    total = (a.astype(np.int64) << a_shift) + (b.astype(np.int64) << b_shift) + _half(shift)
    return _requantize(total, None, shift, lo, hi)


def qmax_pool(
    x: np.ndarray,
    *,
    kernel: tuple[int, int],
    strides: tuple[int, int],
    pads: tuple[int, int, int, int],
    ceil_mode: bool = False,
    count_include_pad: bool = False,
) -> np.ndarray:
    """Max pooling of int8 values; padding is -128 (the smallest int8, as -inf is for floats)."""
    del count_include_pad  # an average's option, carried by the shared record
    windows = conv_windows(x, kernel, strides, pads, (1, 1), -128, ceil_mode=ceil_mode)
    return windows.max(axis=(4, 5)).astype(np.int8)


def qglobal_avg_pool(x: np.ndarray, *, multiplier: int, shift: int) -> np.ndarray:
    """``(sum * multiplier + 2**(shift-1)) >> shift`` per channel (rounding to nearest), its
    low 8 bits as int8."""
    total = x.astype(np.int64).sum(axis=(2, 3), keepdims=True)
    scaled = _wrap32(_wrap32(total) * np.int64(multiplier)) + _half(shift)
    return (_wrap32(scaled) >> np.int32(shift)).astype(np.int8)


def pack(x: np.ndarray, *, batch: int, block: int, channels: int) -> np.ndarray:
    """NCHW (or NC) -> ``(N/batch, C/block, H, W, batch, block)``, channels padded with zeros."""
    del channels  # the input's own
    n, c = x.shape[:2]
    blocks = -(-c // block)
    padded = np.zeros((n, blocks * block, *x.shape[2:]), x.dtype)
    padded[:, :c] = x
    spatial = x.shape[2:]
    shaped = padded.reshape(n // batch, batch, blocks, block, *spatial)
    order = (0, 2, *range(4, 4 + len(spatial)), 1, 3)
    return np.ascontiguousarray(shaped.transpose(order))


def unpack(x: np.ndarray, *, batch: int, block: int, channels: int) -> np.ndarray:
    """The inverse of :func:`pack`: the first ``channels`` channels, NCHW (or NC)."""
    rank = x.ndim
    spatial = x.shape[2:-2]
    order = (0, rank - 2, 1, rank - 1, *range(2, rank - 2))
    merged = x.transpose(order).reshape(x.shape[0] * batch, x.shape[1] * block, *spatial)
    return np.ascontiguousarray(merged[:, :channels])


INT_KERNELS: dict[str, Callable[..., np.ndarray]] = {
    "QConv": qconv,
    "QDense": qdense,
    "QAdd": qadd,
    "QMaxPool": qmax_pool,
    "QGlobalAvgPool": qglobal_avg_pool,
    "Pack": pack,
    "Unpack": unpack,
}
