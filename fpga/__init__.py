"""FPGA flows: board platforms, Vivado build plans with the Zynq processing system, resource and
timing estimates, and the open-source flow where a board allows it."""

__all__: list[str] = []
