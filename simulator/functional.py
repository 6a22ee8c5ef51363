"""The bit-exact functional simulator: the executable definition of ``isa/SEMANTICS.md``.

:class:`FunctionalSimulator` runs a program the way the hardware is organised (section 2):
fetch dispatches instructions in program order into three command queues of
``cmd_queue_depth`` entries and stalls while the next one's queue is full; the load, compute and
store modules each run their instructions in order, pop their tokens before and push after, and
block on an empty counter. The scheduler runs each module until it blocks; when none can move,
the program is deadlocked. Races are found exactly, whatever order the modules run in
(:mod:`simulator.races`); values are computed by :mod:`simulator.execute`.

A run returns a :class:`~simulator.events.RunResult` (events and VTA's profiler counters) and
leaves the results in the caller's DRAM array.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np

from isa import (
    AccelConfig,
    AluInsn,
    ConfigMismatchError,
    EncodingError,
    FinishInsn,
    GemmInsn,
    Instruction,
    MemId,
    MemInsn,
    Opcode,
    Program,
    ProgramError,
    Stage,
    Token,
    check_config,
    decode,
    encode,
    illegal_flags,
    popped_tokens,
    pushed_tokens,
    stage_of,
)
from simulator.arguments import (
    config_problem,
    dram_problem,
    flag_problem,
    module_order_problem,
    program_problem,
)
from simulator.errors import Blocked, DeadlockError, SimulationError, describe
from simulator.events import Counters, Event, RunResult
from simulator.exact import one_blas_thread
from simulator.execute import Executor
from simulator.races import RaceDetector
from simulator.state import DeviceState

__all__ = ["FunctionalSimulator"]

_DEFAULT_ORDER = (Stage.LOAD, Stage.COMPUTE, Stage.STORE)
_RECORDS = (MemInsn, GemmInsn, AluInsn, FinishInsn)


@dataclass
class _Module:
    """One decoupled module: its command queue, the instruction it has taken, its vector clock
    (one entry per module, in :class:`isa.Stage` order)."""

    stage: Stage
    queue: deque[int] = field(default_factory=deque)
    current: int | None = None
    clock: list[int] = field(default_factory=lambda: [0] * len(Stage))


#: Each token counter's position in :attr:`_Run.tokens`.
_TOKEN_SLOT = {token: slot for slot, token in enumerate(Token)}


class FunctionalSimulator:
    """Runs programs for ``cfg`` bit-exactly (see the module docstring).

    ``detect_races=False`` skips race detection (faster; the values are the same for a
    race-free program). ``module_order`` is the order in which the scheduler offers the modules
    a turn; results never depend on it, and the tests check that.
    """

    def __init__(
        self,
        cfg: AccelConfig,
        *,
        detect_races: bool = True,
        module_order: Sequence[Stage] = _DEFAULT_ORDER,
    ) -> None:
        problem = (
            config_problem(cfg)
            or flag_problem("detect_races", detect_races)
            or module_order_problem(module_order)
        )
        if problem:
            raise SimulationError(problem)
        self.cfg = cfg
        self.detect_races = detect_races
        self.module_order = tuple(Stage(s) for s in module_order)

    def run(self, program: Program | Sequence[Instruction | int], dram: np.ndarray) -> RunResult:
        """Execute ``program`` against ``dram`` (a 1-D uint8 array, changed in place).

        A :class:`~isa.Program` first has its micro-op table and segments written into
        ``dram``; a sequence of instruction records (or 128-bit words) runs with DRAM as it is.
        Raises SimulationError (DeadlockError, RaceError) naming the instruction.
        """
        problem = program_problem(program) or dram_problem(dram)
        if problem:
            raise SimulationError(problem)
        if isinstance(program, Program):
            try:
                check_config(program.config, self.cfg)
                program.write_to(dram)
            except (ConfigMismatchError, ProgramError) as err:
                raise SimulationError(str(err)) from None
            except EncodingError as err:
                # A micro-op of the table does not fit its field; the detail names its index.
                raise SimulationError(f"micro-op table: {err.detail}") from None
            instructions = program.instructions
        else:
            instructions = tuple(self._record(i, insn) for i, insn in enumerate(program))
        self._validate(instructions)
        with one_blas_thread():
            return _Run(self, instructions, dram).execute()

    def _record(self, index: int, insn: Instruction | int) -> Instruction:
        if isinstance(insn, int) and not isinstance(insn, bool):
            try:
                return decode(insn, self.cfg)
            except EncodingError as err:
                raise SimulationError(err.detail, index=index) from None
        if not isinstance(insn, _RECORDS):
            raise SimulationError(
                f"a {type(insn).__name__} is neither an instruction record nor a 128-bit word",
                index=index,
            )
        return insn

    def _validate(self, instructions: Sequence[Instruction]) -> None:
        """The rules an instruction breaks whatever state it meets (fields, flags, memory
        types, FINISH placement), checked before anything runs (each distinct instruction
        once: a repeat breaks no rule its first occurrence passed)."""
        if not instructions:
            raise SimulationError("the program is empty: it needs a FINISH")
        passed: set[Instruction] = set()
        for index, insn in enumerate(instructions):
            if insn not in passed:
                self._check(index, insn)
                passed.add(insn)
            if isinstance(insn, FinishInsn) and index != len(instructions) - 1:
                raise SimulationError(
                    "FINISH must be the last instruction and appear once", index=index, insn=insn
                )
        last = len(instructions) - 1
        if not isinstance(instructions[last], FinishInsn):
            raise SimulationError(
                "the program does not end with FINISH", index=last, insn=instructions[last]
            )

    def _check(self, index: int, insn: Instruction) -> None:
        """The rules of :meth:`_validate` that concern ``insn`` alone."""
        try:
            encode(insn, self.cfg)
        except EncodingError as err:
            raise SimulationError(err.detail, index=index, insn=insn) from None
        bad = illegal_flags(insn)
        if bad:
            why = " (FINISH carries no flags)" if isinstance(insn, FinishInsn) else ""
            raise SimulationError(
                f"{', '.join(bad)} not allowed on a {stage_of(insn).name.lower()} instruction{why}",
                index=index,
                insn=insn,
            )
        if isinstance(insn, MemInsn) and insn.x_size:
            problem = _memory_problem(insn)
            if problem:
                raise SimulationError(problem, index=index, insn=insn)


def _memory_problem(insn: MemInsn) -> str | None:
    if insn.opcode is Opcode.LOAD and insn.memory_type is MemId.OUT:
        return "LOAD cannot target OUT (OUT is written by compute and read by STORE)"
    if insn.opcode is Opcode.STORE:
        if insn.memory_type is not MemId.OUT:
            return f"STORE reads OUT only, not {insn.memory_type.name}"
        if insn.y_pad_0 or insn.y_pad_1 or insn.x_pad_0 or insn.x_pad_1:
            return "STORE does not pad: all four pads must be 0"
    return None


class _Run:
    """The state of one run: modules, token counters and the fetch position."""

    def __init__(
        self, sim: FunctionalSimulator, instructions: Sequence[Instruction], dram: np.ndarray
    ) -> None:
        self.cfg = sim.cfg
        self.order = sim.module_order
        self.instructions = instructions
        self.modules = {stage: _Module(stage) for stage in Stage}
        #: per counter (by its position in Token), the clocks its pending pushes carried
        self.tokens: list[deque[list[int]]] = [deque() for _ in Token]
        self.fetched = 0
        self.events: list[Event] = []
        self.finished = False
        # Per instruction, decoded once: its module and the counters it pops and pushes (as
        # Tokens for its event, as positions for the scheduler).
        self.stages = [stage_of(insn) for insn in instructions]
        self.pops = [popped_tokens(insn) for insn in instructions]
        self.pushes = [pushed_tokens(insn) for insn in instructions]
        self.pop_slots = [tuple(_TOKEN_SLOT[t] for t in pops) for pops in self.pops]
        self.push_slots = [tuple(_TOKEN_SLOT[t] for t in pushes) for pushes in self.pushes]
        self.by_stage: dict[Stage, list[int]] = {stage: [] for stage in Stage}
        for index, stage in enumerate(self.stages):
            self.by_stage[stage].append(index)
        races = RaceDetector(self.cfg, instructions, len(dram)) if sim.detect_races else None
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
