"""A compiled program is an artefact: saved, it runs through the runtime and ``vtaforge sim``
in a process that never imports the compiler, with the same bytes as in-process."""

from __future__ import annotations

import subprocess
import sys

import numpy as np

from isa import AccelConfig
from runtime import open_device
from tests.conformance.compiled_cases import COMPILED_CASES

RUN_WITHOUT_COMPILER = """
import sys
import numpy as np
from isa import Program
from runtime import open_device
program = Program.load(sys.argv[1])
dram = np.zeros(program.dram_extent, dtype=np.uint8)
open_device("fsim", program.config).run(program, dram)
assert not any(name == "compiler" or name.startswith("compiler.") for name in sys.modules)
sys.stdout.write(dram.tobytes().hex())
"""


def test_saved_program_runs_without_the_compiler(tmp_path):
    cfg = AccelConfig.preset("tiny")
    built = COMPILED_CASES[0].build(cfg, 0)
    path = tmp_path / "conv.bin"
    built.program.save(path)
    child = subprocess.run(
        [sys.executable, "-c", RUN_WITHOUT_COMPILER, str(path)],
        capture_output=True,
        text=True,
        check=False,
    )
    assert child.returncode == 0, child.stderr
    dram = np.frombuffer(bytes.fromhex(child.stdout), dtype=np.uint8).copy()
    built.check(dram)  # the compiled conv's numpy reference
    here = built.dram.copy()
    open_device("fsim", cfg).run(built.program, here)
    np.testing.assert_array_equal(dram, here)
    sim = subprocess.run(
        [sys.executable, "-m", "runtime.cli", "sim", str(path), "--config", "tiny"],
        capture_output=True,
        text=True,
        check=False,
    )
    assert sim.returncode == 0, sim.stderr
    assert "GEMM utilisation" in sim.stdout
