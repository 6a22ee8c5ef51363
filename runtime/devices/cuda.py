"""The cuda device: PTX kernels on an NVIDIA GPU through the CUDA driver API (ctypes on libcuda).

``CudaDevice(ordinal)`` opens a GPU (its primary context); ``load(ptx, name)`` JIT-compiles PTX
text into a :class:`CudaKernel`; ``run(kernel, grid, block, arrays, outputs)`` copies the numpy
arrays to the device, launches, waits and copies the outputs back; ``time(...)`` measures one
launch with CUDA events on arrays already on the device. Where there is no driver
(``libcuda.so.1``) or no GPU, opening raises :class:`DeviceError` saying so; every failing driver
call raises it with the driver's error name and the call. The device loads PTX text and knows
nothing of the compiler (DESIGN principle 3).
"""

from __future__ import annotations

import ctypes
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from runtime.devices.base import DeviceError

__all__ = ["CudaDevice", "CudaKernel"]

_LIBRARY = "libcuda.so.1"
_SUCCESS = 0
_ATTRIBUTE_MAJOR, _ATTRIBUTE_MINOR = 75, 76  # CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_*
_Dim3 = tuple[int, int, int]


def _driver() -> ctypes.CDLL:
    try:
        return ctypes.CDLL(_LIBRARY)
    except OSError as error:
        raise DeviceError(
            f"no CUDA driver on this machine ({_LIBRARY} cannot be loaded: {error}); the cuda "
            "device needs an NVIDIA GPU and its driver (use .emulate() to run a GPU function on "
            "the CPU)"
        ) from None


@dataclass(frozen=True)
class CudaKernel:
    """A kernel loaded on a device: its module and function handles."""

    name: str
    module: ctypes.c_void_p
    function: ctypes.c_void_p


class CudaDevice:
    """One NVIDIA GPU (see the module docstring)."""

    def __init__(self, ordinal: int = 0) -> None:
        self._cuda = _driver()
        self._call("cuInit", 0)
        count = ctypes.c_int()
        self._call("cuDeviceGetCount", ctypes.byref(count))
        if not 0 <= ordinal < count.value:
            raise DeviceError(f"no CUDA device {ordinal}: this machine has {count.value}")
        device = ctypes.c_int()
        self._call("cuDeviceGet", ctypes.byref(device), ordinal)
        self._context = ctypes.c_void_p()
        self._call("cuDevicePrimaryCtxRetain", ctypes.byref(self._context), device)
        self._call("cuCtxSetCurrent", self._context)
        name = ctypes.create_string_buffer(256)
        self._call("cuDeviceGetName", name, len(name), device)
        self.name = name.value.decode()
        major, minor = ctypes.c_int(), ctypes.c_int()
        self._call("cuDeviceGetAttribute", ctypes.byref(major), _ATTRIBUTE_MAJOR, device)
        self._call("cuDeviceGetAttribute", ctypes.byref(minor), _ATTRIBUTE_MINOR, device)
        self.arch = f"sm_{major.value}{minor.value}"

    def _call(self, name: str, *args: object) -> None:
        status = getattr(self._cuda, name)(*args)
        if status != _SUCCESS:
            text = ctypes.c_char_p()
            self._cuda.cuGetErrorName(status, ctypes.byref(text))
            what = text.value.decode() if text.value else f"error {status}"
            raise DeviceError(f"CUDA driver call {name} failed: {what}")

    def load(self, ptx: str, name: str) -> CudaKernel:
        """The kernel ``name`` of the PTX text ``ptx``, compiled by the driver for this GPU."""
        module = ctypes.c_void_p()
        self._call("cuModuleLoadData", ctypes.byref(module), ctypes.c_char_p(ptx.encode()))
        function = ctypes.c_void_p()
        self._call("cuModuleGetFunction", ctypes.byref(function), module, name.encode())
        return CudaKernel(name, module, function)

    def allocate(self, nbytes: int) -> int:
        """A device address of ``nbytes`` (at least one) bytes of global memory."""
        pointer = ctypes.c_uint64()
        self._call("cuMemAlloc_v2", ctypes.byref(pointer), ctypes.c_size_t(max(nbytes, 1)))
        return pointer.value

    def free(self, pointer: int) -> None:
        self._call("cuMemFree_v2", ctypes.c_uint64(pointer))

    def to_device(self, pointer: int, array: np.ndarray) -> None:
        self._call(
            "cuMemcpyHtoD_v2",
            ctypes.c_uint64(pointer),
            ctypes.c_void_p(array.ctypes.data),
            ctypes.c_size_t(array.nbytes),
        )

    def to_host(self, array: np.ndarray, pointer: int) -> None:
        self._call(
            "cuMemcpyDtoH_v2",
            ctypes.c_void_p(array.ctypes.data),
            ctypes.c_uint64(pointer),
            ctypes.c_size_t(array.nbytes),
        )

    def launch(
        self, kernel: CudaKernel, grid: _Dim3, block: _Dim3, pointers: Sequence[int]
    ) -> None:
        """Launch ``kernel`` on the default stream with one device address per parameter."""
        values = [ctypes.c_uint64(p) for p in pointers]
        params = (ctypes.c_void_p * max(len(values), 1))(
            *(ctypes.cast(ctypes.byref(v), ctypes.c_void_p) for v in values)
        )
        self._call(
            "cuLaunchKernel",
            kernel.function,
            *(ctypes.c_uint(n) for n in (*grid, *block)),
            ctypes.c_uint(0),
            None,
            params,
            None,
        )

    def synchronize(self) -> None:
        self._call("cuCtxSynchronize")

    def run(
        self,
        kernel: CudaKernel,
        grid: _Dim3,
        block: _Dim3,
        arrays: Sequence[np.ndarray],
        outputs: Sequence[int],
    ) -> None:
        """Copy ``arrays`` in, launch, wait, copy the arrays at ``outputs`` back."""
        pointers = [self.allocate(a.nbytes) for a in arrays]
        try:
            for pointer, array in zip(pointers, arrays, strict=True):
                self.to_device(pointer, array)
            self.launch(kernel, grid, block, pointers)
            self.synchronize()
            for position in outputs:
                self.to_host(arrays[position], pointers[position])
        finally:
            for pointer in pointers:
                self.free(pointer)

    def time(
        self,
        kernel: CudaKernel,
        grid: _Dim3,
        block: _Dim3,
        arrays: Sequence[np.ndarray],
        repeat: int = 20,
    ) -> float:
        """Seconds per launch: the mean of ``repeat`` launches between two CUDA events, after a
        warm-up launch, on copies of ``arrays`` already on the device."""
        pointers = [self.allocate(a.nbytes) for a in arrays]
        start, end = ctypes.c_void_p(), ctypes.c_void_p()
        try:
            for pointer, array in zip(pointers, arrays, strict=True):
                self.to_device(pointer, array)
            self._call("cuEventCreate", ctypes.byref(start), 0)
            self._call("cuEventCreate", ctypes.byref(end), 0)
            self.launch(kernel, grid, block, pointers)
            self._call("cuEventRecord", start, None)
            for _ in range(repeat):
                self.launch(kernel, grid, block, pointers)
            self._call("cuEventRecord", end, None)
            self._call("cuEventSynchronize", end)
            milliseconds = ctypes.c_float()
            self._call("cuEventElapsedTime", ctypes.byref(milliseconds), start, end)
        finally:
            for event in (start, end):
                if event.value:
                    self._call("cuEventDestroy_v2", event)
            for pointer in pointers:
                self.free(pointer)
        return milliseconds.value / 1000.0 / repeat
