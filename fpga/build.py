"""Writing a board's build directory, and running its tool where it is installed.

:func:`write_vivado_project` writes, for a Zynq board: ``hdl/`` with the accelerator's Verilog
(exported from Amaranth by :func:`hw.write_verilog`) and the block-design wrapper
(:func:`fpga.signature.bd_wrapper_verilog`), and ``build.tcl`` (:func:`fpga.vivado.project_tcl`).
:func:`run_vivado` runs it with ``vivado`` from ``PATH``, or, where there is none, says which
command would.
"""

from __future__ import annotations

import contextlib
import shutil
import subprocess
from dataclasses import dataclass
from pathlib import Path

from fpga.boards import Board
from fpga.errors import FpgaError
from fpga.signature import BD_MODULE, accelerator_signature, bd_wrapper_verilog
from fpga.vivado import HDL_DIR, VivadoPlan, project_tcl
from hw import AXI_TOP_NAME, write_verilog
from isa import AccelConfig
from runtime.progress import Stage

__all__ = ["BUILD_SCRIPT", "VivadoProject", "run_vivado", "write_vivado_project"]

#: The script's file name in the project directory.
BUILD_SCRIPT = "build.tcl"
_LOG = "vivado.log"
#: How the build script's own errors begin (:func:`fpga.vivado.project_tcl`).
_OUR_ERROR = "vtaforge: error: "


@dataclass(frozen=True)
class VivadoProject:
    """A written project directory and its plan."""

    directory: Path
    plan: VivadoPlan

    @property
    def command(self) -> tuple[str, ...]:
        """The command that builds it, run in :attr:`directory`."""
        return ("vivado", "-mode", "batch", "-nojournal", "-log", _LOG, "-source", BUILD_SCRIPT)

    @property
    def bitstream(self) -> Path:
        return self.directory / self.plan.overlay[0]

    @property
    def hardware_handoff(self) -> Path:
        return self.directory / self.plan.overlay[1]


def write_vivado_project(
    board: Board, cfg: AccelConfig, directory: Path, *, port: str | None = None
) -> VivadoProject:
    """Write the Vivado project of ``cfg``'s accelerator on ``board`` (through the PS data port
    ``port``, the board's default when None) into ``directory``, which must exist."""
    signature = accelerator_signature(cfg)
    plan = VivadoPlan.make(board, cfg, signature, port)
    hdl = directory / HDL_DIR
    hdl.mkdir(exist_ok=True)
    write_verilog(cfg, hdl / f"{AXI_TOP_NAME}.v", axi=True)
    clock_hz = round(cfg.clock_mhz * 1e6)
    (hdl / f"{BD_MODULE}.v").write_text(bd_wrapper_verilog(signature, clock_hz))
    (directory / BUILD_SCRIPT).write_text(project_tcl(plan))
    return VivadoProject(directory, plan)


def run_vivado(project: VivadoProject, *, stage: Stage | None = None) -> bool:
    """Run Vivado on ``project`` if ``vivado`` is on ``PATH`` (True once the overlay files
    exist), inside ``stage(what)``, its output kept in the project's ``vivado.log`` only; False,
    running nothing, where it is not. FpgaError if the run fails, with the error Vivado's log
    ends with (the build script's own messages: missing board files, timing not met)."""
    if shutil.which(project.command[0]) is None:
        return False
    log = project.directory / _LOG
    what = f"vivado: synthesis, implementation and bitstream (log {log})"
    with contextlib.nullcontext() if stage is None else stage(what):
        done = subprocess.run(
            project.command,
            cwd=project.directory,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            check=False,
        )
    if done.returncode or not project.bitstream.exists():
        raise FpgaError(
            f"vivado exited with status {done.returncode} without writing "
            f"{project.bitstream}{_last_error(log)}: see {log}"
        )
    return True


def _last_error(log: Path) -> str:
    """The error that stopped the run in Vivado's ``log``: the build script's own
    (``vtaforge: error: ...``: missing board files, a failed run, timing not met; the first
    mention, as the Tcl trace after it quotes the script's unsubstituted line), else Vivado's
    last ``ERROR:``; or nothing."""
    lines = log.read_text(errors="replace").splitlines() if log.is_file() else []
    ours = [line[line.index(_OUR_ERROR) :] for line in lines if _OUR_ERROR in line]
    if ours:
        return f": {ours[0].strip()}"
    errors = [line for line in lines if line.startswith("ERROR:")]
    return f": {errors[-1].strip()}" if errors else ""
