"""The ``inject_virtual_thread`` pass: virtual threads become interleaved instruction streams.

TVM's ``InjectVirtualThread`` for the accelerator: a loop run as virtual threads
(``s[x].vthread(axis)`` or ``bind(axis, te.thread_axis("cthread"))``) is pushed inward through
sequences, allocations and loops down to each accelerator statement (a transfer, or a nest of
compute steps: one micro-op kernel), which is replicated once per thread. Every SRAM buffer
allocated inside the loop is replicated too (one copy per thread: double buffering), so the
threads' loads, computes and stores touch different rows and interleave into one stream, which
lets one thread's transfers overlap another's compute once the dependency tokens are inserted.

Consecutive statements of one module are replicated as a run (thread 0's run, then thread 1's),
so a thread's results reach the next module as soon as its run is done while that module works
on the other thread. Before that, loads are hoisted above the independent compute statements
before them (into the allocation they fill), so that a thread's loads form one run and its
compute (a reduction's reset, then its GEMMs) another: one thread's loads never wait in the
load queue behind the other's.

The threads must be independent: an SRAM buffer allocated outside the loop and written inside it
would be shared, which is a CompileError. A statement that does not depend on the thread runs
once per thread, in order, as the loop would.
"""

from __future__ import annotations

from dataclasses import replace

from compiler.accel.rows import perfect_nest
from compiler.accel.stmts import ComputeStep, Dma, SramRow, buffer_rows, transfer_module
from compiler.arith import simplify_expr
from compiler.errors import CompileError
from compiler.expr import Const, DType, Var
from compiler.loop_ir import Allocate, AttrStmt, Buffer, For, ForKind, LoweredFunc, Seq, Stmt, seq
from compiler.visit import free_vars, substitute, transform, walk
from isa import Opcode, Stage

__all__ = ["inject_virtual_thread"]


def inject_virtual_thread(func: LoweredFunc) -> LoweredFunc:
    """``func`` with every virtual-thread loop interleaved (module docstring)."""

    def inject(node: object) -> object:
        if isinstance(node, For) and node.kind is ForKind.VTHREAD:
            return _inject(node.var, node.extent, node.body)
        return None

    return LoweredFunc(func.name, func.params, transform(func.body, inject))


def _inject(var: Var, threads: int, body: Stmt) -> Stmt:
    local = {n.buffer for n in walk(body) if isinstance(n, Allocate)}
    _check_shared(var, body, local)
    copies = {b: Buffer(b.name, (threads, *b.shape), b.dtype, b.scope) for b in local}

    def replicate(node: object) -> object:
        if isinstance(node, SramRow) and node.buffer in copies:
            index = simplify_expr(node.index + var * buffer_rows(node.buffer))
            return SramRow(copies[node.buffer], index)
        if isinstance(node, Allocate) and node.buffer in copies:
            return Allocate(copies[node.buffer], node.body)
        return None

    return _push(var, threads, transform(body, replicate))


def _check_shared(var: Var, body: Stmt, local: set[Buffer]) -> None:
    for node in walk(body):
        written = None
        if isinstance(node, ComputeStep):
            written = node.dst
        elif isinstance(node, Dma) and node.opcode is Opcode.LOAD:
            written = node.sram
        if written is not None and written.buffer not in local:
            raise CompileError(
                f"the virtual threads of loop {var.name!r} would share {written.buffer.name!r}, "
                "which they write: compute it inside the virtual-thread loop",
                tensor=node.stage,
            )


def _module(stmt: Stmt) -> Stage | None:
    """The module that runs ``stmt`` when it is one transfer or a loop nest of compute steps
    only (one future micro-op kernel); None for anything larger."""
    if isinstance(stmt, Dma):
        return transfer_module(stmt.opcode, stmt.mem)
    if isinstance(stmt, ComputeStep):
        return Stage.COMPUTE
    if isinstance(stmt, For) and not any(isinstance(n, Seq | Allocate) for n in walk(stmt)):
        return _module(perfect_nest(stmt)[1])
    return None


def _push(var: Var, threads: int, stmt: Stmt) -> Stmt:
    if var not in free_vars(stmt):
        return For(var, threads, ForKind.SERIAL, stmt)
    if isinstance(stmt, Seq):
        stmts = _hoist_loads(_sink_into_allocations(_flatten(stmt)))
        return seq(*(_push_run(var, threads, run) for run in _runs(stmts)))
    if isinstance(stmt, Allocate | AttrStmt):
        return replace(stmt, body=_push(var, threads, stmt.body))
    if isinstance(stmt, For) and _module(stmt) is None:
        return replace(stmt, body=_push(var, threads, stmt.body))
    return _push_run(var, threads, [stmt])


def _flatten(stmt: Stmt) -> list[Stmt]:
    """The statements of nested sequences (left by removed allocations), in order."""
    if isinstance(stmt, Seq):
        return [part for inner in stmt.stmts for part in _flatten(inner)]
    return [stmt]


def _touches(stmt: Stmt, buffer: Buffer) -> bool:
    return any(isinstance(n, SramRow) and n.buffer is buffer for n in walk(stmt))


def _sink_into_allocations(stmts: list[Stmt]) -> list[Stmt]:
    """The accelerator statements just before an allocation (which cannot touch it), moved to
    the start of its body: one sequence then holds a thread's loads into several buffers (a run)
    and the compute that the loads inside can be hoisted above."""
    out: list[Stmt] = []
    for stmt in stmts:
        moved: list[Stmt] = []
        if isinstance(stmt, Allocate):
            while out and _module(out[-1]) is not None and not _touches(out[-1], stmt.buffer):
                moved.insert(0, out.pop())
        out.append(Allocate(stmt.buffer, seq(*moved, stmt.body)) if moved else stmt)
    return out


def _hoist_loads(stmts: list[Stmt]) -> list[Stmt]:
    """Each load moved before the compute statements just before it that do not read its
    rows: a thread's loads are issued first, and its compute stays one run."""
    out: list[Stmt] = []
    for stmt in stmts:
        position = len(out)
        if _module(stmt) is Stage.LOAD:
            target = perfect_nest(stmt)[1].sram.buffer
            while (
                position > 0
                and _module(out[position - 1]) is Stage.COMPUTE
                and not _touches(out[position - 1], target)
            ):
                position -= 1
        out.insert(position, stmt)
    return out


def _runs(stmts: tuple[Stmt, ...]) -> list[list[Stmt]]:
    """``stmts`` in runs: consecutive statements one module runs stay together."""
    runs: list[list[Stmt]] = []
    previous = None
    for stmt in stmts:
        module = _module(stmt)
        if module is not None and module is previous and runs:
            runs[-1].append(stmt)
        else:
            runs.append([stmt])
        previous = module
    return runs


def _push_run(var: Var, threads: int, run: list[Stmt]) -> Stmt:
    """A run of one module's statements, once per thread: each thread's whole run before the
    next thread's, so that the other modules can start on a thread's results while this one
    works on the next thread's. Larger statements are pushed into."""
    if len(run) == 1 and _module(run[0]) is None:
        return _push(var, threads, run[0])
    return seq(
        *(substitute(stmt, {var: Const(t, DType.INT32)}) for t in range(threads) for stmt in run)
    )
