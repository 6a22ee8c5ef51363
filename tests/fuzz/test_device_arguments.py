"""Bad device arguments: random choices of kind, configuration, options, programs, DRAM and
batches for ``runtime.open_device`` and a device's ``run``/``run_many``. Every call either works,
leaving the functional simulator's bytes in DRAM, or raises a typed error (DeviceError for the
arguments, SimulationError for a program the simulator refuses).

The ``rtl`` kind is always given at least one bad option, so that it is refused before it
builds anything (a Verilator build takes a minute)."""

from __future__ import annotations

import random
from typing import Any

import numpy as np

from isa import AccelConfig, FinishInsn, Program, TimingConfig
from runtime import open_device
from simulator import FunctionalSimulator
from tests.conformance.random_programs import random_program

TINY = AccelConfig.preset("tiny")
KINDS = ("fsim", "sim", "rtl", "gpu", "", None, 3, "SIM")
CONFIGS = (TINY, TINY, AccelConfig.preset("default"), None, "tiny", 3)
#: Good and bad values of every option a device kind documents (and one no kind has).
OPTIONS: dict[str, tuple[tuple[Any, ...], tuple[Any, ...]]] = {
    "timing": ((None, TimingConfig(read_latency=3)), ("x", 5, {}, TimingConfig)),
    "detect_races": ((True, False), ("no", 1, None, 0.0)),
    "ready_probability": ((1.0, 0.5), (0, -1, 1.5, "x", float("nan"), None, True)),
    "max_cycles": ((1000,), (0, -5, 2.5, "many", None)),
    "seed": ((0, 7), ("s", 1.5, None)),
    "cache_dir": ((None,), (3, b"dir", [])),
    "speed": ((), (1, "fast")),
}
_RTL_OPTIONS = ("ready_probability", "max_cycles", "seed", "cache_dir")
#: The options each simulator kind takes (for the draws that open a device properly).
_KIND_OPTIONS = {"fsim": ("detect_races",), "sim": ("timing", "detect_races")}


def _dram(rng: random.Random, size: int) -> Any:
    read_only = np.zeros(size, np.uint8)
    read_only.flags.writeable = False
    return rng.choice(
        [
            np.zeros(size, np.uint8),
            np.zeros(size, np.uint8),
            np.zeros(size, np.uint8),
            np.zeros(max(size // 4, 1), np.uint8),
            np.zeros(size, np.int8),
            np.zeros((2, size), np.uint8),
            np.ma.zeros(size, np.uint8),
            read_only,
            np.zeros(2 * size, np.uint8)[::2],
            [0] * size,
            None,
            bytearray(size),
        ]
    )


def _program(rng: random.Random, programs: list[Program]) -> Any:
    return rng.choice(
        [*programs, *programs, None, [FinishInsn()], programs[0].to_bytes(), "p", 3, Program]
    )


def _opening(rng: random.Random) -> tuple[Any, Any, dict[str, Any]]:
    """A kind, configuration and options: half the time all good, else anything."""
    if rng.random() < 0.5:
        kind = rng.choice(list(_KIND_OPTIONS))
        names = [n for n in _KIND_OPTIONS[kind] if rng.random() < 0.5]
        return kind, TINY, {n: rng.choice(OPTIONS[n][0]) for n in names}
    kind = rng.choice(KINDS)
    return kind, rng.choice(CONFIGS), _options(rng, kind)


def _options(rng: random.Random, kind: Any) -> dict[str, Any]:
    options = {}
    for name, (good, bad) in OPTIONS.items():
        if rng.random() < 0.3:
            options[name] = rng.choice(bad) if not good or rng.random() < 0.5 else rng.choice(good)
    if kind == "rtl":  # never a valid set: a valid one would build the RTL model
        name = rng.choice(_RTL_OPTIONS)
        options[name] = rng.choice(OPTIONS[name][1])
    return options


def _jobs(rng: random.Random, programs: list[Program], size: int) -> Any:
    roll = rng.random()
    if roll < 0.1:
        return rng.choice([None, 3, programs[0], "jobs", iter([])])
    jobs: list[Any] = []
    for _ in range(rng.randint(0, 3)):
        job = (_program(rng, programs), _dram(rng, size))
        jobs.append(rng.choice([job, job, job, job[:1], job[0], [*job], (*job, None)]))
    return tuple(jobs) if roll < 0.2 else jobs


def _expected(program: Program) -> np.ndarray:
    dram = np.zeros(program.dram_extent, np.uint8)
    FunctionalSimulator(TINY).run(program, dram)
    return dram


def test_random_device_arguments(budget, tally):
    opened = tally("devices: open_device")
    runs = tally("devices: run / run_many")
    rng = random.Random(6)
    programs = [random_program(TINY, seed) for seed in range(3)]
    size = max(p.dram_extent for p in programs)
    expected = {id(p): _expected(p) for p in programs}
    for number in range(budget.count(300, 6_000)):
        kind, cfg, options = _opening(rng)
        ok, device = opened.attempt(f"open {number}", open_device, kind, cfg, **options)
        if not ok:
            continue
        if rng.random() < 0.5:
            program, dram = _program(rng, programs), _dram(rng, size)
            done, _ = runs.attempt(f"run {number}", device.run, program, dram)
            finished = [(program, dram)] if done else []
        else:
            jobs = _jobs(rng, programs, size)
            done, _ = runs.attempt(f"run_many {number}", device.run_many, jobs)
            finished = list(jobs) if done else []
        for program, dram in finished:
            want = expected[id(program)]
            if not np.array_equal(dram[: len(want)], want):
                runs.disagree(f"run {number}", "DRAM differs from the functional simulator's")
    opened.assert_clean()
    runs.assert_clean()
    assert runs.accepted and runs.typed
