"""numpy references for the operator tests (written independently of the compiler)."""

from __future__ import annotations

import numpy as np


def conv2d_nchw(x: np.ndarray, w: np.ndarray, stride: int, pad: int) -> np.ndarray:
    """Direct convolution, accumulated in float64."""
    _, _, h, wd = x.shape
    _, _, kh, kw = w.shape
    xp = np.pad(x.astype(np.float64), ((0, 0), (0, 0), (pad, pad), (pad, pad)))
    oh, ow = (h + 2 * pad - kh) // stride + 1, (wd + 2 * pad - kw) // stride + 1
    out = np.zeros((x.shape[0], w.shape[0], oh, ow))
    for i in range(kh):
        for j in range(kw):
            patch = xp[:, :, i : i + stride * oh : stride, j : j + stride * ow : stride]
            out += np.einsum("nchw,oc->nohw", patch, w[:, :, i, j])
    return out


def depthwise_nchw(x: np.ndarray, w: np.ndarray, stride: int, pad: int) -> np.ndarray:
    _, _, kh, kw = w.shape
    xp = np.pad(x.astype(np.float64), ((0, 0), (0, 0), (pad, pad), (pad, pad)))
    oh = (x.shape[2] + 2 * pad - kh) // stride + 1
    ow = (x.shape[3] + 2 * pad - kw) // stride + 1
    out = np.zeros((x.shape[0], x.shape[1], oh, ow))
    for i in range(kh):
        for j in range(kw):
            patch = xp[:, :, i : i + stride * oh : stride, j : j + stride * ow : stride]
            out += patch * w[None, :, 0, i, j, None, None]
    return out


def pool2d(x: np.ndarray, kernel: int, stride: int, pad: int, kind: str) -> np.ndarray:
    fill = -np.inf if kind == "max" else 0.0
    xp = np.pad(
        x.astype(np.float64), ((0, 0), (0, 0), (pad, pad), (pad, pad)), constant_values=fill
    )
    oh = (x.shape[2] + 2 * pad - kernel) // stride + 1
    ow = (x.shape[3] + 2 * pad - kernel) // stride + 1
    windows = [
        xp[:, :, i : i + stride * oh : stride, j : j + stride * ow : stride]
        for i in range(kernel)
        for j in range(kernel)
    ]
    stacked = np.stack(windows)
    return stacked.max(axis=0) if kind == "max" else stacked.mean(axis=0)


def to_nchwc(x: np.ndarray, block: int) -> np.ndarray:
    n, c, h, w = x.shape
    return np.ascontiguousarray(x.reshape(n, c // block, block, h, w).transpose(0, 1, 3, 4, 2))


def from_nchwc(x: np.ndarray) -> np.ndarray:
    n, co, h, w, b = x.shape
    return x.transpose(0, 1, 4, 2, 3).reshape(n, co * b, h, w)


def kernel_to_nchwc(w: np.ndarray, in_block: int, out_block: int) -> np.ndarray:
    o, c, kh, kw = w.shape
    blocked = w.reshape(o // out_block, out_block, c // in_block, in_block, kh, kw)
    return np.ascontiguousarray(blocked.transpose(0, 2, 4, 5, 3, 1))
