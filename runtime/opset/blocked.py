"""The NCHWc operators that the CPU target introduces: activations blocked by channel,
``(N, C/c, H, W, c)`` (channel ``k*c + v`` at ``[:, k, :, :, v]``), so that a convolution's
inner loop reads and writes whole vectors of channels; the layout changes at the blocked
region's edges; and convolutions over blocked data whose weights the compiler blocked once
(:func:`block_conv_weights`, :func:`block_depthwise_weights`); and the maximum pooling of
blocked data. And the matrix product whose constant right operand the compiler packed into
the CPU template's column panels (:func:`pack_panels`), a bias add fused in.

Each computes what its plain operator computes on the unblocked values (``ConvNCHWc`` is
``Conv``, ``DepthwiseNCHWc`` a ``Conv`` of one group per channel); the numpy kernels unblock,
call the plain kernel and block the result, so a model runs the same without native kernels.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from runtime.opset.base import NoAttrs, Operator, Origin, TensorType, need, same_dtype
from runtime.opset.elementwise import Clip
from runtime.opset.linear import Conv, ConvAttrs
from runtime.opset.pooling import MaxPool, PoolAttrs

__all__ = [
    "BlockAttrs",
    "BlockedConvAttrs",
    "ConvNCHWc",
    "DepthwiseNCHWc",
    "FromNCHWc",
    "MaxPoolNCHWc",
    "PackedMatMul",
    "PanelAttrs",
    "ToNCHWc",
    "block_channels",
    "block_conv_weights",
    "block_depthwise_weights",
    "pack_panels",
    "unblock_channels",
    "unblock_conv_weights",
    "unblock_depthwise_weights",
    "unpack_panels",
]


@dataclass(frozen=True)
class BlockAttrs:
    """The channel block of a blocked value (it divides the channels)."""

    block: int


def block_channels(x: np.ndarray, *, block: int) -> np.ndarray:
    """NCHW -> ``(N, C/block, H, W, block)``."""
    n, c, h, w = x.shape
    return np.ascontiguousarray(x.reshape(n, c // block, block, h, w).transpose(0, 1, 3, 4, 2))


def unblock_channels(x: np.ndarray) -> np.ndarray:
    """The inverse of :func:`block_channels`."""
    n, k, h, w, v = x.shape
    return np.ascontiguousarray(x.transpose(0, 1, 4, 2, 3)).reshape(n, k * v, h, w)


def block_conv_weights(w: np.ndarray, in_block: int, out_block: int) -> np.ndarray:
    """OIHW weights as the NCHWc kernels read them, ``(O/out_block, C/in_block, KH, KW,
    in_block, out_block)``: ``w[f*out_block + j, k*in_block + i, y, x]`` at ``[f, k, y, x, i,
    j]`` (both blocks divide their channel counts)."""
    o, c, kh, kw = w.shape
    blocks = w.reshape(o // out_block, out_block, c // in_block, in_block, kh, kw)
    return np.ascontiguousarray(blocks.transpose(0, 2, 4, 5, 3, 1))


def unblock_conv_weights(w: np.ndarray) -> np.ndarray:
    """The inverse of :func:`block_conv_weights`: OIHW weights."""
    ob, cb, kh, kw, ib, oc = w.shape
    return np.ascontiguousarray(w.transpose(0, 5, 1, 4, 2, 3)).reshape(ob * oc, cb * ib, kh, kw)


def block_depthwise_weights(w: np.ndarray, block: int) -> np.ndarray:
    """A depthwise convolution's ``(C, 1, KH, KW)`` weights as ``(C/block, KH, KW, block)``."""
    c, _, kh, kw = w.shape
    return np.ascontiguousarray(w.reshape(c // block, block, kh, kw).transpose(0, 2, 3, 1))


def unblock_depthwise_weights(w: np.ndarray) -> np.ndarray:
    """The inverse of :func:`block_depthwise_weights`."""
    k, kh, kw, v = w.shape
    return np.ascontiguousarray(w.transpose(0, 3, 1, 2)).reshape(k * v, 1, kh, kw)


def _blocked_type(shape: tuple[int, ...], dtype: str) -> TensorType:
    need(len(shape) == 5, "needs blocked data (N, C/c, H, W, c)")
    return TensorType((shape[0], shape[1] * shape[4], *shape[2:4]), dtype)


def _blocked(t: TensorType, block: int) -> TensorType:
    n, c, h, w = t.shape
    return TensorType((n, c // block, h, w, block), t.dtype)


class ToNCHWc(Operator):
    name = "ToNCHWc"
    member = "TO_NCHWC"
    origin = Origin.CPU
    Attrs = BlockAttrs

    @staticmethod
    def infer(attrs, inputs, consts):
        x = inputs[0]
        need(len(x.shape) == 4, "needs NCHW data")
        need(attrs.block >= 1 and x.shape[1] % attrs.block == 0, f"block {attrs.block}")
        return [_blocked(x, attrs.block)]

    kernel = staticmethod(block_channels)


class FromNCHWc(Operator):
    name = "FromNCHWc"
    member = "FROM_NCHWC"
    origin = Origin.CPU
    Attrs = NoAttrs

    @staticmethod
    def infer(attrs, inputs, consts):
        return [_blocked_type(inputs[0].shape, inputs[0].dtype)]

    kernel = staticmethod(unblock_channels)


@dataclass(frozen=True)
class BlockedConvAttrs:
    """A blocked convolution's geometry (:class:`~runtime.opset.linear.ConvAttrs`'s fields)
    and the activation fused into it: the output clipped to ``[lo, hi]`` (``Relu``: ``lo``
    0; ``Clip``: its bounds; none: infinite bounds)."""

    strides: tuple[int, int] = (1, 1)
    pads: tuple[int, int, int, int] = (0, 0, 0, 0)
    dilations: tuple[int, int] = (1, 1)
    groups: int = 1
    lo: float = -math.inf
    hi: float = math.inf

    @property
    def conv(self) -> ConvAttrs:
        return ConvAttrs(self.strides, self.pads, self.dilations, self.groups)


class _BlockedConv(Operator):
    """What the blocked convolutions share: the type rule, kernel and MACs of ``Conv`` over
    the unblocked values, then the fused clip. A subclass states its weights' layout."""

    origin = Origin.CPU
    Attrs = BlockedConvAttrs
    arity = (2, 3)

    @staticmethod
    def plain_weights(x: tuple[int, ...], w: tuple[int, ...], groups: int) -> tuple[int, ...]:
        """The OIHW shape of blocked weights ``w`` read with blocked data ``x``."""
        raise NotImplementedError

    @staticmethod
    def unblock(w: np.ndarray) -> np.ndarray:
        raise NotImplementedError

    @staticmethod
    def out_block(x: tuple[int, ...], w: tuple[int, ...]) -> int:
        raise NotImplementedError

    @classmethod
    def infer(cls, attrs, inputs, consts):
        x, w = inputs[0].shape, inputs[1].shape
        need(len(x) == 5, "needs blocked data (N, C/c, H, W, c)")
        dtype = same_dtype(inputs[:2], "float32")
        plain_w = TensorType(cls.plain_weights(x, w, attrs.groups), dtype)
        plain = [_blocked_type(x, dtype), plain_w, *inputs[2:]]
        (out,) = Conv.infer(attrs.conv, plain, consts)
        return [_blocked(out, cls.out_block(x, w))]

    @classmethod
    def kernel(cls, x, w, b=None, *, strides, pads, dilations, groups, lo, hi):
        x, w = np.asarray(x), np.asarray(w)
        plain = unblock_channels(x)
        geometry = {"strides": strides, "pads": pads, "dilations": dilations, "groups": groups}
        y = Conv.kernel(plain, cls.unblock(w), b, **geometry)
        if lo > -math.inf or hi < math.inf:
            y = Clip.kernel(y, lo=lo, hi=hi)
        return block_channels(y, block=cls.out_block(x.shape, w.shape))

    @classmethod
    def macs(cls, attrs, inputs, outputs):
        x, w = inputs[0].shape, inputs[1].shape
        _, per_group, kh, kw = cls.plain_weights(x, w, attrs.groups)
        return outputs[0].size * per_group * kh * kw


class ConvNCHWc(_BlockedConv):
    """A convolution of one group over blocked data ``(N, C/i, H, W, i)`` with weights
    blocked ``(O/o, C/i, KH, KW, i, o)`` (:func:`block_conv_weights`) and a plain bias,
    writing ``(N, O/o, OH, OW, o)``: ``Conv`` of the unblocked values, blocked."""

    name = "ConvNCHWc"
    member = "CONV_NCHWC"

    @staticmethod
    def plain_weights(x, w, groups):
        need(groups == 1, "needs one group")
        need(len(w) == 6, "needs blocked weights (O/o, C/i, KH, KW, i, o)")
        need(x[4] == w[4], "data and weight blocks differ")
        return (w[0] * w[5], w[1] * w[4], w[2], w[3])

    unblock = staticmethod(unblock_conv_weights)

    @staticmethod
    def out_block(x, w):
        return w[5]


class DepthwiseNCHWc(_BlockedConv):
    """A depthwise convolution (a group per channel, multiplier 1) over blocked data ``(N,
    C/c, H, W, c)`` with weights ``(C/c, KH, KW, c)`` (:func:`block_depthwise_weights`) and a
    plain bias, writing ``(N, C/c, OH, OW, c)``."""

    name = "DepthwiseNCHWc"
    member = "DEPTHWISE_NCHWC"

    @staticmethod
    def plain_weights(x, w, groups):
        need(len(w) == 4, "needs blocked depthwise weights (C/c, KH, KW, c)")
        need(x[4] == w[3], "data and weight blocks differ")
        channels = x[1] * x[4]
        need(groups == channels, f"needs one group per channel ({channels})")
        return (channels, 1, w[1], w[2])

    unblock = staticmethod(unblock_depthwise_weights)

    @staticmethod
    def out_block(x, w):
        return x[4]


class MaxPoolNCHWc(Operator):
    """A 2-D maximum pooling of blocked data ``(N, C/c, H, W, c)``: ``MaxPool`` of the
    unblocked value, blocked."""

    name = "MaxPoolNCHWc"
    member = "MAX_POOL_NCHWC"
    origin = Origin.CPU
    Attrs = PoolAttrs

    @staticmethod
    def infer(attrs, inputs, consts):
        x = inputs[0]
        need(len(attrs.kernel) == 2, "needs a 2-D window")
        plain = _blocked_type(x.shape, same_dtype(inputs, "float32"))
        (out,) = MaxPool.infer(attrs, [plain], consts)
        return [_blocked(out, x.shape[4])]

    @staticmethod
    def kernel(x, *, kernel, strides, pads, ceil_mode, count_include_pad, dilations):
        x = np.asarray(x)
        window = {"kernel": kernel, "strides": strides, "pads": pads, "dilations": dilations}
        y = MaxPool.kernel(
            unblock_channels(x), ceil_mode=ceil_mode, count_include_pad=count_include_pad, **window
        )
        return block_channels(y, block=x.shape[4])


def pack_panels(b: np.ndarray, width: int) -> np.ndarray:
    """A ``(K, N)`` matrix as panels of ``width`` contiguous columns, ``(ceil(N/width), K,
    width)``: column ``p*width + j`` at ``[p, :, j]``, zeros past the last column."""
    k, n = b.shape
    panels = -(-n // width)
    padded = np.zeros((k, panels * width), b.dtype)
    padded[:, :n] = b
    return np.ascontiguousarray(padded.reshape(k, panels, width).transpose(1, 0, 2))


def unpack_panels(panels: np.ndarray, columns: int) -> np.ndarray:
    """The inverse of :func:`pack_panels`: the ``(K, columns)`` matrix."""
    count, k, width = panels.shape
    return np.ascontiguousarray(panels.transpose(1, 0, 2).reshape(k, count * width)[:, :columns])


@dataclass(frozen=True)
class PanelAttrs:
    """The columns of the matrix that a product's panels hold."""

    columns: int


class PackedMatMul(Operator):
    """``a @ b (+ bias)``: ``MatMul`` of ``a`` (``(..., K)``) by the ``(K, columns)`` matrix
    that ``panels`` hold (:func:`pack_panels`), then ``Add`` of a ``(columns,)`` bias where
    there is one."""

    name = "PackedMatMul"
    member = "PACKED_MATMUL"
    origin = Origin.CPU
    Attrs = PanelAttrs
    arity = (2, 3)

    @staticmethod
    def infer(attrs, inputs, consts):
        a, panels = inputs[0].shape, inputs[1].shape
        need(len(a) >= 2 and len(panels) == 3, "needs a matrix (or a batch of rows) and panels")
        need(a[-1] == panels[1], f"inner dimensions {a[-1]} and {panels[1]} differ")
        count, width = panels[0], panels[2]
        columns = attrs.columns
        need((count - 1) * width < columns <= count * width, f"panels hold no {columns} columns")
        need(len(inputs) < 3 or inputs[2].shape == (columns,), f"the bias needs {columns} values")
        return [TensorType((*a[:-1], columns), same_dtype(inputs, "float32"))]

    @staticmethod
    def kernel(a, panels, bias=None, *, columns):
        y = np.matmul(np.asarray(a, np.float32), unpack_panels(np.asarray(panels), columns))
        return y if bias is None else y + np.asarray(bias, np.float32)

    @staticmethod
    def macs(attrs, inputs, outputs):
        return outputs[0].size * inputs[0].shape[-1]
