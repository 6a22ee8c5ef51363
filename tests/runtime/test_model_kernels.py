"""A compiled model is data (issue 29): its file holds no machine code, the host builds the CPU
steps' kernels from their descriptions through the registered kernel builder (the compiler's
LLVM backend), keeps them in a cache keyed by the description and the target, and runs the
numpy kernels where no builder is installed; both give the same bytes."""

from __future__ import annotations

import subprocess
import sys
import zipfile
from io import BytesIO

import numpy as np
import pytest

from compiler.model.cpu_kernels import LLVM_KERNELS
from runtime.model import KERNEL_GROUP, Model, ModelImage
from runtime.model import kernels as kernels_module
from tests.runtime.vtaf_files import tiny_model


class Recording:
    """The LLVM builder, counting its builds; ``target`` may be another host's."""

    def __init__(self, target: str | None = None) -> None:
        self.ops = LLVM_KERNELS.ops
        self.builds: list[str] = []
        self._target = target

    def target(self) -> str:
        return self._target or LLVM_KERNELS.target()

    def build(self, op, inputs, output, attrs):
        self.builds.append(op)
        return LLVM_KERNELS.build(op, inputs, output, attrs)


def _model(monkeypatch, builder, cache) -> Model:
    monkeypatch.setattr("runtime.model.executor.kernel_builder", lambda: builder)
    return Model(ModelImage.from_bytes(tiny_model().data), kernel_cache=cache)


def test_the_file_holds_no_machine_code():
    with zipfile.ZipFile(BytesIO(tiny_model().data)) as archive:
        names = archive.namelist()
        assert all(i.compress_type == zipfile.ZIP_STORED for i in archive.infolist())
    assert {n for n in names if not n.startswith("programs/")} == {"manifest.json", "params.bin"}
    assert all(archive_name.endswith(".bin") for archive_name in names if "/" in archive_name)


def test_kernels_are_built_once_per_description_and_target(monkeypatch, tmp_path):
    model = tiny_model()
    first = Recording()
    run = _model(monkeypatch, first, tmp_path).run(model.x, device="fsim")
    assert sorted(first.builds) == ["DequantizeLinear", "Pack", "QuantizeLinear", "Unpack"]
    np.testing.assert_array_equal(run.output, model.expected)
    cpu = {s.node: s.kernel for s in run.report.steps if s.device == "cpu"}
    assert sorted(k for k in cpu.values()) == ["llvm"] * 4 + ["numpy"]  # Softmax: numpy's
    again = Recording()
    _model(monkeypatch, again, tmp_path)
    assert again.builds == []  # every kernel from the cache
    other = Recording(target="armv7a-linux-gnueabihf cortex-a9 +neon")
    _model(monkeypatch, other, tmp_path)
    assert len(other.builds) == 4  # another target's kernels are other code


class Damaging(Recording):
    """A builder whose libraries come out damaged (as a truncated cache entry reads)."""

    def build(self, op, inputs, output, attrs):
        self.builds.append(op)
        return b"\x7fELF damaged"


def test_a_kernel_that_does_not_load_falls_back_to_numpy(monkeypatch, tmp_path):
    model = tiny_model()
    loaded = _model(monkeypatch, Damaging(target="a damaged build"), tmp_path)
    assert set(loaded.fallbacks) == {"x_int8", "pack_x_int8", "unpack_fc", "fc_float"}
    assert all(why.startswith("OSError") for why in loaded.fallbacks.values())
    run = loaded.run(model.x, device="fsim")
    np.testing.assert_array_equal(run.output, model.expected)
    assert {s.kernel for s in run.report.steps if s.device == "cpu"} == {"numpy"}


def test_numpy_kernels_alone_give_the_same_bytes():
    model = tiny_model()
    image = ModelImage.from_bytes(model.data)
    native = Model(image).run(model.x, device="fsim")
    plain = Model(image, native_kernels=False).run(model.x, device="fsim")
    np.testing.assert_array_equal(native.output, plain.output)
    assert {s.kernel for s in plain.report.steps if s.device == "cpu"} == {"numpy"}


def test_without_the_compiler_installed_the_numpy_kernels_run(tmp_path):
    """In a process where the compiler cannot be imported (a board), no builder loads and the
    same file gives the same output."""
    model = tiny_model()
    (tmp_path / "m.vtaf").write_bytes(model.data)
    np.save(tmp_path / "x.npy", model.x)
    code = (
        "import sys, numpy as np\n"
        "sys.modules['compiler'] = None  # as on a board: the package is not there\n"
        "from runtime.model import load_model\n"
        "from runtime.model.kernels import kernel_builder\n"
        "assert kernel_builder() is None\n"
        f"run = load_model({str(tmp_path / 'm.vtaf')!r}).run(np.load({str(tmp_path / 'x.npy')!r}),"
        " device='fsim')\n"
        "assert {s.kernel for s in run.report.steps if s.device == 'cpu'} == {'numpy'}\n"
        f"np.save({str(tmp_path / 'out.npy')!r}, run.output)\n"
    )
    subprocess.run([sys.executable, "-c", code], check=True)
    np.testing.assert_array_equal(np.load(tmp_path / "out.npy"), model.expected)


def test_the_compiler_registers_its_builder():
    from importlib.metadata import entry_points

    (entry,) = entry_points(group=KERNEL_GROUP)
    assert entry.load() is LLVM_KERNELS
    assert kernels_module.kernel_builder() is LLVM_KERNELS


@pytest.mark.parametrize("moved", [True, False])
def test_the_cache_is_where_the_variable_says(monkeypatch, tmp_path, moved):
    if moved:
        monkeypatch.setenv(kernels_module.CACHE_VARIABLE, str(tmp_path))
        assert kernels_module.kernel_cache_dir() == tmp_path
    else:
        monkeypatch.delenv(kernels_module.CACHE_VARIABLE, raising=False)
        assert kernels_module.kernel_cache_dir().parts[-3:] == (".cache", "vtaforge", "kernels")


def test_an_attribute_the_kernels_need_is_required_at_load():
    """An attribute whose record field has a default but that the kernels take without one
    (re-signed, as an adversary can): refused at load, before any kernel is built or run."""
    from runtime.model import ModelFormatError
    from tests.runtime.vtaf_files import Parts

    parts = Parts.of(tiny_model().data)
    step = next(s for s in parts.manifest["steps"] if s["op"] == "DequantizeLinear")
    del step["attrs"]["zero_point"]
    with pytest.raises(ModelFormatError, match="DequantizeLinear needs the attribute 'zero_point'"):
        ModelImage.from_bytes(parts.to_bytes(resign=True))
