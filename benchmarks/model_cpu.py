"""Whole float32 models on the CPU: vtaforge's ``target="llvm"`` models beside PyTorch eager and
onnxruntime, batch 1, one thread (or ``--threads N``).

Models (seeded weights, written in the project): torchvision's ResNet-18
(:mod:`compiler.zoo.resnet`) and MobileNetV2 (:mod:`compiler.zoo.mobilenet`) at full width and
224x224, and a 2-layer BERT-base-shaped encoder at 128 tokens (:mod:`compiler.zoo.bert`);
``--quick``: the reduced ResNet-18 and MobileNetV2 of ``tests/compiler/model/zoo_models.py`` at
32x32 instead. Each is compiled once with ``compile_model(..., target="llvm")`` and run by
``Model.run(x, device="cpu")`` twice over: with this host's LLVM kernels (built into a fresh
cache, the build time reported) and with the numpy kernels only (``native_kernels=False``).
Peers in the same run: PyTorch eager (``torch.set_num_threads(N)``, ``no_grad``) and onnxruntime
(CPUExecutionProvider, ``intra_op_num_threads=N``) on the same module and input, their idle
threads sleeping rather than spinning (``OMP_WAIT_POLICY=PASSIVE``,
``OPENBLAS_THREAD_TIMEOUT=4``, onnxruntime's ``allow_spinning`` off: a spinning peer would hold
the core the next runner needs); ours runs with
``threads=N`` (the LLVM kernels' parallel loops), numpy with N BLAS threads. The four are
timed interleaved, one call each per round (ours first in even rounds, last in odd ones), and
the median of the rounds is reported with each peer's time over ours; every output is checked
against PyTorch's (1e-4 relative to its largest magnitude). Then the per-operator split of
both vtaforge runs (the run report's per-step seconds, median over the rounds). With ``--tvm
PYTHON`` (the interpreter of an environment where ``apache-tvm`` and ``onnx`` are installed),
Apache TVM's default pipeline, untuned, is a peer too: the same ONNX file built by
``tvm.compile`` for ``llvm`` (``_tvm_peer.py``, in its own process, ``TVM_NUM_THREADS=N``, not
interleaved; at most 3 rounds), its output checked like the others'.

The output names the CPU, its vector width and the load average before and after (timings on
a shared machine are noisy). Run: ``python benchmarks/model_cpu.py [--rounds N] [--quick]
[--threads N] [--tvm PYTHON]``
"""

from __future__ import annotations

import argparse
import collections
import json
import os
import subprocess
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

#: Interleaved runners share the cores: a peer's idle threads must sleep, not spin on a core
#: the next runner needs (OpenMP's, PyTorch's, and OpenBLAS's, numpy's, here: 2**4 cycles
#: rather than 2**28; onnxruntime's: its session option). Measured on ResNet-18 at two
#: threads: ours 35.9 ms right after a numpy run, 21-24 ms with these.
os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")
os.environ.setdefault("OPENBLAS_THREAD_TIMEOUT", "4")

import _harness  # noqa: F401  (puts the repository on sys.path)
import numpy as np
import onnxruntime as ort
import torch
from _harness import cpu_name, report
from threadpoolctl import threadpool_limits

from compiler.codegen import Target
from compiler.model import compile_model
from compiler.zoo import onnx_bytes
from compiler.zoo.bert import bert_encoder
from compiler.zoo.mobilenet import mobilenet_v2 as full_mobilenet_v2
from compiler.zoo.resnet import resnet18 as full_resnet18
from runtime.model import Model
from tests.compiler.model.zoo_models import mobilenet_v2, random_like, resnet18


def _models(quick: bool) -> list[tuple[str, torch.nn.Module, list[np.ndarray]]]:
    rng = np.random.default_rng(0)
    if quick:
        small = (("resnet18 (zoo, 32x32)", resnet18), ("mobilenet_v2 (zoo, 32x32)", mobilenet_v2))
        return [(name, *_first(factory())) for name, factory in small]
    image = [rng.standard_normal((1, 3, 224, 224)).astype(np.float32)]
    ids = rng.integers(0, 8192, (1, 128)).astype(np.int64)
    mask = np.ones((1, 128), np.int64)
    mask[:, -16:] = 0  # the last 16 tokens padding
    return [
        ("resnet18 (224x224)", full_resnet18(), image),
        ("mobilenet_v2 (224x224)", full_mobilenet_v2(), image),
        ("bert encoder (2 layers, 128 tokens)", bert_encoder(), [ids, mask]),
    ]


def _first(made: tuple[torch.nn.Module, tuple]) -> tuple[torch.nn.Module, list[np.ndarray]]:
    module, example = made
    return module, random_like(example, 1)


def _session(
    module: torch.nn.Module, x: list[np.ndarray], threads: int
) -> tuple[ort.InferenceSession, list[str], bytes]:
    options = ort.SessionOptions()
    options.intra_op_num_threads = threads
    options.inter_op_num_threads = 1
    options.add_session_config_entry("session.intra_op.allow_spinning", "0")
    names = [f"x{k}" for k in range(len(x))]
    model = onnx_bytes(module, *x, input_names=names)
    session = ort.InferenceSession(model, options, providers=["CPUExecutionProvider"])
    return session, names, model


def _interleaved(runners: dict[str, Callable[[], object]], rounds: int) -> dict[str, list[float]]:
    """Seconds per call of each runner, ``rounds`` each, one call of each per round."""
    times: dict[str, list[float]] = {name: [] for name in runners}
    names = list(runners)
    for k in range(rounds):
        for name in names if k % 2 == 0 else reversed(names):
            started = time.perf_counter()
            runners[name]()
            times[name].append(time.perf_counter() - started)
    return times


def _split(model: Model, x: list[np.ndarray], rounds: int, threads: int) -> dict[str, float]:
    """Median milliseconds per operator (the steps of one kind summed), and outside the steps,
    over ``rounds`` runs."""
    per_round: dict[str, list[float]] = collections.defaultdict(list)
    for _ in range(rounds):
        totals: dict[str, float] = collections.defaultdict(float)
        started = time.perf_counter()
        steps = model.run(x, device="cpu", threads=threads).report.steps
        whole = time.perf_counter() - started
        for step in steps:
            totals[step.op] += step.wall_seconds
        # the executor's own time: the DRAM image, the parameters' copy, the steps' loop
        totals["(outside the steps)"] = whole - sum(s.wall_seconds for s in steps)
        for op, seconds in totals.items():
            per_round[op].append(seconds)
    return {op: float(np.median(v)) * 1e3 for op, v in per_round.items()}


def _bench(
    name: str,
    module: torch.nn.Module,
    x: list[np.ndarray],
    rounds: int,
    threads: int,
    cache: Path,
    tvm: str | None,
):
    compiled = compile_model(module, calibration=[x], target="llvm")
    started = time.perf_counter()
    native = Model(compiled.image, kernel_cache=cache)
    build = time.perf_counter() - started
    numpy_only = Model(compiled.image, native_kernels=False)
    session, names, onnx_model = _session(module, x, threads)
    xt = [torch.from_numpy(a) for a in x]
    with torch.no_grad():
        expected = module(*xt).numpy()
    runners = {
        "vtaforge llvm": lambda: native.run(x, device="cpu", threads=threads).output,
        "vtaforge numpy": lambda: numpy_only.run(x, device="cpu").output,
        "pytorch": lambda: module(*xt).numpy(),
        "onnxruntime": lambda: session.run(None, dict(zip(names, x, strict=True)))[0],
    }
    scale = float(np.abs(expected).max())
    with torch.no_grad():
        for peer, run in runners.items():  # warm up, and check
            got = run()
            error = float(np.abs(got - expected).max()) / scale
            assert error <= 1e-4, f"{name}: {peer} differs from PyTorch by {error:.2e}"
        times = _interleaved(runners, rounds)
    medians = {peer: float(np.median(t)) * 1e3 for peer, t in times.items()}
    if tvm is not None:
        feeds = dict(zip(names, x, strict=True))
        got, medians["tvm (untuned)"] = _tvm(tvm, onnx_model, feeds, rounds, threads)
        error = float(np.abs(got - expected).max()) / scale
        assert error <= 1e-4, f"{name}: tvm differs from PyTorch by {error:.2e}"
    ours = medians["vtaforge llvm"]
    rows = [
        [name, peer, ms, medians[peer] / ours if peer != "vtaforge llvm" else 1.0]
        for peer, ms in medians.items()
    ]
    kernels = collections.Counter(s.kernel for s in native.run(x, device="cpu").report.steps)
    splits = {
        "llvm": _split(native, x, rounds, threads),
        "numpy": _split(numpy_only, x, rounds, 1),
    }
    return rows, build, dict(kernels), splits, len(compiled.image.steps)


def _tvm(
    python: str, model: bytes, inputs: dict[str, np.ndarray], rounds: int, threads: int
) -> tuple[np.ndarray, float]:
    """Apache TVM's output and median milliseconds (``_tvm_peer.py`` run by ``python``)."""
    with tempfile.TemporaryDirectory() as scratch:
        folder = Path(scratch)
        (folder / "model.onnx").write_bytes(model)
        np.savez(folder / "inputs.npz", **inputs)
        peer = Path(__file__).with_name("_tvm_peer.py")
        files = [folder / "model.onnx", folder / "inputs.npz", min(rounds, 3), folder / "out.npy"]
        command = [python, str(peer), *map(str, files)]
        environment = {**os.environ, "TVM_NUM_THREADS": str(threads)}
        done = subprocess.run(command, capture_output=True, text=True, env=environment, check=True)
        return np.load(folder / "out.npy"), json.loads(done.stdout.splitlines()[-1])["ms"]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rounds", type=int, default=21, help="timed calls of each (median)")
    parser.add_argument("--quick", action="store_true", help="the small models only")
    parser.add_argument("--threads", type=int, default=1, help="threads of every runner")
    parser.add_argument("--tvm", metavar="PYTHON", help="a Python with apache-tvm: TVM as a peer")
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    load_before = os.getloadavg()
    rows, meta = [], {}
    with threadpool_limits(limits=args.threads), tempfile.TemporaryDirectory() as scratch:
        for name, module, x in _models(args.quick):
            found, build, kernels, splits, steps = _bench(
                name, module, x, args.rounds, args.threads, Path(scratch), args.tvm
            )
            rows += found
            meta[name] = {"steps": steps, "kernels": kernels, "kernel_build_s": build}
            meta[name]["per_op_ms"] = splits
            print(f"-- {name}: {steps} steps, kernels {kernels}, built in {build:.1f} s; per op:")
            ops = sorted(set(splits["llvm"]) | set(splits["numpy"]))
            for op in ops:
                llvm, plain = splits["llvm"].get(op), splits["numpy"].get(op)
                cells = [f"{v:8.3f} ms" if v is not None else " " * 11 for v in (llvm, plain)]
                print(f"   {op:<28} llvm {cells[0]}   numpy {cells[1]}")
    load = (load_before, os.getloadavg())
    host = Target.host()
    vector = f"{host.model.lanes} x float32 ({host.cpu})"
    report(
        "model_cpu",
        ["model", "runner", "ms (median)", "runner / vtaforge llvm"],
        rows,
        cpu=cpu_name(),
        vector=vector,
        threads=args.threads,
        rounds=args.rounds,
        load_average_before_after=load,
        torch=torch.__version__,
        onnxruntime=ort.__version__,
        numpy=np.__version__,
        models=meta,
    )
    print(
        f"CPU: {cpu_name()}, vector {vector}; {args.threads} thread(s); load average before, "
        f"after: {load}"
    )


if __name__ == "__main__":
    main()
