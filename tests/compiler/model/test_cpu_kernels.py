"""The CPU steps compiled into shared libraries give the numpy kernels' bytes exactly (how a
model's kernels are built, cached and fallen back from: tests/runtime/test_model_kernels.py)."""

from __future__ import annotations

import tempfile
from pathlib import Path

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from compiler.model.cpu_kernels import cpu_library
from runtime.model import TensorSlot
from runtime.model.kernels import _load
from runtime.opset import OPERATORS


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
