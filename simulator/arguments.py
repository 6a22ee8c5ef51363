"""What the simulators' entry points accept, checked once at the top of each (never in a loop).

Each function returns None for an acceptable value or a sentence saying what is wrong with it,
so that every layer raises its own error type from one definition of the rule: the simulators
raise :class:`~simulator.errors.SimulationError`, the devices of ``runtime`` ``DeviceError``.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from isa import AccelConfig, Program, Stage, TimingConfig

__all__ = [
    "config_problem",
    "dram_problem",
    "flag_problem",
    "module_order_problem",
    "program_problem",
    "timing_problem",
]


def _kind(value: object) -> str:
    if isinstance(value, np.ndarray):
        masked = "a masked array" if isinstance(value, np.ma.MaskedArray) else "an array"
        return f"{masked} of {value.dtype} with shape {value.shape}"
    return type(value).__name__


def config_problem(cfg: object) -> str | None:
    """``cfg`` must be an :class:`isa.AccelConfig`."""
    if isinstance(cfg, AccelConfig):
        return None
    return f"cfg must be an isa.AccelConfig, not {_kind(cfg)}"


def timing_problem(timing: object) -> str | None:
    """``timing`` must be an :class:`isa.TimingConfig` or None (the default timing)."""
    if timing is None or isinstance(timing, TimingConfig):
        return None
    return f"timing must be an isa.TimingConfig or None, not {_kind(timing)}"


def flag_problem(name: str, value: object) -> str | None:
    """A yes/no option (``detect_races``, ``stepped``) must be a bool, not merely truthy."""
    if isinstance(value, bool | np.bool_):
        return None
    return f"{name} must be True or False, not {_kind(value)}"


def module_order_problem(order: object) -> str | None:
    """``module_order`` must list each :class:`isa.Stage` once."""
    try:
        stages = sorted(Stage(s) for s in order)  # type: ignore[union-attr]
    except (TypeError, ValueError):
        stages = None
    if stages == sorted(Stage):
        return None
    return f"module_order {order!r} must list each stage (load, compute, store) once"


def program_problem(program: object, *, records: bool = True) -> str | None:
    """``program`` must be an :class:`isa.Program`, or (``records``) a sequence of instruction
    records or words, whose items the simulator checks one by one."""
    if isinstance(program, Program):
        return None
    if records and isinstance(program, Sequence) and not isinstance(program, str | bytes):
        return None
    wanted = "an isa.Program or a sequence of instructions" if records else "an isa.Program"
    return f"program must be {wanted}, not {_kind(program)}"


def dram_problem(dram: object) -> str | None:
    """``dram`` must be a plain (not masked), writeable, C-contiguous 1-D numpy uint8 array: the
    simulators write into it in place, byte address = index."""
    if not isinstance(dram, np.ndarray) or isinstance(dram, np.ma.MaskedArray):
        return f"dram must be a 1-D numpy array of uint8, not {_kind(dram)}"
    if dram.dtype != np.uint8 or dram.ndim != 1:
        return f"dram must be a 1-D numpy array of uint8, not {_kind(dram)}"
    if not dram.flags.writeable:
        return "dram must be writeable: the program's results are written into it"
    if not dram.flags.c_contiguous:
        return "dram must be contiguous (a strided view cannot be addressed byte by byte)"
    return None
