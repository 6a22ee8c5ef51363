"""``compile_model``: a model (ONNX, PyTorch or a graph) compiled for an accelerator
configuration into a :class:`CompiledModel`, through one named list of stages.

The stages, in order (:data:`STAGES`): ``import`` (a frontend), ``fold_constants``,
``strip_fake_quant`` (for the accelerator: a QDQ model's Quantize/Dequantize pairs on
activations as the float operations they stand for, :mod:`compiler.graph.passes.qdq`),
``fold_batch_norm``, ``quantize`` (calibrated on the given samples; fuses conv + bias + relu +
requantisation and add + relu), ``simplify`` (chains of reshapes and transposes as one node,
repeated nodes merged), ``split_grouped`` (a grouped or depthwise convolution wider than a
channel block as pieces of whole blocks, :mod:`compiler.model.grouped`), ``nchwc`` (for the CPU
target: convolutions and their elementwise chains on channel-blocked values, weights blocked
at compile time, :mod:`compiler.model.nchwc`), ``panels`` (for the CPU target: constant
right operands of matrix products packed into the template's panels,
:mod:`compiler.model.panels`), ``partition``
(accelerator or CPU, with the reasons),
``plan`` (layouts: packing where values cross; memory: DRAM offsets shared between tensors
whose lifetimes do not overlap) and ``codegen`` (each accelerator node's template lowered and
emitted as an :class:`isa.Program` addressing the model's DRAM image; the CPU steps between
the float and the int8 worlds compiled by the LLVM backend into shared libraries,
:mod:`compiler.model.cpu_kernels`). The result saves as one file that ``runtime.load_model``
runs without the compiler.

``target`` chooses what the model is compiled for: ``"accel"`` (the default) as above;
``"llvm"`` (or ``"llvm -mcpu=... -mattr=..."``: :meth:`compiler.codegen.Target.parse`), the
whole model in float32 for that CPU (the host's by default): ``quantize`` keeps the float graph
(no calibration, no quantization), ``nchwc`` and ``panels`` lay the convolutions and the
products' weights out as that CPU's kernels read them, and ``partition`` keeps every node on
the CPU (as ``cpu_only`` does), so every step is a CPU step that the host running the model
builds an LLVM kernel for where the kernel builder declares one
(:mod:`compiler.model.cpu_kernels`), else runs its numpy kernel.

Each stage is a :class:`~compiler.pipeline.Pass` over a :class:`CompileContext`, run by the
one pass runner (:func:`compiler.pipeline.run_pipeline`), so the instruments that time, dump
or verify the loop IR's passes observe the model's stages too (and the lowering passes that
``partition`` and ``codegen`` run, under their names).
"""

from __future__ import annotations

import warnings
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import numpy as np

from compiler.accel.emit import generate
from compiler.accel.env import Env
from compiler.codegen.target import Target
from compiler.errors import CompileError, GraphError, QuantizationWarning
from compiler.frontend import import_model
from compiler.graph.interpret import run_graph
from compiler.graph.ir import Graph, node_names
from compiler.graph.limits import check_graph_size
from compiler.graph.passes.calibrate import CalibrationMethod, QuantRecord, calibrate
from compiler.graph.passes.calibrate import calibration_method as _method_named
from compiler.graph.passes.fold import fold_batch_norm, fold_constants
from compiler.graph.passes.qdq import fake_quant_pairs, strip_fake_quant
from compiler.graph.passes.quantize import SCHEMES, quantize_with_records
from compiler.graph.passes.simplify import simplify
from compiler.model.grouped import split_grouped
from compiler.model.nchwc import nchwc_layout
from compiler.model.panels import pack_matmul_weights
from compiler.model.partition import Partition, partition
from compiler.model.plan import Plan, plan_model
from compiler.pipeline import Instrument, Pass, instrumented, run_pipeline, running_passes
from isa import UOP_BYTES, AccelConfig
from runtime.model import Model, ModelImage, ModelRun, Step, TensorSlot

__all__ = ["STAGES", "TARGETS", "CompileContext", "CompiledModel", "compile_model", "reference"]

Sample = Mapping[str, np.ndarray] | Sequence[np.ndarray] | np.ndarray

#: What :func:`compile_model` compiles for: the accelerator (int8, CPU steps where partition
#: leaves them) or the CPU alone (float32, every node a CPU step).
TARGETS = ("accel", "llvm")


@dataclass
class CompiledModel:
    """A model compiled for one configuration: the float graph after folding, the quantized
    graph (``compiler.reference`` runs it: the oracle of every accelerator run), the partition,
    the memory plan, the artefact (``image``), each stage's compile time in seconds and how
    each int8 value was scaled (``quantization``: a
    :class:`~compiler.graph.passes.calibrate.QuantRecord` per value, which
    :func:`~compiler.graph.passes.calibrate.quantization_table` prints)."""

    float_graph: Graph
    graph: Graph
    partition: Partition
    plan: Plan
    image: ModelImage
    stage_seconds: dict[str, float]
    quantization: tuple[QuantRecord, ...] = ()

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


@dataclass(frozen=True)
class CompileContext:
    """What the stages of :func:`compile_model` read and make: the request (the model, the
    configuration's environment, the calibration samples and the options), then the float
    graph (``graph``), the quantized graph, the partition, the plan and the image, each set by
    its stage. ``str()`` shows the newest of them (what :class:`~compiler.pipeline.DumpIR`
    writes after each stage)."""

    model: Any
    env: Env
    samples: tuple[Sample, ...]
    keep_float: tuple[str, ...] = ()
    cpu_only: tuple[str, ...] = ()
    input_shapes: Mapping[str, Sequence[int]] | None = None
    name: str | None = None
    graph: Graph | None = None
    qgraph: Graph | None = None
    partition: Partition | None = None
    plan: Plan | None = None
    image: ModelImage | None = None
    calibration_method: CalibrationMethod | str = "mse"
    quantization: tuple[QuantRecord, ...] = ()
    target: str = "accel"
    scheme: str = "pow2"

    def __str__(self) -> str:
        if self.image is not None:
            return "\n".join(
                f"{k:>4} {s.device:<5} {s.op:<18} {s.node}" for k, s in enumerate(self.image.steps)
            )
        if self.plan is not None:
            return "\n".join(
                f"{name}: {slot.layout} {slot.dtype}{list(slot.shape)} at {slot.address}"
                for name, slot in self.plan.slots.items()
            )
        if self.partition is not None:
            return self.partition.report()
        return str(self.qgraph if self.qgraph is not None else self.graph)


def _import(ctx: CompileContext) -> CompileContext:
    """The model's float graph, refused before anything runs where its tensors are too many
    bytes for a model (:func:`compiler.graph.limits.check_graph_size`)."""
    graph = import_model(ctx.model, _first(list(ctx.samples)), ctx.input_shapes)
    check_graph_size(graph)
    return replace(ctx, graph=graph)


def _on_cpu(ctx: CompileContext) -> bool:
    """Whether ``ctx`` compiles for the CPU (``llvm [options]``), not the accelerator."""
    return ctx.target.split()[0] == "llvm"


def _strip_fake_quant(ctx: CompileContext) -> CompileContext:
    """For the accelerator, a QDQ model's fake-quantization pairs read as the float operations
    they stand for (:func:`~compiler.graph.passes.qdq.strip_fake_quant`, before batch norm is
    folded: a pair may stand between a convolution and its batch norm), with a warning that
    the model's activation scales are replaced; the CPU computes the model as it is."""
    graph = _made(ctx.graph)
    pairs = 0 if _on_cpu(ctx) else len(fake_quant_pairs(graph))
    if not pairs:
        return ctx
    warnings.warn(
        f"the model's {pairs} QuantizeLinear/DequantizeLinear pair{'s' * (pairs > 1)} on "
        "activations are read as the float operations they stand for: vtaforge quantizes those "
        "values with the scales calibration chooses, not the model's",
        QuantizationWarning,
        stacklevel=2,
    )
    return replace(ctx, graph=strip_fake_quant(graph))


def _quantize(ctx: CompileContext) -> CompileContext:
    graph = _made(ctx.graph)
    if _on_cpu(ctx):  # the CPU computes the float graph itself
        return replace(ctx, qgraph=graph)
    calibration = calibrate(graph, ctx.samples)
    mul_bits = ctx.env.cfg.mul_arg_bits
    qgraph, records = quantize_with_records(
        graph,
        calibration,
        keep_float=ctx.keep_float,
        mul_bits=mul_bits,
        method=ctx.calibration_method,
        scheme=ctx.scheme,
    )
    return replace(ctx, qgraph=qgraph, quantization=records)


def _partition(ctx: CompileContext) -> CompileContext:
    graph = _made(ctx.qgraph)
    forced = ctx.cpu_only
    if _on_cpu(ctx):
        forced = tuple(node.name for node in graph.nodes)
    parts = partition(graph, ctx.env.cfg, cpu_only=forced)
    return replace(ctx, partition=parts)


def _nchwc(ctx: CompileContext) -> CompileContext:
    if not _on_cpu(ctx):
        return ctx
    return replace(ctx, qgraph=nchwc_layout(_made(ctx.qgraph), ctx.target))


def _panels(ctx: CompileContext) -> CompileContext:
    if not _on_cpu(ctx):
        return ctx
    return replace(ctx, qgraph=pack_matmul_weights(_made(ctx.qgraph), ctx.target))


def _plan(ctx: CompileContext) -> CompileContext:
    return replace(ctx, plan=plan_model(_made(ctx.qgraph), _made(ctx.partition), ctx.env))


def _generate(ctx: CompileContext) -> CompileContext:
    name = ctx.name or _made(ctx.graph).name
    image = _codegen(_made(ctx.plan), ctx.env, name)
    origins = _origins(_made(ctx.graph), _made(ctx.qgraph), ctx.quantization)
    return replace(ctx, image=replace(image, tensors=_with_origins(image.tensors, origins)))


def _origins(
    float_graph: Graph, qgraph: Graph, records: Iterable[QuantRecord]
) -> dict[str, tuple[str, float | None]]:
    """Each computed value of the quantized graph that holds one of the float graph: that
    value's name and, for an int8 one, its scale. Float values keep their names through
    quantization; an int8 value is the quantizer's record's ``int8_value``, at its scale."""
    found: dict[str, tuple[str, float | None]] = {}
    computed = {o for n in float_graph.nodes for o in n.outputs}
    for name in computed & {o for n in qgraph.nodes for o in n.outputs}:
        ty = qgraph.types[name]
        if ty.dtype != "int8" and float_graph.types[name] == ty:
            found[name] = (name, None)
    for record in records:
        if record.value in float_graph.types and record.int8_value in qgraph.types:
            found[record.int8_value] = (record.value, record.scale)
    return found


def _with_origins(
    tensors: Mapping[str, TensorSlot], origins: Mapping[str, tuple[str, float | None]]
) -> dict[str, TensorSlot]:
    """``tensors`` with each slot of a value of :func:`_origins` (its own, or its ``:packed``
    or ``:plain`` form, as the plan names them) recording the float value and scale."""
    slots = {}
    for name, slot in tensors.items():
        base, _, layout = name.rpartition(":")
        origin = origins.get(name) or (origins.get(base) if layout in ("packed", "plain") else None)
        if origin is not None and (slot.dtype == "int8") == (origin[1] is not None):
            slot = replace(slot, value=origin[0], scale=origin[1])
        slots[name] = slot
    return slots


def _made(value: Any) -> Any:
    """A stage's product that a later stage reads (a stage run out of order has none)."""
    if value is None:
        raise CompileError("a compile stage ran before the stage that makes its input")
    return value


#: The stages of :func:`compile_model`, in order: passes over a :class:`CompileContext`, run
#: by :func:`compiler.pipeline.run_pipeline` (so instruments time and dump each).
STAGES: tuple[Pass[CompileContext], ...] = (
    Pass("import", _import),
    Pass("fold_constants", lambda c: replace(c, graph=fold_constants(_made(c.graph)))),
    Pass("strip_fake_quant", _strip_fake_quant),
    Pass("fold_batch_norm", lambda c: replace(c, graph=fold_batch_norm(_made(c.graph)))),
    Pass("quantize", _quantize),
    Pass("simplify", lambda c: replace(c, qgraph=simplify(_made(c.qgraph), keep=c.cpu_only))),
    Pass(
        "split_grouped",
        lambda c: replace(c, qgraph=split_grouped(_made(c.qgraph), c.env, keep=c.cpu_only)),
    ),
    Pass("nchwc", _nchwc),
    Pass("panels", _panels),
    Pass("partition", _partition),
    Pass("plan", _plan),
    Pass("codegen", _generate),
)


def _first(samples: list[Sample]) -> list[np.ndarray]:
    if not samples:
        return []
    first = samples[0]
    return list(first.values()) if isinstance(first, Mapping) else list(first)


class _Stages(Instrument):
    """Calls ``progress(stage)`` as each of compile_model's own stages starts, and records
    their seconds."""

    def __init__(self, depth: int, progress: Callable[[str], None] | None) -> None:
        self.depth = depth
        self.progress = progress
        self.seconds: dict[str, float] = {}

    def before(self, path: tuple[str, ...], ir: object) -> None:
        if len(path) == self.depth and self.progress is not None:
            self.progress(path[-1])

    def after(self, path: tuple[str, ...], ir: object, seconds: float) -> None:
        if len(path) == self.depth:
            self.seconds[path[-1]] = seconds


def compile_model(
    model: Any,
    cfg: AccelConfig | str = "default",
    *,
    calibration: Iterable[Sample],
    keep_float: Iterable[str] = (),
    cpu_only: Iterable[str] = (),
    input_shapes: Mapping[str, Sequence[int]] | None = None,
    name: str | None = None,
    progress: Callable[[str], None] | None = None,
    calibration_method: str | CalibrationMethod = "mse",
    target: str = "accel",
    scheme: str = "pow2",
) -> CompiledModel:
    """Compile ``model`` (an ONNX model, path or bytes; a ``torch.nn.Module``; or a
    :class:`Graph`) for ``cfg`` (a configuration, preset name or file), through
    :data:`STAGES` (observed by the instruments active around the call:
    :func:`compiler.pipeline.instrumented`).

    ``calibration``: sample inputs (arrays in input order, or dicts by input name) that the
    quantizer observes; ``keep_float``: nodes left in float (on the CPU); ``cpu_only``:
    quantized nodes kept off the accelerator; ``input_shapes`` fixes an ONNX model's dynamic
    input dimensions; ``progress(stage)`` is called as each stage starts;
    ``calibration_method`` chooses each activation's scale from the samples (a spec of
    :data:`~compiler.graph.passes.calibrate.CALIBRATION_METHODS`: ``"mse"``, ``"max"``,
    ``"percentile:99.9"``, ``"entropy"``; an unknown one is a GraphError). ``target``: one of
    :data:`TARGETS`, ``"accel"`` (the default) or ``"llvm [-mcpu=...]"`` (the whole model in
    float32 on the CPU, every node a CPU step; the samples only fix the inputs' shapes, and
    ``CompiledModel.graph`` is the float graph; module docstring). ``scheme``: how weights are
    quantized (:data:`~compiler.graph.passes.quantize.SCHEMES`: ``"pow2"``, VTA's, or
    ``"per-channel"``, which needs the ALU's MUL: a CompileError without ``alu_mul``). The
    compiled model holds no machine code: the host that runs it builds its CPU kernels
    (:mod:`runtime.model.kernels`).
    """
    _check_target(target)
    cfg = AccelConfig.resolve(cfg)
    keep = tuple(node_names(keep_float, "keep_float"))  # checked before the slow stages
    forced = tuple(node_names(cpu_only, "cpu_only"))
    method = _method_named(calibration_method)  # checked before the slow stages too
    _check_scheme(scheme, cfg)
    samples = tuple(s if not isinstance(s, np.ndarray) else [s] for s in calibration)
    if not samples:
        raise GraphError("compile_model needs at least one calibration sample")
    request = CompileContext(
        model,
        Env(cfg),
        samples,
        keep,
        forced,
        input_shapes,
        name,
        calibration_method=method,
        target=target,
        scheme=scheme,
    )
    stages = _Stages(len(running_passes()) + 1, progress)
    with instrumented(stages):
        done = run_pipeline(request, STAGES)
    return CompiledModel(
        _made(done.graph),
        _made(done.qgraph),
        _made(done.partition),
        _made(done.plan),
        _made(done.image),
        stages.seconds,
        done.quantization,
    )


def _check_scheme(scheme: str, cfg: AccelConfig) -> None:
    """Refuse an unknown quantization ``scheme``, or one the configuration cannot run."""
    if scheme not in SCHEMES:
        known = ", ".join(repr(n) for n in SCHEMES)
        raise CompileError(f"unknown quantization scheme {scheme!r}: the schemes are {known}")
    if scheme == "per-channel" and not cfg.alu_mul:
        raise CompileError(
            "the per-channel scheme requantises with the ALU's MUL, which this configuration "
            "lacks (alu_mul=False): use 'pow2'"
        )


def _check_target(target: str) -> None:
    """Refuse a ``target`` that is not one of :data:`TARGETS` (the CPU's with valid options)."""
    words = target.split() if isinstance(target, str) else []
    if not words or words[0] not in TARGETS or (words[0] == "accel" and len(words) > 1):
        raise CompileError(
            f"unknown target {target!r} (targets: {', '.join(TARGETS)}, 'llvm' with the CPU's "
            "options: 'llvm -mcpu=haswell')"
        )
    if words[0] == "llvm":
        Target.parse(target)


def _codegen(plan: Plan, env: Env, name: str) -> ModelImage:
    """Each accelerator step compiled into a program over the plan's addresses, its micro-op
    table after the tensors (and the tables before it); CPU steps stay descriptions (the host
    that runs the model builds their kernels: :mod:`runtime.model.kernels`)."""
    cfg = env.cfg
    cursor = plan.tensors_end
    steps = []
    for planned in plan.steps:
        program = None
        op = planned.accel
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
