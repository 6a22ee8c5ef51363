"""Hostile ``.npy`` files, special files and calibration arrays (issue 34): every one is read
within its limit or refused with a typed error, never allocated from a header's word alone.

``.npy`` files get random headers (shapes up to ``2**62`` elements, odd dtypes, both format
versions, data too short, too long or absent, mangled bytes) and go to ``vtaforge sim --input``
in-process (exit status 0 or 1 with one line, never a traceback) and, as calibration data, to
``compiler.cli.calibration_samples``, whose accepted samples must be finite float32 arrays of
the input's shape. Special files (devices, a FIFO, a folder, a link to ``/dev/zero``) go to
every command that reads a file.
"""

from __future__ import annotations

import os
import random
import struct
from pathlib import Path

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

from compiler.cli import calibration_samples, read_onnx
from isa import AccelConfig
from runtime.demo_gemm import demo_gemm_program
from tests.fuzz.test_cli_files import _bytes_mutant, _cli

DIMS = (0, 1, 2, 3, 8, 16, 2**20, 2**31, 2**62)
DESCRS = ("<f4", ">f8", "|u1", "<i8", "|b1", "<c16", "<U3", "|O", "|V0", "<f2", "bogus", "")
INPUT = (1, 3, 4, 4)


def _header(rng: random.Random) -> tuple[bytes, int]:
    """A random ``.npy`` header and the data bytes it declares (negative: unknown)."""
    roll = rng.random()
    if roll < 0.15:  # what the demo program's 16-byte segment takes
        shape, descr = (16,), "|u1"
    elif roll < 0.5:
        shape, descr = (rng.randint(1, 6), *INPUT), "<f4"
    else:
        shape = tuple(rng.choice(DIMS) for _ in range(rng.randint(0, 5)))
        descr = rng.choice(DESCRS)
    fortran = rng.random() < 0.2
    text = f"{{'descr': '{descr}', 'fortran_order': {fortran}, 'shape': {shape!r}, }}"
    if rng.random() < 0.1:
        text = text.replace(rng.choice(["'shape'", "(", "}", ","]), rng.choice(["", "x", "-1"]))
    version = rng.choice([1, 2])
    size = struct.pack("<H" if version == 1 else "<I", len(text) + 1)
    try:
        declared = int(np.prod(shape, dtype=object)) * np.dtype(descr).itemsize
    except (TypeError, ValueError):
        declared = -1
    return b"\x93NUMPY" + bytes([version, 0]) + size + text.encode() + b"\n", declared


def _npy(rng: random.Random) -> bytes:
    header, declared = _header(rng)
    if 0 <= declared <= 4096 and rng.random() < 0.7:
        body = rng.randbytes(max(0, declared + rng.choice([0, 0, 0, -1, 1, -declared])))
    else:
        body = rng.randbytes(rng.randint(0, 64))
    data = header + body
    return _bytes_mutant(rng, data) if rng.random() < 0.15 else data


def _calibrate(graph, path: Path) -> None:
    """calibration_samples, with the contract of what it accepts checked."""
    for sample in calibration_samples(graph, path):
        array = sample["x"]
        assert array.dtype == np.float32 and array.shape == INPUT
        assert np.isfinite(array).all()


def _model(folder: Path) -> Path:
    weights = np.ones((2, 3, 1, 1), np.float32)
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, list(INPUT))
    y = helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 2, 4, 4])
    node = helper.make_node("Conv", ["x", "w"], ["y"])
    graph = helper.make_graph([node], "g", [x], [y], [numpy_helper.from_array(weights, "w")])
    path = folder / "m.onnx"
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)]), path)
    return path


def test_hostile_arrays_and_special_files(budget, tmp_path: Path, tally):
    inputs = tally("files: .npy headers (sim --input)")
    calibration = tally("files: calibration arrays")
    specials = tally("files: special files (every reader)")
    rng = random.Random(34)
    program = tmp_path / "p.bin"
    demo_gemm_program(AccelConfig.preset("tiny")).save(program)
    graph = read_onnx(_model(tmp_path), [])
    path = tmp_path / "a.npy"
    for number in range(budget.count(80, 3_000)):
        path.write_bytes(_npy(rng))
        inputs.attempt(f"npy {number}", _cli, "sim", str(program), "--input", f"inputs={path}")
        calibration.attempt(f"calibration {number}", _calibrate, graph, path)
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    link = tmp_path / "link"
    link.symlink_to("/dev/zero")
    for special in ("/dev/zero", "/dev/null", "/dev/urandom", str(fifo), str(tmp_path), str(link)):
        for argv in (
            ("asm", special, "-o", str(tmp_path / "q.bin")),
            ("disasm", special),
            ("sim", special),
            ("sim", str(program), "--input", f"inputs={special}"),
            ("sim", str(program), "--timing", special),
            ("config", "show", special),
            ("run", special, "--input", str(path)),
            ("compile", special, "-o", str(tmp_path / "o.vtaf")),
        ):
            specials.attempt(f"{special}: {argv[0]}", _cli, *argv)
        specials.attempt(f"{special}: calibration", _calibrate, graph, Path(special))
    for record in (inputs, calibration, specials):
        record.assert_clean()
        assert record.typed, f"{record.category}: nothing was refused"
    assert inputs.accepted and calibration.accepted, "no valid array was generated"
    assert specials.accepted == 0
