"""The example programs under ``examples/`` (issue 17 item 11) run from the command line and
give what numpy computes; ``examples/make_examples.py`` writes the demo's programs."""

import importlib.util
from pathlib import Path

import numpy as np
import pytest

from isa import AccelConfig, Program, assemble, disassemble
from runtime.cli import main
from runtime.demo_gemm import demo_expected_output, demo_gemm_program

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"


def _bias_relu(program: Program, dram: np.ndarray) -> None:
    """examples/bias_relu.s: max(acc - 5, 0) of the ACC rows, as int8 outputs."""
    acc = np.frombuffer(_segment(program, "acc"), "<i4")
    out = program.named_regions()["out"]
    expected = np.maximum(acc.astype(np.int64) - 5, 0).astype(np.int8)
    assert dram[out.address : out.end].view(np.int8).tolist() == expected.tolist()


def _segment(program: Program, name: str) -> bytes:
    return next(s.data for s in program.segments if s.name == name)


#: The numpy reference of each hand-written example (every examples/*.s must have one).
REFERENCES = {"bias_relu": _bias_relu}


def test_every_example_has_a_reference():
    assert {p.stem for p in EXAMPLES.glob("*.s")} == set(REFERENCES)


@pytest.mark.parametrize("name", sorted(REFERENCES))
def test_an_example_assembles_and_runs_from_the_command_line(capsys, tmp_path, name):
    binary = tmp_path / f"{name}.bin"
    assert main(["asm", str(EXAMPLES / f"{name}.s"), "-o", str(binary)]) == 0
    program = Program.load(binary)
    outputs = [r.name for r in program.regions]
    argv = ["sim", str(binary)]
    for region in outputs:
        argv += ["--output", f"{region}={tmp_path / region}.npy"]
    assert main(argv) == 0
    dram = np.zeros(program.dram_extent, dtype=np.uint8)
    for region in outputs:
        r = program.named_regions()[region]
        dram[r.address : r.end] = np.load(tmp_path / f"{region}.npy")
    REFERENCES[name](program, dram)
    assert assemble(disassemble(program)) == program


def test_make_examples_writes_the_demo_programs(capsys, tmp_path):
    spec = importlib.util.spec_from_file_location("make_examples", EXAMPLES / "make_examples.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    written = {p.name for p in module.make_examples(tmp_path)}
    for preset in AccelConfig.preset_names():
        assert {f"demo_gemm_{preset}.s", f"demo_gemm_{preset}.bin"} <= written
    assert {f"{name}.bin" for name in REFERENCES} <= written
    program = demo_gemm_program(AccelConfig.preset("tiny"))
    assert (tmp_path / "demo_gemm_tiny.s").read_text() == disassemble(program)
    out = tmp_path / "out.npy"
    assert main(["sim", str(tmp_path / "demo_gemm_tiny.bin"), "--output", f"outputs={out}"]) == 0
    assert np.load(out).tobytes() == demo_expected_output(program)[1]
