"""PTX generation: the kernel's LLVM IR (grid intrinsics, shared address space, barrier, kernel
metadata) and its PTX, assembled by ptxas for sm_80 and sm_90."""

from __future__ import annotations

import re

import numpy as np
import pytest

from compiler import CompileError, build, create_schedule, lower, te
from compiler.codegen import CudaTarget, codegen_nvptx
from compiler.lower import GPU_PIPELINE
from tests.compiler.gpu.helpers import assemble
from tests.compiler.gpu.kernels import reversed_blocks, tiled_matmul


@pytest.mark.parametrize("arch", ["sm_80", "sm_90"])
def test_shared_memory_kernel_assembles(arch):
    s, args = tiled_matmul(32, 24, 40)
    f = build(s, args, target=f"cuda -arch={arch}")
    assemble(f.ptx, arch)
    assert f.module.target.arch == arch
    assert re.search(rf"\.target {arch}\b", f.ptx)
    assert re.search(r"\.visible \.entry main\(", f.ptx)
    assert "bar.sync" in f.ptx
    # the two 8x8 tiles in shared memory, each declared once
    assert re.findall(r"\.shared \.align \d+ \.b8 \S+\[(\d+)\]", f.ptx) == ["256", "256"]
    for register in ("%tid.x", "%tid.y", "%ctaid.x", "%ctaid.y"):
        assert register in f.ptx
    assert f.launch.grid == (3, 4, 1) and f.launch.block == (8, 8, 1)
    assert f.launch.shared_bytes == 512


def test_kernel_llvm_ir():
    s, args = reversed_blocks(64, 16)
    f = build(s, args, target="cuda")
    text = f.module.ir_text
    assert "define ptx_kernel void @main(ptr addrspace(1)" in text.replace('"', "")
    assert "llvm.nvvm.read.ptx.sreg.tid.x" in text
    assert "llvm.nvvm.read.ptx.sreg.ctaid.x" in text
    assert "addrspace(3) global [16 x float]" in text
    assert re.search(r"llvm\.nvvm\.barrier|barrier\.cta", text)
    assert "nvvm.annotations" in text  # LLVM 22 folds its kernel entry into ptx_kernel
    assemble(f.ptx)


def test_extent_one_axes_read_no_register():
    a = te.placeholder((1, 32), name="A")
    c = te.compute((1, 32), lambda i, j: a[i, j] * 3.0, name="C")
    s = create_schedule(c)
    s[c].bind(c.op.axis[0], "blockIdx.y")
    s[c].bind(c.op.axis[1], "threadIdx.x")
    f = build(s, [a, c], target="cuda")
    assert "%ctaid.y" not in f.ptx and "%tid.x" in f.ptx
    assemble(f.ptx)


@pytest.mark.parametrize(
    ("name", "fn", "reference"),
    [
        ("exp", te.exp, np.exp),
        ("log", te.log, np.log),
        ("sqrt", te.sqrt, np.sqrt),
        ("round", te.round, np.rint),
    ],
)
def test_math_functions(name, fn, reference):
    a = te.placeholder((256,), name="A")
    c = te.compute((256,), lambda i: fn(a[i]), name="C")
    s = create_schedule(c)
    bo, bi = s[c].split(c.op.axis[0], 64)
    s[c].bind(bo, "blockIdx.x")
    s[c].bind(bi, "threadIdx.x")
    f = build(s, [a, c], target="cuda")
    assemble(f.ptx)
    assert "call" not in re.sub(r"//.*", "", f.ptx), f"{name} left a call in the PTX"
    x = np.random.default_rng(1).uniform(0.1, 8.0, 256).astype(np.float32)
    out = np.zeros(256, np.float32)
    f.emulate(x, out)
    np.testing.assert_allclose(out, reference(x), rtol=1e-5)


def test_codegen_checks_the_launch_first():
    a = te.placeholder((64,), name="A")
    c = te.compute((64,), lambda i: a[i] + 1.0, name="C")
    s = create_schedule(c)
    func = lower(s, [a, c], passes=GPU_PIPELINE)
    with pytest.raises(CompileError, match="no loop is bound"):
        codegen_nvptx(func, CudaTarget())


def test_the_cpu_backend_still_refuses_thread_axes():
    s, args = reversed_blocks(64, 16)
    with pytest.raises(
        CompileError, match="bound to blockIdx.x: GPU thread axes need a GPU target"
    ):
        build(s, args)


def test_vectorized_loop_in_a_kernel():
    a = te.placeholder((16, 32), name="A")
    c = te.compute((16, 32), lambda i, j: te.exp(a[i, j]) * 2.0, name="C")
    s = create_schedule(c)
    i, j = c.op.axis
    jo, ji = s[c].split(j, 4)
    s[c].bind(i, "blockIdx.x")
    s[c].bind(jo, "threadIdx.x")
    s[c].vectorize(ji)
    f = build(s, [a, c], target="cuda")
    assert f.ptx.count("ex2.approx") == 4  # one per lane
    assemble(f.ptx)
    x = np.random.default_rng(2).uniform(-2, 2, (16, 32)).astype(np.float32)
    out = np.zeros_like(x)
    f.emulate(x, out)
    np.testing.assert_allclose(out, np.exp(x) * 2.0, rtol=1e-5)
