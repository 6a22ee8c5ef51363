"""GPU kernels in the loop IR: the block barrier, the barrier-insertion pass and the launch check.

A lowered GPU function is a kernel: every thread of every block runs the whole body, and a loop
bound to a grid axis (``For`` of kind ``THREAD_BINDING``, ``thread`` = ``"blockIdx.x"``...) is
not a loop but the binding of its variable to that index. Loops of different stages bound to the
same tag therefore mean the same index, and must have the same extent.

:func:`insert_barriers` (a pass of :data:`compiler.lower.GPU_PIPELINE`) puts a :class:`Barrier`
between each fill of a shared buffer and the first statement after it that reads the buffer,
and between the reads of a buffer and a later fill of it (in a loop: the previous iteration's
reads), so that no thread reads a tile before it is complete or overwrites one others still
read; one barrier serves every buffer it separates.
:func:`launch_config` checks a kernel against a target's limits and returns its grid and block
extents; every violation raises a :class:`CompileError` naming the loop or buffer concerned.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import ClassVar

from compiler.errors import CompileError
from compiler.expr import Binary, BinOp, Expr, Var
from compiler.loop_ir import (
    Allocate,
    AttrStmt,
    Buffer,
    For,
    ForKind,
    IfThenElse,
    Load,
    LoweredFunc,
    Scope,
    Seq,
    Stmt,
    Store,
    seq,
)
from compiler.te import ThreadTag
from compiler.visit import children, free_vars, walk

__all__ = [
    "BLOCK_TAGS",
    "THREAD_TAGS",
    "Barrier",
    "LaunchConfig",
    "insert_barriers",
    "launch_config",
]

BLOCK_TAGS = (ThreadTag.BLOCK_X, ThreadTag.BLOCK_Y, ThreadTag.BLOCK_Z)
THREAD_TAGS = (ThreadTag.THREAD_X, ThreadTag.THREAD_Y, ThreadTag.THREAD_Z)
#: CUDA's per-dimension limits on the block's extents (x, y, z).
_BLOCK_DIM_LIMITS = (1024, 1024, 64)


@dataclass(frozen=True)
class Barrier(Stmt):
    """Every thread of the block waits here until all have arrived (CUDA's
    ``__syncthreads()``); shared-memory writes before it are visible after it."""

    children: ClassVar = ()

    def describe(self, _: Callable[..., str]) -> str:
        return "barrier"


# ---------------------------------------------------------------------------------- barriers
def _shared_writes(stmt: Stmt) -> set[Buffer]:
    return {n.buffer for n in walk(stmt) if isinstance(n, Store) and n.buffer.scope is Scope.SHARED}


def _shared_reads(stmt: Stmt) -> set[Buffer]:
    return {n.buffer for n in walk(stmt) if isinstance(n, Load) and n.buffer.scope is Scope.SHARED}


class _Syncer:
    """One in-order walk placing the barriers (one serves every buffer it separates).

    ``pending``: shared buffers filled since the last barrier (a read of one needs a barrier
    first); ``since``: shared buffers read since the last barrier, ``None`` at the top of a loop
    body, where the previous iteration's reads of ``loop_reads`` may still be under way (a fill
    of one of those needs a barrier first).
    """

    def __init__(self) -> None:
        self.pending: set[Buffer] = set()
        self.since: set[Buffer] | None = set()
        self.loop_reads: set[Buffer] = set()

    def _barrier(self) -> Barrier:
        self.pending, self.since = set(), set()
        return Barrier()

    def visit(self, stmt: Stmt) -> Stmt:
        if isinstance(stmt, Seq):
            return seq(*(self.visit(part) for part in stmt.stmts))
        if isinstance(stmt, Allocate):
            return Allocate(stmt.buffer, self.visit(stmt.body))
        if isinstance(stmt, AttrStmt):
            return AttrStmt(stmt.key, stmt.value, self.visit(stmt.body))
        writes, reads = _shared_writes(stmt), _shared_reads(stmt)
        if isinstance(stmt, IfThenElse) and writes & reads:
            return self._branch(stmt)
        if isinstance(stmt, For) and writes & reads:  # fills and their readers inside
            if stmt.kind is ForKind.THREAD_BINDING:  # not a loop: an index binding
                return For(stmt.var, stmt.extent, stmt.kind, self.visit(stmt.body), stmt.thread)
            return self._loop(stmt, reads)
        before = bool(reads & self.pending)  # read after write
        if writes:  # write after read
            before |= bool(writes & (self.loop_reads if self.since is None else self.since))
        out = [self._barrier()] if before else []
        self.pending |= writes
        if self.since is not None:
            self.since |= reads
        return seq(*out, stmt)

    def _state(self) -> tuple[set[Buffer], set[Buffer] | None]:
        return set(self.pending), None if self.since is None else set(self.since)

    def _branch(self, stmt: IfThenElse) -> Stmt:
        """Each branch from the state before it; after it, what either may have left."""
        start = self._state()
        then = self.visit(stmt.then)
        pending, since = self._state()
        self.pending, self.since = start
        otherwise = None if stmt.otherwise is None else self.visit(stmt.otherwise)
        self.pending |= pending
        self.since = None if self.since is None or since is None else self.since | since
        return IfThenElse(stmt.cond, then, otherwise)

    def _loop(self, loop: For, reads: set[Buffer]) -> Stmt:
        out = [self._barrier()] if reads & self.pending else []
        outer_reads, self.loop_reads, self.since = self.loop_reads, reads, None
        body = self.visit(loop.body)
        if self.pending & reads:  # read again in the next iteration
            body = seq(body, self._barrier())
        self.loop_reads = outer_reads
        return seq(*out, For(loop.var, loop.extent, loop.kind, body, loop.thread))


def _has_barrier(stmt: Stmt) -> bool:
    return any(isinstance(n, Barrier) for n in walk(stmt))


def _distribute(cond: Expr, stmt: Stmt) -> Stmt:
    """``if cond: stmt`` with the condition pushed below the barriers and off the shared-memory
    fills (which every thread must run: each copies its share of the tile)."""
    if isinstance(stmt, Barrier):
        return stmt
    if isinstance(stmt, Seq):
        return seq(*(_distribute(cond, part) for part in stmt.stmts))
    if not _has_barrier(stmt) and not isinstance(stmt, Allocate | AttrStmt):
        stores = {n.buffer for n in walk(stmt) if isinstance(n, Store)}
        fill = stores and all(buffer.scope is Scope.SHARED for buffer in stores)
        return stmt if fill else IfThenElse(cond, stmt)
    if isinstance(stmt, For):
        body = _distribute(cond, stmt.body)
        return For(stmt.var, stmt.extent, stmt.kind, body, stmt.thread)
    if isinstance(stmt, Allocate):
        return Allocate(stmt.buffer, _distribute(cond, stmt.body))
    if isinstance(stmt, AttrStmt):
        return AttrStmt(stmt.key, stmt.value, _distribute(cond, stmt.body))
    if isinstance(stmt, IfThenElse) and stmt.otherwise is None:
        return _distribute(Binary(BinOp.AND, cond, stmt.cond), stmt.then)
    return IfThenElse(cond, stmt)  # left for launch_config to report


def _converge(stmt: Stmt, thread_vars: frozenset[Var]) -> Stmt:
    """Every barrier made reachable by all threads: a guard that depends on the thread (a
    split's tail) is distributed over the statements around the barriers it encloses."""
    if isinstance(stmt, For):
        if stmt.kind is ForKind.THREAD_BINDING and ThreadTag(stmt.thread) in THREAD_TAGS:
            thread_vars = thread_vars | {stmt.var}
        body = _converge(stmt.body, thread_vars)
        return For(stmt.var, stmt.extent, stmt.kind, body, stmt.thread)
    if isinstance(stmt, IfThenElse):
        then = _converge(stmt.then, thread_vars)
        divergent = free_vars(stmt.cond) & thread_vars
        if divergent and stmt.otherwise is None and _has_barrier(then):
            return _distribute(stmt.cond, then)
        otherwise = None if stmt.otherwise is None else _converge(stmt.otherwise, thread_vars)
        return IfThenElse(stmt.cond, then, otherwise)
    if isinstance(stmt, Seq):
        return seq(*(_converge(part, thread_vars) for part in stmt.stmts))
    if isinstance(stmt, Allocate):
        return Allocate(stmt.buffer, _converge(stmt.body, thread_vars))
    if isinstance(stmt, AttrStmt):
        return AttrStmt(stmt.key, stmt.value, _converge(stmt.body, thread_vars))
    return stmt


def insert_barriers(func: LoweredFunc) -> LoweredFunc:
    """``func`` with a :class:`Barrier` between every shared-memory fill and its readers, and
    between readers and a later fill (see the module docstring); tail guards that depend on the
    thread are then distributed so that every thread reaches every barrier and runs its share
    of every fill."""
    body = _Syncer().visit(func.body)
    return LoweredFunc(func.name, func.params, _converge(body, frozenset()))


# ------------------------------------------------------------------------------------ launch
@dataclass(frozen=True)
class LaunchConfig:
    """A kernel's launch: ``grid`` and ``block`` extents (x, y, z) and static shared bytes."""

    grid: tuple[int, int, int]
    block: tuple[int, int, int]
    shared_bytes: int

    @property
    def threads_per_block(self) -> int:
        x, y, z = self.block
        return x * y * z


class _Checker:
    """One walk over a kernel: each tag's extent, each parameter store's enclosing tags."""

    def __init__(self, func: LoweredFunc) -> None:
        self.params = set(func.params)
        self.extents: dict[ThreadTag, tuple[str, int]] = {}
        self.stores: list[tuple[Store, frozenset[ThreadTag]]] = []

    def visit(self, stmt: Stmt, bound: frozenset[ThreadTag], thread_vars: frozenset) -> None:
        if isinstance(stmt, For):
            if stmt.kind is ForKind.THREAD_BINDING:
                tag = ThreadTag(stmt.thread)
                self._extent(tag, stmt)
                if tag in THREAD_TAGS:
                    thread_vars = thread_vars | {stmt.var}
                self.visit(stmt.body, bound | {tag}, thread_vars)
                return
            if stmt.kind is ForKind.PARALLEL:
                raise CompileError(
                    "a parallel loop inside a GPU kernel: bind it to blockIdx/threadIdx instead",
                    axis=stmt.var.name,
                )
        elif isinstance(stmt, IfThenElse):
            self._divergence(stmt, thread_vars)
        elif isinstance(stmt, Store) and stmt.buffer in self.params:
            self.stores.append((stmt, bound))
        elif isinstance(stmt, Allocate) and stmt.buffer.scope is Scope.GLOBAL and not thread_vars:
            raise CompileError(
                "is an intermediate in global memory outside the thread loops, which one GPU "
                "kernel cannot share between blocks: compute_inline it, or compute it at a "
                "loop in scope 'shared' or 'local'",
                tensor=stmt.buffer.name,
            )
        for child in children(stmt):
            if isinstance(child, Stmt):
                self.visit(child, bound, thread_vars)

    def _extent(self, tag: ThreadTag, loop: For) -> None:
        seen = self.extents.setdefault(tag, (loop.var.name, loop.extent))
        if seen[1] != loop.extent:
            raise CompileError(
                f"is bound to {tag.value} with extent {loop.extent}, but loop {seen[0]!r} is "
                f"bound to it with extent {seen[1]}: loops bound to one thread axis must have "
                "the same extent",
                axis=loop.var.name,
            )

    @staticmethod
    def _divergence(stmt: IfThenElse, thread_vars: frozenset) -> None:
        divergent = sorted(v.name for v in free_vars(stmt.cond) & thread_vars)
        if divergent and any(isinstance(n, Barrier) for n in walk(stmt)):
            raise CompileError(
                f"a barrier under a condition that depends on the thread ({', '.join(divergent)}):"
                " not every thread would reach it (make the thread split divide its extent)",
                axis=divergent[0],
            )


def launch_config(func: LoweredFunc, max_threads: int, max_shared_bytes: int) -> LaunchConfig:
    """The grid and block of the kernel ``func``, checked: one extent per bound tag, at most
    ``max_threads`` threads per block (and CUDA's per-axis limits), at most
    ``max_shared_bytes`` of shared memory, and every store to a global buffer made under every
    launched tag (else several threads would write the same element)."""
    checker = _Checker(func)
    checker.visit(func.body, frozenset(), frozenset())
    extents, launched = checker.extents, checker.stores
    if not any(tag in extents for tag in BLOCK_TAGS + THREAD_TAGS):
        raise CompileError(
            "no loop is bound to blockIdx or threadIdx: a GPU kernel would run the whole "
            "computation in one thread (bind the outer loops with s[C].bind)",
            op=func.name,
        )
    grid = tuple(extents.get(tag, ("", 1))[1] for tag in BLOCK_TAGS)
    block = tuple(extents.get(tag, ("", 1))[1] for tag in THREAD_TAGS)
    threads = block[0] * block[1] * block[2]
    if threads > max_threads:
        raise CompileError(
            f"{threads} threads per block ({' x '.join(map(str, block))}) exceed the target's "
            f"{max_threads}",
            op=func.name,
        )
    for tag, extent, limit in zip(THREAD_TAGS, block, _BLOCK_DIM_LIMITS, strict=True):
        if extent > limit:
            raise CompileError(
                f"{tag.value} has extent {extent}, above CUDA's {limit}",
                axis=extents[tag][0],
                op=func.name,
            )
    shared = [n.buffer for n in walk(func.body) if isinstance(n, Allocate)]
    shared = [b for b in shared if b.scope is Scope.SHARED]
    total = sum(b.size * b.dtype.bytes for b in shared)
    if total > max_shared_bytes:
        sizes = ", ".join(f"{b.name} {b.size * b.dtype.bytes} B" for b in shared)
        raise CompileError(
            f"{total} bytes of shared memory ({sizes}) exceed the target's {max_shared_bytes}",
            op=func.name,
        )
    everything = frozenset(extents)
    for store, tags in launched:
        missing = everything - tags
        if missing:
            names = ", ".join(sorted(t.value for t in missing))
            raise CompileError(
                f"is stored outside the loops bound to {names}: every thread along those axes "
                "would write the same elements (bind this stage's loops to them too)",
                tensor=store.buffer.name,
                op=func.name,
            )
    return LaunchConfig(grid, block, total)
