"""Verilog export of ``Accelerator(cfg)`` (through Amaranth's RTLIL backend and yosys)."""

from __future__ import annotations

from pathlib import Path

from amaranth.back import verilog

from hw.top import Accelerator
from isa import AccelConfig

__all__ = ["TOP_NAME", "verilog_text", "write_verilog"]

#: The Verilog module name of the top level.
TOP_NAME = "vtaforge_accelerator"


def verilog_text(cfg: AccelConfig) -> str:
    """The Verilog source of the accelerator for ``cfg``; the top module is :data:`TOP_NAME`."""
    return verilog.convert(Accelerator(cfg), name=TOP_NAME, emit_src=False)


def write_verilog(cfg: AccelConfig, path: str | Path) -> int:
    """Write the Verilog of ``cfg`` to ``path``; return its size in bytes."""
    text = verilog_text(cfg)
    Path(path).write_text(text)
    return len(text.encode())
