"""The functional simulator's scheduler: one run of a validated program, the way the hardware is
organised (SEMANTICS section 2). Fetch dispatches instructions in program order into three
command queues and stalls while the next one's queue is full; the load, compute and store
modules each run their instructions in order, pop their tokens before and push after, and
block on an empty counter. Each module runs until it blocks; when none can move, the program
is deadlocked. setup.py compiles it with mypyc.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np

from isa import (
    AccelConfig,
    FinishInsn,
    Instruction,
    Stage,
    Token,
    popped_tokens,
    pushed_tokens,
    stage_of,
)
from simulator.errors import Blocked, DeadlockError, SimulationError, describe
from simulator.events import Counters, Event, RunResult
from simulator.execute import Executor
from simulator.races import RaceDetector
from simulator.state import DeviceState

__all__ = ["Routing", "Scheduler"]


@dataclass
class _Module:
    """One decoupled module: its command queue, the instruction it has taken, its vector clock
    (one entry per module, in :class:`isa.Stage` order)."""

    stage: Stage
    queue: deque[int] = field(default_factory=deque)
    current: int | None = None
    clock: list[int] = field(default_factory=lambda: [0] * len(Stage))


#: Each token counter's position in :attr:`Scheduler.tokens`.
_TOKEN_SLOT = {token: slot for slot, token in enumerate(Token)}


class Routing:
    """Per instruction of a program: its module and the counters it pops and pushes (as
    Tokens for its event, as positions for the scheduler); and each module's instructions.
    It depends on the instructions only, so a program run again reuses it."""

    def __init__(self, instructions: Sequence[Instruction]) -> None:
        self.stages = [stage_of(insn) for insn in instructions]
        self.pops = [popped_tokens(insn) for insn in instructions]
        self.pushes = [pushed_tokens(insn) for insn in instructions]
        self.pop_slots = [tuple(_TOKEN_SLOT[t] for t in pops) for pops in self.pops]
        self.push_slots = [tuple(_TOKEN_SLOT[t] for t in pushes) for pushes in self.pushes]
        self.by_stage: dict[Stage, list[int]] = {stage: [] for stage in Stage}
        for index, stage in enumerate(self.stages):
            self.by_stage[stage].append(index)


class Scheduler:
    """The state of one run: modules, token counters and the fetch position."""

    def __init__(
        self,
        cfg: AccelConfig,
        order: Sequence[Stage],
        instructions: Sequence[Instruction],
        routing: Routing,
        dram: np.ndarray,
        detect_races: bool,
    ) -> None:
        self.cfg = cfg
        self.order = order
        self.instructions = instructions
        self.modules = {stage: _Module(stage) for stage in Stage}
        #: per counter (by its position in Token), the clocks its pending pushes carried
        self.tokens: list[deque[list[int]]] = [deque() for _ in Token]
        self.fetched = 0
        self.events: list[Event] = []
        self.finished = False
        self.stages = routing.stages
        self.pops, self.pushes = routing.pops, routing.pushes
        self.pop_slots, self.push_slots = routing.pop_slots, routing.push_slots
        self.by_stage = routing.by_stage
        races = RaceDetector(cfg, instructions, self.stages, len(dram)) if detect_races else None
        self.executor = Executor(self.cfg, DeviceState.zeros(self.cfg), dram, instructions, races)
        self.token_limit = (1 << self.cfg.token_counter_bits) - 1

    def execute(self) -> RunResult:
        while not self.finished:
            progress = self._fetch()
            for stage in self.order:
                progress |= self._advance(self.modules[stage])
                if self.finished:
                    break
            if not progress and not self.finished:
                raise self._deadlock()
        return RunResult(tuple(self.events), Counters.from_events(self.events))

    def _fetch(self) -> bool:
        """Dispatch in program order until the next instruction's queue is full."""
        start = self.fetched
        while self.fetched < len(self.instructions):
            module = self.modules[self.stages[self.fetched]]
            if len(module.queue) >= self.cfg.cmd_queue_depth:
                break
            module.queue.append(self.fetched)
            self.fetched += 1
        return self.fetched > start

    def _advance(self, module: _Module) -> bool:
        """Run ``module`` until it blocks on a pop or has nothing to do."""
        progress = False
        while not self.finished:
            if module.current is None:
                if not module.queue:
                    break
                module.current = module.queue.popleft()
                progress = True
                self._fetch()
            index = module.current
            insn = self.instructions[index]
            tokens = self.tokens
            pops = self.pop_slots[index]
            if not all(tokens[slot] for slot in pops):
                break
            pushes = self.push_slots[index]
            for slot in pushes:
                if len(tokens[slot]) >= self.token_limit:
                    raise SimulationError(
                        f"pushing {list(Token)[slot].value} would take it above "
                        f"{self.token_limit} (token_counter_bits)",
                        index=index,
                        insn=insn,
                    )
            clock = module.clock
            for slot in pops:
                clock[:] = map(max, clock, tokens[slot].popleft())
            clock[module.stage - 1] += 1
            if isinstance(insn, FinishInsn):
                self._check_finish(index, clock)
            event = self.executor.run(
                index, module.stage, clock, self.pops[index], self.pushes[index]
            )
            self.events.append(event)
            for slot in pushes:
                tokens[slot].append(clock.copy())
            module.current = None
            progress = True
            self.finished = isinstance(insn, FinishInsn)
        return progress

    def _check_finish(self, index: int, clock: list[int]) -> None:
        """SEMANTICS section 7: every load and store happens before FINISH, counters are 0."""
        insn = self.instructions[index]
        for stage in (Stage.LOAD, Stage.STORE):
            ordered = int(clock[stage - 1])
            pending = self.by_stage[stage][ordered:]
            if pending:
                raise SimulationError(
                    f"{describe(pending[0], self.instructions[pending[0]])} on "
                    f"{stage.name.lower()} does not happen before FINISH: no chain of tokens "
                    f"orders it before FINISH, so the host could read DRAM before it completes",
                    index=index,
                    insn=insn,
                )
        left = {t.value: len(q) for t, q in zip(Token, self.tokens, strict=True) if q}
        if left:
            listing = " ".join(f"{name}={count}" for name, count in left.items())
            raise SimulationError(
                f"token counters must be zero at FINISH, but {listing} (a push never popped)",
                index=index,
                insn=insn,
            )

    def _deadlock(self) -> DeadlockError:
        blocked = []
        for stage in Stage:
            module = self.modules[stage]
            if module.current is not None:
                insn = self.instructions[module.current]
                pops = self.pops[module.current]
                empty = [t.value for t in pops if not self.tokens[_TOKEN_SLOT[t]]]
                blocked.append(
                    Blocked(
                        stage.name.lower(),
                        module.current,
                        insn,
                        f"waiting to pop {' and '.join(empty)} (0 tokens)",
                    )
                )
        if self.fetched < len(self.instructions):
            insn = self.instructions[self.fetched]
            queue = self.stages[self.fetched].name.lower()
            blocked.append(
                Blocked(
                    "fetch",
                    self.fetched,
                    insn,
                    f"the {queue} command queue is full ({self.cfg.cmd_queue_depth} instructions)",
                )
            )
        counts = {t.value: len(q) for t, q in zip(Token, self.tokens, strict=True)}
        return DeadlockError(blocked, counts)
