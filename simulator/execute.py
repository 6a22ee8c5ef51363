"""What each instruction does to the state and DRAM (SEMANTICS sections 3-6), vectorised.

Every instruction is validated completely (SRAM rows, DRAM bytes, micro-op range, row indices,
the accumulator window, races) before anything is written, so a failing instruction writes
nothing.

GEMM and ALU instructions run all their steps as numpy arrays. GEMM steps only read the
accumulator rows they add to, so the order of their products does not matter: they are summed
into the accumulator exactly, and wrapping once at the end equals wrapping every step, modulo
``2**acc_width``. When every accumulator row receives as many products and rows fall into
classes that multiply the same weight rows (a convolution's output pixels), each class is one
long-reduction matrix product (im2col: a row's input rows side by side times the class's
weight rows stacked); otherwise the products are grouped by weight row.

ALU steps may read rows that earlier steps of the same instruction write: without such reads a
step batch is simultaneous; when only the destinations repeat, ``ufunc.at`` applies the steps
in order; otherwise the steps run as ordered batches that never read what the batch writes.

Very long instructions run in chunks of steps, in order, so memory stays bounded. The checks and
the index work of a GEMM or ALU instruction (its steps' rows, their grouping) depend only on the
configuration, the instruction and its micro-ops, so they are done once for each such triple and
reused when it executes again, in the same run or a later one: :data:`SHARED_PLANS` holds them
for the process (short instructions only, at most 64 MiB, the least recently used going first),
frozen, and a run keeps those it used.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass, fields
from enum import Enum
from typing import Any

import numpy as np

from isa import (
    AccelConfig,
    AluInsn,
    AluOp,
    FinishInsn,
    GemmInsn,
    Instruction,
    MemId,
    MemInsn,
    Opcode,
    Operand,
    Stage,
    Token,
    instruction_set,
    max_index,
    operand_buffers,
    step_indices,
    window_violation,
)
from simulator.errors import SimulationError
from simulator.events import AluEvent, Event, FinishEvent, GemmEvent, LoadEvent, StoreEvent
from simulator.exact import exact_matmul
from simulator.memo import Memo
from simulator.races import Access, RaceDetector, Space
from simulator.state import DeviceState, alu_apply, signed_dtype, wrap

__all__ = ["SHARED_PLANS", "Executor"]

#: Upper bound on the values one chunk of GEMM/ALU steps materialises (per index array and
#: per lane array), so that any legal instruction runs in bounded memory.
_CHUNK_VALUES = 1 << 22
#: ALU operations that ``ufunc.at`` applies step by step, in order, on repeated destinations
#: (modular arithmetic for ADD and MUL, so a final wrap equals wrapping every step).
_AT_UFUNCS = {
    AluOp.MIN: np.minimum,
    AluOp.MAX: np.maximum,
    AluOp.ADD: np.add,
    AluOp.MUL: np.multiply,
}
#: Checked plans of short GEMM/ALU instructions by configuration, instruction (:func:`_plan_key`)
#: and micro-op words, shared by every run in the process (module docstring)
SHARED_PLANS: Memo[_LoopPlan] = Memo(64 << 20)
_FLAGS = ("pop_prev_dep", "pop_next_dep", "push_prev_dep", "push_next_dep")
#: Per GEMM/ALU record type, the fields its plan depends on: all but the dependency flags and
#: where its micro-ops are (their number and words complete the key)
_UNPLANNED = (*_FLAGS, "uop_bgn", "uop_end")
_PLAN_FIELDS = {
    kind: tuple(f.name for f in fields(kind) if f.name not in _UNPLANNED)
    for kind in (GemmInsn, AluInsn)
}
_SRAM_SPACE = {MemId.INP: Space.INP, MemId.WGT: Space.WGT}
_PADS = ("y_pad_0", "y_pad_1", "x_pad_0", "x_pad_1")


class Executor:
    """Runs single instructions against ``state`` and ``dram`` (see the module docstring)."""

    def __init__(
        self,
        cfg: AccelConfig,
        state: DeviceState,
        dram: np.ndarray,
        instructions: Sequence[Instruction],
        races: RaceDetector | None,
    ) -> None:
        self.cfg = cfg
        self.state = state
        self.dram = dram
        self.instructions = instructions
        self.races = races
        uop_format = instruction_set(cfg).uop
        self._uop_fields = [uop_format.field(op.uop_field) for op in Operand]
        self._uop_reserved = uop_format.reserved_mask
        #: per memory type a LOAD writes: its SRAM buffer, and the element type and the shape
        #: of a row there (micro-ops are decoded field by field instead)
        acc = state.acc
        self._buffers = {
            MemId.UOP: state.uop,
            MemId.INP: state.inp,
            MemId.WGT: state.wgt,
            MemId.ACC: acc,
            MemId.ACC_8BIT: acc,
        }
        b, bi, bo = cfg.batch, cfg.block_in, cfg.block_out
        self._row_types = {
            MemId.INP: (signed_dtype(cfg.inp_width), (b, bi)),
            MemId.WGT: (signed_dtype(cfg.wgt_width), (bo, bi)),
            MemId.ACC: (signed_dtype(cfg.acc_width), (b, bo)),
            MemId.ACC_8BIT: (signed_dtype(8), (b, bo)),
        }
        #: GEMM/ALU instructions already run, by instruction (less what the plan does not
        #: depend on: :func:`_plan_key`) and micro-op words: their checks passed and their step
        #: indices are known (they depend on nothing else)
        self._plans: dict[tuple[tuple[object, ...], bytes], _LoopPlan] = {}

    def run(
        self,
        index: int,
        module: Stage,
        clock: Sequence[int],
        pops: tuple[Token, ...],
        pushes: tuple[Token, ...],
    ) -> Event:
        """Execute instruction ``index`` on ``module``, whose vector clock is ``clock``."""
        insn = self.instructions[index]
        common: dict[str, Any] = {"index": index, "module": module, "pops": pops, "pushes": pushes}
        if isinstance(insn, MemInsn):
            load = insn.opcode is Opcode.LOAD
            elem_bytes = self.cfg.elem_bytes(insn.memory_type if load else MemId.OUT)
            common |= {
                "memory_type": insn.memory_type,
                "sram_base": insn.sram_base,
                "dram_address": insn.dram_base * elem_bytes,
                "y_size": insn.y_size,
                "x_size": insn.x_size,
                "x_stride": insn.x_stride,
                "elem_bytes": elem_bytes,
            }
            if load:
                pads = {name: getattr(insn, name) for name in _PADS}
                return self._load(index, insn, clock, LoadEvent.of(common | pads))
            return self._store(index, insn, clock, StoreEvent.of(common))
        if isinstance(insn, GemmInsn | AluInsn):
            return self._loop(index, insn, clock, common)
        assert isinstance(insn, FinishInsn)
        return FinishEvent.of(common)

    def _fail(self, index: int, message: str) -> SimulationError:
        return SimulationError(message, index=index, insn=self.instructions[index])

    def _check_races(self, index: int, clock: Sequence[int], accesses: list[Access]) -> None:
        if self.races is not None:
            self.races.access(clock, index, accesses)

    # ------------------------------------------------------------------ DRAM
    def _dram_start(self, index: int, insn: MemInsn, elem_bytes: int) -> int:
        """The first byte of a 2-D transfer, after checking that it lies inside DRAM."""
        start = insn.dram_base * elem_bytes
        row_bytes = insn.x_size * elem_bytes
        end = start + (insn.y_size - 1) * insn.x_stride * elem_bytes + row_bytes
        if insn.y_size and end > len(self.dram):
            raise self._fail(
                index,
                f"DRAM bytes {start:#x}..{end - 1:#x} are accessed, but DRAM has "
                f"{len(self.dram):#x} bytes",
            )
        return start

    def _dram_access(self, insn: MemInsn, start: int, elem_bytes: int, write: bool) -> Access:
        """The race detector's view of a 2-D transfer's DRAM side (races on only)."""
        assert self.races is not None
        span = self.races.dram_granules(
            start, insn.y_size, insn.x_size * elem_bytes, insn.x_stride * elem_bytes
        )
        return Access(Space.DRAM, write, span)

    def _dram_view(
        self, insn: MemInsn, start: int, elem_bytes: int, *, writeable: bool = False
    ) -> np.ndarray:
        """The transfer's bytes as a (y_size, x_size * elem_bytes) view of DRAM (checked
        against DRAM's size by :meth:`_dram_start` first)."""
        shape = (insn.y_size, insn.x_size * elem_bytes)
        strides = (insn.x_stride * elem_bytes, 1)
        # the ndarray constructor makes the view several times faster than ``as_strided``
        view = np.ndarray(shape, np.uint8, self.dram, start if insn.y_size else 0, strides)
        view.flags.writeable = writeable
        return view

    # ------------------------------------------------------------------ LOAD
    def _load(self, index: int, insn: MemInsn, clock: Sequence[int], event: LoadEvent) -> Event:
        mem, elem_bytes = insn.memory_type, event.elem_bytes
        if insn.x_size == 0:
            return event
        target = self._buffers[mem]
        depth = len(target)
        end = insn.sram_base + event.sram_rows
        if end > depth:
            raise self._fail(
                index,
                f"writes {mem.name} rows {insn.sram_base}..{end - 1}, but the buffer has "
                f"{depth} rows",
            )
        start = self._dram_start(index, insn, elem_bytes)
        rows = self._decode(index, mem, self._dram_view(insn, start, elem_bytes), insn)
        if self.races is not None:
            accesses = [self._dram_access(insn, start, elem_bytes, write=False)]
            if mem in _SRAM_SPACE:
                sram_rows = slice(insn.sram_base, end)
                accesses.append(Access(_SRAM_SPACE[mem], True, sram_rows))
            self.races.access(clock, index, accesses)
        width = insn.x_pad_0 + insn.x_size + insn.x_pad_1
        shape = (event.sram_rows // width, width, *target.shape[1:])
        block = np.reshape(target[insn.sram_base : end], shape, copy=False)  # SRAM, in place
        if width != insn.x_size or len(block) != insn.y_size:  # pad rows and columns are zero
            block[...] = 0
        block[
            insn.y_pad_0 : insn.y_pad_0 + insn.y_size, insn.x_pad_0 : insn.x_pad_0 + insn.x_size
        ] = rows
        return event

    def _decode(self, index: int, mem: MemId, raw: np.ndarray, insn: MemInsn) -> np.ndarray:
        """DRAM bytes (y_size, x_size * elem_bytes) as SRAM rows (y_size, x_size, ...)."""
        y, x = insn.y_size, insn.x_size
        if mem is MemId.UOP:
            words = np.ascontiguousarray(raw).view("<u4").astype(np.int64).reshape(y, x)
            bad = np.flatnonzero(words & self._uop_reserved)
            if bad.size:
                raise self._fail(
                    index,
                    f"micro-op word {int(bad[0])} of the transfer has reserved bits set "
                    f"({int(words.flat[bad[0]]):#010x}); it is not a micro-op",
                )
            fields = [(words >> f.offset) & ((1 << f.width) - 1) for f in self._uop_fields]
            return np.stack(fields, axis=-1)
        dtype, shape = self._row_types[mem]
        # each row's bytes are contiguous: a typed view of DRAM, without a copy
        return raw.view(dtype).reshape(y, x, *shape)

    # ------------------------------------------------------------------ STORE
    def _store(self, index: int, insn: MemInsn, clock: Sequence[int], event: StoreEvent) -> Event:
        elem_bytes = event.elem_bytes
        if insn.x_size == 0:
            return event
        count = insn.y_size * insn.x_size
        end = insn.sram_base + count
        if end > self.cfg.out_buff_depth:
            raise self._fail(
                index,
                f"reads OUT rows {insn.sram_base}..{end - 1}, but the buffer has "
                f"{self.cfg.out_buff_depth} rows",
            )
        start = self._dram_start(index, insn, elem_bytes)
        if self.races is not None:
            out_rows = slice(insn.sram_base, end)
            dram = self._dram_access(insn, start, elem_bytes, write=True)
            self.races.access(clock, index, [Access(Space.OUT, False, out_rows), dram])
        values = self.state.out[insn.sram_base : end].astype(signed_dtype(self.cfg.out_width))
        data = values.view(np.uint8).reshape(insn.y_size, insn.x_size * elem_bytes)
        if insn.x_stride >= insn.x_size:  # rows do not overlap: one strided copy
            self._dram_view(insn, start, elem_bytes, writeable=True)[...] = data
        else:  # overlapping rows: later rows win, as the hardware writes them in order
            row_bytes = data.shape[1]
            for y, row in enumerate(data):
                first = start + y * insn.x_stride * elem_bytes
                self.dram[first : first + row_bytes] = row
        return event

    # ------------------------------------------------------------------ GEMM and ALU
    def _loop(
        self, index: int, insn: GemmInsn | AluInsn, clock: Sequence[int], common: dict
    ) -> Event:
        n = insn.uop_end - insn.uop_bgn
        common |= {
            "reset": insn.reset_reg,
            "uops": max(n, 0),
            "iter_out": insn.iter_out,
            "iter_in": insn.iter_in,
        }
        if isinstance(insn, GemmInsn):
            event: Event = GemmEvent.of(common)
        else:
            event = AluEvent.of(common | {"op": insn.alu_opcode, "use_imm": insn.use_imm})
        if insn.iter_out == 0 or insn.iter_in == 0 or n == 0:
            return event
        depth = self.cfg.uop_buff_depth
        if n < 0 or insn.uop_end > depth:
            raise self._fail(
                index,
                f"micro-op range {insn.uop_bgn}..{insn.uop_end} is not uop_bgn < uop_end <= "
                f"{depth} (the micro-op buffer's depth)",
            )
        uops = self.state.uop[insn.uop_bgn : insn.uop_end]
        key = (_plan_key(insn), uops.tobytes())
        plan = self._plans.get(key)
        if plan is None:
            plan = SHARED_PLANS.get((self.cfg, *key))
            if plan is None:
                plan = self._plan(index, insn, uops)
                if plan.reusable:
                    SHARED_PLANS.put((self.cfg, *key), plan, _freeze(plan))
            if plan.reusable:
                self._plans[key] = plan
        if self.races is not None:
            touched, reached = plan.touched, plan.reached
            spaces = [(Space.OUT, True, Operand.DST)]
            if isinstance(insn, GemmInsn) and not insn.reset_reg:
                spaces += [(Space.INP, False, Operand.SRC), (Space.WGT, False, Operand.WGT)]
            accesses = [
                Access(space, write, touched[op], None if reached is None else reached[op])
                for space, write, op in spaces
            ]
            self._check_races(index, clock, accesses)
        for steps in plan.chunks:
            self._run_steps(insn, steps)
        rows, acc, out = plan.rows, self.state.acc, self.state.out
        # ALU steps and resets leave their rows acc_width wide; products need the wrap
        products = isinstance(insn, GemmInsn) and not insn.reset_reg
        if isinstance(rows, slice):  # views: wrapped in place
            wrapped = wrap(acc[rows], self.cfg.acc_width, out=acc[rows]) if products else acc[rows]
            wrap(wrapped, self.cfg.out_width, out=out[rows])
        else:
            wrapped = wrap(acc[rows], self.cfg.acc_width) if products else acc[rows]
            if products:
                acc[rows] = wrapped
            out[rows] = wrap(wrapped, self.cfg.out_width)
        return event

    def _plan(self, index: int, insn: GemmInsn | AluInsn, uops: np.ndarray) -> _LoopPlan:
        """Check ``insn``'s steps with these micro-ops and work out the rows they use."""
        bases = {op: uops[:, column] for column, op in enumerate(Operand)}
        operands = operand_buffers(insn)
        for operand, mem in operands.items():
            top = max_index(insn, bases[operand], operand)
            if top >= self.cfg.buffer_depth(mem):
                raise self._fail(
                    index,
                    f"a step reaches {mem.name} row {top} through {operand.uop_field}, but the "
                    f"buffer has {self.cfg.buffer_depth(mem)} rows",
                )
        chunks = self._chunks(insn, len(uops), bases, list(operands))
        reached = self._touched(chunks, operands)
        if not _window_free(insn, chunks, reached[Operand.DST]):
            violation = window_violation(insn, bases, self.cfg.acc_raw_window)
            if violation is not None:
                raise self._fail(index, violation.describe())
        touched = {op: _as_slice(rows) for op, rows in reached.items()}
        rows = touched[Operand.DST]
        if isinstance(chunks, list):  # one chunk: its steps prepared once, for every run
            prepared = [self._prepare(insn, steps) for steps in chunks]
            return _LoopPlan(prepared, touched, rows, reusable=True, reached=chunks[0])
        lazily = (self._prepare(insn, steps) for steps in chunks)
        return _LoopPlan(lazily, touched, rows, reusable=False)

    def _chunks(
        self,
        insn: GemmInsn | AluInsn,
        n: int,
        bases: dict[Operand, np.ndarray],
        operands: list[Operand],
    ) -> Sequence[dict[Operand, np.ndarray]] | _Chunks:
        lanes = self.cfg.batch * max(self.cfg.block_in, self.cfg.block_out)
        per_chunk = max(1, _CHUNK_VALUES // (n * lanes))
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
    ) -> _Reset | _Im2col | _GemmSteps | _AluSteps:
        """How a run of ``insn``'s steps (row indices by operand) executes: the index work,
        which depends on the rows only."""
        dst = steps[Operand.DST]
        if insn.reset_reg:
            return _Reset(_as_slice(dst))
        if isinstance(insn, GemmInsn):
            return _gemm_steps(dst, steps[Operand.SRC], steps[Operand.WGT])
        src = steps.get(Operand.SRC)
        unique, first = np.unique(dst, return_index=True)
        reads_written = False
        if src is not None:
            first_write = np.full(self.cfg.acc_buff_depth, len(dst), dtype=np.int64)
            first_write[unique] = first
            reads_written = bool((first_write[src] < np.arange(len(dst))).any())
        if len(unique) == len(dst) and not reads_written:
            return _AluSteps(
                _as_slice(dst), None if src is None else _as_slice(src), _AluMode.BATCH
            )
        if not reads_written and insn.alu_opcode in _AT_UFUNCS:
            return _AluSteps(dst, src, _AluMode.AT)
        return _AluSteps(dst, src, _AluMode.ORDERED, tuple(_independent_batches(dst, src)))

    def _run_steps(
        self, insn: GemmInsn | AluInsn, steps: _Reset | _Im2col | _GemmSteps | _AluSteps
    ) -> None:
        if isinstance(steps, _Reset):
            self.state.acc[steps.dst] = 0
        elif isinstance(steps, _Im2col):
            self._im2col(steps)
        elif isinstance(steps, _GemmSteps):
            self._gemm(steps)
        else:
            assert isinstance(insn, AluInsn), "ALU steps come from an ALU instruction"
            self._alu(insn, steps)

    def _alu(self, insn: AluInsn, steps: _AluSteps) -> None:
        dst, src = steps.dst, steps.src
        if steps.mode is _AluMode.BATCH:
            self._alu_batch(insn, dst, src)
            return
        # the other modes index rows one by one: arrays (module docstring)
        assert isinstance(dst, np.ndarray) and not isinstance(src, slice)
        if steps.mode is _AluMode.AT:
            self._alu_at(insn, dst, src)
        else:
            for batch in steps.batches:
                self._alu_batch(insn, dst[batch], None if src is None else src[batch])

    def _gemm(self, steps: _GemmSteps) -> None:
        cfg = self.cfg
        inputs = self.state.inp[steps.src]  # (steps, batch, block_in)
        weights = self.state.wgt[steps.weights]  # (groups, block_out, block_in)
        widths = (cfg.inp_width, cfg.wgt_width)
        if steps.uniform:  # one batched matrix product per weight row
            grouped = inputs.reshape(len(weights), -1, inputs.shape[-1])
            products = exact_matmul(grouped, weights.transpose(0, 2, 1), *widths)
        else:
            starts = np.r_[0, np.cumsum(steps.sizes)[:-1]]
            products = np.concatenate(
                [
                    exact_matmul(inputs[s : s + k].reshape(-1, inputs.shape[-1]), w.T, *widths)
                    for s, k, w in zip(starts, steps.sizes, weights, strict=True)
                ]
            )
        _accumulate(self.state.acc, steps.dst, products.reshape(-1, cfg.batch, cfg.block_out))

    def _im2col(self, steps: _Im2col) -> None:
        cfg = self.cfg
        classes, rows, terms = steps.src.shape
        # ``take`` along the first axis: several times faster than fancy indexing here
        inputs = self.state.inp.take(steps.src.reshape(-1), axis=0)
        inputs = inputs.reshape(classes, rows, terms, cfg.batch, cfg.block_in)
        inputs = inputs.transpose(0, 1, 3, 2, 4).reshape(classes, rows * cfg.batch, -1)
        weights = self.state.wgt.take(steps.weights.reshape(-1), axis=0)
        weights = weights.reshape(classes, terms, cfg.block_out, cfg.block_in)
        weights = weights.transpose(0, 1, 3, 2).reshape(classes, -1, cfg.block_out)
        products = exact_matmul(inputs, weights, cfg.inp_width, cfg.wgt_width)
        self.state.acc[steps.dst.reshape(-1)] += products.reshape(-1, cfg.batch, cfg.block_out)

    def _alu_operand(self, insn: AluInsn, src: np.ndarray | slice | None) -> np.ndarray | int:
        return insn.imm if src is None else self.state.acc[src]

    def _alu_batch(
        self, insn: AluInsn, dst: np.ndarray | slice, src: np.ndarray | slice | None
    ) -> None:
        """Steps that neither repeat a destination nor read one: all at once."""
        acc = self.state.acc
        acc[dst] = alu_apply(self.cfg, insn.alu_opcode, acc[dst], self._alu_operand(insn, src))

    def _alu_at(self, insn: AluInsn, dst: np.ndarray, src: np.ndarray | None) -> None:
        """Steps whose operands no step writes, destinations repeating: in order, per row."""
        acc = self.state.acc
        x = np.asarray(self._alu_operand(insn, src), dtype=np.int64)
        if insn.alu_opcode is AluOp.MUL:
            x = wrap(x, self.cfg.mul_arg_bits)
        _AT_UFUNCS[insn.alu_opcode].at(acc, dst, x)
        rows = np.unique(dst)
        acc[rows] = wrap(acc[rows], self.cfg.acc_width)


def _accumulate(acc: np.ndarray, rows: np.ndarray, values: np.ndarray) -> None:
    """``acc[rows[i]] += values[i]`` for every ``i``, rows repeating (``np.add.at``'s meaning):
    the values of each row summed first, in one sort and one segmented reduction."""
    order = np.argsort(rows, kind="stable")
    ordered = rows[order]
    starts = _run_starts(ordered)
    if len(starts) == len(rows):  # no row repeats
        acc[rows] += values
        return
    acc[ordered[starts]] += np.add.reduceat(values[order], starts, axis=0)


class _AluMode(Enum):
    """How a run of ALU steps executes (module docstring)."""

    BATCH = "all at once"  # no step repeats a destination or reads one
    AT = "ufunc.at"  # destinations repeat; no step reads a row a step writes
    ORDERED = "ordered batches"  # steps read rows earlier steps write


@dataclass(frozen=True)
class _Reset:
    """Steps that zero their destination rows (a GEMM or ALU reset)."""

    dst: np.ndarray | slice


@dataclass(frozen=True)
class _GemmSteps:
    """Multiplying GEMM steps grouped by weight row, each row's steps in program order: group
    ``g`` multiplies the inputs of its ``sizes[g]`` steps by weight row ``weights[g]``."""

    dst: np.ndarray  # the accumulator row of each step, in group order
    src: np.ndarray  # the input row of each step, in group order
    weights: np.ndarray
    sizes: np.ndarray
    uniform: bool  # every group has as many steps


@dataclass(frozen=True)
class _Im2col:
    """Multiplying GEMM steps as ``classes`` long-reduction products: accumulator row
    ``dst[c, r]`` receives the sum over ``t`` of input row ``src[c, r, t]`` times weight row
    ``weights[c, t]``. No accumulator row repeats."""

    dst: np.ndarray  # (classes, rows)
    src: np.ndarray  # (classes, rows, terms)
    weights: np.ndarray  # (classes, terms)


@dataclass(frozen=True)
class _AluSteps:
    """ALU steps (destination and source rows; no source: the immediate) and how they run (a
    batch's rows may be slices)."""

    dst: np.ndarray | slice
    src: np.ndarray | slice | None
    mode: _AluMode
    batches: tuple[slice, ...] = ()  # the ordered batches


@dataclass(frozen=True)
class _LoopPlan:
    """A GEMM or ALU instruction with given micro-ops, checked: its runs of steps, every row
    each operand reaches (in order), and the accumulator rows it writes. ``reusable``: the runs
    are a list (a short instruction), kept for the next execution with the same micro-ops;
    ``reached`` then holds each operand's row of every step, in order (for race reports)."""

    chunks: Iterable[_Reset | _Im2col | _GemmSteps | _AluSteps]
    touched: dict[Operand, np.ndarray | slice]
    rows: np.ndarray | slice  # a slice when they are consecutive
    reusable: bool
    reached: dict[Operand, np.ndarray] | None = None


def _plan_key(insn: GemmInsn | AluInsn) -> tuple[object, ...]:
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


#: The fields of the classes a plan is made of (what :func:`_freeze` walks)
_PLAN_PARTS: dict[type, tuple[str, ...]] = {
    kind: tuple(f.name for f in fields(kind))
    for kind in (_LoopPlan, _Reset, _Im2col, _GemmSteps, _AluSteps)
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


def _run_starts(values: np.ndarray) -> np.ndarray:
    """Where each run of equal neighbours in ``values`` starts (positions, ascending). Array
    methods and ufuncs only: numpy's Python-level helpers (``r_``, ``diff``, ``flatnonzero``)
    cost more than the work on a few thousand values."""
    change = np.empty(len(values), dtype=bool)
    change[:1] = True
    np.not_equal(values[1:], values[:-1], out=change[1:])
    return change.nonzero()[0]


def _gemm_steps(dst: np.ndarray, src: np.ndarray, wgt: np.ndarray) -> _Im2col | _GemmSteps:
    return _im2col_steps(dst, src, wgt) or _weight_groups(dst, src, wgt)


def _im2col_steps(dst: np.ndarray, src: np.ndarray, wgt: np.ndarray) -> _Im2col | None:
    """The steps as equal classes of accumulator rows that multiply the same weight rows (in
    some order), or None when the rows receive unequal numbers of products or fall into classes
    of unequal sizes."""
    order = np.argsort(dst, kind="stable")
    ordered = dst[order]
    starts = _run_starts(ordered)
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
    return _Im2col(
        rows[by_class].reshape(shape), sources[by_class].reshape(*shape, -1), weights[first]
    )


def _weight_groups(dst: np.ndarray, src: np.ndarray, wgt: np.ndarray) -> _GemmSteps:
    order = np.argsort(wgt, kind="stable")
    sorted_wgt = wgt[order]
    starts = _run_starts(sorted_wgt)
    sizes = np.append(starts[1:], len(order)) - starts
    uniform = bool((sizes == sizes[0]).all())
    return _GemmSteps(dst[order], src[order], sorted_wgt[starts], sizes, uniform)


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
