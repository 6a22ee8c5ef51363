"""GPU scheduling: bind checks at the step, launch checks (threads, shared memory, extents,
unbound stores) at build, each a typed error naming what was wrong."""

from __future__ import annotations

import pytest

from compiler import CompileError, ScheduleError, build, create_schedule, lower, te
from compiler.codegen import CudaTarget
from compiler.expr import TensorRead
from compiler.loop_ir import Allocate
from compiler.lower import GPU_PIPELINE
from compiler.visit import walk
from tests.compiler.gpu.kernels import tiled_matmul


def _add(n: int = 64, m: int = 64):
    a = te.placeholder((n, m), name="A")
    c = te.compute((n, m), lambda i, j: a[i, j] + 1.0, name="C")
    return a, c, create_schedule(c)


def _sum_rows():
    a = te.placeholder((16, 32), name="A")
    k = te.reduce_axis(32, "k")
    c = te.compute((16,), lambda i: te.sum(a[i, k], axis=k), name="C")
    return a, c, k, create_schedule(c)


def test_a_reduction_axis_cannot_be_bound():
    _, c, k, s = _sum_rows()
    with pytest.raises(ScheduleError, match="reduction axis cannot be bound") as error:
        s[c].bind(k, "threadIdx.x")
    assert error.value.stage == "C" and error.value.axis == "k"


def test_a_thread_tag_is_bound_once_per_stage():
    _, c, s = _add()
    i, j = c.op.axis
    s[c].bind(i, "threadIdx.x")
    with pytest.raises(ScheduleError, match="used twice"):
        s[c].bind(j, "threadIdx.x")


def test_a_bound_axis_cannot_also_be_vectorized():
    _, c, s = _add()
    i, _ = c.op.axis
    s[c].bind(i, "threadIdx.x")
    with pytest.raises(ScheduleError, match="bound to threadIdx.x"):
        s[c].vectorize(i)


def test_unknown_thread_tag():
    _, c, s = _add()
    with pytest.raises(ScheduleError, match="unknown thread tag 'threadIdx.w'"):
        s[c].bind(c.op.axis[0], "threadIdx.w")


def test_too_many_threads_per_block():
    a, c, s = _add(64, 64)
    i, j = c.op.axis
    s[c].bind(i, "threadIdx.y")
    s[c].bind(j, "threadIdx.x")  # 4096 threads
    with pytest.raises(CompileError, match="4096 threads per block .* exceed the target's 1024"):
        build(s, [a, c], target="cuda")


def test_the_target_limit_is_the_targets():
    a, c, s = _add(8, 64)
    i, j = c.op.axis
    s[c].bind(i, "blockIdx.x")
    s[c].bind(j, "threadIdx.x")
    with pytest.raises(CompileError, match="64 threads per block"):
        build(s, [a, c], target=CudaTarget("sm_80", max_threads_per_block=32))


def test_per_axis_block_limit():
    a, c, s = _add(128, 1)
    s[c].bind(c.op.axis[0], "threadIdx.z")
    with pytest.raises(CompileError, match="threadIdx.z has extent 128, above CUDA's 64"):
        build(s, [a, c], target="cuda")


def test_unbound_kernel():
    a, c, s = _add()
    with pytest.raises(CompileError, match="no loop is bound"):
        build(s, [a, c], target="cuda")


def test_parallel_loop_in_a_kernel():
    a, c, s = _add()
    i, j = c.op.axis
    s[c].bind(i, "blockIdx.x")
    s[c].parallel(j)
    with pytest.raises(CompileError, match="parallel loop inside a GPU kernel"):
        build(s, [a, c], target="cuda")


def test_a_store_outside_a_launched_thread_axis():
    a = te.placeholder((64,), name="A")
    b = te.compute((64,), lambda i: a[i] * 2.0, name="B")
    c = te.compute((64,), lambda i: b[i] + 1.0, name="C")
    s = create_schedule(c)
    s[c].bind(c.op.axis[0], "threadIdx.x")
    s[b].bind(b.op.axis[0], "blockIdx.x")  # B is an argument but not spread over the threads
    with pytest.raises(CompileError, match="stored outside the loops bound to threadIdx.x") as err:
        build(s, [a, b, c], target="cuda")
    assert err.value.tensor == "B"


def test_inconsistent_extents_of_one_thread_axis():
    a = te.placeholder((64,), name="A")
    b = te.compute((64,), lambda i: a[i] * 2.0, name="B")
    c = te.compute((64,), lambda i: b[i] + 1.0, name="C")
    s = create_schedule(c)
    co, ci = s[c].split(c.op.axis[0], 32)
    s[c].bind(co, "blockIdx.x")
    s[c].bind(ci, "threadIdx.x")
    bo, bi = s[b].split(b.op.axis[0], 16)
    bo_block, _ = s[b].split(bo, nparts=2)  # blockIdx.x extent 2 too, threadIdx.x 16
    s[b].bind(bo_block, "blockIdx.x")
    s[b].bind(bi, "threadIdx.x")
    with pytest.raises(CompileError, match="threadIdx.x with extent (16|32), but loop") as error:
        build(s, [a, b, c], target="cuda")
    assert error.value.axis == "i.inner"


def test_shared_memory_limit():
    n = 128
    a = te.placeholder((n, n), name="A")
    c = te.compute((n, n), lambda i, j: a[i, j] + a[j, i], name="C")
    s = create_schedule(c)
    shared = s.cache_read(a, "shared", [c])  # at the root: the whole 64 KiB matrix
    i, j = c.op.axis
    s[c].bind(i, "blockIdx.x")
    s[c].bind(j, "threadIdx.x")
    fused = s[shared].fuse(*shared.op.axis)
    _, inner = s[shared].split(fused, n)
    s[shared].bind(inner, "threadIdx.x")
    s[shared].compute_at(s[c], i)
    with pytest.raises(CompileError, match="65536 bytes of shared memory .* exceed .* 49152"):
        build(s, [a, c], target="cuda")


def test_global_intermediate_outside_the_threads():
    a = te.placeholder((64,), name="A")
    b = te.compute((64,), lambda i: a[i] * 2.0, name="B")
    c = te.compute((64,), lambda i: b[i] + 1.0, name="C")
    s = create_schedule(c)
    s[c].bind(c.op.axis[0], "threadIdx.x")
    with pytest.raises(CompileError, match="intermediate in global memory") as error:
        build(s, [a, c], target="cuda")
    assert error.value.tensor == "B"


@pytest.mark.parametrize(
    "spec", ["cuda -arch=sm_9", "cuda -mcpu=sm_80", "opencl", "cuda -arch=sm_30"]
)
def test_bad_targets(spec):
    with pytest.raises(CompileError, match="architecture|option|target"):
        CudaTarget.parse(spec)


def test_cache_write_after_cache_read_reads_the_cache():
    a = te.placeholder((16, 16), name="A")
    k = te.reduce_axis(16, "k")
    c = te.compute((16,), lambda i: te.sum(a[i, k], axis=k), name="C")
    s = create_schedule(c)
    shared = s.cache_read(a, "shared", [c])
    local = s.cache_write(c, "local")
    reads = {n.tensor.name for n in walk(s.state.stage(local.op).body) if isinstance(n, TensorRead)}
    assert reads == {shared.name}


def test_shared_tiles_cover_the_whole_block():
    s, args = tiled_matmul(32, 32, 32, tile=8, tile_k=16)
    func = lower(s, args, passes=GPU_PIPELINE)
    shapes = {n.buffer.name: n.buffer.shape for n in walk(func.body) if isinstance(n, Allocate)}
    # every thread of the 8 x 8 block shares the tiles; the accumulator is the thread's own
    assert shapes == {"A.shared": (8, 16), "B.shared": (16, 8), "C.local": (1, 1)}
