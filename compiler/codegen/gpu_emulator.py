"""The grid emulator: a lowered GPU kernel rewritten as a CPU function with the same results.

On a GPU every thread of every block runs the kernel body, a loop bound to a grid axis being the
binding of its variable to that index, and a :class:`~compiler.passes.gpu.Barrier` makes the
threads of a block wait for each other. :func:`emulation` turns that into sequential loop IR that
the LLVM CPU backend compiles: loops over the grid's blocks; inside each block, the kernel body
is cut at its barriers into *phases*, and each phase runs for every thread of the block before
the next begins (a loop that contains a barrier runs outside the thread loops, which is right
because a barrier may only be reached by all threads alike). Shared buffers are allocated once
per block; a thread's own buffers ("local" and other per-thread scopes) that live across a
barrier get one copy per thread, indexed by the thread's linear id, so thread-private values
survive from phase to phase. A barrier under a condition that differs between the threads of a
block raises :class:`CompileError` (on a GPU it would hang or be undefined).
"""

from __future__ import annotations

from compiler.errors import CompileError
from compiler.expr import Expr, Node, Var
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
from compiler.passes.gpu import BLOCK_TAGS, THREAD_TAGS, Barrier, LaunchConfig
from compiler.passes.simplify import simplify
from compiler.te import ThreadTag
from compiler.visit import free_vars, substitute, transform, walk

__all__ = ["emulation"]


def _has_barrier(stmt: Stmt) -> bool:
    return any(isinstance(n, Barrier) for n in walk(stmt))


class _Emulation:
    """The rewrite of one kernel for one launch (see the module docstring)."""

    def __init__(self, launch: LaunchConfig) -> None:
        self.launch = launch
        self.index = {tag: Var(tag.value) for tag in (*BLOCK_TAGS, *THREAD_TAGS)}
        self.shared: list[Buffer] = []
        x, y, z = (self.index[tag] for tag in THREAD_TAGS)
        nx, ny, _ = launch.block
        self.thread_id: Expr = (z * ny + y) * nx + x

    def unbind(self, node: Node) -> Node | None:
        """A bound loop becomes its body on the tag's index; shared allocations are hoisted."""
        if isinstance(node, For) and node.kind is ForKind.THREAD_BINDING:
            return substitute(node.body, {node.var: self.index[ThreadTag(node.thread)]})
        if isinstance(node, Allocate) and node.buffer.scope is Scope.SHARED:
            self.shared.append(node.buffer)
            return node.body
        return None

    def every_thread(self, stmt: Stmt) -> Stmt:
        for tag, extent in zip(THREAD_TAGS, self.launch.block, strict=True):
            stmt = For(self.index[tag], extent, ForKind.SERIAL, stmt)
        return stmt

    def phases(self, stmt: Stmt) -> Stmt:
        """``stmt`` as phases, each run for every thread of the block."""
        if not _has_barrier(stmt):
            return self.every_thread(stmt)
        if isinstance(stmt, Barrier):
            return seq()
        if isinstance(stmt, Seq):
            out: list[Stmt] = []
            pending: list[Stmt] = []
            for part in (*stmt.stmts, Barrier()):
                if not _has_barrier(part):
                    pending.append(part)
                    continue
                if pending:
                    out.append(self.every_thread(seq(*pending)))
                    pending = []
                if not isinstance(part, Barrier):
                    out.append(self.phases(part))
            return seq(*out)
        if isinstance(stmt, For):
            return For(stmt.var, stmt.extent, ForKind.SERIAL, self.phases(stmt.body))
        if isinstance(stmt, IfThenElse):
            thread_vars = {self.index[tag] for tag in THREAD_TAGS}
            divergent = sorted(v.name for v in free_vars(stmt.cond) & thread_vars)
            if divergent:
                raise CompileError(
                    f"a barrier under a condition on {', '.join(divergent)}: not every thread "
                    "of the block would reach it",
                    axis=divergent[0],
                )
            otherwise = None if stmt.otherwise is None else self.phases(stmt.otherwise)
            return IfThenElse(stmt.cond, self.phases(stmt.then), otherwise)
        if isinstance(stmt, AttrStmt):
            return AttrStmt(stmt.key, stmt.value, self.phases(stmt.body))
        if isinstance(stmt, Allocate):
            return self.per_thread(stmt)
        raise CompileError(f"the grid emulator cannot split {type(stmt).__name__} at a barrier")

    def per_thread(self, stmt: Allocate) -> Stmt:
        """A thread's buffer living across a barrier: one copy per thread of the block."""
        old = stmt.buffer
        threads = self.launch.threads_per_block
        new = Buffer(old.name, (old.size * threads,), old.dtype, old.scope)
        base = self.thread_id * old.size

        def redirect(node: Node) -> Node | None:
            if isinstance(node, Load) and node.buffer is old:
                return Load(new, (node.indices[0] + base,))
            if isinstance(node, Store) and node.buffer is old:
                return Store(new, (node.indices[0] + base,), node.value)
            return None

        return Allocate(new, self.phases(transform(stmt.body, redirect)))


def emulation(func: LoweredFunc, launch: LaunchConfig) -> LoweredFunc:
    """The CPU function computing what the kernel ``func`` computes when launched as
    ``launch`` (flattened buffers, as after :data:`compiler.lower.GPU_PIPELINE`)."""
    rewrite = _Emulation(launch)
    body = rewrite.phases(transform(func.body, rewrite.unbind))
    for buffer in reversed(rewrite.shared):
        body = Allocate(buffer, body)
    for tag, extent in zip(BLOCK_TAGS, launch.grid, strict=True):
        body = For(rewrite.index[tag], extent, ForKind.SERIAL, body)
    return simplify(LoweredFunc(func.name, func.params, body))
