"""``vtaforge fpga package``: a compiled model and everything that runs it, as one folder to copy
onto a PYNQ board.

The bundle (:func:`write_bundle`):

- ``model.vtaf``: the compiled model, checked whole (it loads, and its accelerator fits the
  board: its AXI master is one of the PS's DRAM port widths);
- ``overlay/NAME.bit`` and ``overlay/NAME.hwh``: the pair ``vtaforge fpga build`` exports for the
  model's configuration, copied from ``--bitstream DIR`` when given; or, with ``--emulated``, an
  emulated overlay (:func:`runtime.devices.pynq_emulation.write_overlay`: its logic is the
  Verilated RTL built on this machine, run by this machine's Python), so that the bundle runs
  here as on a board: ``run_model.py --emulate`` on the board runtime's Python, its driver on
  the emulated ``pynq`` API;
- ``vtaforge_board/``: the board runtime, sources only: ``isa``, ``simulator`` and ``runtime``
  less the host-only modules (:data:`HOST_ONLY`: the Verilator testbenches, the sweep, the
  plots), no compiled module, with ``threadpoolctl``'s single pure-Python module (the runtime's one
  dependency besides numpy) and a ``pyproject.toml`` (``pip install ./vtaforge_board`` if
  wanted; the script runs it in place). It runs on :data:`BOARD_PYTHON`, the Python of the
  PYNQ v3 images;
- ``run_model.py``: ``python3 run_model.py --input X.npy [-o OUT.npz] [--report]`` runs the model
  on the board's accelerator through the ``pynq`` device (``vtaforge run`` with the overlay
  beside it; ``--emulate`` on an emulated overlay), or with ``--device fsim`` on the functional
  simulator, on any machine;
- ``README.md``: how to copy the folder to the board and run it.

The model's CPU steps run on the board's numpy kernels: the shared libraries a model compiled
on an x86 host carries do not load on the board's ARM CPU, and the runtime falls back to numpy.
"""

from __future__ import annotations

import importlib.util
import shutil
from dataclasses import dataclass
from pathlib import Path

from fpga.boards import Board
from fpga.errors import FpgaError
from hw.parts import part

__all__ = ["BOARD_PYTHON", "HOST_ONLY", "Bundle", "write_bundle"]

#: The oldest Python the bundle's runtime runs on: the PYNQ v3.0 and v3.1 images' (Ubuntu 22.04,
#: 32-bit ARM on the Z1/Z2).
BOARD_PYTHON = (3, 10)
#: Modules of the board runtime's packages that only a host imports (relative to the
#: repository): left out of the bundle. The other devices' modules stay: the device registry
#: imports them, and they import their host's packages (Verilator, CUDA) only when opened.
HOST_ONLY = (
    "runtime/devices/rtl_bench.py",  # the Verilator simulation's testbench
    "runtime/devices/pynq_emulation_bench.py",  # the emulated board's testbench (cocotb)
    "runtime/devices/pynq_emulation_logic.py",  # the process that runs that testbench
    "runtime/sweep.py",  # design-space sweeps (pandas)
    "simulator/plots.py",  # matplotlib
)
_RUNTIME_DIR = "vtaforge_board"
_MODEL = "model.vtaf"
_SCRIPT = "run_model.py"


@dataclass(frozen=True)
class Bundle:
    """A written bundle: its folder, the model, the overlay's ``.bit`` (None without one) and
    the script that runs the model."""

    directory: Path
    model: Path
    bitstream: Path | None
    script: Path


def write_bundle(
    board: Board,
    model_path: Path,
    directory: Path,
    *,
    bitstream_dir: Path | None = None,
    emulated: bool = False,
) -> Bundle:
    """Write the bundle of the compiled model at ``model_path`` for ``board`` into
    ``directory`` (see the module docstring), with the overlay in ``bitstream_dir`` or an
    ``emulated`` one (not both); FpgaError for a board without a Zynq PS, a model whose
    accelerator does not fit the board, or a ``bitstream_dir`` without the overlay of the
    model's configuration."""
    from runtime.model import load_model

    if emulated and bitstream_dir is not None:
        raise FpgaError("a bundle takes the overlay of --bitstream or an emulated one, not both")
    if board.ps is None:
        raise FpgaError(f"board {board.name} ({board.title}) has no processor to run a model")
    cfg = load_model(model_path).cfg
    if not part(board.resource_part).takes_master(cfg.axi_width):
        raise FpgaError(
            f"the model's accelerator ({cfg.fingerprint}) has a {cfg.axi_width}-bit AXI master, "
            f"which {board.name}'s PS does not take"
        )
    overlay = None if bitstream_dir is None else _overlay_of(bitstream_dir, cfg.fingerprint)
    directory.mkdir(parents=True, exist_ok=True)
    shutil.copyfile(model_path, directory / _MODEL)
    bitstream = None
    if overlay is not None:
        (directory / "overlay").mkdir(exist_ok=True)
        for source in overlay:
            shutil.copyfile(source, directory / "overlay" / source.name)
        bitstream = directory / "overlay" / overlay[0].name
    elif emulated:
        from runtime.devices.pynq_emulation import write_overlay  # builds the Verilated RTL

        (directory / "overlay").mkdir(exist_ok=True)
        bitstream = write_overlay(cfg, directory / "overlay")
    _write_runtime(directory / _RUNTIME_DIR)
    script = directory / _SCRIPT
    script.write_text(_script_text(bitstream.name if bitstream else None))
    (directory / "README.md").write_text(
        _readme_text(board, cfg.fingerprint, bitstream, emulated=emulated)
    )
    return Bundle(directory, directory / _MODEL, bitstream, script)


def _overlay_of(folder: Path, fingerprint: str) -> tuple[Path, Path]:
    """The ``.bit``/``.hwh`` pair of configuration ``fingerprint`` in ``folder`` or its
    ``overlay/`` (where ``vtaforge fpga build`` exports it)."""
    name = f"vtaforge_{fingerprint}"
    for where in (folder, folder / "overlay"):
        pair = (where / f"{name}.bit", where / f"{name}.hwh")
        if all(path.is_file() for path in pair):
            return pair
    raise FpgaError(
        f"--bitstream {folder} holds no {name}.bit with its {name}.hwh (in it or in its "
        "overlay/): build the overlay of the model's configuration with `vtaforge fpga build`"
    )


def _write_runtime(target: Path) -> None:
    """The board runtime's sources into ``target`` (module docstring)."""
    import threadpoolctl

    skipped = {Path(path) for path in HOST_ONLY}
    for package in ("isa", "simulator", "runtime"):
        spec = importlib.util.find_spec(package)  # its folder; fpga imports no simulator
        assert spec is not None and spec.origin is not None, package
        root = Path(spec.origin).parent
        for source in sorted(root.rglob("*.py")):
            relative = source.relative_to(root.parent)
            if relative in skipped or "__pycache__" in relative.parts:
                continue
            destination = target / relative
            destination.parent.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(source, destination)
    shutil.copyfile(threadpoolctl.__file__, target / "threadpoolctl.py")
    version = ".".join(map(str, BOARD_PYTHON))
    (target / "pyproject.toml").write_text(
        "[project]\n"
        'name = "vtaforge-board"\n'
        'version = "0"\n'
        'description = "The vtaforge runtime a PYNQ board runs (sources only)"\n'
        f'requires-python = ">={version}"\n'
        'dependencies = ["numpy"]\n\n'
        "[tool.setuptools]\n"
        'packages = {find = {include = ["isa*", "simulator*", "runtime*"]}}\n'
        'py-modules = ["threadpoolctl"]\n'
    )


def _script_text(bitstream: str | None) -> str:
    """``run_model.py``: ``vtaforge run`` on the model beside it, on the board's accelerator
    (the overlay ``bitstream`` in ``overlay/``) unless ``--device`` says otherwise."""
    overlay = "None" if bitstream is None else repr(f"overlay/{bitstream}")
    return f'''#!/usr/bin/env python3
"""Run model.vtaf: python3 run_model.py --input X.npy [-o OUT.npz] [--report] [--device fsim]
(every option of `vtaforge run`; see README.md)."""

import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE / {_RUNTIME_DIR!r}))

from runtime.cli import main  # noqa: E402 (the runtime beside this script)

OVERLAY = {overlay}
arguments = sys.argv[1:]
if "--device" not in arguments:
    if OVERLAY is None:
        sys.exit("this bundle has no overlay: give --device fsim, or package it with --bitstream")
    arguments = ["--device", "pynq", "--bitstream", str(HERE / OVERLAY), *arguments]
sys.exit(main(["run", str(HERE / {_MODEL!r}), *arguments]))
'''


def _readme_text(board: Board, fingerprint: str, bitstream: Path | None, *, emulated: bool) -> str:
    """How to copy the bundle to ``board`` and run it (or, ``emulated``, to run it here)."""
    version = ".".join(map(str, BOARD_PYTHON))
    if emulated:
        return f"""# A vtaforge model for the {board.title}, on an emulated board

The accelerator configuration is `{fingerprint}`; `overlay/` holds an emulated overlay: its
logic is the Verilated RTL built on the machine that packaged it, and that machine's Python
runs it. Run the model there, as a board would, on any Python >= {version} with numpy:
`python3 run_model.py --emulate --input x.npy -o out.npz --report` (the runtime and the
`pynq` driver run in this Python; the logic in its own process). `--device fsim` runs the
functional simulator instead, for a reference to compare with.
"""
    overlay = (
        f"`overlay/{bitstream.name}` (with its `.hwh`)"
        if bitstream is not None
        else "no overlay (package again with `--bitstream DIR` to add one)"
    )
    return f"""# A vtaforge model for the {board.title}

The accelerator configuration is `{fingerprint}`; this bundle holds {overlay}.

1. Copy the folder to the board (a PYNQ v3 image, Python {version} or newer, numpy and pynq
   installed): `scp -r THIS_FOLDER xilinx@pynq:~/model`.
2. On the board, as root (PYNQ needs it for the overlay and physical memory):
   `sudo python3 run_model.py --input x.npy -o out.npz --report`.

`--device fsim` runs the same model on the functional simulator instead (any machine with
Python {version} and numpy), for a reference to compare the board's outputs with.
"""
