"""Float32 GFLOP/s of the CUDA backend's default GPU templates, next to PyTorch CUDA (cuBLAS,
cuDNN), measured in the same run on the same GPU.

Workloads: matmul 4096^3 (peer: ``torch.matmul``) and the four ResNet-18 3x3 convolutions
(stride 1, pad 1, batch 1, NCHW; peer: ``torch.nn.functional.conv2d``). Ours is timed with CUDA
events around repeated launches on data already on the device (``GpuFunction.time``), the peer
with ``torch.cuda.Event`` the same way; each result is checked against the peer's first. On a
machine without an NVIDIA GPU (or without a CUDA build of PyTorch) it says so and exits 0
without figures.
"""

from __future__ import annotations

import sys

import numpy as np
import torch
from _harness import report

from compiler import build, te
from compiler.templates.gpu import GPU_CONV2D_NCHW, GPU_MATMUL
from runtime.devices import CudaDevice, DeviceError

REPEAT = 20
#: (name, channels, height=width) of ResNet-18's 3x3 stride-1 convolutions.
CONV_LAYERS = [
    ("conv 56x56 64->64", 64, 56),
    ("conv 28x28 128->128", 128, 28),
    ("conv 14x14 256->256", 256, 14),
    ("conv 7x7 512->512", 512, 7),
]


def _peer_seconds(fn) -> float:
    fn()
    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    start.record()
    for _ in range(REPEAT):
        fn()
    end.record()
    torch.cuda.synchronize()
    return start.elapsed_time(end) / 1000.0 / REPEAT


def _row(name: str, flops: float, ours: float, peer_name: str, peer: float) -> list:
    return [name, flops / ours / 1e9, peer_name, flops / peer / 1e9, peer / ours]


def _matmul_row(rng: np.random.Generator, target: str) -> list:
    n = 4096
    a_t, b_t = te.placeholder((n, n), name="A"), te.placeholder((n, n), name="B")
    s, c_t = GPU_MATMUL(a_t, b_t)
    kernel = build(s, [a_t, b_t, c_t], target=target)
    a = rng.standard_normal((n, n), dtype=np.float32)
    b = rng.standard_normal((n, n), dtype=np.float32)
    c = np.zeros((n, n), np.float32)
    kernel(a, b, c)
    a_cuda, b_cuda = torch.from_numpy(a).cuda(), torch.from_numpy(b).cuda()
    np.testing.assert_allclose(c, (a_cuda @ b_cuda).cpu().numpy(), rtol=1e-2, atol=1e-1)
    peer = _peer_seconds(lambda: a_cuda @ b_cuda)
    ours = kernel.time(a, b, c, repeat=REPEAT)
    return _row("matmul 4096^3", 2.0 * n**3, ours, "cuBLAS", peer)


def _conv_row(rng: np.random.Generator, target: str, name: str, channels: int, size: int) -> list:
    data_t = te.placeholder((1, channels, size, size), name="data")
    kernel_t = te.placeholder((channels, channels, 3, 3), name="kernel")
    s, out_t = GPU_CONV2D_NCHW(data_t, kernel_t, stride=1, padding=1)
    kernel = build(s, [data_t, kernel_t, out_t], target=target)
    x = rng.standard_normal((1, channels, size, size), dtype=np.float32)
    w = rng.standard_normal((channels, channels, 3, 3), dtype=np.float32)
    out = np.zeros(out_t.shape, np.float32)
    kernel(x, w, out)
    x_cuda, w_cuda = torch.from_numpy(x).cuda(), torch.from_numpy(w).cuda()
    with torch.no_grad():
        expected = torch.nn.functional.conv2d(x_cuda, w_cuda, padding=1).cpu().numpy()
        np.testing.assert_allclose(out, expected, rtol=1e-2, atol=1e-1)
        peer = _peer_seconds(lambda: torch.nn.functional.conv2d(x_cuda, w_cuda, padding=1))
    ours = kernel.time(x, w, out, repeat=REPEAT)
    return _row(name, 2.0 * channels * channels * 9 * size * size, ours, "cuDNN", peer)


def main() -> int:
    try:
        device = CudaDevice()
    except DeviceError as error:
        print(f"gpu_ops: no GPU here, nothing measured ({error})")
        return 0
    if not torch.cuda.is_available():
        print(
            f"gpu_ops: {device.name} found, but PyTorch {torch.__version__} has no CUDA: the "
            "peers cannot run, nothing measured"
        )
        return 0
    target = f"cuda -arch={device.arch}"  # PTX for this GPU's own architecture
    torch.backends.cuda.matmul.allow_tf32 = False  # both sides in plain fp32
    torch.backends.cudnn.allow_tf32 = False
    rng = np.random.default_rng(0)
    rows = [_matmul_row(rng, target)]
    rows += [_conv_row(rng, target, *layer) for layer in CONV_LAYERS]
    report(
        "gpu_ops",
        ["workload", "ours GFLOP/s", "peer", "peer GFLOP/s", "ours / peer"],
        rows,
        gpu=device.name,
        arch=device.arch,
        torch=torch.__version__,
        note="default template knobs (untuned); fp32 without TF32 on both sides",
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
