"""The CPU steps compiled into shared libraries give the numpy kernels' bytes exactly, and the
float32 ones (convolutions, products, pooling, elementwise) their values within the tolerance
of :mod:`compiler.model.cpu_kernels_float` (how a model's kernels are built, cached and fallen
back from: tests/runtime/test_model_kernels.py)."""

from __future__ import annotations

import tempfile
from pathlib import Path

import numpy as np
import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st

from compiler.model.cpu_kernels import cpu_library
from compiler.model.cpu_kernels_float import FLOAT_OPS
from runtime.model import TensorSlot
from runtime.model.kernels import _load
from runtime.opset import OPERATORS
from runtime.opset.blocked import (
    block_channels,
    block_conv_weights,
    block_depthwise_weights,
    pack_panels,
)


def _run_library(op, x: np.ndarray, out_shape, out_dtype, attrs) -> np.ndarray:
    source = TensorSlot("x", x.shape, str(x.dtype), 0)
    target = TensorSlot("y", tuple(out_shape), out_dtype, 0)
    library = cpu_library(op, [source], target, attrs, "llvm")
    assert library is not None
    out = np.zeros(out_shape, out_dtype)
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "step.so"
        path.write_bytes(library)
        entry = _load(path, 2)
    entry(x.ctypes.data, out.ctypes.data, None)
    return out


@settings(max_examples=15, deadline=None)
@given(
    shape=st.sampled_from([(1, 3, 5, 7), (2, 16, 4, 4), (1, 10), (1, 8)]),
    exponent=st.integers(-3, 8),
    seed=st.integers(0, 2**16),
)
def test_quantize_and_dequantize_libraries_equal_the_numpy_kernels(shape, exponent, seed):
    rng = np.random.default_rng(seed)
    scale = 2.0**-exponent
    x = (rng.standard_normal(shape) * 200 * scale).astype(np.float32)
    x.ravel()[: x.size // 4] = np.round(x.ravel()[: x.size // 4] / scale) * scale + scale / 2
    attrs = {"scale": scale, "zero_point": 0, "dtype": "int8"}
    q = _run_library("QuantizeLinear", x, shape, "int8", attrs)
    # ties to even too
    np.testing.assert_array_equal(q, OPERATORS["QuantizeLinear"].kernel(x, **attrs))
    f = _run_library("DequantizeLinear", q, shape, "float32", attrs)
    np.testing.assert_array_equal(f, OPERATORS["DequantizeLinear"].kernel(q, **attrs))


@settings(max_examples=15, deadline=None)
@given(
    scale=st.floats(2.0**-13, 8.0, width=32),
    zero_point=st.integers(-20, 20),
    seed=st.integers(0, 2**16),
)
def test_quantize_library_rounds_as_numpy_at_any_scale_ties_included(scale, zero_point, seed):
    """Scales that are not powers of two (a pre-quantized model's): values whose quotient is
    an exact float32 tie round to even in both (the library divides as IEEE does, with no
    reciprocal)."""
    s32 = np.float32(scale)
    x = (np.random.default_rng(seed).standard_normal((2, 500)) * 100 * s32).astype(np.float32)
    ties = ((np.round(x[1] / s32) + np.float32(0.5)) * s32).astype(np.float32)
    x[1] = ties
    attrs = {"scale": float(s32), "zero_point": zero_point, "dtype": "int8"}
    q = _run_library("QuantizeLinear", x, x.shape, "int8", attrs)
    np.testing.assert_array_equal(q, OPERATORS["QuantizeLinear"].kernel(x, **attrs))


@settings(max_examples=15, deadline=None)
@given(
    batch=st.sampled_from([1, 2]),
    channels=st.integers(1, 40),
    spatial=st.sampled_from([(), (1, 1), (3, 5)]),
    block=st.sampled_from([4, 16]),
    seed=st.integers(0, 2**16),
)
def test_pack_and_unpack_libraries_equal_the_numpy_kernels(batch, channels, spatial, block, seed):
    n = 2 * batch
    x = np.random.default_rng(seed).integers(-128, 128, (n, channels, *spatial)).astype(np.int8)
    attrs = {"batch": batch, "block": block, "channels": channels}
    expected = OPERATORS["Pack"].kernel(x, **attrs)
    packed = _run_library("Pack", x, expected.shape, "int8", attrs)
    np.testing.assert_array_equal(packed, expected)
    np.testing.assert_array_equal(_run_library("Unpack", packed, x.shape, "int8", attrs), x)


@settings(max_examples=15, deadline=None)
@given(
    groups=st.integers(1, 3),
    depth=st.integers(1, 40),
    columns=st.integers(1, 40),
    block=st.sampled_from([4, 16]),
    seed=st.integers(0, 2**16),
)
def test_pack_weights_library_equals_the_numpy_kernel_and_the_block_formula(
    groups, depth, columns, block, seed
):
    w = np.random.default_rng(seed).integers(-128, 128, (groups, depth, columns)).astype(np.int8)
    expected = OPERATORS["PackWeights"].kernel(w, block=block)
    g, n, k, i, j = np.indices(expected.shape)
    row, column = k * block + j, n * block + i
    inside = (row < depth) & (column < columns)
    formula = np.where(inside, w[g, np.minimum(row, depth - 1), np.minimum(column, columns - 1)], 0)
    np.testing.assert_array_equal(expected, formula)
    packed = _run_library("PackWeights", w, expected.shape, "int8", {"block": block})
    np.testing.assert_array_equal(packed, expected)


def test_steps_without_a_declaration_keep_their_numpy_kernel():
    slot = TensorSlot("x", (1, 10), "float32", 0)
    assert cpu_library("Softmax", [slot], slot, {"axis": 1}, "llvm") is None


# ----------------------------------------------------------------------- float32 kernels
def _library_and_numpy(op, arrays, attrs):
    """``(ours, numpy's)`` outputs of ``op`` on ``arrays``; ours None where the builder
    declares no kernel for the step."""
    want = OPERATORS[op].kernel(*arrays, **attrs)
    slots = [TensorSlot(f"x{k}", a.shape, str(a.dtype), 0) for k, a in enumerate(arrays)]
    target = TensorSlot("y", want.shape, str(want.dtype), 0)
    library = cpu_library(op, slots, target, attrs, "llvm")
    if library is None:
        return None, want
    got = np.full(want.shape, np.nan, want.dtype)
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "step.so"
        path.write_bytes(library)
        entry = _load(path, len(slots) + 1)
    entry(*(np.ascontiguousarray(a).ctypes.data for a in arrays), got.ctypes.data, None)
    return got, want


def _close(got, want):
    """The tolerance of sums in another order: 1e-5 of the output's largest magnitude."""
    assert got is not None
    scale = float(np.abs(want).max()) if want.size else 0.0
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5 * scale)


def _f32(rng, *shape):
    return rng.standard_normal(shape).astype(np.float32)


@settings(max_examples=12, deadline=None)
@given(
    channels=st.integers(1, 20),
    out_channels=st.integers(1, 40),
    size=st.tuples(st.integers(3, 11), st.integers(3, 11)),
    kernel=st.tuples(st.integers(1, 3), st.integers(1, 3)),
    stride=st.integers(1, 3),
    pads=st.tuples(*[st.integers(0, 2)] * 4),
    bias=st.booleans(),
    batch=st.integers(1, 2),
    seed=st.integers(0, 2**16),
)
def test_conv_library_equals_the_numpy_kernel(
    channels, out_channels, size, kernel, stride, pads, bias, batch, seed
):
    rng = np.random.default_rng(seed)
    arrays = [_f32(rng, batch, channels, *size), _f32(rng, out_channels, channels, *kernel)]
    if bias:
        arrays.append(_f32(rng, out_channels))
    attrs = {"strides": (stride, stride), "pads": pads, "dilations": (1, 1), "groups": 1}
    _close(*_library_and_numpy("Conv", arrays, attrs))


@settings(max_examples=10, deadline=None)
@given(
    channels=st.integers(1, 40),
    size=st.integers(3, 12),
    kernel=st.sampled_from([(3, 3), (5, 5), (3, 1)]),
    stride=st.integers(1, 2),
    pads=st.tuples(*[st.integers(0, 2)] * 4),
    bias=st.booleans(),
    seed=st.integers(0, 2**16),
)
def test_depthwise_conv_library_equals_the_numpy_kernel(
    channels, size, kernel, stride, pads, bias, seed
):
    # a window must fit the padded input (else no convolution is defined)
    assume(size + pads[0] + pads[2] >= kernel[0] and size + pads[1] + pads[3] >= kernel[1])
    rng = np.random.default_rng(seed)
    arrays = [_f32(rng, 1, channels, size, size), _f32(rng, channels, 1, *kernel)]
    if bias:
        arrays.append(_f32(rng, channels))
    attrs = {"strides": (stride, stride), "pads": pads, "dilations": (1, 1), "groups": channels}
    _close(*_library_and_numpy("Conv", arrays, attrs))


@settings(max_examples=12, deadline=None)
@given(
    blocks=st.tuples(st.integers(1, 3), st.sampled_from([1, 4, 8, 16])),
    out_block=st.sampled_from([1, 8, 16, 32]),
    size=st.integers(3, 9),
    kernel=st.sampled_from([(1, 1), (3, 3), (3, 1)]),
    stride=st.integers(1, 2),
    pads=st.tuples(*[st.integers(0, 1)] * 4),
    bias=st.booleans(),
    clip=st.sampled_from([(-np.inf, np.inf), (0.0, np.inf), (0.0, 0.5)]),
    seed=st.integers(0, 2**16),
)
def test_blocked_conv_libraries_equal_the_numpy_kernels(
    blocks, out_block, size, kernel, stride, pads, bias, clip, seed
):
    """ConvNCHWc and DepthwiseNCHWc (the CPU target's blocked convolutions, an activation
    fused or not) against their numpy kernels: any blocks, pads, strides and windows."""
    count, block = blocks
    c = count * block
    rng = np.random.default_rng(seed)
    x = block_channels(_f32(rng, 1, c, size, size), block=block)
    geometry = {"strides": (stride, stride), "pads": pads, "dilations": (1, 1)}
    attrs = {**geometry, "lo": clip[0], "hi": clip[1]}
    conv = [x, block_conv_weights(_f32(rng, out_block * 2, c, *kernel), block, out_block)]
    depthwise = [x, block_depthwise_weights(_f32(rng, c, 1, *kernel), block)]
    if bias:
        conv.append(_f32(rng, out_block * 2))
        depthwise.append(_f32(rng, c))
    for op, arrays, groups in (("ConvNCHWc", conv, 1), ("DepthwiseNCHWc", depthwise, c)):
        got, want = _library_and_numpy(op, arrays, {**attrs, "groups": groups})
        # the tolerance of the sums is relative to their magnitude before the clip
        sums = OPERATORS[op].kernel(*arrays, **geometry, groups=groups, lo=-np.inf, hi=np.inf)
        np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5 * float(np.abs(sums).max()))


@settings(max_examples=12, deadline=None)
@given(
    block=st.sampled_from([1, 8, 16]),
    size=st.tuples(st.integers(3, 9), st.integers(3, 9)),
    kernel=st.sampled_from([(2, 2), (3, 3), (3, 2)]),
    strides=st.tuples(st.integers(1, 3), st.integers(1, 3)),
    pads=st.tuples(*[st.integers(0, 1)] * 4),
    ceil_mode=st.booleans(),
    seed=st.integers(0, 2**16),
)
def test_blocked_max_pool_library_equals_the_numpy_kernel_exactly(
    block, size, kernel, strides, pads, ceil_mode, seed
):
    x = block_channels(_f32(np.random.default_rng(seed), 1, 2 * block, *size), block=block)
    attrs = {
        "kernel": kernel,
        "strides": strides,
        "pads": pads,
        "ceil_mode": ceil_mode,
        "count_include_pad": False,
        "dilations": (1, 1),
    }
    got, want = _library_and_numpy("MaxPoolNCHWc", [x], attrs)
    np.testing.assert_array_equal(got, want)


@settings(max_examples=10, deadline=None)
@given(
    rows=st.tuples(st.integers(1, 2), st.integers(1, 9)),
    depth=st.integers(1, 40),
    columns=st.integers(1, 70),
    width=st.sampled_from([8, 16, 32]),
    bias=st.booleans(),
    seed=st.integers(0, 2**16),
)
def test_packed_matmul_library_equals_the_numpy_kernel(rows, depth, columns, width, bias, seed):
    rng = np.random.default_rng(seed)
    arrays = [_f32(rng, *rows, depth), pack_panels(_f32(rng, depth, columns), width)]
    if bias:
        arrays.append(_f32(rng, columns))
    _close(*_library_and_numpy("PackedMatMul", arrays, {"columns": columns}))


def test_layout_changes_of_blocked_values_are_exact():
    x = _f32(np.random.default_rng(0), 2, 48, 5, 7)
    blocked, want = _library_and_numpy("ToNCHWc", [x], {"block": 16})
    np.testing.assert_array_equal(blocked, want)
    back, want = _library_and_numpy("FromNCHWc", [blocked], {})
    np.testing.assert_array_equal(back, x)


@pytest.mark.parametrize(
    ("w_shape", "attrs"),
    [
        ((8, 4, 3, 3), {"strides": (1, 1), "pads": (1,) * 4, "dilations": (2, 2), "groups": 1}),
        ((8, 4, 3, 3), {"strides": (1, 2), "pads": (1,) * 4, "dilations": (1, 1), "groups": 1}),
        ((8, 2, 3, 3), {"strides": (1, 1), "pads": (1,) * 4, "dilations": (1, 1), "groups": 2}),
        ((8, 1, 3, 3), {"strides": (1, 1), "pads": (1,) * 4, "dilations": (1, 1), "groups": 4}),
    ],
    ids=["dilated", "unequal-strides", "grouped", "depthwise-multiplier-2"],
)
def test_conv_cases_without_a_kernel_keep_the_numpy_one(w_shape, attrs):
    rng = np.random.default_rng(0)
    got, want = _library_and_numpy("Conv", [_f32(rng, 1, 4, 9, 9), _f32(rng, *w_shape)], attrs)
    assert got is None and want.shape[1] == 8


@settings(max_examples=12, deadline=None)
@given(
    m=st.integers(1, 9),
    k=st.integers(1, 40),
    n=st.integers(1, 40),
    trans_b=st.booleans(),
    alpha=st.sampled_from([1.0, 0.5, -2.0]),
    beta=st.sampled_from([1.0, 0.25]),
    c=st.sampled_from([None, "row", "column", "full", "scalar"]),
    seed=st.integers(0, 2**16),
)
def test_gemm_library_equals_the_numpy_kernel(m, k, n, trans_b, alpha, beta, c, seed):
    rng = np.random.default_rng(seed)
    arrays = [_f32(rng, m, k), _f32(rng, *((n, k) if trans_b else (k, n)))]
    shapes = {"row": (n,), "column": (m, 1), "full": (m, n), "scalar": ()}
    if c is not None:
        arrays.append(_f32(rng, *shapes[c]))
    attrs = {"alpha": alpha, "beta": beta, "trans_a": False, "trans_b": trans_b}
    _close(*_library_and_numpy("Gemm", arrays, attrs))


@settings(max_examples=8, deadline=None)
@given(
    lead=st.sampled_from([(), (2,), (2, 3)]),
    m=st.integers(1, 7),
    k=st.integers(1, 20),
    n=st.integers(1, 20),
    seed=st.integers(0, 2**16),
)
def test_matmul_library_equals_the_numpy_kernel(lead, m, k, n, seed):
    rng = np.random.default_rng(seed)
    _close(*_library_and_numpy("MatMul", [_f32(rng, *lead, m, k), _f32(rng, k, n)], {}))


def test_products_without_a_kernel_keep_the_numpy_one():
    rng = np.random.default_rng(0)
    transposed = {"alpha": 1.0, "beta": 1.0, "trans_a": True, "trans_b": False}
    assert _library_and_numpy("Gemm", [_f32(rng, 4, 3), _f32(rng, 4, 5)], transposed)[0] is None
    batched = [_f32(rng, 2, 3, 4), _f32(rng, 2, 4, 5)]
    assert _library_and_numpy("MatMul", batched, {})[0] is None


@settings(max_examples=15, deadline=None)
@given(
    kind=st.sampled_from(["MaxPool", "AveragePool"]),
    size=st.tuples(st.integers(2, 10), st.integers(2, 10)),
    kernel=st.integers(1, 3),
    stride=st.integers(1, 3),
    pads=st.tuples(*[st.integers(0, 2)] * 4),
    ceil_mode=st.booleans(),
    count_include_pad=st.booleans(),
    seed=st.integers(0, 2**16),
)
def test_pool_libraries_equal_the_numpy_kernels(
    kind, size, kernel, stride, pads, ceil_mode, count_include_pad, seed
):
    pads = tuple(min(p, kernel - 1) for p in pads)  # the opset's rule: a pad under the window
    if min(size) + min(pads) < kernel:
        return
    x = _f32(np.random.default_rng(seed), 2, 3, *size)
    attrs = {
        "kernel": (kernel, kernel),
        "strides": (stride, stride),
        "pads": pads,
        "ceil_mode": ceil_mode,
        "count_include_pad": count_include_pad,
        "dilations": (1, 1),
    }
    got, want = _library_and_numpy(kind, [x], attrs)
    if kind == "MaxPool":
        np.testing.assert_array_equal(got, want)  # a maximum is exact
    elif got is not None:
        _close(got, want)
    else:  # only windows whose divisor varies keep numpy's kernel
        assert ceil_mode or (any(pads) and not count_include_pad)


def test_global_average_pool_library_equals_the_numpy_kernel():
    x = _f32(np.random.default_rng(3), 2, 5, 7, 6)
    _close(*_library_and_numpy("GlobalAveragePool", [x], {}))


@settings(max_examples=15, deadline=None)
@given(
    op=st.sampled_from(["Add", "Sub", "Mul", "Div"]),
    shapes=st.sampled_from(
        [
            ((1, 8, 5, 5), (1, 8, 5, 5)),
            ((1, 8, 5, 5), (8, 1, 1)),
            ((3, 1, 5), (4, 1)),
            ((2, 7), ()),
            ((), (3, 4)),
            ((33,), (33,)),
        ]
    ),
    seed=st.integers(0, 2**16),
)
def test_binary_libraries_equal_the_numpy_kernels_bit_for_bit(op, shapes, seed):
    rng = np.random.default_rng(seed)
    arrays = [_f32(rng, *shape) for shape in shapes]
    got, want = _library_and_numpy(op, arrays, {})
    np.testing.assert_array_equal(got, want)


@settings(max_examples=10, deadline=None)
@given(
    op=st.sampled_from(["Relu", "Clip", "Flatten", "Reshape"]),
    shape=st.sampled_from([(1, 16, 7, 7), (5,), (2, 3, 1, 1)]),
    seed=st.integers(0, 2**16),
)
def test_unary_libraries_equal_the_numpy_kernels_bit_for_bit(op, shape, seed):
    x = _f32(np.random.default_rng(seed), *shape) * 4
    attrs = {
        "Relu": {},
        "Clip": {"lo": 0.0, "hi": 6.0},
        "Flatten": {"axis": 1 if len(shape) > 1 else 0},
        "Reshape": {"shape": (int(np.prod(shape)),)},
    }[op]
    got, want = _library_and_numpy(op, [x], attrs)
    np.testing.assert_array_equal(got, want)


def test_erf_library_is_within_5e_7_of_numpy_everywhere():
    """Every float32 in [-6, 6] at steps of 2**-12 (past 4 erf is 1 to float32), the signed
    zeros and the infinities."""
    x = np.concatenate([np.arange(-6, 6, 2.0**-12), [-0.0, 0.0, -np.inf, np.inf]]).astype(
        np.float32
    )
    got, want = _library_and_numpy("Erf", [x], {})
    assert np.abs(got.astype(np.float64) - want).max() <= 5e-7
    np.testing.assert_array_equal(np.sign(got), np.sign(want))  # odd, with erf(0) = 0


def test_integer_operands_keep_their_numpy_kernels():
    a = np.arange(12, dtype=np.int32).reshape(3, 4)
    assert _library_and_numpy("Add", [a, a], {})[0] is None
    assert set(FLOAT_OPS) >= {"Conv", "Gemm", "MatMul", "MaxPool", "Relu", "Add", "Mul"}


@pytest.mark.parametrize("bounds", [(-np.inf, 6.0), (0.0, np.inf), (5.0, -1.0)])
def test_clip_library_takes_infinite_and_crossed_bounds_as_numpy(bounds):
    x = _f32(np.random.default_rng(1), 3, 17) * 10
    got, want = _library_and_numpy("Clip", [x], {"lo": bounds[0], "hi": bounds[1]})
    np.testing.assert_array_equal(got, want)
