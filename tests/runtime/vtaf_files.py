"""A small compiled model's ``.vtaf`` file taken apart and put back together, for the tests
that edit one: its manifest and members, re-zipped with valid CRCs, optionally re-signed (every
digest recomputed, as an adversary can) so that the loader's other checks are reached."""

from __future__ import annotations

import contextlib
import copy
import functools
import io
import json
import zipfile
from dataclasses import dataclass
from typing import Any

import numpy as np

from compiler.model import compile_model
from isa import AccelConfig
from runtime.model import Model, ModelImage
from runtime.model.archive import MANIFEST, sign
from tests.compiler.model.graphs import residual_cnn, samples

__all__ = ["Parts", "TinyModel", "tiny_model"]


@dataclass
class Parts:
    """A ``.vtaf`` file's manifest (parsed) and its other members by name."""

    manifest: dict[str, Any]
    members: dict[str, bytes]

    @classmethod
    def of(cls, data: bytes) -> Parts:
        with zipfile.ZipFile(io.BytesIO(data)) as archive:
            members = {name: archive.read(name) for name in archive.namelist()}
        return cls(json.loads(members.pop(MANIFEST)), members)

    def copy(self) -> Parts:
        return Parts(copy.deepcopy(self.manifest), dict(self.members))

    def step(self, op: str) -> dict[str, Any]:
        """The first step of operator ``op``."""
        return next(s for s in self.manifest["steps"] if s["op"] == op)

    def tensor(self, name: str) -> dict[str, Any]:
        return next(t for t in self.manifest["tensors"] if t["name"] == name)

    def to_bytes(self, *, resign: bool = False, **dumps: Any) -> bytes:
        """The file, its manifest written with ``json.dumps(**dumps)``; with ``resign``, every
        digest recomputed first where the manifest still has the shape to hold them."""
        if resign:  # a manifest too broken to sign stays as it is: the loader refuses it
            with contextlib.suppress(KeyError, TypeError, IndexError, AttributeError):
                sign(self.manifest, self.members)
        buffer = io.BytesIO()
        with zipfile.ZipFile(buffer, "w", zipfile.ZIP_STORED) as archive:
            archive.writestr(MANIFEST, json.dumps(self.manifest, **dumps))
            for name, data in self.members.items():
                archive.writestr(name, data)
        return buffer.getvalue()


@dataclass(frozen=True)
class TinyModel:
    """A compiled model's file, an input and the output the file gives for it on ``fsim``."""

    data: bytes
    x: np.ndarray
    expected: np.ndarray

    def parts(self) -> Parts:
        return Parts.of(self.data)


@functools.cache
def tiny_model() -> TinyModel:
    """A residual CNN compiled for ``tiny``: CPU steps with libraries (QuantizeLinear, Pack,
    Unpack, DequantizeLinear), numpy kernels (Softmax) and six accelerator programs."""
    graph = residual_cnn(0, channels=4, size=8)
    model = compile_model(graph, AccelConfig.resolve("tiny"), calibration=samples(graph, 2))
    data = model.image.to_bytes()
    x = samples(graph, 1, seed=7)[0]
    expected = Model(ModelImage.from_bytes(data)).run(x, device="fsim").output
    return TinyModel(data, x, expected)
