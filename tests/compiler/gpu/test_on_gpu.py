"""On an NVIDIA GPU (``make test-gpu``): every template's kernel run by the CUDA driver equals
its reference and the emulator, and launches are timed. Without a GPU these tests FAIL with the
device's DeviceError: a skip would read like a pass."""

from __future__ import annotations

import numpy as np
import pytest

from compiler import build
from runtime.devices import CudaDevice
from tests.compiler.gpu.cases import CASES
from tests.compiler.gpu.kernels import tiled_matmul

pytestmark = pytest.mark.gpu


def test_device_opens():
    device = CudaDevice()
    assert device.name and device.arch.startswith("sm_")


@pytest.mark.parametrize("case", CASES, ids=[c.name for c in CASES])
def test_template_on_the_gpu(case):
    s, args = case.declare()
    f = build(s, args, target="cuda")
    inputs = case.arrays(seed=7)
    out = np.full(args[-1].shape, np.nan, np.float32)
    f(*inputs, out)
    np.testing.assert_allclose(out, case.reference(*inputs), rtol=2e-4, atol=2e-5)
    emulated = np.full_like(out, np.nan)
    f.emulate(*inputs, emulated)
    np.testing.assert_allclose(out, emulated, rtol=1e-5, atol=1e-6)


def test_timed_launch():
    s, args = tiled_matmul(256, 256, 256, tile=16, tile_k=16)
    f = build(s, args, target="cuda")
    rng = np.random.default_rng(0)
    a, b = rng.standard_normal((2, 256, 256), dtype=np.float32)
    c = np.zeros((256, 256), np.float32)
    f(a, b, c)
    np.testing.assert_allclose(c, a @ b, rtol=1e-3, atol=1e-3)
    seconds = f.time(a, b, c, repeat=5)
    assert 0 < seconds < 1
