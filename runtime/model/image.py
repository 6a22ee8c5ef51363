"""A compiled model as an artefact: :class:`ModelImage`, and its file format.

A model runs on one DRAM image (the memory the host and the accelerator share, as on a Zynq):
parameters at the bottom (``params``: the bytes of ``[0, len(params))``), then every tensor at
the address the compiler's memory planner gave it (tensors whose lifetimes do not overlap share
bytes), then each accelerator program's micro-op table. ``steps`` run in order: an accelerator
step runs its :class:`isa.Program` against the image; a CPU step runs a numpy kernel of
:mod:`runtime.opset` on views of it.

A model is data: a CPU step is described by its operator, attributes and slots, and the file
holds no machine code; the host builds native kernels from those descriptions where it can
(:mod:`runtime.model.kernels`).

File format (``.vtaf``, version :data:`FORMAT_VERSION`): a zip archive (stored) of
``manifest.json`` (format version, configuration, tensors, steps, the size and digest of
``params.bin``, a digest per step and one of the manifest), ``params.bin``,
``programs/NNN.bin`` (each an :class:`isa.Program` binary, loadable and runnable on its own
with ``vtaforge sim``).

Loading checks the whole file before anything runs, and every disagreement is a
:class:`ModelFormatError` naming the field, tensor or step: members read within the limits of
:mod:`runtime.model.archive`; every field's type; ``dram_bytes`` at most the configuration's
address space and :data:`~runtime.model.archive.MAX_MODEL_BYTES`; every tensor slot of a known
dtype and shape, inside the DRAM image and aligned as the planner aligns (:func:`alignment`, or
inside a tensor that is: a view), and, where a slot says which value of the float model it holds
(optional: ``value``, with ``scale`` for an int8 slot, what ``vtaforge compare`` reads), a name
and a positive, finite scale on an int8 slot; the digests; every step's tensors known, a CPU step's
attributes and slots agreeing with its operator's type rule (so a kernel built from the
description computes what the numpy kernel would), an accelerator step's program decodable for
the configuration, its micro-op table after the tensors and every DRAM transfer inside the
image. Version 1 files
(before digests) and 2 (whose CPU steps carried host shared libraries) are refused: recompile
them.
"""

from __future__ import annotations

import dataclasses
import hashlib
import inspect
import io
import json
import math
import types
import typing
import zipfile
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from isa import AccelConfig, MemId, MemInsn, Program, VtaforgeError
from runtime.devices.dma import transfer_span
from runtime.model.archive import (
    MANIFEST,
    MAX_MODEL_BYTES,
    PARAMS,
    Members,
    ModelFormatError,
    manifest_digest,
    sign,
    step_digest,
)
from runtime.opset import DTYPES, OPERATORS, Operator, OperatorError, TensorType
from simulator.errors import describe

__all__ = [
    "FORMAT_VERSION",
    "ModelFormatError",
    "ModelImage",
    "Step",
    "TensorSlot",
    "alignment",
]

#: 3: no machine code (2's CPU steps carried shared libraries); 2: digests of the steps,
#: ``params.bin`` and the manifest (1 had none).
FORMAT_VERSION = 3
#: The most dimensions a tensor may have (numpy's limit before 2.0).
MAX_RANK = 32
_LAYOUTS = ("plain", "packed")
#: Each device's steps, by the members they may have.
_DEVICES = {"accel": (("program",),), "cpu": ((),)}


@dataclass(frozen=True)
class TensorSlot:
    """Where a tensor lives in the DRAM image: ``shape`` and ``dtype`` as stored (``layout``
    ``"packed"`` is the accelerator's blocked layout, ``"plain"`` numpy's C order).

    ``value``, where the compiler recorded it, names the value of the float model (before
    quantization) that the slot holds, and ``scale`` (int8 slots only) the factor that makes
    its integers that value (``float ~ int8 * scale``): what tools that compare a compiled
    model with its float original read (``vtaforge compare``); both None otherwise."""

    name: str
    shape: tuple[int, ...]
    dtype: str
    address: int
    layout: str = "plain"
    value: str | None = None
    scale: float | None = None

    @property
    def nbytes(self) -> int:
        return math.prod(self.shape) * np.dtype(self.dtype).itemsize

    @property
    def end(self) -> int:
        """The first byte address after the tensor."""
        return self.address + self.nbytes

    def view(self, dram: np.ndarray) -> np.ndarray:
        """The tensor as a numpy view into ``dram``."""
        raw = dram[self.address : self.end]
        return raw.view(np.dtype(self.dtype).newbyteorder("<")).reshape(self.shape)

    def record(self) -> dict[str, Any]:
        """The slot as the manifest writes it (``value`` and ``scale`` only where set)."""
        record: dict[str, Any] = {
            "name": self.name,
            "shape": list(self.shape),
            "dtype": self.dtype,
            "address": self.address,
            "layout": self.layout,
        }
        if self.value is not None:
            record["value"] = self.value
        if self.scale is not None:
            record["scale"] = self.scale
        return record


@dataclass(frozen=True)
class Step:
    """One step of the model: a graph node (or a layout change the compiler added).

    ``device`` is ``"accel"`` (``program`` set) or ``"cpu"`` (``op`` names the operator in
    :data:`runtime.opset.OPERATORS`, ``attrs`` its kernel's keyword arguments). ``macs`` counts
    the multiply-accumulates the node performs (0 for data movement), for the report.
    """

    node: str
    op: str
    device: str
    inputs: tuple[str, ...]
    outputs: tuple[str, ...]
    attrs: dict[str, Any] = field(default_factory=dict)
    program: Program | None = None
    macs: int = 0


def alignment(cfg: AccelConfig) -> int:
    """The alignment of every tensor the model planner places: the largest element any
    accelerator buffer moves, as the DMA requires."""
    return max(cfg.elem_bytes(m) for m in (MemId.INP, MemId.WGT, MemId.ACC, MemId.OUT, MemId.UOP))


@dataclass(frozen=True)
class ModelImage:
    """Everything a compiled model is (see the module docstring)."""

    name: str
    config: AccelConfig
    dram_bytes: int
    inputs: tuple[str, ...]
    outputs: tuple[str, ...]
    tensors: dict[str, TensorSlot]
    steps: tuple[Step, ...]
    params: bytes
    notes: dict[str, Any] = field(default_factory=dict)

    def save(self, path: str | Path) -> None:
        """Write the model to ``path`` (a ``.vtaf`` file)."""
        Path(path).write_bytes(self.to_bytes())

    def to_bytes(self) -> bytes:
        """The model as a ``.vtaf`` file's bytes, digests included."""
        members: dict[str, bytes] = {PARAMS: self.params}
        steps = []
        for index, step in enumerate(self.steps):
            entry = {
                "node": step.node,
                "op": step.op,
                "device": step.device,
                "inputs": list(step.inputs),
                "outputs": list(step.outputs),
                "attrs": step.attrs,
                "macs": step.macs,
            }
            if step.program is not None:
                entry["program"] = f"programs/{index:03d}.bin"
                members[entry["program"]] = step.program.to_bytes()
            steps.append(entry)
        manifest = {
            "format": FORMAT_VERSION,
            "name": self.name,
            "config": json.loads(self.config.to_json()),
            "dram_bytes": self.dram_bytes,
            "inputs": list(self.inputs),
            "outputs": list(self.outputs),
            "tensors": [t.record() for t in self.tensors.values()],
            "steps": steps,
            "notes": self.notes,
        }
        sign(manifest, members)
        return _zip({MANIFEST: json.dumps(manifest, indent=1).encode(), **members})

    @classmethod
    def load(cls, path: str | Path) -> ModelImage:
        """Read a model written by :meth:`save`, checked whole (module docstring)."""
        try:
            with Path(path).open("rb") as file:
                data = file.read(MAX_MODEL_BYTES + 1)
        except OSError as err:
            raise ModelFormatError(f"{path}: {err.strerror or err}") from None
        if len(data) > MAX_MODEL_BYTES:
            raise ModelFormatError(f"{path}: larger than a model may be ({MAX_MODEL_BYTES:,} B)")
        return cls.from_bytes(data, source=str(path))

    @classmethod
    def from_bytes(cls, data: bytes, *, source: str = "model") -> ModelImage:
        """Read a model from a ``.vtaf`` file's bytes, checked whole; ``source`` names it in
        the :class:`ModelFormatError` of any disagreement."""
        try:
            return _Reader(Members(data)).image()
        except ModelFormatError as err:
            raise ModelFormatError(f"{source}: {err}") from None


#: The date every member of a model file carries (zip's earliest), so that the same model
#: always writes the same bytes.
_MEMBER_DATE = (1980, 1, 1, 0, 0, 0)


def _zip(members: Mapping[str, bytes]) -> bytes:
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", zipfile.ZIP_STORED) as archive:
        for name, data in members.items():
            archive.writestr(zipfile.ZipInfo(name, date_time=_MEMBER_DATE), data)
    return buffer.getvalue()


# ---------------------------------------------------------------------- reading a manifest
_MANIFEST_KEYS = ("format", "name", "config", "dram_bytes", "inputs", "outputs", "tensors")
_MANIFEST_KEYS += ("steps", "params", "digest")
_SLOT_KEYS = ("name", "shape", "dtype", "address", "layout")
#: What a slot may say of the float model's value it holds (:class:`TensorSlot`).
_SLOT_ORIGIN = ("value", "scale")
_STEP_KEYS = ("node", "op", "device", "inputs", "outputs", "attrs", "macs", "digest")
_MEMBERS = ("program",)
_KINDS = {int: "an integer", str: "a string", list: "a list", dict: "an object"}


def _show(value: object) -> str:
    text = repr(value)
    return text if len(text) <= 40 else text[:37] + "..."


def _keys(
    record: object, where: str, required: tuple[str, ...], optional: tuple[str, ...]
) -> dict[str, Any]:
    """``record``, which must be a JSON object with every ``required`` key and no other than
    the ``optional`` ones."""
    if not isinstance(record, dict):
        raise ModelFormatError(f"{where} must be an object, got {_show(record)}")
    missing = [k for k in required if k not in record]
    unknown = sorted(k for k in record if k not in required + optional)
    if missing or unknown:
        problem = f"lacks {missing[0]!r}" if missing else f"has an unknown field {unknown[0]!r}"
        raise ModelFormatError(f"{where} {problem}")
    return record


def _get(record: Mapping[str, Any], key: str, where: str, kind: type) -> Any:
    """``record[key]``, which must be of ``kind`` (a bool is no integer)."""
    value = record[key]
    if not isinstance(value, kind) or (kind is int and isinstance(value, bool)):
        raise ModelFormatError(f"{where}: {key} must be {_KINDS[kind]}, got {_show(value)}")
    return value


def _count(record: Mapping[str, Any], key: str, where: str, high: int) -> int:
    """``record[key]``, an integer in ``[0, high]``."""
    value = _get(record, key, where, int)
    if not 0 <= value <= high:
        raise ModelFormatError(f"{where}: {key} {_show(value)} is not in [0, {high:,}]")
    return value


def _names(record: Mapping[str, Any], key: str, where: str, known: Mapping[str, Any]):
    """``record[key]``: a non-empty list of distinct names of ``known``, as a tuple."""
    names = _get(record, key, where, list)
    if not names:
        raise ModelFormatError(f"{where}: {key} is empty")
    for name in names:
        if not isinstance(name, str) or name not in known:
            raise ModelFormatError(f"{where}: {key} names no tensor slot: {_show(name)}")
    if len(set(names)) < len(names):
        raise ModelFormatError(f"{where}: {key} names a tensor twice")
    return tuple(names)


def _origin(record: Mapping[str, Any], where: str, dtype: str) -> tuple[str | None, float | None]:
    """A slot's optional ``value`` (a non-empty name) and ``scale`` (positive and finite, on
    an int8 slot that names its value)."""
    value = _get(record, "value", where, str) if "value" in record else None
    if value == "":
        raise ModelFormatError(f"{where}: value is an empty name")
    if "scale" not in record:
        return value, None
    scale = record["scale"]
    if not isinstance(scale, int | float) or isinstance(scale, bool):
        raise ModelFormatError(f"{where}: scale must be a number, got {_show(scale)}")
    if not (math.isfinite(scale) and scale > 0):
        raise ModelFormatError(f"{where}: scale {_show(scale)} is not positive and finite")
    if value is None or dtype != "int8":
        raise ModelFormatError(
            f"{where}: a scale belongs to an int8 slot that names its value (this one is "
            f"{dtype}{', with no value' if value is None else ''})"
        )
    return value, float(scale)


def _digest(record: Mapping[str, Any], key: str, where: str, expected: str) -> None:
    if record[key] != expected:
        raise ModelFormatError(
            f"{where}: the {key} does not match the content (edited, swapped or truncated)"
        )


def _attr_value(where: str, hint: Any, value: Any) -> Any:
    """A JSON attribute value checked against its record field's type ``hint`` (lists become
    tuples)."""
    origin, args = typing.get_origin(hint), typing.get_args(hint)
    if origin is types.UnionType:
        if value is None and type(None) in args:
            return None
        (hint,) = (a for a in args if a is not type(None))
        return _attr_value(where, hint, value)
    if origin is tuple:
        variadic = len(args) == 2 and args[1] is Ellipsis
        if not isinstance(value, list) or not (variadic or len(value) == len(args)):
            raise ModelFormatError(f"{where} must be a list of {len(args)}, got {_show(value)}")
        return tuple(_attr_value(where, args[0 if variadic else k], v) for k, v in enumerate(value))
    accepted = (int, float) if hint is float else hint
    if not isinstance(value, accepted) or (hint is not bool and isinstance(value, bool)):
        raise ModelFormatError(f"{where} must be a {hint.__name__}, got {_show(value)}")
    return value


def _attrs(where: str, operator: type[Operator], attrs: Mapping[str, Any]) -> Any:
    """``attrs`` as ``operator``'s attribute record, each value of its field's type."""
    hints = typing.get_type_hints(operator.Attrs)
    for name in attrs:
        if name not in hints:
            raise ModelFormatError(f"{where}: {operator.name} has no attribute {name!r}")
    for f in dataclasses.fields(operator.Attrs):
        needed = f.default is dataclasses.MISSING and f.default_factory is dataclasses.MISSING
        if needed and f.name not in attrs:
            raise ModelFormatError(f"{where}: {operator.name} needs the attribute {f.name!r}")
    values = {k: _attr_value(f"{where}: attribute {k}", hints[k], v) for k, v in attrs.items()}
    return operator.Attrs(**values)


class _Reader:
    """One archive's manifest read into a :class:`ModelImage` (the module docstring's
    checks, in order: version, fields, configuration, tensors, parameters, steps, digest)."""

    def __init__(self, members: Members) -> None:
        self.members = members
        self.manifest = members.manifest()

    def image(self) -> ModelImage:
        manifest = self.manifest
        version = manifest.get("format")
        if version in (1, 2):
            why = "predates digests" if version == 1 else "carried host machine code"
            raise ModelFormatError(f"format version {version} {why}: compile the model again")
        if version != FORMAT_VERSION:
            raise ModelFormatError(
                f"format version {_show(version)}, this vtaforge reads {FORMAT_VERSION}"
            )
        _keys(manifest, "the manifest", _MANIFEST_KEYS, ("notes",))
        self.cfg = self._config()
        limit = min(2**self.cfg.dram_addr_bits, MAX_MODEL_BYTES)
        self.dram_bytes = _count(manifest, "dram_bytes", "the manifest", limit)
        self.tensors = self._tensors()
        self.params = self._params()
        inputs = _names(manifest, "inputs", "the manifest", self.tensors)
        outputs = _names(manifest, "outputs", "the manifest", self.tensors)
        steps = _get(manifest, "steps", "the manifest", list)
        self.tensors_end = max((t.end for t in self.tensors.values()), default=0)
        image = ModelImage(
            _get(manifest, "name", "the manifest", str),
            self.cfg,
            self.dram_bytes,
            inputs,
            outputs,
            self.tensors,
            tuple(self._step(index, entry) for index, entry in enumerate(steps)),
            self.params,
            _get(manifest, "notes", "the manifest", dict) if "notes" in manifest else {},
        )
        _get(manifest, "digest", "the manifest", str)
        _digest(manifest, "digest", "the manifest", manifest_digest(manifest))
        return image

    def _config(self) -> AccelConfig:
        config = _get(self.manifest, "config", "the manifest", dict)
        try:
            return AccelConfig.from_json(json.dumps(config), source="the manifest's config")
        except VtaforgeError as err:
            raise ModelFormatError(str(err)) from None

    # ------------------------------------------------------------------ tensors
    def _tensors(self) -> dict[str, TensorSlot]:
        tensors: dict[str, TensorSlot] = {}
        for index, record in enumerate(_get(self.manifest, "tensors", "the manifest", list)):
            slot = self._slot(f"tensor {index}", record)
            if slot.name in tensors:
                raise ModelFormatError(f"tensor {index}: a second slot named {slot.name!r}")
            tensors[slot.name] = slot
        self._check_alignment(tensors)
        return tensors

    def _slot(self, where: str, record: object) -> TensorSlot:
        record = _keys(record, where, _SLOT_KEYS, _SLOT_ORIGIN)
        name = _get(record, "name", where, str)
        where = f"tensor {name!r}"
        shape = _get(record, "shape", where, list)
        if len(shape) > MAX_RANK:
            raise ModelFormatError(f"{where}: {len(shape)} dimensions, more than {MAX_RANK}")
        if any(not isinstance(d, int) or isinstance(d, bool) or d < 0 for d in shape):
            raise ModelFormatError(f"{where}: shape {_show(shape)} is not of integers >= 0")
        dtype, layout = record["dtype"], record["layout"]
        if dtype not in DTYPES:
            raise ModelFormatError(f"{where}: dtype {_show(dtype)} is not one of the runtime's")
        if layout not in _LAYOUTS:
            raise ModelFormatError(f"{where}: layout {_show(layout)} is not one of {_LAYOUTS}")
        address = _count(record, "address", where, self.dram_bytes)
        value, scale = _origin(record, where, dtype)
        slot = TensorSlot(name, tuple(shape), dtype, address, layout, value, scale)
        if slot.end > self.dram_bytes:
            raise ModelFormatError(
                f"{where}: bytes [{address:#x}, {slot.end:#x}) lie outside the DRAM image "
                f"({self.dram_bytes:#x} bytes)"
            )
        if address % np.dtype(dtype).itemsize:
            raise ModelFormatError(f"{where}: address {address:#x} is not {dtype}-aligned")
        return slot

    def _check_alignment(self, tensors: Mapping[str, TensorSlot]) -> None:
        """Every slot at an address :func:`alignment` divides, or inside one that is (a view
        of part of a tensor, as the planner makes for slices and concatenations)."""
        align = alignment(self.cfg)
        roots = [t for t in tensors.values() if t.address % align == 0]
        for slot in tensors.values():
            if slot.address % align and not any(
                r.address <= slot.address and slot.end <= r.end for r in roots
            ):
                raise ModelFormatError(
                    f"tensor {slot.name!r}: address {slot.address:#x} is not a multiple of "
                    f"{align} nor inside a tensor that is"
                )

    def _params(self) -> bytes:
        where = "the manifest's params"
        record = _keys(self.manifest["params"], where, ("size", "sha256"), ())
        size = _count(record, "size", where, self.dram_bytes)
        params = self.members.read(PARAMS, where, size)
        _digest(record, "sha256", where, hashlib.sha256(params).hexdigest())
        return params

    # ------------------------------------------------------------------ steps
    def _step(self, index: int, entry: object) -> Step:
        where = f"step {index}"
        entry = _keys(entry, where, _STEP_KEYS, _MEMBERS)
        where = f"step {index} ({_get(entry, 'node', where, str)})"
        device = _get(entry, "device", where, str)
        members = tuple(k for k in _MEMBERS if k in entry)
        if device not in _DEVICES or members not in _DEVICES[device]:
            raise ModelFormatError(
                f"{where}: device {_show(device)} with {' and '.join(members) or 'no member'} "
                "(an accel step has a program, a cpu step none)"
            )
        blobs = {
            k: self.members.read(_get(entry, k, where, str), where) for k in _MEMBERS if k in entry
        }
        inputs = _names(entry, "inputs", where, self.tensors)
        outputs = _names(entry, "outputs", where, self.tensors)
        slots = [self.tensors[n].record() for n in (*inputs, *outputs)]
        _get(entry, "digest", where, str)
        _digest(entry, "digest", where, step_digest(index, entry, slots, list(blobs.values())))
        op = _get(entry, "op", where, str)
        if op not in OPERATORS:
            raise ModelFormatError(f"{where}: no operator {_show(op)}")
        step = Step(
            entry["node"],
            op,
            device,
            inputs,
            outputs,
            _get(entry, "attrs", where, dict),
            self._program(where, blobs["program"]) if "program" in blobs else None,
            _count(entry, "macs", where, 2**63),
        )
        if step.program is None:
            self._check_cpu(where, step)
        return step

    def _check_cpu(self, where: str, step: Step) -> None:
        """A CPU step's attributes and slots agree with its operator's type rule."""
        operator = OPERATORS[step.op]
        record = _attrs(where, operator, step.attrs)
        # what the kernels take without a default, the file must give
        for parameter in inspect.signature(operator.kernel).parameters.values():
            required = parameter.kind is parameter.KEYWORD_ONLY
            if (
                required
                and parameter.default is parameter.empty
                and parameter.name not in step.attrs
            ):
                raise ModelFormatError(f"{where}: {step.op} needs the attribute {parameter.name!r}")
        slots = [self.tensors[n] for n in step.inputs]
        operands = [TensorType(t.shape, t.dtype) for t in slots]
        params = np.frombuffer(self.params, np.uint8)
        consts = [t.view(params) if t.end <= len(params) else None for t in slots]
        try:
            expected = operator.output_types(record, operands, consts)
        except OperatorError as err:
            raise ModelFormatError(f"{where}: {step.op} refuses its operands: {err}") from None
        except (ArithmeticError, LookupError, TypeError, ValueError) as err:
            # a type rule that does not type its complaint about a hostile attribute value
            raise ModelFormatError(
                f"{where}: {step.op} cannot type its operands ({err!r})"
            ) from None
        got = [TensorType(self.tensors[n].shape, self.tensors[n].dtype) for n in step.outputs]
        if got != list(expected):
            raise ModelFormatError(
                f"{where}: {step.op} gives {', '.join(map(str, expected))}, the step's outputs "
                f"are {', '.join(map(str, got))}"
            )

    def _program(self, where: str, data: bytes) -> Program:
        """The step's program, for the configuration, its micro-op table and data segments
        (which a device writes into the image) between the tensors and the image's end, and
        its regions and transfers inside the image."""
        try:
            program = Program.from_bytes(data, config=self.cfg)
        except VtaforgeError as err:
            raise ModelFormatError(f"{where}: its program: {err}") from None
        written = [(s.address, s.end, f"its data segment {s.name}") for s in program.segments]
        if program.uops:
            written.append((*program.uop_region, "its micro-op table"))
        for start, _, what in written:
            if start < self.tensors_end:
                raise ModelFormatError(
                    f"{where}: {what} at {start:#x} overlaps the tensors (which end at "
                    f"{self.tensors_end:#x})"
                )
        reached = [*written, *((r.address, r.end, f"its region {r.name}") for r in program.regions)]
        for index, insn in enumerate(program.instructions):
            span = transfer_span(self.cfg, insn) if isinstance(insn, MemInsn) else None
            if span is not None:
                reached.append((*span, describe(index, insn)))
        for start, end, what in reached:
            if end > self.dram_bytes:
                raise ModelFormatError(
                    f"{where}: {what} reaches bytes [{start:#x}, {end:#x}), past the DRAM image "
                    f"({self.dram_bytes:#x} bytes)"
                )
        return program
