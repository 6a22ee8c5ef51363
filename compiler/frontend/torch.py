"""The PyTorch frontend: an ``nn.Module`` to the graph IR (:func:`from_torch`).

The module is traced by ``torch.export.export`` with static example inputs and the exported FX
graph is walked node by node. The graph is taken as ``export`` gives it, without
``run_decompositions()``: that pass lowers to Core ATen, which loses what the IR keeps
(``linear`` becomes ``permute`` + ``addmm``, ``flatten`` a ``view``, ``adaptive_avg_pool2d`` a
``mean``, batch norm a tuple-valued ``_native_batch_norm_legit_no_training``), so mapping it
back would mean pattern-matching what the module said in one operator. ``export``'s own op set
is the module-level one (``conv2d``, ``linear``, ``batch_norm``, ``flatten.using_ints``, ...),
the operators ``torch.onnx.export`` translates one by one, which is what makes this frontend
give the graph :func:`compiler.frontend.from_onnx` gives for the same model exported to ONNX
(TorchScript exporter, batch norm preserved): the same operators, attribute records, parameter
arrays and wiring. The exported graph is not functionalised, but in-place operators
(``relu_``, ``add_``, ``hardtanh_``, ...) return the value they wrote and their users read that
node, so each is imported as its functional twin. Only user outputs are kept: mutations of
buffers or inputs are not modelled.

Mapping (aten operator -> IR operator): ``conv2d`` -> CONV; ``linear`` -> GEMM
(``trans_b=True``, inputs ``(x, weight, bias)``) where the input is 2-D and there is a bias,
else MATMUL by the transposed weight plus an ADD of the bias, as ``torch.onnx`` does;
``matmul``/``mm`` -> MATMUL; ``add``/``sub``/``mul`` (``rsub``: operands swapped) -> ADD/SUB/MUL,
a Python scalar operand becoming a 0-d parameter of the tensor's dtype; ``relu`` -> RELU;
``hardtanh``/``relu6``/``clamp`` -> CLIP; ``leaky_relu`` -> LEAKY_RELU; ``sigmoid`` -> SIGMOID;
``max_pool2d``/``avg_pool2d`` -> MAX_POOL/AVERAGE_POOL; ``adaptive_avg_pool2d`` to 1x1 ->
GLOBAL_AVERAGE_POOL; ``batch_norm`` in inference -> BATCH_NORM (inputs x, weight, bias, running
mean, running variance); ``flatten`` from axis 1 to the end -> FLATTEN, other flattens and
``view``/``reshape`` -> RESHAPE to the static shape; ``permute``/``transpose`` -> TRANSPOSE;
``cat`` -> CONCAT; ``pad``/``constant_pad_nd`` -> PAD; ``softmax`` -> SOFTMAX; ``dropout`` in
inference, ``clone``, ``detach`` and ``alias`` -> nothing (the value is aliased). Float
attributes (epsilon, slopes, clip bounds, pad values) are rounded to float32, as ONNX stores
them and as the float32 kernels use them. Anything else is an :class:`UnsupportedOperator`
naming the aten operator and the FX node (the first such node; the message lists them all).

Parameters and buffers become parameters named after their state-dict names, inputs after the
forward's arguments, nodes after the FX nodes. Every node's inferred type is checked against
the type torch recorded for it, so a semantic mismatch fails at the node that has it.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import numpy as np
import torch
from torch import fx
from torch.export.graph_signature import InputKind, OutputKind

from compiler.errors import GraphError, UnsupportedOperator
from compiler.graph.ir import (
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
    ReshapeAttrs,
    TransposeAttrs,
)

__all__ = ["from_torch"]

aten = torch.ops.aten

#: torch dtypes that graph values may have, by their IR names.
_DTYPES = {
    torch.float32: "float32",
    torch.int8: "int8",
    torch.int32: "int32",
    torch.int64: "int64",
    torch.bool: "bool",
}

_F32_LOWEST = float(np.finfo(np.float32).min)
_F32_MAX = float(np.finfo(np.float32).max)

#: ``pad``'s modes, as the IR's PadAttrs spells them.
_PAD_MODES = {"constant": "constant", "reflect": "reflect", "replicate": "edge"}


def from_torch(module: torch.nn.Module, example_inputs: Sequence[torch.Tensor]) -> Graph:
    """The graph of ``module`` (put in eval mode) for inputs shaped like ``example_inputs``.

    Raises :class:`UnsupportedOperator` (``op`` the aten operator, ``node`` the FX node) for an
    operator or attribute value without an IR mapping (for operators, the first one met; the
    message lists them all), and :class:`GraphError` for anything else that cannot be imported
    (arguments that are not tensors, a module ``torch.export`` cannot trace, a dtype the IR
    lacks, a node whose imported type differs from the one torch recorded).
    """
    if not isinstance(module, torch.nn.Module):
        raise GraphError(f"from_torch needs a torch.nn.Module, got {type(module).__name__}")
    example_inputs = tuple(example_inputs)
    for k, tensor in enumerate(example_inputs):
        if not isinstance(tensor, torch.Tensor):
            raise GraphError(f"example input {k} is a {type(tensor).__name__}, not a torch.Tensor")
    name = type(module).__name__
    try:
        program = torch.export.export(module.eval(), example_inputs)
    except Exception as err:  # torch raises many types; the message is what helps
        lines = str(err).strip().splitlines() or [type(err).__name__]
        raise GraphError(f"torch.export cannot trace {name}: {lines[0]}") from err
    return _Importer(program, name).run()


class _Importer:
    """One ExportedProgram's walk: FX nodes to IR values, in the FX graph's order."""

    def __init__(self, program: torch.export.ExportedProgram, name: str) -> None:
        self.program = program
        self.builder = GraphBuilder(name)
        #: IR value of every FX node imported so far
        self.values: dict[fx.Node, str] = {}
        #: parameters, buffers and constants by placeholder name: (state-dict name, tensor)
        self.lifted: dict[str, tuple[str, torch.Tensor]] = {}

    def run(self) -> Graph:
        signature = self.program.graph_signature
        tensors = {**self.program.state_dict, **self.program.constants}
        for spec in signature.input_specs:
            if spec.kind == InputKind.USER_INPUT:
                continue
            if spec.kind not in (InputKind.PARAMETER, InputKind.BUFFER, InputKind.CONSTANT_TENSOR):
                raise GraphError(f"input {spec.arg.name!r} is a {spec.kind.name}, not supported")
            self.lifted[spec.arg.name] = (spec.target, tensors[spec.target])
        graph = self.program.graph_module.graph
        missing = [
            n for n in graph.nodes if n.op == "call_function" and n.target not in _CONVERTERS
        ]
        if missing:
            names = ", ".join(f"{_target_name(n)} ({n.name})" for n in missing)
            raise UnsupportedOperator(
                f"operators without a graph IR mapping: {names}",
                op=_target_name(missing[0]),
                node=missing[0].name,
            )
        outputs: list[str] = []
        for node in graph.nodes:
            if node.op == "placeholder":
                if node.name not in self.lifted:
                    ty = _meta_type(node)
                    self.values[node] = self.builder.input(node.name, ty[0], ty[1])
            elif node.op == "call_function":
                self.values[node] = self._convert(node)
            elif node.op == "output":
                outputs = self._outputs(node)
            else:
                raise GraphError(f"FX node {node.name!r} is a {node.op}, not supported")
        return self.builder.build(outputs)

    def _outputs(self, node: fx.Node) -> list[str]:
        specs = self.program.graph_signature.output_specs
        outputs = []
        for spec, arg in zip(specs, node.args[0], strict=True):
            if spec.kind != OutputKind.USER_OUTPUT:
                continue
            if not isinstance(arg, fx.Node):
                raise GraphError(f"output {spec.arg.name!r} is not a tensor")
            outputs.append(self.value(arg))
        return outputs

    def _convert(self, node: fx.Node) -> str:
        try:
            value = _CONVERTERS[node.target](self, node, _arguments(node))
        except GraphError as err:
            if err.node:
                raise
            raise GraphError(
                err.detail, node=node.name, op=str(node.target), tensor=err.tensor
            ) from None
        expected = _meta_type(node)
        got = self.builder.type_of(value)
        if (got.shape, got.dtype) != expected:
            raise GraphError(
                f"imported as {got}, torch computes {expected[1]}{list(expected[0])}",
                node=node.name,
                op=str(node.target),
            )
        return value

    # ------------------------------------------------------------------ helpers for converters
    def value(self, arg: Any) -> str:
        """The IR value of an FX node argument (a parameter is declared on first use)."""
        if not isinstance(arg, fx.Node):
            raise GraphError(f"expected a tensor argument, got {arg!r}")
        if arg not in self.values:
            if arg.name not in self.lifted:
                raise GraphError(f"reads FX node {arg.name!r}, which is not imported")
            name, tensor = self.lifted[arg.name]
            self.values[arg] = self.builder.param(name, tensor.detach().cpu().numpy())
        return self.values[arg]

    def operand(self, arg: Any, node: fx.Node, role: str) -> str:
        """A tensor operand's value, or a Python scalar as a 0-d parameter of ``node``'s
        dtype named after the node and the operand's ``role``."""
        if isinstance(arg, fx.Node):
            return self.value(arg)
        dtype = _meta_type(node)[1]
        return self.builder.param(self.builder.fresh(f"{node.name}.{role}"), np.array(arg, dtype))

    def add(self, node: fx.Node, op: Op, inputs: Sequence[str], attrs: Any = None) -> str:
        """Add the IR node of ``node`` (named after it)."""
        return self.builder.add1(op, inputs, attrs, name=node.name)

    def rank(self, arg: Any) -> int:
        return len(self.builder.type_of(self.value(arg)).shape)


Converter = Callable[[_Importer, fx.Node, dict[str, Any]], str]


def _arguments(node: fx.Node) -> dict[str, Any]:
    """``node``'s arguments by their schema names, defaults filled in."""
    schema = node.target._schema
    bound = dict(zip((a.name for a in schema.arguments), node.args, strict=False))
    bound.update(node.kwargs)
    for arg in schema.arguments:
        if arg.name not in bound and arg.has_default_value():
            bound[arg.name] = arg.default_value
    return bound


def _meta_type(node: fx.Node) -> tuple[tuple[int, ...], str]:
    """The static shape and IR dtype torch recorded for ``node``'s value."""
    val = node.meta.get("val")
    if not isinstance(val, torch.Tensor):
        raise GraphError(f"FX node {node.name!r} has no single tensor value")
    if val.dtype not in _DTYPES:
        raise GraphError(f"FX node {node.name!r} has dtype {val.dtype}, not one the IR has")
    return tuple(int(d) for d in val.shape), _DTYPES[val.dtype]


def _target_name(node: fx.Node) -> str:
    """What ``node`` calls: ``aten.<op>.<overload>`` for aten operators."""
    target = node.target
    return str(target) if isinstance(target, torch._ops.OpOverload) else target.__name__


def _unsupported(node: fx.Node, what: str) -> UnsupportedOperator:
    return UnsupportedOperator(what, op=str(node.target), node=node.name)


def _f32(value: float) -> float:
    """A float attribute as float32 holds it (as ONNX stores it, as the kernels use it)."""
    return float(np.float32(value))


def _pair(values: int | Sequence[int]) -> tuple[int, int]:
    """An int or a one- or two-element list of ints as a pair (aten's ``int[2]``)."""
    if isinstance(values, int):
        return values, values
    values = tuple(int(v) for v in values)
    return (values[0], values[0]) if len(values) == 1 else (values[0], values[1])


def _axis(axis: int, rank: int) -> int:
    return axis % rank if rank else axis


# ----------------------------------------------------------------------------- converters
def _conv(imp: _Importer, node: fx.Node, args: dict[str, Any]) -> str:
    dilations = _pair(args["dilation"])
    padding = args["padding"]
    if isinstance(padding, str):  # the conv2d.padding overload: "valid" or "same"
        if padding == "valid":
            pads = (0, 0, 0, 0)
        else:  # torch's "same" puts the odd pixel at the end, as ONNX's SAME_UPPER
            kernel = imp.builder.type_of(imp.value(args["weight"])).shape[2:]
            total = [d * (k - 1) for d, k in zip(dilations, kernel, strict=True)]
            pads = (*(t // 2 for t in total), *(t - t // 2 for t in total))
    else:
        pads = _pair(padding) * 2
    attrs = ConvAttrs(_pair(args["stride"]), pads, dilations, int(args["groups"]))
    inputs = [imp.value(args["input"]), imp.value(args["weight"])]
    if args["bias"] is not None:
        inputs.append(imp.value(args["bias"]))
    return imp.add(node, Op.CONV, inputs, attrs)


def _linear(imp: _Importer, node: fx.Node, args: dict[str, Any]) -> str:
    x, weight, bias = imp.value(args["input"]), imp.value(args["weight"]), args["bias"]
    if imp.rank(args["input"]) == 2 and bias is not None:
        return imp.add(node, Op.GEMM, [x, weight, imp.value(bias)], GemmAttrs(trans_b=True))
    # torch.onnx's rule: MatMul by the transposed weight (folded where it is a parameter),
    # then Add(bias, product)
    array = imp.builder.param_of(weight)
    if array is None:
        transposed = imp.builder.add1(
            Op.TRANSPOSE, [weight], TransposeAttrs((1, 0)), name=f"{node.name}.weight_t"
        )
    else:
        transposed = imp.builder.param(imp.builder.fresh(f"{weight}.T"), array.T)
    if bias is None:
        return imp.add(node, Op.MATMUL, [x, transposed])
    product = imp.builder.add1(Op.MATMUL, [x, transposed], name=f"{node.name}.matmul")
    return imp.add(node, Op.ADD, [imp.value(bias), product])


def _matmul(imp: _Importer, node: fx.Node, args: dict[str, Any]) -> str:
    other = args["other"] if "other" in args else args["mat2"]
    return imp.add(node, Op.MATMUL, [imp.value(args["self"]), imp.value(other)])


def _binary(op: Op, *, swap: bool = False) -> Converter:
    """ADD/SUB/MUL of ``self`` and ``other`` (``other`` first with ``swap``: ``rsub``)."""

    def convert(imp: _Importer, node: fx.Node, args: dict[str, Any]) -> str:
        if args.get("alpha", 1) != 1:
            raise _unsupported(node, f"alpha={args['alpha']} is not supported")
        a = imp.operand(args["self"], node, "self")
        b = imp.operand(args["other"], node, "other")
        return imp.add(node, op, [b, a] if swap else [a, b])

    return convert


def _relu(imp: _Importer, node: fx.Node, args: dict[str, Any]) -> str:
    return imp.add(node, Op.RELU, [imp.value(args["self"])])


def _sigmoid(imp: _Importer, node: fx.Node, args: dict[str, Any]) -> str:
    return imp.add(node, Op.SIGMOID, [imp.value(args["self"])])


def _clip(lo_arg: str, hi_arg: str) -> Converter:
    """CLIP between the arguments named ``lo_arg`` and ``hi_arg``; a bound left out (None) is
    float32's extreme, as ONNX's Clip without it."""

    def convert(imp: _Importer, node: fx.Node, args: dict[str, Any]) -> str:
        lo, hi = args[lo_arg], args[hi_arg]
        attrs = ClipAttrs(
            _F32_LOWEST if lo is None else _f32(lo), _F32_MAX if hi is None else _f32(hi)
        )
        return imp.add(node, Op.CLIP, [imp.value(args["self"])], attrs)

    return convert


def _relu6(imp: _Importer, node: fx.Node, args: dict[str, Any]) -> str:
    return imp.add(node, Op.CLIP, [imp.value(args["self"])], ClipAttrs(0.0, 6.0))


def _leaky_relu(imp: _Importer, node: fx.Node, args: dict[str, Any]) -> str:
    attrs = LeakyReluAttrs(_f32(args["negative_slope"]))
    return imp.add(node, Op.LEAKY_RELU, [imp.value(args["self"])], attrs)


def _pool(op: Op) -> Converter:
    """MAX_POOL (``max_pool2d``) or AVERAGE_POOL (``avg_pool2d``)."""

    def convert(imp: _Importer, node: fx.Node, args: dict[str, Any]) -> str:
        kernel = _pair(args["kernel_size"])
        strides = _pair(args["stride"]) if args["stride"] else kernel
        if _pair(args.get("dilation", 1)) != (1, 1):
            raise _unsupported(node, f"dilation {list(_pair(args['dilation']))} is not supported")
        if args.get("divisor_override") is not None:
            raise _unsupported(node, "divisor_override is not supported")
        attrs = PoolAttrs(
            kernel,
            strides,
            _pair(args["padding"]) * 2,
            bool(args["ceil_mode"]),
            bool(args.get("count_include_pad", False)),
        )
        return imp.add(node, op, [imp.value(args["self"])], attrs)

    return convert


def _adaptive_avg_pool(imp: _Importer, node: fx.Node, args: dict[str, Any]) -> str:
    size = _pair(args["output_size"])
    if size != (1, 1):
        raise _unsupported(node, f"output size {list(size)} is not supported, only [1, 1]")
    return imp.add(node, Op.GLOBAL_AVERAGE_POOL, [imp.value(args["self"])])


def _batch_norm(imp: _Importer, node: fx.Node, args: dict[str, Any]) -> str:
    if args["training"] or args["running_mean"] is None or args["running_var"] is None:
        raise _unsupported(node, "batch statistics (training mode) are not supported")
    x = imp.value(args["input"])
    channels = imp.builder.type_of(x).shape[1]
    affine = []
    for name, fill in (("weight", 1.0), ("bias", 0.0)):
        if args[name] is None:  # affine=False: the identity scale and shift
            array = np.full(channels, fill, np.float32)
            affine.append(imp.builder.param(imp.builder.fresh(f"{node.name}.{name}"), array))
        else:
            affine.append(imp.value(args[name]))
    inputs = [x, *affine, imp.value(args["running_mean"]), imp.value(args["running_var"])]
    return imp.add(node, Op.BATCH_NORM, inputs, BatchNormAttrs(_f32(args["eps"])))


def _flatten(imp: _Importer, node: fx.Node, args: dict[str, Any]) -> str:
    rank = imp.rank(args["self"])
    if rank >= 2 and (_axis(args["start_dim"], rank), _axis(args["end_dim"], rank)) == (
        1,
        rank - 1,
    ):
        return imp.add(node, Op.FLATTEN, [imp.value(args["self"])], AxisAttrs(1))
    return _reshape(imp, node, args)


def _reshape(imp: _Importer, node: fx.Node, args: dict[str, Any]) -> str:
    attrs = ReshapeAttrs(_meta_type(node)[0])
    return imp.add(node, Op.RESHAPE, [imp.value(args["self"])], attrs)


def _permute(imp: _Importer, node: fx.Node, args: dict[str, Any]) -> str:
    rank = imp.rank(args["self"])
    perm = tuple(_axis(d, rank) for d in args["dims"])
    return imp.add(node, Op.TRANSPOSE, [imp.value(args["self"])], TransposeAttrs(perm))


def _transpose(imp: _Importer, node: fx.Node, args: dict[str, Any]) -> str:
    rank = imp.rank(args["self"])
    perm = list(range(rank))
    a, b = _axis(args["dim0"], rank), _axis(args["dim1"], rank)
    perm[a], perm[b] = perm[b], perm[a]
    return imp.add(node, Op.TRANSPOSE, [imp.value(args["self"])], TransposeAttrs(tuple(perm)))


def _cat(imp: _Importer, node: fx.Node, args: dict[str, Any]) -> str:
    inputs = [imp.value(t) for t in args["tensors"]]
    axis = _axis(args["dim"], len(imp.builder.type_of(inputs[0]).shape))
    return imp.add(node, Op.CONCAT, inputs, AxisAttrs(axis))


def _pad(imp: _Importer, node: fx.Node, args: dict[str, Any]) -> str:
    mode = args.get("mode", "constant")
    if mode not in _PAD_MODES:
        raise _unsupported(node, f"mode {mode!r} is not supported")
    rank = imp.rank(args["self"])
    pad = [int(p) for p in args["pad"]]
    begins, ends = [0] * rank, [0] * rank
    for i in range(len(pad) // 2):  # torch lists (begin, end) from the last axis backwards
        begins[rank - 1 - i], ends[rank - 1 - i] = pad[2 * i], pad[2 * i + 1]
    value = args["value"] if args["value"] is not None else 0.0
    attrs = PadAttrs(tuple(begins + ends), _f32(value), _PAD_MODES[mode])
    return imp.add(node, Op.PAD, [imp.value(args["self"])], attrs)


def _softmax(imp: _Importer, node: fx.Node, args: dict[str, Any]) -> str:
    if args["dtype"] is not None:
        raise _unsupported(node, f"dtype={args['dtype']} is not supported")
    axis = _axis(args["dim"], imp.rank(args["self"]))
    return imp.add(node, Op.SOFTMAX, [imp.value(args["self"])], AxisAttrs(axis))


def _dropout(imp: _Importer, node: fx.Node, args: dict[str, Any]) -> str:
    if args["train"] and args["p"] > 0:
        raise _unsupported(node, "dropout in training mode is not supported")
    return imp.value(args["input"])


def _alias(imp: _Importer, _node: fx.Node, args: dict[str, Any]) -> str:
    return imp.value(args["self"])


def _overloads(*names: str) -> list[Any]:
    """aten operator overloads by ``"op.overload"`` name."""
    return [getattr(getattr(aten, n.split(".")[0]), n.split(".")[1]) for n in names]


#: Each supported aten overload's converter (in-place variants next to their functional ones).
_CONVERTERS: dict[Any, Converter] = {
    **dict.fromkeys(_overloads("conv2d.default", "conv2d.padding"), _conv),
    **dict.fromkeys(_overloads("linear.default"), _linear),
    **dict.fromkeys(_overloads("matmul.default", "mm.default"), _matmul),
    **dict.fromkeys(_overloads("add.Tensor", "add_.Tensor"), _binary(Op.ADD)),
    **dict.fromkeys(_overloads("sub.Tensor", "sub_.Tensor"), _binary(Op.SUB)),
    **dict.fromkeys(_overloads("rsub.Scalar"), _binary(Op.SUB, swap=True)),
    **dict.fromkeys(_overloads("mul.Tensor", "mul_.Tensor"), _binary(Op.MUL)),
    **dict.fromkeys(_overloads("relu.default", "relu_.default"), _relu),
    **dict.fromkeys(
        _overloads("hardtanh.default", "hardtanh_.default"), _clip("min_val", "max_val")
    ),
    **dict.fromkeys(_overloads("relu6.default", "relu6_.default"), _relu6),
    **dict.fromkeys(_overloads("clamp.default", "clamp_.default"), _clip("min", "max")),
    **dict.fromkeys(_overloads("leaky_relu.default", "leaky_relu_.default"), _leaky_relu),
    **dict.fromkeys(_overloads("sigmoid.default", "sigmoid_.default"), _sigmoid),
    **dict.fromkeys(_overloads("max_pool2d.default"), _pool(Op.MAX_POOL)),
    **dict.fromkeys(_overloads("avg_pool2d.default"), _pool(Op.AVERAGE_POOL)),
    **dict.fromkeys(_overloads("adaptive_avg_pool2d.default"), _adaptive_avg_pool),
    **dict.fromkeys(_overloads("batch_norm.default"), _batch_norm),
    **dict.fromkeys(_overloads("flatten.using_ints"), _flatten),
    **dict.fromkeys(_overloads("view.default", "reshape.default"), _reshape),
    **dict.fromkeys(_overloads("permute.default"), _permute),
    **dict.fromkeys(_overloads("transpose.int"), _transpose),
    **dict.fromkeys(_overloads("cat.default"), _cat),
    **dict.fromkeys(_overloads("pad.default", "constant_pad_nd.default"), _pad),
    **dict.fromkeys(_overloads("softmax.int"), _softmax),
    **dict.fromkeys(_overloads("dropout.default"), _dropout),
    **dict.fromkeys(_overloads("clone.default", "detach.default", "alias.default"), _alias),
}
