"""Compile time of whole models for the accelerator, stage by stage.

ResNet-18 (224x224), the digits CNN and a MobileNet inverted-residual block (from
:mod:`compiler.zoo`) are compiled for the default configuration twice: from the torch module
(``torch.export`` included in ``import``) and from the ONNX file ``torch.onnx.export`` writes.
Target: ResNet-18 under 10 s. Peer in the same run: creating an onnxruntime CPU session for the
same ONNX file (its graph optimisation and kernel selection), with the ratio. Times depend on
the host: the CPU is named in the output.

Run: ``python benchmarks/compile_time.py``.
"""

from __future__ import annotations

import time

import _harness  # noqa: F401  (puts the repository on sys.path)
import numpy as np
import onnxruntime as ort
from _harness import cpu_name, report

from compiler.model import STAGES, compile_model
from compiler.zoo import onnx_bytes
from compiler.zoo.digits import DigitsCNN
from compiler.zoo.mobilenet import inverted_residual
from compiler.zoo.resnet import resnet18
from isa import AccelConfig

#: The stages' names, the table's columns.
STAGE_NAMES = [stage.name for stage in STAGES]

MODELS = {
    "resnet18": (lambda: resnet18(seed=0), (1, 3, 224, 224)),
    "digits_cnn": (lambda: DigitsCNN().eval(), (1, 1, 8, 8)),
    "inverted_residual": (lambda: inverted_residual(seed=0), (1, 16, 16, 16)),
}
CALIBRATION = 2


def _ort_session_seconds(model: bytes) -> float:
    options = ort.SessionOptions()
    options.intra_op_num_threads = 1
    started = time.perf_counter()
    ort.InferenceSession(model, options, providers=["CPUExecutionProvider"])
    return time.perf_counter() - started


def main() -> None:
    cfg = AccelConfig.preset("default")
    rows = []
    for name, (make, shape) in MODELS.items():
        module = make()
        rng = np.random.default_rng(1)
        samples = [rng.standard_normal(shape).astype(np.float32) for _ in range(CALIBRATION)]
        exported = onnx_bytes(module, np.zeros(shape, np.float32), input_names=["x"])
        for source, model in (("torch", module), ("onnx", exported)):
            feeds = samples if source == "torch" else [{"x": s} for s in samples]
            started = time.perf_counter()
            compiled = compile_model(model, cfg, calibration=feeds)
            total = time.perf_counter() - started
            peer = _ort_session_seconds(exported)
            stages = [compiled.stage_seconds[name] for name in STAGE_NAMES]
            accel = compiled.partition.count("accel")
            rows.append([name, source, accel, *stages, total, peer, total / peer])
    report(
        "compile_time",
        ["model", "from", "accel nodes", *STAGE_NAMES, "total s", "ort session s", "ratio"],
        rows,
        cpu=cpu_name(),
        config=cfg.fingerprint,
        target_resnet18_s=10,
    )
    print(f"CPU: {cpu_name()}; configuration {cfg.fingerprint}")


if __name__ == "__main__":
    main()
