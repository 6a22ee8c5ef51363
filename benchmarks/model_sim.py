"""Whole-network simulation: ResNet-18 compiled for the default configuration and run on the
functional simulator (``fsim``) and the cycle-level simulator (``sim``), with its cycles.

Reports the wall time of each run (target on ``sim``: under 10 s; each a first run, with the
simulators' memos cleared before it: ``simulator.clear_memos``), the simulated cycles per
host second, the total accelerator cycles and those of the convolutions after the first against
VTA's published 7,729,601 tsim cycles for the same layers (VTA ran the first convolution, the
pooling, the residual adds and the dense layer on the CPU; here they run on the accelerator too,
and their cycles are listed). Peers in the same run: the quantized graph in numpy
(``compiler.reference``), PyTorch and onnxruntime running the float model on the CPU. Wall times
depend on the host (the CPU is named); cycle counts do not.

Run: ``python benchmarks/model_sim.py``.
"""

from __future__ import annotations

import time

import _harness  # noqa: F401  (puts the repository on sys.path)
import numpy as np
import onnxruntime as ort
import torch
from _harness import cpu_name, report

from compiler.accel.templates import VTA_RESNET18_CYCLES
from compiler.model import compile_model
from compiler.zoo import onnx_bytes
from compiler.zoo.resnet import resnet18
from isa import AccelConfig
from simulator import clear_memos

SHAPE = (1, 3, 224, 224)


def _timed(fn):
    started = time.perf_counter()
    result = fn()
    return result, time.perf_counter() - started


def _onnxruntime_seconds(module: torch.nn.Module, x: np.ndarray) -> float:
    model = onnx_bytes(module, x, input_names=["x"])
    session = ort.InferenceSession(model, providers=["CPUExecutionProvider"])
    session.run(None, {"x": x})  # warm up
    return _timed(lambda: session.run(None, {"x": x}))[1]


def main() -> None:
    cfg = AccelConfig.preset("default")
    module = resnet18(seed=0)
    rng = np.random.default_rng(1)
    calibration = [rng.standard_normal(SHAPE).astype(np.float32) for _ in range(2)]
    compiled = compile_model(module, cfg, calibration=calibration)
    x = np.random.default_rng(7).standard_normal(SHAPE).astype(np.float32)
    expected, reference_s = _timed(lambda: compiled.reference(x)[0])
    with torch.no_grad():
        module(torch.from_numpy(x))
        _, torch_s = _timed(lambda: module(torch.from_numpy(x)))
    ort_s = _onnxruntime_seconds(module, x)
    rows = []
    cycles = {}
    for device in ("fsim", "sim"):
        clear_memos()  # each a first run: nothing the other run worked out is reused
        run, seconds = _timed(lambda d=device: compiled.run(x, device=d))
        exact = np.array_equal(run.outputs[compiled.image.outputs[0]], expected)
        total = run.report.cycles
        rate = total / seconds if total else None
        rows.append([device, seconds, total, rate, exact, seconds / ort_s])
        if total:
            cycles = {s.node: (s.op, s.cycles) for s in run.report.accel_steps}
    rows.append(["reference (numpy)", reference_s, None, None, True, reference_s / ort_s])
    rows.append(["PyTorch (float, CPU)", torch_s, None, None, None, torch_s / ort_s])
    rows.append(["onnxruntime (float, CPU)", ort_s, None, None, None, 1.0])
    convs = [c for op, c in cycles.values() if op == "QConv"]
    others = {op: 0 for op, _ in cycles.values()}
    for op, c in cycles.values():
        others[op] += c
    report(
        "model_sim",
        ["run", "wall s", "cycles", "cycles/s", "bit-exact", "vs onnxruntime"],
        rows,
        cpu=cpu_name(),
        config=cfg.fingerprint,
        total_cycles=sum(others.values()),
        first_conv_cycles=convs[0],
        later_conv_cycles=sum(convs[1:]),
        vta_resnet18_cycles=VTA_RESNET18_CYCLES,
        cycles_by_op=others,
    )
    later = sum(convs[1:])
    print(
        f"accelerator cycles: {sum(others.values()):,} in all; convolutions after the first "
        f"{later:,} = {later / VTA_RESNET18_CYCLES:.3f}x VTA's {VTA_RESNET18_CYCLES:,}; "
        + ", ".join(f"{op} {c:,}" for op, c in others.items())
    )
    print(f"CPU: {cpu_name()}; configuration {cfg.fingerprint}")


if __name__ == "__main__":
    main()
