"""``vtaforge fpga package``: the bundle a PYNQ board runs a compiled model from (the model, the
overlay, the board runtime as sources, a script), and the bundle run under the board's Python
(3.10, the PYNQ v3 images') in a clean virtual environment holding numpy alone: no compiler, no
llvmlite, no Amaranth, nothing compiled for the host."""

from __future__ import annotations

import glob
import shutil
import subprocess
from pathlib import Path

import numpy as np
import pytest

from fpga import BOARD_PYTHON, FpgaError, board, write_bundle
from fpga.package import HOST_ONLY
from runtime.cli import main
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


def test_the_bundle_runs_under_the_boards_python_with_numpy_alone(model_file, tmp_path):
    python = _board_python()
    assert python is not None, (
        f"no Python {_BOARD_PYTHON} here to stand in for the board's (PYNQ v3 images'): install "
        f"one (pyenv install {_BOARD_PYTHON}) so that the board runtime's Python is tested"
    )
    bundle = write_bundle(board("pynq-z2"), model_file, tmp_path / "bundle")
    venv = tmp_path / "venv"
    subprocess.run([python, "-m", "venv", str(venv)], check=True)
    pip = [str(venv / "bin" / "python"), "-m", "pip", "install", "-q", "numpy"]
    subprocess.run(pip, check=True, capture_output=True)
    model = tiny_model()
    np.save(tmp_path / "x.npy", model.x)
    run = ["--device", "fsim", "--input", str(tmp_path / "x.npy"), "-o", str(tmp_path / "out.npz")]
    done = subprocess.run(
        [str(venv / "bin" / "python"), str(bundle.script), *run],
        capture_output=True,
        text=True,
        cwd=tmp_path,
    )
    assert done.returncode == 0, done.stderr
    installed = subprocess.run(
        [str(venv / "bin" / "python"), "-m", "pip", "list", "--format=freeze"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout.lower()
    assert not any(name in installed for name in ("llvmlite", "amaranth", "onnx", "torch"))
    (output,) = np.load(tmp_path / "out.npz").values()
    np.testing.assert_array_equal(output, model.expected)  # the host's fsim, bit for bit
