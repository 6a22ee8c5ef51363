"""Running programs: devices (functional and cycle-level simulators, RTL, PYNQ, CPU, GPU), the
graph executor, measurement and the ``vtaforge`` command line.

``runtime`` imports ``isa``, ``simulator`` and (lazily, per device) ``hw``; never ``compiler``, so a
board needs only ``isa`` and ``runtime``. ``open_device(kind, cfg)`` runs a program on any level
(:mod:`runtime.devices`); :func:`runtime.sweep.sweep` measures and prices a design space as one
table.
"""

from isa.lazy import lazy_names

#: Each public name and the module that defines it (imported on first use: the command line
#: starts without loading the devices).
_SOURCES = dict.fromkeys(
    ("Device", "DeviceError", "DeviceKind", "RunStats", "open_device"), "runtime.devices"
)

__all__ = sorted(_SOURCES)

__getattr__, __dir__ = lazy_names(__name__, _SOURCES)
