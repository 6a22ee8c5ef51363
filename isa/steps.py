"""The steps of a GEMM or ALU instruction and the accumulator read-after-write window.

SEMANTICS sections 5 and 6: the instruction runs its micro-ops ``uop_bgn..uop_end`` inside a
two-level loop; each (iteration, micro-op) pair is a *step* whose row indices are the micro-op's
field plus ``i0 * factor_out + i1 * factor_in``. A step may not read an accumulator row that one
of the ``acc_raw_window`` steps before it writes. The simulators and the builder share these
definitions, so "a kernel the builder accepts" and "an instruction the hardware runs" are the same
set of programs.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import Enum

import numpy as np

from isa.instructions import AluInsn, GemmInsn
from isa.opcodes import MemId

__all__ = [
    "Operand",
    "WindowViolation",
    "max_index",
    "operand_buffers",
    "step_indices",
    "window_violation",
]

LoopInsn = GemmInsn | AluInsn


class Operand(Enum):
    """A micro-op field and the instruction's two loop factors that advance it."""

    DST = ("dst_idx", "dst_factor_out", "dst_factor_in")
    SRC = ("src_idx", "src_factor_out", "src_factor_in")
    WGT = ("wgt_idx", "wgt_factor_out", "wgt_factor_in")

    @property
    def uop_field(self) -> str:
        return self.value[0]

    def factors(self, insn: LoopInsn) -> tuple[int, int]:
        """(factor_out, factor_in) of ``insn`` for this operand."""
        return getattr(insn, self.value[1]), getattr(insn, self.value[2])


def step_indices(
    insn: LoopInsn, base: np.ndarray, operand: Operand, iterations: range | None = None
) -> np.ndarray:
    """Row index of every step, in execution order (int64).

    ``base`` holds the operand's micro-op field for ``uop_bgn..uop_end``. ``iterations`` selects
    a run of the flattened loop iterations ``i0 * iter_in + i1`` (all of them by default).
    """
    if iterations is None:
        iterations = range(insn.iter_out * insn.iter_in)
    factor_out, factor_in = operand.factors(insn)
    it = np.arange(iterations.start, iterations.stop, dtype=np.int64)
    offsets = (it // insn.iter_in) * factor_out + (it % insn.iter_in) * factor_in
    return (offsets[:, None] + np.asarray(base, dtype=np.int64)[None, :]).reshape(-1)


def max_index(insn: LoopInsn, base: np.ndarray, operand: Operand) -> int:
    """The largest row index any step uses (every term is non-negative)."""
    factor_out, factor_in = operand.factors(insn)
    return int(np.max(base)) + (insn.iter_out - 1) * factor_out + (insn.iter_in - 1) * factor_in


@dataclass(frozen=True)
class WindowViolation:
    """Step ``step`` reads accumulator row ``row`` (through ``operand``), which step
    ``step - distance`` of the same instruction writes."""

    step: int
    distance: int
    operand: Operand
    row: int

    def describe(self) -> str:
        field = "dst" if self.operand is Operand.DST else "src"
        return (
            f"step {self.step} reads ACC row {self.row} ({field}) that step "
            f"{self.step - self.distance} writes, {self.distance} step(s) earlier; the "
            f"accumulator read-after-write window forbids that"
        )


def operand_buffers(insn: LoopInsn) -> dict[Operand, MemId]:
    """The operands whose rows a step of ``insn`` uses, and the buffer each indexes: the
    accumulator always; for a multiplying GEMM the input and weight rows; for an ALU step
    without immediate or reset the source accumulator rows (SEMANTICS 5 and 6)."""
    operands = {Operand.DST: MemId.ACC}
    if isinstance(insn, GemmInsn) and not insn.reset_reg:
        operands |= {Operand.SRC: MemId.INP, Operand.WGT: MemId.WGT}
    if isinstance(insn, AluInsn) and not (insn.use_imm or insn.reset_reg):
        operands[Operand.SRC] = MemId.ACC
    return operands


def _acc_reads(insn: LoopInsn) -> tuple[Operand, ...]:
    """The operands whose accumulator rows a step reads (a reset step, GEMM or ALU, only
    writes)."""
    if insn.reset_reg:
        return ()
    return tuple(op for op, mem in operand_buffers(insn).items() if mem is MemId.ACC)


def window_violation(
    insn: LoopInsn, uops: dict[Operand, np.ndarray], window: int
) -> WindowViolation | None:
    """The first step of ``insn`` that breaks the read-after-write window, or None.

    ``uops`` maps each operand to its micro-op fields for ``uop_bgn..uop_end``.

    Destination rows are affine in the loop counters with the same factors for the step that
    writes and the step that reads, so whether steps ``k - j`` and ``k`` collide depends only on
    their micro-ops and on which loop boundaries lie between them: checking the first
    ``window + 1`` iterations and those around the first outer-loop boundary covers every case
    without enumerating the loop nest. A source row advances by other factors than the
    destination rows it is compared with, so the ALU's source reads are scanned step by step,
    a bounded run of iterations at a time.
    """
    total = insn.iter_out * insn.iter_in
    n_uops = len(uops[Operand.DST])
    reads = _acc_reads(insn)
    if not reads or total == 0 or n_uops == 0:
        return None
    found = []
    if Operand.DST in reads:
        runs = [range(0, min(window + 1, total))]
        if total > window + 1:
            runs.append(range(max(0, insn.iter_in - window), min(insn.iter_in + window, total)))
        found += [_first_collision(insn, uops, Operand.DST, run, None, window) for run in runs]
    if Operand.SRC in reads:
        per_run = max(1, _SCAN_STEPS // n_uops)
        history = np.empty(0, dtype=np.int64)
        for start in range(0, total, per_run):
            run = range(start, min(start + per_run, total))
            hit = _first_collision(insn, uops, Operand.SRC, run, history, window)
            if hit is not None:
                found.append(hit)
                break
            written = step_indices(insn, uops[Operand.DST], Operand.DST, run)
            history = np.concatenate([history, written])[-window:]
    return min(
        (v for v in found if v is not None), key=lambda v: (v.step, v.distance), default=None
    )


#: Steps per run when the source reads are scanned (bounds the memory a check needs).
_SCAN_STEPS = 1 << 16


def _first_collision(
    insn: LoopInsn,
    uops: dict[Operand, np.ndarray],
    operand: Operand,
    run: range,
    history: np.ndarray | None,
    window: int,
) -> WindowViolation | None:
    """The first step of ``run`` whose ``operand`` row one of the ``window`` steps before it
    writes; ``history`` holds the rows the steps just before ``run`` wrote (None: the pairs
    inside ``run`` only)."""
    before = np.empty(0, dtype=np.int64) if history is None else history
    written = np.concatenate([before, step_indices(insn, uops[Operand.DST], Operand.DST, run)])
    read = step_indices(insn, uops[operand], operand, run)
    h = len(before)
    first = run.start * len(uops[Operand.DST])
    best = None
    for distance in range(1, window + 1):
        skip = max(0, distance - h)  # steps with no writer that far back
        if skip >= len(read):  # no step of the run has one (nor at a greater distance)
            break
        hits = np.flatnonzero(
            read[skip:] == written[h + skip - distance : h + len(read) - distance]
        )
        if hits.size and (best is None or hits[0] + skip < best[0]):
            best = (int(hits[0]) + skip, distance)
    if best is None:
        return None
    k, distance = best
    return WindowViolation(first + k, distance, operand, int(read[k]))
