"""``insert_tokens``: the dependency tokens that order every reuse of a shared SRAM row.

TVM's ``CoProcSync`` inserts a push/pop pair wherever the module changes between consecutive
statements of a loop body, conservatively. Here the stream is known exactly (the emitter
has run every loop), so the tokens are derived from the rows each operation touches: an
operation that reads a row of INP, WGT or OUT another module last wrote (read after write), or
writes a row another module has read or written since (write after read / write), must wait
for that operation. If happens-before (program order within a module plus the tokens placed so
far, tracked with vector clocks) does not already order them, the earlier operation pushes a
token toward the later one's module and the later one pops it.

The result is the fewest waits that make the program race-free: with virtual threads, one
thread's loads wait only for the compute that last read *their* rows, so they overlap the other
thread's compute (latency hiding). Tokens are matched first-in first-out; a new push is always
later in its module than every earlier push of the same counter (an earlier one would already
order the pair), so each pop meets the push it was placed for. Every wait points backwards in
program order, so the stream cannot deadlock whatever the queues' depth.
"""

from __future__ import annotations

import numpy as np

from compiler.accel.stream import SHARED, KernelRows
from compiler.errors import CompileError
from isa import AccelConfig, Stage, token_between

__all__ = ["insert_tokens"]


def insert_tokens(cfg: AccelConfig, ops: list) -> list[tuple[set[Stage], set[Stage]]]:
    """For each operation of ``ops``, (the modules it pops a token from, the modules it
    pushes one to)."""
    depth = {mem: cfg.buffer_depth(mem) for mem in SHARED}
    last_write = {mem: np.full(depth[mem], -1, dtype=np.int64) for mem in SHARED}
    last_read = {
        (mem, stage): np.full(depth[mem], -1, dtype=np.int64) for mem in SHARED for stage in Stage
    }
    width = max(Stage) + 1  # clocks are indexed by the Stage values
    clocks = np.full((len(ops), width), -1, dtype=np.int64)
    latest = dict.fromkeys(Stage, -1)  # each module's last operation so far
    last_push: dict[tuple[Stage, Stage], int] = {}
    tokens: list[tuple[set[Stage], set[Stage]]] = [(set(), set()) for _ in ops]
    stages = [op.stage for op in ops]
    kernel_rows = KernelRows()
    for index, op in enumerate(ops):
        stage = stages[index]
        clock = clocks[latest[stage]].copy() if latest[stage] >= 0 else np.full(width, -1)
        clock[stage] = index
        reads, writes = op.accesses(kernel_rows)
        waits: dict[Stage, int] = {}
        for mem, rows in reads:
            _wait_for(last_write[mem][rows], stage, stages, waits)
        for mem, rows in writes:
            _wait_for(last_write[mem][rows], stage, stages, waits)
            for other in Stage:
                if other is not stage:
                    _wait_for(last_read[(mem, other)][rows], stage, stages, waits)
        for other, producer in waits.items():
            if clock[other] >= producer:
                continue  # already ordered
            if token_between(other, stage) is None:
                raise CompileError(
                    f"operation {index} ({op}) must wait for {producer} ({ops[producer]}), "
                    "but their modules share no token",
                    op="insert_tokens",
                )
            if last_push.get((other, stage), -1) >= producer:
                raise AssertionError("token order: an earlier push would already order these")
            last_push[(other, stage)] = producer
            tokens[producer][1].add(stage)
            tokens[index][0].add(other)
            np.maximum(clock, clocks[producer], out=clock)
        clocks[index] = clock
        latest[stage] = index
        for mem, rows in reads:
            last_read[(mem, stage)][rows] = index
        for mem, rows in writes:
            last_write[mem][rows] = index
    return tokens


def _wait_for(
    candidates: np.ndarray, stage: Stage, stages: list[Stage], waits: dict[Stage, int]
) -> None:
    """Record, per other module, the latest of the operations ``candidates`` names."""
    for other in np.unique(candidates[candidates >= 0]):
        other_stage = stages[other]
        if other_stage is not stage:
            waits[other_stage] = max(waits.get(other_stage, -1), int(other))
