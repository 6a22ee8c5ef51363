"""Independent numpy references of the tunable templates, for checking measured candidates.

``REFERENCES[template](*inputs, **params)`` computes the template's output from its input arrays
and operator parameters (``env`` excluded) with :mod:`runtime.opset`'s kernels, never with our
compiler; a candidate whose output differs is recorded as a wrong answer.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from compiler.accel.templates import CONV2D as ACCEL_CONV2D
from compiler.templates import CONV2D_NCHW, CONV2D_NCHWC, MATMUL
from compiler.templates.knobs import Template
from runtime.opset import pack, unpack
from runtime.opset.linear import Conv
from runtime.opset.windows import conv_windows

__all__ = ["REFERENCES"]


def _matmul(a: np.ndarray, b: np.ndarray, transpose_b: bool = False, out_dtype=None):
    product = a.astype(np.float64) @ (b.T if transpose_b else b).astype(np.float64)
    return product.astype(out_dtype or a.dtype)


def _nchw(data: np.ndarray, kernel: np.ndarray, stride: int = 1, padding: int = 0):
    pads = (padding,) * 4
    return Conv.kernel(
        data, kernel, strides=(stride, stride), pads=pads, dilations=(1, 1), groups=1
    )


def _nchwc(data: np.ndarray, kernel: np.ndarray, stride: int = 1, padding: int = 0):
    n, c_outer, h, w, ic = data.shape
    o_outer, _, kh, kw, _, oc = kernel.shape
    flat = data.transpose(0, 1, 4, 2, 3).reshape(n, c_outer * ic, h, w)
    oihw = kernel.transpose(0, 5, 1, 4, 2, 3).reshape(o_outer * oc, c_outer * ic, kh, kw)
    out = _nchw(flat, oihw, stride, padding)
    oh, ow = out.shape[2:]
    return np.ascontiguousarray(out.reshape(n, o_outer, oc, oh, ow).transpose(0, 1, 3, 4, 2))


def _accel_conv(
    data: np.ndarray,
    kernel: np.ndarray,
    bias: np.ndarray | None = None,
    *,
    stride: int = 1,
    padding: int = 0,
    shift: int = 0,
    lo: int = 0,
    hi: int = 127,
    bias_first: bool = False,
) -> np.ndarray:
    batch, block = data.shape[4], data.shape[5]
    channels = data.shape[1] * block
    x = unpack(data, batch=batch, block=block, channels=channels)
    co, ci, kh, kw, bo, bi = kernel.shape
    w = kernel.transpose(0, 4, 1, 5, 2, 3).reshape(co * bo, ci * bi, kh, kw)
    windows = conv_windows(x, (kh, kw), (stride, stride), (padding,) * 4, (1, 1), 0)
    n, _, oh, ow = windows.shape[:4]
    cols = windows.transpose(0, 2, 3, 1, 4, 5).reshape(n * oh * ow, -1).astype(np.float64)
    # exact: |products| < 2**14 and fewer than 2**39 terms fit float64's 53 bits
    acc = (cols @ w.reshape(co * bo, -1).T.astype(np.float64)).astype(np.int64)
    acc = acc.reshape(n, oh, ow, co * bo).transpose(0, 3, 1, 2)
    packed = pack(acc, batch=batch, block=bo, channels=co * bo).astype(np.int32)
    if bias is not None and bias_first:
        packed = packed + bias
    packed = packed >> np.int32(shift)
    if bias is not None and not bias_first:
        packed = packed + bias
    return np.clip(packed, lo, hi).astype(np.int8)


#: The reference of each template that has one.
REFERENCES: dict[Template, Callable[..., np.ndarray]] = {
    MATMUL: _matmul,
    CONV2D_NCHW: _nchw,
    CONV2D_NCHWC: _nchwc,
    ACCEL_CONV2D: _accel_conv,
}
