"""The ONNX frontend: :func:`from_onnx` turns an ONNX model into a :class:`Graph`.

This module walks the model; each ONNX operator (default domain) is read by the converter
registered for it and the model's opset (:mod:`compiler.frontend.onnx_ops`, registered with
:func:`compiler.frontend.onnx_node.converts`). Every node goes through :class:`GraphBuilder`,
so our own type inference checks the model as it is read. Initializers and ``Constant`` nodes
become parameters; ``Identity`` and inference-mode ``Dropout`` become aliases. Shapes are
static, so shape arithmetic is computed as the model is read: ``Shape`` is a parameter, and
a node whose inputs are all parameters and whose output is an integer or boolean value
becomes a parameter too (the Reshape targets that exported models compute from ``Shape``
become constants). A converter of a multi-output operator (Split) defines every output it
reads. Anything the converters do not cover (an operator, an attribute value, a non-constant
input that must be constant) is an :class:`UnsupportedOperator` naming the operator type, the
node and the opset; a model that cannot be read or that has a dynamic input dimension is a
:class:`GraphError`.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import onnx
from google.protobuf.message import DecodeError
from onnx import helper, numpy_helper
from onnx.external_data_helper import uses_external_data

from compiler.errors import GraphError, UnknownInputShape, UnsupportedOperator
from compiler.frontend import (  # noqa: F401  (register the converters)
    onnx_ops,
    onnx_sampling_ops,
    onnx_shape_ops,
)
from compiler.frontend.converters import check_emits
from compiler.frontend.onnx_node import OnnxNode, converter_for
from compiler.graph.interpret import run_graph
from compiler.graph.ir import DTYPES, Graph, GraphBuilder, Op, TensorType
from runtime.opset import OperatorError, kernel_kwargs

__all__ = ["from_onnx"]

_DEFAULT_DOMAINS = ("", "ai.onnx")


def from_onnx(
    model_or_path: onnx.ModelProto | str | Path | bytes,
    *,
    input_shapes: Mapping[str, Sequence[int]] | None = None,
    constants: Mapping[str, np.ndarray] | None = None,
) -> Graph:
    """The graph of an ONNX model, given as a ``ModelProto``, a file path or serialized bytes.

    ``input_shapes`` fixes the shapes of inputs by name; it is needed for every input with a
    dynamic or symbolic dimension, and must agree with the model's fixed dimensions.
    ``constants`` binds graph inputs by name to arrays, which become parameters (as TVM's
    ``bind_params_by_name`` does): what a converter needs as a constant (axes, a shape, pads,
    ``k``) may be fed as a graph input, and a refusal for such an input names it
    (:attr:`UnsupportedOperator.needs_constant`). Each array must have the input's dtype and
    agree with its fixed dimensions (and with ``input_shapes``, where given). Value names are
    the model's; nodes keep their names (unnamed ones are named after their operator).

    Raises :class:`GraphError` for a file or bytes that are not a valid model, a dynamic input
    dimension without a fixed shape, a name in ``input_shapes`` or ``constants`` that is no
    graph input, a constant that disagrees with its input, or a model whose shapes do not fit
    its operators; :class:`UnsupportedOperator` for an operator or attribute value outside the
    mapping.
    """
    model = _load(model_or_path)
    return _Importer(model, dict(input_shapes or {}), dict(constants or {})).run()


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


# ----------------------------------------------------------------------------- folding
#: The dtypes of values that the importer computes where all their inputs are constants.
_FOLDED_DTYPES = ("int64", "int32", "bool")


class _FoldingBuilder(GraphBuilder):
    """A :class:`GraphBuilder` that folds shape arithmetic as it is added: a node whose inputs
    are all parameters and whose one output is an integer or boolean value becomes a parameter
    holding the kernel's result instead of a node.

    Exported models compute shapes at run time (``torch.onnx.export`` writes
    ``x.view(x.shape[0], -1)`` as ``Shape -> Gather -> Unsqueeze -> Concat -> Reshape``); the
    shapes are static here, so Shape is a parameter, and folding what follows makes the
    Reshape's target a constant, as its converter needs. Float arithmetic is left to
    :func:`~compiler.graph.passes.fold_constants`.
    """

    def defines(self, value: str) -> bool:
        """Whether ``value`` is defined (an input, a parameter or a node's output)."""
        try:
            self.type_of(value)
        except GraphError:
            return False
        return True

    def folded(
        self,
        op: Op,
        attrs: Any,
        consts: Sequence[np.ndarray | None],
        types: Sequence[TensorType],
        *,
        node: str,
    ) -> np.ndarray | None:
        if not consts or any(a is None for a in consts):
            return None
        if len(types) != 1 or types[0].dtype not in _FOLDED_DTYPES:
            return None
        try:
            array = op.definition.kernel(*consts, **kernel_kwargs(attrs))
        except OperatorError as err:
            raise GraphError(
                f"cannot be computed at import: {err}", node=node, op=op.value
            ) from None
        array = np.asarray(array, types[0].dtype)
        if array.shape != types[0].shape:  # a kernel that disagrees with its type rule
            raise RuntimeError(f"{op.value} computed {array.shape}, its rule says {types[0]}")
        return array


# ----------------------------------------------------------------------------- the model
class _Importer:
    """Converts one checked model: inputs, initializers, then the nodes in order."""

    def __init__(
        self,
        model: onnx.ModelProto,
        input_shapes: dict[str, Sequence[int]],
        constants: dict[str, np.ndarray],
    ) -> None:
        self.model = model
        self.input_shapes = input_shapes
        self.constants = constants
        opsets = [o.version for o in model.opset_import if o.domain in _DEFAULT_DOMAINS]
        if not opsets:
            raise GraphError("the model imports no ai.onnx opset")
        self.opset = opsets[0]
        self.builder = _FoldingBuilder(model.graph.name or "graph")
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
        inputs = {i.name for i in graph.input} - initializers
        for option, names in (("input_shapes", self.input_shapes), ("constants", self.constants)):
            unknown = sorted(set(names) - inputs)
            if unknown:
                raise GraphError(f"{option} names {unknown[0]!r}, which is not an input")
        for tensor in graph.initializer:
            self._initializer(tensor)
        for value in graph.input:
            if value.name not in initializers:
                self._input(value)
        self._check_operators()
        for node in graph.node:
            self.convert(node)
        outputs = [self._value(o.name, "the graph output") for o in graph.output]
        return self.builder.build(outputs)

    def _initializer(self, tensor: onnx.TensorProto) -> None:
        """Define the initializer ``tensor`` as a parameter; data that does not fill its dims
        exactly (raw bytes too many or too few, a typed list of another length) is a
        GraphError naming it."""
        try:
            array = numpy_helper.to_array(tensor)
        except (ValueError, TypeError) as err:
            held = (
                f"{len(tensor.raw_data):,} bytes of raw data"
                if tensor.HasField("raw_data")
                else "typed data"
            )
            raise GraphError(
                f"the initializer's {held} do not fill its dims {list(tensor.dims)} ({err})",
                tensor=tensor.name,
            ) from None
        self.builder.param(tensor.name, array)
        self.values[tensor.name] = tensor.name

    def _input(self, value: onnx.ValueInfoProto) -> None:
        name = value.name
        if not value.type.HasField("tensor_type"):
            raise GraphError("is not a tensor", tensor=name)
        ty = value.type.tensor_type
        dtype = _dtype(ty.elem_type, f"input {name!r}")
        dims = [d.dim_value if d.HasField("dim_value") else None for d in ty.shape.dim]
        if name in self.constants:
            self._bind(name, dims if ty.HasField("shape") else None, dtype)
            return
        given = self.input_shapes.get(name)
        if given is not None:
            shape = tuple(int(d) for d in given)
            if not ty.HasField("shape"):
                dims = list(shape)
            if not _fits(shape, dims):
                raise GraphError(
                    f"input_shapes gives {list(shape)} for a {_dims(dims)}", tensor=name
                )
        elif not ty.HasField("shape"):
            raise UnknownInputShape("has no shape: give it with input_shapes", tensor=name)
        else:
            for k, (d, proto) in enumerate(zip(dims, ty.shape.dim, strict=True)):
                if d is None or d <= 0:
                    label = proto.dim_param or "unknown"
                    raise UnknownInputShape(
                        f"dimension {k} is dynamic ({label!r}): needs a fixed input shape, "
                        f"given with input_shapes={{{name!r}: (...)}}",
                        tensor=name,
                        axis=str(k),
                    )
            shape = tuple(dims)
        self.builder.input(name, shape, dtype)
        self.values[name] = name

    def _bind(self, name: str, dims: list[int | None] | None, dtype: str) -> None:
        """Define the graph input ``name`` as the parameter that ``constants`` binds to it,
        which must have its dtype and fit its dimensions (and ``input_shapes``, if given)."""
        array = self.constants[name]
        if not isinstance(array, np.ndarray):
            raise GraphError(
                f"constants needs a numpy array, got {type(array).__name__}", tensor=name
            )
        if str(array.dtype) != dtype:
            raise GraphError(
                f"constants gives a {array.dtype} array for a {dtype} input", tensor=name
            )
        given = self.input_shapes.get(name)
        for what, expected in (("input", dims), ("input_shapes", given)):
            if expected is not None and not _fits(array.shape, list(expected)):
                raise GraphError(
                    f"constants gives shape {list(array.shape)} for the {what} shape "
                    f"{_dims(list(expected))}",
                    tensor=name,
                )
        self.builder.param(name, array)
        self.values[name] = name

    def _check_operators(self) -> None:
        """One UnsupportedOperator naming every node whose operator has no converter (the
        first one as the error's node), before any is converted."""
        missing = []
        constant = self._maybe_constant()
        for proto in self.model.graph.node:
            default = proto.domain in _DEFAULT_DOMAINS
            if default and proto.output[0] in constant:
                continue  # computed as it is read, if its inputs turn out to be constants
            if not default or converter_for(proto.op_type, self.opset) is None:
                full = proto.op_type if default else f"{proto.domain}.{proto.op_type}"
                missing.append((proto, full, proto.name or proto.op_type.lower()))
        if not missing:
            return
        (first, full, name), rest = missing[0], missing[1:]
        others = ", ".join(dict.fromkeys(f"{f} ({n!r})" for _, f, n in rest))
        also = f"; also unsupported: {others}" if rest else ""
        raise UnsupportedOperator(
            f"{full} is not supported{also}", op=first.op_type, node=name, opset=self.opset
        )

    def _maybe_constant(self) -> set[str]:
        """The outputs of the nodes that depend on initializers, Constant nodes and shapes
        alone (shapes are static here): what a node without a converter may still be
        computed from, as the model is read."""
        known = {t.name for t in self.model.graph.initializer} | set(self.constants)
        for proto in self.model.graph.node:
            static = proto.op_type in ("Shape", "Size") or all(
                not v or v in known for v in proto.input
            )
            if proto.domain in _DEFAULT_DOMAINS and static:
                known.update(o for o in proto.output if o)
        return known

    def _compute(self, proto: onnx.NodeProto, name: str) -> None:
        """Define the outputs of a node without a converter as parameters, computed by onnx's
        reference implementation from its inputs, which must turn out to be constants."""
        from onnx.reference import ReferenceEvaluator

        unsupported = UnsupportedOperator(
            f"{proto.op_type} is not supported (here its inputs are not constants)",
            op=proto.op_type,
            node=name,
            opset=self.opset,
        )
        inputs = [self.values[v] for v in proto.input if v]
        graph = self.builder.build(inputs)
        if any(v in graph.inputs for node in graph.nodes for v in node.inputs) or any(
            v in graph.inputs for v in inputs
        ):
            raise unsupported
        zeros = {v: np.zeros(graph.types[v].shape, graph.types[v].dtype) for v in graph.inputs}
        values = run_graph(graph, zeros, keep=True)
        initializers = [
            numpy_helper.from_array(np.asarray(values[self.values[v]]), v) for v in proto.input if v
        ]
        outputs = [helper.make_empty_tensor_value_info(o) for o in proto.output if o]
        one = helper.make_graph([proto], "node", [], outputs, initializers)
        try:
            arrays = ReferenceEvaluator(
                helper.make_model(one, opset_imports=self.model.opset_import)
            ).run(None, {})
        except Exception:
            raise unsupported from None
        for output, array in zip([o for o in proto.output if o], arrays, strict=True):
            self.builder.param(output, np.asarray(array))
            self.values[output] = output

    def convert(self, proto: onnx.NodeProto) -> None:
        """Add the graph node(s) of one ONNX node, or alias its output."""
        name = proto.name or self.builder.fresh(proto.op_type.lower())
        default = proto.domain in _DEFAULT_DOMAINS
        entry = converter_for(proto.op_type, self.opset) if default else None
        if entry is None:  # a node _check_operators let through: constant, maybe
            self._compute(proto, name)
            return
        attrs = {a.name: _attribute(a) for a in proto.attribute}
        inputs = [self._value(v, f"node {name!r}'s input") if v else "" for v in proto.input]
        n = OnnxNode(proto, name, self.opset, inputs, attrs, self.builder)
        for key in attrs:
            if key not in entry.attrs:
                raise n.unsupported(f"the attribute {key!r} is not supported")
        mark = self.builder.mark()
        alias = entry.convert(n)
        check_emits(self.builder.nodes_since(mark), entry.emits, proto.op_type)
        for extra in proto.output[1:]:  # defined by converters of multi-output operators
            if extra and self.builder.defines(extra):
                self.values[extra] = extra
            elif extra and extra in self.read:
                raise n.unsupported(f"the output {extra!r} (training or indices) is not supported")
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


def _fits(shape: Sequence[int], dims: Sequence[int | None]) -> bool:
    """Whether ``shape`` has ``dims``' rank and every fixed dimension of it."""
    return len(shape) == len(dims) and all(
        d is None or d == s for d, s in zip(dims, shape, strict=True)
    )


def _dims(dims: Sequence[int | None]) -> str:
    return "[" + ", ".join("?" if d is None else str(d) for d in dims) + "]"


def _attribute(attr: onnx.AttributeProto) -> Any:
    value = helper.get_attribute_value(attr)
    if isinstance(value, bytes):
        return value.decode()
    return value
