"""What each instruction does to the state and DRAM (SEMANTICS sections 3-6), vectorised.

Every instruction is validated completely (SRAM rows, DRAM bytes, micro-op range, row indices,
the accumulator window, races) before anything is written, so a failing instruction writes
nothing.

GEMM and ALU instructions run the steps their plan (:mod:`simulator.loop_plans`) prepared, as
numpy arrays: GEMM products are summed into the accumulator exactly, and wrapping once at the
end equals wrapping every step, modulo ``2**acc_width``.
"""

from __future__ import annotations

from collections.abc import Sequence
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
)
from simulator.errors import SimulationError
from simulator.events import AluEvent, Event, FinishEvent, GemmEvent, LoadEvent, StoreEvent
from simulator.exact import exact_matmul
from simulator.loop_plans import (
    AT_UFUNCS,
    AluMode,
    AluSteps,
    GemmSteps,
    Im2col,
    LoopPlanner,
    Reset,
    Steps,
    run_starts,
)
from simulator.races import Access, RaceDetector, Space
from simulator.state import DeviceState, alu_apply, signed_dtype, wrap

__all__ = ["Executor"]

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
        self._planner = LoopPlanner(cfg)

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
        plan = self._planner.plan(index, insn, self.state.uop[insn.uop_bgn : insn.uop_end])
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

    def _run_steps(self, insn: GemmInsn | AluInsn, steps: Steps) -> None:
        if isinstance(steps, Reset):
            self.state.acc[steps.dst] = 0
        elif isinstance(steps, Im2col):
            self._im2col(steps)
        elif isinstance(steps, GemmSteps):
            self._gemm(steps)
        else:
            assert isinstance(insn, AluInsn), "ALU steps come from an ALU instruction"
            self._alu(insn, steps)

    def _alu(self, insn: AluInsn, steps: AluSteps) -> None:
        dst, src = steps.dst, steps.src
        if steps.mode is AluMode.BATCH:
            self._alu_batch(insn, dst, src)
            return
        # the other modes index rows one by one: arrays (module docstring)
        assert isinstance(dst, np.ndarray) and not isinstance(src, slice)
        if steps.mode is AluMode.AT:
            self._alu_at(insn, dst, src)
        else:
            for batch in steps.batches:
                self._alu_batch(insn, dst[batch], None if src is None else src[batch])

    def _gemm(self, steps: GemmSteps) -> None:
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

    def _im2col(self, steps: Im2col) -> None:
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
        AT_UFUNCS[insn.alu_opcode].at(acc, dst, x)
        rows = np.unique(dst)
        acc[rows] = wrap(acc[rows], self.cfg.acc_width)


def _accumulate(acc: np.ndarray, rows: np.ndarray, values: np.ndarray) -> None:
    """``acc[rows[i]] += values[i]`` for every ``i``, rows repeating (``np.add.at``'s meaning):
    the values of each row summed first, in one sort and one segmented reduction."""
    order = np.argsort(rows, kind="stable")
    ordered = rows[order]
    starts = run_starts(ordered)
    if len(starts) == len(rows):  # no row repeats
        acc[rows] += values
        return
    acc[ordered[starts]] += np.add.reduceat(values[order], starts, axis=0)
