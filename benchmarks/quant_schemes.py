"""The quantization schemes side by side: VTA's power-of-two scales (``pow2``) and per-channel
weight scales requantised by a fixed-point multiply and shift on the ALU (``per-channel``).

For each model, each scheme: the int8 model's error against the float model (the relative
error of the logits ``||q - f|| / ||f||`` over held-out inputs, and top-1 agreement; the
int8 side is ``compiler.reference``, bit-exact with every accelerator run, which the tests
hold), and the accelerator cycles of one inference on the cycle-level simulator (``sim``) for
the default configuration, with the cycles the fixed-point epilogue adds. Models: the three
digits classifiers trained here (``compiler.zoo.digits``: a CNN, a MobileNet-style network with
depthwise convolutions and squeeze-excite, a transformer; held-out accuracy over 450 images
too), and seeded full-size ResNet-18 and MobileNetV2 at 224x224 (batch-norm statistics
measured on random images; inputs standard normal). Cycle counts do not depend on the host;
nothing here is a wall time.

Run: ``python benchmarks/quant_schemes.py`` (``--quick``: the digits classifiers only).
"""

from __future__ import annotations

import sys
import warnings

import _harness  # noqa: F401  (puts the repository on sys.path)
import numpy as np
import torch
from _harness import cpu_name, report

from compiler.graph.interpret import run_graph
from compiler.model import compile_model
from compiler.zoo.digits import DIGITS_MODELS, load_digits_split, train_digits
from compiler.zoo.mobilenet import mobilenet_v2
from compiler.zoo.resnet import resnet18

SCHEMES = ("pow2", "per-channel")
CALIBRATION, HELD_OUT = 8, 8


def _images(count: int, seed: int) -> list[np.ndarray]:
    rng = np.random.default_rng(seed)
    return [rng.standard_normal((1, 3, 224, 224)).astype(np.float32) for _ in range(count)]


def _measure(name: str, module, calibration, held_out, labels=None) -> list[list]:
    rows = []
    for scheme in SCHEMES:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            model = compile_model(module, calibration=calibration, scheme=scheme, name=name)
        want = [run_graph(model.float_graph, [x])[0] for x in held_out]
        got = [model.reference(x)[0] for x in held_out]
        error = np.linalg.norm(np.concatenate(got) - np.concatenate(want))
        error /= np.linalg.norm(np.concatenate(want))
        agree = np.mean([np.argmax(a) == np.argmax(b) for a, b in zip(got, want, strict=True)])
        run = model.run(held_out[0], "sim")
        cycles = sum(stats.cycles for _, stats in run.cycle_stats)
        row = [name, scheme, float(error), float(agree), cycles]
        if labels is not None:
            accuracy = np.mean([np.argmax(g) == y for g, y in zip(got, labels, strict=True)])
            reference = np.mean([np.argmax(w) == y for w, y in zip(want, labels, strict=True)])
            row += [float(accuracy), float(reference)]
        else:
            row += [None, None]
        rows.append(row)
    base = rows[0][4]
    for row in rows:
        row.append(row[4] / base)
    return rows


def main() -> None:
    quick = "--quick" in sys.argv
    split = load_digits_split(seed=0)
    rows = []
    for name, (cls, epochs) in DIGITS_MODELS.items():
        module, x_test, y_test = train_digits(cls, 0, epochs)
        calibration = [x[None] for x in split.x_train[:64]]
        rows += _measure(f"digits {name}", module, calibration, [x[None] for x in x_test], y_test)
    if not quick:
        torch.set_num_threads(1)
        for name, build in (("ResNet-18", resnet18), ("MobileNetV2", mobilenet_v2)):
            rows += _measure(name, build(0), _images(CALIBRATION, 0), _images(HELD_OUT, 1000))
    report(
        "quant_schemes",
        [
            "model",
            "scheme",
            "rel. error vs float",
            "top-1 agreement",
            "sim cycles",
            "int8 accuracy",
            "float accuracy",
            "cycles vs pow2",
        ],
        rows,
        cpu=cpu_name(),
    )


if __name__ == "__main__":
    main()
