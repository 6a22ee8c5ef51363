"""Quantized graph nodes as accelerator operators: which template declares each, over which
packed placeholders, with which parameters, and how its constant operands are packed.

Each integer operator's template is registered here (:data:`ACCEL_TEMPLATES`) with the
conditions it needs, as data that the partition report prints and :func:`accel_op` checks.
:func:`accel_op` is the one place that knows how a node maps onto :mod:`compiler.accel.templates`;
the partitioner asks it whether a node can run on the accelerator (it declares and lowers the
template for the configuration, so a node that would not compile stays on the CPU with the
reason) and the model compiler turns its lowered function into the node's program.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field, replace
from typing import Any

import numpy as np

from compiler.accel.emit import generate
from compiler.accel.env import Env
from compiler.accel.layout import pack_bias, pack_oihw
from compiler.accel.lower import lower_accel
from compiler.accel.templates import ADD, CONV2D, DENSE, GLOBAL_AVG_POOL, MAX_POOL, average_divisor
from compiler.errors import CompileError
from compiler.graph.ir import Graph, Node, Op
from compiler.loop_ir import LoweredFunc
from compiler.schedule import Schedule
from compiler.te import Tensor, placeholder
from compiler.templates.knobs import Template
from runtime.opset.windows import window_count

__all__ = [
    "ACCEL_TEMPLATES",
    "COMMON",
    "MAX_DENSE_GROUPS",
    "AccelOp",
    "AccelTemplate",
    "Requirement",
    "accel_op",
    "dense_weights",
    "packed_shape",
]


@dataclass(frozen=True)
class AccelOp:
    """A node ready to compile: ``template(*placeholders, **params)`` declares and schedules
    it with the knobs ``config`` (the template's defaults); ``constants`` maps the placeholders
    of constant operands (by position) to their packed arrays; the output placeholder comes from
    the template; ``lowered`` is its accelerator loop IR (set by :func:`accel_op`), which only
    needs the DRAM addresses to become a program; ``runtime_weights`` are the positions of
    operands computed at run time that the template reads as weights (the planner packs them
    into weight blocks with a CPU ``PackWeights`` step; every other operand that is not a
    constant is an activation in the blocked layout)."""

    node: str
    template: Template
    placeholders: tuple[Tensor, ...]
    params: dict[str, Any]
    constants: dict[int, np.ndarray]
    config: dict[str, Any] = field(default_factory=dict)
    lowered: LoweredFunc | None = None
    runtime_weights: frozenset[int] = frozenset()

    def declare(self, env: Env) -> tuple[Schedule, Tensor]:
        """The node's schedule and output tensor."""
        return self.template.declare(*self.placeholders, cfg=self.config, env=env, **self.params)


def packed_shape(env: Env, shape: tuple[int, ...]) -> tuple[int, ...]:
    """An NCHW (or NC) activation's shape in the accelerator's blocked layout."""
    n, c = shape[:2]
    return (n // env.BATCH, -(-c // env.BLOCK_OUT), *shape[2:], env.BATCH, env.BLOCK_OUT)


def _require(condition: bool, message: str) -> None:
    if not condition:
        raise CompileError(message)


@dataclass(frozen=True)
class Requirement:
    """One condition a node must meet for its template: ``text`` as the partition report
    prints it, ``holds(env, graph, node)`` the check, ``why(node)`` the reason given where it
    fails."""

    text: str
    holds: Callable[[Env, Graph, Node], bool]
    why: Callable[[Node], str]


@dataclass(frozen=True)
class AccelTemplate:
    """How the integer operator ``op`` runs on the accelerator: the conditions its template
    needs beyond the common ones (:data:`COMMON`), checked before ``build`` makes the
    :class:`AccelOp` (which may refuse what depends on the configuration)."""

    op: Op
    requirements: tuple[Requirement, ...]
    build: Callable[[Env, Graph, Node], AccelOp]


#: Each integer operator's accelerator template, by operator.
ACCEL_TEMPLATES: dict[Op, AccelTemplate] = {}

#: What every accelerator node needs, as the partition report prints it.
COMMON = (
    "int8 operands in the configuration and BLOCK_IN equal to BLOCK_OUT",
    "a template that compiles for the configuration (its tiles fit the buffers, its micro-op "
    "kernels the micro-op buffer)",
)


def _template(
    op: Op, *requirements: Requirement
) -> Callable[[Callable[[Env, Graph, Node], AccelOp]], Callable[[Env, Graph, Node], AccelOp]]:
    """Register the decorated builder as ``op``'s template, needing ``requirements``."""

    def register(build: Callable[[Env, Graph, Node], AccelOp]):
        ACCEL_TEMPLATES[op] = AccelTemplate(op, requirements, build)
        return build

    return register


def _attr(text: str, holds: Callable[[Any], bool], why: Callable[[Any], str]) -> Requirement:
    """A requirement on the node's attribute record alone."""
    return Requirement(
        text, lambda _env, _graph, node: holds(node.attrs), lambda node: why(node.attrs)
    )


def _activation(env: Env, graph: Graph, value: str, name: str) -> Tensor:
    shape = graph.types[value].shape
    _require(shape[0] % env.BATCH == 0, f"batch {shape[0]} is not a multiple of {env.BATCH}")
    return placeholder(packed_shape(env, shape), env.inp_dtype, name)


_EQUAL_STRIDES = _attr(
    "equal strides", lambda a: a.strides[0] == a.strides[1], lambda a: f"strides {a.strides} differ"
)
_EQUAL_PADS = _attr(
    "equal pads on every side",
    lambda a: len(set(a.pads)) == 1,
    lambda a: f"pads {a.pads} are not equal on every side",
)


#: The most groups a grouped convolution over more than one channel block may have to run on
#: the GEMM core as the dense convolution of its block-diagonal weights (exact: the zeros add
#: nothing), which multiplies its GEMM work by the group count; one of more groups is split
#: into pieces over one channel block first (:mod:`compiler.model.grouped`).
MAX_DENSE_GROUPS = 4


def dense_weights(w: np.ndarray, groups: int) -> np.ndarray:
    """Grouped OIHW weights ``[O, C/groups, KH, KW]`` as the dense ``[O, C, KH, KW]`` weights
    of the same convolution: each group's block on the diagonal, zeros elsewhere."""
    o, per_group, kh, kw = w.shape
    out_per_group = o // groups
    dense = np.zeros((o, per_group * groups, kh, kw), w.dtype)
    for g in range(groups):
        rows = slice(g * out_per_group, (g + 1) * out_per_group)
        dense[rows, g * per_group : (g + 1) * per_group] = w[rows]
    return dense


@_template(
    Op.QCONV,
    Requirement(
        f"groups at most {MAX_DENSE_GROUPS}, or any grouping over one channel block (either run "
        "densely with block-diagonal weights)",
        lambda env, graph, node: (
            node.attrs.groups <= MAX_DENSE_GROUPS
            or graph.types[node.inputs[0]].shape[1] <= env.BLOCK_IN
        ),
        lambda node: (
            f"groups={node.attrs.groups} over more than one channel block (only dense "
            f"convolutions, grouped ones of at most {MAX_DENSE_GROUPS} groups and grouped ones "
            "over one channel block run on the GEMM core, as dense ones)"
        ),
    ),
    _attr("dilation 1", lambda a: a.dilations == (1, 1), lambda a: f"dilations {a.dilations}"),
    _EQUAL_STRIDES,
    _EQUAL_PADS,
)
def _conv(env: Env, graph: Graph, node: Node) -> AccelOp:
    a = node.attrs
    w = dense_weights(graph.params[node.inputs[1]], a.groups)
    data = _activation(env, graph, node.inputs[0], "data")
    packed_w = pack_oihw(w, env)
    kernel = placeholder(packed_w.shape, env.wgt_dtype, "kernel")
    holders, constants = [data, kernel], {1: packed_w}
    for index, packed in _channel_vectors(env, graph, node).items():
        holders.append(placeholder(packed.shape, env.acc_dtype, _VECTORS[index - 2]))
        constants[index] = packed
    params = dict(
        stride=a.strides[0], padding=a.pads[0], shift=a.shift, lo=a.lo, hi=a.hi, bias_first=True
    )
    return AccelOp(node.name, CONV2D, tuple(holders), params, constants)


#: The per-channel operands after the weights, by position from 2: the bias and, for the
#: fixed-point requantisation, the multiplier and the shifts.
_VECTORS = ("bias", "multiplier", "shifts")


def _channel_vectors(env: Env, graph: Graph, node: Node) -> dict[int, np.ndarray]:
    """The node's per-channel operands (inputs 2 onwards), each packed as the accelerator's
    bias ``(1, C/BLOCK_OUT, 1, 1, BATCH, BLOCK_OUT)`` of int32, by input position."""
    return {
        index: pack_bias(graph.params[node.inputs[index]].astype(np.int32), env)
        for index in range(2, len(node.inputs))
    }


@_template(Op.QDENSE)
def _dense(env: Env, graph: Graph, node: Node) -> AccelOp:
    w = graph.params[node.inputs[1]]
    data = _activation(env, graph, node.inputs[0], "data")
    packed_w = pack_oihw(w.reshape(*w.shape, 1, 1), env)[:, :, 0, 0]
    weight = placeholder(packed_w.shape, env.wgt_dtype, "weight")
    return _dense_op(env, graph, node, data, weight, {1: np.ascontiguousarray(packed_w)})


def _dense_op(
    env: Env,
    graph: Graph,
    node: Node,
    data: Tensor,
    weight: Tensor,
    constants: dict[int, np.ndarray],
    runtime_weights: frozenset[int] = frozenset(),
) -> AccelOp:
    """The dense template over ``data`` and ``weight`` (4-D, or 5-D batched), with the node's
    bias (``[N]``, input 2, when present) and requantisation."""
    a = node.attrs
    holders = [data, weight]
    for index, packed in _channel_vectors(env, graph, node).items():
        holders.append(placeholder(packed[:, :, 0, 0].shape, env.acc_dtype, _VECTORS[index - 2]))
        constants = {**constants, index: np.ascontiguousarray(packed[:, :, 0, 0])}
    params = dict(shift=a.shift, lo=a.lo, hi=a.hi, bias_first=True)
    return AccelOp(
        node.name, DENSE, tuple(holders), params, constants, runtime_weights=runtime_weights
    )


@_template(
    Op.QBATCH_MATMUL,
    Requirement(
        "each group's rows a multiple of BATCH",
        lambda env, graph, node: (
            (graph.types[node.inputs[0]].shape[0] // graph.types[node.inputs[1]].shape[0])
            % env.BATCH
            == 0
        ),
        lambda node: "a group's rows are not whole batch blocks",
    ),
)
def _batch_matmul(env: Env, graph: Graph, node: Node) -> AccelOp:
    """Group ``g``'s rows (stacked in the blocked layout of the ``[G*M, K]`` rows, the same
    bytes as ``G`` packed ``[M, K]`` matrices) by its matrix, packed at run time into weight
    blocks: the batched dense template, one program for all groups."""
    rows, depth = graph.types[node.inputs[0]].shape
    groups, _, columns = graph.types[node.inputs[1]].shape
    k_blocks = -(-depth // env.BLOCK_IN)
    data_shape = (groups, rows // groups // env.BATCH, k_blocks, env.BATCH, env.BLOCK_IN)
    data = placeholder(data_shape, env.inp_dtype, "data")
    weight_shape = (groups, -(-columns // env.BLOCK_OUT), k_blocks, env.BLOCK_OUT, env.BLOCK_IN)
    weight = placeholder(weight_shape, env.wgt_dtype, "weight")
    return _dense_op(env, graph, node, data, weight, {}, frozenset({1}))


@_template(
    Op.QADD,
    Requirement(
        "4-D (NCHW) operands",
        lambda _env, graph, node: len(graph.types[node.inputs[0]].shape) == 4,
        lambda node: "adds of 4-D (NCHW) activations only",
    ),
)
def _add(env: Env, graph: Graph, node: Node) -> AccelOp:
    a = node.attrs
    holders = (
        _activation(env, graph, node.inputs[0], "a"),
        _activation(env, graph, node.inputs[1], "b"),
    )
    params = dict(a_shift=a.a_shift, b_shift=a.b_shift, shift=a.shift, lo=a.lo, hi=a.hi, round=True)
    return AccelOp(node.name, ADD, holders, params, {})


_FOUR_D = Requirement(
    "a 4-D (NCHW) input",
    lambda _env, graph, node: len(graph.types[node.inputs[0]].shape) == 4,
    lambda node: "pooling of other than 4-D (NCHW) inputs",
)


@_template(
    Op.QMAX_POOL,
    _FOUR_D,
    _attr(
        "square window",
        lambda a: a.kernel[0] == a.kernel[1],
        lambda a: f"window {a.kernel} is not square",
    ),
    _EQUAL_STRIDES,
    _EQUAL_PADS,
    Requirement(
        "padded (or run past the input by ceil mode) only after a ReLU (a non-negative input: "
        "the DMA pads with zeros)",
        lambda _env, graph, node: (
            not _reads_padding(graph, node) or non_negative(graph, node.inputs[0])
        ),
        lambda node: "padding needs a non-negative input (the DMA pads with zeros)",
    ),
)
def _max_pool(env: Env, graph: Graph, node: Node) -> AccelOp:
    a = node.attrs
    data = _activation(env, graph, node.inputs[0], "data")
    params = dict(window=a.kernel[0], stride=a.strides[0], padding=a.pads[0], ceil_mode=a.ceil_mode)
    return AccelOp(node.name, MAX_POOL, (data,), params, {})


def _reads_padding(graph: Graph, node: Node) -> bool:
    """Whether a pooling's windows reach outside its input: it is padded, or ceil mode adds
    a window that runs past the far edge."""
    a = node.attrs
    if any(a.pads):
        return True
    sizes = graph.types[node.inputs[0]].shape[2:]
    return any(
        window_count(size, k, s, (0, 0), ceil=a.ceil_mode) != window_count(size, k, s, (0, 0))
        for size, k, s in zip(sizes, a.kernel, a.strides, strict=True)
    )


@_template(Op.QGLOBAL_AVG_POOL, _FOUR_D)
def _global_avg(env: Env, graph: Graph, node: Node) -> AccelOp:
    """The divisor must be the one the template computes for the configuration's multiplier
    width (the quantizer chooses it so)."""
    h, w = graph.types[node.inputs[0]].shape[2:]
    expected = average_divisor(h * w, env.cfg.mul_arg_bits)
    got = (node.attrs.multiplier, node.attrs.shift)
    _require(got == expected, f"divisor {got} is not the accelerator's {expected}")
    data = _activation(env, graph, node.inputs[0], "data")
    return AccelOp(node.name, GLOBAL_AVG_POOL, (data,), {"round": True}, {})


def non_negative(graph: Graph, value: str) -> bool:
    """Whether ``value`` is never negative: its producer clips at a low end >= 0, or is a max
    pooling of such a value."""
    node = graph.producer(value)
    if node is None:
        return False
    if node.op is Op.QMAX_POOL:
        return non_negative(graph, node.inputs[0])
    low = getattr(node.attrs, "lo", None)
    return node.op in (Op.QCONV, Op.QDENSE, Op.QADD) and low is not None and low >= 0


def accel_op(env: Env, graph: Graph, node: Node) -> AccelOp:
    """The accelerator operator of ``node``, its template declared and lowered for the
    configuration (so everything but the DRAM addresses is known to compile); a CompileError
    (naming the node) says why the node cannot run on the accelerator."""
    template = ACCEL_TEMPLATES.get(node.op)
    try:
        if template is None:
            raise CompileError("the accelerator has no template for this operator")
        for requirement in template.requirements:
            _require(requirement.holds(env, graph, node), requirement.why(node))
        for dtype in (env.inp_dtype, env.wgt_dtype, env.out_dtype):
            _require(dtype == "int8", f"the configuration's operands are {dtype}, not int8")
        _require(env.BLOCK_IN == env.BLOCK_OUT, "BLOCK_IN differs from BLOCK_OUT")
        op = template.build(env, graph, node)
        op = replace(op, config=op.template.chosen(*op.placeholders, env=env, **op.params))
        schedule, result = op.declare(env)
        lowered = lower_accel(schedule, [*op.placeholders, result], env.cfg, node.name)
        generate(env.cfg, lowered)  # what depends on no address: micro-op kernels, tokens
    except CompileError as err:
        raise CompileError(err.detail, node=node.name, op=node.op.value) from None
    return replace(op, lowered=lowered)
