"""The ONNX frontend: :func:`from_onnx` turns an ONNX model into a :class:`Graph`.

This module owns the mapping from ONNX operators (default domain) to the graph's operators,
including each operator's opset-dependent spelling (Clip's bounds and Pad's pads as attributes
before opset 11 and as constant inputs after, Softmax's axis semantics before opset 13).
Every node goes through :class:`GraphBuilder`, so our own type inference checks the model as it
is read. Initializers and ``Constant`` nodes become parameters; ``Identity`` and inference-mode
``Dropout`` become aliases. Anything the mapping does not cover (an operator, an attribute
value, a non-constant input that must be constant) is an :class:`UnsupportedOperator` naming
the operator type, the node and the opset; a model that cannot be read or that has a dynamic
input dimension is a :class:`GraphError`.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import onnx
from google.protobuf.message import DecodeError
from onnx import TensorProto, helper, numpy_helper
from onnx.external_data_helper import uses_external_data

from compiler.errors import GraphError, UnsupportedOperator
from compiler.graph.ir import (
    DTYPES,
    AxisAttrs,
    BatchNormAttrs,
    ClipAttrs,
    ConvAttrs,
    GemmAttrs,
    Graph,
    GraphBuilder,
    LeakyReluAttrs,
    Op,
    PadAttrs,
    PoolAttrs,
    QuantAttrs,
    ReshapeAttrs,
    TransposeAttrs,
)

__all__ = ["from_onnx"]

_DEFAULT_DOMAINS = ("", "ai.onnx")
_F32_LOWEST = float(np.finfo(np.float32).min)
_F32_MAX = float(np.finfo(np.float32).max)


def from_onnx(
    model_or_path: onnx.ModelProto | str | Path | bytes,
    *,
    input_shapes: Mapping[str, Sequence[int]] | None = None,
) -> Graph:
    """The graph of an ONNX model, given as a ``ModelProto``, a file path or serialized bytes.

    ``input_shapes`` fixes the shapes of inputs by name; it is needed for every input with a
    dynamic or symbolic dimension, and must agree with the model's fixed dimensions. Value
    names are the model's; nodes keep their names (unnamed ones are named after their operator).

    Raises :class:`GraphError` for a file or bytes that are not a valid model, a dynamic input
    dimension without a fixed shape, or a model whose shapes do not fit its operators;
    :class:`UnsupportedOperator` for an operator or attribute value outside the mapping.
    """
    model = _load(model_or_path)
    return _Importer(model, dict(input_shapes or {})).run()


def _load(source: onnx.ModelProto | str | Path | bytes) -> onnx.ModelProto:
    """The model, read and checked by ONNX's checker (not its shape inference)."""
    if isinstance(source, onnx.ModelProto):
        model, what = source, "a ModelProto"
    elif isinstance(source, bytes | bytearray):
        what = f"{len(source)} bytes"
        try:
            model = onnx.load_model_from_string(bytes(source))
        except (DecodeError, ValueError) as err:
            raise GraphError(f"not an ONNX model ({what}): {err}") from None
    elif isinstance(source, str | Path):
        what = f"file {str(source)!r}"
        try:
            model = onnx.load(str(source))
        except OSError as err:
            raise GraphError(f"cannot read {what}: {err.strerror or err}") from None
        except (DecodeError, ValueError, onnx.checker.ValidationError) as err:
            raise GraphError(f"not an ONNX model ({what}): {err}") from None
    else:
        raise GraphError(f"needs an onnx.ModelProto, a path or bytes, got {type(source).__name__}")
    for tensor in model.graph.initializer:  # (onnx.load reads them when given the path)
        if uses_external_data(tensor):
            raise GraphError(
                f"initializer {tensor.name!r} is stored outside the model: load it from its path"
            )
    try:
        onnx.checker.check_model(model)
    except (onnx.checker.ValidationError, ValueError) as err:
        raise GraphError(f"not a valid ONNX model ({what}): {err}") from None
    return model


def _dtype(elem_type: int, what: str) -> str:
    """Our dtype name of an ONNX element type."""
    try:
        dtype = str(helper.tensor_dtype_to_np_dtype(elem_type))
    except (KeyError, ValueError):
        dtype = f"element type {elem_type}"
    if dtype not in DTYPES:
        raise GraphError(f"{what} has dtype {dtype}, not one of {', '.join(DTYPES)}")
    return dtype


# ----------------------------------------------------------------------------- one node
@dataclass
class _Node:
    """One ONNX node being converted: its attributes, its inputs as graph values ("" where an
    optional input is left out) and the helpers its converter needs."""

    proto: onnx.NodeProto
    name: str
    opset: int
    inputs: list[str]
    attrs: dict[str, Any]
    builder: GraphBuilder

    @property
    def op_type(self) -> str:
        return self.proto.op_type

    def unsupported(self, message: str) -> UnsupportedOperator:
        return UnsupportedOperator(message, op=self.op_type, node=self.name, opset=self.opset)

    def error(self, message: str) -> GraphError:
        return GraphError(message, op=self.op_type, node=self.name)

    def attr(self, key: str, default: Any = None) -> Any:
        """The attribute ``key``, ``default`` where absent (required where that is None)."""
        value = self.attrs.get(key, default)
        if value is None:
            raise self.error(f"needs the attribute {key!r}")
        return value

    def ints(self, key: str, default: Sequence[int] | None, count: int, low: int = 1) -> tuple:
        """The integer-list attribute ``key`` (``default`` where absent): ``count`` integers,
        none below ``low``."""
        values = tuple(int(v) for v in self.attr(key, default))
        if len(values) != count or min(values) < low:
            raise self.error(f"needs {count} integers >= {low} as {key}, got {list(values)}")
        return values

    def rank(self, index: int = 0) -> int:
        return len(self.builder.type_of(self.inputs[index]).shape)

    def shape(self, index: int = 0) -> tuple[int, ...]:
        return self.builder.type_of(self.inputs[index]).shape

    def has(self, index: int) -> bool:
        return index < len(self.inputs) and self.inputs[index] != ""

    def const(self, index: int, what: str) -> np.ndarray:
        """The array of input ``index`` (``what`` it is), which must be a constant."""
        array = self.builder.param_of(self.inputs[index])
        if array is None:
            raise self.unsupported(f"needs {what} (input {index}) to be a constant")
        return array

    def scalar(self, index: int, what: str) -> float:
        array = self.const(index, what)
        if array.size != 1:
            raise self.error(f"needs {what} to be a scalar, got shape {list(array.shape)}")
        return array.reshape(()).item()

    def axis(self, axis: int, rank: int) -> int:
        """``axis`` resolved to ``0 <= axis < rank``."""
        if not -rank <= axis < rank:
            raise self.error(f"axis {axis} is out of range for rank {rank}")
        return axis % rank

    def emit(self, op: Op, inputs: Sequence[str], attrs: Any = None) -> None:
        """Add the graph node writing this node's (first) output."""
        self.builder.add(op, inputs, attrs, name=self.name, outputs=[self.proto.output[0]])


#: A converter adds its node's graph node and returns None, or returns the graph value that
#: the node's output is an alias of (Identity, inference-mode Dropout).
_Converter = Callable[[_Node], str | None]


# ----------------------------------------------------------------------------- converters
def _plain(op: Op) -> _Converter:
    """Operators without attributes: every input passes through."""
    return lambda n: n.emit(op, n.inputs)


def _conv(n: _Node) -> None:
    if n.rank() != 4 or n.rank(1) != 4:
        raise n.unsupported(
            f"supports 2-D convolutions (4-D inputs and weights) only, got ranks "
            f"{n.rank()} and {n.rank(1)}"
        )
    kernel = n.shape(1)[2:]
    if n.ints("kernel_shape", kernel, len(kernel)) != kernel:
        raise n.error(f"kernel_shape {n.attrs['kernel_shape']} differs from the weights' {kernel}")
    strides = n.ints("strides", (1, 1), 2)
    dilations = n.ints("dilations", (1, 1), 2)
    extents = [d * (k - 1) + 1 for d, k in zip(dilations, kernel, strict=True)]
    attrs = ConvAttrs(strides, _pads(n, extents, strides), dilations, int(n.attrs.get("group", 1)))
    n.emit(Op.CONV, [v for v in n.inputs if v], attrs)


def _pads(n: _Node, extents: Sequence[int], strides: Sequence[int]) -> tuple[int, int, int, int]:
    """A convolution's or pool's (top, left, bottom, right) pads, ``auto_pad`` resolved against
    the window ``extents`` (dilated kernel sizes)."""
    auto_pad = n.attrs.get("auto_pad", "NOTSET")
    if auto_pad == "NOTSET":
        return n.ints("pads", (0, 0, 0, 0), 4, low=0)
    if auto_pad == "VALID":
        return (0, 0, 0, 0)
    if auto_pad not in ("SAME_UPPER", "SAME_LOWER"):
        raise n.unsupported(f"auto_pad {auto_pad!r} is not supported")
    begin, end = [], []
    for size, extent, stride in zip(n.shape()[2:], extents, strides, strict=True):
        total = max((-(-size // stride) - 1) * stride + extent - size, 0)
        small, large = total // 2, total - total // 2
        begin.append(small if auto_pad == "SAME_UPPER" else large)
        end.append(large if auto_pad == "SAME_UPPER" else small)
    return (*begin, *end)


def _gemm(n: _Node) -> None:
    attrs = GemmAttrs(
        float(n.attrs.get("alpha", 1.0)),
        float(n.attrs.get("beta", 1.0)),
        bool(n.attrs.get("transA", 0)),
        bool(n.attrs.get("transB", 0)),
    )
    n.emit(Op.GEMM, [v for v in n.inputs if v], attrs)


def _clip(n: _Node) -> None:
    if n.opset < 11:
        lo, hi = n.attrs.get("min", _F32_LOWEST), n.attrs.get("max", _F32_MAX)
    else:
        lo = n.scalar(1, "min") if n.has(1) else _F32_LOWEST
        hi = n.scalar(2, "max") if n.has(2) else _F32_MAX
    n.emit(Op.CLIP, n.inputs[:1], ClipAttrs(float(lo), float(hi)))


def _leaky_relu(n: _Node) -> None:
    n.emit(Op.LEAKY_RELU, n.inputs, LeakyReluAttrs(float(n.attrs.get("alpha", 0.01))))


def _pool(op: Op) -> _Converter:
    def convert(n: _Node) -> None:
        if n.rank() != 4:
            raise n.unsupported(f"supports 2-D pooling (4-D inputs) only, got rank {n.rank()}")
        kernel = n.ints("kernel_shape", None, 2)
        if n.ints("dilations", (1, 1), 2) != (1, 1):
            raise n.unsupported(f"dilations {n.attrs['dilations']} are not supported")
        strides = n.ints("strides", (1, 1), 2)
        attrs = PoolAttrs(
            kernel,
            strides,
            _pads(n, kernel, strides),
            bool(n.attrs.get("ceil_mode", 0)),
            bool(n.attrs.get("count_include_pad", 0)),
        )
        n.emit(op, n.inputs, attrs)

    return convert


def _batch_norm(n: _Node) -> None:
    if n.attrs.get("training_mode", 0) or not n.attrs.get("spatial", 1):
        raise n.unsupported("supports inference-mode, spatial batch normalisation only")
    n.emit(Op.BATCH_NORM, n.inputs, BatchNormAttrs(float(n.attrs.get("epsilon", 1e-5))))


def _flatten(n: _Node) -> None:
    rank = n.rank()
    axis = n.attrs.get("axis", 1)
    if not -rank <= axis <= rank:  # Flatten's axis may be the rank itself
        raise n.error(f"axis {axis} is out of range for rank {rank}")
    axis = axis + rank if axis < 0 else axis
    n.emit(Op.FLATTEN, n.inputs, AxisAttrs(axis))


def _reduce_mean(n: _Node) -> None:
    """ReduceMean over the spatial axes of an NCHW value (how ``torch.onnx.export`` writes
    adaptive average pooling to 1x1) is a global average pool, flattened without keepdims."""
    rank = n.rank()
    if n.has(1):
        axes = [int(a) for a in n.const(1, "the axes").reshape(-1)]
    else:
        axes = list(n.attrs.get("axes", range(rank)))
    if rank != 4 or sorted(n.axis(a, rank) for a in axes) != [2, 3]:
        raise n.unsupported(f"supports the mean over H and W of NCHW only, not axes {axes}")
    if n.attrs.get("keepdims", 1):
        n.emit(Op.GLOBAL_AVERAGE_POOL, n.inputs[:1])
        return
    pooled = n.builder.add1(
        Op.GLOBAL_AVERAGE_POOL, n.inputs[:1], name=n.builder.fresh(f"{n.name}_pool")
    )
    n.emit(Op.FLATTEN, [pooled], AxisAttrs(1))


def _reshape(n: _Node) -> None:
    target = [int(d) for d in n.const(1, "the shape").reshape(-1)]
    source = n.shape()
    if not n.attrs.get("allowzero", 0):
        for i, d in enumerate(target):
            if d == 0:
                if i >= len(source):
                    raise n.error(f"shape {target}: dimension {i} copies a missing input dim")
                target[i] = source[i]
    if target.count(-1) > 1 or any(d < -1 for d in target):
        raise n.error(f"shape {target} has more than one -1 or a negative dimension")
    if -1 in target:
        known = int(np.prod([d for d in target if d != -1], dtype=np.int64))
        size = int(np.prod(source, dtype=np.int64))
        if known == 0 or size % known:
            raise n.error(f"cannot reshape {list(source)} to {target}")
        target[target.index(-1)] = size // known
    n.emit(Op.RESHAPE, n.inputs[:1], ReshapeAttrs(tuple(target)))


def _transpose(n: _Node) -> None:
    perm = n.attrs.get("perm", range(n.rank() - 1, -1, -1))
    n.emit(Op.TRANSPOSE, n.inputs, TransposeAttrs(tuple(int(p) for p in perm)))


def _concat(n: _Node) -> None:
    n.emit(Op.CONCAT, n.inputs, AxisAttrs(n.axis(n.attr("axis"), n.rank())))


def _pad(n: _Node) -> None:
    mode = n.attrs.get("mode", "constant")
    if mode not in ("constant", "reflect", "edge"):
        raise n.unsupported(f"mode {mode!r} is not supported")
    rank = n.rank()
    if n.opset < 11:
        pads, value = list(n.attr("pads")), float(n.attrs.get("value", 0.0))
    else:
        pads = [int(p) for p in n.const(1, "the pads").reshape(-1)]
        value = float(n.scalar(2, "the constant value")) if n.has(2) else 0.0
        if n.has(3):
            axes = [n.axis(int(a), rank) for a in n.const(3, "the axes").reshape(-1)]
            if len(pads) != 2 * len(axes):
                raise n.error(f"needs {2 * len(axes)} pads for axes {axes}, got {len(pads)}")
            full = [0] * (2 * rank)
            for k, axis in enumerate(axes):
                full[axis], full[axis + rank] = pads[k], pads[k + len(axes)]
            pads = full
    n.emit(Op.PAD, n.inputs[:1], PadAttrs(tuple(pads), value, mode))


def _softmax(n: _Node) -> None:
    rank = n.rank()
    axis = n.axis(n.attrs.get("axis", 1 if n.opset < 13 else -1), rank)
    if n.opset < 13 and axis != rank - 1:
        raise n.unsupported(
            f"axis {axis} of a rank-{rank} input: before opset 13 Softmax flattens the axes from "
            "it on, supported only where that is the last axis"
        )
    n.emit(Op.SOFTMAX, n.inputs, AxisAttrs(axis))


def _quant(op: Op) -> _Converter:
    """QuantizeLinear (to int8) and DequantizeLinear (of int8 or int32, as biases are) with a
    constant per-tensor scale and zero point."""

    def convert(n: _Node) -> None:
        if n.attrs.get("block_size", 0):
            raise n.unsupported("blocked quantization is not supported")
        scale = n.const(1, "the scale")
        zero = n.const(2, "the zero point") if n.has(2) else None
        if scale.size != 1 or (zero is not None and zero.size != 1):
            raise n.unsupported("per-axis quantization is not supported (per-tensor only)")
        if op is Op.QUANTIZE:
            # the zero point's type is the output's (uint8 if it is left out) unless output_dtype
            wanted = n.attrs.get("output_dtype", 0) or (
                helper.np_dtype_to_tensor_dtype(zero.dtype) if zero is not None else 0
            )
            if wanted != TensorProto.INT8:
                raise n.unsupported("quantizes to int8 only (give an int8 zero point)")
            dtype = "int8"
        else:
            dtype = n.builder.type_of(n.inputs[0]).dtype
            if dtype not in ("int8", "int32"):
                raise n.unsupported(f"dequantizes int8 or int32 values only, not {dtype}")
            if zero is not None and str(zero.dtype) != dtype:
                raise n.error(f"the zero point is {zero.dtype}, the input {dtype}")
        zero_point = 0 if zero is None else int(zero.reshape(()))
        n.emit(op, n.inputs[:1], QuantAttrs(float(scale.reshape(())), zero_point, dtype))

    return convert


def _constant(n: _Node) -> None:
    ((key, value),) = n.attrs.items()  # the checker lets a Constant have exactly one
    if key == "value":
        array = numpy_helper.to_array(value)
    else:
        array = np.array(value, np.float32 if key.startswith("value_float") else np.int64)
    n.builder.param(n.proto.output[0], array)


def _identity(n: _Node) -> str:
    return n.inputs[0]


def _dropout(n: _Node) -> str:
    if n.has(2) and bool(n.scalar(2, "training_mode")):
        raise n.unsupported("supports inference mode only (training_mode must be false)")
    return n.inputs[0]


_WINDOW = ("auto_pad", "dilations", "kernel_shape", "pads", "strides")

#: ONNX operator type -> (converter, the attributes it understands).
_CONVERTERS: dict[str, tuple[_Converter, frozenset[str]]] = {
    name: (converter, frozenset(attrs))
    for name, converter, attrs in [
        ("Conv", _conv, [*_WINDOW, "group"]),
        ("Gemm", _gemm, ["alpha", "beta", "transA", "transB"]),
        ("MatMul", _plain(Op.MATMUL), []),
        ("Add", _plain(Op.ADD), []),
        ("Sub", _plain(Op.SUB), []),
        ("Mul", _plain(Op.MUL), []),
        ("Relu", _plain(Op.RELU), []),
        ("Sigmoid", _plain(Op.SIGMOID), []),
        ("Clip", _clip, ["min", "max"]),
        ("LeakyRelu", _leaky_relu, ["alpha"]),
        ("MaxPool", _pool(Op.MAX_POOL), [*_WINDOW, "ceil_mode", "storage_order"]),
        ("AveragePool", _pool(Op.AVERAGE_POOL), [*_WINDOW, "ceil_mode", "count_include_pad"]),
        ("GlobalAveragePool", _plain(Op.GLOBAL_AVERAGE_POOL), []),
        ("ReduceMean", _reduce_mean, ["axes", "keepdims", "noop_with_empty_axes"]),
        ("BatchNormalization", _batch_norm, ["epsilon", "momentum", "spatial", "training_mode"]),
        ("Flatten", _flatten, ["axis"]),
        ("Reshape", _reshape, ["allowzero"]),
        ("Transpose", _transpose, ["perm"]),
        ("Concat", _concat, ["axis"]),
        ("Pad", _pad, ["mode", "pads", "value"]),
        ("Softmax", _softmax, ["axis"]),
        ("Identity", _identity, []),
        ("Dropout", _dropout, ["ratio", "seed"]),
        (
            "Constant",
            _constant,
            ["value", "value_float", "value_floats", "value_int", "value_ints"],
        ),
        ("QuantizeLinear", _quant(Op.QUANTIZE), ["axis", "block_size", "output_dtype"]),
        ("DequantizeLinear", _quant(Op.DEQUANTIZE), ["axis", "block_size"]),
    ]
}


# ----------------------------------------------------------------------------- the model
class _Importer:
    """Converts one checked model: inputs, initializers, then the nodes in order."""

    def __init__(self, model: onnx.ModelProto, input_shapes: dict[str, Sequence[int]]) -> None:
        self.model = model
        self.input_shapes = input_shapes
        opsets = [o.version for o in model.opset_import if o.domain in _DEFAULT_DOMAINS]
        if not opsets:
            raise GraphError("the model imports no ai.onnx opset")
        self.opset = opsets[0]
        self.builder = GraphBuilder(model.graph.name or "graph")
        #: ONNX value name -> graph value name (differs for aliases)
        self.values: dict[str, str] = {}
        self.outputs = {o.name for o in model.graph.output}
        #: every value some node reads or the graph outputs
        self.read = {v for node in model.graph.node for v in node.input} | self.outputs

    def run(self) -> Graph:
        graph = self.model.graph
        if graph.sparse_initializer:
            raise GraphError("sparse initializers are not supported")
        initializers = {t.name for t in graph.initializer}
        unknown = set(self.input_shapes) - ({i.name for i in graph.input} - initializers)
        if unknown:
            raise GraphError(f"input_shapes names {sorted(unknown)[0]!r}, which is not an input")
        for tensor in graph.initializer:
            self._initializer(tensor)
        for value in graph.input:
            if value.name not in initializers:
                self._input(value)
        for node in graph.node:
            self.convert(node)
        outputs = [self._value(o.name, "the graph output") for o in graph.output]
        return self.builder.build(outputs)

    def _initializer(self, tensor: onnx.TensorProto) -> None:
        self.builder.param(tensor.name, numpy_helper.to_array(tensor))
        self.values[tensor.name] = tensor.name

    def _input(self, value: onnx.ValueInfoProto) -> None:
        name = value.name
        if not value.type.HasField("tensor_type"):
            raise GraphError("is not a tensor", tensor=name)
        ty = value.type.tensor_type
        dtype = _dtype(ty.elem_type, f"input {name!r}")
        dims = [d.dim_value if d.HasField("dim_value") else None for d in ty.shape.dim]
        given = self.input_shapes.get(name)
        if given is not None:
            shape = tuple(int(d) for d in given)
            if not ty.HasField("shape"):
                dims = list(shape)
            if len(shape) != len(dims) or any(
                d is not None and d != s for d, s in zip(dims, shape, strict=True)
            ):
                raise GraphError(
                    f"input_shapes gives {list(shape)} for a {_dims(dims)}", tensor=name
                )
        elif not ty.HasField("shape"):
            raise GraphError("has no shape: give it with input_shapes", tensor=name)
        else:
            for k, (d, proto) in enumerate(zip(dims, ty.shape.dim, strict=True)):
                if d is None or d <= 0:
                    label = proto.dim_param or "unknown"
                    raise GraphError(
                        f"dimension {k} is dynamic ({label!r}): needs a fixed input shape, "
                        f"given with input_shapes={{{name!r}: (...)}}",
                        tensor=name,
                        axis=str(k),
                    )
            shape = tuple(dims)
        self.builder.input(name, shape, dtype)
        self.values[name] = name

    def convert(self, proto: onnx.NodeProto) -> None:
        """Add the graph node(s) of one ONNX node, or alias its output."""
        name = proto.name or self.builder.fresh(proto.op_type.lower())
        default = proto.domain in _DEFAULT_DOMAINS
        entry = _CONVERTERS.get(proto.op_type) if default else None
        if entry is None:
            full = proto.op_type if default else f"{proto.domain}.{proto.op_type}"
            raise UnsupportedOperator(
                f"{full} is not supported", op=proto.op_type, node=name, opset=self.opset
            )
        converter, known = entry
        attrs = {a.name: _attribute(a) for a in proto.attribute}
        inputs = [self._value(v, f"node {name!r}'s input") if v else "" for v in proto.input]
        n = _Node(proto, name, self.opset, inputs, attrs, self.builder)
        for key in attrs:
            if key not in known:
                raise n.unsupported(f"the attribute {key!r} is not supported")
        for extra in proto.output[1:]:
            if extra and extra in self.read:
                raise n.unsupported(f"the output {extra!r} (training or indices) is not supported")
        alias = converter(n)
        out = proto.output[0]
        if alias is not None and out not in self.outputs:
            self.values[out] = alias
            return
        if alias is not None:  # a graph output keeps its name
            n.emit(Op.IDENTITY, [alias])
        self.values[out] = out

    def _value(self, onnx_name: str, what: str) -> str:
        if onnx_name not in self.values:
            raise GraphError(f"{what} {onnx_name!r} is not defined")
        return self.values[onnx_name]


def _dims(dims: Sequence[int | None]) -> str:
    return "[" + ", ".join("?" if d is None else str(d) for d in dims) + "]"


def _attribute(attr: onnx.AttributeProto) -> Any:
    value = helper.get_attribute_value(attr)
    if isinstance(value, bytes):
        return value.decode()
    return value
