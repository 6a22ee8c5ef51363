"""The accelerator's on-chip state during a run, and the datapath's integer arithmetic.

Every buffer is a numpy array with one entry per SRAM row (SEMANTICS section 1). Accumulator and
output values are held as int64 already wrapped to their width; input and weight rows are held
in the dtype the GEMM multiplies in (see :func:`operand_dtype`). Micro-ops are held decoded.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from isa import AccelConfig, AluOp

__all__ = ["DeviceState", "alu_apply", "operand_dtype", "signed_dtype", "wrap"]

_INT64_BITS = 64
#: float32 and float64 represent every integer of magnitude up to 2**24 and 2**53 exactly.
_FLOAT32_EXACT_BITS, _FLOAT64_EXACT_BITS = 24, 53


def signed_dtype(width: int) -> np.dtype:
    """Little-endian signed integers of ``width`` bits (a multiple of 8), as DRAM holds them."""
    return np.dtype(f"<i{width // 8}")


def wrap(values: np.ndarray, width: int, out: np.ndarray | None = None) -> np.ndarray:
    """The low ``width`` bits of int64 ``values`` read as two's complement: ``wrap_w`` and
    ``sext_w`` of SEMANTICS, which are the same operation on int64. With ``out`` (an int64
    array of the same shape, ``values`` itself allowed), written there, without temporaries."""
    shift = _INT64_BITS - width
    if out is None:
        return (values << shift) >> shift if shift else values
    np.left_shift(values, shift, out=out)
    return np.right_shift(out, shift, out=out)


def operand_dtype(cfg: AccelConfig) -> np.dtype:
    """The dtype input and weight rows are held in: the narrowest that holds every value of
    their widths exactly, float32 (24-bit significand) or float64 (53) so that the GEMM's
    products go through float BLAS without a conversion (``simulator.exact`` decides per
    product where float32 products are exact), else int64."""
    bits = max(cfg.inp_width, cfg.wgt_width)
    if bits <= _FLOAT32_EXACT_BITS:
        return np.dtype(np.float32)
    return np.dtype(np.float64 if bits <= _FLOAT64_EXACT_BITS else np.int64)


def alu_apply(cfg: AccelConfig, op: AluOp, a: np.ndarray, x: np.ndarray | int) -> np.ndarray:
    """One ALU step lane by lane (SEMANTICS section 6): ``op(a, x)`` with ``a`` the
    accumulator values and ``x`` the operand (both int64, already ``acc_width`` wide; ``x`` may
    be a Python int, the immediate, for every lane). The result is ``acc_width`` wide too."""
    acc = cfg.acc_width
    if op is AluOp.MIN:
        return np.minimum(a, x)
    if op is AluOp.MAX:
        return np.maximum(a, x)
    if op is AluOp.ADD:
        return wrap(a + x, acc)
    if op is AluOp.MUL:
        return wrap(a * _low_bits(x, cfg.mul_arg_bits), acc)
    shift = _low_bits(x, cfg.shr_arg_bits)  # SHR: negative amounts shift left
    if isinstance(shift, int):  # one amount for every lane: one shift, its direction known
        if shift >= 0:
            return a >> shift
        return np.zeros_like(a) if -shift >= acc else wrap(a << -shift, acc)
    right = a >> np.maximum(shift, 0)
    left_amount = np.maximum(-shift, 0)
    left = wrap(a << np.minimum(left_amount, _INT64_BITS - 1), acc)
    left = np.where(left_amount >= acc, 0, left)
    return np.where(shift >= 0, right, left)


def _low_bits(x: np.ndarray | int, width: int) -> np.ndarray | int:
    """:func:`wrap` of the operand: an immediate stays a Python int."""
    if isinstance(x, int):
        x &= (1 << width) - 1
        return x - (1 << width) if x >> (width - 1) else x
    return wrap(np.asarray(x, dtype=np.int64), width)


@dataclass
class DeviceState:
    """SRAM contents: ``uop`` rows are (dst_idx, src_idx, wgt_idx); ``inp`` is
    (depth, batch, block_in), ``wgt`` (depth, block_out, block_in), ``acc`` and ``out``
    (depth, batch, block_out)."""

    uop: np.ndarray
    inp: np.ndarray
    wgt: np.ndarray
    acc: np.ndarray
    out: np.ndarray

    @classmethod
    def zeros(cls, cfg: AccelConfig) -> DeviceState:
        """The state when a device is opened: every buffer zero."""
        dot = operand_dtype(cfg)
        b, bi, bo = cfg.batch, cfg.block_in, cfg.block_out
        return cls(
            uop=np.zeros((cfg.uop_buff_depth, 3), dtype=np.int64),
            inp=np.zeros((cfg.inp_buff_depth, b, bi), dtype=dot),
            wgt=np.zeros((cfg.wgt_buff_depth, bo, bi), dtype=dot),
            acc=np.zeros((cfg.acc_buff_depth, b, bo), dtype=np.int64),
            out=np.zeros((cfg.out_buff_depth, b, bo), dtype=np.int64),
        )
