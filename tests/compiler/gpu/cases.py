"""Every GPU template on small shapes, with its numpy/PyTorch reference: the emulator tests and
the GPU tests run the same cases."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import torch

from compiler import te
from compiler.templates import Template
from compiler.templates.gpu import (
    GPU_CONV2D_NCHW,
    GPU_ELEMENTWISE,
    GPU_MATMUL,
    GPU_POOL2D,
    GPU_SOFTMAX,
)


@dataclass(frozen=True)
class Case:
    """``template`` on inputs of ``shapes`` with ``params``; ``reference`` maps the input
    arrays to the expected output."""

    name: str
    template: Template
    shapes: tuple[tuple[int, ...], ...]
    reference: Callable[..., np.ndarray]
    params: dict[str, Any] = field(default_factory=dict)
    config: dict[str, Any] = field(default_factory=dict)

    def declare(self):
        inputs = [te.placeholder(shape, name=f"in{i}") for i, shape in enumerate(self.shapes)]
        s, out = self.template(*inputs, config=self.config, **self.params)
        return s, [*inputs, out]

    def arrays(self, seed: int = 0) -> list[np.ndarray]:
        rng = np.random.default_rng(seed)
        return [rng.standard_normal(shape, dtype=np.float32) for shape in self.shapes]


def _torch(fn: Callable[..., torch.Tensor]) -> Callable[..., np.ndarray]:
    return lambda *arrays: fn(*(torch.from_numpy(a) for a in arrays)).numpy()


CASES = [
    Case(
        "matmul", GPU_MATMUL, ((48, 40), (40, 72)), np.matmul, config={"tile_m": 32, "tile_n": 32}
    ),
    Case("matmul default", GPU_MATMUL, ((64, 24), (24, 96)), np.matmul),
    Case(
        "matmul ragged",
        GPU_MATMUL,
        ((37, 29), (29, 45)),
        np.matmul,
        config={"tile_m": 32, "tile_n": 32, "reg_m": 8, "reg_n": 4, "tile_k": 16, "unroll": False},
    ),
    Case(
        "matmul k=1", GPU_MATMUL, ((40, 1), (1, 36)), np.matmul, config={"tile_m": 32, "tile_n": 32}
    ),
    Case(
        "conv2d one channel",  # fewer weights than threads: read from global memory
        GPU_CONV2D_NCHW,
        ((1, 1, 12, 12), (4, 1, 3, 3)),
        _torch(lambda x, w: torch.nn.functional.conv2d(x, w, padding=1)),
        {"stride": 1, "padding": 1},
        {"tile_xy": 64},
    ),
    Case(
        "conv2d 3x3 pad 1",
        GPU_CONV2D_NCHW,
        ((1, 8, 9, 9), (16, 8, 3, 3)),
        _torch(lambda x, w: torch.nn.functional.conv2d(x, w, padding=1)),
        {"stride": 1, "padding": 1},
        {"threads_oc": 4, "tile_xy": 16},
    ),
    Case(
        "conv2d stride 2 batch 2",
        GPU_CONV2D_NCHW,
        ((2, 6, 11, 11), (12, 6, 3, 3)),
        _torch(lambda x, w: torch.nn.functional.conv2d(x, w, stride=2, padding=1)),
        {"stride": 2, "padding": 1},
        {"threads_oc": 8, "reg_oc": 2, "tile_xy": 16, "tile_rc": 2, "unroll": False},
    ),
    Case(
        "conv2d 1x1",
        GPU_CONV2D_NCHW,
        ((1, 16, 6, 6), (8, 16, 1, 1)),
        _torch(lambda x, w: torch.nn.functional.conv2d(x, w)),
        config={"tile_xy": 16},
    ),
    Case(
        "elementwise broadcast",
        GPU_ELEMENTWISE,
        ((3, 5, 7), (7,)),
        lambda x, y: np.maximum(x * y, 0),
        {"fn": lambda x, y: te.maximum(x * y, 0.0)},
        {"threads": 64},
    ),
    Case(
        "max pool 3x3 stride 2 pad 1",
        GPU_POOL2D,
        ((2, 3, 9, 9),),
        _torch(lambda x: torch.nn.functional.max_pool2d(x, 3, 2, 1)),
        {"kernel": 3, "stride": 2, "padding": 1, "kind": "max"},
    ),
    Case(
        "avg pool 2x2 (the template's default window and stride)",
        GPU_POOL2D,
        ((1, 4, 8, 8),),
        _torch(lambda x: torch.nn.functional.avg_pool2d(x, 2)),
        {"kind": "avg"},
        {"threads": 64},
    ),
    Case(
        "softmax",
        GPU_SOFTMAX,
        ((70, 33),),
        _torch(lambda x: torch.softmax(x, -1)),
        config={"threads": 32},
    ),
    Case("softmax 3-d", GPU_SOFTMAX, ((2, 3, 17),), _torch(lambda x: torch.softmax(x, -1))),
]
