"""How a GEMM or ALU instruction's steps run, planned once per configuration, instruction and
micro-ops (the functional simulator's step planning; :mod:`simulator.execute` runs the plans).

A plan checks every step (SRAM rows, the accumulator's read-after-write window) and works out
the index work: which rows each operand reaches and how the steps group. GEMM steps only read
the accumulator rows they add to, so the order of their products does not matter: when every
accumulator row receives as many products and rows fall into classes that multiply the same
weight rows (a convolution's output pixels), each class is one long-reduction matrix product
(im2col: a row's input rows side by side times the class's weight rows stacked); otherwise the
products are grouped by weight row.

ALU steps may read rows that earlier steps of the same instruction write: without such reads a
step batch is simultaneous; when only the destinations repeat, ``ufunc.at`` applies the steps
in order; otherwise the steps run as ordered batches that never read what the batch writes.

Very long instructions are planned in chunks of steps, in order, so memory stays bounded. A plan
depends only on the configuration, the instruction (less its dependency flags and where its
micro-ops are: :func:`plan_key`) and the micro-op words, so it is made once for each such triple
and reused when the instruction executes again, in the same run or a later one:
:data:`LOOP_PLANS` holds them for the process (short instructions only, at most 64 MiB, the
least recently used going first), frozen, and a run's :class:`LoopPlanner` keeps those it used.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass, fields
from enum import Enum

import numpy as np

from isa import (
    AccelConfig,
    AluInsn,
    AluOp,
    GemmInsn,
    Operand,
    max_index,
    operand_buffers,
    step_indices,
    window_violation,
)
from simulator.errors import SimulationError
from simulator.memo import Memo

__all__ = [
    "AT_UFUNCS",
    "FLAGS",
    "LOOP_PLANS",
    "AluMode",
    "AluSteps",
    "GemmSteps",
    "Im2col",
    "LoopPlan",
    "LoopPlanner",
    "Reset",
    "Steps",
    "gemm_steps",
    "plan_key",
    "run_starts",
]

#: Upper bound on the values one chunk of GEMM/ALU steps materialises (per index array and
#: per lane array), so that any legal instruction runs in bounded memory.
CHUNK_VALUES = 1 << 22
#: ALU operations that ``ufunc.at`` applies step by step, in order, on repeated destinations
#: (modular arithmetic for ADD and MUL, so a final wrap equals wrapping every step).
AT_UFUNCS = {
    AluOp.MIN: np.minimum,
    AluOp.MAX: np.maximum,
    AluOp.ADD: np.add,
    AluOp.MUL: np.multiply,
}
#: The dependency flags, which no plan depends on.
FLAGS = ("pop_prev_dep", "pop_next_dep", "push_prev_dep", "push_next_dep")
#: Per GEMM/ALU record type, the fields its plan depends on: all but the dependency flags and
#: where its micro-ops are (their number and words complete the key)
_UNPLANNED = (*FLAGS, "uop_bgn", "uop_end")
_PLAN_FIELDS = {
    kind: tuple(f.name for f in fields(kind) if f.name not in _UNPLANNED)
    for kind in (GemmInsn, AluInsn)
}


class LoopPlanner:
    """The plans of one run: each GEMM/ALU instruction's, looked up in the run's own plans,
    then in :data:`LOOP_PLANS`, else made (and kept when reusable)."""

    def __init__(self, cfg: AccelConfig) -> None:
        self.cfg = cfg
        #: GEMM/ALU instructions already run, by instruction (:func:`plan_key`) and micro-op
        #: words: their checks passed and their step indices are known
        self._plans: dict[tuple[tuple[object, ...], bytes], LoopPlan] = {}

    def plan(self, index: int, insn: GemmInsn | AluInsn, uops: np.ndarray) -> LoopPlan:
        """The plan of instruction ``index`` (``insn``) with micro-ops ``uops`` (at least one);
        a SimulationError naming the instruction when a step is out of bounds or reads an
        accumulator row within the read-after-write window of its write."""
        key = (plan_key(insn), uops.tobytes())
        plan = self._plans.get(key)
        if plan is None:
            plan = LOOP_PLANS.get((self.cfg, *key))
            if plan is None:
                plan = self._make(index, insn, uops)
                if plan.reusable:
                    LOOP_PLANS.put((self.cfg, *key), plan, _freeze(plan))
            if plan.reusable:
                self._plans[key] = plan
        return plan

    def _make(self, index: int, insn: GemmInsn | AluInsn, uops: np.ndarray) -> LoopPlan:
        """Check ``insn``'s steps with these micro-ops and work out the rows they use."""
        bases = {op: uops[:, column] for column, op in enumerate(Operand)}
        operands = operand_buffers(insn)
        for operand, mem in operands.items():
            top = max_index(insn, bases[operand], operand)
            if top >= self.cfg.buffer_depth(mem):
                raise SimulationError(
                    f"a step reaches {mem.name} row {top} through {operand.uop_field}, but the "
                    f"buffer has {self.cfg.buffer_depth(mem)} rows",
                    index=index,
                    insn=insn,
                )
        chunks = self._chunks(insn, len(uops), bases, list(operands))
        reached = self._touched(chunks, operands)
        if not _window_free(insn, chunks, reached[Operand.DST]):
            violation = window_violation(insn, bases, self.cfg.acc_raw_window)
            if violation is not None:
                raise SimulationError(violation.describe(), index=index, insn=insn)
        touched = {op: _as_slice(rows) for op, rows in reached.items()}
        rows = touched[Operand.DST]
        if isinstance(chunks, list):  # one chunk: its steps prepared once, for every run
            prepared = [self._prepare(insn, steps) for steps in chunks]
            return LoopPlan(prepared, touched, rows, reusable=True, reached=chunks[0])
        lazily = (self._prepare(insn, steps) for steps in chunks)
        return LoopPlan(lazily, touched, rows, reusable=False)

    def _chunks(
        self,
        insn: GemmInsn | AluInsn,
        n: int,
        bases: dict[Operand, np.ndarray],
        operands: list[Operand],
    ) -> Sequence[dict[Operand, np.ndarray]] | _Chunks:
        lanes = self.cfg.batch * max(self.cfg.block_in, self.cfg.block_out)
        per_chunk = max(1, CHUNK_VALUES // (n * lanes))
        total = insn.iter_out * insn.iter_in
        if per_chunk >= total:
            return [{op: step_indices(insn, bases[op], op) for op in operands}]
        return _Chunks(insn, bases, operands, per_chunk)

    def _touched(
        self, chunks: Sequence[dict[Operand, np.ndarray]] | _Chunks, operands: dict
    ) -> dict[Operand, np.ndarray]:
        """Every row each operand reaches, once, in order (marked in a table: no sort)."""
        seen = {
            op: np.zeros(self.cfg.buffer_depth(mem), dtype=bool) for op, mem in operands.items()
        }
        for chunk in chunks:
            for op, rows in chunk.items():
                seen[op][rows] = True
        return {op: np.flatnonzero(mask) for op, mask in seen.items()}

    def _prepare(
        self, insn: GemmInsn | AluInsn, steps: dict[Operand, np.ndarray]
    ) -> Reset | Im2col | GemmSteps | AluSteps:
        """How a run of ``insn``'s steps (row indices by operand) executes: the index work,
        which depends on the rows only."""
        dst = steps[Operand.DST]
        if insn.reset_reg:
            return Reset(_as_slice(dst))
        if isinstance(insn, GemmInsn):
            return gemm_steps(dst, steps[Operand.SRC], steps[Operand.WGT])
        src = steps.get(Operand.SRC)
        unique, first = np.unique(dst, return_index=True)
        reads_written = False
        if src is not None:
            first_write = np.full(self.cfg.acc_buff_depth, len(dst), dtype=np.int64)
            first_write[unique] = first
            reads_written = bool((first_write[src] < np.arange(len(dst))).any())
        if len(unique) == len(dst) and not reads_written:
            return AluSteps(_as_slice(dst), None if src is None else _as_slice(src), AluMode.BATCH)
        if not reads_written and insn.alu_opcode in AT_UFUNCS:
            return AluSteps(dst, src, AluMode.AT)
        return AluSteps(dst, src, AluMode.ORDERED, tuple(_independent_batches(dst, src)))


class AluMode(Enum):
    """How a run of ALU steps executes (module docstring)."""

    BATCH = "all at once"  # no step repeats a destination or reads one
    AT = "ufunc.at"  # destinations repeat; no step reads a row a step writes
    ORDERED = "ordered batches"  # steps read rows earlier steps write


@dataclass(frozen=True)
class Reset:
    """Steps that zero their destination rows (a GEMM or ALU reset)."""

    dst: np.ndarray | slice


@dataclass(frozen=True)
class GemmSteps:
    """Multiplying GEMM steps grouped by weight row, each row's steps in program order: group
    ``g`` multiplies the inputs of its ``sizes[g]`` steps by weight row ``weights[g]``."""

    dst: np.ndarray  # the accumulator row of each step, in group order
    src: np.ndarray  # the input row of each step, in group order
    weights: np.ndarray
    sizes: np.ndarray
    uniform: bool  # every group has as many steps


@dataclass(frozen=True)
class Im2col:
    """Multiplying GEMM steps as ``classes`` long-reduction products: accumulator row
    ``dst[c, r]`` receives the sum over ``t`` of input row ``src[c, r, t]`` times weight row
    ``weights[c, t]``. No accumulator row repeats."""

    dst: np.ndarray  # (classes, rows)
    src: np.ndarray  # (classes, rows, terms)
    weights: np.ndarray  # (classes, terms)


@dataclass(frozen=True)
class AluSteps:
    """ALU steps (destination and source rows; no source: the immediate) and how they run (a
    batch's rows may be slices)."""

    dst: np.ndarray | slice
    src: np.ndarray | slice | None
    mode: AluMode
    batches: tuple[slice, ...] = ()  # the ordered batches


@dataclass(frozen=True)
class LoopPlan:
    """A GEMM or ALU instruction with given micro-ops, checked: its runs of steps, every row
    each operand reaches (in order), and the accumulator rows it writes. ``reusable``: the runs
    are a list (a short instruction), kept for the next execution with the same micro-ops;
    ``reached`` then holds each operand's row of every step, in order (for race reports)."""

    chunks: Iterable[Steps]
    touched: dict[Operand, np.ndarray | slice]
    rows: np.ndarray | slice  # a slice when they are consecutive
    reusable: bool
    reached: dict[Operand, np.ndarray] | None = None


def plan_key(insn: GemmInsn | AluInsn) -> tuple[object, ...]:
    """``insn`` as far as its plan depends on it (:data:`_PLAN_FIELDS`)."""
    names = _PLAN_FIELDS[type(insn)]
    return (type(insn), insn.uop_end - insn.uop_bgn, *(getattr(insn, name) for name in names))


def _freeze(value: object) -> int:
    """Make every array in ``value`` (a plan, its fields, their dicts and sequences)
    read-only, and return their bytes: what a shared plan holds."""
    if isinstance(value, np.ndarray):
        value.flags.writeable = False
        return int(value.nbytes)
    if isinstance(value, dict):
        return sum(_freeze(v) for v in value.values())
    if isinstance(value, list | tuple):
        return sum(_freeze(v) for v in value)
    names = _PLAN_PARTS.get(type(value))
    if names is not None:
        return sum(_freeze(getattr(value, name)) for name in names)
    return 0


#: Checked plans of short GEMM/ALU instructions by configuration, instruction (:func:`plan_key`)
#: and micro-op words, shared by every run in the process (module docstring)
LOOP_PLANS: Memo[LoopPlan] = Memo(64 << 20)
#: What a plan runs: one run of steps
Steps = Reset | Im2col | GemmSteps | AluSteps

#: The fields of the classes a plan is made of (what :func:`_freeze` walks)
_PLAN_PARTS: dict[type, tuple[str, ...]] = {
    kind: tuple(f.name for f in fields(kind))
    for kind in (LoopPlan, Reset, Im2col, GemmSteps, AluSteps)
}


def _window_free(
    insn: GemmInsn | AluInsn,
    chunks: Sequence[dict[Operand, np.ndarray]] | _Chunks,
    dst_rows: np.ndarray,
) -> bool:
    """Whether no step of ``insn`` can read an accumulator row that another step writes, so
    the read-after-write window holds without a search: each step reads only its own
    destination row (a multiplying GEMM, an ALU step with an immediate; a reset reads
    nothing) and no two steps write the same row (``dst_rows``: every row written, once)."""
    if insn.reset_reg:
        return True
    reads_source = isinstance(insn, AluInsn) and not insn.use_imm
    steps = sum(len(chunk[Operand.DST]) for chunk in chunks) if isinstance(chunks, list) else -1
    return not reads_source and steps == len(dst_rows)


def _as_slice(rows: np.ndarray) -> np.ndarray | slice:
    """``rows`` as a slice when they are consecutive and ascending (indexing by a slice gives
    views, without gathering, which the accumulator's wrap updates in place), else as they
    are."""
    if len(rows) and rows[-1] - rows[0] + 1 == len(rows) and (rows[1:] - rows[:-1] == 1).all():
        return slice(int(rows[0]), int(rows[-1]) + 1)
    return rows


def run_starts(values: np.ndarray) -> np.ndarray:
    """Where each run of equal neighbours in ``values`` starts (positions, ascending). Array
    methods and ufuncs only: numpy's Python-level helpers (``r_``, ``diff``, ``flatnonzero``)
    cost more than the work on a few thousand values."""
    change = np.empty(len(values), dtype=bool)
    change[:1] = True
    np.not_equal(values[1:], values[:-1], out=change[1:])
    return change.nonzero()[0]


def gemm_steps(dst: np.ndarray, src: np.ndarray, wgt: np.ndarray) -> Im2col | GemmSteps:
    return _im2col_steps(dst, src, wgt) or _weight_groups(dst, src, wgt)


def _im2col_steps(dst: np.ndarray, src: np.ndarray, wgt: np.ndarray) -> Im2col | None:
    """The steps as equal classes of accumulator rows that multiply the same weight rows (in
    some order), or None when the rows receive unequal numbers of products or fall into classes
    of unequal sizes."""
    order = np.argsort(dst, kind="stable")
    ordered = dst[order]
    starts = run_starts(ordered)
    if len(dst) % len(starts) or (starts[1:] - starts[:-1] != len(dst) // len(starts)).any():
        return None
    rows = ordered[starts]
    weights = wgt[order].reshape(len(rows), -1)
    sources = src[order].reshape(len(rows), -1)
    canonical = np.argsort(weights, axis=1, kind="stable")  # the same weights in one order
    by_row = np.arange(len(rows))[:, None]
    weights, sources = weights[by_row, canonical], sources[by_row, canonical]
    # rows as opaque byte strings: one 1-D unique, far faster than ``np.unique(axis=0)``
    keys = weights.view(np.dtype((np.void, weights.itemsize * weights.shape[1]))).reshape(-1)
    _, first, of_class, sizes = np.unique(
        keys, return_index=True, return_inverse=True, return_counts=True
    )
    if (sizes != sizes[0]).any():
        return None
    by_class = np.argsort(of_class, kind="stable")
    shape = (len(sizes), int(sizes[0]))
    return Im2col(
        rows[by_class].reshape(shape), sources[by_class].reshape(*shape, -1), weights[first]
    )


def _weight_groups(dst: np.ndarray, src: np.ndarray, wgt: np.ndarray) -> GemmSteps:
    order = np.argsort(wgt, kind="stable")
    sorted_wgt = wgt[order]
    starts = run_starts(sorted_wgt)
    sizes = np.append(starts[1:], len(order)) - starts
    uniform = bool((sizes == sizes[0]).all())
    return GemmSteps(dst[order], src[order], sorted_wgt[starts], sizes, uniform)


def _independent_batches(dst: np.ndarray, src: np.ndarray | None) -> Iterator[slice]:
    """Consecutive runs of steps in which no step reads or rewrites a row that an earlier step
    of the run writes: each run can execute as one simultaneous batch."""
    start = 0
    written: set[int] = set()
    reads = src.tolist() if src is not None else None
    for k, row in enumerate(dst.tolist()):
        if row in written or (reads is not None and reads[k] in written):
            yield slice(start, k)
            start, written = k, set()
        written.add(row)
    yield slice(start, len(dst))


class _Chunks:
    """The steps of a long instruction, a bounded run of loop iterations at a time."""

    def __init__(
        self,
        insn: GemmInsn | AluInsn,
        bases: dict[Operand, np.ndarray],
        operands: list[Operand],
        per_chunk: int,
    ) -> None:
        self._insn, self._bases, self._operands, self._per = insn, bases, operands, per_chunk

    def __iter__(self) -> Iterator[dict[Operand, np.ndarray]]:
        insn = self._insn
        total = insn.iter_out * insn.iter_in
        for first in range(0, total, self._per):
            run = range(first, min(first + self._per, total))
            yield {op: step_indices(insn, self._bases[op], op, run) for op in self._operands}
