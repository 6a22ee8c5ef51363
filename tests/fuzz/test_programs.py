"""Mutated programs through both simulators: random valid programs
(:func:`tests.conformance.random_programs.random_program`) with instruction words bit-flipped,
replaced, dropped, repeated or swapped, and micro-op and data bytes corrupted in DRAM, run as
words on the functional and the cycle-level simulator (each on its own copy of DRAM).

Each run must finish or raise a SimulationError; the two simulators must agree on which (the
same error type and message), and, when both finish, leave identical DRAM. The functional
simulator under another module order must agree too (results never depend on the scheduler),
and on some finished programs the stepped scheduler must give the event-driven one's cycles.
"""

from __future__ import annotations

import random

import numpy as np

from isa import INSN_WIDTH, AccelConfig, Stage, encode
from simulator import CycleSimulator, FunctionalSimulator
from tests.conformance.random_programs import random_program

#: Random base programs per preset (default: short, long); the default core's steps cost more.
PRESETS = {"tiny": (10, 200), "default": (2, 10)}
_REVERSED = (Stage.STORE, Stage.COMPUTE, Stage.LOAD)
#: One finished mutant in this many is timed again with the (slow) stepped scheduler.
_STEPPED_EVERY = 5


def _mutate_words(rng: random.Random, words: list[int]) -> list[int]:
    words = list(words)
    for _ in range(rng.randint(1, 3)):
        at = rng.randrange(len(words))
        roll = rng.random()
        if roll < 0.5:
            for _ in range(rng.randint(1, 4)):
                words[at] ^= 1 << rng.randrange(INSN_WIDTH)
        elif roll < 0.6:
            words[at] = rng.getrandbits(INSN_WIDTH)
        elif roll < 0.75:
            del words[at]
        elif roll < 0.85:
            words.insert(at, words[at])
        else:
            other = rng.randrange(len(words))
            words[at], words[other] = words[other], words[at]
        if not words:
            words = [rng.getrandbits(INSN_WIDTH)]
    return words


def _corrupt(rng: random.Random, dram: np.ndarray) -> None:
    """Flip a few random bytes of the micro-op table and data (sometimes none)."""
    for _ in range(rng.choice([0, 0, 1, 4])):
        dram[rng.randrange(len(dram))] ^= 1 << rng.randrange(8)


def _outcome(ok: bool, value: object) -> str:
    return "finished" if ok else f"{type(value).__name__}: {value}"


def test_mutated_programs_through_both_simulators(budget, tally):
    functional_runs = tally("programs: functional simulator")
    cycle_runs = tally("programs: cycle-level simulator")
    reordered_runs = tally("programs: functional, other order")
    stepped_runs = tally("programs: stepped == event-driven")
    mutants_per_base = budget.count(10, 50)
    for preset, bases in PRESETS.items():
        cfg = AccelConfig.preset(preset)
        simulators = (
            (functional_runs, FunctionalSimulator(cfg)),
            (cycle_runs, CycleSimulator(cfg)),
            (reordered_runs, FunctionalSimulator(cfg, module_order=_REVERSED)),
        )
        stepped = CycleSimulator(cfg, stepped=True)
        for seed in range(budget.count(*bases)):
            program = random_program(cfg, seed)
            words = [encode(insn, cfg) for insn in program.instructions]
            image = np.zeros(program.dram_extent + 256, np.uint8)
            program.write_to(image)
            rng = random.Random(f"{preset} {seed}")
            for number in range(mutants_per_base):
                label = f"{preset} seed {seed} mutant {number}"
                mutant = _mutate_words(rng, words)
                start = image.copy()
                _corrupt(rng, start)
                drams = [start.copy() for _ in simulators]
                ran = [
                    runs.attempt(label, sim.run, mutant, dram)
                    for (runs, sim), dram in zip(simulators, drams, strict=True)
                ]
                outcomes = [_outcome(*r) for r in ran]
                if outcomes[0] != outcomes[1]:
                    cycle_runs.disagree(label, f"functional {outcomes[0]!r}, {outcomes[1]!r}")
                elif ran[0][0] and not np.array_equal(drams[0], drams[1]):
                    cycle_runs.disagree(label, "DRAM differs between the simulators")
                if ran[0][0] != ran[2][0]:
                    reordered_runs.disagree(label, f"{outcomes[0]!r} vs {outcomes[2]!r}")
                elif ran[0][0] and not np.array_equal(drams[0], drams[2]):
                    reordered_runs.disagree(label, "DRAM depends on the module order")
                if ran[1][0] and cycle_runs.accepted % _STEPPED_EVERY == 0:
                    ok, slow = stepped_runs.attempt(label, stepped.run, mutant, start.copy())
                    if ok and slow.cycles != ran[1][1].cycles:
                        stepped_runs.disagree(label, f"stepped {slow.cycles} != {ran[1][1].cycles}")
    for runs in (functional_runs, cycle_runs, reordered_runs, stepped_runs):
        runs.assert_clean()
    assert stepped_runs.accepted, "no mutant finished: the mutations leave nothing to compare"
