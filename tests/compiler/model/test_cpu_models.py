"""Whole models on the CPU (issue 29): ``compile_model(..., target="llvm")`` makes every node a
float32 CPU step, which runs the LLVM kernels this host builds (or the numpy kernels) and
equals the float reference; an accelerator model's float CPU steps use the same kernels."""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor

import numpy as np
import pytest
import torch

from compiler.errors import CompileError
from compiler.model import compile_model
from compiler.zoo import onnx_bytes, run_torch
from runtime.cli import main
from runtime.devices import DeviceError
from runtime.model import Model, load_model
from tests.compiler.model.graphs import residual_cnn, samples
from tests.compiler.model.zoo_models import mobilenet_v2, random_like, resnet18


def _relative(got: np.ndarray, want: np.ndarray) -> float:
    return float(np.abs(got - want).max() / np.abs(want).max())


@pytest.mark.parametrize("factory", [resnet18, mobilenet_v2], ids=["resnet18", "mobilenet_v2"])
def test_a_float_model_for_the_cpu_equals_its_float_reference(factory, tmp_path):
    module, example = factory()
    x = random_like(example, 1)[0]
    compiled = compile_model(module, calibration=[x], target="llvm")
    steps = compiled.image.steps
    assert {s.device for s in steps} == {"cpu"}
    assert not any(s.op.startswith(("Q", "Dequantize")) for s in steps)  # float32 throughout
    native = Model(compiled.image, kernel_cache=tmp_path)
    assert native.fallbacks == {}
    run = native.run(x, device="cpu")
    assert run.report.device == "cpu"
    kernels = {(s.op, s.kernel) for s in run.report.steps}
    assert {k for _, k in kernels} == {"llvm"}, kernels  # every operator of these models
    reference = compiled.reference(x)[0]
    assert _relative(run.output, reference) <= 1e-4
    assert _relative(run.output, run_torch(module, x)) <= 1e-4
    numpy_only = Model(compiled.image, native_kernels=False).run(x, device="cpu")
    assert {s.kernel for s in numpy_only.report.steps} == {"numpy"}
    np.testing.assert_array_equal(numpy_only.output, reference)
    assert _relative(run.output, numpy_only.output) <= 1e-4


def test_the_cpu_model_saves_runs_from_its_file_and_on_any_device_name(tmp_path, monkeypatch):
    monkeypatch.setenv("VTAFORGE_KERNEL_CACHE", str(tmp_path / "kernels"))
    graph = residual_cnn(3, channels=8, size=8)
    x = samples(graph, 1)[0]
    compiled = compile_model(graph, "tiny", calibration=[x], target="llvm")
    assert compiled.graph.node("softmax").op.value == "Softmax"  # the float graph, no copy
    compiled.save(tmp_path / "m.vtaf")
    model = load_model(tmp_path / "m.vtaf")
    on_cpu = model.run(x, device="cpu")
    kernels = {s.op: s.kernel for s in on_cpu.report.steps}
    assert kernels["ConvNCHWc"] == "llvm" and kernels["Softmax"] == "numpy"  # no kernel declared
    assert _relative(on_cpu.output, compiled.reference(x)[0]) <= 1e-4
    np.testing.assert_array_equal(model.run(x, device="fsim").output, on_cpu.output)
    with pytest.raises(DeviceError, match="takes no options"):
        model.run(x, device="cpu", seed=1)


def test_an_accelerator_model_refuses_the_cpu_device():
    graph = residual_cnn(4, channels=8, size=8)
    compiled = compile_model(graph, "default", calibration=samples(graph, 2))
    with pytest.raises(DeviceError, match="accelerator steps"):
        compiled.run(samples(graph, 1)[0], device="cpu")


@pytest.mark.parametrize(
    ("target", "words"),
    [
        ("cuda", "unknown target 'cuda'"),
        ("accel -mcpu=haswell", "unknown target"),
        ("", "unknown target"),
        ("llvm -mfoo=1", "unknown target option '-mfoo=1'"),
        ("llvm -mcpu=pentium9", "unknown x86-64 CPU"),
    ],
)
def test_unknown_targets_are_refused_before_compiling(target, words):
    graph = residual_cnn(0, channels=4, size=8)
    with pytest.raises(CompileError, match=words):
        compile_model(graph, calibration=samples(graph, 1), target=target)


@pytest.mark.parametrize(("target", "block"), [("haswell", 16), ("skylake-avx512", 32)])
def test_convolutions_are_blocked_for_the_targets_vector_width(target, block, tmp_path):
    """Two vectors of the named CPU's float lanes per channel block (8 on AVX2, 16 on
    AVX-512), whatever this host has; the model runs here with those blocks, natively and in
    numpy, and equals the float model."""
    module = torch.nn.Sequential(
        torch.nn.Conv2d(64, 64, 3, padding=1), torch.nn.ReLU(), torch.nn.Conv2d(64, 64, 3)
    ).eval()
    x = np.random.default_rng(0).standard_normal((1, 64, 10, 10)).astype(np.float32)
    compiled = compile_model(module, calibration=[x], target=f"llvm -mcpu={target}")
    steps, tensors = compiled.image.steps, compiled.image.tensors
    # the ReLU is fused into the convolution before it (its only reader)
    assert [s.op for s in steps] == ["ToNCHWc", "ConvNCHWc", "ConvNCHWc", "FromNCHWc"]
    assert steps[1].attrs["lo"] == 0.0 and steps[2].attrs["lo"] == -np.inf
    assert steps[0].attrs["block"] == block
    first = tensors[steps[1].inputs[1]].shape
    assert first[1:5] == (64 // block, 3, 3, block) and first[0] * first[5] == 64
    # the first convolution's output block (two or four vectors) is what the second reads
    between = tensors[steps[1].outputs[0]].shape[4]
    assert between in (block, 2 * block)
    assert tensors[steps[2].inputs[1]].shape[1:5] == (64 // between, 3, 3, between)
    want = run_torch(module, x)
    native = Model(compiled.image, kernel_cache=tmp_path).run(x, device="cpu")
    assert {s.kernel for s in native.report.steps} == {"llvm"}
    assert _relative(native.output, want) <= 1e-4
    plain = Model(compiled.image, native_kernels=False).run(x, device="cpu")
    assert _relative(plain.output, want) <= 1e-4


def test_float_steps_of_an_accelerator_model_run_llvm_kernels(tmp_path):
    """The kept-float convolution runs its LLVM kernel (within the float tolerance of numpy's);
    where its requantised values come out the same (they do on this seed, but sums in another
    order may move one value by one step on another CPU), the whole run equals the reference."""
    graph = residual_cnn(1, channels=8)
    model = compile_model(graph, "default", calibration=samples(graph, 2), keep_float=["conv2"])
    x = samples(graph, 1, seed=4)[0]
    seen: dict[str, dict[str, np.ndarray]] = {"llvm": {}, "numpy": {}}

    def keeping(kind):
        def after(step, dram):
            seen[kind][step.node] = model.image.tensors[step.outputs[0]].view(dram).copy()

        return after

    run = Model(model.image, kernel_cache=tmp_path).run(x, "fsim", after_step=keeping("llvm"))
    report = {s.node: s for s in run.report.steps}
    assert report["conv2"].op == "Conv" and report["conv2"].kernel == "llvm"
    assert report["conv1"].device == "accel"
    numpy_only = Model(model.image, native_kernels=False)
    plain = numpy_only.run(x, "fsim", after_step=keeping("numpy"))
    assert {s.node: s.kernel for s in plain.report.steps}["conv2"] == "numpy"
    np.testing.assert_array_equal(plain.output, model.reference(x)[0])
    conv2 = seen["numpy"]["conv2"]
    np.testing.assert_allclose(seen["llvm"]["conv2"], conv2, atol=1e-5 * np.abs(conv2).max())
    steps = np.abs(seen["llvm"]["conv2_int8"].astype(int) - seen["numpy"]["conv2_int8"])
    assert steps.max() <= 1
    if not steps.any():
        np.testing.assert_array_equal(run.output, model.reference(x)[0])


def test_vtaforge_compile_target_llvm(tmp_path, capsys, monkeypatch):
    monkeypatch.setenv("VTAFORGE_KERNEL_CACHE", str(tmp_path / "kernels"))
    module = torch.nn.Sequential(
        torch.nn.Conv2d(3, 8, 3, padding=1), torch.nn.ReLU(), torch.nn.AdaptiveAvgPool2d(1)
    ).eval()
    x = np.random.default_rng(0).standard_normal((1, 3, 8, 8)).astype(np.float32)
    (tmp_path / "m.onnx").write_bytes(onnx_bytes(module, x, input_names=["x"]))
    out = tmp_path / "m.vtaf"
    assert main(["compile", str(tmp_path / "m.onnx"), "--target", "llvm", "-o", str(out)]) == 0
    assert "0 on the accelerator" in capsys.readouterr().out
    run = load_model(out).run(x, device="cpu")
    assert {s.kernel for s in run.report.steps} == {"llvm"}
    assert _relative(run.output, run_torch(module, x)) <= 1e-4
    np.save(tmp_path / "x.npy", x)
    saved = tmp_path / "y.npz"
    argv = ["run", str(out), "--device", "cpu", "--input", str(tmp_path / "x.npy")]
    assert main([*argv, "-o", str(saved)]) == 0
    assert "steps on cpu" in capsys.readouterr().out
    np.testing.assert_array_equal(next(iter(np.load(saved).values())), run.output)
    assert main([*argv, "--trace", str(tmp_path / "t.json")]) == 1
    assert "need a timed device" in capsys.readouterr().err


@pytest.mark.parametrize("target", ["llvm", "accel"])
def test_runs_reuse_one_image_without_carrying_anything_over(target, tmp_path):
    """A model's runs (which reuse one DRAM image per thread) give what a fresh model gives
    each input: one after another, one inside another (from a step's callback) and from two
    threads at once."""
    graph = residual_cnn(5, channels=8, size=8)
    xs = samples(graph, 4, seed=7)
    compiled = compile_model(graph, "tiny", calibration=xs[:2], target=target)
    device = "cpu" if target == "llvm" else "fsim"
    fresh = [Model(compiled.image, kernel_cache=tmp_path).run(x, device).output for x in xs]
    model = Model(compiled.image, kernel_cache=tmp_path)
    for x, want in zip(xs, fresh, strict=True):
        np.testing.assert_array_equal(model.run(x, device).output, want)
    inner: list[np.ndarray] = []

    def nested(step, dram):
        if not inner:
            inner.append(model.run(xs[1], device).output)

    np.testing.assert_array_equal(model.run(xs[0], device, after_step=nested).output, fresh[0])
    np.testing.assert_array_equal(inner[0], fresh[1])
    with ThreadPoolExecutor(2) as pool:
        outputs = list(pool.map(lambda x: model.run(x, device).output, xs * 3))
    for got, want in zip(outputs, fresh * 3, strict=True):
        np.testing.assert_array_equal(got, want)


@pytest.mark.parametrize("launcher", ["native", "python"])
def test_threads_share_the_kernels_parallel_loops_with_the_same_result(
    launcher, tmp_path, monkeypatch
):
    """``run(..., threads=2)`` hands the kernels a launcher (the native one, or the Python one
    whose splits are counted here) and gives one thread's bytes; a bad count is a
    ModelInputError."""
    from runtime import parallel
    from runtime.model import ModelInputError

    if launcher == "python":
        monkeypatch.setenv("VTAFORGE_PYTHON_LAUNCHER", "1")
    graph = residual_cnn(6, channels=16, size=8)
    x = samples(graph, 1)[0]
    compiled = compile_model(graph, "tiny", calibration=[x], target="llvm")
    model = Model(compiled.image, kernel_cache=tmp_path)
    expected = parallel.ParallelLauncher if launcher == "python" else parallel.NativeLauncher
    assert isinstance(model._launcher, expected)
    one = model.run(x, device="cpu").output
    split: list[tuple[int, int]] = []
    real = parallel.chunks

    def counted(extent: int, parts: int) -> list[tuple[int, int]]:
        split.append((extent, parts))
        return real(extent, parts)

    monkeypatch.setattr(parallel, "chunks", counted)
    two = model.run(x, device="cpu", threads=2).output
    if launcher == "python":
        assert split and all(parts == 2 for _, parts in split)
    np.testing.assert_array_equal(two, one)
    for bad in (0, -1, 1.5, True):
        with pytest.raises(ModelInputError, match="threads must be a positive integer"):
            model.run(x, device="cpu", threads=bad)
