"""Running programs: devices (functional and cycle-level simulators, RTL, PYNQ, CPU, GPU), the
graph executor, measurement and the ``vtaforge`` command line.

``runtime`` imports ``isa``, ``simulator`` and (lazily, per device) ``hw``; never ``compiler``, so a
board needs only ``isa`` and ``runtime``. ``open_device(kind, cfg)`` runs a program on any level
(:mod:`runtime.devices`); :func:`runtime.sweep.sweep` measures and prices a design space as one
table.
"""

from runtime.devices import Device, DeviceError, DeviceKind, RunStats, open_device

__all__ = ["Device", "DeviceError", "DeviceKind", "RunStats", "open_device"]
