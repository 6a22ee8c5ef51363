"""VTA's four TE tutorials, written against vtaforge's API with only the imports and
``vta.get_env()`` / ``vta.build`` changed, compiled and run bit-exactly against numpy.

The tutorials' code is kept as written (``tvm.te.max``, ``astype``, ``bind(..., cthread)``,
``topi.nn.pad``); their size constants are parameters whose defaults are the tutorials' own, and
the ``tiny`` configuration (1x4x4 with small buffers) runs them at smaller sizes.
"""

from __future__ import annotations

import numpy as np
import pytest

import compiler as tvm  # the tutorials call tvm.te.max / tvm.te.min
from compiler import build, te
from compiler import templates as topi
from compiler.accel import Env
from isa import AccelConfig

CONFIGS = ("default", "tiny")


def _env(preset: str) -> Env:
    return Env(AccelConfig.preset(preset))


def _rand(rng: np.random.Generator, shape: tuple, dtype: str) -> np.ndarray:
    info = np.iinfo(dtype)
    low, high = (-128, 128) if info.bits > 8 else (info.min, info.max + 1)
    return rng.integers(low, high, size=shape).astype(dtype)


# ------------------------------------------------------------------- vta_get_started.py
def vector_add(env: Env, m: int = 64, o: int = 1):
    A = te.placeholder((o, m, env.BATCH, env.BLOCK_OUT), name="A", dtype=env.acc_dtype)
    B = te.placeholder((o, m, env.BATCH, env.BLOCK_OUT), name="B", dtype=env.acc_dtype)
    A_buf = te.compute((o, m, env.BATCH, env.BLOCK_OUT), lambda *i: A(*i), "A_buf")
    B_buf = te.compute((o, m, env.BATCH, env.BLOCK_OUT), lambda *i: B(*i), "B_buf")
    C_buf = te.compute(
        (o, m, env.BATCH, env.BLOCK_OUT),
        lambda *i: A_buf(*i).astype(env.acc_dtype) + B_buf(*i).astype(env.acc_dtype),
        name="C_buf",
    )
    C = te.compute(
        (o, m, env.BATCH, env.BLOCK_OUT), lambda *i: C_buf(*i).astype(env.inp_dtype), name="C"
    )
    s = te.create_schedule(C.op)
    s[A_buf].set_scope(env.acc_scope)
    s[B_buf].set_scope(env.acc_scope)
    s[C_buf].set_scope(env.acc_scope)
    s[A_buf].pragma(s[A_buf].op.axis[0], env.dma_copy)
    s[B_buf].pragma(s[B_buf].op.axis[0], env.dma_copy)
    s[C].pragma(s[C].op.axis[0], env.dma_copy)
    s[C_buf].pragma(C_buf.op.axis[0], env.alu)
    return s, [A, B, C]


@pytest.mark.parametrize("preset", CONFIGS)
def test_get_started_vector_add(preset):
    env = _env(preset)
    s, (A, B, C) = vector_add(env)
    my_vadd = build(s, [A, B, C], target=env.target, name="my_vadd")
    rng = np.random.default_rng(0)
    o, m = A.shape[0], A.shape[1]
    A_orig = _rand(rng, (o * env.BATCH, m * env.BLOCK_OUT), A.dtype.value[0])
    B_orig = _rand(rng, (o * env.BATCH, m * env.BLOCK_OUT), B.dtype.value[0])
    A_packed = A_orig.reshape(o, env.BATCH, m, env.BLOCK_OUT).transpose((0, 2, 1, 3)).copy()
    B_packed = B_orig.reshape(o, env.BATCH, m, env.BLOCK_OUT).transpose((0, 2, 1, 3)).copy()
    C_nd = np.zeros((o, m, env.BATCH, env.BLOCK_OUT), dtype=C.dtype.numpy)
    my_vadd(A_packed, B_packed, C_nd)
    C_ref = (A_orig.astype(env.acc_dtype) + B_orig.astype(env.acc_dtype)).astype(C.dtype.numpy)
    C_ref = C_ref.reshape(o, env.BATCH, m, env.BLOCK_OUT).transpose((0, 2, 1, 3))
    np.testing.assert_equal(C_ref, C_nd)


# --------------------------------------------------------------------- matrix_multiply.py
def matrix_multiply(env: Env, m: int = 16, n: int = 16, o: int = 1):
    A = te.placeholder((o, n, env.BATCH, env.BLOCK_IN), name="A", dtype=env.inp_dtype)
    B = te.placeholder((m, n, env.BLOCK_OUT, env.BLOCK_IN), name="B", dtype=env.wgt_dtype)
    A_buf = te.compute((o, n, env.BATCH, env.BLOCK_IN), lambda *i: A(*i), "A_buf")
    B_buf = te.compute((m, n, env.BLOCK_OUT, env.BLOCK_IN), lambda *i: B(*i), "B_buf")
    ko = te.reduce_axis((0, n), name="ko")
    ki = te.reduce_axis((0, env.BLOCK_IN), name="ki")
    C_buf = te.compute(
        (o, m, env.BATCH, env.BLOCK_OUT),
        lambda bo, co, bi, ci: te.sum(
            A_buf[bo, ko, bi, ki].astype(env.acc_dtype)
            * B_buf[co, ko, ci, ki].astype(env.acc_dtype),
            axis=[ko, ki],
        ),
        name="C_buf",
    )
    C = te.compute(
        (o, m, env.BATCH, env.BLOCK_OUT), lambda *i: C_buf(*i).astype(env.inp_dtype), name="C"
    )
    s = te.create_schedule(C.op)
    s[A_buf].set_scope(env.inp_scope)
    s[B_buf].set_scope(env.wgt_scope)
    s[C_buf].set_scope(env.acc_scope)
    s[A_buf].compute_at(s[C_buf], ko)
    s[B_buf].compute_at(s[C_buf], ko)
    s[A_buf].pragma(s[A_buf].op.axis[0], env.dma_copy)
    s[B_buf].pragma(s[B_buf].op.axis[0], env.dma_copy)
    s[C].pragma(s[C].op.axis[0], env.dma_copy)
    s[C_buf].reorder(
        ko,
        s[C_buf].op.axis[0],
        s[C_buf].op.axis[1],
        s[C_buf].op.axis[2],
        s[C_buf].op.axis[3],
        ki,
    )
    s[C_buf].tensorize(s[C_buf].op.axis[2], env.gemm)
    return s, [A, B, C]


@pytest.mark.parametrize("preset", CONFIGS)
def test_matrix_multiply(preset):
    env = _env(preset)
    s, (A, B, C) = matrix_multiply(env)
    f = build(s, [A, B, C], target=env.target, name="my_gemm")
    o, n = A.shape[:2]
    m = B.shape[0]
    rng = np.random.default_rng(1)
    A_orig = rng.integers(-128, 128, size=(o * env.BATCH, n * env.BLOCK_IN)).astype(A.dtype.numpy)
    B_orig = rng.integers(-128, 128, size=(m * env.BLOCK_OUT, n * env.BLOCK_IN)).astype(
        B.dtype.numpy
    )
    A_packed = A_orig.reshape(o, env.BATCH, n, env.BLOCK_IN).transpose((0, 2, 1, 3)).copy()
    B_packed = B_orig.reshape(m, env.BLOCK_OUT, n, env.BLOCK_IN).transpose((0, 2, 1, 3)).copy()
    C_nd = np.zeros((o, m, env.BATCH, env.BLOCK_OUT)).astype(C.dtype.numpy)
    f(A_packed, B_packed, C_nd)
    C_ref = np.dot(A_orig.astype(env.acc_dtype), B_orig.T.astype(env.acc_dtype)).astype(
        C.dtype.numpy
    )
    C_ref = C_ref.reshape(o, env.BATCH, m, env.BLOCK_OUT).transpose((0, 2, 1, 3))
    np.testing.assert_equal(C_ref, C_nd)


# ---------------------------------------------------------------- matrix_multiply_opt.py
def blocked_gemm(env: Env, batch_size=1, in_channels=1024, out_channels=1024, block=256):
    data_shape = (batch_size // env.BATCH, in_channels // env.BLOCK_IN, env.BATCH, env.BLOCK_IN)
    weight_shape = (
        out_channels // env.BLOCK_OUT,
        in_channels // env.BLOCK_IN,
        env.BLOCK_OUT,
        env.BLOCK_IN,
    )
    output_shape = (
        batch_size // env.BATCH,
        out_channels // env.BLOCK_OUT,
        env.BATCH,
        env.BLOCK_OUT,
    )
    ic = te.reduce_axis((0, in_channels // env.BLOCK_IN), name="ic")
    ic_tns = te.reduce_axis((0, env.BLOCK_IN), name="ic_tns")
    data = te.placeholder(data_shape, name="data", dtype=env.inp_dtype)
    weight = te.placeholder(weight_shape, name="weight", dtype=env.wgt_dtype)
    data_buf = te.compute(data_shape, lambda *i: data(*i), "data_buf")
    weight_buf = te.compute(weight_shape, lambda *i: weight(*i), "weight_buf")
    res_gemm = te.compute(
        output_shape,
        lambda bo, co, bi, ci: te.sum(
            data_buf[bo, ic, bi, ic_tns].astype(env.acc_dtype)
            * weight_buf[co, ic, ci, ic_tns].astype(env.acc_dtype),
            axis=[ic, ic_tns],
        ),
        name="res_gem",
    )
    res_shr = te.compute(output_shape, lambda *i: res_gemm(*i) >> env.INP_WIDTH, name="res_shr")
    inp_max = (1 << (env.INP_WIDTH - 1)) - 1
    res_max = te.compute(output_shape, lambda *i: tvm.te.max(res_shr(*i), 0), "res_max")
    res_min = te.compute(output_shape, lambda *i: tvm.te.min(res_max(*i), inp_max), "res_min")
    res = te.compute(output_shape, lambda *i: res_min(*i).astype(env.inp_dtype), name="res")
    s = te.create_schedule(res.op)
    b_block = 1 // env.BATCH
    i_block = block // env.BLOCK_IN
    o_block = block // env.BLOCK_OUT
    b, oc, b_tns, oc_tns = s[res].op.axis
    b_out, b_inn = s[res].split(b, b_block)
    oc_out, oc_inn = s[res].split(oc, o_block)
    s[res].reorder(b_out, oc_out, b_inn, oc_inn)
    s[res_gemm].compute_at(s[res], oc_out)
    s[res_shr].compute_at(s[res], oc_out)
    s[res_max].compute_at(s[res], oc_out)
    s[res_min].compute_at(s[res], oc_out)
    b_inn, oc_inn, b_tns, oc_tns = s[res_gemm].op.axis
    ic_out, ic_inn = s[res_gemm].split(ic, i_block)
    s[res_gemm].reorder(ic_out, b_inn, oc_inn, ic_inn, b_tns, oc_tns, ic_tns)
    v_threads = 2
    _, tx = s[res].split(oc_out, factor=v_threads)
    s[res].reorder(tx, b_out)
    s[res].bind(tx, te.thread_axis("cthread"))
    s[data_buf].set_scope(env.inp_scope)
    s[weight_buf].set_scope(env.wgt_scope)
    s[res_gemm].set_scope(env.acc_scope)
    s[res_shr].set_scope(env.acc_scope)
    s[res_min].set_scope(env.acc_scope)
    s[res_max].set_scope(env.acc_scope)
    s[data_buf].compute_at(s[res_gemm], ic_out)
    s[weight_buf].compute_at(s[res_gemm], ic_out)
    s[data_buf].pragma(s[data_buf].op.axis[0], env.dma_copy)
    s[weight_buf].pragma(s[weight_buf].op.axis[0], env.dma_copy)
    s[res].pragma(s[res].op.axis[2], env.dma_copy)
    s[res_shr].pragma(s[res_shr].op.axis[0], env.alu)
    s[res_max].pragma(s[res_max].op.axis[0], env.alu)
    s[res_min].pragma(s[res_min].op.axis[0], env.alu)
    s[res_gemm].tensorize(b_tns, env.gemm)
    return s, [data, weight, res]


BLOCKED_GEMM_SIZES = {"default": {}, "tiny": {"in_channels": 64, "out_channels": 64, "block": 16}}


@pytest.mark.parametrize("preset", CONFIGS)
def test_blocked_gemm_with_virtual_threads(preset):
    env = _env(preset)
    s, (data, weight, res) = blocked_gemm(env, **BLOCKED_GEMM_SIZES[preset])
    f = build(s, [data, weight, res], target=env.target, name="blocked_gemm")
    rng = np.random.default_rng(2)
    d = rng.integers(-128, 128, size=data.shape).astype(np.int8)
    w = rng.integers(-128, 128, size=weight.shape).astype(np.int8)
    out = np.zeros(res.shape, np.int8)
    f(d, w, out)
    acc = np.einsum("nibk,oick->nobc", d.astype(np.int32), w.astype(np.int32))
    ref = np.clip(acc >> env.INP_WIDTH, 0, (1 << (env.INP_WIDTH - 1)) - 1).astype(np.int8)
    np.testing.assert_equal(ref, out)


# ------------------------------------------------------------------- convolution_opt.py
def conv2d_opt(env: Env, height=14, width=14, in_channels=256, out_channels=256, tiles=None):
    tiles = tiles or {"oc": 128, "ic": 16, "h": 7, "w": 14}
    batch_size = 1
    kernel_h = kernel_w = 3
    pad_h = pad_w = 1
    stride_h = stride_w = 1
    data_shape = (
        batch_size // env.BATCH,
        in_channels // env.BLOCK_IN,
        height,
        width,
        env.BATCH,
        env.BLOCK_IN,
    )
    kernel_shape = (
        out_channels // env.BLOCK_OUT,
        in_channels // env.BLOCK_IN,
        kernel_h,
        kernel_w,
        env.BLOCK_OUT,
        env.BLOCK_IN,
    )
    fout_height = (height + 2 * pad_h - kernel_h) // stride_h + 1
    fout_width = (width + 2 * pad_w - kernel_w) // stride_w + 1
    output_shape = (
        batch_size // env.BATCH,
        out_channels // env.BLOCK_OUT,
        fout_height,
        fout_width,
        env.BATCH,
        env.BLOCK_OUT,
    )
    dy = te.reduce_axis((0, kernel_h), name="dy")
    dx = te.reduce_axis((0, kernel_w), name="dx")
    ic = te.reduce_axis((0, in_channels // env.BLOCK_IN), name="ic")
    ic_tns = te.reduce_axis((0, env.BLOCK_IN), name="ic_tns")
    data = te.placeholder(data_shape, name="data", dtype=env.inp_dtype)
    kernel = te.placeholder(kernel_shape, name="kernel", dtype=env.wgt_dtype)
    data_buf = topi.nn.pad(data, [0, 0, pad_h, pad_w, 0, 0], name="data_buf")
    kernel_buf = te.compute(kernel_shape, lambda *i: kernel(*i), "kernel_buf")
    res_conv = te.compute(
        output_shape,
        lambda bo, co, i, j, bi, ci: te.sum(
            data_buf[bo, ic, i * stride_h + dy, j * stride_w + dx, bi, ic_tns].astype(env.acc_dtype)
            * kernel_buf[co, ic, dy, dx, ci, ic_tns].astype(env.acc_dtype),
            axis=[ic, dy, dx, ic_tns],
        ),
        name="res_conv",
    )
    res_shr = te.compute(output_shape, lambda *i: res_conv(*i) >> 8, name="res_shr")
    inp_max = (1 << (env.INP_WIDTH - 1)) - 1
    res_max = te.compute(output_shape, lambda *i: tvm.te.max(res_shr(*i), 0), "res_max")
    res_min = te.compute(output_shape, lambda *i: tvm.te.min(res_max(*i), inp_max), "res_min")
    res = te.compute(output_shape, lambda *i: res_min(*i).astype(env.inp_dtype), name="res")
    s = te.create_schedule(res.op)
    b_block = 1 // env.BATCH
    oc_block = tiles["oc"] // env.BLOCK_OUT
    ic_block = tiles["ic"] // env.BLOCK_IN
    h_block = tiles["h"]
    w_block = tiles["w"]
    b, oc, y, x, b_tns, oc_tns = s[res].op.axis
    b_out, b_inn = s[res].split(b, factor=b_block)
    oc_out, oc_inn = s[res].split(oc, factor=oc_block)
    y_bo, y_bi = s[res].split(y, factor=h_block)
    x_bo, x_bi = s[res].split(x, factor=w_block)
    s[res].reorder(b_out, oc_out, y_bo, x_bo, b_inn, oc_inn, y_bi, x_bi, b_tns, oc_tns)
    s[res_conv].compute_at(s[res], x_bo)
    s[res_shr].compute_at(s[res], x_bo)
    s[res_max].compute_at(s[res], x_bo)
    s[res_min].compute_at(s[res], x_bo)
    b_inn, oc_inn, y_bi, x_bi, b_tns, oc_tns = s[res_conv].op.axis
    ic_out, ic_inn = s[res_conv].split(ic, factor=ic_block)
    s[res_conv].reorder(ic_out, b_inn, oc_inn, y_bi, ic_inn, dy, dx, x_bi, b_tns, oc_tns, ic_tns)
    v_threads = 2
    _, tx = s[res].split(oc_out, factor=v_threads)
    s[res].reorder(tx, b_out)
    s[res].bind(tx, te.thread_axis("cthread"))
    s[data_buf].set_scope(env.inp_scope)
    s[kernel_buf].set_scope(env.wgt_scope)
    s[res_conv].set_scope(env.acc_scope)
    s[res_shr].set_scope(env.acc_scope)
    s[res_min].set_scope(env.acc_scope)
    s[res_max].set_scope(env.acc_scope)
    s[data_buf].compute_at(s[res_conv], ic_out)
    s[kernel_buf].compute_at(s[res_conv], ic_out)
    s[data_buf].pragma(s[data_buf].op.axis[0], env.dma_copy)
    s[kernel_buf].pragma(s[kernel_buf].op.axis[0], env.dma_copy)
    s[res].pragma(s[res].op.axis[4], env.dma_copy)
    s[res_shr].pragma(s[res_shr].op.axis[0], env.alu)
    s[res_max].pragma(s[res_max].op.axis[0], env.alu)
    s[res_min].pragma(s[res_min].op.axis[0], env.alu)
    s[res_conv].tensorize(b_tns, env.gemm)
    return s, [data, kernel, res]


CONV_SIZES = {
    "default": {},
    "tiny": {
        "height": 8,
        "width": 8,
        "in_channels": 16,
        "out_channels": 16,
        "tiles": {"oc": 8, "ic": 4, "h": 4, "w": 8},
    },
}


@pytest.mark.parametrize("preset", CONFIGS)
def test_convolution_with_virtual_threads(preset):
    env = _env(preset)
    s, (data, kernel, res) = conv2d_opt(env, **CONV_SIZES[preset])
    f = build(s, [data, kernel, res], target=env.target, name="conv2d")
    rng = np.random.default_rng(3)
    d = rng.integers(-128, 128, size=data.shape).astype(np.int8)
    k = rng.integers(-128, 128, size=kernel.shape).astype(np.int8)
    out = np.zeros(res.shape, np.int8)
    f(d, k, out)
    padded = np.pad(d.astype(np.int64), ((0, 0), (0, 0), (1, 1), (1, 1), (0, 0), (0, 0)))
    oh, ow = res.shape[2:4]
    acc = np.zeros(res.shape, np.int64)
    for ky in range(3):
        for kx in range(3):
            window = padded[:, :, ky : ky + oh, kx : kx + ow]
            acc += np.einsum("nchwbi,ocji->nohwbj", window, k[:, :, ky, kx].astype(np.int64))
    ref = np.clip(acc.astype(np.int32) >> 8, 0, 127).astype(np.int8)
    np.testing.assert_equal(ref, out)
