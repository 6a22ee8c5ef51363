"""Random *valid* programs from a seed: for differential tests between any two levels.

``random_program(cfg, seed)`` draws a sequence of operations (2-D loads of every memory type with
random padding and strides, GEMM and ALU over random micro-op kernels with up to two loops,
stores, reloads of stored data), then stores every bit of the accumulator rows it used, and
emits it all through :class:`~isa.ProgramBuilder`. It keeps
its own vector clocks over the operations and, before an operation that conflicts with an
earlier one of another module that nothing orders yet (a shared SRAM row or DRAM byte, one side
writing), inserts a token chain from that module. So the program is token-correct and
race-free, yet the modules run concurrently wherever the data allow; every token's push
precedes its pop in program order, so no command-queue depth can deadlock it.

The same seed gives the same program, for the tiny and the default configuration alike. ALU
operations are drawn from ``cfg.alu_ops``: no MUL for a configuration without a multiplier.
"""

from __future__ import annotations

import functools
import itertools
import random
from dataclasses import dataclass, field

import numpy as np

from isa import (
    AccelConfig,
    DramBuffer,
    Kernel,
    Loop,
    MemId,
    Program,
    ProgramBuilder,
    Stage,
    Uop,
)
from tests.conformance.common import store_acc_planes

__all__ = ["random_program"]

# SRAM rows the generator uses (fewer where a buffer is shallower), so that operations collide.
_ROWS = {MemId.INP: 24, MemId.WGT: 8, MemId.ACC: 24}
_OUT_ELEMS = 24


@dataclass
class _Op:
    """An emitted operation: its module, sequence number there, and what it touches."""

    stage: Stage
    seq: int
    reads: dict[str, set[int]] = field(default_factory=dict)
    writes: dict[str, set[int]] = field(default_factory=dict)

    def conflicts(self, reads: dict[str, set[int]], writes: dict[str, set[int]]) -> bool:
        def meet(a: dict[str, set[int]], b: dict[str, set[int]]) -> bool:
            return any(a[space] & b.get(space, set()) for space in a)

        return meet(self.writes, reads) or meet(self.writes, writes) or meet(self.reads, writes)


class _Generator:
    def __init__(self, cfg: AccelConfig, seed: int) -> None:
        self.cfg = cfg
        self.rng = random.Random(seed)
        self.b = ProgramBuilder(cfg)
        self.clock = {stage: [0] * len(Stage) for stage in Stage}
        self.ops: list[_Op] = []
        self.rows = {mem: min(n, cfg.buffer_depth(mem)) for mem, n in _ROWS.items()}
        # The accumulator rows used, and below them room to store each one's planes.
        planes = cfg.acc_width // cfg.out_width
        self.rows[MemId.ACC] = min(_ROWS[MemId.ACC], cfg.acc_buff_depth // (1 + planes))
        data = np.random.default_rng(seed)

        def buffer(name: str, mem: MemId, elems: int, width: int) -> DramBuffer:
            shape = (elems, cfg.elem_bytes(mem) * 8 // width)
            values = data.integers(-(1 << (width - 1)), 1 << (width - 1), size=shape)
            return self.b.alloc(name, mem, elems, values.astype(f"<i{width // 8}"))

        self.inp = buffer("inp", MemId.INP, self.rows[MemId.INP], cfg.inp_width)
        self.wgt = buffer("wgt", MemId.WGT, self.rows[MemId.WGT], cfg.wgt_width)
        self.acc = buffer("acc", MemId.ACC, self.rows[MemId.ACC], cfg.acc_width)
        self.acc8 = buffer("acc8", MemId.ACC_8BIT, 12, 8)
        self.out = self.b.alloc("out", MemId.OUT, _OUT_ELEMS)

    # ------------------------------------------------------------------ ordering
    def _join(self, dest: Stage, source: Stage) -> None:
        self.clock[dest] = [
            max(a, b) for a, b in zip(self.clock[dest], self.clock[source], strict=True)
        ]

    def _chain(self, source: Stage, dest: Stage) -> None:
        """Order everything ``source`` has emitted before ``dest``'s next instruction."""
        path = [source, Stage.COMPUTE, dest] if abs(source - dest) == 2 else [source, dest]
        for a, b in itertools.pairwise(path):
            self.b.dep_push(a, b)
            self.b.dep_pop(a, b)
            self._join(b, a)

    def _emit(self, stage: Stage, reads: dict, writes: dict, action) -> None:
        for other in Stage:
            known = self.clock[stage][other - 1]
            unordered = [op for op in self.ops if op.stage == other and op.seq > known]
            if other != stage and any(op.conflicts(reads, writes) for op in unordered):
                self._chain(other, stage)
        action()
        self.clock[stage][stage - 1] += 1
        self.ops.append(_Op(stage, self.clock[stage][stage - 1], reads, writes))

    # ------------------------------------------------------------------ operations
    def fill(self) -> None:
        """Load every row the generator uses, so that no operation works on zeros."""
        for buffer, stage in (
            (self.inp, Stage.LOAD),
            (self.wgt, Stage.LOAD),
            (self.acc, Stage.COMPUTE),
        ):
            mem = buffer.memory_type
            rows = self.rows[mem]
            reads = {"DRAM": self._dram_bytes(buffer, mem, 0, 1, rows, rows)}
            writes = {mem.name: set(range(rows))} if stage is Stage.LOAD else {}
            load = functools.partial(self.b.load_2d, buffer, sram=0, y_size=1, x_size=rows)
            self._emit(stage, reads, writes, load)

    def _dram_bytes(self, buffer: DramBuffer, mem: MemId, offset, y_size, x_size, stride):
        size = self.cfg.elem_bytes(mem)
        start = buffer.address + offset * size
        return {
            start + (y * stride + x) * size + i
            for y in range(y_size)
            for x in range(x_size)
            for i in range(size)
        }

    def _transfer_shape(self, elems: int, max_rows: int, pad: bool):
        """(y_size, x_size, x_stride, offset, pads) of a 2-D transfer within ``elems``."""
        rng = self.rng
        pad_max = min(2, (1 << self.cfg.mem_pad_bits) - 1) if pad else 0
        for _ in range(20):
            y_size, x_size = rng.randint(0 if pad else 1, 3), rng.randint(1, 4)
            stride = x_size + rng.choice([0, 0, 1, 2, -1])
            pads = [rng.randint(0, pad_max) for _ in range(4)]
            rows = (pads[0] + y_size + pads[1]) * (pads[2] + x_size + pads[3])
            span = (y_size - 1) * stride + x_size if y_size else 0
            if stride >= 1 and span <= elems and rows <= max_rows:
                return y_size, x_size, stride, rng.randint(0, elems - span), pads, rows
        return None

    def load(self) -> None:
        cfg, rng = self.cfg, self.rng
        reload_inp = cfg.inp_elem_bytes == cfg.out_elem_bytes
        mem = rng.choice([MemId.INP, MemId.WGT, MemId.ACC, MemId.ACC_8BIT])
        buffer = {MemId.INP: self.inp, MemId.WGT: self.wgt, MemId.ACC: self.acc}.get(mem)
        if mem is MemId.ACC_8BIT or (mem is MemId.INP and reload_inp and rng.random() < 0.3):
            buffer = self.out if mem is MemId.INP or rng.random() < 0.5 else self.acc8
        space_rows = self.rows[MemId.ACC if mem is MemId.ACC_8BIT else mem]
        shape = self._transfer_shape(buffer.nbytes // cfg.elem_bytes(mem), space_rows, True)
        if shape is None:
            return
        y_size, x_size, stride, offset, (y0, y1, x0, x1), rows = shape
        sram = rng.randint(0, space_rows - rows)
        stage = Stage.LOAD if mem in (MemId.INP, MemId.WGT) else Stage.COMPUTE
        reads = {"DRAM": self._dram_bytes(buffer, mem, offset, y_size, x_size, stride)}
        writes = {mem.name: set(range(sram, sram + rows))} if stage is Stage.LOAD else {}
        self._emit(
            stage,
            reads,
            writes,
            lambda: self.b.load_2d(
                buffer,
                sram=sram,
                y_size=y_size,
                x_size=x_size,
                x_stride=stride,
                offset=offset,
                y_pad_0=y0,
                y_pad_1=y1,
                x_pad_0=x0,
                x_pad_1=x1,
                memory_type=mem,
            ),
        )

    def store(self) -> None:
        shape = self._transfer_shape(_OUT_ELEMS, self.rows[MemId.ACC], False)
        if shape is None:
            return
        y_size, x_size, stride, offset, _, rows = shape
        sram = self.rng.randint(0, self.rows[MemId.ACC] - rows)
        reads = {"OUT": set(range(sram, sram + rows))}
        writes = {"DRAM": self._dram_bytes(self.out, MemId.OUT, offset, y_size, x_size, stride)}
        self._emit(
            Stage.STORE,
            reads,
            writes,
            lambda: self.b.store_2d(
                self.out, sram=sram, y_size=y_size, x_size=x_size, x_stride=stride, offset=offset
            ),
        )

    def _kernel(self, src_rows: int, wgt_rows: int, reads_src: bool, reads_dst: bool):
        """A random kernel inside the generator's regions that keeps the accumulator window
        (checked here from SEMANTICS, independently of the builder), and its steps."""
        rng = self.rng
        acc_rows = self.rows[MemId.ACC]
        while True:
            uops = [
                Uop(
                    dst_idx=rng.randrange(acc_rows),
                    src_idx=rng.randrange(src_rows),
                    wgt_idx=rng.randrange(wgt_rows),
                )
                for _ in range(rng.randint(1, 4))
            ]
            loops = [
                Loop(
                    rng.randint(1, 3),
                    dst_factor=rng.randint(0, 3),
                    src_factor=rng.randint(0, 2),
                    wgt_factor=rng.randint(0, 1) if wgt_rows > 1 else 0,
                )
                for _ in range(rng.randint(0, 2))
            ]
            outer, inner = ([Loop(1), Loop(1), *loops])[-2:]
            steps = [
                tuple(
                    getattr(u, f"{name}_idx")
                    + i0 * getattr(outer, f"{name}_factor")
                    + i1 * getattr(inner, f"{name}_factor")
                    for name in ("dst", "src", "wgt")
                )
                for i0 in range(outer.extent)
                for i1 in range(inner.extent)
                for u in uops
            ]
            limits = (acc_rows, src_rows, wgt_rows)
            inside = all(v < n for step in steps for v, n in zip(step, limits, strict=True))
            if inside and self._keeps_window(steps, reads_src, reads_dst):
                return Kernel(tuple(uops), tuple(loops)), steps

    def _keeps_window(self, steps, reads_src: bool, reads_dst: bool) -> bool:
        window = self.cfg.acc_raw_window
        for k, (_, src, dst_read) in enumerate((d, s, d) for d, s, _ in steps):
            recent = {steps[j][0] for j in range(max(0, k - window), k)}
            if (reads_dst and dst_read in recent) or (reads_src and src in recent):
                return False
        return True

    def gemm(self) -> None:
        reset = self.rng.random() < 0.2
        rows = self.rows
        kernel, steps = self._kernel(rows[MemId.INP], rows[MemId.WGT], False, not reset)
        reads = {} if reset else {"INP": {s for _, s, _ in steps}, "WGT": {w for *_, w in steps}}
        writes = {"OUT": {d for d, _, _ in steps}}
        self._emit(Stage.COMPUTE, reads, writes, lambda: self.b.gemm(kernel, reset=reset))

    def alu(self) -> None:
        rng, cfg = self.rng, self.cfg
        op = rng.choice(cfg.alu_ops)  # no MUL where the configuration has no multiplier
        imm = None
        if rng.random() < 0.5:
            bits = cfg.alu_imm_bits
            wide = rng.randint(-(1 << (bits - 1)), (1 << (bits - 1)) - 1)
            imm = wide if rng.random() < 0.5 else rng.randint(-cfg.acc_width, cfg.acc_width + 8)
        reset = rng.random() < 0.1
        reads_src = imm is None and not reset
        kernel, steps = self._kernel(self.rows[MemId.ACC], 1, reads_src, True)
        writes = {"OUT": {d for d, _, _ in steps}}
        self._emit(Stage.COMPUTE, {}, writes, lambda: self.b.alu(kernel, op, imm=imm, reset=reset))


def random_program(cfg: AccelConfig, seed: int, *, operations: int | None = None) -> Program:
    """A random valid program for ``cfg`` (see the module docstring); DRAM needs
    ``program.dram_extent`` bytes."""
    gen = _Generator(cfg, seed)
    count = operations if operations is not None else gen.rng.randint(4, 16)
    gen.fill()
    actions = [gen.load, gen.load, gen.gemm, gen.alu, gen.alu, gen.store]
    for _ in range(count):
        gen.rng.choice(actions)()
    rows = gen.rows[MemId.ACC]  # finally, every bit of the accumulator rows becomes visible
    store_acc_planes(gen.b, rows, first=0, scratch=rows, name="planes")
    return gen.b.finish()
