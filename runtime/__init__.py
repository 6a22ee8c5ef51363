"""Running programs: devices (functional and cycle-level simulators, RTL, PYNQ, CPU, GPU), the
graph executor, measurement and the ``vtaforge`` command line.

``runtime`` imports ``isa``, ``simulator`` and (lazily, per device) ``hw``; never ``compiler``, so a
board needs only ``isa`` and ``runtime``.
"""

__all__: list[str] = []
