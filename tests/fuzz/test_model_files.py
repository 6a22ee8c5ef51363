"""Edited ``.vtaf`` files: hypothesis mutates a small compiled model's manifest and members
(field deletions, type swaps, numeric extremes, slot and step swaps, truncated or swapped
members) and every file must load and give the unmodified model's answer on ``fsim``, or be
refused with a typed error. Files are loaded and run in a worker process (this module run as a
script), so a crash is a failure here, not a dead test runner.

``resign``: half the edits get every digest recomputed, as an adversary can, so that the checks
behind the digests are reached; such a file may give another answer (a scale edited), but it
must still not crash, hang or raise an untyped error. A file holds no machine code: a library
planted in a step (random bytes or an ELF header, re-signed or not) is always refused.
"""

from __future__ import annotations

import select
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from isa import VtaforgeError
from tests.fuzz.tally import Hang
from tests.runtime.vtaf_files import Parts, tiny_model

#: JSON values put where a field was (type swaps and numeric extremes).
HOSTILE = (None, True, -1, 0, 1, 2**31, 2**63, 2**64, 10**30, 1.5, -1e308, "", "x", [], {}, [[]])
#: Seconds a worker may take over one file.
LIMIT_S = 15.0


class Refused(VtaforgeError):
    """The worker's load or run ended in a typed error."""


class Crash(Exception):
    """The worker died on a file (a signal or an exit)."""


class Untyped(Exception):
    """The worker's load or run raised an untyped exception."""


class Worker:
    """A process that loads and runs the files it is sent, one verdict line each."""

    def __init__(self, folder: Path) -> None:
        self.folder = folder
        self.process: subprocess.Popen[str] | None = None

    def judge(self, data: bytes) -> bool:
        """True for the model's answer, False for another; Refused, Untyped, Crash or Hang."""
        path = self.folder / "edited.vtaf"
        path.write_bytes(data)
        process = self._start()
        assert process.stdin is not None and process.stdout is not None
        process.stdin.write(f"{path}\n")
        process.stdin.flush()
        ready, _, _ = select.select([process.stdout], [], [], LIMIT_S)
        if not ready:
            self.stop()
            raise Hang(f"no verdict after {LIMIT_S} s")
        verdict = process.stdout.readline().rstrip("\n")
        if not verdict:
            status = process.wait()
            self.process = None
            raise Crash(f"the worker died (status {status})")
        kind, _, detail = verdict.partition(" ")
        if kind == "typed":
            raise Refused(detail)
        if kind == "untyped":
            raise Untyped(detail)
        return kind == "same"

    def _start(self) -> subprocess.Popen[str]:
        if self.process is None:
            self.process = subprocess.Popen(
                [sys.executable, "-m", "tests.fuzz.test_model_files", str(self.folder)],
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                stderr=subprocess.DEVNULL,
                text=True,
            )
        return self.process

    def stop(self) -> None:
        if self.process is not None:
            self.process.kill()
            self.process.wait()
            for pipe in (self.process.stdin, self.process.stdout, self.process.stderr):
                if pipe is not None:
                    pipe.close()
            self.process = None


@pytest.fixture(scope="module")
def worker():
    model = tiny_model()
    with tempfile.TemporaryDirectory() as scratch:
        folder = Path(scratch)
        np.save(folder / "x.npy", model.x)
        np.save(folder / "expected.npy", model.expected)
        running = Worker(folder)
        yield running
        running.stop()


# ---------------------------------------------------------------------- mutations
def _paths(value: Any, prefix: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
    """Every path to a value inside ``value`` (object keys and list indices)."""
    items = value.items() if isinstance(value, dict) else enumerate(value)
    found = []
    for key, item in items:
        found.append((*prefix, key))
        if isinstance(item, dict | list) and item:
            found.extend(_paths(item, (*prefix, key)))
    return found


def _at(manifest: dict[str, Any], path: tuple[Any, ...]) -> Any:
    for key in path:
        manifest = manifest[key]
    return manifest


def manifest_fields(draw: st.DrawFn, parts: Parts) -> str:
    path = draw(st.sampled_from(_paths(parts.manifest)))
    parent = _at(parts.manifest, path[:-1])
    action = draw(st.sampled_from(["delete", "hostile", "wrap"]))
    if action == "delete":
        del parent[path[-1]]
    elif action == "hostile":
        parent[path[-1]] = draw(st.sampled_from(HOSTILE))
    else:
        parent[path[-1]] = [parent[path[-1]]]
    return f"{action} {'/'.join(map(str, path))}"


def steps(draw: st.DrawFn, parts: Parts) -> str:
    entries = parts.manifest["steps"]
    i, j = draw(st.lists(st.integers(0, len(entries) - 1), min_size=2, max_size=2, unique=True))
    action = draw(st.sampled_from(["swap steps", "swap field", "duplicate", "drop", "slots"]))
    if action == "swap steps":
        entries[i], entries[j] = entries[j], entries[i]
    elif action == "swap field":
        key = draw(st.sampled_from(["inputs", "outputs", "attrs", "op", "device", "program"]))
        first, second = entries[i].get(key), entries[j].get(key)
        for entry, value in ((entries[i], second), (entries[j], first)):
            entry.pop(key, None)
            if value is not None:
                entry[key] = value
        return f"{action} {key} of steps {i}, {j}"
    elif action == "duplicate":
        entries.insert(j, dict(entries[i]))
    elif action == "drop":
        del entries[i]
    else:
        tensors = parts.manifest["tensors"]
        a, b = draw(st.lists(st.integers(0, len(tensors) - 1), min_size=2, max_size=2, unique=True))
        key = draw(st.sampled_from(["shape", "dtype", "address", "name", "layout"]))
        tensors[a][key], tensors[b][key] = tensors[b][key], tensors[a][key]
        return f"swap {key} of tensors {a}, {b}"
    return f"{action} {i}, {j}"


def _edit_member(draw: st.DrawFn, parts: Parts, names: list[str]) -> str:
    name = draw(st.sampled_from(names))
    data = parts.members[name]
    action = draw(st.sampled_from(["truncate", "empty", "flip", "swap", "drop", "append"]))
    if action == "truncate":
        parts.members[name] = data[: draw(st.integers(0, max(0, len(data) - 1)))]
    elif action == "empty":
        parts.members[name] = b""
    elif action == "flip":
        at = draw(st.integers(0, len(data) - 1))
        parts.members[name] = (
            data[:at] + bytes([data[at] ^ 1 << draw(st.integers(0, 7))]) + data[at + 1 :]
        )
    elif action == "swap":
        other = draw(st.sampled_from(names))
        parts.members[name], parts.members[other] = parts.members[other], data
        return f"swap {name}, {other}"
    elif action == "drop":
        del parts.members[name]
    else:
        parts.members[name] = data + bytes(draw(st.integers(1, 64)))
    return f"{action} {name}"


def members(draw: st.DrawFn, parts: Parts) -> str:
    return _edit_member(draw, parts, sorted(parts.members))


def planted_libraries(draw: st.DrawFn, parts: Parts) -> str:
    """A shared library planted in a step: never loaded, always refused."""
    steps = parts.manifest["steps"]
    index = draw(st.integers(0, len(steps) - 1))
    name = f"kernels/{index:03d}.so"
    steps[index]["library"] = name
    parts.members[name] = b"\x7fELF" + draw(st.binary(max_size=64))
    return f"plant a library in step {index}"


def programs(draw: st.DrawFn, parts: Parts) -> str:
    return _edit_member(draw, parts, sorted(n for n in parts.members if n.startswith("programs/")))


def reordered(draw: st.DrawFn, parts: Parts) -> str:
    """A valid edit: the manifest's keys in another order (the answer must not change)."""
    for record in [parts.manifest, *parts.manifest["steps"], *parts.manifest["tensors"]]:
        keys = draw(st.permutations(list(record)))
        items = [(k, record.pop(k)) for k in keys]
        record.update(items)
    return "reorder keys"


#: Each surface's mutation, and whether re-signing may apply.
SURFACES = {
    "manifest fields": (manifest_fields, True),
    "members": (members, False),
    "steps": (steps, True),
    "planted libraries": (planted_libraries, True),
    "programs": (programs, True),
    "valid edits (reordered keys)": (reordered, False),
}


@pytest.mark.parametrize("surface", SURFACES)
def test_an_edited_model_file_is_refused_typed_or_gives_the_same_answer(
    surface, worker, budget, tally
):
    mutate, resignable = SURFACES[surface]
    counts = tally(f"model file: {surface}")
    pristine = tiny_model().parts()
    resigned = {"count": 0}

    @settings(
        max_examples=budget.count(12, 300),
        deadline=None,
        derandomize=not budget.long,
        suppress_health_check=list(HealthCheck),
        database=None,
    )
    @given(st.data(), st.booleans())
    def attempt(data: st.DataObject, resign: bool) -> None:
        parts = pristine.copy()
        resign = resign and resignable
        label = mutate(data.draw, parts) + (" (re-signed)" if resign else "")
        resigned["count"] += resign
        ok, same = counts.attempt(label, worker.judge, parts.to_bytes(resign=resign))
        if ok and not same and not resign:
            counts.disagree(label, "ran to another answer without an error")
        if ok and surface == "planted libraries":
            counts.disagree(label, "a file with machine code loaded")

    attempt()
    counts.assert_clean()
    if surface.startswith("valid"):
        assert counts.accepted == counts.tried


# ---------------------------------------------------------------------- the worker
def _serve(folder: Path) -> None:
    """Load and run each file named on stdin; print ``same``, ``other``, ``typed MESSAGE`` or
    ``untyped TYPE: MESSAGE`` for each."""
    from runtime.model import load_model

    x, expected = np.load(folder / "x.npy"), np.load(folder / "expected.npy")
    for line in sys.stdin:
        try:
            output = load_model(line.strip()).run(x, device="fsim").output
            verdict = "same" if np.array_equal(output, expected, equal_nan=True) else "other"
        except VtaforgeError as err:
            verdict = f"typed {err}"
        except Exception as err:  # the finding: anything untyped
            verdict = f"untyped {type(err).__name__}: {err}"
        print(verdict.replace("\n", " "), flush=True)


if __name__ == "__main__":
    _serve(Path(sys.argv[1]))
