"""The exception types of the hardware/software contract.

Every vtaforge error derives from :class:`VtaforgeError`, so a caller can catch the whole family
at once; each layer adds its own subclasses (the simulator's ``SimulationError``, the compiler's
``CompileError``, ...). Messages name what was wrong and where: the parameter, field, instruction
index or line number.
"""

from __future__ import annotations

import difflib
from collections.abc import Iterable

__all__ = [
    "AssemblyError",
    "BuilderError",
    "ConfigError",
    "ConfigMismatchError",
    "EncodingError",
    "ProgramError",
    "ProgramFormatError",
    "VtaforgeError",
    "did_you_mean",
]


def did_you_mean(word: str, choices: Iterable[str]) -> str:
    """`` (did you mean 'X'?)`` naming the choice closest to a misspelt ``word``, or ``""``
    when none is close: the tail of a message about an unknown name."""
    close = difflib.get_close_matches(str(word), [str(c) for c in choices], n=1, cutoff=0.6)
    return f" (did you mean {close[0]!r}?)" if close else ""


class VtaforgeError(Exception):
    """Root of every error vtaforge raises on purpose."""


class ConfigError(VtaforgeError, ValueError):
    """An :class:`~isa.config.AccelConfig` parameter breaks a rule.

    ``parameter`` names the offending parameter (or configuration file key).
    """

    def __init__(self, parameter: str, value: object, rule: str) -> None:
        self.parameter = parameter
        self.value = value
        self.rule = rule
        super().__init__(f"{parameter}={value!r}: {rule}")


class EncodingError(VtaforgeError, ValueError):
    """An instruction or micro-op cannot be encoded, or a word cannot be decoded.

    ``insn`` names the instruction kind, ``field`` the field concerned (when one is), and
    ``index`` the instruction's position in its program (when known).
    """

    def __init__(
        self, message: str, *, insn: str = "", field: str = "", index: int | None = None
    ) -> None:
        self.insn = insn
        self.field = field
        self.index = index
        self.detail = message
        where = f"instruction {index}: " if index is not None else ""
        kind = f"{insn}: " if insn else ""
        super().__init__(f"{where}{kind}{message}")

    def at(self, index: int) -> EncodingError:
        """Return the same error located at instruction ``index`` of a program."""
        return EncodingError(self.detail, insn=self.insn, field=self.field, index=index)


class ProgramError(VtaforgeError, ValueError):
    """A :class:`~isa.program.Program` is inconsistent (overlapping segments, bad parts)."""


class ProgramFormatError(VtaforgeError, ValueError):
    """A binary program file is truncated, foreign, corrupt or built for another config."""


class ConfigMismatchError(ProgramFormatError):
    """A program built for one configuration was given to another.

    ``differences`` maps each differing parameter to ``(program's value, expected value)``.
    """

    def __init__(self, message: str, differences: dict[str, tuple[object, object]]) -> None:
        self.differences = differences
        super().__init__(message)


class AssemblyError(VtaforgeError, ValueError):
    """A line of assembly text is malformed; ``line`` is its 1-based line number."""

    def __init__(self, line: int, message: str) -> None:
        self.line = line
        self.detail = message
        super().__init__(f"line {line}: {message}")


class BuilderError(VtaforgeError, ValueError):
    """A :class:`~isa.builder.ProgramBuilder` call cannot become a valid program: too many
    micro-ops, a loop extent or factor beyond its field, an unaligned or out-of-range buffer
    access, a kernel that breaks the accumulator window, unbalanced dependency tokens."""
