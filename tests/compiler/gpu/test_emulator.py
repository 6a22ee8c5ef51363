"""The grid emulator: lowered GPU kernels run block by block on the CPU, barriers honoured,
thread-private values kept per thread, results equal to numpy."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from compiler import CompileError, build
from compiler.codegen.gpu_emulator import emulation
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
    Store,
    seq,
)
from compiler.passes.gpu import Barrier, LaunchConfig, launch_config
from compiler.visit import walk
from tests.compiler.gpu.helpers import assemble
from tests.compiler.gpu.kernels import reversed_blocks, tiled_matmul


def test_threads_read_what_other_threads_wrote():
    s, args = reversed_blocks(96, 32)
    f = build(s, args, target="cuda")
    a = np.arange(96, dtype=np.float32)
    c = np.zeros(96, np.float32)
    f.emulate(a, c)
    np.testing.assert_array_equal(c, a.reshape(3, 32)[:, ::-1].ravel())


@settings(max_examples=6)
@given(
    tile=st.sampled_from([4, 8]),
    k_tiles=st.sampled_from([1, 2]),
    data=st.data(),
)
def test_shared_memory_matmul_equals_numpy(tile, k_tiles, data):
    # at least a tile in each dimension (so every thread has a share of each fill); ragged
    # edges in all three
    m, n, k = (data.draw(st.integers(tile, 40), label=axis) for axis in "mnk")
    s, args = tiled_matmul(m, n, k, tile, tile * k_tiles)
    f = build(s, args, target="cuda")
    rng = np.random.default_rng(m * 10000 + n * 100 + k)
    a = rng.standard_normal((m, k), dtype=np.float32)
    b = rng.standard_normal((k, n), dtype=np.float32)
    c = np.full((m, n), np.nan, np.float32)
    f.emulate(a, b, c)
    np.testing.assert_allclose(c, a @ b, rtol=1e-4, atol=1e-4)


def test_a_local_cache_of_a_shared_tile():
    s, args = tiled_matmul(24, 16, 32, tile=8, tile_k=8, registers=True)
    f = build(s, args, target="cuda")
    allocated = {n.buffer.name: n.buffer for n in walk(f.lowered.body) if isinstance(n, Allocate)}
    assert allocated["A.shared.local"].scope is Scope.LOCAL
    assert allocated["A.shared.local"].shape == (1, 8)  # the thread's row of the tile
    assemble(f.ptx)
    rng = np.random.default_rng(4)
    a = rng.standard_normal((24, 32), dtype=np.float32)
    b = rng.standard_normal((32, 16), dtype=np.float32)
    c = np.zeros((24, 16), np.float32)
    f.emulate(a, b, c)
    np.testing.assert_allclose(c, a @ b, rtol=1e-4, atol=1e-4)


def test_local_values_survive_barriers_per_thread():
    s, args = tiled_matmul(16, 16, 64, tile=8, tile_k=8)  # 8 barrier-separated k steps
    f = build(s, args, target="cuda")
    emulated = emulation(f.lowered, f.launch)
    per_thread = [
        n.buffer
        for n in walk(emulated.body)
        if isinstance(n, Allocate) and n.buffer.name == "C.local"
    ]
    assert [b.shape for b in per_thread] == [(64,)]  # one accumulator for each of 8 x 8 threads
    rng = np.random.default_rng(3)
    a, b = rng.standard_normal((2, 16, 64), dtype=np.float32)
    b = np.ascontiguousarray(b.T)
    c = np.zeros((16, 16), np.float32)
    f.emulate(a, b, c)  # a single shared accumulator would sum every thread's products
    np.testing.assert_allclose(c, a @ b, rtol=1e-4, atol=1e-4)


def _divergent_kernel() -> LoweredFunc:
    out = Buffer("out", (32,), DType.FLOAT32)
    tile = Buffer("tile", (32,), DType.FLOAT32, Scope.SHARED)
    tx = Var("tx")
    body = seq(
        Store(tile, (tx,), Load(out, (tx,))), Barrier(), Store(out, (tx,), Load(tile, (31 - tx,)))
    )
    branch = IfThenElse(tx < 16, body, Store(out, (tx,), Load(out, (tx,))))
    return LoweredFunc(
        "k", (out,), For(tx, 32, ForKind.THREAD_BINDING, Allocate(tile, branch), "threadIdx.x")
    )


def test_a_barrier_not_every_thread_reaches_is_refused():
    func = _divergent_kernel()
    with pytest.raises(CompileError, match="barrier under a condition that depends on the thread"):
        launch_config(func, 1024, 48 * 1024)
    with pytest.raises(CompileError, match="barrier under a condition on threadIdx.x"):
        emulation(func, LaunchConfig((1, 1, 1), (32, 1, 1), 128))
