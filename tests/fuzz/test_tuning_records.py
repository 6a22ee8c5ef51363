"""Random and mutated tuning records: loading a records file and picking its best for a task
either works or is a typed error (``TuneError``: a path that is not a regular file), never
another exception or a hang; and what it returns is sound: every record's result obeys the cost
rules (a non-empty list of finite non-negative costs and no error, or a known error and no
costs), and the task's best is a point of its space, a success, and no dearer than any other
such record of the task.

Files are written line by line from real records (a CPU matmul's, whole or mutated at the field,
knob, cost or byte level), random bytes, deep nesting and truncations; a few paths are a FIFO or
a folder instead. A best that breaks the rules is a disagreement.
"""

from __future__ import annotations

import json
import math
import os
import warnings
from pathlib import Path

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from compiler.tune import (
    ERRORS,
    Record,
    RecordWarning,
    Result,
    Space,
    best_records,
    in_space,
    load_records,
)
from tests.compiler.tune.helpers import matmul_task

TASK = matmul_task(16)
SPACE = Space(TASK)
FIELDS = ("task", "target", "knobs", "costs", "error", "message", "seconds", "time", "spec")

scalars = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(-(2**70), 2**70),
    st.floats(allow_nan=True, allow_infinity=True),
    st.text(max_size=8),
    st.sampled_from([*ERRORS, "", TASK.key]),
)
json_values = st.recursive(
    scalars,
    lambda inner: st.one_of(
        st.lists(inner, max_size=3), st.dictionaries(st.text(max_size=6), inner, max_size=3)
    ),
    max_leaves=8,
)
results = st.one_of(
    st.builds(Result, costs=st.lists(st.floats(0, 1e6), min_size=1, max_size=3).map(tuple)),
    st.builds(Result, error=st.sampled_from(ERRORS), message=st.text(max_size=20)),
)


@st.composite
def good_fields(draw: st.DrawFn) -> dict:
    """A real record's fields: a point of the space and a result."""
    knobs = SPACE.config(draw(st.integers(0, len(SPACE) - 1)))
    fields = json.loads(Record.of(TASK, knobs, draw(results)).to_json())
    return {**fields, "time": 1.7e9}  # the same line for the same draws


@st.composite
def mutated_fields(draw: st.DrawFn) -> dict:
    """A real record with one field, knob or cost changed, added or removed."""
    fields = draw(good_fields())
    roll = draw(st.sampled_from(["field", "drop", "knob", "costs", "error"]))
    if roll == "field":
        fields[draw(st.sampled_from(FIELDS))] = draw(json_values)
    elif roll == "drop":
        del fields[draw(st.sampled_from(FIELDS))]
    elif roll == "knob":
        name = draw(st.sampled_from([*fields["knobs"], "extra"]))
        fields["knobs"][name] = draw(json_values)
    elif roll == "costs":
        fields["costs"] = draw(st.lists(st.one_of(scalars, json_values), max_size=3))
    else:
        fields["error"], fields["costs"] = draw(scalars), draw(st.lists(scalars, max_size=2))
    return fields


@st.composite
def mangled_bytes(draw: st.DrawFn) -> bytes:
    """A real record's line with bytes flipped, inserted or cut off."""
    data = bytearray(json.dumps(draw(good_fields())).encode())
    for _ in range(draw(st.integers(1, 3))):
        at = draw(st.integers(0, len(data) - 1))
        kind = draw(st.sampled_from(["flip", "insert", "cut"]))
        if kind == "flip":
            data[at] ^= 1 << draw(st.integers(0, 7))
        elif kind == "insert":
            data[at:at] = draw(st.binary(min_size=1, max_size=4))
        else:
            del data[at:]
            break
    return bytes(data)


lines = st.one_of(
    good_fields().map(json.dumps).map(str.encode),
    mutated_fields().map(json.dumps).map(str.encode),
    mangled_bytes(),
    st.binary(max_size=60),
    st.integers(1, 20_000).map(lambda n: b"[" * n + b"]" * n),
    st.integers(1, 20_000).map(lambda n: b'{"a":' * n),
)


def _load_best(path: Path) -> tuple[list[Record], dict[str, Record], list[str]]:
    """What loading ``path`` gives: its records, the task's best of them and the warnings."""
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        records = load_records(path)
        own = in_space((r for r in records if r.task == TASK.key), SPACE)
    warned = [str(w.message) for w in caught if issubclass(w.category, RecordWarning)]
    return records, best_records(own), warned


def _obeys_cost_rules(result: Result) -> bool:
    if result.error:
        return result.error in ERRORS and result.costs == ()
    return bool(result.costs) and all(math.isfinite(c) and c >= 0 for c in result.costs)


def _problems(path: Path, records: list[Record], best: dict[str, Record], warned: list[str]):
    """How what loading ``path`` gave breaks the module docstring's rules."""
    broken = [
        f"record {r.where} breaks the cost rules"
        for r in records
        if not _obeys_cost_rules(r.result)
    ]
    broken += [
        f"warning {w!r} names no line of the file" for w in warned if not w.startswith(f"{path}:")
    ]
    chosen = best.get(TASK.key)
    if chosen is not None:
        others = [
            r.result.cost
            for r in records
            if r.task == TASK.key and SPACE.contains(r.knobs) and r.result.ok
        ]
        if not (
            SPACE.contains(chosen.knobs)
            and chosen.result.ok
            and chosen.result.cost <= min(others, default=math.inf)
        ):
            broken.append(f"best {chosen.where} {chosen.knobs} {chosen.result}")
    return broken


def test_random_and_mutated_records_load_soundly(budget, tally, tmp_path):
    record = tally("tuning records: lines")
    regular, fifo, folder = tmp_path / "r.jsonl", tmp_path / "fifo", tmp_path / "folder"
    os.mkfifo(fifo)
    folder.mkdir()

    @settings(
        max_examples=budget.count(150, 5_000),
        deadline=None,
        database=None,
        suppress_health_check=list(HealthCheck),
    )
    @given(
        content=st.lists(lines, min_size=1, max_size=6),
        newline_at_end=st.booleans(),
        where=st.sampled_from([regular] * 18 + [fifo, folder]),
    )
    def check(content: list[bytes], newline_at_end: bool, where: Path) -> None:
        regular.write_bytes(b"\n".join(content) + b"\n" * newline_at_end)
        label = f"{where.name}: {b'|'.join(content)[:200]!r}"
        ok, loaded = record.attempt(label, _load_best, where)
        if ok:
            for problem in _problems(where, *loaded):
                record.disagree(label, problem)

    check()
    record.assert_clean()
