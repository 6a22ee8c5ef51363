"""``compile_model``: a model (ONNX, PyTorch or a graph) compiled for an accelerator
configuration into a :class:`CompiledModel`, through one named list of stages.

The stages, in order (:data:`STAGES`): ``import`` (a frontend), ``fold_constants``,
``fold_batch_norm``, ``quantize`` (calibrated on the given samples; fuses conv + bias + relu +
requantisation and add + relu), ``simplify`` (chains of reshapes and transposes as one node,
repeated nodes merged), ``split_grouped`` (a grouped or depthwise convolution wider than a
channel block as pieces of whole blocks, :mod:`compiler.model.grouped`), ``partition``
(accelerator or CPU, with the reasons),
``plan`` (layouts: packing where values cross; memory: DRAM offsets shared between tensors
whose lifetimes do not overlap) and ``codegen`` (each accelerator node's template lowered and
emitted as an :class:`isa.Program` addressing the model's DRAM image; the CPU steps between
the float and the int8 worlds compiled by the LLVM backend into shared libraries,
:mod:`compiler.model.cpu_kernels`). The result saves as one file that ``runtime.load_model``
runs without the compiler.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from compiler.accel.codegen import generate
from compiler.accel.env import Env
from compiler.errors import CompileError, GraphError
from compiler.frontend import import_model
from compiler.graph.interpret import run_graph
from compiler.graph.ir import Graph, node_names
from compiler.graph.passes.fold import fold_batch_norm, fold_constants
from compiler.graph.passes.quantize import calibrate, quantize
from compiler.graph.passes.simplify import simplify
from compiler.model.cpu_kernels import cpu_library
from compiler.model.grouped import split_grouped
from compiler.model.partition import Partition, partition
from compiler.model.plan import Plan, plan_model
from isa import UOP_BYTES, AccelConfig
from runtime.model import Model, ModelImage, ModelRun, Step

__all__ = ["STAGES", "CompiledModel", "compile_model", "reference"]

#: The stages of :func:`compile_model`, in order.
STAGES = (
    "import",
    "fold_constants",
    "fold_batch_norm",
    "quantize",
    "simplify",
    "split_grouped",
    "partition",
    "plan",
    "codegen",
)

Sample = Mapping[str, np.ndarray] | Sequence[np.ndarray] | np.ndarray


@dataclass
class CompiledModel:
    """A model compiled for one configuration: the float graph after folding, the quantized
    graph (``compiler.reference`` runs it: the oracle of every accelerator run), the partition,
    the memory plan, the artefact (``image``) and each stage's compile time in seconds."""

    float_graph: Graph
    graph: Graph
    partition: Partition
    plan: Plan
    image: ModelImage
    stage_seconds: dict[str, float]

    @property
    def cfg(self) -> AccelConfig:
        return self.image.config

    def save(self, path: str | Path) -> None:
        """Write the self-contained model file that ``runtime.load_model`` reads."""
        self.image.save(path)

    def run(self, inputs: Sample, device: Any = "sim", **options: Any) -> ModelRun:
        """Run on a device (``fsim``, ``sim``, ``rtl`` or a device object)."""
        return Model(self.image).run(inputs, device, **options)

    def reference(self, inputs: Sample) -> list[np.ndarray]:
        """The quantized graph's outputs in numpy (bit-exact with every accelerator run)."""
        return reference(self.graph, inputs)


def reference(graph: Graph, inputs: Sample) -> list[np.ndarray]:
    """``graph``'s outputs computed in numpy, node by node: for a quantized graph, the
    bit-exact oracle of its accelerator runs; for a float graph, its CPU path."""
    return run_graph(graph, [inputs] if isinstance(inputs, np.ndarray) else inputs)


def _first(samples: list[Sample]) -> list[np.ndarray]:
    if not samples:
        return []
    first = samples[0]
    return list(first.values()) if isinstance(first, Mapping) else list(first)


def compile_model(
    model: Any,
    cfg: AccelConfig | str = "default",
    *,
    calibration: Iterable[Sample],
    keep_float: Iterable[str] = (),
    cpu_only: Iterable[str] = (),
    input_shapes: Mapping[str, Sequence[int]] | None = None,
    cpu_target: str | None = "llvm",
    name: str | None = None,
    progress: Callable[[str], None] | None = None,
) -> CompiledModel:
    """Compile ``model`` (an ONNX model, path or bytes; a ``torch.nn.Module``; or a
    :class:`Graph`) for ``cfg`` (a configuration, preset name or file).

    ``calibration``: sample inputs (arrays in input order, or dicts by input name) that the
    quantizer observes; ``keep_float``: nodes left in float (on the CPU); ``cpu_only``:
    quantized nodes kept off the accelerator; ``input_shapes`` fixes an ONNX model's dynamic
    input dimensions; ``cpu_target`` is the LLVM target of the CPU steps' libraries (``"llvm"``:
    this host; None: numpy kernels only); ``progress(stage)`` is called as each stage starts.
    """
    cfg = AccelConfig.resolve(cfg)
    env = Env(cfg)
    keep_float = node_names(keep_float, "keep_float")  # checked before the slow stages
    cpu_only = node_names(cpu_only, "cpu_only")
    samples = [s if not isinstance(s, np.ndarray) else [s] for s in calibration]
    if not samples:
        raise GraphError("compile_model needs at least one calibration sample")
    seconds: dict[str, float] = {}

    def stage(label: str, work: Callable[[], Any]) -> Any:
        if progress is not None:
            progress(label)
        started = time.perf_counter()
        result = work()
        seconds[label] = time.perf_counter() - started
        return result

    graph = stage("import", lambda: import_model(model, _first(samples), input_shapes))
    graph = stage("fold_constants", lambda: fold_constants(graph))
    folded = stage("fold_batch_norm", lambda: fold_batch_norm(graph))
    qgraph = stage(
        "quantize",
        lambda: quantize(
            folded,
            calibrate(folded, samples),
            keep_float=keep_float,
            mul_bits=cfg.mul_arg_bits,
        ),
    )
    qgraph = stage("simplify", lambda: simplify(qgraph, keep=cpu_only))
    qgraph = stage("split_grouped", lambda: split_grouped(qgraph, env, keep=cpu_only))
    parts = stage("partition", lambda: partition(qgraph, cfg, cpu_only=cpu_only))
    plan = stage("plan", lambda: plan_model(qgraph, parts, env))
    image = stage("codegen", lambda: _codegen(plan, env, name or graph.name, cpu_target))
    return CompiledModel(folded, qgraph, parts, plan, image, seconds)


def _codegen(plan: Plan, env: Env, name: str, cpu_target: str | None) -> ModelImage:
    """Each accelerator step compiled into a program over the plan's addresses, its micro-op
    table after the tensors (and the tables before it); CPU steps into libraries where
    :mod:`compiler.model.cpu_kernels` declares them and ``cpu_target`` is set."""
    cfg = env.cfg
    cursor = plan.tensors_end
    steps = []
    for planned in plan.steps:
        program = library = None
        op = planned.accel
        if op is None and cpu_target is not None:
            library = cpu_library(
                planned.op,
                [plan.slots[n] for n in planned.inputs],
                plan.slots[planned.outputs[0]],
                planned.attrs,
                cpu_target,
            )
        if op is not None:
            try:
                names = (*planned.inputs, *planned.outputs)
                placement = [plan.slots[n].address for n in names]
                program = generate(cfg, op.lowered, placement, uop_start=cursor).program
            except CompileError as err:
                raise CompileError(err.detail, node=planned.node, op=planned.op) from None
            cursor = -(-program.uop_region[1] // UOP_BYTES) * UOP_BYTES
            cursor = -(-cursor // plan.align) * plan.align
        steps.append(
            Step(
                planned.node,
                planned.op,
                "accel" if program is not None else "cpu",
                planned.inputs,
                planned.outputs,
                planned.attrs,
                program,
                planned.macs,
                library,
            )
        )
    dram_bytes = max(cursor, plan.tensors_end)
    if dram_bytes > 2**cfg.dram_addr_bits:
        raise CompileError(
            f"the model needs {dram_bytes:,} bytes of DRAM, the configuration addresses "
            f"{2**cfg.dram_addr_bits:,}"
        )
    return ModelImage(
        name,
        cfg,
        dram_bytes,
        plan.inputs,
        plan.outputs,
        plan.slots,
        tuple(steps),
        plan.params,
    )
