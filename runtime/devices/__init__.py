"""Devices: one API to run an ``isa.Program`` on every level of vtaforge.

``open_device(kind, cfg)`` returns a :class:`Device` whose ``run(program, dram)`` leaves the
program's results in ``dram`` and returns :class:`RunStats` (cycles and counters, where the level
has them), and whose ``run_many`` runs a batch. Kinds (:class:`DeviceKind`): ``"fsim"``, the
functional simulator; ``"sim"``, the cycle-level simulator (``timing=`` an ``isa.TimingConfig``;
``RtlDevice.memory_timing`` reproduces the RTL device's cycles); ``"rtl"``, the Verilated RTL
behind AXI (needs the ``rtl`` extra and a
C++ compiler; its first opening per configuration builds the model, about a minute);
``"pynq"``, the bitstream on a PYNQ board (``bitstream=`` the ``.bit`` that ``vtaforge fpga
build`` exports; it needs the ``pynq`` package, which exists only on the board).
:class:`EmulatedPynqDevice` is that driver, unchanged, on a board emulated here whose logic is
the rtl device's Verilated RTL (``vtaforge run --device pynq --emulate``).

:class:`CudaDevice` is of another kind: it runs PTX kernels (``compiler.build(...,
target="cuda")``) on an NVIDIA GPU through the CUDA driver, and raises DeviceError where there is
none.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable

from isa import AccelConfig
from runtime.devices.base import Device, DeviceError, DeviceKind, Job, RunStats
from runtime.devices.cuda import CudaDevice, CudaKernel
from runtime.devices.fsim import FunctionalDevice
from runtime.devices.pynq import PynqDevice
from runtime.devices.pynq_emulation import EmulatedPynqDevice
from runtime.devices.rtl import AXI_RAM_TIMING, RtlDevice, RtlRunError
from runtime.devices.sim import CycleDevice

__all__ = [
    "AXI_RAM_TIMING",
    "DEVICES",
    "CudaDevice",
    "CudaKernel",
    "CycleDevice",
    "Device",
    "DeviceError",
    "DeviceKind",
    "EmulatedPynqDevice",
    "FunctionalDevice",
    "Job",
    "PynqDevice",
    "RtlDevice",
    "RtlRunError",
    "RunStats",
    "open_device",
]

#: The device class of each kind; each takes ``cfg`` and the keyword options it documents.
DEVICES: dict[DeviceKind, Callable[..., Device]] = {
    DeviceKind.FSIM: FunctionalDevice,
    DeviceKind.SIM: CycleDevice,
    DeviceKind.RTL: RtlDevice,
    DeviceKind.PYNQ: PynqDevice,
}


def open_device(kind: DeviceKind | str, cfg: AccelConfig, **options) -> Device:
    """A device of ``kind`` for ``cfg``; ``options`` go to its class (e.g. the RTL device's
    ``ready_probability``). Raises DeviceError for an unknown kind or option."""
    try:
        factory = DEVICES[DeviceKind(kind)]
    except ValueError:
        known = ", ".join(k.value for k in DEVICES)
        raise DeviceError(f"unknown device kind {kind!r}; choose one of {known}") from None
    if not isinstance(cfg, AccelConfig):
        raise DeviceError(f"cfg must be an isa.AccelConfig, not {type(cfg).__name__}")
    try:
        inspect.signature(factory).bind(cfg, **options)
    except TypeError as err:
        raise DeviceError(f"device {DeviceKind(kind).value}: {err}") from None
    return factory(cfg, **options)
