"""The indexing and reduction operators of the operator set (Gather, Slice, Expand, Tile,
ReduceMean/Sum/Max, ArgMax, and Concat of any dtype): their kernels against plain numpy
indexing and reductions, their type rules against the kernels' results, and the typed errors
(:class:`OperandError` from a type rule, :class:`OperatorError` from a kernel) for indices,
bounds and axes that do not fit."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from runtime.opset import OPERATORS, AxisAttrs, OperandError, OperatorError, TensorType
from runtime.opset.indexing import ExpandAttrs, GatherAttrs, SliceAttrs, TileAttrs
from runtime.opset.reduction import ArgMaxAttrs, ReduceAttrs

FEW = settings(max_examples=60, deadline=None)

shapes = st.lists(st.integers(1, 5), min_size=1, max_size=4).map(tuple)


def _types(*arrays: np.ndarray) -> list[TensorType]:
    return [TensorType(a.shape, str(a.dtype)) for a in arrays]


def _apply(name: str, attrs, *arrays: np.ndarray, consts=None) -> np.ndarray:
    """The kernel's result, checked against the type rule's type for the same operands."""
    op = OPERATORS[name]
    (want,) = op.output_types(attrs, _types(*arrays), consts)
    got = op.kernel(*arrays, **vars(attrs))
    assert (got.shape, str(got.dtype)) == (want.shape, want.dtype)
    return got


def _refused(name: str, attrs, *arrays: np.ndarray, words: str, consts=None) -> None:
    with pytest.raises(OperandError, match=words):
        OPERATORS[name].output_types(attrs, _types(*arrays), consts)


# ----------------------------------------------------------------------------- Gather
@given(data=st.data(), shape=shapes, index_shape=st.lists(st.integers(0, 3), max_size=2))
@FEW
def test_gather_is_numpy_indexing_along_the_axis(data, shape, index_shape):
    axis = data.draw(st.integers(0, len(shape) - 1))
    size = shape[axis]
    rng = np.random.default_rng(data.draw(st.integers(0, 2**16)))
    x = rng.standard_normal(shape).astype(np.float32)
    dtype = data.draw(st.sampled_from([np.int32, np.int64]))
    indices = rng.integers(-size, size, index_shape).astype(dtype)
    want = x[(slice(None),) * axis + (indices,)]
    got = _apply("Gather", GatherAttrs(axis), x, indices, consts=[None, indices])
    np.testing.assert_array_equal(got, want)


@pytest.mark.parametrize("dtype", ["float32", "int8", "int32", "int64", "bool"])
def test_gather_keeps_the_data_dtype_and_a_scalar_index_drops_the_axis(dtype):
    x = (np.arange(24).reshape(2, 3, 4) % 5).astype(dtype)
    index = np.array(-1, np.int64)
    got = _apply("Gather", GatherAttrs(1), x, index)
    np.testing.assert_array_equal(got, x[:, -1])


@pytest.mark.parametrize("bad", [3, -4, 100])
def test_gather_of_constant_indices_out_of_range_is_an_operand_error(bad):
    x, indices = np.zeros((2, 3), np.float32), np.array([0, bad], np.int64)
    _refused("Gather", GatherAttrs(1), x, indices, consts=[None, indices], words="out of range")


@pytest.mark.parametrize("bad", [3, -4])
def test_gather_of_computed_indices_out_of_range_is_an_operator_error_at_run_time(bad):
    x, indices = np.zeros((2, 3), np.float32), np.array([[1], [bad]], np.int32)
    OPERATORS["Gather"].output_types(GatherAttrs(1), _types(x, indices))  # (not constant)
    with pytest.raises(OperatorError, match=f"index {bad} is out of range for axis 1 of size 3"):
        OPERATORS["Gather"].kernel(x, indices, axis=1)


def test_gather_refuses_float_indices_and_an_axis_out_of_range():
    x = np.zeros((2, 3), np.float32)
    _refused("Gather", GatherAttrs(0), x, np.zeros(2, np.float32), words="int32 or int64")
    _refused("Gather", GatherAttrs(2), x, np.zeros(2, np.int64), words="axis 2")
    _refused(
        "Gather", GatherAttrs(0), np.zeros((), np.float32), np.zeros(2, np.int64), words="rank >= 1"
    )


# ----------------------------------------------------------------------------- Slice
@st.composite
def resolved_bounds(draw, size: int) -> tuple[int, int, int]:
    """A (start, stop, step) as ONNX's clamping leaves it for an axis of ``size``."""
    step = draw(st.sampled_from([-3, -2, -1, 1, 2, 3]))
    if step > 0:
        return draw(st.integers(0, size)), draw(st.integers(0, size)), step
    top = max(size - 1, 0)
    return draw(st.integers(0, top)), draw(st.integers(-1, top)), step


def _walk(start: int, stop: int, step: int) -> list[int]:
    """The indices from ``start`` by ``step`` before reaching ``stop``."""
    out, i = [], start
    while (i < stop) if step > 0 else (i > stop):
        out.append(i)
        i += step
    return out


@given(data=st.data(), shape=st.lists(st.integers(0, 6), min_size=1, max_size=3).map(tuple))
@FEW
def test_slice_takes_the_indices_each_axis_walks(data, shape):
    bounds = [data.draw(resolved_bounds(d)) for d in shape]
    x = np.arange(int(np.prod(shape)), dtype=np.int64).reshape(shape)
    want = x
    for axis, b in enumerate(bounds):
        walked = _walk(*b) if shape[axis] else []  # (an empty axis has nothing to walk)
        want = np.take(want, np.array(walked, np.int64), axis=axis)
    attrs = SliceAttrs(*(tuple(b[k] for b in bounds) for k in range(3)))
    np.testing.assert_array_equal(_apply("Slice", attrs, x), want)


def test_slice_kernel_takes_lists():
    x = np.arange(20, dtype=np.float32).reshape(4, 5)
    got = OPERATORS["Slice"].kernel(x, starts=[3, 1], stops=[-1, 5], steps=[-2, 3])
    np.testing.assert_array_equal(got, x[3::-2, 1:5:3])


@pytest.mark.parametrize(
    ("attrs", "words"),
    [
        (SliceAttrs((0, 0), (4, 5), (1, 0)), "the step is 0"),
        (SliceAttrs((0,), (4,), (1,)), "one start, stop and step per axis"),
        (SliceAttrs((0, 6), (4, 5), (1, 1)), "unresolved"),
        (SliceAttrs((0, 0), (-1, 5), (1, 1)), "unresolved"),
        (SliceAttrs((4, 0), (0, 5), (-1, 1)), "unresolved"),
    ],
)
def test_slice_refuses_unresolved_bounds(attrs, words):
    _refused("Slice", attrs, np.zeros((4, 5), np.float32), words=words)


# ----------------------------------------------------------------------------- Expand, Tile
@pytest.mark.parametrize(
    ("source", "target"), [((3, 1), (2, 3, 4)), ((1,), (5,)), ((2, 1, 3), (2, 4, 3)), ((), (2,))]
)
def test_expand_is_numpy_broadcasting(source, target):
    x = np.arange(int(np.prod(source)), dtype=np.int32).reshape(source)
    got = _apply("Expand", ExpandAttrs(target), x)
    np.testing.assert_array_equal(got, np.broadcast_to(x, target))
    assert got.flags.writeable and got.flags.c_contiguous


@pytest.mark.parametrize(("source", "target"), [((3, 2), (3, 4)), ((2, 3), (3,)), ((2,), (-2,))])
def test_expand_refuses_a_shape_the_input_does_not_broadcast_to(source, target):
    words = "negative" if min(target) < 0 else "broadcast"
    _refused("Expand", ExpandAttrs(target), np.zeros(source, np.float32), words=words)


@pytest.mark.parametrize(
    ("shape", "repeats"), [((2, 3), (1, 2)), ((2,), (3,)), ((1, 2, 2), (2, 0, 1))]
)
def test_tile_is_numpy_tile(shape, repeats):
    x = np.arange(int(np.prod(shape)), dtype=np.float32).reshape(shape)
    np.testing.assert_array_equal(_apply("Tile", TileAttrs(repeats), x), np.tile(x, repeats))
    np.testing.assert_array_equal(
        OPERATORS["Tile"].kernel(x, repeats=list(repeats)), np.tile(x, repeats)
    )


def test_tile_refuses_a_repeat_per_axis_missing_or_negative():
    x = np.zeros((2, 3), np.float32)
    _refused("Tile", TileAttrs((2,)), x, words="needs 2 repeats")
    _refused("Tile", TileAttrs((2, -1)), x, words="negative")


# ----------------------------------------------------------------------------- reductions
@st.composite
def reductions(draw, dtypes=(np.float32,)):
    shape = draw(shapes)
    axes = draw(st.sets(st.integers(0, len(shape) - 1)))
    dtype = draw(st.sampled_from(dtypes))
    rng = np.random.default_rng(draw(st.integers(0, 2**16)))
    if np.dtype(dtype).kind == "f":
        x = rng.standard_normal(shape).astype(dtype)
    else:
        x = rng.integers(-50, 50, shape).astype(dtype)
    return x, tuple(sorted(axes)), draw(st.booleans())


@given(case=reductions())
@FEW
def test_reduce_mean_is_numpy_mean(case):
    x, axes, keepdims = case
    got = _apply("ReduceMean", ReduceAttrs(axes, keepdims), x)
    want = np.mean(x.astype(np.float64), axis=axes, keepdims=keepdims)
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6)


@given(case=reductions((np.float32, np.int32, np.int64)))
@FEW
def test_reduce_sum_is_numpy_sum_in_the_operand_dtype(case):
    x, axes, keepdims = case
    got = _apply("ReduceSum", ReduceAttrs(axes, keepdims), x)
    want = np.sum(x.astype(np.float64), axis=axes, keepdims=keepdims)
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5)


@given(case=reductions((np.float32, np.int8, np.int32, np.int64)))
@FEW
def test_reduce_max_is_numpy_max(case):
    x, axes, keepdims = case
    got = _apply("ReduceMax", ReduceAttrs(axes, keepdims), x)
    want = np.amax(x, axis=axes, keepdims=keepdims) if axes else x
    np.testing.assert_array_equal(got, want)


@given(case=reductions((np.float32, np.int8, np.int64)), last=st.booleans())
@FEW
def test_arg_max_is_the_first_or_last_index_of_the_greatest(case, last):
    x, _, keepdims = case
    x = (x // 20) if x.dtype.kind == "i" else np.round(x)  # (ties)
    for axis in range(x.ndim):
        got = _apply("ArgMax", ArgMaxAttrs(axis, keepdims, last), x)

        def pick(v: np.ndarray) -> int:
            hits = np.flatnonzero(v == v.max())
            return int(hits[-1] if last else hits[0])

        want = np.apply_along_axis(pick, axis, x)
        if keepdims:
            want = np.expand_dims(want, axis)
        np.testing.assert_array_equal(got, want)


def test_reduction_kernels_take_lists():
    x = np.arange(24, dtype=np.float32).reshape(2, 3, 4)
    for name, fn in (("ReduceMean", np.mean), ("ReduceSum", np.sum), ("ReduceMax", np.max)):
        got = OPERATORS[name].kernel(x, axes=[0, 2], keepdims=True)
        np.testing.assert_allclose(got, fn(x, axis=(0, 2), keepdims=True))


@pytest.mark.parametrize(
    ("name", "attrs", "x", "words"),
    [
        ("ReduceSum", ReduceAttrs((0, 0)), np.zeros((2, 3), np.float32), "not distinct"),
        ("ReduceSum", ReduceAttrs((2,)), np.zeros((2, 3), np.float32), "not distinct"),
        ("ReduceMean", ReduceAttrs((1,)), np.zeros((2, 0), np.float32), "size 0"),
        ("ReduceMax", ReduceAttrs((1,)), np.zeros((2, 0), np.int32), "size 0"),
        ("ReduceMean", ReduceAttrs((1,)), np.zeros((2, 3), np.int32), "float32"),
        ("ReduceSum", ReduceAttrs((1,)), np.zeros((2, 3), bool), "got bool"),
        ("ArgMax", ArgMaxAttrs(2), np.zeros((2, 3), np.float32), "not distinct"),
        ("ArgMax", ArgMaxAttrs(0), np.zeros((0, 3), np.float32), "size 0"),
        ("ArgMax", ArgMaxAttrs(0), np.zeros((2, 3), bool), "float32"),
    ],
)
def test_reductions_refuse_axes_and_dtypes_they_cannot_compute(name, attrs, x, words):
    _refused(name, attrs, x, words=words)


def test_reduce_sum_of_an_empty_axis_is_zero():
    got = _apply("ReduceSum", ReduceAttrs((1,), False), np.zeros((2, 0), np.int64))
    np.testing.assert_array_equal(got, np.zeros(2, np.int64))


# ----------------------------------------------------------------------------- Concat
@pytest.mark.parametrize("dtype", ["float32", "int8", "int32", "int64", "bool"])
def test_concat_joins_values_of_any_one_dtype(dtype):
    a, b = np.ones((2, 1), dtype), np.zeros((2, 3), dtype)
    np.testing.assert_array_equal(_apply("Concat", AxisAttrs(1), a, b), np.concatenate([a, b], 1))


def test_concat_refuses_mixed_dtypes():
    a, b = np.ones(2, np.int64), np.ones(2, np.int32)
    _refused("Concat", AxisAttrs(0), a, b, words="mixes operand dtypes")
