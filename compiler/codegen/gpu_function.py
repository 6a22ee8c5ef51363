"""A compiled GPU function: its PTX, the grid emulator on the CPU, and runs on a CUDA device.

``compiler.build(s, args, target="cuda")`` returns a :class:`GpuFunction`. ``f.ptx`` is the
kernel's PTX text and ``f.launch`` its grid and block; ``f.emulate(*arrays)`` runs the kernel's
lowering on the CPU (:mod:`compiler.codegen.gpu_emulator`, compiled by the LLVM CPU backend on
first use) and works on every machine; ``f(*arrays)`` runs it on the GPU (``runtime``'s cuda
device; :class:`~runtime.devices.DeviceError` where there is no GPU) and ``f.time(*arrays)``
measures one launch there. Arguments are checked like a CPU function's, naming the parameter.
"""

from __future__ import annotations

import numpy as np

from compiler.codegen.gpu_emulator import emulation
from compiler.codegen.llvm import codegen
from compiler.codegen.nvptx import PtxModule
from compiler.codegen.runtime import CompiledFunction, check_arguments, output_positions
from compiler.loop_ir import LoweredFunc
from compiler.passes.gpu import LaunchConfig

__all__ = ["GpuFunction"]


class GpuFunction:
    """One GPU kernel over numpy arrays (see the module docstring)."""

    def __init__(self, module: PtxModule) -> None:
        self.module = module
        self._outputs = output_positions(module.func)
        self._emulator: CompiledFunction | None = None
        self._device_kernel: tuple[object, object] | None = None

    @property
    def name(self) -> str:
        return self.module.func.name

    @property
    def ptx(self) -> str:
        """The kernel's PTX text (for ``self.module.target.arch``)."""
        return self.module.ptx

    @property
    def lowered(self) -> LoweredFunc:
        return self.module.func

    @property
    def launch(self) -> LaunchConfig:
        return self.module.launch

    def emulate(self, *arrays: np.ndarray) -> None:
        """Run the kernel on the CPU, block by block, with the GPU's results."""
        if self._emulator is None:
            func = emulation(self.module.func, self.launch)
            compiled = codegen(func)
            address, engine = compiled.jit()
            self._emulator = CompiledFunction(func, address, engine, compiled)
        self._emulator(*arrays, num_threads=1)

    def _kernel(self) -> tuple[object, object]:
        if self._device_kernel is None:
            from runtime.devices.cuda import CudaDevice  # only where a GPU is used

            device = CudaDevice()
            self._device_kernel = (device, device.load(self.ptx, self.name))
        return self._device_kernel

    def __call__(self, *arrays: np.ndarray) -> None:
        """Run the kernel on the GPU (outputs copied back into their arrays)."""
        check_arguments(self.name, self.lowered.params, self._outputs, arrays)
        device, kernel = self._kernel()
        device.run(kernel, self.launch.grid, self.launch.block, arrays, self._outputs)

    def time(self, *arrays: np.ndarray, repeat: int = 20) -> float:
        """Seconds per launch on the GPU (CUDA events; data already on the device)."""
        check_arguments(self.name, self.lowered.params, self._outputs, arrays)
        device, kernel = self._kernel()
        return device.time(kernel, self.launch.grid, self.launch.block, arrays, repeat)
