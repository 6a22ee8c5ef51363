"""Mutation testing of isa/, simulator/ and compiler/: does the test suite notice a small bug?

``python tools/mutate.py [--paths isa simulator compiler] [--sample N] [--seed S]
[--only FILE:LINE ...]`` lists every mutant that the operators below make of the Python files
under ``--paths``, runs a random sample of ``N`` per package (all of them with ``--sample 0``;
with ``--only``, every mutant of the lines named) and prints, per package, how many the tests
killed (failed, or ran ``--timeout`` times as long as unmutated, plus a minute) and every
survivor with its file, line and change. A survivor is a behaviour no test pins down, or an
equivalent mutant (one that changes nothing observable): read each one.

Operators (on the syntax tree; the mutated node's source text is replaced, the rest of the file
is left byte for byte):

- comparisons: ``<`` <-> ``<=``, ``>`` <-> ``>=``, ``==`` <-> ``!=``, ``is`` <-> ``is not``,
  ``in`` <-> ``not in``;
- arithmetic: ``+`` <-> ``-``, ``*`` -> ``//``, ``//`` -> ``*``, ``%`` -> ``//``, ``<<`` <-> ``>>``;
- integer constants: ``n`` -> ``n + 1`` and ``n - 1`` (not in annotations);
- boolean operators: ``and`` <-> ``or``, and each operand of one dropped;
- conditions of ``if``/``while``/``assert``/ternaries negated.

Each mutant runs in a scratch copy of the repository (made once, without ``.venv``, ``.git`` and
the compiled timing model, so the mutated sources run interpreted) with every test file that can
observe its module: those that import it, or a name it defines, directly or through any of the
repository's modules (:class:`ImportGraph`: the timing model's RTL-calibration tests under
tests/hw and tests/runtime observe isa's timing parameters, for one), the nearest first and, as
near, the quickest first, ``pytest -x -n 0 -m "not gpu and not ecp5"``. The selected files run
once unmutated first, together; a file that fails, does not collect or runs no test then is left
out of every mutant's run (and listed). The copy is of the working tree as it is: where git
lists uncommitted changes of its files, they are named first (someone's unfinished edit can
leave test files failing unmutated, and so out of the run: mutate a clean checkout or a
worktree for a score). A line that ends with ``# pragma: no mutate`` is skipped. Exit status 0
always (the score is a report).
"""

from __future__ import annotations

import argparse
import ast
import random
import shutil
import subprocess
import sys
import tempfile
import time
import tomllib
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from xml.etree import ElementTree

ROOT = Path(__file__).resolve().parent.parent
PACKAGES = ("isa", "simulator", "compiler")
_SKIP = "# pragma: no mutate"
#: How each mutant's tests run: no bytecode written (a mutant's must never be reused), first
#: failure ends the run, one process; the GPU tests (marker `gpu`) are left to `make test-gpu`,
#: the ECP5 toolchain's (`ecp5`, minutes, not in `make test`) to their own runs.
_PYTEST = (
    "-B",
    "-m",
    "pytest",
    "-x",
    "-q",
    "-n",
    "0",
    "-p",
    "no:cacheprovider",
    "-m",
    "not gpu and not ecp5",
)

_COMPARE_SWAPS = {
    ast.Lt: ast.LtE,
    ast.LtE: ast.Lt,
    ast.Gt: ast.GtE,
    ast.GtE: ast.Gt,
    ast.Eq: ast.NotEq,
    ast.NotEq: ast.Eq,
    ast.Is: ast.IsNot,
    ast.IsNot: ast.Is,
    ast.In: ast.NotIn,
    ast.NotIn: ast.In,
}
_BINOP_SWAPS = {
    ast.Add: ast.Sub,
    ast.Sub: ast.Add,
    ast.Mult: ast.FloorDiv,
    ast.FloorDiv: ast.Mult,
    ast.Mod: ast.FloorDiv,
    ast.LShift: ast.RShift,
    ast.RShift: ast.LShift,
}


@dataclass(frozen=True)
class Mutant:
    """One change: ``path``'s source from ``start`` to ``end`` (offsets) becomes ``text``."""

    path: Path
    line: int
    start: int
    end: int
    text: str
    description: str

    @property
    def package(self) -> str:
        return self.path.relative_to(ROOT).parts[0]

    def where(self) -> str:
        return f"{self.path.relative_to(ROOT)}:{self.line}"

    def apply(self, source: str) -> str:
        return source[: self.start] + self.text + source[self.end :]


def _offsets(source: str) -> list[int]:
    """The offset of each line's start (lines counted from 1, as ``ast`` counts them)."""
    starts, total = [0, 0], 0
    for line in source.splitlines(keepends=True):
        total += len(line)
        starts.append(total)
    return starts


def _unmutated_nodes(tree: ast.AST) -> set[int]:
    """ids of the nodes left alone: inside annotations (they do not run) and f-strings (their
    nodes' positions are not the source's in Python 3.11)."""
    found: set[int] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.JoinedStr):
            found.update(id(n) for n in ast.walk(node))
        annotations = []
        if isinstance(node, ast.arg | ast.AnnAssign) and node.annotation is not None:
            annotations.append(node.annotation)
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef) and node.returns:
            annotations.append(node.returns)
        for annotation in annotations:
            found.update(id(n) for n in ast.walk(annotation))
    return found


def _variants(node: ast.AST) -> Iterator[tuple[ast.AST, str]]:
    """Mutated copies of ``node`` with a description of each change."""
    if isinstance(node, ast.Compare) and len(node.ops) == 1:
        swap = _COMPARE_SWAPS.get(type(node.ops[0]))
        if swap is not None:
            new = ast.Compare(node.left, [swap()], node.comparators)
            yield new, f"{type(node.ops[0]).__name__} -> {swap.__name__}"
    elif isinstance(node, ast.BinOp):
        swap = _BINOP_SWAPS.get(type(node.op))
        if swap is not None:
            yield (
                ast.BinOp(node.left, swap(), node.right),
                f"{type(node.op).__name__} -> {swap.__name__}",
            )
    elif isinstance(node, ast.Constant) and type(node.value) is int:
        for delta in (1, -1):
            yield ast.Constant(node.value + delta), f"{node.value} -> {node.value + delta}"
    elif isinstance(node, ast.BoolOp):
        other = ast.Or if isinstance(node.op, ast.And) else ast.And
        yield ast.BoolOp(other(), node.values), f"{type(node.op).__name__} -> {other.__name__}"
        for index in range(len(node.values)):
            rest = node.values[:index] + node.values[index + 1 :]
            kept = rest[0] if len(rest) == 1 else ast.BoolOp(node.op, rest)
            yield kept, f"operand {index + 1} of {type(node.op).__name__} dropped"


def _conditions(tree: ast.AST) -> set[int]:
    """ids of the conditions of if/while/assert/ternaries (negated as a whole)."""
    found = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.If | ast.While | ast.IfExp | ast.Assert):
            found.add(id(node.test))
    return found


def mutants_of(path: Path) -> list[Mutant]:
    """Every mutant of the file at ``path`` (see the module docstring)."""
    source = path.read_text()
    tree = ast.parse(source)
    starts = _offsets(source)
    lines = source.splitlines()
    skip = _unmutated_nodes(tree)
    docstrings = {
        id(n.body[0].value)
        for n in ast.walk(tree)
        if isinstance(n, ast.Module | ast.ClassDef | ast.FunctionDef | ast.AsyncFunctionDef)
        and n.body
        and isinstance(n.body[0], ast.Expr)
    }
    conditions = _conditions(tree)
    found = []
    for node in ast.walk(tree):
        if id(node) in skip or id(node) in docstrings or not hasattr(node, "end_col_offset"):
            continue
        if lines[node.lineno - 1].rstrip().endswith(_SKIP):
            continue
        start = starts[node.lineno] + node.col_offset
        end = starts[node.end_lineno] + node.end_col_offset
        variants = list(_variants(node))
        if id(node) in conditions:
            variants.append((ast.UnaryOp(ast.Not(), node), "condition negated"))
        for new, description in variants:
            text = f"({ast.unparse(new)})"  # parenthesised: the precedence around it holds
            found.append(Mutant(path, node.lineno, start, end, text, description))
    return found


def module_name(root: Path, path: Path) -> str:
    """The dotted name ``path`` (a ``.py`` file under ``root``) is imported by."""
    parts = path.relative_to(root).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


@dataclass(frozen=True)
class ImportGraph:
    """Which of the repository's modules use which, read statically from their syntax trees.

    Module ``A`` *uses* module ``B`` when ``A`` imports ``B`` or a name that ``B`` defines: an
    ``from P import N`` follows ``N`` through the packages that re-export it to the module
    that defines it (``from isa import TimingConfig`` uses ``isa.config``), and a name ``P``
    does not import from elsewhere (its own, or one it loads on first use) uses ``P`` itself;
    a string constant that is a module's dotted name (``importlib``, ``python -m``, the lazy
    packages' tables) or a console script of ``pyproject.toml`` uses that module, and the
    script's module uses the entry points (``vtaforge``'s subcommands); a test file uses the
    ``conftest.py`` files of its folders (their fixtures). Importing ``P.M`` also *runs* the
    package ``P`` (its ``__init__``), without using what ``P`` imports.
    """

    root: Path
    files: dict[str, Path]
    uses: dict[str, frozenset[str]]
    runs: dict[str, frozenset[str]]

    @classmethod
    def of(cls, root: Path) -> ImportGraph:
        """The graph of every ``.py`` file under ``root`` but those in :data:`_NOT_SOURCES`."""
        files = {
            module_name(root, path): path
            for path in sorted(root.rglob("*.py"))
            if not _NOT_SOURCES.intersection(path.relative_to(root).parts[:-1])
        }
        scripts = _scripts(root)
        trees = {name: ast.parse(path.read_bytes()) for name, path in files.items()}
        bindings = {name: _bindings(name, tree, files) for name, tree in trees.items()}
        uses: dict[str, frozenset[str]] = {}
        runs: dict[str, frozenset[str]] = {}
        for name, tree in trees.items():
            used, ran = set(), set()
            for module, imported in _imports(name, tree, files):
                target = _resolve(module, imported, files, bindings)
                used.add(target)
                ran.update(_parents(target, files))
            for node in ast.walk(tree):
                if isinstance(node, ast.Constant) and isinstance(node.value, str):
                    if "." in node.value and node.value in files:
                        used.add(node.value)
                    elif node.value in scripts:
                        used.add(scripts[node.value][0])
            for script, *plugins in scripts.values():
                if name == script:
                    used.update(p for p in plugins if p in files)
            if files[name].name.startswith("test_"):  # pytest loads the conftest.py above it
                folders = files[name].relative_to(root).parts[:-1]
                for end in range(1, len(folders) + 1):
                    conftest = ".".join((*folders[:end], "conftest"))
                    if conftest in files:
                        used.add(conftest)
            used.discard(name)
            uses[name], runs[name] = frozenset(used), frozenset(ran - used - {name})
        return cls(root, files, uses, runs)

    def observers(self, module: str) -> dict[str, int]:
        """Each module that can observe ``module``, and how many uses away it is: 1 for those
        that use it (or, for a package, run it), 2 for those that use one of those, ..."""
        users: dict[str, set[str]] = {}
        for user, used in self.uses.items():
            for target in used:
                users.setdefault(target, set()).add(user)
        first = users.get(module, set()) | {m for m, ran in self.runs.items() if module in ran}
        found = dict.fromkeys(sorted(first - {module}), 1)
        frontier = list(found)
        while frontier:
            following = []
            for current in frontier:
                for user in sorted(users.get(current, ())):
                    if user != module and user not in found:
                        found[user] = found[current] + 1
                        following.append(user)
            frontier = following
        return found

    def test_files(self, path: Path) -> dict[str, int]:
        """The test files (``tests/**/test_*.py``, relative to the root) that can observe the
        module at ``path``, with their distance (see :meth:`observers`)."""
        found = {}
        for module, distance in self.observers(module_name(self.root, path)).items():
            file = self.files[module].relative_to(self.root)
            if file.parts[0] == "tests" and file.name.startswith("test_"):
                found[str(file)] = distance
        return found


#: Folders whose Python files are not the project's modules.
_NOT_SOURCES = frozenset({".venv", ".git", "build", "__pycache__", ".hypothesis", "notebooks"})


def _scripts(root: Path) -> dict[str, list[str]]:
    """Each console script of ``pyproject.toml``: its module, then every entry point's module
    (the plugins a script loads)."""
    project = tomllib.loads((root / "pyproject.toml").read_text()).get("project", {})
    plugins = [
        target.split(":")[0]
        for group in project.get("entry-points", {}).values()
        for target in group.values()
    ]
    return {
        name: [target.split(":")[0], *plugins]
        for name, target in project.get("scripts", {}).items()
    }


def _absolute(module: str, files: dict[str, Path], node: ast.ImportFrom) -> str:
    """The module an ``ImportFrom`` in ``module`` names (relative imports resolved)."""
    if not node.level:
        return node.module or ""
    package = module if files[module].name == "__init__.py" else module.rpartition(".")[0]
    base = package.rsplit(".", node.level - 1)[0] if node.level > 1 else package
    return f"{base}.{node.module}" if node.module else base


def _imports(module: str, tree: ast.AST, files: dict[str, Path]) -> Iterator[tuple[str, str]]:
    """(module, name) for each name ``module`` imports from a module of ``files`` (``""`` for
    a module imported as a whole)."""
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                if alias.name in files:
                    yield alias.name, ""
        elif isinstance(node, ast.ImportFrom):
            source = _absolute(module, files, node)
            if source in files:
                for alias in node.names:
                    yield source, "" if alias.name == "*" else alias.name


def _bindings(module: str, tree: ast.AST, files: dict[str, Path]) -> dict[str, tuple[str, str]]:
    """The names ``module``'s top level binds by ``from M import N [as B]``: B -> (M, N)."""
    found = {}
    for node in getattr(tree, "body", []):
        if isinstance(node, ast.ImportFrom):
            source = _absolute(module, files, node)
            for alias in node.names:
                if alias.name != "*":
                    found[alias.asname or alias.name] = (source, alias.name)
    return found


def _resolve(
    module: str,
    name: str,
    files: dict[str, Path],
    bindings: dict[str, dict[str, tuple[str, str]]],
) -> str:
    """The module that defines ``name`` of ``module`` (``module`` itself for ``""``, a name it
    defines or one it does not import from another of ``files``)."""
    seen = set()
    while name and (module, name) not in seen:
        seen.add((module, name))
        if f"{module}.{name}" in files:
            return f"{module}.{name}"
        source = bindings.get(module, {}).get(name)
        if source is None or source[0] not in files:
            break
        module, name = source
    return module


def _parents(module: str, files: dict[str, Path]) -> Iterator[str]:
    """The packages importing ``module`` runs first (outermost first)."""
    parts = module.split(".")
    for end in range(1, len(parts)):
        parent = ".".join(parts[:end])
        if parent in files:
            yield parent


def _tests_for(path: Path, graph: ImportGraph, baseline: dict[str, FileRun]) -> list[str]:
    """The test files that can observe the module at ``path`` (:meth:`ImportGraph.test_files`)
    and pass unmutated, nearest first and, as near, quickest first (pytest ``-x`` stops at the
    first failure, so a mutant that a direct test kills costs that test alone)."""
    chosen = graph.test_files(path)
    return sorted(
        (test for test in chosen if baseline.get(test, FileRun()).usable),
        key=lambda test: (chosen[test], baseline[test].seconds, test),
    )


def _pytest(scratch: Path, tests: list[str], timeout: float | None) -> tuple[str, float]:
    """``passed``, ``failed`` or ``timeout`` for ``tests`` in ``scratch``, and the seconds."""
    command = [sys.executable, *_PYTEST, *tests]
    started = time.monotonic()
    try:
        done = subprocess.run(
            command, cwd=scratch, capture_output=True, timeout=timeout, check=False
        )
    except subprocess.TimeoutExpired:
        return "timeout", time.monotonic() - started
    return ("passed" if done.returncode == 0 else "failed"), time.monotonic() - started


@dataclass(frozen=True)
class FileRun:
    """One test file's unmutated run: its selected tests' seconds, how many ran (the others
    were deselected or skipped) and whether any failed."""

    seconds: float = 0.0
    ran: int = 0
    failed: bool = False

    @property
    def usable(self) -> bool:
        """A mutant's run may include the file: it ran tests, and they passed."""
        return self.ran > 0 and not self.failed


def _baseline(scratch: Path, tests: list[str]) -> dict[str, FileRun]:
    """Each of ``tests`` run unmutated, in one pytest run (a file that does not collect, or
    whose tests all fail, skip or are deselected, is missing or not usable)."""
    report = scratch / ".mutate-baseline.xml"
    command = [
        sys.executable,
        *(a for a in _PYTEST if a != "-x"),
        "--continue-on-collection-errors",
        f"--junitxml={report}",
        "-o",
        "junit_family=xunit1",  # each test case names its file
        *tests,
    ]
    subprocess.run(command, cwd=scratch, capture_output=True, check=False)
    found: dict[str, FileRun] = {}
    for case in ElementTree.parse(report).iter("testcase"):
        file = case.get("file")
        if file is None:
            continue
        kinds = {child.tag for child in case}
        before = found.get(file, FileRun())
        found[file] = FileRun(
            before.seconds + float(case.get("time", 0)),
            before.ran + ("skipped" not in kinds),
            before.failed or bool(kinds & {"failure", "error"}),
        )
    report.unlink()
    return found


def uncommitted(root: Path) -> list[str]:
    """The paths git lists as changed or untracked under ``root`` (none outside a git
    repository, or without git)."""
    try:
        done = subprocess.run(
            ["git", "status", "--porcelain", "--untracked-files=normal"],
            cwd=root,
            capture_output=True,
            text=True,
            check=False,
        )
    except OSError:
        return []
    if done.returncode:
        return []
    return [line[3:] for line in done.stdout.splitlines() if line[3:]]


def _scratch_copy() -> Path:
    scratch = Path(tempfile.mkdtemp(prefix="vtaforge-mutate-"))
    ignore = shutil.ignore_patterns(
        ".venv", ".git", "__pycache__", ".hypothesis", "build", "*.egg-info", "*.so"
    )
    shutil.copytree(ROOT, scratch, dirs_exist_ok=True, ignore=ignore)
    return scratch


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--paths", nargs="+", default=list(PACKAGES), help="folders or files")
    parser.add_argument("--sample", type=int, default=20, help="mutants per package (0: all)")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument(
        "--only",
        nargs="+",
        default=(),
        metavar="FILE:LINE",
        help="run only the mutants of these lines (of --paths' files; no sampling)",
    )
    parser.add_argument(
        "--timeout",
        type=float,
        default=3.0,
        help="a mutant whose tests run this many times longer than unmutated (plus a minute) "
        "counts as killed: it hangs",
    )
    parser.add_argument("--list", action="store_true", help="count the mutants and stop")
    args = parser.parse_args(argv)
    files = sorted(
        file
        for item in args.paths
        for file in ([ROOT / item] if item.endswith(".py") else (ROOT / item).rglob("*.py"))
    )
    by_package: dict[str, list[Mutant]] = {}
    for file in files:
        for mutant in mutants_of(file):
            if not args.only or mutant.where() in args.only:
                by_package.setdefault(mutant.package, []).append(mutant)
    rng = random.Random(args.seed)
    for package, mutants in sorted(by_package.items()):
        print(f"{package}: {len(mutants)} mutants in {len({m.path for m in mutants})} files")
        if args.sample and len(mutants) > args.sample and not args.only:
            by_package[package] = sorted(rng.sample(mutants, args.sample), key=Mutant.where)
    if args.list:
        return 0
    changed = uncommitted(ROOT)
    if changed:
        more = f" and {len(changed) - 8} more" if len(changed) > 8 else ""
        shown = ", ".join(changed[:8]) + more
        print(f"mutating a working tree with uncommitted changes: {shown}")
    scratch = _scratch_copy()
    try:
        return _run(scratch, by_package, args.timeout)
    finally:
        shutil.rmtree(scratch, ignore_errors=True)


def _rank(package: str) -> int:
    """Packages in dependency order (isa, simulator, compiler), others after."""
    return PACKAGES.index(package) if package in PACKAGES else len(PACKAGES)


def _run(scratch: Path, by_package: dict[str, list[Mutant]], timeout: float) -> int:
    graph = ImportGraph.of(ROOT)
    observers = {
        mutant.path: graph.test_files(mutant.path)
        for mutants in by_package.values()
        for mutant in mutants
    }
    wanted = sorted({test for tests in observers.values() for test in tests})
    started = time.monotonic()
    baseline = _baseline(scratch, wanted)
    print(
        f"unmutated: {len(wanted)} test files in {(time.monotonic() - started) / 60:.1f} min; "
        f"left out (failing, not collected, or no test selected): "
        f"{' '.join(t for t in wanted if not baseline.get(t, FileRun()).usable) or 'none'}"
    )
    scores = []
    for package, mutants in sorted(by_package.items(), key=lambda item: _rank(item[0])):
        killed, survivors, started = 0, [], time.monotonic()
        for number, mutant in enumerate(mutants, 1):
            tests = _tests_for(mutant.path, graph, baseline)
            if not tests:
                print(f"  skipped {mutant.where()}: no passing test file observes it")
                continue
            seconds = sum(baseline[test].seconds for test in tests)
            target = scratch / mutant.path.relative_to(ROOT)
            original = target.read_text()
            target.write_text(mutant.apply(original))
            try:
                outcome, _ = _pytest(scratch, tests, timeout * seconds + 60)
            finally:
                target.write_text(original)
            killed += outcome != "passed"
            if outcome == "passed":
                survivors.append(mutant)
            mark = "survived" if outcome == "passed" else f"killed ({outcome})"
            print(
                f"  [{number}/{len(mutants)}] {mutant.where()} {mutant.description}: {mark} "
                f"({len(tests)} test files, nearest {tests[0]})",
                flush=True,
            )
        run = killed + len(survivors)
        minutes = (time.monotonic() - started) / 60
        scores.append(
            f"{package:<10} {killed:>4} / {run:<4} killed ({100 * killed / max(run, 1):.0f}%)"
            f", {minutes:.1f} min"
        )
        for mutant in survivors:
            print(f"  SURVIVED {mutant.where()}: {mutant.description}")
    print("\nmutation score per package")
    print("\n".join(scores))
    return 0


if __name__ == "__main__":
    sys.exit(main())
