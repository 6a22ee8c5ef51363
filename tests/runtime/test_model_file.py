"""A ``.vtaf`` file is checked whole when it is loaded: every way an edited file went wrong
before (a crash in a step's library, an untyped exception, a different answer without an
error, a zip bomb) is now a ModelFormatError naming the field, tensor or step; files that
differ only in form (the manifest's key order, spacing) load and give the same answer."""

from __future__ import annotations

import dataclasses
import io
import struct
import subprocess
import zipfile
from collections.abc import Callable
from typing import Any

import numpy as np
import pytest

from isa import MemInsn, Opcode, Program
from runtime.model import (
    Model,
    ModelFormatError,
    ModelImage,
    ModelReport,
    StepReport,
    load_model,
)
from runtime.model.archive import MAX_MODEL_BYTES, PARAMS
from tests.runtime.vtaf_files import Parts, tiny_model


def _load(data: bytes) -> Model:
    return Model(ModelImage.from_bytes(data))


def _refused(data: bytes, words: str) -> None:
    with pytest.raises(ModelFormatError, match=words):
        _load(data)


# ------------------------------------------------------------- edits an adversary re-signs
def _set(path: tuple[Any, ...], value: Any) -> Callable[[Parts], None]:
    def edit(parts: Parts) -> None:
        record: Any = parts.manifest
        for key in path[:-1]:
            record = record[key]
        record[path[-1]] = value

    return edit


def _longer_params(parts: Parts) -> None:
    parts.members[PARAMS] *= 100


def _second_input(parts: Parts) -> None:
    step = parts.step("Pack")
    step["inputs"].append("x")


def _unknown_attribute(parts: Parts) -> None:
    parts.step("Pack")["attrs"]["stride"] = 2


def _block_zero(parts: Parts) -> None:
    parts.step("Pack")["attrs"]["block"] = 0


def _wider_kernel_output(parts: Parts) -> None:
    # the host builds the step's kernel for its slots: a slot bigger than the operator's type
    # rule gives would let it write past the packed tensor
    parts.tensor("x_int8:packed")["shape"] = [1, 1, 8, 8, 1, 8]


def _wrong_slot_shape(parts: Parts) -> None:
    parts.tensor("x_int8")["shape"] = [1, 3, 8, 4]


def _planted_library(parts: Parts) -> None:
    parts.step("Pack")["library"] = "kernels/001.so"
    parts.members["kernels/001.so"] = b"\x7fELF"


def _program(parts: Parts, op: str, change: Callable[[Program], Program]) -> None:
    name = parts.step(op)["program"]
    parts.members[name] = change(Program.from_bytes(parts.members[name])).to_bytes()


def _uops_over_tensors(parts: Parts) -> None:
    # x_int8's bytes, which no region of conv1 holds
    at = parts.tensor("x_int8")["address"]
    _program(parts, "QConv", lambda p: dataclasses.replace(p, uop_base=at // 4))


def _uops_past_dram(parts: Parts) -> None:
    _program(parts, "QConv", lambda p: dataclasses.replace(p, uop_base=1 << 12))


def _store_past_dram(parts: Parts) -> None:
    def far(program: Program) -> Program:
        insns = list(program.instructions)
        at = next(
            k for k, i in enumerate(insns) if isinstance(i, MemInsn) and i.opcode is Opcode.STORE
        )
        insns[at] = dataclasses.replace(insns[at], dram_base=1 << 10)
        return dataclasses.replace(program, instructions=tuple(insns))

    _program(parts, "QConv", far)


RESIGNED = {
    "params.bin longer than dram_bytes": (_longer_params, "params: size"),
    "dram_bytes of 100 GiB": (_set(("dram_bytes",), 100 << 30), "dram_bytes"),
    "dram_bytes of 2**63": (_set(("dram_bytes",), 2**63), "dram_bytes"),
    "dram_bytes a string": (_set(("dram_bytes",), "1712"), "dram_bytes must be an integer"),
    "dtype object": (_set(("tensors", 0, "dtype"), "object"), "dtype 'object' is not one"),
    "negative shape": (_set(("tensors", 0, "shape"), [-1, -10]), "shape .* integers >= 0"),
    "shape of floats": (_set(("tensors", 0, "shape"), [1.5]), "shape .* integers >= 0"),
    "rank 40": (_set(("tensors", 0, "shape"), [1] * 40), "40 dimensions"),
    "tensor past dram": (_set(("tensors", 0, "address"), 1700), "outside the DRAM image"),
    "misaligned tensor": (_set(("tensors", 1, "address"), 1188), "not a multiple of 16"),
    "unaligned float": (_set(("tensors", 0, "address"), 418), "not float32-aligned"),
    "steps a number": (_set(("steps",), 5), "steps must be a list"),
    "step a string": (_set(("steps", 0), "Pack"), "step 0 must be an object"),
    "outputs empty": (_set(("outputs",), []), "outputs is empty"),
    "inputs unknown": (_set(("inputs",), ["y"]), "inputs names no tensor"),
    "step output unknown": (_set(("steps", 1, "outputs"), ["nope"]), r"step 1 \(pack_x_int8\)"),
    "two inputs on a cpu step": (_second_input, "Pack refuses its operands: takes 1"),
    "unknown attribute": (_unknown_attribute, "Pack has no attribute 'stride'"),
    "Pack block 0": (_block_zero, r"step 1 \(pack_x_int8\): Pack"),
    "attribute of the wrong type": (_set(("steps", 1, "attrs", "block"), "4"), "must be a int"),
    "missing attribute": (_set(("steps", 1, "attrs"), {}), "needs the attribute"),
    "kernel output slot wider": (_wider_kernel_output, r"step 1 \(pack_x_int8\): Pack gives"),
    "slot shape against the rule": (_wrong_slot_shape, r"step 0 \(x_int8\): QuantizeLinear"),
    "unknown operator": (_set(("steps", 10, "op"), "Softmax2"), "no operator 'Softmax2'"),
    "a planted library": (_planted_library, r"step 1 has an unknown field 'library'"),
    "program on a cpu step": (_set(("steps", 2, "device"), "cpu"), "device 'cpu' with program"),
    "micro-ops over the tensors": (
        _uops_over_tensors,
        "micro-op table at 0x4a0 overlaps the tensors",
    ),
    "micro-ops past dram": (_uops_past_dram, "micro-op table reaches"),
    "store past dram": (_store_past_dram, r"instruction \d+ \(STORE.* past the DRAM image"),
    "config of another program": (
        _set(("config", "inp_buff_size"), 2048),
        r"step 2 \(conv1\): its pro",
    ),
    "macs negative": (_set(("steps", 2, "macs"), -1), "macs -1 is not in"),
    "unknown manifest field": (_set(("extra",), 1), "unknown field 'extra'"),
}


@pytest.mark.parametrize("case", RESIGNED)
def test_an_edited_and_re_signed_file_is_refused_by_name(case):
    edit, words = RESIGNED[case]
    parts = tiny_model().parts()
    edit(parts)
    _refused(parts.to_bytes(resign=True), words)


# ------------------------------------------------------------- edits the digests catch
def _swap(parts: Parts, first: str, second: str) -> None:
    members = parts.members
    members[first], members[second] = members[second], members[first]


DIGESTS = {
    "programs swapped": (lambda p: _swap(p, "programs/002.bin", "programs/004.bin"), r"step 2 "),
    "params.bin emptied": (lambda p: p.members.update({PARAMS: b""}), "params.bin holds 0"),
    "params.bin edited": (
        lambda p: p.members.update({PARAMS: b"\1" + p.members[PARAMS][1:]}),
        "params: the sha256 does not match",
    ),
    "a scale edited": (_set(("steps", 0, "attrs", "scale"), 0.5), r"step 0 \(x_int8\): the dig"),
    "steps swapped": (
        lambda p: p.manifest["steps"].insert(3, p.manifest["steps"].pop(2)),
        r"step 2 \(pool\): the digest",
    ),
    "outputs changed": (_set(("outputs",), ["fc_float"]), "the manifest: the digest"),
    "slot addresses swapped": (_set(("tensors", 1, "address"), 416), r"step 0 \(x_int8\)"),
    "digest removed": (lambda p: p.manifest["steps"][4].pop("digest"), "step 4 lacks 'digest'"),
}


@pytest.mark.parametrize("case", DIGESTS)
def test_an_edited_file_fails_its_digests(case):
    edit, words = DIGESTS[case]
    parts = tiny_model().parts()
    edit(parts)
    _refused(parts.to_bytes(), words)


def test_a_file_of_format_1_predates_digests():
    parts = tiny_model().parts()
    parts.manifest["format"] = 1
    _refused(parts.to_bytes(), "format version 1 predates digests")


def test_a_file_of_format_2_carried_machine_code():
    parts = tiny_model().parts()
    parts.manifest["format"] = 2
    _refused(parts.to_bytes(resign=True), "format version 2 carried host machine code")


# ------------------------------------------------------------- the archive itself
def _declared_size(data: bytes, member: str, size: int) -> bytes:
    """``data`` with the central directory's uncompressed size of ``member`` set to ``size``."""
    with zipfile.ZipFile(io.BytesIO(data)) as archive:
        offset = archive.getinfo(member).header_offset
    out = bytearray(data)
    at = 0
    while (at := out.find(b"PK\1\2", at)) >= 0:
        if struct.unpack_from("<I", out, at + 42)[0] == offset:
            struct.pack_into("<I", out, at + 24, size)
            return bytes(out)
        at += 4
    raise AssertionError(member)


def test_a_zip_bomb_is_refused_before_it_is_unpacked():
    parts = tiny_model().parts()
    bomb = _declared_size(parts.to_bytes(), PARAMS, 0xFFFF_FFF0)
    _refused(bomb, r"params.bin holds 4,294,967,280 bytes")
    parts.manifest["dram_bytes"] = parts.manifest["params"]["size"] = MAX_MODEL_BYTES
    _refused(_declared_size(parts.to_bytes(), PARAMS, MAX_MODEL_BYTES), "unpacks to 1,073,741,824")


def test_a_compressed_member_is_refused_unread():
    """8 GiB of zeros deflate into about 8 MB; a model's members are stored, so any compressed
    member is refused before a byte of it is inflated."""
    data = tiny_model().data
    buffer = io.BytesIO()
    with zipfile.ZipFile(io.BytesIO(data)) as source, zipfile.ZipFile(buffer, "w") as packed:
        for info in source.infolist():
            method = zipfile.ZIP_DEFLATED if info.filename == PARAMS else zipfile.ZIP_STORED
            packed.writestr(info.filename, source.read(info), compress_type=method)
    _refused(buffer.getvalue(), "params.bin is compressed or encrypted")


def test_a_planted_library_runs_no_code(tmp_path):
    """A shared library whose constructor would write a file, planted in a step (re-signed, as
    an adversary can): the file is refused and the constructor never runs."""
    witness = tmp_path / "ran"
    source = tmp_path / "evil.c"
    source.write_text(
        "#include <stdio.h>\n"
        "__attribute__((constructor)) static void run(void) {"
        f' FILE *f = fopen("{witness}", "w"); if (f) fclose(f); }}\n'
        "void vtaforge_step(void) {}\n"
    )
    library = tmp_path / "evil.so"
    subprocess.run(["cc", "-shared", "-fPIC", "-o", str(library), str(source)], check=True)
    parts = tiny_model().parts()
    parts.step("Pack")["library"] = "kernels/001.so"
    parts.members["kernels/001.so"] = library.read_bytes()
    _refused(parts.to_bytes(resign=True), "unknown field 'library'")
    assert not witness.exists()


def test_a_manifest_too_large_to_parse_is_refused_unread():
    parts = tiny_model().parts()
    parts.manifest["notes"] = {"padding": "x" * (17 << 20)}
    _refused(parts.to_bytes(), "manifest.json unpacks to")


@pytest.mark.parametrize("cut", [0.3, 0.7, 0.95])
def test_a_truncated_file_is_refused(cut):
    data = tiny_model().data
    _refused(data[: int(len(data) * cut)], "model")


def test_a_file_larger_than_a_model_may_be_is_refused_unread(tmp_path, monkeypatch):
    import runtime.model.image as image

    monkeypatch.setattr(image, "MAX_MODEL_BYTES", 1000)
    path = tmp_path / "big.vtaf"
    path.write_bytes(tiny_model().data)
    with pytest.raises(ModelFormatError, match="big.vtaf: larger than a model may be"):
        load_model(path)


# ------------------------------------------------------------- what must still work
@pytest.mark.parametrize("dumps", [{"sort_keys": True}, {"indent": 4}, {"separators": (",", ":")}])
def test_a_manifest_written_differently_loads_and_gives_the_same_answer(dumps):
    model = tiny_model()
    parts = model.parts()
    parts.manifest = dict(reversed(parts.manifest.items()))
    run = _load(parts.to_bytes(**dumps)).run(model.x, device="fsim")
    np.testing.assert_array_equal(run.output, model.expected)


def test_a_loaded_model_saves_the_same_bytes():
    data = tiny_model().data
    assert ModelImage.from_bytes(data).to_bytes() == data


def test_the_report_table_of_a_run_without_accelerator_steps():
    model = tiny_model()
    config = ModelImage.from_bytes(model.data).config
    cpu = StepReport("softmax", "Softmax", "cpu", 0.001, macs=0, kernel="numpy")
    for device in ("sim", "fsim"):
        table = ModelReport("m", config, (cpu,), device).table()
        assert "0 steps on the accelerator, 1 on the CPU" in table
        assert "accelerator:" not in table
