"""Composite operators, decomposed at import into the operators of the operator set (as
frameworks define them), so both frontends give the same nodes and every later stage sees
operators it knows: GELU (exact and tanh-approximated), hard sigmoid, hard swish and SiLU.

Each function adds its nodes to a :class:`GraphBuilder`: the intermediate ones named after
``name`` with a suffix, the last one named ``name`` writing ``out`` (the frontend's output
value, or ``name`` itself where ``out`` is None); it returns the output value. Constants are
float32 scalar parameters, as the frameworks hold them.
"""

from __future__ import annotations

import math

import numpy as np

from compiler.graph.ir import ClipAttrs, GraphBuilder, Op

__all__ = ["GELU_OPS", "HARD_SIGMOID_OPS", "SILU_OPS", "gelu", "hard_sigmoid", "hard_swish", "silu"]

#: The operators each decomposition may add (a converter's ``emits``).
GELU_OPS = (Op.MUL, Op.ADD, Op.ERF, Op.TANH)
HARD_SIGMOID_OPS = (Op.MUL, Op.ADD, Op.CLIP)
SILU_OPS = (Op.MUL, Op.SIGMOID)


def _const(b: GraphBuilder, name: str, role: str, value: float) -> str:
    return b.param(b.fresh(f"{name}.{role}"), np.array(value, np.float32))


def _last(b: GraphBuilder, op: Op, inputs: list[str], name: str, out: str | None, attrs=None):
    return b.add(op, inputs, attrs, name=name, outputs=[out or name])[0]


def _step(b: GraphBuilder, op: Op, inputs: list[str], name: str, role: str, attrs=None) -> str:
    return b.add1(op, inputs, attrs, name=b.fresh(f"{name}.{role}"))


def gelu(b: GraphBuilder, x: str, *, name: str, out: str | None, approximate: str) -> str:
    """``x * 0.5 * (1 + erf(x / sqrt(2)))``, or with ``approximate="tanh"`` ``x * 0.5 *
    (1 + tanh(sqrt(2 / pi) * (x + 0.044715 * x**3)))``."""
    if approximate == "tanh":
        cube = _step(b, Op.MUL, [_step(b, Op.MUL, [x, x], name, "square"), x], name, "cube")
        scaled = _step(b, Op.MUL, [cube, _const(b, name, "coefficient", 0.044715)], name, "c3")
        inner = _step(b, Op.ADD, [x, scaled], name, "inner")
        factor = _const(b, name, "sqrt_2_over_pi", math.sqrt(2 / math.pi))
        core = _step(b, Op.TANH, [_step(b, Op.MUL, [inner, factor], name, "arg")], name, "tanh")
    else:
        factor = _const(b, name, "rsqrt2", 1 / math.sqrt(2))
        core = _step(b, Op.ERF, [_step(b, Op.MUL, [x, factor], name, "arg")], name, "erf")
    plus_one = _step(b, Op.ADD, [core, _const(b, name, "one", 1.0)], name, "plus_one")
    half = _step(b, Op.MUL, [x, _const(b, name, "half", 0.5)], name, "half")
    return _last(b, Op.MUL, [half, plus_one], name, out)


def hard_sigmoid(
    b: GraphBuilder, x: str, *, name: str, out: str | None, alpha: float, beta: float
) -> str:
    """``max(0, min(1, alpha * x + beta))``."""
    scaled = _step(b, Op.MUL, [x, _const(b, name, "alpha", alpha)], name, "scaled")
    shifted = _step(b, Op.ADD, [scaled, _const(b, name, "beta", beta)], name, "shifted")
    return _last(b, Op.CLIP, [shifted], name, out, ClipAttrs(0.0, 1.0))


def hard_swish(b: GraphBuilder, x: str, *, name: str, out: str | None) -> str:
    """``x * hard_sigmoid(x)`` with ``alpha = 1/6``, ``beta = 1/2``."""
    gate = hard_sigmoid(b, x, name=b.fresh(f"{name}.gate"), out=None, alpha=1 / 6, beta=0.5)
    return _last(b, Op.MUL, [x, gate], name, out)


def silu(b: GraphBuilder, x: str, *, name: str, out: str | None) -> str:
    """``x * sigmoid(x)``."""
    gate = _step(b, Op.SIGMOID, [x], name, "sigmoid")
    return _last(b, Op.MUL, [x, gate], name, out)
