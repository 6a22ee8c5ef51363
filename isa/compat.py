"""What Python 3.11 added that the board runtime uses: the packages a board runs (``isa``,
``simulator`` and ``runtime`` without its host-only devices; ``vtaforge fpga package``) run on
Python 3.10, the Python of the PYNQ v3 images (Ubuntu 22.04 on the boards' ARM cores), while the
host's tools need 3.11."""

from __future__ import annotations

import enum
import sys

__all__ = ["StrEnum"]

if sys.version_info >= (3, 11):  # noqa: UP036 (the board runs 3.10: the module docstring)
    from enum import StrEnum
else:  # Python 3.10

    class StrEnum(str, enum.Enum):  # noqa: UP042 (enum.StrEnum is what 3.10 lacks)
        """Python 3.11's ``enum.StrEnum``: members are strings, and ``str`` and ``format``
        give their values."""

        def __str__(self) -> str:
            return str(self.value)
