"""vtaforge on the architectures users bring (:mod:`tests.compiler.model.zoo_models`: small
torchvision-shaped CNNs, Swin, ViT, ``nn.TransformerEncoder``, BERT and GPT-2 blocks), and a
table of how each fares.

For every model, :func:`try_model` records each stage, catching what it raises: the import
from PyTorch (``from_torch``) and the float graph's outputs against torch's; the export to
ONNX (opset 17) and its import (``from_onnx``) with the same comparison; ``compile_model``
(timed) with the partition: nodes and multiply-accumulates on the accelerator, and the CPU
nodes that multiply, with their reasons; and an fsim run against ``compiled.reference``, bit
for bit. Each model's test asserts what users expect of all of it: both imports, the float
graphs within 1e-4 of torch (relative to the output's largest magnitude, plus 1e-5), a
compiled model, fsim bit-exact with the reference, and at least 90% of a CNN's MACs (80% of a
transformer's) on the accelerator.

``python -m tests.compiler.model.test_model_zoo`` prints the table in Markdown, then each
model's shortfalls in full.
"""

from __future__ import annotations

import functools
import inspect
import io
import time
import warnings
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np
import pytest
import torch

from compiler.frontend import from_onnx, from_torch
from compiler.graph.interpret import run_graph
from compiler.model import compile_model
from compiler.model.plan import node_macs
from tests.compiler.model.zoo_models import CNNS, MODELS, random_like

#: The ONNX opset the models are exported at.
OPSET = 17
#: The float graphs' tolerance: relative to the largest output magnitude, and absolute.
RTOL, ATOL = 1e-4, 1e-5
#: The least fraction of multiply-accumulates on the accelerator, by kind of model.
CNN_MAC_FRACTION, TRANSFORMER_MAC_FRACTION = 0.9, 0.8


def _error(err: BaseException) -> str:
    """An exception as its type and the first line of its message."""
    lines = str(err).strip().splitlines()
    return f"{type(err).__name__}: {lines[0] if lines else ''}".rstrip(": ")


def _onnx_bytes(
    module: torch.nn.Module, example: Sequence[torch.Tensor], names: list[str]
) -> bytes:
    """``module`` exported on ``example`` as :func:`compiler.zoo.onnx_bytes` does (TorchScript
    exporter, batch norm kept), at :data:`OPSET` (``onnx_bytes`` takes torch's default)."""
    buffer = io.BytesIO()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        torch.onnx.export(
            module,
            tuple(example),
            buffer,
            input_names=names,
            opset_version=OPSET,
            dynamo=False,
            training=torch.onnx.TrainingMode.PRESERVE,
        )
    return buffer.getvalue()


def _compare(got: np.ndarray, want: np.ndarray) -> tuple[float, bool]:
    """The largest difference relative to ``want``'s largest magnitude, and whether the
    difference is within ``RTOL * max|want| + ATOL``."""
    got = np.asarray(got)
    if got.shape != want.shape:
        raise ValueError(f"output shape {got.shape}, torch gives {want.shape}")
    diff = float(np.abs(got.astype(np.float64) - want).max())
    scale = float(np.abs(want).max())
    return diff / max(scale, 1e-30), diff <= RTOL * scale + ATOL


def _stage(result: dict[str, Any], stage: str, work: Callable[[], Any]) -> Any:
    """``work()``, or None with the error recorded under ``stage`` when it raises."""
    try:
        return work()
    except Exception as err:  # every failure is a cell of the table
        result["errors"][stage] = _error(err)
        return None


@functools.cache
def try_model(name: str) -> dict[str, Any]:
    """Every stage of vtaforge on the zoo model ``name``, each failure recorded (``errors``:
    stage -> "Type: first line") rather than raised."""
    module, example = MODELS[name]()
    inputs = [t.numpy() for t in example]
    names = list(inspect.signature(module.forward).parameters)[: len(inputs)]
    with torch.no_grad():
        want = module(*example).numpy().astype(np.float64)
    result: dict[str, Any] = {
        "name": name,
        "kind": "cnn" if name in CNNS else "transformer",
        "errors": {},
    }

    graph = _stage(result, "torch import", lambda: from_torch(module, example))
    if graph is not None:
        compared = _stage(
            result, "torch float", lambda: _compare(run_graph(graph, inputs)[0], want)
        )
        if compared is not None:
            result["torch_error"], result["torch_ok"] = compared

    data = _stage(result, "onnx export", lambda: _onnx_bytes(module, example, names))
    onnx_graph = None if data is None else _stage(result, "onnx import", lambda: from_onnx(data))
    if onnx_graph is not None:
        compared = _stage(
            result, "onnx float", lambda: _compare(run_graph(onnx_graph, inputs)[0], want)
        )
        if compared is not None:
            result["onnx_error"], result["onnx_ok"] = compared

    calibration = [random_like(example, 1), random_like(example, 2)]
    started = time.perf_counter()
    compiled = _stage(
        result, "compile", lambda: compile_model(module, "default", calibration=calibration)
    )
    result["compile_seconds"] = time.perf_counter() - started
    if compiled is None:
        return result

    placements = {p.node: p for p in compiled.partition.placements}
    macs = {n.name: node_macs(compiled.graph, n) for n in compiled.graph.nodes}
    on_accel = [n for n, p in placements.items() if p.device == "accel"]
    total = sum(macs.values())
    result["nodes"] = len(compiled.graph.nodes)
    result["accel_nodes"] = len(on_accel)
    result["macs"] = total
    result["accel_mac_fraction"] = sum(macs[n] for n in on_accel) / total if total else 0.0
    result["cpu_mac_nodes"] = [
        (n, placements[n].op, macs[n], placements[n].reason)
        for n in macs
        if macs[n] > 0 and placements[n].device == "cpu"
    ][:3]

    x = random_like(example, 3)

    def fsim() -> bool:
        run = compiled.run(x, device="fsim")
        return bool(
            np.array_equal(run.outputs[compiled.image.outputs[0]], compiled.reference(x)[0])
        )

    result["fsim_bit_exact"] = _stage(result, "fsim", fsim)
    return result


def shortfalls(result: dict[str, Any]) -> list[str]:
    """What the model falls short of, stage by stage, each as "stage: what"."""
    errors = result["errors"]
    found = [f"{stage}: {message}" for stage, message in errors.items()]
    for key, stage in (("torch", "torch float"), ("onnx", "onnx float")):
        if result.get(f"{key}_ok") is False:
            found.append(
                f"{stage}: relative error {result[f'{key}_error']:.2e} exceeds {RTOL:g} "
                f"(+ {ATOL:g} absolute)"
            )
    if result.get("fsim_bit_exact") is False:
        found.append("fsim: the fsim run differs from compiled.reference")
    fraction = result.get("accel_mac_fraction")
    least = CNN_MAC_FRACTION if result["kind"] == "cnn" else TRANSFORMER_MAC_FRACTION
    if fraction is not None and fraction < least:
        cpu = "; ".join(
            f"{node} ({op}, {macs:,} MACs): {reason}"
            for node, op, macs, reason in result["cpu_mac_nodes"]
        )
        found.append(
            f"partition: {fraction:.1%} of the MACs on the accelerator, less than {least:.0%}"
            f" (CPU: {cpu})"
        )
    order = ["torch import", "torch float", "onnx export", "onnx import", "onnx float"]
    order += ["compile", "fsim", "partition"]
    return sorted(found, key=lambda f: order.index(f.split(":")[0]))


@pytest.mark.parametrize("name", list(MODELS), ids=list(MODELS))
def test_the_model_imports_compiles_and_runs_on_the_accelerator(name: str) -> None:
    problems = shortfalls(try_model(name))
    assert not problems, f"{name} falls short:\n" + "\n".join(problems)


def _cell(text: str, width: int = 110) -> str:
    text = text.replace("|", "\\|")
    return text if len(text) <= width else text[: width - 3] + "..."


def table(names: Sequence[str] = tuple(MODELS)) -> str:
    """The Markdown table of how each model fares."""
    rows = [
        "| model | torch import | ONNX import | float rel. err (torch / ONNX) | compiles "
        "| compile s | accel nodes | accel MAC % | fsim bit-exact | first failure |",
        "|---|---|---|---|---|---|---|---|---|---|",
    ]
    for name in names:
        r = try_model(name)
        errors = r["errors"]

        def ok(*stages: str, errors: dict[str, str] = errors) -> str:
            return "no" if any(s in errors for s in stages) else "yes"

        err = " / ".join(f"{r[k]:.1e}" if k in r else "-" for k in ("torch_error", "onnx_error"))
        compiled = "compile" not in errors
        found = shortfalls(r)
        cells = [
            name,
            ok("torch import"),
            ok("onnx export", "onnx import"),
            err,
            "yes" if compiled else "no",
            f"{r['compile_seconds']:.1f}",
            f"{r['accel_nodes']}/{r['nodes']}" if compiled else "-",
            f"{100 * r['accel_mac_fraction']:.1f}" if compiled else "-",
            {True: "yes", False: "no", None: "error"}[r["fsim_bit_exact"]] if compiled else "-",
            _cell(found[0]) if found else "",
        ]
        rows.append("| " + " | ".join(cells) + " |")
    return "\n".join(rows)


def main() -> None:
    started = time.perf_counter()
    print(table())
    print()
    for name in MODELS:
        found = shortfalls(try_model(name))
        if found:
            print(f"- **{name}**")
            for item in found:
                print(f"  - {item}")
    print(f"\n{len(MODELS)} models in {time.perf_counter() - started:.0f} s")


if __name__ == "__main__":
    main()
