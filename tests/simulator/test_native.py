"""The compiled timing model (setup.py, simulator/_native.py): the builds beside the sources are
the ones in use, a source unlike what was compiled runs interpreted with a warning, and the
interpreted model times every small conformance program exactly as the compiled one does."""

import ast
import importlib.machinery
import json
import os
import shutil
import subprocess
import sys
import types
from pathlib import Path

import pytest

import simulator
from isa import AccelConfig
from simulator import CycleSimulator
from simulator._native import _builds
from tests.conformance.cases import CASES
from tests.conformance.common import Size

ROOT = Path(__file__).resolve().parents[2]


def _compiled_by_setup() -> list[str]:
    """The module names setup.py's COMPILED lists."""
    tree = ast.parse((ROOT / "setup.py").read_text())
    for node in tree.body:
        if isinstance(node, ast.Assign) and node.targets[0].id == "COMPILED":
            return sorted(Path(path).stem for path in ast.literal_eval(node.value))
    raise AssertionError("setup.py has no COMPILED list")


def _python(code: str, pythonpath: Path) -> subprocess.CompletedProcess:
    """Run ``code`` in a fresh interpreter that finds packages in ``pythonpath`` first."""
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(pythonpath), str(ROOT)])}
    return subprocess.run(
        [sys.executable, "-W", "always", "-c", code],
        cwd=pythonpath,
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
    )


def _sources(into: Path) -> Path:
    """A copy of the simulator package's sources alone (no builds) under ``into``."""
    package = into / "simulator"
    ignore = shutil.ignore_patterns("*.so", "_compiled.json", "__py*")
    shutil.copytree(ROOT / "simulator", package, ignore=ignore)
    return package


def test_the_builds_in_the_tree_are_the_compiled_modules_and_in_use():
    builds = sorted(_builds())
    if builds:  # make setup built them (a scratch copy of tools/mutate.py has none)
        assert builds == _compiled_by_setup()
    assert simulator.compiled_modules() == builds


@pytest.mark.parametrize("recorded", ['{"ports": "another digest"}', "{not json", None])
def test_a_source_unlike_its_build_runs_interpreted_with_a_warning(tmp_path, recorded):
    """A build whose source changed since (or that records nothing) is never loaded: the
    fake build here would fail to load."""
    package = _sources(tmp_path)
    build = package / f"ports{importlib.machinery.EXTENSION_SUFFIXES[0]}"
    build.write_bytes(b"not a shared object: it must never be loaded")
    if recorded is not None:
        (package / "_compiled.json").write_text(recorded)
    done = _python("import simulator; print(simulator.compiled_modules())", tmp_path)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "[]"
    assert "simulator/ports.py differs from what the compiled simulator" in done.stderr
    assert "RuntimeWarning" in done.stderr


def test_without_stale_builds_nothing_is_said(tmp_path):
    _sources(tmp_path)
    done = _python("import simulator; print(simulator.compiled_modules())", tmp_path)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "[]"
    assert "Warning" not in done.stderr


def _timings() -> dict[str, str]:
    """Every small conformance program's timing (cycles, per-instruction cycles, unit
    activity, bursts) on each preset it supports, by case and preset."""
    out = {}
    for case in CASES:
        if case.size is not Size.SMALL:
            continue
        for preset in case.presets:
            cfg = AccelConfig.preset(preset)
            built = case.build(cfg, 0)
            stats = CycleSimulator(cfg).run(built.program, built.dram.copy())
            out[f"{case.name}/{preset}"] = repr(
                (stats.cycles, stats.instructions, stats.units, stats.bursts)
            )
    return out


def test_the_interpreted_timing_model_agrees_with_the_one_in_use(tmp_path):
    _sources(tmp_path)
    code = (
        "import json, simulator\n"
        "from tests.simulator.test_native import _timings\n"
        "assert simulator.compiled_modules() == []\n"
        "print(json.dumps(_timings()))"
    )
    done = _python(code, tmp_path)
    assert done.returncode == 0, done.stderr
    ours = _timings()
    assert len(ours) > 20
    assert json.loads(done.stdout) == ours


def test_compiled_modules_names_each_module_loaded_from_a_build(monkeypatch):
    """Whatever the tree holds (a scratch copy of tools/mutate.py has no build): a module of
    the package whose file is an extension is listed by its short name, others are not."""
    suffix = importlib.machinery.EXTENSION_SUFFIXES[0]
    built = types.ModuleType("simulator.fake_built")
    built.__file__ = f"/somewhere/simulator/fake_built{suffix}"
    source = types.ModuleType("simulator.fake_source")
    source.__file__ = "/somewhere/simulator/fake_source.py"
    monkeypatch.setitem(sys.modules, "simulator.fake_built", built)
    monkeypatch.setitem(sys.modules, "simulator.fake_source", source)
    listed = simulator.compiled_modules()
    assert "fake_built" in listed and "fake_source" not in listed
