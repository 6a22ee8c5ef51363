"""The operator set's kernels on the dtypes beyond float32 and int8 (float16, float64, int16, the
unsigned integers, and ml_dtypes' narrow types in Cast, QuantizeLinear and DequantizeLinear),
and the operators that gained modes (cubic Resize, Pad's wrap, Python's Mod of floats, Clip of
integers), each against onnx's reference implementation
(``onnx.reference.ReferenceEvaluator``) run on a one-node model: the same dtype, the same
values."""

from __future__ import annotations

import subprocess
import sys

import numpy as np
import pytest
from onnx import TensorProto, helper
from onnx.reference import ReferenceEvaluator

from runtime.opset import OPERATORS, OperandError, TensorType, kernel_kwargs
from runtime.opset.arithmetic import CastAttrs, ModAttrs
from runtime.opset.base import (
    FLOAT8,
    FLOATS,
    INTEGERS,
    NARROW,
    NARROW_FLOATS,
    NARROW_INTEGERS,
    NUMERIC,
    NoAttrs,
)
from runtime.opset.elementwise import ClipAttrs
from runtime.opset.movement import PadAttrs
from runtime.opset.pooling import PoolAttrs
from runtime.opset.quantization import QuantAttrs
from runtime.opset.reduction import ReduceAttrs
from runtime.opset.sampling import ResizeAttrs


def _onnx(op_type: str, inputs: list[np.ndarray], opset: int = 21, **attrs: object) -> np.ndarray:
    """onnx's reference output of one ``op_type`` node (of ``opset``) on ``inputs`` (all graph
    inputs)."""
    names = [f"x{k}" for k in range(len(inputs))]
    node = helper.make_node(op_type, names, ["y"], **attrs)
    graph = helper.make_graph(
        [node],
        "one",
        [
            helper.make_tensor_value_info(n, helper.np_dtype_to_tensor_dtype(a.dtype), a.shape)
            for n, a in zip(names, inputs, strict=True)
        ],
        [helper.make_tensor_value_info("y", TensorProto.UNDEFINED, None)],
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)])
    return ReferenceEvaluator(model).run(None, dict(zip(names, inputs, strict=True)))[0]


def _ours(name: str, attrs: object, inputs: list[np.ndarray]) -> np.ndarray:
    """Our kernel's output, checked against the operator's own type rule."""
    op = OPERATORS[name]
    (ty,) = op.output_types(attrs, [TensorType(a.shape, str(a.dtype)) for a in inputs])
    with np.errstate(all="ignore"):
        out = np.asarray(op.kernel(*inputs, **kernel_kwargs(attrs)))
    assert (out.shape, str(out.dtype)) == (ty.shape, ty.dtype)
    return out


def _operands(dtype: str, rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
    """Two broadcast operands of ``dtype``: both signs where it has them, wrap-around
    near its extremes, no zero divisor."""
    if dtype in FLOATS:
        a = rng.uniform(-50, 50, (3, 4)).astype(dtype)
        b = rng.uniform(0.5, 9, (4,)).astype(dtype) * np.array([1, -1, 1, -1], dtype)
        return a, b
    info = np.iinfo(dtype)
    a = rng.integers(info.min, info.max, (3, 4), dtype=dtype, endpoint=True)
    low = 1 if info.min == 0 else -7
    b = rng.integers(low, 8, (4,), dtype=dtype)
    return a, np.where(b == 0, 3, b).astype(dtype)


@pytest.mark.parametrize("dtype", NUMERIC)
@pytest.mark.parametrize("op", ["Add", "Sub", "Mul", "Div", "Max", "Min"])
def test_arithmetic_keeps_every_numeric_dtype(op: str, dtype: str) -> None:
    a, b = _operands(dtype, np.random.default_rng(0))
    got = _ours(op, NoAttrs(), [a, b])
    np.testing.assert_allclose(got, _onnx(op, [a, b]), rtol=1e-3 if dtype == "float16" else 1e-6)


@pytest.mark.parametrize("dtype", NUMERIC)
@pytest.mark.parametrize("fmod", [False, True])
def test_mod_follows_the_divisor_or_the_dividend(dtype: str, fmod: bool) -> None:
    a, b = _operands(dtype, np.random.default_rng(1))
    if dtype in FLOATS or not fmod:
        got = _ours("Mod", ModAttrs(fmod), [a, b])
        want = _onnx("Mod", [a, b], fmod=int(fmod))
        np.testing.assert_allclose(got, want, rtol=1e-2 if dtype == "float16" else 1e-6)
    if dtype in FLOATS and not fmod:  # Python's sign rule: the divisor's
        assert np.all((got == 0) | (np.sign(got) == np.sign(np.broadcast_to(b, got.shape))))


@pytest.mark.parametrize("op", ["Equal", "Less", "Greater"])
@pytest.mark.parametrize("dtype", ["float16", "float64", "int16", "uint8", "uint32", "uint64"])
def test_comparisons_of_the_new_dtypes(op: str, dtype: str) -> None:
    a, b = _operands(dtype, np.random.default_rng(2))
    b = np.concatenate([b[:2], a[0, 2:]])  # some equal pairs
    np.testing.assert_array_equal(_ours(op, NoAttrs(), [a, b]), _onnx(op, [a, b]))


_CAST_VALUES = np.array([-300.7, -129.5, -1.5, -0.4, 0.0, 0.5, 2.5, 127.9, 255.2, 70000.3])


@pytest.mark.parametrize("source", [*FLOATS, *INTEGERS, "bool"])
@pytest.mark.parametrize("target", [*FLOATS, *INTEGERS, "bool"])
def test_cast_between_every_pair_of_dtypes(source: str, target: str) -> None:
    if source in FLOATS:
        values = _CAST_VALUES
        if target in INTEGERS:  # ONNX leaves out-of-range float to integer casts undefined
            info = np.iinfo(target)
            values = values[(values > int(info.min) - 1) & (values < int(info.max) + 1)]
        with np.errstate(over="ignore"):  # 70000.3 is float16's infinity
            x = values.astype(source)
    else:
        x = np.array([0, 1, 5, 100, 127]).astype(source)
    got = _ours("Cast", CastAttrs(target), [x])
    with np.errstate(all="ignore"):  # numpy's casts to float16 warn spuriously
        want = _onnx("Cast", [x], to=helper.np_dtype_to_tensor_dtype(np.dtype(target)))
    np.testing.assert_array_equal(got, want)


@pytest.mark.parametrize("dtype", ["int8", "uint8", "int32", "int64", "float16", "float64"])
def test_clip_of_floats_and_integers(dtype: str) -> None:
    x = (
        np.array([-128, -7, 0, 3, 9, 100, 127]).astype(dtype)
        if dtype != "uint8"
        else (np.array([0, 3, 9, 100, 255], dtype))
    )
    lo, hi = np.array(2, dtype), np.array(90, dtype)
    np.testing.assert_array_equal(
        _ours("Clip", ClipAttrs(2.0, 90.0), [x]), _onnx("Clip", [x, lo, hi])
    )
    # a float bound past the integer's range is its extreme
    assert _ours("Clip", ClipAttrs(-1e30, 1e30), [x]).tolist() == x.tolist()


@pytest.mark.parametrize("op", ["Relu", "Exp", "Sqrt", "Tanh", "Sigmoid", "Floor"])
@pytest.mark.parametrize("dtype", ["float16", "float64"])
def test_float_functions_keep_their_precision(op: str, dtype: str) -> None:
    x = np.random.default_rng(3).uniform(0.1, 4, (2, 5)).astype(dtype)
    rtol = 1e-3 if dtype == "float16" else 1e-12
    np.testing.assert_allclose(_ours(op, NoAttrs(), [x]), _onnx(op, [x]), rtol=rtol)


@pytest.mark.parametrize("dtype", ["float16", "float64"])
def test_reductions_keep_their_precision(dtype: str) -> None:
    x = np.random.default_rng(4).uniform(-2, 2, (3, 4, 5)).astype(dtype)
    attrs = ReduceAttrs((1,), True)
    rtol = 1e-3 if dtype == "float16" else 1e-12
    for op in ("ReduceMean", "ReduceSum", "ReduceMax"):
        want = _onnx(op, [x, np.array([1], np.int64)])
        np.testing.assert_allclose(_ours(op, attrs, [x]), want, rtol=rtol, atol=1e-3)


def test_max_pool_of_unsigned_integers_pads_with_their_least_value() -> None:
    x = np.random.default_rng(5).integers(0, 256, (1, 2, 5, 5), dtype=np.uint8)
    attrs = PoolAttrs((3, 3), (2, 2), (1, 1, 1, 1))
    want = _onnx("MaxPool", [x], kernel_shape=[3, 3], strides=[2, 2], pads=[1, 1, 1, 1])
    np.testing.assert_array_equal(_ours("MaxPool", attrs, [x]), want)


def test_pad_wraps_around() -> None:
    x = np.arange(12, dtype=np.int32).reshape(3, 4)
    pads = np.array([2, 1, 1, 3], np.int64)
    attrs = PadAttrs(tuple(pads.tolist()), 0.0, "wrap")
    np.testing.assert_array_equal(_ours("Pad", attrs, [x]), _onnx("Pad", [x, pads], mode="wrap"))


@pytest.mark.parametrize("transform", ["half_pixel", "align_corners", "asymmetric"])
@pytest.mark.parametrize("scales", [(0.6, 0.5), (1.6, 2.0)])
@pytest.mark.parametrize(("a", "exclude"), [(-0.75, False), (-0.5, True)])
def test_cubic_resize(transform: str, scales: tuple, a: float, exclude: bool) -> None:
    x = np.random.default_rng(6).uniform(-1, 1, (1, 2, 5, 6)).astype(np.float32)
    size = tuple(int(np.floor(d * s)) for d, s in zip(x.shape[2:], scales, strict=True))
    attrs = ResizeAttrs(size, scales, "cubic", transform, "round_prefer_floor", a, exclude)
    onnx_scales = np.array([1, 1, *scales], np.float32)
    want = _onnx(
        "Resize",
        [x, np.zeros(0, np.float32), onnx_scales],
        mode="cubic",
        coordinate_transformation_mode=transform,
        cubic_coeff_a=a,
        exclude_outside=int(exclude),
    )
    np.testing.assert_allclose(_ours("Resize", attrs, [x]), want, rtol=1e-5, atol=1e-6)


def test_dtypes_outside_an_operators_rule_are_refused() -> None:
    with pytest.raises(OperandError, match="needs"):
        OPERATORS["Relu"].output_types(NoAttrs(), [TensorType((2,), "uint8")])
    with pytest.raises(OperandError, match="mixes operand dtypes"):
        OPERATORS["Add"].output_types(
            NoAttrs(), [TensorType((2,), "float16"), TensorType((2,), "float32")]
        )


def _bits(array: np.ndarray) -> np.ndarray:
    """``array``'s bytes, one row per element: narrow values compared exactly (NaN too)."""
    array = np.ascontiguousarray(array)
    return array.view(np.uint8).reshape(array.size, -1)


#: Values for the narrow dtypes: both signs, halfway cases, past every float8's range, NaN.
_NARROW_VALUES = np.array(
    [-1e6, -500.0, -17.0, -7.6, -2.5, -1.5, -0.3, 0.0, 0.02, 1.5, 2.5, 3.3, 9.0, 300.0, 6e4, np.nan]
)


@pytest.mark.parametrize("saturate", [True, False])
@pytest.mark.parametrize("source", ["float32", "float16"])
@pytest.mark.parametrize("target", NARROW)
def test_cast_to_the_narrow_dtypes(target: str, source: str, saturate: bool) -> None:
    values = _NARROW_VALUES if target in NARROW_FLOATS else np.arange(-20, 20)
    with np.errstate(over="ignore"):  # 6e4 and 1e6 are float16's infinity
        x = values.astype(source)
    to = helper.np_dtype_to_tensor_dtype(np.dtype(target))
    got = _ours("Cast", CastAttrs(target, saturate), [x])
    with np.errstate(all="ignore"):
        want = _onnx("Cast", [x], opset=25, to=to, saturate=int(saturate))
    assert got.dtype == want.dtype
    np.testing.assert_array_equal(_bits(got), _bits(want))


@pytest.mark.parametrize("saturate", [True, False])
@pytest.mark.parametrize("round_mode", ["up", "down", "nearest"])
def test_cast_to_e8m0_rounds_per_its_mode(round_mode: str, saturate: bool) -> None:
    x = np.array([0.0, 0.7, 1.0, 1.5, 1.75, 3.0, 2.0**-130, 3e38, -5.0, np.inf, np.nan], np.float32)
    got = _ours("Cast", CastAttrs("float8_e8m0fnu", saturate, round_mode), [x])
    to = TensorProto.FLOAT8E8M0
    want = _onnx("Cast", [x], opset=25, to=to, saturate=int(saturate), round_mode=round_mode)
    np.testing.assert_array_equal(_bits(got), _bits(want))


@pytest.mark.parametrize("source", NARROW)
@pytest.mark.parametrize("target", ["float32", "float16", "int8", "int32"])
def test_cast_from_the_narrow_dtypes(source: str, target: str) -> None:
    if source in NARROW_INTEGERS:
        x = np.arange(-2, 2) if source.startswith("int") else np.arange(0, 4)
    else:
        x = np.array([-6.0, -2.0, -0.5, 0.0, 0.5, 1.0, 2.0, 4.0])
        if source == "float8_e8m0fnu":  # powers of two, no sign
            x = np.abs(x[x != 0])
    x = x.astype(source)
    to = helper.np_dtype_to_tensor_dtype(np.dtype(target))
    np.testing.assert_array_equal(
        _ours("Cast", CastAttrs(target), [x]), _onnx("Cast", [x], opset=25, to=to)
    )


_QUANTIZED_NARROW = [*FLOAT8, "float4_e2m1fn", *NARROW_INTEGERS]


@pytest.mark.parametrize("dtype", _QUANTIZED_NARROW)
def test_quantize_and_dequantize_the_narrow_dtypes(dtype: str) -> None:
    x = (_NARROW_VALUES[:-1] / 4).astype(np.float32)
    zero = 1 if dtype in ("int4", "uint4", "uint2") else 0
    scale = np.array(0.75, np.float32)
    attrs = QuantAttrs(0.75, zero, dtype)
    zero_point = np.array(zero).astype(dtype)
    q = _ours("QuantizeLinear", attrs, [x])
    want = _onnx("QuantizeLinear", [x, scale, zero_point], opset=25)
    np.testing.assert_array_equal(_bits(q), _bits(want))
    back = _onnx("DequantizeLinear", [q, scale, zero_point], opset=25)
    np.testing.assert_array_equal(_ours("DequantizeLinear", attrs, [q]), back)


def test_narrow_dtypes_are_refused_by_arithmetic() -> None:
    with pytest.raises(OperandError, match="needs"):
        OPERATORS["Add"].output_types(NoAttrs(), [TensorType((2,), "bfloat16")] * 2)
    with pytest.raises(OperandError, match="zero point of float8_e4m3fn is 0"):
        OPERATORS["QuantizeLinear"].output_types(
            QuantAttrs(1.0, 1, "float8_e4m3fn"), [TensorType((2,), "float32")]
        )


def test_the_runtime_works_without_ml_dtypes() -> None:
    """Without ml_dtypes (a board's numpy alone) the operator set has numpy's dtypes only."""
    script = (
        "import sys; sys.modules['ml_dtypes'] = None\n"
        "import numpy as np\n"
        "from runtime.opset import OPERATORS, OperatorError, TensorType\n"
        "from runtime.opset.base import DTYPES, NARROW, NATIVE\n"
        "from runtime.opset.quantization import QUANTIZED\n"
        "assert DTYPES == NATIVE and NARROW == () and 'int4' not in QUANTIZED, DTYPES\n"
        "cast = OPERATORS['Cast'].kernel(np.array([1.5, 300.0]), to='int8', saturate=True)\n"
        "assert cast.tolist() == [1, 44], cast\n"
        "try:\n"
        "    TensorType((1,), 'bfloat16')\n"
        "except OperatorError:\n"
        "    print('refused')\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, check=False, timeout=120
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "refused"
