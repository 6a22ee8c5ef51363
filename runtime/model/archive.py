"""A ``.vtaf`` file as a zip archive: its members read within limits, and its digests.

Reading (:class:`Members`) never unpacks more than the archive's central directory declares,
nor more than :data:`MAX_MODEL_BYTES` in all (:data:`MAX_MANIFEST_BYTES` for the manifest):
each member's declared size is checked before a byte of it is read, so a zip bomb is a
:class:`ModelFormatError`, not an allocation. Members are stored, as
:meth:`runtime.model.ModelImage.to_bytes` writes them: a compressed or encrypted member is
refused (what is read is what the file holds, byte for byte).

Digests (:func:`sign` at save time, :func:`step_digest`, :func:`manifest_digest` and
``params.sha256`` checked at load time) are sha256 over canonical JSON (sorted keys, no spaces)
and member bytes: each step's covers its index, its manifest entry, the records of the tensor
slots it reads and writes, and its program's bytes; the manifest's covers everything else in
it (the step digests and ``params`` included). They make a swapped, emptied or edited part of a
file an error; they are not a signature (whoever can write the file can recompute them), which
is one reason the file holds no machine code.
"""

from __future__ import annotations

import hashlib
import io
import json
import zipfile
import zlib
from collections.abc import Mapping, Sequence
from typing import Any

from isa import VtaforgeError

__all__ = [
    "MANIFEST",
    "MAX_MANIFEST_BYTES",
    "MAX_MODEL_BYTES",
    "PARAMS",
    "Members",
    "ModelFormatError",
    "manifest_digest",
    "sign",
    "step_digest",
]

#: The most bytes a model may unpack to (its members together) and the largest DRAM image it may
#: ask for, whatever its configuration addresses: 1 GiB.
MAX_MODEL_BYTES = 1 << 30
#: The largest manifest read (JSON costs many times its size once parsed): 16 MiB.
MAX_MANIFEST_BYTES = 16 << 20
MANIFEST = "manifest.json"
PARAMS = "params.bin"
#: What a damaged zip archive raises, from opening it to reading a member.
_ZIP_ERRORS = (zipfile.BadZipFile, zlib.error, EOFError, OSError, ValueError)


class ModelFormatError(VtaforgeError, ValueError):
    """A file is not a compiled model this version can read, or its contents disagree."""


class Members:
    """The members of one archive, each read once and within the limits (module docstring)."""

    def __init__(self, data: bytes) -> None:
        try:
            self._archive = zipfile.ZipFile(io.BytesIO(data))
        except _ZIP_ERRORS as err:
            raise ModelFormatError(f"not a compiled vtaforge model ({err})") from None
        self._left = MAX_MODEL_BYTES
        self._read: dict[str, bytes] = {}

    def read(self, name: str, where: str, size: int | None = None) -> bytes:
        """Member ``name`` (named by ``where`` in the manifest), which must hold ``size`` bytes
        where given."""
        if name in self._read:
            return self._read[name]
        try:
            info = self._archive.getinfo(name)
        except KeyError:
            raise ModelFormatError(f"{where}: the file has no member {name!r}") from None
        limit = MAX_MANIFEST_BYTES if name == MANIFEST else self._left
        if info.compress_type != zipfile.ZIP_STORED or info.flag_bits & 1:
            raise ModelFormatError(
                f"{where}: member {name} is compressed or encrypted (a model's members are stored)"
            )
        if size is not None and info.file_size != size:
            raise ModelFormatError(
                f"{where}: member {name} holds {info.file_size:,} bytes, the manifest says {size:,}"
            )
        if info.file_size > limit:
            raise ModelFormatError(
                f"{where}: member {name} unpacks to {info.file_size:,} bytes, more than the "
                f"{limit:,} left of the limit"
            )
        try:
            with self._archive.open(info) as member:
                data = member.read(info.file_size)
        except _ZIP_ERRORS as err:
            raise ModelFormatError(f"{where}: member {name} cannot be read ({err})") from None
        self._left -= len(data)
        self._read[name] = data
        return data

    def manifest(self) -> dict[str, Any]:
        """The manifest, parsed (a JSON object)."""
        try:
            manifest = json.loads(self.read(MANIFEST, "the archive"))
        except (ValueError, RecursionError) as err:
            raise ModelFormatError(f"the manifest is not JSON ({err})") from None
        if not isinstance(manifest, dict):
            raise ModelFormatError(f"the manifest is a {type(manifest).__name__}, not an object")
        return manifest


def _canonical(value: Any) -> bytes:
    return json.dumps(value, sort_keys=True, separators=(",", ":")).encode()


def step_digest(
    index: int, entry: Mapping[str, Any], slots: Sequence[Any], blobs: Sequence[bytes]
) -> str:
    """The digest of step ``index``: its manifest ``entry`` (but its digest), the records of
    the tensor ``slots`` it reads and writes, and its members' bytes (its program)."""
    content = {k: v for k, v in entry.items() if k != "digest"}
    digest = hashlib.sha256(_canonical({"index": index, "step": content, "slots": slots}))
    for blob in blobs:
        digest.update(hashlib.sha256(blob).digest())
    return digest.hexdigest()


def manifest_digest(manifest: Mapping[str, Any]) -> str:
    """The digest of the whole manifest but its own ``digest`` field."""
    content = {k: v for k, v in manifest.items() if k != "digest"}
    return hashlib.sha256(_canonical(content)).hexdigest()


def sign(manifest: dict[str, Any], members: Mapping[str, bytes]) -> None:
    """Record in ``manifest`` (as :meth:`runtime.model.ModelImage.to_bytes` writes it, with
    the archive's ``members`` by name) every step's digest, ``params`` (size and sha256 of
    ``params.bin``) and the manifest's digest."""
    tensors = {t["name"]: t for t in manifest["tensors"]}
    for index, entry in enumerate(manifest["steps"]):
        slots = [tensors[n] for n in (*entry["inputs"], *entry["outputs"])]
        blobs = [members[entry["program"]]] if "program" in entry else []
        entry["digest"] = step_digest(index, entry, slots, blobs)
    params = members[PARAMS]
    manifest["params"] = {"size": len(params), "sha256": hashlib.sha256(params).hexdigest()}
    manifest["digest"] = manifest_digest(manifest)
