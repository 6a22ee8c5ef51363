"""Float32 GFLOP/s of the LLVM CPU backend's default templates, next to the vendor libraries.

Workloads: matmul 1024^3 (peer: numpy's BLAS) and the four ResNet-18 3x3 convolutions (stride 1,
pad 1, batch 1; peer: PyTorch's CPU conv2d on NCHW), each at 1 and 2 threads, measured in the
same run. The templates' defaults derive from the target: the host's own and, where the host has
AVX-512, also an AVX2 target (``-mattr=-avx512f``: the code and defaults an AVX2 machine gets).
Our convolution is the NCHWc template with the target's channel block for the layer's width
(``nchwc_block``): like TVM's x86 numbers, the layout change of data and weights is done once
outside the timed kernel (a graph keeps tensors in that layout between layers); the padding is
inside it. Each result is checked against its peer. The output names the CPU, each target's
vector width and registers, and the load average (timings on a shared machine are noisy).
"""

from __future__ import annotations

import os
import sys

import numpy as np

try:
    import torch
except ImportError:
    sys.exit('cpu_ops needs PyTorch, the convolutions\' peer: pip install -e ".[bench]"')
from _harness import best_of, cpu_name, report
from threadpoolctl import threadpool_limits

from compiler import build, te
from compiler.codegen import Target
from compiler.templates import CONV2D_NCHWC, MATMUL, nchwc_block

THREADS = (1, 2)
#: An AVX2 variant of an AVX-512 host (AVX-512F off, and with it every extension built on it).
AVX2 = "llvm -mattr=-avx512f"
#: (name, channels, height=width) of ResNet-18's 3x3 stride-1 convolutions.
CONV_LAYERS = [
    ("conv 56x56 64->64", 64, 56),
    ("conv 28x28 128->128", 128, 28),
    ("conv 14x14 256->256", 256, 14),
    ("conv 7x7 512->512", 512, 7),
]


def _targets() -> list[tuple[str, str]]:
    """``(label, target)`` pairs: the host's, then AVX2 where the host has AVX-512."""
    host = Target.host()
    targets = [(f"host {host.cpu}", "llvm")]
    if host.model.lanes == 16:
        targets.append(("avx2", AVX2))
    return targets


def _matmul_rows(rng: np.random.Generator, label: str, target: str) -> list[list]:
    n = 1024
    a_t, b_t = te.placeholder((n, n), name="A"), te.placeholder((n, n), name="B")
    s, c_t = MATMUL(a_t, b_t, target=target)
    kernel = build(s, [a_t, b_t, c_t], target=target)
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
        gflops, peer_gflops = flops / ours / 1e9, flops / peer / 1e9
        rows.append([label, "matmul 1024^3", threads, gflops, "numpy", peer_gflops, peer / ours])
    return rows


def _blocked(x: np.ndarray, block: int) -> np.ndarray:
    n, c, h, w = x.shape
    return np.ascontiguousarray(x.reshape(n, c // block, block, h, w).transpose(0, 1, 3, 4, 2))


def _blocked_kernel(w: np.ndarray, block: int) -> np.ndarray:
    o, c, kh, kw = w.shape
    blocks = w.reshape(o // block, block, c // block, block, kh, kw)
    return np.ascontiguousarray(blocks.transpose(0, 2, 4, 5, 3, 1))


def _conv_rows(
    rng: np.random.Generator, label: str, target: str, name: str, channels: int, size: int
) -> list[list]:
    rows = []
    block = nchwc_block(channels, target, out_width=size)
    groups = channels // block
    data_t = te.placeholder((1, groups, size, size, block), name="data")
    kernel_t = te.placeholder((groups, groups, 3, 3, block, block), name="kernel")
    s, out_t = CONV2D_NCHWC(data_t, kernel_t, stride=1, padding=1, target=target)
    kernel = build(s, [data_t, kernel_t, out_t], target=target)
    x = rng.standard_normal((1, channels, size, size), dtype=np.float32)
    w = rng.standard_normal((channels, channels, 3, 3), dtype=np.float32)
    xb, wb = _blocked(x, block), _blocked_kernel(w, block)
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
        rows.append(
            [label, name, threads, flops / ours / 1e9, "pytorch", flops / peer / 1e9, peer / ours]
        )
    return rows


def main() -> None:
    load_before = os.getloadavg()
    rng = np.random.default_rng(0)
    rows: list[list] = []
    models = {}
    for label, target in _targets():
        model = Target.parse(target).model
        models[label] = f"{model.lanes} floats x {model.registers} registers, fma {model.fma}"
        rows += _matmul_rows(rng, label, target)
        for layer in CONV_LAYERS:
            rows += _conv_rows(rng, label, target, *layer)
    load = (load_before, os.getloadavg())
    report(
        "cpu_ops",
        ["target", "workload", "threads", "ours GFLOP/s", "peer", "peer GFLOP/s", "ours / peer"],
        rows,
        cpu=cpu_name(),
        targets=models,
        load_average_before_after=load,
        torch=torch.__version__,
        numpy=np.__version__,
        note="conv: NCHWc kernel, layout change outside the timed call",
    )
    print(f"CPU: {cpu_name()}; targets: {models}; load average before, after: {load}")


if __name__ == "__main__":
    main()
