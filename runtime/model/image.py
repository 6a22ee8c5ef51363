"""A compiled model as an artefact: :class:`ModelImage`, and its file format.

A model runs on one DRAM image (the memory the host and the accelerator share, as on a Zynq):
parameters at the bottom (``params``: the bytes of ``[0, len(params))``), then every tensor at
the address the compiler's memory planner gave it (tensors whose lifetimes do not overlap share
bytes), then each accelerator program's micro-op table. ``steps`` run in order: an accelerator
step runs its :class:`isa.Program` against the image; a CPU step runs a numpy kernel of
:mod:`runtime.opset` on views of it.

A CPU step may carry a shared library (compiled by the compiler's LLVM backend) exporting
:data:`LIBRARY_ENTRY`, called with one pointer per input, then the output, then a null parallel
launcher; where it cannot be loaded (another architecture) the step's numpy kernel runs instead.

File format (``.vtaf``): a zip archive (stored, not compressed) of ``manifest.json`` (format
version, configuration, tensors, steps), ``params.bin``, ``programs/NNN.bin`` (each an
:class:`isa.Program` binary, loadable and runnable on its own with ``vtaforge sim``) and
``kernels/NNN.so`` (the CPU steps' libraries).
"""

from __future__ import annotations

import io
import json
import zipfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from isa import AccelConfig, Program, VtaforgeError

__all__ = [
    "FORMAT_VERSION",
    "LIBRARY_ENTRY",
    "ModelFormatError",
    "ModelImage",
    "Step",
    "TensorSlot",
]

FORMAT_VERSION = 1
#: The symbol a CPU step's shared library exports.
LIBRARY_ENTRY = "vtaforge_step"
_MANIFEST = "manifest.json"
_PARAMS = "params.bin"


class ModelFormatError(VtaforgeError, ValueError):
    """A file is not a compiled model this version can read, or its contents disagree."""


@dataclass(frozen=True)
class TensorSlot:
    """Where a tensor lives in the DRAM image: ``shape`` and ``dtype`` as stored (``layout``
    ``"packed"`` is the accelerator's blocked layout, ``"plain"`` numpy's C order)."""

    name: str
    shape: tuple[int, ...]
    dtype: str
    address: int
    layout: str = "plain"

    @property
    def nbytes(self) -> int:
        return int(np.prod(self.shape, dtype=np.int64)) * np.dtype(self.dtype).itemsize

    def view(self, dram: np.ndarray) -> np.ndarray:
        """The tensor as a numpy view into ``dram``."""
        raw = dram[self.address : self.address + self.nbytes]
        return raw.view(np.dtype(self.dtype).newbyteorder("<")).reshape(self.shape)


@dataclass(frozen=True)
class Step:
    """One step of the model: a graph node (or a layout change the compiler added).

    ``device`` is ``"accel"`` (``program`` set) or ``"cpu"`` (``op`` names the operator in
    :data:`runtime.opset.OPERATORS`, ``attrs`` its kernel's keyword arguments, ``library`` the
    compiled shared library where there is one). ``macs`` counts the multiply-accumulates the node
    performs (0 for data movement), for the report.
    """

    node: str
    op: str
    device: str
    inputs: tuple[str, ...]
    outputs: tuple[str, ...]
    attrs: dict[str, Any] = field(default_factory=dict)
    program: Program | None = None
    macs: int = 0
    library: bytes | None = field(default=None, repr=False)


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
        buffer = io.BytesIO()
        with zipfile.ZipFile(buffer, "w", zipfile.ZIP_STORED) as archive:
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
                    archive.writestr(entry["program"], step.program.to_bytes())
                if step.library is not None:
                    entry["library"] = f"kernels/{index:03d}.so"
                    archive.writestr(entry["library"], step.library)
                steps.append(entry)
            manifest = {
                "format": FORMAT_VERSION,
                "name": self.name,
                "config": json.loads(self.config.to_json()),
                "dram_bytes": self.dram_bytes,
                "inputs": list(self.inputs),
                "outputs": list(self.outputs),
                "tensors": [
                    {
                        "name": t.name,
                        "shape": list(t.shape),
                        "dtype": t.dtype,
                        "address": t.address,
                        "layout": t.layout,
                    }
                    for t in self.tensors.values()
                ],
                "steps": steps,
                "notes": self.notes,
            }
            archive.writestr(_MANIFEST, json.dumps(manifest, indent=1))
            archive.writestr(_PARAMS, self.params)
        return buffer.getvalue()

    @classmethod
    def load(cls, path: str | Path) -> ModelImage:
        """Read a model written by :meth:`save`."""
        try:
            data = Path(path).read_bytes()
        except OSError as err:
            raise ModelFormatError(f"{path}: {err.strerror or err}") from None
        return cls.from_bytes(data, source=str(path))

    @classmethod
    def from_bytes(cls, data: bytes, *, source: str = "model") -> ModelImage:
        try:
            with zipfile.ZipFile(io.BytesIO(data)) as archive:
                manifest = json.loads(archive.read(_MANIFEST))
                params = archive.read(_PARAMS)
                programs = {
                    s[key]: archive.read(s[key])
                    for s in manifest.get("steps", [])
                    for key in ("program", "library")
                    if isinstance(s, dict) and key in s
                }
        except (zipfile.BadZipFile, KeyError, ValueError, RecursionError, OSError) as err:
            raise ModelFormatError(f"{source}: not a compiled vtaforge model ({err})") from None
        try:
            return _from_manifest(manifest, params, programs)
        except ModelFormatError as err:
            raise ModelFormatError(f"{source}: {err}") from None
        except (KeyError, TypeError, ValueError, VtaforgeError) as err:
            raise ModelFormatError(f"{source}: malformed manifest ({err!r})") from None


def _from_manifest(manifest: dict, params: bytes, programs: dict[str, bytes]) -> ModelImage:
    if manifest.get("format") != FORMAT_VERSION:
        raise ModelFormatError(
            f"format version {manifest.get('format')!r}, this vtaforge reads {FORMAT_VERSION}"
        )
    cfg = AccelConfig.from_json(json.dumps(manifest["config"]))
    tensors = {}
    for t in manifest["tensors"]:
        slot = TensorSlot(t["name"], tuple(t["shape"]), t["dtype"], int(t["address"]), t["layout"])
        if not 0 <= slot.address <= slot.address + slot.nbytes <= manifest["dram_bytes"]:
            raise ModelFormatError(f"tensor {slot.name} lies outside the DRAM image")
        tensors[slot.name] = slot
    steps = []
    for s in manifest["steps"]:
        program = None
        if "program" in s:
            program = Program.from_bytes(programs[s["program"]], config=cfg)
        for value in (*s["inputs"], *s["outputs"]):
            if value not in tensors:
                raise ModelFormatError(f"step {s['node']} uses unknown tensor {value!r}")
        steps.append(
            Step(
                s["node"],
                s["op"],
                s["device"],
                tuple(s["inputs"]),
                tuple(s["outputs"]),
                dict(s["attrs"]),
                program,
                int(s["macs"]),
                programs[s["library"]] if "library" in s else None,
            )
        )
    for name in (*manifest["inputs"], *manifest["outputs"]):
        if name not in tensors:
            raise ModelFormatError(f"model input or output {name!r} has no tensor")
    return ModelImage(
        manifest["name"],
        cfg,
        int(manifest["dram_bytes"]),
        tuple(manifest["inputs"]),
        tuple(manifest["outputs"]),
        tensors,
        tuple(steps),
        params,
        dict(manifest.get("notes", {})),
    )
