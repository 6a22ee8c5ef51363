"""Float32 GFLOP/s of the LLVM CPU backend's default templates, next to the vendor libraries.

Workloads: matmul 1024^3 (peer: numpy's BLAS) and the four ResNet-18 3x3 convolutions (stride 1,
pad 1, batch 1; peer: PyTorch's CPU conv2d on NCHW), each at 1 and 2 threads, measured in the
same run. Our convolution is the NCHWc template (16-channel blocks): like TVM's x86 numbers, the
layout change of data and weights is done once outside the timed kernel (a graph keeps tensors
in that layout between layers); the padding is inside it. Each result is checked against its peer.
"""

from __future__ import annotations

import numpy as np
import torch
from _harness import best_of, report
from threadpoolctl import threadpool_limits

from compiler import build, te
from compiler.ops import CONV2D_NCHWC, MATMUL

THREADS = (1, 2)
BLOCK = 16
#: (name, channels, height=width) of ResNet-18's 3x3 stride-1 convolutions.
CONV_LAYERS = [
    ("conv 56x56 64->64", 64, 56),
    ("conv 28x28 128->128", 128, 28),
    ("conv 14x14 256->256", 256, 14),
    ("conv 7x7 512->512", 512, 7),
]


def _matmul_rows(rng: np.random.Generator) -> list[list]:
    n = 1024
    a_t, b_t = te.placeholder((n, n), name="A"), te.placeholder((n, n), name="B")
    s, c_t = MATMUL(a_t, b_t)
    kernel = build(s, [a_t, b_t, c_t])
    a = rng.standard_normal((n, n), dtype=np.float32)
    b = rng.standard_normal((n, n), dtype=np.float32)
    c = np.zeros((n, n), np.float32)
    flops = 2.0 * n**3
    rows = []
    for threads in THREADS:
        kernel(a, b, c, num_threads=threads)
        with threadpool_limits(limits=threads):
            expected = a @ b
            peer = best_of(lambda: a @ b)
        np.testing.assert_allclose(c, expected, rtol=1e-3, atol=1e-2)
        ours = best_of(lambda t=threads: kernel(a, b, c, num_threads=t))
        rows.append(
            ["matmul 1024^3", threads, flops / ours / 1e9, "numpy", flops / peer / 1e9, peer / ours]
        )
    return rows


def _blocked(x: np.ndarray) -> np.ndarray:
    n, c, h, w = x.shape
    return np.ascontiguousarray(x.reshape(n, c // BLOCK, BLOCK, h, w).transpose(0, 1, 3, 4, 2))


def _blocked_kernel(w: np.ndarray) -> np.ndarray:
    o, c, kh, kw = w.shape
    blocks = w.reshape(o // BLOCK, BLOCK, c // BLOCK, BLOCK, kh, kw)
    return np.ascontiguousarray(blocks.transpose(0, 2, 4, 5, 3, 1))


def _conv_rows(rng: np.random.Generator, name: str, channels: int, size: int) -> list[list]:
    rows = []
    groups = channels // BLOCK
    data_t = te.placeholder((1, groups, size, size, BLOCK), name="data")
    kernel_t = te.placeholder((groups, groups, 3, 3, BLOCK, BLOCK), name="kernel")
    s, out_t = CONV2D_NCHWC(data_t, kernel_t, stride=1, padding=1)
    kernel = build(s, [data_t, kernel_t, out_t])
    x = rng.standard_normal((1, channels, size, size), dtype=np.float32)
    w = rng.standard_normal((channels, channels, 3, 3), dtype=np.float32)
    xb, wb = _blocked(x), _blocked_kernel(w)
    out = np.zeros(out_t.shape, np.float32)
    x_torch, w_torch = torch.from_numpy(x), torch.from_numpy(w)
    flops = 2.0 * channels * channels * 9 * size * size
    for threads in THREADS:
        torch.set_num_threads(threads)
        with torch.no_grad():
            expected = torch.nn.functional.conv2d(x_torch, w_torch, padding=1).numpy()
            peer = best_of(lambda: torch.nn.functional.conv2d(x_torch, w_torch, padding=1))
        kernel(xb, wb, out, num_threads=threads)
        got = out.transpose(0, 1, 4, 2, 3).reshape(expected.shape)
        np.testing.assert_allclose(got, expected, rtol=1e-3, atol=1e-2)
        ours = best_of(lambda t=threads: kernel(xb, wb, out, num_threads=t))
        rows.append([name, threads, flops / ours / 1e9, "pytorch", flops / peer / 1e9, peer / ours])
    return rows


def main() -> None:
    rng = np.random.default_rng(0)
    rows = _matmul_rows(rng)
    for layer in CONV_LAYERS:
        rows += _conv_rows(rng, *layer)
    report(
        "cpu_ops",
        ["workload", "threads", "ours GFLOP/s", "peer", "peer GFLOP/s", "ours / peer"],
        rows,
        torch=torch.__version__,
        numpy=np.__version__,
        note="conv: NCHWc kernel, layout change outside the timed call; shared 2-core machine",
    )


if __name__ == "__main__":
    main()
