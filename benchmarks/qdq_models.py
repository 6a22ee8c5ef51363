"""Models quantized by onnxruntime (QDQ format) compiled for the accelerator, against
onnxruntime's own quantized run.

For the digits CNN trained here and a seeded ResNet-18 (224x224, batch norm unfused in the
export, as ``torch.onnx`` writes it), each quantized by ``quantize_static`` two ways (symmetric
int8 activations and weights per tensor; onnxruntime's defaults per channel), calibrated on 8
inputs (the digits: 32 training images), then compiled with ``scheme="per-channel"``: the
steps on the accelerator and on the CPU (Quantize/Dequantize among them), and over 20 held-out
inputs the top-1 agreement with onnxruntime's quantized run, the logits' relative error
against it, and both quantized runs' relative error against the float model. vtaforge runs on
``fsim`` (bit-exact with ``compiler.reference``, which the tests hold). Nothing here is a wall
time.

Run: ``python benchmarks/qdq_models.py`` (``--quick``: the digits CNN only).
"""

from __future__ import annotations

import sys
import tempfile
import warnings
from pathlib import Path

import _harness  # noqa: F401  (puts the repository on sys.path)
import numpy as np
import onnxruntime as ort
from _harness import cpu_name, report
from onnxruntime.quantization import CalibrationDataReader, QuantFormat, QuantType, quantize_static

from compiler.model import compile_model
from compiler.zoo import onnx_bytes
from compiler.zoo.digits import load_digits_split, train_digits_cnn
from compiler.zoo.resnet import resnet18

#: The two ways the models are quantized: (name, per channel, quantize_static's options).
SETTINGS = (
    (
        "int8 symmetric, per tensor",
        False,
        {
            "activation_type": QuantType.QInt8,
            "weight_type": QuantType.QInt8,
            "extra_options": {"ActivationSymmetric": True, "WeightSymmetric": True},
        },
    ),
    ("onnxruntime defaults, per channel", True, {}),
)


class _Reader(CalibrationDataReader):
    def __init__(self, samples: list[np.ndarray]) -> None:
        self.samples = iter([{"x": s} for s in samples])

    def get_next(self):
        return next(self.samples, None)


def _session(model: bytes | str) -> ort.InferenceSession:
    options = ort.SessionOptions()
    options.log_severity_level = 3
    return ort.InferenceSession(model, options, providers=["CPUExecutionProvider"])


def _relative(a: list[np.ndarray], b: list[np.ndarray]) -> float:
    return float(np.linalg.norm(np.concatenate(a) - np.concatenate(b)) / np.linalg.norm(b))


def _measure(name: str, float_model: bytes, calibration, held_out, folder: Path) -> list[list]:
    float_path = folder / f"{name}.onnx"
    float_path.write_bytes(float_model)
    floats = [_session(float_model).run(None, {"x": x})[0] for x in held_out]
    rows = []
    for setting, per_channel, options in SETTINGS:
        path = folder / f"{name}_{per_channel}.onnx"
        quantize_static(
            float_path,
            path,
            _Reader(calibration),
            quant_format=QuantFormat.QDQ,
            per_channel=per_channel,
            **options,
        )
        session = _session(str(path))
        theirs = [session.run(None, {"x": x})[0] for x in held_out]
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            model = compile_model(
                path.read_bytes(), calibration=[[c] for c in calibration], scheme="per-channel"
            )
        ours = [next(iter(model.run(x, "fsim").outputs.values())) for x in held_out]
        steps = model.image.steps
        agree = np.mean([np.argmax(a) == np.argmax(b) for a, b in zip(ours, theirs, strict=True)])
        rows.append(
            [
                name,
                setting,
                sum(s.device == "accel" for s in steps),
                sum(s.device == "cpu" for s in steps),
                sum(s.op in ("QuantizeLinear", "DequantizeLinear") for s in steps),
                float(agree),
                _relative(ours, theirs),
                _relative(theirs, floats),
                _relative(ours, floats),
            ]
        )
    return rows


def main() -> None:
    quick = "--quick" in sys.argv
    with tempfile.TemporaryDirectory() as scratch:
        folder = Path(scratch)
        module, x_test, _ = train_digits_cnn(seed=0)
        calibration = list(load_digits_split(0).x_train[:32, None])
        digits = onnx_bytes(module, x_test[:1], input_names=["x"])
        rows = _measure("digits CNN", digits, calibration, list(x_test[:20, None]), folder)
        if not quick:
            rng = np.random.default_rng(0)
            images = [rng.standard_normal((1, 3, 224, 224)).astype(np.float32) for _ in range(28)]
            network = onnx_bytes(resnet18(0), images[0], input_names=["x"])
            rows += _measure("ResNet-18", network, images[:8], images[8:], folder)
    report(
        "qdq_models",
        [
            "model",
            "quantized by onnxruntime",
            "accel steps",
            "cpu steps",
            "Q/DQ steps",
            "top-1 = onnxruntime's",
            "rel. vs onnxruntime int8",
            "onnxruntime int8 vs float",
            "vtaforge vs float",
        ],
        rows,
        cpu=cpu_name(),
    )


if __name__ == "__main__":
    main()
