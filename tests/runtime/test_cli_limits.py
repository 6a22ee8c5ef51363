"""Issue 34 (parts 2, 4, 5, 6, 8): every file a user names is read within its format's limit,
calibration arrays are real and finite, a failed write is an error, and a usage error is one
line with exit status 1. Each case ends in a one-line typed error with status 1 (or the right
result), quickly and without allocating more than the input's declared size."""

from __future__ import annotations

import os
import struct
import time
import warnings
from pathlib import Path

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper

from compiler.errors import GraphError
from compiler.frontend import from_onnx
from compiler.graph.limits import MAX_GRAPH_BYTES, check_graph_size
from isa import AccelConfig
from isa.files import ARRAYS, PROGRAM, UserFileError, read_file, read_npy, read_npz
from runtime.cli import main
from runtime.demo_gemm import demo_gemm_program
from runtime.model.archive import MAX_MODEL_BYTES

TINY = AccelConfig.preset("tiny")
SHAPE = "x=1,3,8,8"


def _status(capsys, *argv: str) -> tuple[int, str]:
    """``vtaforge argv``'s status and its stderr, which must be one line when it failed."""
    started = time.perf_counter()
    status = main(list(argv))
    err = capsys.readouterr().err
    assert time.perf_counter() - started < 30
    if status:
        assert len(err.strip().splitlines()) == 1 and "Traceback" not in err, err
    return status, err


def _refused(capsys, *argv: str) -> str:
    status, err = _status(capsys, *argv)
    assert status == 1, err
    return err


def _npy_header(shape: tuple[int, ...], descr: str = "<f4") -> bytes:
    """A version 1.0 ``.npy`` header declaring ``shape`` of ``descr``, without data."""
    text = f"{{'descr': '{descr}', 'fortran_order': False, 'shape': {shape!r}, }}"
    text += " " * (63 - (10 + len(text)) % 64) + "\n"
    return b"\x93NUMPY\x01\x00" + struct.pack("<H", len(text)) + text.encode()


def _compile(files: Path, capsys) -> None:
    """Compile ``m.onnx`` of :func:`files` into ``m.vtaf`` beside it."""
    argv = ["compile", str(files / "m.onnx"), "--input-shape", SHAPE, "-o", str(files / "m.vtaf")]
    assert main(argv) == 0
    capsys.readouterr()


@pytest.fixture
def files(tmp_path: Path) -> Path:
    """A small conv model with a dynamic input, a program, a compiled model and arrays."""
    weights = np.random.default_rng(0).standard_normal((4, 3, 3, 3)).astype(np.float32)
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, ["n", 3, "h", "w"])
    y = helper.make_tensor_value_info("y", TensorProto.FLOAT, ["n", 4, "h", "w"])
    nodes = [
        helper.make_node("Conv", ["x", "w"], ["c"], pads=[1, 1, 1, 1]),
        helper.make_node("Relu", ["c"], ["y"]),
    ]
    graph = helper.make_graph(nodes, "g", [x], [y], [numpy_helper.from_array(weights, "w")])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])
    onnx.save(model, tmp_path / "m.onnx")
    demo_gemm_program(TINY).save(tmp_path / "p.bin")
    tib = _npy_header((1024, 1024, 1024, 256))  # 1 TiB declared
    (tmp_path / "tib.npy").write_bytes(tib + bytes(144 - len(tib)))
    np.save(tmp_path / "x.npy", np.ones((1, 3, 8, 8), np.float32))
    return tmp_path


# ---------------------------------------------------------------------- part 2: resources
@pytest.mark.parametrize("shape", ["1,3,100000,100000", "1,3,8,2147483648", "1048576,3,8,8"])
def test_a_huge_input_shape_fails_fast_naming_the_largest_tensor(files, capsys, shape):
    out = str(files / "o.vtaf")
    err = _refused(
        capsys, "compile", str(files / "m.onnx"), "--input-shape", f"x={shape}", "-o", out
    )
    assert "tensor 'c'" in err and f"more than the {MAX_GRAPH_BYTES:,}" in err


def test_check_graph_size_sums_the_static_types(files):
    graph = from_onnx(files / "m.onnx", input_shapes={"x": (1, 3, 8, 8)})
    check_graph_size(graph)
    with pytest.raises(GraphError, match=r"tensor 'c'.*float32\[1, 4, 8, 8\], 1,024 bytes"):
        check_graph_size(graph, limit_bytes=1000)


@pytest.mark.parametrize(
    "argv",
    [
        ("asm", "{dev}", "-o", "{tmp}/q.bin"),
        ("disasm", "{dev}"),
        ("sim", "{dev}"),
        ("run", "{dev}", "--input", "{tmp}/x.npy"),
        ("compile", "{dev}", "-o", "{tmp}/o.vtaf"),
        ("config", "show", "{dev}"),
        ("sim", "{tmp}/p.bin", "--config", "{dev}"),
        ("sim", "{tmp}/p.bin", "--timing", "{dev}"),
        ("sim", "{tmp}/p.bin", "--input", "inputs={dev}"),
        ("compile", "{tmp}/m.onnx", "--input-shape", SHAPE, "--calibrate", "{dev}"),
    ],
)
@pytest.mark.parametrize("device", ["/dev/zero", "fifo"])
def test_special_files_are_refused_unread(files, capsys, argv, device):
    dev = device
    if device == "fifo":  # a FIFO without a writer: opening it must not block
        dev = str(files / "fifo")
        os.mkfifo(dev)
    argv = [a.format(dev=dev, tmp=files) for a in argv]
    err = _refused(capsys, *argv, *(["-o", str(files / "o.vtaf")] if "--calibrate" in argv else []))
    assert "read from regular files only" in err


@pytest.mark.parametrize(
    "argv",
    [
        ("sim", "{tmp}/p.bin", "--input", "inputs={tmp}/tib.npy"),
        ("run", "{tmp}/m.vtaf", "--input", "{tmp}/tib.npy"),
        ("compile", "{tmp}/m.onnx", "--input-shape", SHAPE, "--calibrate", "{tmp}/tib.npy"),
    ],
)
def test_a_npy_header_claiming_a_tebibyte_is_refused_before_allocating(files, capsys, argv):
    _compile(files, capsys)
    argv = [a.format(tmp=files) for a in argv]
    err = _refused(capsys, *argv, *(["-o", str(files / "o.vtaf")] if "compile" in argv else []))
    assert "1,099,511,627,776 bytes" in err and "more than" in err


def test_array_headers_are_checked_against_the_file(tmp_path):
    short = tmp_path / "short.npy"
    short.write_bytes(_npy_header((100,)) + bytes(12))
    with pytest.raises(UserFileError, match="declares float32\\[100\\] .400 bytes., the file"):
        read_npy(short)
    for descr in ("|O", "<i4"):
        odd = tmp_path / "odd.npy"
        shape = (2,) if descr == "|O" else (-3,)
        odd.write_bytes(_npy_header(shape, descr) + bytes(16))
        with pytest.raises(UserFileError):
            read_npy(odd)
    archive = tmp_path / "a.npz"
    arrays = {"x": np.arange(6.0).reshape(2, 3), "f": np.asfortranarray(np.eye(3, dtype=">i2"))}
    np.savez_compressed(archive, **arrays)
    assert {k: v.tolist() for k, v in read_npz(archive).items()} == {
        k: v.tolist() for k, v in arrays.items()
    }
    with pytest.raises(UserFileError, match="not a .npy array"):
        read_npy(archive)


def test_every_format_has_a_named_limit(tmp_path):
    big = tmp_path / "big.bin"
    with big.open("wb") as handle:
        handle.truncate(PROGRAM.limit + 1)  # sparse: nothing is written or read
    with pytest.raises(UserFileError, match="over the limit for binary programs"):
        read_file(big, PROGRAM)
    assert ARRAYS.limit == 4 << 30
    from runtime.cli.run import COMPILED_MODEL

    assert COMPILED_MODEL.limit == MAX_MODEL_BYTES


def test_a_configuration_file_is_read_up_to_one_mebibyte(tmp_path):
    """A configuration padded with spaces to 1 MiB loads; one byte more is refused unparsed."""
    text = AccelConfig.preset("tiny").to_json()
    path = tmp_path / "padded.json"
    path.write_text(text + " " * ((1 << 20) - len(text)))
    assert AccelConfig.load(path) == AccelConfig.preset("tiny")
    path.write_text(text + " " * ((1 << 20) + 1 - len(text)))
    with pytest.raises(UserFileError, match="over the limit for configuration files"):
        AccelConfig.load(path)


# ---------------------------------------------------------------------- part 4: calibration
@pytest.mark.parametrize(
    ("array", "message"),
    [
        (np.float32(1.0), "is a single number (0-d)"),
        (np.full((4, 1, 3, 8, 8), np.nan, np.float32), "768 values that are NaN or infinite"),
        (np.where(np.eye(8) > 0, np.inf, 0.0) * np.ones((4, 1, 3, 8, 8)), "NaN or infinite"),
        (np.full((4, 1, 3, 8, 8), 1e300), "beyond float32's range"),
        (np.zeros((4, 1, 3, 8, 8), complex), "holds complex128 values: needs real numbers"),
        (np.zeros((4, 1, 3, 8, 8), "U1"), "holds <U1 values"),
        (np.zeros((0, 1, 3, 8, 8), np.float32), "holds no samples"),
    ],
)
def test_calibration_arrays_must_be_real_and_finite(files, capsys, array, message):
    np.save(files / "calib.npy", array)
    argv = ["compile", str(files / "m.onnx"), "--input-shape", SHAPE]
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # no numpy warning may be printed
        err = _refused(
            capsys, *argv, "--calibrate", str(files / "calib.npy"), "-o", str(files / "o")
        )
    assert "calibration" in err and message in err


# ---------------------------------------------------------------------- part 5: initializers
@pytest.mark.parametrize("extra", [8, -20])
def test_an_initializer_of_the_wrong_length_is_a_graph_error(files, extra):
    model = onnx.load(files / "m.onnx")
    tensor = model.graph.initializer[0]
    raw = tensor.raw_data
    tensor.raw_data = raw + bytes(extra) if extra > 0 else raw[:extra]
    with pytest.raises(GraphError, match="w\\b.*raw.data"):
        from_onnx(model.SerializeToString())


# ---------------------------------------------------------------------- part 6: writing
@pytest.mark.skipif(not os.path.exists("/dev/full"), reason="needs /dev/full")
@pytest.mark.parametrize(
    ("argv", "option"),
    [
        (("sim", "{tmp}/p.bin", "--output", "outputs=/dev/full"), "--output"),
        (("sim", "{tmp}/p.bin", "--trace", "/dev/full"), "--trace"),
        (("disasm", "{tmp}/p.bin", "-o", "/dev/full"), "-o"),
        (("run", "{tmp}/m.vtaf", "--input", "{tmp}/x.npy", "-o", "/dev/full"), "-o"),
        (("run", "{tmp}/m.vtaf", "--input", "{tmp}/x.npy", "--trace", "/dev/full"), "--trace"),
    ],
)
def test_a_failed_write_is_an_error_not_a_lost_output(files, capsys, argv, option):
    _compile(files, capsys)
    err = _refused(capsys, *(a.format(tmp=files) for a in argv))
    assert f"{option} /dev/full: cannot be written (No space left on device)" in err


# ---------------------------------------------------------------------- part 8: usage errors
@pytest.mark.parametrize(
    ("argv", "expected"),
    [
        ((), "vtaforge: error: the following arguments are required: COMMAND"),
        (("compile", "m.onnx"), "vtaforge: error: compile: the following arguments are required"),
        (("config", "shwo"), "vtaforge: error: config: argument action: invalid choice"),
        (("sim", "p.bin", "--bogus"), "vtaforge: error: sim: unrecognized option --bogus"),
    ],
)
def test_a_usage_error_is_one_line_with_status_1(capsys, argv, expected):
    with pytest.raises(SystemExit) as caught:
        main(list(argv))
    assert caught.value.code == 1
    err = capsys.readouterr().err
    assert err.startswith(expected) and len(err.strip().splitlines()) == 1
    assert "usage:" not in err
