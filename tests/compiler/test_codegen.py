"""The LLVM backend: calling on numpy arrays (and the typed errors for bad arguments), vector
code, parallel loops, object files and shared libraries, and targets."""

from __future__ import annotations

import ctypes
import re
import threading

import numpy as np
import pytest

from compiler import CompileError, build, create_schedule, lower, te
from compiler.codegen import Target, codegen
from compiler.codegen.runtime import CompiledFunction
from runtime.parallel import ParallelLauncher


@pytest.fixture(scope="module")
def saxpy() -> CompiledFunction:
    x = te.placeholder((64,), name="x")
    y = te.placeholder((64,), name="y")
    out = te.compute((64,), lambda i: x[i] * 2.0 + y[i], name="out")
    s = create_schedule(out)
    outer, inner = s[out].split(out.op.axis[0], 16)
    s[out].vectorize(inner)
    s[out].parallel(outer)
    return build(s, [x, y, out])


def _arrays():
    return np.ones(64, np.float32), np.arange(64, dtype=np.float32), np.zeros(64, np.float32)


def test_saxpy_runs_with_one_and_two_threads(saxpy):
    x, y, out = _arrays()
    for threads in (1, 2):
        out[:] = 0
        saxpy(x, y, out, num_threads=threads)
        np.testing.assert_array_equal(out, 2 + y)


@pytest.mark.parametrize(
    ("mutate", "match", "tensor", "axis"),
    [
        (lambda a: a[:2], "takes 3 arrays", "", ""),
        (
            lambda a: [a[0].astype(np.float64), a[1], a[2]],
            "dtype is float64, expected float32",
            "x",
            "",
        ),
        (lambda a: [a[0][:63], a[1], a[2]], "extent 63, expected 64", "x", "0"),
        (lambda a: [a[0].reshape(8, 8), a[1], a[2]], "has 2 dimensions", "x", ""),
        (lambda a: [np.ones(128, np.float32)[::2], a[1], a[2]], "not C-contiguous", "x", ""),
        (lambda a: [a[0], a[1], [0.0] * 64], "must be a numpy array", "out", ""),
        (lambda a: [a[0], a[2], a[2]], "overlaps argument 'y'", "out", ""),
    ],
)
def test_mismatched_arrays_raise_typed_errors(saxpy, mutate, match, tensor, axis):
    with pytest.raises(CompileError, match=match) as info:
        saxpy(*mutate(list(_arrays())))
    assert info.value.tensor == tensor
    assert info.value.axis == axis


def test_read_only_output_is_refused(saxpy):
    x, y, out = _arrays()
    out.flags.writeable = False
    with pytest.raises(CompileError, match="read-only"):
        saxpy(x, y, out)
    with pytest.raises(CompileError, match="num_threads"):
        saxpy(*_arrays(), num_threads=0)


def test_parallel_loops_run_on_several_threads(monkeypatch):
    """The Python launcher hands chunks to pool threads: a parallel loop sees more than one
    thread (the native launcher's own test: tests/runtime/test_parallel.py)."""
    monkeypatch.setenv("VTAFORGE_PYTHON_LAUNCHER", "1")
    seen = set()
    original = ParallelLauncher._launch

    def spy(self, body, closure, extent):
        seen.add(threading.get_ident())
        original(self, body, closure, extent)
        seen.update(t.ident for t in threading.enumerate() if t.name.startswith("vtaforge"))

    monkeypatch.setattr(ParallelLauncher, "_launch", spy)  # before the launcher is made
    x = te.placeholder((4,), name="x")
    out = te.compute((4,), lambda i: x[i] + 1.0, name="out")
    s = create_schedule(out)
    s[out].parallel(out.op.axis[0])
    f = build(s, [x, out])
    result = np.zeros(4, np.float32)
    f(np.arange(4, dtype=np.float32), result, num_threads=2)
    np.testing.assert_array_equal(result, [1, 2, 3, 4])
    assert len(seen) >= 2


#: An AVX2 target: LLVM's own loop vectorizer fills its 8-float registers, so 16-lane vectors in
#: its code come from the schedule (with AVX-512, as on some hosts, it picks 16 lanes itself).
_AVX2 = "llvm -mtriple=x86_64-unknown-linux-gnu -mcpu=haswell"


def test_vectorized_loops_become_vector_instructions(saxpy):
    """The 16 lanes of ``vectorize`` reach the IR as ``<16 x float>`` (on an AVX2 target
    LLVM's own loop vectorizer picks 8: the same compute without ``vectorize`` has no 16-lane
    vector there) and the machine code as packed single-precision arithmetic (not only the
    scalar ``mulss``/``addss`` that any x86-64 float code has in ``xmm`` registers)."""
    assert "<16 x float>" in saxpy.module.ir_text
    assembly = saxpy.module.emit_assembly()
    assert re.search(r"\bv?(add|mul|fmadd\d*)ps\b", assembly), "no packed float arithmetic"
    x, y = te.placeholder((64,), name="x"), te.placeholder((64,), name="y")
    out = te.compute((64,), lambda i: x[i] * 2.0 + y[i], name="out")
    plain = create_schedule(out)
    vectorized = create_schedule(out)
    vectorized[out].vectorize(vectorized[out].split(out.op.axis[0], 16)[1])
    for schedule, lanes in ((vectorized, True), (plain, False)):
        module = codegen(lower(schedule, [x, y, out], "main"), _AVX2)
        assert ("<16 x float>" in module.ir_text) is lanes


def test_bound_gpu_axes_need_a_gpu_target():
    x = te.placeholder((32,), name="x")
    out = te.compute((32,), lambda i: x[i] + 1.0, name="out")
    s = create_schedule(out)
    bx, tx = s[out].split(out.op.axis[0], 8)
    s[out].bind(bx, "blockIdx.x")
    s[out].bind(tx, "threadIdx.x")
    assert "bind blockIdx.x" in str(lower(s, [x, out]))
    with pytest.raises(CompileError, match="GPU thread axes") as info:
        build(s, [x, out])
    assert info.value.axis == "i.outer"


def test_virtual_threads_run_serially_on_the_cpu():
    x = te.placeholder((32,), name="x")
    out = te.compute((32,), lambda i: x[i] * 3.0, name="out")
    s = create_schedule(out)
    vt, _rest = s[out].split(out.op.axis[0], nparts=2)
    s[out].vthread(vt)
    assert "vthread for i.outer in 0..2" in str(lower(s, [x, out]))
    result = np.zeros(32, np.float32)
    build(s, [x, out])(np.arange(32, dtype=np.float32), result)
    np.testing.assert_array_equal(result, np.arange(32) * 3)


def test_object_file_and_shared_library(tmp_path, saxpy):
    data = saxpy.module.emit_object(tmp_path / "saxpy.o")
    assert data[:4] == b"\x7fELF" and (tmp_path / "saxpy.o").read_bytes() == data
    library = ctypes.CDLL(str(saxpy.module.export_library(tmp_path / "libsaxpy.so")))
    x, y, out = _arrays()
    library.main(*(ctypes.c_void_p(a.ctypes.data) for a in (x, y, out)), None)
    np.testing.assert_array_equal(out, 2 + y)


def test_a_missing_linker_is_a_compile_error(tmp_path, saxpy):
    with pytest.raises(CompileError, match="linking libsaxpy.so with no-such-cc failed"):
        saxpy.module.export_library(tmp_path / "libsaxpy.so", cc="no-such-cc")
    assert not (tmp_path / "libsaxpy.so").exists()


def test_cross_compiling_for_the_pynq_arm_core(saxpy):
    target = Target.parse(
        "llvm -mtriple=armv7a-unknown-linux-gnueabihf -mcpu=cortex-a9 -mattr=+neon"
    )
    module = codegen(saxpy.lowered, target)
    obj = module.emit_object()
    assert obj[:4] == b"\x7fELF" and obj[4] == 1  # 32-bit ELF
    assert obj[18] == 40  # e_machine EM_ARM
    with pytest.raises(CompileError, match="cannot run code for armv7a"):
        module.jit()


@pytest.mark.parametrize("spec", ["cuda", "llvm -mfoo=bar", "llvm -mtriple=nonsense-none-none"])
def test_bad_targets(spec, saxpy):
    with pytest.raises(CompileError):
        codegen(saxpy.lowered, Target.parse(spec))


def test_unreferenced_placeholder_and_missing_arguments():
    x = te.placeholder((4,), name="x")
    out = te.compute((4,), lambda i: x[i] + 1.0, name="out")
    s = create_schedule(out)
    with pytest.raises(CompileError, match="is read but is not among the arguments") as info:
        build(s, [out])
    assert info.value.tensor == "x"
    with pytest.raises(CompileError, match="output of the schedule is not an argument"):
        build(s, [x])


def test_integer_division_by_zero_or_minus_one_does_not_trap():
    x = te.placeholder((6,), "int32", "x")
    y = te.placeholder((6,), "int32", "y")
    q = te.compute((6,), lambda i: x[i] // y[i], name="q")
    r = te.compute((6,), lambda i: x[i] % y[i], name="r")
    s = create_schedule([q, r])
    x_np = np.array([7, -7, 5, np.iinfo(np.int32).min, 3, -9], np.int32)
    y_np = np.array([2, 2, 0, -1, -1, 4], np.int32)
    got_q, got_r = np.zeros(6, np.int32), np.zeros(6, np.int32)
    build(s, [x, y, q, r])(x_np, y_np, got_q, got_r)
    with np.errstate(divide="ignore", over="ignore"):
        np.testing.assert_array_equal(got_q, x_np // y_np)
        np.testing.assert_array_equal(got_r, x_np % y_np)


def test_data_dependent_indices_stay_inside_the_buffer():
    table = te.placeholder((4,), name="table")
    index = te.placeholder((5,), "int32", "index")
    out = te.compute((5,), lambda i: table[index[i]], name="out")
    s = create_schedule(out)
    got = np.zeros(5, np.float32)
    build(s, [table, index, out])(
        np.array([10, 11, 12, 13], np.float32), np.array([2, -5, 3, 1 << 30, 0], np.int32), got
    )
    np.testing.assert_array_equal(got, [12, 10, 13, 13, 10])
