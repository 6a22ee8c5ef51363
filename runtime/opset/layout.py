"""The layout changes between numpy's plain NCHW (or NC) and the accelerator's blocked layout
``(N/batch, C/block, H, W, batch, block)``, which the model planner inserts where a value
crosses between the CPU and the accelerator; and the packing of matrices computed at run time
into the weight buffer's blocks (the right operands of a batched product on the GEMM core)."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from runtime.opset.base import Operator, Origin, TensorType, need

__all__ = [
    "Pack",
    "PackAttrs",
    "PackWeights",
    "PackWeightsAttrs",
    "Unpack",
    "pack",
    "pack_weights",
    "unpack",
]


@dataclass(frozen=True)
class PackAttrs:
    """The blocked layout's batch and channel blocks, and the plain value's channel count."""

    batch: int
    block: int
    channels: int


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


def _check_blocks(attrs: PackAttrs) -> None:
    need(attrs.batch >= 1 and attrs.block >= 1, f"batch {attrs.batch}, block {attrs.block}")


class Pack(Operator):
    name = "Pack"
    member = "PACK"
    origin = Origin.LAYOUT
    Attrs = PackAttrs

    @staticmethod
    def infer(attrs, inputs, consts):
        _check_blocks(attrs)
        x = inputs[0].shape
        need(len(x) >= 2 and x[1] == attrs.channels, f"needs {attrs.channels} channels")
        need(x[0] % attrs.batch == 0, f"batch {x[0]} is not a multiple of {attrs.batch}")
        blocks = -(-x[1] // attrs.block)
        shape = (x[0] // attrs.batch, blocks, *x[2:], attrs.batch, attrs.block)
        return [TensorType(shape, inputs[0].dtype)]

    kernel = staticmethod(pack)


class Unpack(Operator):
    name = "Unpack"
    member = "UNPACK"
    origin = Origin.LAYOUT
    Attrs = PackAttrs

    @staticmethod
    def infer(attrs, inputs, consts):
        _check_blocks(attrs)
        x = inputs[0].shape
        need(len(x) >= 4, "needs a blocked value (rank >= 4)")
        need(x[-2:] == (attrs.batch, attrs.block), f"needs blocks of {attrs.batch}x{attrs.block}")
        need(x[1] * attrs.block >= attrs.channels, f"holds fewer than {attrs.channels} channels")
        shape = (x[0] * attrs.batch, attrs.channels, *x[2:-2])
        return [TensorType(shape, inputs[0].dtype)]

    kernel = staticmethod(unpack)


@dataclass(frozen=True)
class PackWeightsAttrs:
    """The weight blocks' size (``block`` x ``block``)."""

    block: int


def pack_weights(w: np.ndarray, *, block: int) -> np.ndarray:
    """Matrices ``[G, K, N]`` as the weight blocks of their transposes, ``(G, N/block,
    K/block, block, block)``: block ``[g, n, k]`` holds ``w[g, k*block + j, n*block + i]`` at
    ``[i, j]``, both axes padded with zeros to whole blocks."""
    groups, depth, columns = w.shape
    kb, nb = -(-depth // block), -(-columns // block)
    padded = np.zeros((groups, nb * block, kb * block), w.dtype)
    padded[:, :columns, :depth] = w.transpose(0, 2, 1)
    blocks = padded.reshape(groups, nb, block, kb, block).transpose(0, 1, 3, 2, 4)
    return np.ascontiguousarray(blocks)


class PackWeights(Operator):
    name = "PackWeights"
    member = "PACK_WEIGHTS"
    origin = Origin.LAYOUT
    Attrs = PackWeightsAttrs

    @staticmethod
    def infer(attrs, inputs, consts):
        need(attrs.block >= 1, f"block {attrs.block}")
        need(len(inputs[0].shape) == 3, "needs matrices [G, K, N]")
        groups, depth, columns = inputs[0].shape
        blocks = (-(-columns // attrs.block), -(-depth // attrs.block))
        return [TensorType((groups, *blocks, attrs.block, attrs.block), inputs[0].dtype)]

    kernel = staticmethod(pack_weights)
