"""The cuda device where no GPU can be used: a clear DeviceError, after the arguments are checked
like a CPU function's (the runs themselves are in test_on_gpu.py, behind ``make test-gpu``)."""

from __future__ import annotations

import numpy as np
import pytest

from compiler import CompileError, build
from runtime.devices import CudaDevice, DeviceError
from runtime.devices import cuda as cuda_module
from tests.compiler.gpu.kernels import reversed_blocks


@pytest.fixture
def no_driver(monkeypatch):
    monkeypatch.setattr(cuda_module, "_LIBRARY", "libcuda-absent.so.1")


def test_no_driver_is_a_device_error(no_driver):
    with pytest.raises(DeviceError, match="no CUDA driver on this machine .*emulate"):
        CudaDevice()


def test_calling_a_gpu_function_without_a_gpu(no_driver):
    s, args = reversed_blocks(64, 16)
    f = build(s, args, target="cuda")
    a, c = np.ones(64, np.float32), np.zeros(64, np.float32)
    with pytest.raises(DeviceError, match="no CUDA driver"):
        f(a, c)
    with pytest.raises(DeviceError, match="no CUDA driver"):
        f.time(a, c)
    f.emulate(a, c)  # the emulator needs no GPU
    np.testing.assert_array_equal(c, a)


@pytest.mark.parametrize(
    ("arrays", "message"),
    [
        ((np.ones(64, np.float32),), "takes 2 arrays"),
        ((np.ones(64, np.float64), np.zeros(64, np.float32)), "dtype is float64"),
        ((np.ones(32, np.float32), np.zeros(64, np.float32)), "extent 32, expected 64"),
        ((np.ones(64, np.float32), np.zeros(128, np.float32)[::2]), "not C-contiguous"),
    ],
)
def test_arguments_are_checked_before_the_device(no_driver, arrays, message):
    s, args = reversed_blocks(64, 16)
    f = build(s, args, target="cuda")
    for run in (f, f.emulate):
        with pytest.raises(CompileError, match=message):
            run(*arrays)
