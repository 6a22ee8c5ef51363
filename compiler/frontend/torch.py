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
The indexing, shape and reduction operators are mapped in
:mod:`compiler.frontend.torch_shape_ops`; a list-valued operator (``split``, ``chunk``) gives
one value per part, taken by the ``getitem`` nodes that read it.

Parameters and buffers become parameters named after their state-dict names, inputs after the
forward's arguments, nodes after the FX nodes. Every node's inferred type is checked against
the type torch recorded for it, so a semantic mismatch fails at the node that has it.
"""

from __future__ import annotations

from collections import ChainMap
from collections.abc import Sequence
from operator import getitem
from typing import Any

import torch
from torch import fx
from torch.export.graph_signature import InputKind, OutputKind

from compiler.errors import GraphError, UnsupportedOperator
from compiler.frontend import (  # noqa: F401  (register the converters)
    torch_ops,
    torch_pool1d,
    torch_sampling_ops,
    torch_shape_ops,
)
from compiler.frontend.converters import check_emits
from compiler.frontend.torch_node import (
    CHECKS,
    CONVERTERS,
    TorchImport,
    arguments,
    meta_type,
    target_name,
)
from compiler.graph.ir import Graph

__all__ = ["from_torch"]


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


#: Calls that read only their first argument's dtype (and device): a fresh tensor like it.
_LIKE = frozenset(
    getattr(torch.ops.aten, name).default
    for name in ("new_zeros", "new_ones", "new_full", "new_empty")
)


def _like(node: fx.Node) -> torch.Tensor:
    """A one-element stand-in for ``node``'s value, of its dtype."""
    return torch.zeros((), dtype=node.meta["val"].dtype)


class _Importer(TorchImport):
    """One ExportedProgram's walk: FX nodes to IR values, in the FX graph's order."""

    def __init__(self, program: torch.export.ExportedProgram, name: str) -> None:
        super().__init__(name)
        self.program = program

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
        constant = self._fold_constants(graph)
        calls = [
            n
            for n in graph.nodes
            if n.op == "call_function" and n.target not in CHECKS and n not in constant
        ]
        missing = [n for n in calls if n.target not in CONVERTERS and n.target is not getitem]
        if missing:
            names = ", ".join(f"{target_name(n)} ({n.name})" for n in missing)
            raise UnsupportedOperator(
                f"operators without a graph IR mapping: {names}",
                op=target_name(missing[0]),
                node=missing[0].name,
            )
        outputs: list[str] = []
        for node in graph.nodes:
            if node.op == "placeholder":
                if node.name not in self.lifted:
                    ty = meta_type(node)
                    self.values[node] = self.builder.input(node.name, ty[0], ty[1])
            elif node.op == "call_function" and (node.target in CHECKS or node in constant):
                continue  # run-time assertions (the static types hold them), or constants
            elif node.op == "call_function" and node.target is getitem:
                self.values[node] = self._element(node)
            elif node.op == "call_function":
                self.values[node] = self._convert(node)
            elif node.op == "output":
                outputs = self._outputs(node)
            else:
                raise GraphError(f"FX node {node.name!r} is a {node.op}, not supported")
        return self.builder.build(outputs)

    def _fold_constants(self, graph: fx.Graph) -> set[fx.Node]:
        """Compute with torch, in graph order, every call that depends on parameters,
        buffers and constants alone (on copies of them: an in-place call writes the copy), and
        make each tensor it gives a parameter, declared where a later call reads it. Models
        build masks and tables this way (a shifted-window mask by assigning into slices of a
        fresh tensor), which no graph operator could express; the calls are known here."""
        known: dict[fx.Node, Any] = {}
        for node in graph.nodes:
            if node.op == "placeholder" and node.name in self.lifted:
                known[node] = self.lifted[node.name][1].detach().clone()
        folded: set[fx.Node] = set()
        for node in graph.nodes:
            if node.op != "call_function" or node.target in CHECKS:
                continue
            stand_in = {}
            if node.target in _LIKE and node.args and node.args[0] not in known:
                stand_in[node.args[0]] = _like(node.args[0])  # only its dtype matters here
            values = ChainMap(stand_in, known)
            if any(a not in values for a in node.all_input_nodes):
                continue
            args = fx.node.map_arg(node.args, values.__getitem__)
            kwargs = fx.node.map_arg(node.kwargs, values.__getitem__)
            try:
                with torch.no_grad():
                    known[node] = node.target(*args, **kwargs)
            except Exception:
                continue
            folded.add(node)
            if isinstance(known[node], torch.Tensor):
                self.lifted[node.name] = (node.name, known[node])
        return folded

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

    def _convert(self, node: fx.Node) -> str | tuple[str, ...]:
        entry = CONVERTERS[node.target]
        mark = self.builder.mark()
        try:
            value = entry.convert(self, node, arguments(node))
        except GraphError as err:
            if err.node:
                raise
            raise GraphError(
                err.detail, node=node.name, op=str(node.target), tensor=err.tensor
            ) from None
        check_emits(self.builder.nodes_since(mark), entry.emits, target_name(node))
        if isinstance(value, tuple):  # a list of tensors (split): each checked at its getitem
            return value
        return self._check(node, value)

    def _element(self, node: fx.Node) -> str:
        """The part of a list-valued node (split, chunk) that a ``getitem`` node reads."""
        source, index = node.args
        parts = self.values.get(source)
        if not isinstance(parts, tuple) or not isinstance(index, int):
            raise GraphError(f"FX node {node.name!r} indexes what is not a list of tensors")
        return self._check(node, parts[index])

    def _check(self, node: fx.Node, value: str) -> str:
        """``value``, the import of ``node``, after checking its type against torch's."""
        expected = meta_type(node)
        got = self.builder.type_of(value)
        if (got.shape, got.dtype) != expected:
            raise GraphError(
                f"imported as {got}, torch computes {expected[1]}{list(expected[0])}",
                node=node.name,
                op=str(node.target),
            )
        return value
