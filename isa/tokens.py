"""Dependency tokens: the four counters between neighbouring modules (SEMANTICS section 2).

An instruction's four flags name directions (``prev``/``next``) relative to the module that runs
it; this module turns them into the counters they touch, so the simulators, the builder and the
hardware agree on one table (vta-facts 1.5).
"""

from __future__ import annotations

from enum import Enum
from functools import cache

from isa.instructions import FinishInsn, Instruction, stage_of
from isa.opcodes import Stage

__all__ = ["Token", "illegal_flags", "popped_tokens", "pushed_tokens", "token_between"]


class Token(Enum):
    """A token counter, named as VTA names its queue; ``source`` pushes, ``dest`` pops."""

    L2G = "l2g"
    G2L = "g2l"
    G2S = "g2s"
    S2G = "s2g"

    @property
    def source(self) -> Stage:
        return _ENDS[self][0]

    @property
    def dest(self) -> Stage:
        return _ENDS[self][1]


_ENDS: dict[Token, tuple[Stage, Stage]] = {
    Token.L2G: (Stage.LOAD, Stage.COMPUTE),
    Token.G2L: (Stage.COMPUTE, Stage.LOAD),
    Token.G2S: (Stage.COMPUTE, Stage.STORE),
    Token.S2G: (Stage.STORE, Stage.COMPUTE),
}
_BETWEEN: dict[tuple[Stage, Stage], Token] = {ends: token for token, ends in _ENDS.items()}


def token_between(source: Stage, dest: Stage) -> Token | None:
    """The counter ``source`` pushes and ``dest`` pops, or None if they are not neighbours."""
    return _BETWEEN.get((Stage(source), Stage(dest)))


def _neighbour(stage: Stage, step: int) -> Stage | None:
    value = stage + step
    return Stage(value) if value in Stage._value2member_map_ else None


def _flag_tokens(insn: Instruction, pop: bool) -> tuple[tuple[str, Token | None], ...]:
    """(flag, counter) for each of ``insn``'s set pop (or push) flags; None: no neighbour."""
    if pop:
        return _flag_table(stage_of(insn), True, insn.pop_prev_dep, insn.pop_next_dep)
    return _flag_table(stage_of(insn), False, insn.push_prev_dep, insn.push_next_dep)


@cache
def _flag_table(
    stage: Stage, pop: bool, prev: bool, next_: bool
) -> tuple[tuple[str, Token | None], ...]:
    found = []
    for direction, step, set_ in (("prev", -1, prev), ("next", 1, next_)):
        if set_:
            other = _neighbour(stage, step)
            token = None
            if other is not None:
                token = token_between(other, stage) if pop else token_between(stage, other)
            found.append((f"{'pop' if pop else 'push'}_{direction}_dep", token))
    return tuple(found)


def popped_tokens(insn: Instruction) -> tuple[Token, ...]:
    """The counters ``insn`` pops before it starts (flags without a neighbour are skipped)."""
    return tuple(t for _, t in _flag_tokens(insn, pop=True) if t is not None)


def pushed_tokens(insn: Instruction) -> tuple[Token, ...]:
    """The counters ``insn`` increments after it completes."""
    return tuple(t for _, t in _flag_tokens(insn, pop=False) if t is not None)


def illegal_flags(insn: Instruction) -> tuple[str, ...]:
    """Flags ``insn`` may not carry: a pop or push toward a neighbour its module does not
    have, and any flag on FINISH (it ends the program, so nothing could answer a push)."""
    bad = [f for pop in (True, False) for f, t in _flag_tokens(insn, pop) if t is None]
    if isinstance(insn, FinishInsn):
        flags = ("pop_prev_dep", "pop_next_dep", "push_prev_dep", "push_next_dep")
        bad += [f for f in flags if getattr(insn, f) and f not in bad]
    return tuple(bad)
