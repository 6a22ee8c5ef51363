"""The FPGA flows' exception type: a board, a build option or a tool run that cannot work, named
with what was asked and what would work instead."""

from __future__ import annotations

from isa import VtaforgeError

__all__ = ["FpgaError"]


class FpgaError(VtaforgeError):
    """A board, a configuration on a board, or a build step cannot be used as asked."""
