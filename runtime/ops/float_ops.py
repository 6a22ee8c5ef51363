"""Float32 numpy kernels of the float operators, with ONNX's semantics.

:data:`FLOAT_KERNELS` maps each float operator's name (the compiler's ``Op`` values, spelled
out here because ``runtime`` never imports ``compiler``) to its kernel. A kernel takes the
operator's input arrays positionally (optional trailing inputs may be left out) and the fields
of its attribute record as keyword arguments, and returns one array of the shape and dtype that
the compiler's type inference gives the node: float32, int8 for ``QuantizeLinear``, the input's
dtype for the operators that only move data (Flatten, Reshape, Transpose, Concat, Pad,
Identity). Identity, Reshape and Flatten may return their input or a view of it (callers must
not write to a kernel's result). Sequences in attributes may be tuples or lists (a saved model's
JSON gives lists). Layouts are ONNX's: NCHW activations, OIHW weights; spatial ``pads`` of
convolutions and pools are (top, left, bottom, right).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import numpy as np

from runtime.ops.windows import conv_windows

__all__ = ["FLOAT_KERNELS"]

_F32 = np.float32


def _f32(array: np.ndarray) -> np.ndarray:
    return np.asarray(array, dtype=_F32)


# ----------------------------------------------------------------------------- linear algebra
def conv(
    x: np.ndarray,
    w: np.ndarray,
    b: np.ndarray | None = None,
    *,
    strides: Sequence[int],
    pads: Sequence[int],
    dilations: Sequence[int],
    groups: int,
) -> np.ndarray:
    """2-D grouped convolution (depthwise when ``groups`` is the input channel count) by
    im2col: one batched matrix product per group."""
    n = x.shape[0]
    m, cg, kh, kw = w.shape
    windows = conv_windows(_f32(x), (kh, kw), strides, pads, dilations, 0.0)
    oh, ow = windows.shape[2:4]
    # (N, C, OH, OW, KH, KW) -> (N, G, C/G * KH*KW, OH*OW), matching OIHW's (O, C/G, KH, KW)
    cols = windows.transpose(0, 1, 4, 5, 2, 3).reshape(n, groups, cg * kh * kw, oh * ow)
    weights = _f32(w).reshape(groups, m // groups, cg * kh * kw)
    y = np.matmul(weights, cols).reshape(n, m, oh, ow)
    if b is not None:
        y += _f32(b).reshape(1, m, 1, 1)
    return y


def gemm(
    a: np.ndarray,
    b: np.ndarray,
    c: np.ndarray | None = None,
    *,
    alpha: float,
    beta: float,
    trans_a: bool,
    trans_b: bool,
) -> np.ndarray:
    """``alpha * A' @ B' + beta * C`` (``C`` broadcast to the product's shape)."""
    a = _f32(a).T if trans_a else _f32(a)
    b = _f32(b).T if trans_b else _f32(b)
    y = a @ b
    if alpha != 1.0:
        y *= _F32(alpha)
    if c is not None:
        y += _F32(beta) * _f32(c)
    return y


def matmul(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """numpy's (and ONNX's) matrix product, batch dimensions broadcast."""
    return np.matmul(_f32(a), _f32(b))


def _binary(ufunc: np.ufunc) -> Callable[[np.ndarray, np.ndarray], np.ndarray]:
    def kernel(a: np.ndarray, b: np.ndarray) -> np.ndarray:
        return ufunc(_f32(a), _f32(b))

    kernel.__name__ = ufunc.__name__
    kernel.__doc__ = f"Elementwise {ufunc.__name__}, operands broadcast."
    return kernel


# ----------------------------------------------------------------------------- activations
def relu(x: np.ndarray) -> np.ndarray:
    return np.maximum(_f32(x), _F32(0))


def clip(x: np.ndarray, *, lo: float, hi: float) -> np.ndarray:
    """``min(max(x, lo), hi)``: with ``lo > hi`` every value becomes ``hi`` (as in ONNX)."""
    return np.minimum(np.maximum(_f32(x), _F32(lo)), _F32(hi))


def leaky_relu(x: np.ndarray, *, alpha: float) -> np.ndarray:
    x = _f32(x)
    return np.where(x >= 0, x, x * _F32(alpha))


def sigmoid(x: np.ndarray) -> np.ndarray:
    """The logistic function, computed without overflow for inputs of either sign."""
    x = _f32(x)
    e = np.exp(-np.abs(x))
    return np.where(x >= 0, 1 / (1 + e), e / (1 + e))


def softmax(x: np.ndarray, *, axis: int) -> np.ndarray:
    """Softmax along ``axis`` alone (ONNX opset 13 semantics)."""
    x = _f32(x)
    e = np.exp(x - x.max(axis=axis, keepdims=True))
    return e / e.sum(axis=axis, keepdims=True)


# ----------------------------------------------------------------------------- pooling
def max_pool(
    x: np.ndarray,
    *,
    kernel: Sequence[int],
    strides: Sequence[int],
    pads: Sequence[int],
    ceil_mode: bool,
    count_include_pad: bool,
) -> np.ndarray:
    """The maximum of each window; padding never wins (it is ``-inf``).
    ``count_include_pad`` only matters to averages."""
    windows = conv_windows(_f32(x), kernel, strides, pads, (1, 1), -np.inf, ceil_mode=ceil_mode)
    return windows.max(axis=(4, 5))


def average_pool(
    x: np.ndarray,
    *,
    kernel: Sequence[int],
    strides: Sequence[int],
    pads: Sequence[int],
    ceil_mode: bool,
    count_include_pad: bool,
) -> np.ndarray:
    """The mean of each window. The divisor counts the input elements the window covers, plus,
    with ``count_include_pad``, the explicit padding it covers (not the overhang that ceil mode
    adds past the padding), as onnxruntime does."""
    window = dict(kernel=kernel, strides=strides, pads=pads, dilations=(1, 1), ceil_mode=ceil_mode)
    total = conv_windows(_f32(x), pad_value=0.0, **window).sum(axis=(4, 5), dtype=_F32)
    ones = np.ones((1, 1, *x.shape[2:]), _F32)
    padding = 1.0 if count_include_pad else 0.0
    count = conv_windows(ones, pad_value=padding, overhang_value=0.0, **window).sum(axis=(4, 5))
    return total / count


def global_average_pool(x: np.ndarray) -> np.ndarray:
    return _f32(x).mean(axis=(2, 3), keepdims=True, dtype=_F32)


def batch_norm(
    x: np.ndarray,
    scale: np.ndarray,
    bias: np.ndarray,
    mean: np.ndarray,
    var: np.ndarray,
    *,
    epsilon: float,
) -> np.ndarray:
    """Inference-mode batch normalisation over axis 1."""
    shape = (1, -1) + (1,) * (x.ndim - 2)
    factor = _f32(scale) / np.sqrt(_f32(var) + _F32(epsilon))
    shift = _f32(bias) - _f32(mean) * factor
    return _f32(x) * factor.reshape(shape) + shift.reshape(shape)


# ----------------------------------------------------------------------------- data movement
# (these keep their input's dtype: type inference lets them move int8 values too)
def flatten(x: np.ndarray, *, axis: int) -> np.ndarray:
    head = int(np.prod(x.shape[:axis], dtype=np.int64))
    return x.reshape(head, int(np.prod(x.shape[axis:], dtype=np.int64)))


def reshape(x: np.ndarray, *, shape: Sequence[int]) -> np.ndarray:
    return x.reshape(tuple(shape))


def transpose(x: np.ndarray, *, perm: Sequence[int]) -> np.ndarray:
    return np.ascontiguousarray(x.transpose(tuple(perm)))


def concat(*xs: np.ndarray, axis: int) -> np.ndarray:
    return np.concatenate(xs, axis=axis)


def pad(x: np.ndarray, *, pads: Sequence[int], value: float, mode: str) -> np.ndarray:
    """ONNX Pad: ``pads`` holds every axis's begin, then every axis's end; negative pads crop.
    ``mode`` is ``constant`` (with ``value``), ``reflect`` or ``edge``."""
    rank = x.ndim
    begins, ends = pads[:rank], pads[rank:]
    crop = tuple(
        slice(max(-b, 0), d - max(-e, 0)) for b, e, d in zip(begins, ends, x.shape, strict=True)
    )
    widths = [(max(b, 0), max(e, 0)) for b, e in zip(begins, ends, strict=True)]
    x = x[crop]
    if mode == "constant":
        return np.pad(x, widths, mode="constant", constant_values=value)
    return np.pad(x, widths, mode=mode)


def identity(x: np.ndarray) -> np.ndarray:
    return x


# ----------------------------------------------------------------------------- quantization
def quantize_linear(x: np.ndarray, *, scale: float, zero_point: int, dtype: str) -> np.ndarray:
    """``saturate(round(x / scale) + zero_point)`` in ``dtype``, rounding half to even and
    dividing in float32 (as onnxruntime does)."""
    info = np.iinfo(dtype)
    q = np.rint(_f32(x) / _F32(scale)) + zero_point
    return np.clip(q, info.min, info.max).astype(dtype)


def dequantize_linear(x: np.ndarray, *, scale: float, zero_point: int, dtype: str) -> np.ndarray:
    """``(x - zero_point) * scale`` in float32; ``dtype`` is the quantized input's."""
    return (x.astype(np.int32) - zero_point).astype(_F32) * _F32(scale)


#: Every float operator's kernel, by operator name.
FLOAT_KERNELS: dict[str, Callable[..., np.ndarray]] = {
    "Conv": conv,
    "Gemm": gemm,
    "MatMul": matmul,
    "Add": _binary(np.add),
    "Sub": _binary(np.subtract),
    "Mul": _binary(np.multiply),
    "Relu": relu,
    "Clip": clip,
    "LeakyRelu": leaky_relu,
    "Sigmoid": sigmoid,
    "MaxPool": max_pool,
    "AveragePool": average_pool,
    "GlobalAveragePool": global_average_pool,
    "BatchNormalization": batch_norm,
    "Flatten": flatten,
    "Reshape": reshape,
    "Transpose": transpose,
    "Concat": concat,
    "Pad": pad,
    "Softmax": softmax,
    "Identity": identity,
    "QuantizeLinear": quantize_linear,
    "DequantizeLinear": dequantize_linear,
}
