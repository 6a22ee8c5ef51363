"""The layout changes between numpy's plain NCHW (or NC) and the accelerator's blocked layout
``(N/batch, C/block, H, W, batch, block)``, which the model planner inserts where a value
crosses between the CPU and the accelerator."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from runtime.opset.base import Operator, Origin, TensorType, need

__all__ = ["Pack", "PackAttrs", "Unpack", "pack", "unpack"]


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
