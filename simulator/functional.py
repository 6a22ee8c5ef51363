"""The bit-exact functional simulator: the executable definition of ``isa/SEMANTICS.md``.

:class:`FunctionalSimulator` runs a program the way the hardware is organised (section 2):
fetch dispatches instructions in program order into three command queues of
``cmd_queue_depth`` entries and stalls while the next one's queue is full; the load, compute and
store modules each run their instructions in order, pop their tokens before and push after, and
block on an empty counter. The scheduler (:mod:`simulator.scheduler`) runs each module until it
blocks; when none can move, the program is deadlocked. Races are found exactly, whatever order
the modules run in (:mod:`simulator.races`); values are computed by :mod:`simulator.execute`.
This module checks the arguments and the program before anything runs (a program's
instructions once per configuration: a :class:`~isa.Program` run again is not checked again).

A run returns a :class:`~simulator.events.RunResult` (events and VTA's profiler counters) and
leaves the results in the caller's DRAM array.
"""

from __future__ import annotations

from collections.abc import Sequence

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
    check_config,
    decode,
    encode,
    illegal_flags,
    stage_of,
)
from simulator.arguments import (
    config_problem,
    dram_problem,
    flag_problem,
    module_order_problem,
    program_problem,
)
from simulator.errors import SimulationError
from simulator.events import RunResult
from simulator.exact import one_blas_thread
from simulator.memo import Memo
from simulator.scheduler import Routing, Scheduler

__all__ = ["FunctionalSimulator"]

_DEFAULT_ORDER = (Stage.LOAD, Stage.COMPUTE, Stage.STORE)
_RECORDS = (MemInsn, GemmInsn, AluInsn, FinishInsn)
#: Programs' instruction tuples validated for a configuration, with their routing, by the
#: configuration and the tuple's identity (each entry holds its tuple)
_CHECKED: Memo[tuple[tuple[Instruction, ...], Routing]] = Memo(16 << 20)
_ROUTING_BYTES = 512  # about what a routing holds per instruction


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
            routing = self._checked(program.instructions)
            instructions = program.instructions
        else:
            instructions = tuple(self._record(i, insn) for i, insn in enumerate(program))
            self._validate(instructions)
            routing = Routing(instructions)
        with one_blas_thread():
            return Scheduler(
                self.cfg, self.module_order, instructions, routing, dram, self.detect_races
            ).execute()

    def _checked(self, instructions: tuple[Instruction, ...]) -> Routing:
        """A program's instructions validated and routed, once per tuple of them (a
        :class:`~isa.Program` run again brings the same tuple: both depend on nothing else)."""
        key = (self.cfg, id(instructions))
        checked = _CHECKED.get(key)
        if checked is None or checked[0] is not instructions:
            self._validate(instructions)
            checked = (instructions, Routing(instructions))
            # the entry holds the tuple, so its id names no other tuple while it is kept
            _CHECKED.put(key, checked, _ROUTING_BYTES * len(instructions))
        return checked[1]

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
