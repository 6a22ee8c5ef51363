"""Packing numpy arrays into the accelerator's blocked layouts and back (VTA's graph_pack).

Activations NCHW become ``(N/BATCH, C/BLOCK, H, W, BATCH, BLOCK)``; weights OIHW become
``(O/BLOCK_OUT, I/BLOCK_IN, KH, KW, BLOCK_OUT, BLOCK_IN)``; a per-channel bias becomes
``(1, C/BLOCK_OUT, 1, 1, BATCH, BLOCK_OUT)``. Channels (and the batch) that are not whole blocks
are padded with zeros, so any layer packs (ResNet-18's first layer has 3 input channels).
"""

from __future__ import annotations

import numpy as np

from compiler.accel.env import Env
from runtime.opset import pack, unpack

__all__ = ["pack_bias", "pack_nchw", "pack_oihw", "unpack_nchw"]


def _padded(array: np.ndarray, axis: int, block: int) -> np.ndarray:
    extra = -array.shape[axis] % block
    if not extra:
        return array
    widths = [(0, 0)] * array.ndim
    widths[axis] = (0, extra)
    return np.pad(array, widths)


def pack_nchw(x: np.ndarray, env: Env, block: int | None = None) -> np.ndarray:
    """``x`` (N, C, H, W) as ``(N/B, C/block, H, W, B, block)`` (``block``: BLOCK_IN), the
    batch padded with zero images and the channels with zero planes (the model runtime's
    ``Pack`` after padding the batch)."""
    block = env.BLOCK_IN if block is None else block
    x = _padded(x, 0, env.BATCH)
    return pack(x, batch=env.BATCH, block=block, channels=x.shape[1])


def unpack_nchw(packed: np.ndarray, channels: int | None = None, batch: int | None = None):
    """The NCHW array of a packed activation (the first ``channels`` / ``batch`` kept)."""
    nb, cb, _, _, b, c = packed.shape
    x = unpack(packed, batch=b, block=c, channels=channels or cb * c)
    return x[: batch if batch is not None else nb * b]


def pack_oihw(weights: np.ndarray, env: Env) -> np.ndarray:
    """``weights`` (O, I, KH, KW) as ``(O/BLOCK_OUT, I/BLOCK_IN, KH, KW, BLOCK_OUT, BLOCK_IN)``."""
    w = _padded(_padded(weights, 0, env.BLOCK_OUT), 1, env.BLOCK_IN)
    o, i, kh, kw = w.shape
    packed = w.reshape(o // env.BLOCK_OUT, env.BLOCK_OUT, i // env.BLOCK_IN, env.BLOCK_IN, kh, kw)
    return np.ascontiguousarray(packed.transpose(0, 2, 4, 5, 1, 3))


def pack_bias(bias: np.ndarray, env: Env) -> np.ndarray:
    """A per-channel ``bias`` (C,) as ``(1, C/BLOCK_OUT, 1, 1, BATCH, BLOCK_OUT)``, the same
    for every batch lane."""
    b = _padded(bias, 0, env.BLOCK_OUT).reshape(1, -1, 1, 1, 1, env.BLOCK_OUT)
    return np.ascontiguousarray(np.broadcast_to(b, (*b.shape[:4], env.BATCH, env.BLOCK_OUT)))
