"""The control and status interface of the accelerator, as a host (or an AXI-Lite slave in
front of the accelerator) sees it.

``start`` (a one-cycle pulse, ignored while ``busy``) launches the program of ``insn_count``
instructions at byte address ``insn_addr`` (16-byte aligned); ``done`` rises when its FINISH
retires and stays high until the next start; ``cycles`` counts the cycles from the launch to
FINISH. ``error`` is sticky: a dependency token counter overflowed (a push beyond
``2**token_counter_bits - 1``). ``busy`` is high from the launch until FINISH.
"""

from __future__ import annotations

from amaranth.lib import wiring
from amaranth.lib.wiring import In, Out

from hw.layouts import byte_addr_bits
from isa import REGISTER_BITS, AccelConfig

__all__ = ["REGISTER_BITS", "ControlSignature"]


class ControlSignature(wiring.Signature):
    """The host's side of the control registers (the accelerator has it flipped)."""

    def __init__(self, cfg: AccelConfig):
        super().__init__(
            {
                "start": Out(1),
                "insn_count": Out(REGISTER_BITS),
                "insn_addr": Out(byte_addr_bits(cfg)),
                "busy": In(1),
                "done": In(1),
                "error": In(1),
                "cycles": In(REGISTER_BITS),
            }
        )
