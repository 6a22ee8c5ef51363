"""Quantized graph nodes as accelerator operators: which template declares each, over which
packed placeholders, with which parameters, and how its constant operands are packed.

:func:`accel_op` is the one place that knows how a ``QConv``, ``QDense``, ``QAdd``,
``QMaxPool`` or ``QGlobalAvgPool`` node maps onto :mod:`compiler.accel.ops`; the partitioner
asks it whether a node can run on the accelerator (a :class:`CompileError` says why not) and the
model compiler uses it to compile the node.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field, replace
from typing import Any

import numpy as np

from compiler.accel.env import Env
from compiler.accel.layout import pack_bias, pack_oihw
from compiler.accel.ops import ADD, CONV2D, DENSE, GLOBAL_AVG_POOL, MAX_POOL, average_divisor
from compiler.errors import CompileError
from compiler.graph.ir import Graph, Node, Op
from compiler.ops.knobs import Template
from compiler.schedule import Schedule
from compiler.te import Tensor, placeholder

__all__ = ["AccelOp", "accel_op", "packed_shape"]


@dataclass(frozen=True)
class AccelOp:
    """A node ready to compile: ``template(*placeholders, **params)`` declares and schedules
    it with the knobs ``config`` (the template's defaults); ``constants`` maps the placeholders
    of constant operands (by position) to their packed arrays; the output placeholder comes from
    the template."""

    node: str
    template: Template
    placeholders: tuple[Tensor, ...]
    params: dict[str, Any]
    constants: dict[int, np.ndarray]
    config: dict[str, Any] = field(default_factory=dict)

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


def _activation(env: Env, graph: Graph, value: str, name: str) -> Tensor:
    shape = graph.types[value].shape
    _require(shape[0] % env.BATCH == 0, f"batch {shape[0]} is not a multiple of {env.BATCH}")
    return placeholder(packed_shape(env, shape), env.inp_dtype, name)


def _conv(env: Env, graph: Graph, node: Node) -> AccelOp:
    a = node.attrs
    _require(a.groups == 1, f"groups={a.groups} (only dense convolutions run on the GEMM core)")
    _require(a.dilations == (1, 1), f"dilations {a.dilations}")
    _require(a.strides[0] == a.strides[1], f"strides {a.strides} differ")
    _require(len(set(a.pads)) == 1, f"pads {a.pads} are not equal on every side")
    w = graph.params[node.inputs[1]]
    data = _activation(env, graph, node.inputs[0], "data")
    packed_w = pack_oihw(w, env)
    kernel = placeholder(packed_w.shape, env.wgt_dtype, "kernel")
    holders, constants = [data, kernel], {1: packed_w}
    if len(node.inputs) == 3:
        packed_b = pack_bias(graph.params[node.inputs[2]], env)
        holders.append(placeholder(packed_b.shape, env.acc_dtype, "bias"))
        constants[2] = packed_b
    params = dict(
        stride=a.strides[0], padding=a.pads[0], shift=a.shift, lo=a.lo, hi=a.hi, bias_first=True
    )
    return AccelOp(node.name, CONV2D, tuple(holders), params, constants)


def _dense(env: Env, graph: Graph, node: Node) -> AccelOp:
    a = node.attrs
    w = graph.params[node.inputs[1]]
    data = _activation(env, graph, node.inputs[0], "data")
    packed_w = pack_oihw(w.reshape(*w.shape, 1, 1), env)[:, :, 0, 0]
    weight = placeholder(packed_w.shape, env.wgt_dtype, "weight")
    holders, constants = [data, weight], {1: np.ascontiguousarray(packed_w)}
    if len(node.inputs) == 3:
        packed_b = pack_bias(graph.params[node.inputs[2]], env)[:, :, 0, 0]
        holders.append(placeholder(packed_b.shape, env.acc_dtype, "bias"))
        constants[2] = np.ascontiguousarray(packed_b)
    params = dict(shift=a.shift, lo=a.lo, hi=a.hi, bias_first=True)
    return AccelOp(node.name, DENSE, tuple(holders), params, constants)


def _add(env: Env, graph: Graph, node: Node) -> AccelOp:
    a = node.attrs
    _require(len(graph.types[node.inputs[0]].shape) == 4, "adds of 4-D (NCHW) activations only")
    holders = (
        _activation(env, graph, node.inputs[0], "a"),
        _activation(env, graph, node.inputs[1], "b"),
    )
    params = dict(a_shift=a.a_shift, b_shift=a.b_shift, shift=a.shift, lo=a.lo, hi=a.hi, round=True)
    return AccelOp(node.name, ADD, holders, params, {})


def _max_pool(env: Env, graph: Graph, node: Node) -> AccelOp:
    a = node.attrs
    _require(a.kernel[0] == a.kernel[1], f"window {a.kernel} is not square")
    _require(a.strides[0] == a.strides[1], f"strides {a.strides} differ")
    _require(len(set(a.pads)) == 1, f"pads {a.pads} are not equal on every side")
    _require(not a.ceil_mode, "ceil_mode")
    _require(
        a.pads[0] == 0 or non_negative(graph, node.inputs[0]),
        "padding needs a non-negative input (the DMA pads with zeros)",
    )
    data = _activation(env, graph, node.inputs[0], "data")
    params = dict(window=a.kernel[0], stride=a.strides[0], padding=a.pads[0])
    return AccelOp(node.name, MAX_POOL, (data,), params, {})


def _global_avg(env: Env, graph: Graph, node: Node) -> AccelOp:
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


_BUILDERS: dict[Op, Callable[[Env, Graph, Node], AccelOp]] = {
    Op.QCONV: _conv,
    Op.QDENSE: _dense,
    Op.QADD: _add,
    Op.QMAX_POOL: _max_pool,
    Op.QGLOBAL_AVG_POOL: _global_avg,
}


def accel_op(env: Env, graph: Graph, node: Node) -> AccelOp:
    """The accelerator operator of ``node``; a CompileError (naming the node) says why the
    node cannot run on the accelerator."""
    builder = _BUILDERS.get(node.op)
    try:
        if builder is None:
            raise CompileError("the accelerator has no template for this operator")
        for dtype in (env.inp_dtype, env.wgt_dtype, env.out_dtype):
            _require(dtype == "int8", f"the configuration's operands are {dtype}, not int8")
        _require(env.BLOCK_IN == env.BLOCK_OUT, "BLOCK_IN differs from BLOCK_OUT")
        op = builder(env, graph, node)
        config = op.template.chosen(*op.placeholders, env=env, **op.params)
    except CompileError as err:
        raise CompileError(err.detail, node=node.name, op=node.op.value) from None
    return replace(op, config=config)
