"""Where accuracy goes: a compiled model and its float original run side by side, layer by layer.

:func:`compare_model` runs the float model's graph in numpy (the frontend's graph, folded as
:func:`~compiler.model.compile_model` folds it, run by :func:`compiler.graph.interpret.run_graph`)
and the compiled model on a device (``fsim`` by default; the accelerator's steps and the CPU's,
as ``runtime.load_model(...).run`` runs them), reads each step's outputs from the DRAM image as
the step ends (and each view, such as a flatten of the accelerator's output, before the step
that reads it: tensors whose lifetimes do not overlap share bytes, so nothing is read at the
end), and compares every value of the float graph that the compiled model materialises: the
compiled slot records which float value it holds and, for an int8 slot, its scale (the
``value`` and ``scale`` of :class:`runtime.model.TensorSlot`, written by ``compile_model``),
so an int8 value is dequantized (``int8 * scale``) before it is compared. Per value, the
signal-to-quantization-noise ratio ``10 log10(sum(ref^2) / sum((ref - got)^2))`` in dB (inf
where they are equal) and the relative error ``||ref - got|| / ||ref||``; the worst layer is the
one of largest relative error (lowest SQNR). A model that ran entirely in float compares at inf.

The :class:`Comparison` prints as a table, writes and reads JSON (non-finite numbers as the
strings ``"inf"`` and ``"-inf"``, so that any JSON reader takes it) and plots the SQNR per layer
(matplotlib, imported only then). ``vtaforge compare`` (:mod:`compiler.compare_cli`) is its
command line.
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass, fields
from pathlib import Path
from typing import Any

import numpy as np

from compiler.errors import GraphError, UnknownInputShape
from compiler.frontend import import_model
from compiler.graph.interpret import check_feeds, run_graph
from compiler.graph.ir import Graph
from compiler.graph.passes.fold import fold_batch_norm, fold_constants
from runtime.model import Model, ModelImage, ModelInputError, Step, TensorSlot
from runtime.opset import OPERATORS

__all__ = ["Comparison", "LayerError", "compare_model"]

#: The devices a comparison runs the compiled model on.
DEVICES = ("fsim", "sim")


@dataclass(frozen=True)
class LayerError:
    """How far one value of the float model (``name``, made by the float graph's node ``op``)
    is from the compiled model's: its ``sqnr_db`` and ``rel_error``; the compiled value's
    ``scale`` (None where the compiled model holds it in float); and the compiled step that
    wrote it (``step``, its operator ``step_op`` and ``device``: ``"accel"`` or ``"cpu"``),
    or, for a view of values the accelerator computed (a flatten, a slice of channel blocks, a
    concatenation: bytes shared, no step), ``step_op`` ``"view"`` and the step that reads it
    first."""

    name: str
    op: str
    sqnr_db: float
    rel_error: float
    scale: float | None
    step: str
    step_op: str
    device: str


@dataclass(frozen=True)
class Comparison:
    """The comparison of a compiled model (``model``) with its float original on ``device``:
    one :class:`LayerError` per compared value, in the float graph's order."""

    model: str
    device: str
    layers: tuple[LayerError, ...]

    def __post_init__(self) -> None:
        if not self.layers:
            raise GraphError("a comparison needs at least one layer")

    @property
    def worst(self) -> LayerError:
        """The layer of largest relative error (lowest SQNR); the first of equals."""
        return max(self.layers, key=lambda layer: layer.rel_error)

    def table(self) -> str:
        """One line per layer (value, float operator, compiled step, scale, SQNR, relative
        error), then the worst."""
        rows = [("layer", "float op", "compiled as", "scale", "SQNR dB", "rel. error")]
        for layer in self.layers:
            rows.append(
                (
                    layer.name,
                    layer.op,
                    f"{layer.step_op} ({layer.device})",
                    _scale_text(layer.scale),
                    _db_text(layer.sqnr_db),
                    f"{layer.rel_error:.3e}",
                )
            )
        widths = [max(len(row[k]) for row in rows) for k in range(len(rows[0]))]
        lines = [
            f"{self.model} on {self.device}: {len(self.layers)} layers against the float model"
        ]
        for row in rows:
            pairs = enumerate(zip(row, widths, strict=True))
            cells = [c.ljust(w) if k < 4 else c.rjust(w) for k, (c, w) in pairs]
            lines.append("  ".join(cells).rstrip())
        worst = self.worst
        lines.append(
            f"worst: {worst.name} ({worst.op}, {worst.step_op} on {worst.device}): SQNR "
            f"{_db_text(worst.sqnr_db)} dB, relative error {worst.rel_error:.3e}"
        )
        return "\n".join(lines)

    def to_json(self) -> str:
        """The comparison as one JSON object: ``model``, ``device``, ``layers`` (each a
        :class:`LayerError`'s fields) and ``worst`` (the worst one's)."""
        layers = [_layer_record(layer) for layer in self.layers]
        record = {
            "model": self.model,
            "device": self.device,
            "layers": layers,
            "worst": _layer_record(self.worst),
        }
        return json.dumps(record, indent=1, allow_nan=False)

    @classmethod
    def from_json(cls, text: str) -> Comparison:
        """A comparison from :meth:`to_json`'s text (a GraphError where it is not one)."""
        try:
            record = json.loads(text)
            layers = tuple(_layer_from(entry) for entry in record["layers"])
            comparison = cls(str(record["model"]), str(record["device"]), layers)
        except (ValueError, TypeError, KeyError) as err:
            raise GraphError(f"not a comparison's JSON ({type(err).__name__}: {err})") from None
        return comparison

    def bar_heights(self) -> list[float]:
        """The plot's bar of each layer: its SQNR in dB; an infinite SQNR (an exact layer) as
        the tallest bar, 1.15 times the largest finite one (10 where none is positive); minus
        infinity (a silent layer) as no bar, 0."""
        finite = [layer.sqnr_db for layer in self.layers if math.isfinite(layer.sqnr_db)]
        top = max([*finite, 0.0]) * 1.15 or 10.0
        return [_bar_height(layer.sqnr_db, top) for layer in self.layers]

    def plot(self, path: str | Path) -> None:
        """A PNG at ``path``: the SQNR of every layer as bars (inf drawn as the tallest bar
        marked "inf"), the worst in red."""
        from simulator.plots import pyplot

        plt = pyplot()
        heights = self.bar_heights()
        worst = self.worst
        colors = ["tab:red" if layer is worst else "tab:blue" for layer in self.layers]
        fig, ax = plt.subplots(figsize=(max(6.0, 0.45 * len(self.layers) + 2), 4.5))
        positions = range(len(self.layers))
        ax.bar(positions, heights, color=colors)
        ax.plot(positions, heights, color="0.3", marker="o", linewidth=1)
        for k, layer in enumerate(self.layers):
            if not math.isfinite(layer.sqnr_db):
                ax.annotate(_db_text(layer.sqnr_db), (k, heights[k]), ha="center", va="bottom")
        names = [layer.name for layer in self.layers]
        ax.set_xticks(list(positions), names, rotation=60, ha="right", rotation_mode="anchor")
        ax.tick_params(axis="x", labelsize=8)
        ax.set_ylabel("SQNR (dB)")
        ax.set_title(
            f"{self.model} on {self.device}: worst {worst.name} ({_db_text(worst.sqnr_db)} dB)"
        )
        fig.tight_layout()
        fig.savefig(path, dpi=110)
        plt.close(fig)


def compare_model(
    float_model: Any,
    compiled: Any,
    inputs: Mapping[str, np.ndarray] | Sequence[np.ndarray] | np.ndarray,
    device: str = "fsim",
    *,
    native_kernels: bool = True,
) -> Comparison:
    """Compare ``compiled`` (a ``.vtaf`` path, a :class:`~runtime.model.ModelImage`, a loaded
    :class:`~runtime.model.Model` or a :class:`~compiler.model.CompiledModel`) with
    ``float_model`` (what :func:`~compiler.model.compile_model` takes: an ONNX model, path or
    bytes, a ``torch.nn.Module``, a graph) on ``inputs`` (an array, arrays in input order, or
    by name), running the compiled model on ``device`` (``"fsim"`` or ``"sim"``; its CPU steps
    with this host's native kernels unless ``native_kernels`` is False); see the module
    docstring. A mismatch is a :class:`~compiler.errors.GraphError`: inputs that are not the
    compiled model's, a float model with other inputs, or one with no value in common with
    the compiled model (not the same model), or a compiled model that records no float value
    (compiled before ``vtaforge compare`` existed: compile it again)."""
    if device not in DEVICES:
        raise GraphError(f"compare runs on {' or '.join(DEVICES)}, not {device!r}")
    model = _loaded(compiled, native_kernels)
    try:
        feeds = model.feeds(inputs)
    except ModelInputError as err:
        raise GraphError(f"the compiled model: {err}") from None
    graph = _float_graph(float_model, feeds)
    if set(graph.inputs) != set(feeds):
        raise GraphError(
            f"the float model's inputs ({', '.join(graph.inputs)}) are not the compiled "
            f"model's ({', '.join(feeds)}): not the same model"
        )
    recorded = [slot for slot in model.image.tensors.values() if slot.value is not None]
    if not recorded:
        raise GraphError(
            f"the compiled model {model.image.name!r} records no float value for its tensors "
            "(compiled by an older vtaforge): compile it again"
        )
    reference = run_graph(graph, check_feeds(graph, feeds), keep=True)
    captured = _run(model, feeds, device)
    layers = _layers(graph, reference, captured)
    if not layers:
        raise GraphError(
            f"no value of the float model {graph.name!r} has a counterpart in the compiled "
            f"model {model.image.name!r} (of the same name and shape): not the same model"
        )
    return Comparison(model.image.name, device, tuple(layers))


# ---------------------------------------------------------------------------- the two sides
def _loaded(compiled: Any, native_kernels: bool) -> Model:
    """``compiled`` as a runtime model (see :func:`compare_model`)."""
    if isinstance(compiled, Model):
        return compiled
    image = getattr(compiled, "image", compiled)  # a CompiledModel carries its image
    if isinstance(compiled, str | Path):
        image = ModelImage.load(compiled)
    if not isinstance(image, ModelImage):
        raise GraphError(
            f"compare needs a compiled model (a .vtaf path, a ModelImage, a Model or a "
            f"CompiledModel), got {type(compiled).__name__}"
        )
    return Model(image, native_kernels=native_kernels)


def _float_graph(float_model: Any, feeds: Mapping[str, np.ndarray]) -> Graph:
    """The float model's graph as ``compile_model`` folds it before quantizing (so that its
    values have the names the compiled model records); an ONNX input whose shape is not fixed
    takes the input array's."""
    examples = list(feeds.values())
    try:
        graph = import_model(float_model, examples)
    except UnknownInputShape:
        shapes = {name: array.shape for name, array in feeds.items()}
        graph = import_model(float_model, examples, shapes)
    return fold_batch_norm(fold_constants(graph))


def _run(model: Model, feeds: Mapping[str, np.ndarray], device: str) -> dict[str, _Captured]:
    """Run ``model`` on ``device``, reading every slot that records a float value as soon as it
    holds it: a step's outputs as the step ends, and the slots the next step reads (views
    among them) before it starts; the first reading of each slot is kept."""
    steps = model.image.steps
    captured: dict[str, _Captured] = {}
    index = 0

    def after(step: Step, dram: np.ndarray) -> None:
        nonlocal index
        index += 1
        following = steps[index] if index < len(steps) else None
        reads = [(n, following) for n in following.inputs] if following is not None else []
        for name, writer in [*((n, step) for n in step.outputs), *reads]:
            slot = model.image.tensors[name]
            if slot.value is not None and name not in captured:
                if writer is not step:  # a view: the bytes of a value computed before
                    writer = Step(writer.node, "view", "accel", (), (name,))
                captured[name] = _Captured(slot, slot.view(dram).copy(), writer)

    model.run(feeds, device, after_step=after)
    return captured


@dataclass(frozen=True)
class _Captured:
    """A slot's contents as the run left them, and the step that wrote them (or ran just
    before they were read)."""

    slot: TensorSlot
    array: np.ndarray
    step: Step


def _layers(
    graph: Graph, reference: Mapping[str, np.ndarray], captured: Mapping[str, _Captured]
) -> list[LayerError]:
    """One :class:`LayerError` per value of ``graph`` computed by a node, of a float dtype,
    that a captured slot holds (an int8 one preferred: it says the scale)."""
    by_value: dict[str, list[_Captured]] = {}
    for item in captured.values():
        by_value.setdefault(item.slot.value, []).append(item)
    layers = []
    for node in graph.nodes:
        for value in node.outputs:
            ref = reference.get(value)
            if ref is None or ref.dtype.kind != "f" or value not in by_value:
                continue
            found = _held(by_value[value], ref.shape)
            if found is None:
                continue
            item, got = found
            sqnr, rel = _errors(ref, got)
            layers.append(
                LayerError(
                    value,
                    node.op.value,
                    sqnr,
                    rel,
                    item.slot.scale,
                    item.step.node,
                    item.step.op,
                    item.step.device,
                )
            )
    return layers


def _held(items: list[_Captured], shape: tuple[int, ...]) -> tuple[_Captured, np.ndarray] | None:
    """The first of ``items`` (int8 ones first) that holds a value of ``shape``, with that
    value in float64 (unpacked from the blocked layout, dequantized by its scale)."""
    for item in sorted(items, key=lambda i: i.slot.scale is None):
        array = item.array
        if item.slot.layout == "packed":
            if len(shape) < 2 or array.ndim < 4:
                continue
            unpack = OPERATORS["Unpack"].kernel
            array = unpack(array, batch=array.shape[-2], block=array.shape[-1], channels=shape[1])
        if array.shape != shape:
            continue
        values = array.astype(np.float64)
        return item, values * item.slot.scale if item.slot.scale is not None else values
    return None


def _errors(reference: np.ndarray, got: np.ndarray) -> tuple[float, float]:
    """(SQNR in dB, relative error) of ``got`` against ``reference``."""
    ref = reference.astype(np.float64)
    signal = float(np.sum(ref * ref))
    noise = float(np.sum((ref - got) ** 2))
    if noise == 0:
        return math.inf, 0.0
    if signal == 0:
        return -math.inf, math.inf
    return 10 * math.log10(signal / noise), math.sqrt(noise / signal)


# -------------------------------------------------------------------------- text and JSON
def _scale_text(scale: float | None) -> str:
    if scale is None:
        return "float"
    exponent = math.log2(scale)
    return f"2^{int(exponent)}" if exponent.is_integer() else f"{scale:.4g}"


def _db_text(db: float) -> str:
    return f"{db:.2f}" if math.isfinite(db) else ("inf" if db > 0 else "-inf")


def _bar_height(db: float, top: float) -> float:
    if math.isfinite(db):
        return db
    return top if db > 0 else 0.0


def _number(value: float | None) -> float | str | None:
    """A JSON number, or ``"inf"``/``"-inf"`` for what JSON cannot write."""
    if value is None or math.isfinite(value):
        return value
    return "inf" if value > 0 else "-inf"


def _layer_record(layer: LayerError) -> dict[str, Any]:
    record = asdict(layer)
    for key in ("sqnr_db", "rel_error", "scale"):
        record[key] = _number(record[key])
    return record


def _float_field(record: Mapping[str, Any], key: str, optional: bool = False) -> float | None:
    value = record[key]
    if value is None and optional:
        return None
    if value in ("inf", "-inf"):
        return float(value)
    if not isinstance(value, int | float) or isinstance(value, bool):
        raise TypeError(f"{key} must be a number or 'inf', got {value!r}")
    return float(value)


def _layer_from(record: Mapping[str, Any]) -> LayerError:
    names = {f.name for f in fields(LayerError)}
    if not isinstance(record, Mapping) or set(record) != names:
        raise KeyError(f"a layer needs exactly the fields {sorted(names)}")
    texts = {key: record[key] for key in ("name", "op", "step", "step_op", "device")}
    if not all(isinstance(text, str) for text in texts.values()):
        raise TypeError("a layer's names must be strings")
    return LayerError(
        sqnr_db=_float_field(record, "sqnr_db"),
        rel_error=_float_field(record, "rel_error"),
        scale=_float_field(record, "scale", optional=True),
        **texts,
    )
