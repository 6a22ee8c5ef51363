"""The fuzz suite's settings: ``--fuzz-long`` (the closing note's counts, minutes) instead of the
bounded default that ``make test`` runs, and the closing table of every fuzz tally.

Each fuzz test asks its ``budget`` for how many inputs to try (``budget.count(short, long)``),
records them in a :class:`~tests.fuzz.tally.Tally` from ``tally(category)``, prints its row
(``-s`` shows them) and asserts it clean; at the end of a run without xdist workers the whole
table is printed in pytest's summary.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass

import pytest

from tests.fuzz.tally import HEADER, Tally

_TALLIES: list[Tally] = []


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption(
        "--fuzz-long",
        action="store_true",
        default=False,
        help="fuzz with the closing note's counts (minutes) instead of the bounded default",
    )


@dataclass(frozen=True)
class Budget:
    """How many inputs a fuzz test tries: ``short`` by default, ``long`` with --fuzz-long."""

    long: bool

    def count(self, short: int, long: int) -> int:
        return long if self.long else short


@pytest.fixture
def budget(request: pytest.FixtureRequest) -> Budget:
    return Budget(request.config.getoption("--fuzz-long"))


@pytest.fixture
def tally() -> Iterator[Callable[[str], Tally]]:
    """``tally(category)``: a new tally, printed when the test ends and kept for the table."""
    made: list[Tally] = []

    def make(category: str) -> Tally:
        made.append(Tally(category))
        return made[-1]

    yield make
    for item in made:
        print(item.row())
    _TALLIES.extend(made)


def pytest_terminal_summary(terminalreporter, exitstatus, config) -> None:
    if _TALLIES:
        terminalreporter.section("fuzz")
        terminalreporter.write_line(HEADER)
        for item in _TALLIES:
            terminalreporter.write_line(item.row())
