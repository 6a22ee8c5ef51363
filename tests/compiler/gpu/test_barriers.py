"""The insert_barriers pass, before and after: a barrier after each shared fill that later
statements read (and before it inside a loop), and tail guards on the thread distributed so
that every thread reaches every barrier and runs its share of the fill."""

from __future__ import annotations

import numpy as np

from compiler import build, create_schedule, lower, te
from compiler.expr import DType, Var
from compiler.loop_ir import (
    Allocate,
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
    format_func,
    seq,
)
from compiler.lower import GPU_PIPELINE, PIPELINE, schedule_to_ir
from compiler.passes.gpu import Barrier, insert_barriers
from compiler.visit import free_vars, walk
from tests.compiler.gpu.kernels import tiled_matmul


def _kinds(stmt) -> list[str]:
    """The statements of a sequence, as 'fill' (writes shared), 'barrier' or 'other'."""
    parts = stmt.stmts if isinstance(stmt, Seq) else (stmt,)
    names = []
    for part in parts:
        if isinstance(part, Barrier):
            names.append("barrier")
        elif any(isinstance(n, Store) and n.buffer.scope is Scope.SHARED for n in walk(part)):
            names.append("fill")
        else:
            names.append("other")
    return names


def test_before_and_after_in_a_loop():
    out = Buffer("out", (64,), DType.FLOAT32)
    tile = Buffer("tile", (8,), DType.FLOAT32, Scope.SHARED)
    k, tx = Var("k"), Var("tx")
    fill = Store(tile, (tx,), Load(out, (k * 8 + tx,)))
    use = Store(out, (k * 8 + tx,), Load(tile, (7 - tx,)))
    body = For(k, 8, ForKind.SERIAL, Allocate(tile, seq(fill, use)))
    func = LoweredFunc("f", (out,), For(tx, 8, ForKind.THREAD_BINDING, body, "threadIdx.x"))
    assert not any(isinstance(n, Barrier) for n in walk(func.body))
    after = insert_barriers(func)
    loop = after.body.body
    assert _kinds(loop.body.body) == ["barrier", "fill", "barrier", "other"]
    assert "barrier" in format_func(after)


def test_no_barrier_without_a_shared_fill_that_is_read():
    out = Buffer("out", (8,), DType.FLOAT32)
    tile = Buffer("tile", (8,), DType.FLOAT32, Scope.SHARED)
    tx = Var("tx")
    unread = seq(Store(tile, (tx,), Load(out, (tx,))), Store(out, (tx,), Load(out, (tx,)) * 2.0))
    func = LoweredFunc(
        "f", (out,), For(tx, 8, ForKind.THREAD_BINDING, Allocate(tile, unread), "threadIdx.x")
    )
    assert insert_barriers(func) == func


def test_the_pass_runs_only_in_the_gpu_pipeline():
    assert "insert_barriers" in [p.name for p in GPU_PIPELINE]
    assert "insert_barriers" not in [p.name for p in PIPELINE]
    s, args = tiled_matmul(16, 16, 16)
    func = lower(s, args, passes=GPU_PIPELINE)
    (k_loop,) = [n for n in walk(func.body) if isinstance(n, For) and n.var.name == "k.outer"]
    # one barrier before both fills (the previous tiles' readers are done), one after them
    order = [
        "barrier" if isinstance(n, Barrier) else n.buffer.name
        for n in walk(k_loop)
        if isinstance(n, Barrier) or (isinstance(n, Store) and n.buffer.scope is not Scope.GLOBAL)
    ]
    assert order == ["barrier", "A.shared", "B.shared", "barrier", "C.local"]
    assert not any(isinstance(n, Barrier) for n in walk(lower(s, args).body))


def _guards_of_stores(stmt, conds=()):
    """(store, the conditions it runs under) for every store under ``stmt``."""
    if isinstance(stmt, Store):
        yield stmt, conds
    elif isinstance(stmt, IfThenElse):
        yield from _guards_of_stores(stmt.then, (*conds, stmt.cond))
    else:
        for child in stmt.children:
            value = getattr(stmt, child)
            for item in value if isinstance(value, tuple) else (value,):
                if isinstance(item, Stmt):
                    yield from _guards_of_stores(item, conds)


def test_tail_guards_are_distributed_off_barriers_and_fills():
    a = te.placeholder((20,), name="A")  # 20 elements, blocks of 8 threads: a tail
    c = te.compute((20,), lambda i: a[i] * 2.0 + a[i // 8 * 8], name="C")
    s = create_schedule(c)
    acc = s.cache_write(c, "local")
    bo, bi = s[c].split(c.op.axis[0], 8)
    s[c].bind(bo, "blockIdx.x")
    s[c].bind(bi, "threadIdx.x")
    s[acc].compute_at(s[c], bi)  # the tail guard of i.inner encloses this stage
    shared = s.cache_read(a, "shared", [acc])
    s[shared].compute_at(s[acc], acc.op.axis[0])
    _, t = s[shared].split(shared.op.axis[0], 8)
    s[shared].bind(t, "threadIdx.x")
    before = schedule_to_ir(s, [a, c])
    tail = [n for n in walk(before.body) if isinstance(n, IfThenElse)]
    assert any(
        any(isinstance(m, Store) and m.buffer.scope is Scope.SHARED for m in walk(n)) for n in tail
    )  # before: the fill sits under the tail guard
    func = lower(s, [a, c], passes=GPU_PIPELINE)
    assert not any(
        isinstance(n, IfThenElse) and any(isinstance(m, Barrier) for m in walk(n))
        for n in walk(func.body)
    )
    for store, conds in _guards_of_stores(func.body):
        if store.buffer.scope is Scope.SHARED:  # only the fill's own guard remains
            assert all("i.inner" not in {v.name for v in free_vars(c)} for c in conds)
    f = build(s, [a, c], target="cuda")
    x = np.arange(20, dtype=np.float32)
    out = np.zeros(20, np.float32)
    f.emulate(x, out)
    np.testing.assert_allclose(out, x * 2.0 + x[np.arange(20) // 8 * 8])
