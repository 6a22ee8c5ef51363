"""The one pass runner and its instruments: timing as a tree of nested pipelines, IR dumps,
printing, and the loop-IR verifier between passes; the model compiler's stages and the
lowering passes they run observed alike, from the API and from ``vtaforge compile``."""

from __future__ import annotations

import io

import numpy as np
import pytest

from compiler.errors import CompileError
from compiler.expr import DType, Var
from compiler.loop_ir import Allocate, Buffer, For, ForKind, Load, LoweredFunc, Store
from compiler.model import STAGES, compile_model
from compiler.pipeline import (
    DumpIR,
    Instrument,
    Pass,
    PassTiming,
    PrintAfter,
    Verify,
    instrumented,
    run_pipeline,
)
from compiler.verify import verify_lowered
from compiler.zoo import onnx_bytes
from compiler.zoo.digits import DigitsCNN
from runtime.cli import main
from tests.compiler.model.graphs import residual_cnn, samples


class _Log(Instrument):
    def __init__(self) -> None:
        self.events: list[tuple[str, tuple[str, ...], object]] = []

    def before(self, path, ir):
        self.events.append(("before", path, ir))

    def after(self, path, ir, seconds):
        assert seconds >= 0
        self.events.append(("after", path, ir))


def _inner(x: int) -> int:
    return run_pipeline(x, [Pass("double", lambda v: 2 * v), Pass("inc", lambda v: v + 1)])


def test_instruments_see_every_pass_with_its_path_through_nested_pipelines():
    log, timing = _Log(), PassTiming()
    with instrumented(log, timing):
        got = run_pipeline(3, [Pass("outer", _inner), Pass("inc", lambda v: v + 1)])
    assert got == 8
    assert log.events == [
        ("before", ("outer",), 3),
        ("before", ("outer", "double"), 3),
        ("after", ("outer", "double"), 6),
        ("before", ("outer", "inc"), 6),
        ("after", ("outer", "inc"), 7),
        ("after", ("outer",), 7),
        ("before", ("inc",), 7),
        ("after", ("inc",), 8),
    ]
    lines = timing.report().splitlines()
    assert [line.split()[0] for line in lines[1:]] == ["outer", "double", "inc", "inc"]
    assert lines[2].startswith("  double") and lines[4].startswith("inc")
    assert run_pipeline(3, [Pass("inc", lambda v: v + 1)]) == 4 and len(timing.records) == 4


def test_dump_and_print_after_write_the_ir_of_each_pass(tmp_path):
    stream = io.StringIO()
    with instrumented(DumpIR(tmp_path / "dump"), PrintAfter(["inc"], stream)):
        run_pipeline(3, [Pass("outer", _inner)])
    files = sorted(p.name for p in (tmp_path / "dump").iterdir())
    assert files == ["0001_outer.double.txt", "0002_outer.inc.txt", "0003_outer.txt"]
    assert (tmp_path / "dump" / "0002_outer.inc.txt").read_text() == "7\n"
    assert stream.getvalue() == "# after outer > inc\n7\n"


def _func(body, *params):
    return LoweredFunc("f", params, body)


def test_the_verifier_finds_unbound_variables_unallocated_buffers_and_empty_loops():
    i, j = Var("i", DType.INT32), Var("j", DType.INT32)
    a = Buffer("a", (4,), DType.FLOAT32)
    t = Buffer("t", (4,), DType.FLOAT32)
    verify_lowered(_func(For(i, 4, ForKind.SERIAL, Store(a, (i,), Load(a, (i,)))), a))
    verify_lowered(_func(Allocate(t, For(i, 4, ForKind.SERIAL, Store(t, (i,), Load(a, (i,))))), a))
    cases = [
        (_func(For(i, 4, ForKind.SERIAL, Store(a, (j,), Load(a, (i,)))), a), "variable j"),
        (_func(For(i, 4, ForKind.SERIAL, Store(t, (i,), Load(a, (i,)))), a), "buffer t"),
        (_func(For(i, 0, ForKind.SERIAL, Store(a, (i,), Load(a, (i,)))), a), "extent 0"),
    ]
    for func, words in cases:
        with pytest.raises(CompileError, match=words):
            verify_lowered(func)


def test_verify_names_the_pass_that_broke_the_ir():
    i = Var("i", DType.INT32)
    a = Buffer("a", (4,), DType.FLOAT32)
    good = _func(For(i, 4, ForKind.SERIAL, Store(a, (i,), Load(a, (i,)))), a)
    broken = _func(For(i, 0, ForKind.SERIAL, good.body.body), a)
    verify = Verify(verify_lowered, lambda ir: isinstance(ir, LoweredFunc))
    with instrumented(verify), pytest.raises(CompileError, match="after pass breaks: loop i"):
        run_pipeline(good, [Pass("keeps", lambda f: f), Pass("breaks", lambda f: broken)])


def test_a_model_compiles_verified_and_every_stage_and_lowering_pass_is_timed(tmp_path):
    graph = residual_cnn(0, channels=16, size=8)
    timing = PassTiming()
    verify = Verify(verify_lowered, lambda ir: isinstance(ir, LoweredFunc))
    with instrumented(timing, verify, DumpIR(tmp_path)):
        model = compile_model(graph, "default", calibration=samples(graph, 2))
    names = [stage.name for stage in STAGES]
    assert list(model.stage_seconds) == names
    outer = [path[0] for path, _ in timing.records if len(path) == 1]
    assert outer == names
    nested = {path for path, _ in timing.records if len(path) > 1}
    assert ("partition", "inject_dma") in nested
    # codegen emits programs only: CPU kernels are built where the model runs (no LLVM here)
    assert not [path for path in nested if path[0] == "codegen"]
    dumped = sorted(p.name for p in tmp_path.iterdir())
    assert any(name.endswith("_quantize.txt") for name in dumped)
    assert any(".inject_dma.conv1" in name for name in dumped)  # the node's loop IR
    x = samples(graph, 1, seed=3)[0]
    run = model.run(x, "fsim")
    np.testing.assert_array_equal(run.outputs[model.image.outputs[0]], model.reference(x)[0])


def test_compile_on_the_command_line_times_dumps_and_verifies(tmp_path, capsys):
    onnx_path = tmp_path / "digits.onnx"
    onnx_path.write_bytes(onnx_bytes(DigitsCNN().eval(), np.zeros((1, 1, 8, 8), np.float32)))
    dump = tmp_path / "ir"
    argv = ["compile", str(onnx_path), "-o", str(tmp_path / "d.vtaf"), "--verify-ir"]
    assert main([*argv, "--time-passes", "--dump-ir", str(dump)]) == 0
    out = capsys.readouterr().out
    assert all(f"\n{name} " in out for name in ("quantize", "partition", "codegen"))
    assert "  tensorize_gemm " in out  # a lowering pass, under the stage that ran it
    assert sorted(dump.iterdir())[0].name == "0001_import.digits.txt"  # the model's name
