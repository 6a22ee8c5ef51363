"""tools/mutate.py's choice of tests: a mutant runs every test file that can observe its module
(through the static import graph, re-exports, lazy tables and console scripts followed), the
nearest and quickest first, and only those that pass unmutated."""

from __future__ import annotations

import textwrap
from collections import Counter
from pathlib import Path

import pytest

from tools.mutate import (
    ROOT,
    FileRun,
    ImportGraph,
    _baseline,
    _tests_for,
    main,
    mutants_of,
    uncommitted,
)

#: A small repository: ``pkg`` re-exports ``Thing`` from ``pkg.core``; ``lazy`` names its module
#: in a table (as isa.lazy's packages do); the console script ``tool`` loads ``ext.plugin``.
_TREE = {
    "pyproject.toml": """
        [project.scripts]
        tool = "app.cli:main"
        [project.entry-points."tool.commands"]
        plug = "ext.plugin:COMMAND"
    """,
    "pkg/__init__.py": "from pkg.core import Thing\nfrom .extra import helper\n",
    "pkg/core.py": "class Thing:\n    pass\n",
    "pkg/extra.py": "def helper():\n    return 1\n",
    "pkg/unused.py": "VALUE = 1\n",
    "mid/__init__.py": "",
    "mid/user.py": "from pkg import Thing\n",
    "lazy/__init__.py": '_SOURCES = {"name": "lazy.impl"}\n',
    "lazy/impl.py": "name = 1\n",
    "app/__init__.py": "",
    "app/cli.py": "def main():\n    pass\n",
    "ext/__init__.py": "",
    "ext/plugin.py": "COMMAND = 1\n",
    "tests/__init__.py": "",
    "tests/helper.py": "from pkg.extra import helper\n",
    "tests/test_direct.py": "from pkg.core import Thing\n",
    "tests/test_via_init.py": "from pkg import Thing\n",
    "tests/test_indirect.py": "def test_x():\n    import mid.user\n",
    "tests/test_helper.py": "from tests.helper import helper\n",
    "tests/test_lazy.py": "import lazy\n",
    "tests/test_cli.py": 'import subprocess\nsubprocess.run(["tool", "plug"])\n',
    "tests/sub/__init__.py": "",
    "tests/sub/conftest.py": "from pkg.unused import VALUE\n",
    "tests/sub/test_relative.py": "from ..helper import helper\n",
}


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    for name, text in _TREE.items():
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_text(textwrap.dedent(text))
    return tmp_path


@pytest.mark.parametrize(
    ("module", "expected"),
    [
        # used directly, through the package's re-export, and through mid.user (2 away)
        (
            "pkg/core.py",
            {"tests/test_direct.py": 1, "tests/test_via_init.py": 1, "tests/test_indirect.py": 2},
        ),
        # a name a helper module of the tests imports, followed to its definition (imported
        # absolutely and relatively)
        ("pkg/extra.py", {"tests/test_helper.py": 1, "tests/sub/test_relative.py": 1}),
        # re-exporting a sibling does not make a package use all of them: only the fixtures of
        # tests/sub (its conftest.py) import it
        ("pkg/unused.py", {"tests/sub/test_relative.py": 2}),
        # the package runs whenever one of its modules is imported
        (
            "pkg/__init__.py",
            {
                "tests/test_direct.py": 1,
                "tests/test_via_init.py": 1,
                "tests/test_indirect.py": 2,
                "tests/test_helper.py": 1,
                "tests/sub/test_relative.py": 1,
            },
        ),
        # named in the lazy package's table
        ("lazy/impl.py", {"tests/test_lazy.py": 2}),
        # the console script a test runs, and the plugin the script loads
        ("app/cli.py", {"tests/test_cli.py": 1}),
        ("ext/plugin.py", {"tests/test_cli.py": 2}),
    ],
)
def test_the_test_files_that_observe_a_module_and_their_distance(repo, module, expected):
    assert ImportGraph.of(repo).test_files(repo / module) == expected


def test_tests_run_nearest_then_quickest_and_only_where_they_pass_unmutated(repo):
    graph = ImportGraph.of(repo)
    baseline = {
        "tests/test_direct.py": FileRun(5.0, 3),
        "tests/test_via_init.py": FileRun(1.0, 2),
        "tests/test_indirect.py": FileRun(0.1, 1),
        "tests/test_helper.py": FileRun(0.1, 1, failed=True),
        "tests/sub/test_relative.py": FileRun(0.1, 0),  # every test deselected or skipped
    }
    assert _tests_for(repo / "pkg/core.py", graph, baseline) == [
        "tests/test_via_init.py",
        "tests/test_direct.py",
        "tests/test_indirect.py",
    ]
    assert _tests_for(repo / "pkg/extra.py", graph, baseline) == []


def test_the_unmutated_run_records_each_files_outcome(tmp_path):
    tests = {
        "test_passes.py": "def test_a():\n    pass\n\ndef test_b():\n    pass\n",
        "test_fails.py": "def test_a():\n    pass\n\ndef test_b():\n    assert False\n",
        "test_skips.py": "import pytest\n\n@pytest.mark.skip\ndef test_a():\n    pass\n",
        "test_broken.py": "import a_module_that_is_not_there\n",
    }
    for name, text in tests.items():
        (tmp_path / name).write_text(text)
    found = _baseline(tmp_path, sorted(tests))
    assert {name: (run.ran, run.failed, run.usable) for name, run in found.items()} == {
        "test_passes.py": (2, False, True),
        "test_fails.py": (2, True, False),
        "test_skips.py": (0, False, False),
        "test_broken.py": (1, True, False),  # its collection error
    }


def test_the_timing_models_rtl_calibration_observes_the_timing_parameters():
    """The issue's survivor: ``TimingConfig.step_stages`` is checked against the RTL by tests
    outside tests/isa, which a mutant of isa/config.py must run."""
    found = ImportGraph.of(ROOT).test_files(ROOT / "isa" / "config.py")
    for test in (
        "tests/isa/test_config.py",
        "tests/simulator/test_timing.py",
        "tests/hw/test_timing_vs_rtl.py",
        "tests/runtime/test_calibration.py",
    ):
        assert found[test] == 1


def test_only_runs_the_mutants_of_the_lines_named(capsys):
    path = ROOT / "isa" / "steps.py"
    lines = Counter(mutant.where() for mutant in mutants_of(path))
    line = next(iter(lines))
    main(["--paths", "isa/steps.py", "--only", line, "--list"])
    assert capsys.readouterr().out == f"isa: {lines[line]} mutants in 1 files\n"


def test_uncommitted_changes_are_named(tmp_path):
    """A changed and an untracked file are listed (a scratch copy would carry them); a clean
    repository and a folder outside git list none."""
    import subprocess

    def git(*args: str) -> None:
        subprocess.run(["git", *args], cwd=tmp_path, check=True, capture_output=True)

    assert uncommitted(tmp_path) == []
    git("init", "-q")
    (tmp_path / "kept.py").write_text("x = 1\n")
    git("add", "kept.py")
    git("-c", "user.name=t", "-c", "user.email=t@t", "commit", "-q", "-m", "one")
    assert uncommitted(tmp_path) == []
    (tmp_path / "kept.py").write_text("x = 2\n")
    (tmp_path / "new.py").write_text("y = 1\n")
    assert sorted(uncommitted(tmp_path)) == ["kept.py", "new.py"]
