"""Simulators of the accelerator: the bit-exact functional simulator (the executable
definition of the ISA) and the cycle-level timing model that consumes its events."""

__all__: list[str] = []
