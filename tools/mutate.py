"""Mutation testing of isa/, simulator/ and compiler/: does the test suite notice a small bug?

``python tools/mutate.py [--paths isa simulator compiler] [--sample N] [--seed S]`` lists every
mutant that the operators below make of the Python files under ``--paths``, runs a random sample
of ``N`` per package (all of them with ``--sample 0``) and prints, per package, how many the
tests killed (failed, or ran ``--timeout`` times as long as unmutated, plus a minute) and every
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
the compiled timing model, so the mutated sources run interpreted) with the tests of its package
(``tests/isa/``, ``tests/simulator/``; for ``compiler/``, the test files that mention the mutated
module), ``pytest -x -n 0``; the unmutated tests must pass first. A line that ends with
``# pragma: no mutate`` is skipped. Exit status 0 always (the score is a report).
"""

from __future__ import annotations

import argparse
import ast
import random
import re
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PACKAGES = ("isa", "simulator", "compiler")
_SKIP = "# pragma: no mutate"
#: How each mutant's tests run: no bytecode written (a mutant's must never be reused), first
#: failure ends the run, one process; the GPU tests (marker `gpu`) are left to `make test-gpu`.
_PYTEST = ("-B", "-m", "pytest", "-x", "-q", "-n", "0", "-p", "no:cacheprovider", "-m", "not gpu")

#: Packages whose mutants run their whole test folder (see :func:`_tests_for`).
_WHOLE_FOLDER = ("isa", "simulator")

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


def _tests_for(path: Path) -> list[str]:
    """The whole test folder of ``isa`` and ``simulator`` (their tests reach every module
    through the public API, minutes in all); for a module of another package, the test files
    that mention it (its dotted name, or its name imported from its parent), else those that
    mention its parent package, else the package's whole test folder."""
    relative = path.relative_to(ROOT).with_suffix("")
    parent, stem = ".".join(relative.parts[:-1]), relative.parts[-1]
    folder = ROOT / "tests" / relative.parts[0]
    if relative.parts[0] in _WHOLE_FOLDER:
        return [str(folder.relative_to(ROOT))]
    texts = {test: test.read_text() for test in sorted(folder.rglob("test_*.py"))}
    imported = re.compile(rf"from {re.escape(parent)}\s+import\s+\(?[^)]*\b{stem}\b")
    for wanted in (
        lambda text: ".".join(relative.parts) in text or imported.search(text),
        lambda text: f"{parent}." in text or f"from {parent} import" in text,
    ):
        chosen = [str(test.relative_to(ROOT)) for test, text in texts.items() if wanted(text)]
        if chosen:
            return chosen
    return [str(folder.relative_to(ROOT))]


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
            by_package.setdefault(mutant.package, []).append(mutant)
    rng = random.Random(args.seed)
    for package, mutants in sorted(by_package.items()):
        print(f"{package}: {len(mutants)} mutants in {len({m.path for m in mutants})} files")
        if args.sample and len(mutants) > args.sample:
            by_package[package] = sorted(rng.sample(mutants, args.sample), key=Mutant.where)
    if args.list:
        return 0
    scratch = _scratch_copy()
    try:
        return _run(scratch, by_package, args.timeout)
    finally:
        shutil.rmtree(scratch, ignore_errors=True)


def _rank(package: str) -> int:
    """Packages in dependency order (isa, simulator, compiler), others after."""
    return PACKAGES.index(package) if package in PACKAGES else len(PACKAGES)


def _run(scratch: Path, by_package: dict[str, list[Mutant]], timeout: float) -> int:
    baseline: dict[tuple[str, ...], tuple[str, float]] = {}
    scores = []
    for package, mutants in sorted(by_package.items(), key=lambda item: _rank(item[0])):
        killed, survivors, started = 0, [], time.monotonic()
        for number, mutant in enumerate(mutants, 1):
            tests = tuple(_tests_for(mutant.path))
            if tests not in baseline:
                baseline[tests] = _pytest(scratch, list(tests), None)
            status, seconds = baseline[tests]
            if status != "passed":
                print(f"  skipped {mutant.where()}: its tests fail unmutated ({' '.join(tests)})")
                continue
            target = scratch / mutant.path.relative_to(ROOT)
            original = target.read_text()
            target.write_text(mutant.apply(original))
            try:
                outcome, _ = _pytest(scratch, list(tests), timeout * seconds + 60)
            finally:
                target.write_text(original)
            killed += outcome != "passed"
            if outcome == "passed":
                survivors.append(mutant)
            mark = "survived" if outcome == "passed" else f"killed ({outcome})"
            print(
                f"  [{number}/{len(mutants)}] {mutant.where()} {mutant.description}: {mark} "
                f"({len(tests)} test files)"
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
