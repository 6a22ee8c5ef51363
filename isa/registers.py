"""The accelerator's control registers: the map that the hardware's AXI4-Lite slave
(``hw.axilite``) implements and every host uses (the RTL testbench, a board driver).

Registers are 32 bits wide, at 4-byte offsets in a 4 KiB window (:data:`CONTROL_ADDR_BITS`):

=========  ================  ====  ==========================================================
offset     register          R/W   contents
=========  ================  ====  ==========================================================
``0x00``   ``CONTROL``       RW    bit 0 ``START``: writing 1 launches the program (ignored
                                   while ``BUSY``; reads 0); bit 1 ``IRQ_ENABLE``
``0x04``   ``STATUS``        RO    bit 0 ``BUSY`` (launch to FINISH), bit 1 ``DONE`` (FINISH
                                   retired; cleared by ``START``), bit 2 ``ERROR`` (``ERROR``
                                   is not 0)
``0x08``   ``ERROR``         RO    bit 0 ``TOKEN_OVERFLOW`` (a push beyond a token counter's
                                   maximum), bit 1 ``READ_RESPONSE`` (a read beat came back
                                   with ``RRESP`` other than OKAY), bit 2 ``WRITE_RESPONSE``
                                   (``BRESP`` other than OKAY); sticky until reset
``0x0C``   ``INSN_COUNT``    RW    instructions in the program
``0x10``   ``INSN_ADDR_LO``  RW    byte address of the instruction stream (16-byte aligned),
``0x14``   ``INSN_ADDR_HI``  RW    low and high 32 bits; bits beyond the accelerator's address
                                   width read back as 0
``0x18``   ``CYCLES``        RO    clock cycles from the launch to FINISH
``0x1C``   ``READ_BEATS``    RO    AXI read data beats since the launch
``0x20``   ``WRITE_BEATS``   RO    AXI write data beats since the launch
``0x24``   ``MODULES``       RO    bit 0 fetch busy, bits 1-3 load, compute, store idle
``0x28``   ``L2G`` ...       RO    the four token counters, one register each, in
``0x34``   ``S2G``                 :class:`~isa.tokens.Token` order (L2G, G2L, G2S, S2G)
``0x38``   ``MAGIC``         RO    :data:`MAGIC` (``"VTAF"``): a vtaforge accelerator
``0x3C``   ``VERSION``       RO    :data:`REGISTER_MAP_VERSION`
``0x40``   ``CONFIG_ID``     RO    :func:`config_id` of the configuration the hardware was
                                   built for: a driver refuses a bitstream built for another
=========  ================  ====  ==========================================================

The ``irq`` output is ``DONE & IRQ_ENABLE``. An access to an offset not listed, or a write to a
read-only register, is answered with ``SLVERR`` and changes nothing. A host launches a program
by writing ``INSN_COUNT``, ``INSN_ADDR_LO``/``HI`` and then ``CONTROL = START``, and waits for
``STATUS.DONE`` (or the interrupt).
"""

from __future__ import annotations

import hashlib
from enum import IntEnum, IntFlag

from isa.config import AccelConfig
from isa.tokens import Token

__all__ = [
    "CONTROL_ADDR_BITS",
    "MAGIC",
    "REGISTER_BITS",
    "REGISTER_MAP_VERSION",
    "TOKEN_REGISTERS",
    "Control",
    "ErrorFlag",
    "ModuleFlag",
    "Register",
    "Status",
    "config_id",
]

#: Width of every control register (VTA's registers are 32 bits too).
REGISTER_BITS = 32
#: AXI4-Lite address width of the register window (4 KiB, as each of VTA's IP blocks).
CONTROL_ADDR_BITS = 12
#: ``MAGIC`` reads ``"VTAF"`` in ASCII.
MAGIC = 0x56544146
#: Bumped whenever an offset or bit below changes meaning.
REGISTER_MAP_VERSION = 1


class Register(IntEnum):
    """Byte offsets of the control registers (see the module docstring)."""

    CONTROL = 0x00
    STATUS = 0x04
    ERROR = 0x08
    INSN_COUNT = 0x0C
    INSN_ADDR_LO = 0x10
    INSN_ADDR_HI = 0x14
    CYCLES = 0x18
    READ_BEATS = 0x1C
    WRITE_BEATS = 0x20
    MODULES = 0x24
    L2G = 0x28
    G2L = 0x2C
    G2S = 0x30
    S2G = 0x34
    MAGIC = 0x38
    VERSION = 0x3C
    CONFIG_ID = 0x40

    @property
    def writable(self) -> bool:
        """Whether a host may write the register (the others are read-only)."""
        return self in _WRITABLE


_WRITABLE = frozenset(
    {Register.CONTROL, Register.INSN_COUNT, Register.INSN_ADDR_LO, Register.INSN_ADDR_HI}
)

#: The register holding each token counter.
TOKEN_REGISTERS: dict[Token, Register] = {token: Register[token.name] for token in Token}


class Control(IntFlag):
    """Bits of ``CONTROL``."""

    START = 1 << 0
    IRQ_ENABLE = 1 << 1


class Status(IntFlag):
    """Bits of ``STATUS``."""

    BUSY = 1 << 0
    DONE = 1 << 1
    ERROR = 1 << 2


class ErrorFlag(IntFlag):
    """Bits of ``ERROR``."""

    TOKEN_OVERFLOW = 1 << 0
    READ_RESPONSE = 1 << 1
    WRITE_RESPONSE = 1 << 2


class ModuleFlag(IntFlag):
    """Bits of ``MODULES``: which modules are working (a hung program's snapshot)."""

    FETCH_BUSY = 1 << 0
    LOAD_IDLE = 1 << 1
    COMPUTE_IDLE = 1 << 2
    STORE_IDLE = 1 << 3


def config_id(cfg: AccelConfig) -> int:
    """The 32-bit ``CONFIG_ID`` of ``cfg``: the first four bytes of the SHA-256 of its
    fingerprint, which names every primary parameter."""
    return int.from_bytes(hashlib.sha256(cfg.fingerprint.encode()).digest()[:4], "big")
