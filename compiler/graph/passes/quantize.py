"""Quantization: a float graph to int8 operators with power-of-two scales, as VTA quantizes.

Every value ``v`` gets a scale ``2**-e_v``: ``e_v`` is the largest exponent with
``T_v * 2**e_v <= 127``, where the threshold ``T_v`` is what the calibration method chose from
the calibration samples (:mod:`compiler.graph.passes.calibrate`: by default ``"mse"``; weights:
their largest magnitude). Because scales are powers of two, each requantisation is a shift and
a clip, which the accelerator's ALU runs:

- ``Conv [-> Relu | Clip(0, hi)]`` becomes one ``QConv``: int8 data and weights, products
  accumulated in int32 at scale ``2**-(e_x + e_w)``, ``+ bias`` (the float bias at that scale,
  plus ``2**(shift-1)`` so that the shift rounds to nearest), ``>> shift`` with
  ``shift = e_x + e_w - e_y``, and a clip to ``[0 or -128, 127 or hi]``: conv + bias + relu +
  requantisation fused into one node;
- ``Gemm`` with constant weights (``Linear``) likewise becomes a ``QDense``, and so does a
  ``MatMul`` by constant 2-D weights of an input of any rank (a Linear layer of token
  sequences, with the Add of its bias folded in), over the input's rows flattened to 2-D;
- a ``MatMul`` of two activations with the same batch axes (attention's ``Q @ K^T`` and
  ``P @ V``, batched over heads) becomes a ``QBatchMatMul``: the left operand's rows stacked
  to 2-D, the right one's matrices ``[G, K, N]``, requantised as a dense layer's;
- ``Add [-> Relu]`` of two activations of one shape becomes a ``QAdd``: both operands shifted
  left to the finer of their scales, added, shifted right (rounding) to the output's scale,
  clipped;
- ``MaxPool`` (``QMaxPool``), ``GlobalAveragePool`` (``QGlobalAvgPool``: ``(sum * m) >> s``
  with ``m / 2**s`` the nearest to ``1 / (H*W)`` with an ``mul_bits``-bit multiplier) keep
  their input's scale; ``Flatten``, ``Reshape`` (squeezes included), ``Identity`` and
  ``Transpose`` pass int8 values through (they only move elements).

The scheme (:data:`SCHEMES`) says how weights are scaled: ``"pow2"`` (VTA's, the default) as
above; ``"per-channel"`` gives each output channel of a convolution's or a dense layer's
weights its own scale, any real number, and requantises each channel with a fixed-point
multiply and shift (:mod:`compiler.graph.passes.fixed_point`: ``QConv`` and ``QDense`` then
take an int8 multiplier and an int8 shift per channel; the accelerator runs them as ALU MUL and
SHR of accumulator rows). Activations keep power-of-two scales in both, so adds, pools and
concatenations stay shifts.

Each float operator's rule is registered with :func:`_rule` (:data:`QUANTIZE_RULES`, which the
support matrix reads). Anything else, and any node named in ``keep_float``, stays in float:
``DequantizeLinear`` and ``QuantizeLinear`` nodes (scale ``2**-e``, zero point 0) are inserted
where values cross between the two worlds, and graph outputs are float again. Accumulation,
shifts and clips are exactly the accelerator's, so :func:`compiler.reference` of the result is
the bit-exact oracle of an accelerator run.
"""

from __future__ import annotations

import math
import warnings
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass

import numpy as np

from compiler.accel.templates.pool import average_divisor
from compiler.errors import GraphError, QuantizationWarning
from compiler.graph.ir import (
    ClipAttrs,
    Graph,
    GraphBuilder,
    Node,
    Op,
    QAddAttrs,
    QAvgPoolAttrs,
    QConvAttrs,
    QDenseAttrs,
    QuantAttrs,
    ReshapeAttrs,
    node_names,
)
from compiler.graph.passes.calibrate import (
    Calibration,
    CalibrationMethod,
    QuantRecord,
    calibration_method,
    clipped_fraction,
    exponent,
    to_int8,
)
from compiler.graph.passes.fixed_point import fixed_point
from compiler.graph.patterns import const, find, pat
from isa.errors import did_you_mean

__all__ = [
    "ACTIVATION",
    "BIAS",
    "COLLAPSE",
    "PASS_THROUGH",
    "QUANTIZE_RULES",
    "SCHEMES",
    "QuantizeRule",
    "quantize",
    "quantize_with_records",
]

#: The quantization schemes by name, each with what it does (module docstring).
SCHEMES = {
    "pow2": "power-of-two scales per tensor, requantised by a shift (VTA's scheme)",
    "per-channel": "a real scale per output channel of the weights, requantised by a "
    "fixed-point multiply and shift per channel (needs the ALU's MUL)",
}

#: Operators that pass int8 values through unchanged (same scale).
PASS_THROUGH = (Op.FLATTEN, Op.RESHAPE, Op.IDENTITY, Op.TRANSPOSE)


@dataclass(frozen=True)
class QuantizeRule:
    """How a float operator ``op`` becomes one of the integer operators ``produces``:
    ``apply(quantizer, node)`` emits the integer form and returns True, or returns False where
    this node cannot be quantized (it then stays in float)."""

    op: Op
    produces: tuple[Op, ...]
    apply: Callable[[_Quantizer, Node], bool]


#: Each quantizable float operator's rule, by operator (registered with :func:`_rule`).
QUANTIZE_RULES: dict[Op, QuantizeRule] = {}


def _rule(op: Op, *produces: Op) -> Callable[[Callable], Callable]:
    """Register the decorated quantizer method as ``op``'s rule, producing ``produces``."""

    def register(apply: Callable[[_Quantizer, Node], bool]) -> Callable:
        QUANTIZE_RULES[op] = QuantizeRule(op, produces, apply)
        return apply

    return register


def _high(hi_float: float, e: int) -> int:
    """A fused clip's high end ``hi_float`` (inf: none) in int8 at exponent ``e``."""
    return 127 if math.isinf(hi_float) else int(min(127, math.floor(hi_float * 2.0**e)))


def _clips_at_zero(graph: Graph, node: Node) -> bool:
    return node.op is Op.RELU or (isinstance(node.attrs, ClipAttrs) and node.attrs.lo == 0)


def _adds_a_bias(graph: Graph, add: Node) -> bool:
    """Whether ``add`` adds a parameter of one value per channel of the last axis to a value
    of its own type (as frontends write a Linear layer's bias)."""
    values = [v for v in add.inputs if v not in graph.params]
    biases = [graph.params[v] for v in add.inputs if v in graph.params]
    out = graph.types[add.outputs[0]]
    if len(values) != 1 or len(biases) != 1 or graph.types[values[0]] != out or not out.shape:
        return False
    return biases[0].size == out.shape[-1] and biases[0].shape[-1:] == out.shape[-1:]


#: The activation a requantising node absorbs: a ReLU, or a clip whose low end is zero, that
#: alone reads the node's output (its clip becomes the requantisation's).
ACTIVATION = pat(Op.RELU, Op.CLIP, inputs=[pat(name="producer")], where=_clips_at_zero)

#: The bias a dense layer of constant weights absorbs: an Add of one value per output channel
#: that alone reads the product.
BIAS = pat(
    Op.ADD,
    inputs=[pat(Op.MATMUL, name="product"), const(name="bias")],
    commutative=True,
    where=_adds_a_bias,
)


#: A requantised value whose largest magnitude is below this fraction of its int8 operands'
#: (over the calibration samples) has collapsed: a warning names it
#: (:class:`QuantizationWarning`).
COLLAPSE = 5e-9


def quantize(
    graph: Graph,
    calibration: Calibration,
    *,
    keep_float: Iterable[str] = (),
    mul_bits: int = 8,
    method: str | CalibrationMethod = "mse",
    scheme: str = "pow2",
) -> Graph:
    """The int8 graph of the float ``graph`` (see the module docstring). ``keep_float`` names
    nodes that stay in float; ``mul_bits`` bounds the average pooling's multiplier;
    ``method`` chooses activation scales (a spec of
    :data:`~compiler.graph.passes.calibrate.CALIBRATION_METHODS`: ``"mse"``, ``"max"``,
    ``"percentile:99.9"``, ``"entropy"``); ``scheme`` how weights are scaled (:data:`SCHEMES`).
    Warns as :func:`quantize_with_records` does."""
    quantizer = _quantizer(graph, calibration, keep_float, mul_bits, method, scheme)
    qgraph = quantizer.run()
    quantizer.records()  # (for its warnings, which name the caller's line)
    return qgraph


def quantize_with_records(
    graph: Graph,
    calibration: Calibration,
    *,
    keep_float: Iterable[str] = (),
    mul_bits: int = 8,
    method: str | CalibrationMethod = "mse",
    scheme: str = "pow2",
) -> tuple[Graph, tuple[QuantRecord, ...]]:
    """:func:`quantize`'s graph and a :class:`QuantRecord` per int8 value (in the order the
    values were quantized). Warns (:class:`QuantizationWarning`, naming the value and its
    node) for each value whose scale calibration chose and whose int8 form is zero on every
    calibration element, or, computed by int8 arithmetic (a convolution, a dense or batched
    product, an add), whose largest magnitude is below :data:`COLLAPSE` times that of its
    int8 operands."""
    quantizer = _quantizer(graph, calibration, keep_float, mul_bits, method, scheme)
    qgraph = quantizer.run()
    return qgraph, quantizer.records()


def _quantizer(
    graph: Graph,
    calibration: Calibration,
    keep_float: Iterable[str],
    mul_bits: int,
    method: str | CalibrationMethod,
    scheme: str,
) -> _Quantizer:
    keep = frozenset(node_names(keep_float, "keep_float"))
    if scheme not in SCHEMES:
        known = ", ".join(repr(n) for n in SCHEMES)
        raise GraphError(
            f"unknown quantization scheme {scheme!r}{did_you_mean(scheme, SCHEMES)}: the "
            f"schemes are {known}"
        )
    method_ = calibration_method(method)
    return _Quantizer(graph, calibration, keep, mul_bits, method_, scheme == "per-channel")


class _Quantizer:
    def __init__(
        self,
        graph: Graph,
        cal: Calibration,
        keep: frozenset[str],
        mul_bits: int,
        method: CalibrationMethod,
        per_channel: bool,
    ):
        known = {n.name for n in graph.nodes}
        unknown = sorted(keep - known)
        if unknown:
            raise GraphError(
                f"keep_float names no node {unknown[0]!r}{did_you_mean(unknown[0], known)}"
            )
        self.graph = graph
        self.cal = cal
        self.keep = keep
        self.mul_bits = mul_bits
        self.method = method
        self.per_channel = per_channel
        self.b = GraphBuilder(graph.name)
        self.floats: dict[str, str] = {}  # original value -> its float value in the new graph
        self.ints: dict[str, tuple[str, int]] = {}  # original value -> (int8 value, exponent)
        self.chosen: set[str] = set()  # int8 values whose scale calibration chose
        #: requantised value -> the int8 operands of the node computing it
        self.operands: dict[str, tuple[str, ...]] = {}
        self.choices: dict[str, tuple[float, int]] = {}  # value -> (threshold, exponent)
        self.fused: set[str] = set()  # activation nodes absorbed by their producer
        self.flat: dict[str, str] = {}  # original value -> its int8 rows, flattened to 2-D
        #: producer's output -> the activation node that may be fused into the producer
        self.activations = {
            m.nodes["producer"].outputs[0]: m.root for m in find(ACTIVATION, graph, exclude=keep)
        }
        #: MatMul node -> the match of the bias Add that may be folded into it
        self.biases = {m.nodes["product"].name: m for m in find(BIAS, graph, exclude=keep)}

    def run(self) -> Graph:
        g = self.graph
        for name in g.inputs:
            self.floats[name] = self.b.input(name, g.types[name].shape, g.types[name].dtype)
        for name, array in g.params.items():
            if array.dtype != np.float32:
                self.floats[name] = self.b.param(name, array)
        for node in g.nodes:
            if node.name in self.fused:
                continue
            if node.name in self.keep or not self._quantized(node):
                self._float(node)
        return self.b.build(self._float_value(v, final=True) for v in g.outputs)

    # ------------------------------------------------------------------ values between worlds
    def _choice(self, value: str) -> tuple[float, int]:
        """``value``'s (threshold, exponent) by the method (computed once per value)."""
        if value not in self.choices:
            self.choices[value] = self.cal.choose(value, self.method)
        return self.choices[value]

    def _e(self, value: str) -> int:
        return self._choice(value)[1]

    def records(self) -> tuple[QuantRecord, ...]:
        """A record per int8 value (after :meth:`run`), warning where one collapsed."""
        out = []
        for value, (int8_value, e) in self.ints.items():
            threshold = self._choice(value)[0]
            producer = self.graph.producer(value)
            record = QuantRecord(
                value,
                producer.name if producer is not None else "",
                self.method.spec,
                self.cal.minimum.get(value, -self.cal.max_abs[value]),
                self.cal.maximum.get(value, self.cal.max_abs[value]),
                self.cal.max_abs[value],
                threshold,
                e,
                clipped_fraction(self.cal.elements[value], e),
                int8_value,
            )
            if value in self.chosen:
                self._check(record)
            out.append(record)
        return tuple(out)

    def _check(self, record: QuantRecord) -> None:
        """Warn where ``record``'s value collapsed (see :func:`quantize_with_records`)."""
        where = f"value {record.value!r}" + (f" (node {record.node!r})" if record.node else "")
        if np.round(record.abs_max * 2.0**record.exponent) == 0:
            message = (
                f"{where} is 0 in int8 on every calibration element: its largest magnitude "
                f"{record.abs_max:.3g} is below half of its scale 2^{-record.exponent}"
            )
        else:
            # only where int8 arithmetic computes the value from operands whose scales it
            # scales: a float node's output (a softmax after a -3.4e38 mask) is bounded anyway
            operands = self.operands.get(record.value, ())
            reach = max((self.cal.max_abs[v] for v in operands), default=0.0)
            if not record.abs_max < COLLAPSE * reach:
                return
            message = (
                f"{where} collapsed: its largest magnitude {record.abs_max:.3g} is below "
                f"{COLLAPSE:g} times its operands' ({reach:.3g})"
            )
        warnings.warn(message, QuantizationWarning, stacklevel=4)

    def _int_value(self, value: str) -> tuple[str, int]:
        """``value`` as int8 (quantized here if it is float so far) and its exponent."""
        if value not in self.ints:
            e = self._e(value)
            source = self._float_value(value)
            name = self.b.fresh(f"{value}_int8")
            self.b.add(Op.QUANTIZE, [source], QuantAttrs(2.0**-e), name=name, outputs=[name])
            self.ints[value] = (name, e)
            self.chosen.add(value)
        return self.ints[value]

    def _float_value(self, value: str, final: bool = False) -> str:
        """``value`` as float (dequantized here if it exists as int8 only)."""
        if value in self.floats:
            return self.floats[value]
        if value in self.g_params:
            self.floats[value] = self.b.param(value, self.g_params[value])
            return self.floats[value]
        qname, e = self.ints[value]
        name = value if final or value not in self._taken() else self.b.fresh(f"{value}_float")
        self.b.add(Op.DEQUANTIZE, [qname], QuantAttrs(2.0**-e), name=name, outputs=[name])
        self.floats[value] = name
        return name

    @property
    def g_params(self) -> Mapping[str, np.ndarray]:
        return self.graph.params

    def _taken(self) -> set[str]:
        return set(self.floats.values()) | {q for q, _ in self.ints.values()}

    def _int_name(self, value: str) -> str:
        """The name for the int8 version of ``value`` (graph outputs stay free for floats)."""
        return self.b.fresh(f"{value}_int8" if value in self.graph.outputs else value)

    # ------------------------------------------------------------------------ node rewriting
    def _float(self, node: Node) -> None:
        inputs = [self._float_value(v) for v in node.inputs]
        outputs = [v if v not in self._taken() else self.b.fresh(v) for v in node.outputs]
        self.b.add(node.op, inputs, node.attrs, name=node.name, outputs=outputs)
        self.floats.update(zip(node.outputs, outputs, strict=True))

    def _activation(self, node: Node) -> tuple[Node | None, int, float]:
        """The activation fused into ``node`` (:data:`ACTIVATION` matched at the node reading
        its output): (that node, the clip's low end in int8, its float high end or inf)."""
        found = self.activations.get(node.outputs[0])
        if found is None:
            return None, -128, math.inf
        if found.op is Op.RELU:
            return found, 0, math.inf
        return found, 0, found.attrs.hi

    def _finish(self, node: Node, act: Node | None) -> tuple[str, int]:
        """Mark the fused activation, and name the requantised output and its exponent."""
        value = node.outputs[0]
        if act is not None:
            self.fused.add(act.name)
            value = act.outputs[0]
        return value, self._output_exponent(value)

    def _output_exponent(self, value: str) -> int:
        """The exponent a requantising node gives ``value``: its own, or, where a Concat alone
        reads it, the Concat's (so that the inputs arrive at one scale and the Concat stays in
        int8, a layout decision on the accelerator)."""
        users = self.graph.consumers(value)
        if (
            len(users) == 1
            and users[0].op is Op.CONCAT
            and users[0].name not in self.keep
            and value not in self.graph.outputs
        ):
            return self._e(users[0].outputs[0])
        return self._e(value)

    def _quantized(self, node: Node) -> bool:
        """Emit the int8 form of ``node`` if it has one; say whether it did."""
        rule = QUANTIZE_RULES.get(node.op)
        if rule is not None:
            return rule.apply(self, node)
        if node.op is Op.CONCAT:
            return self._int_concat(node)
        if node.op in PASS_THROUGH and node.inputs[0] in self.ints:
            qname, e = self.ints[node.inputs[0]]
            out = self._int_name(node.outputs[0])
            self.b.add(node.op, [qname], node.attrs, name=node.name, outputs=[out])
            self.ints[node.outputs[0]] = (out, e)
            return True
        return False

    def _int_concat(self, node: Node) -> bool:
        """A Concat whose inputs all exist in int8 at one exponent stays in int8."""
        found = [self.ints.get(v) for v in node.inputs]
        if any(f is None for f in found) or len({e for _, e in found}) != 1:  # type: ignore[misc]
            return False
        out = self._int_name(node.outputs[0])
        inputs = [q for q, _ in found]  # type: ignore[misc]
        self.b.add(Op.CONCAT, inputs, node.attrs, name=node.name, outputs=[out])
        self.ints[node.outputs[0]] = (out, found[0][1])  # type: ignore[index]
        return True

    def _weights(self, node: Node, index: int) -> np.ndarray | None:
        """The constant float weights ``node`` reads at input ``index`` (None if none)."""
        if index >= len(node.inputs) or node.inputs[index] not in self.g_params:
            return None
        return self.g_params[node.inputs[index]]

    def _requantised(
        self,
        node: Node,
        op: Op,
        inputs: list[str],
        e_acc: int,
        bias: np.ndarray | None,
        make_attrs: Callable[[int, int, int], object],
        *,
        channels: int | None = None,
        shape: tuple[int, ...] | None = None,
    ) -> None:
        """Add ``op`` over ``inputs`` (int8 data, int8 weights) with the bias at the
        accumulator's scale (exponent ``e_acc``) carrying the shift's rounding constant, the
        shift to the output's exponent, and the fused activation's clip
        (``make_attrs(shift, lo, hi)``). ``channels`` counts the bias (default: the output's
        axis 1); with ``shape``, the result is reshaped to it (int8) and that is the value."""
        act, lo, hi_float = self._activation(node)
        value, e_y = self._finish(node, act)
        e_y = min(e_y, e_acc)  # the shift right cannot be negative
        shift = e_acc - e_y
        half = 1 << (shift - 1) if shift else 0
        if bias is not None or half:
            channels = channels or self.graph.types[node.outputs[0]].shape[1]
            exact = np.zeros(channels) if bias is None else bias.astype(np.float64) * 2.0**e_acc
            q_bias = np.clip(np.round(exact) + half, -(2**31), 2**31 - 1).astype(np.int32)
            inputs = [*inputs, self._int_param(f"{node.name}_bias_int32", q_bias)]
        attrs = make_attrs(shift, lo, _high(hi_float, e_y))
        self._emit(node, op, inputs, attrs, value, e_y, shape)

    def _weighted(
        self,
        node: Node,
        op: Op,
        q_x: str,
        e_x: int,
        weights: tuple[str, np.ndarray],
        bias: np.ndarray | None,
        make_attrs: Callable[[int, int, int], object],
        *,
        channels: int | None = None,
        shape: tuple[int, ...] | None = None,
    ) -> None:
        """``op`` of the int8 data ``q_x`` (exponent ``e_x``) by constant float weights
        (``(graph value, array)``, output channels first, as ``op`` reads them) and ``bias``:
        requantised by a shift (:meth:`_requantised`) in the ``pow2`` scheme, per channel by a
        fixed-point multiply and shift (:func:`~compiler.graph.passes.fixed_point.fixed_point`)
        in the ``per-channel`` one."""
        name, w = weights
        if not self.per_channel:
            e_w = exponent(float(np.max(np.abs(w))) if w.size else 0.0)
            q_w = self._int_weights(name, w, e_w)
            self._requantised(
                node, op, [q_x, q_w], e_x + e_w, bias, make_attrs, channels=channels, shape=shape
            )
            return
        act, lo, hi_float = self._activation(node)
        value, e_y = self._finish(node, act)
        fp = fixed_point(w, bias, e_x, e_y)
        inputs = [
            q_x,
            self._int_param(f"{name}_int8", fp.weights),
            self._int_param(f"{node.name}_bias_int32", fp.bias),
            self._int_param(f"{node.name}_multiplier", fp.multiplier),
            self._int_param(f"{node.name}_shifts", fp.shifts),
        ]
        attrs = make_attrs(fp.shift, lo, _high(hi_float, fp.e_y))
        self._emit(node, op, inputs, attrs, value, fp.e_y, shape)

    def _emit(
        self,
        node: Node,
        op: Op,
        inputs: list[str],
        attrs: object,
        value: str,
        e_y: int,
        shape: tuple[int, ...] | None,
    ) -> None:
        """Add the requantising ``op`` computing ``value`` at exponent ``e_y`` (reshaped to
        ``shape`` where given: the node computes its rows) and record it."""
        out = self._int_name(value)
        if shape is None:
            self.b.add(op, inputs, attrs, name=node.name, outputs=[out])
        else:
            rows = self.b.fresh(f"{out}_rows")  # (not the node's name: an output may take it)
            flat = self.b.add(op, inputs, attrs, name=node.name, outputs=[rows])[0]
            reshape = self.b.fresh(f"{node.name}_unflatten")
            self.b.add(Op.RESHAPE, [flat], ReshapeAttrs(shape), name=reshape, outputs=[out])
            self.flat[value] = flat
        self.ints[value] = (out, e_y)
        self.chosen.add(value)
        self.operands[value] = tuple(v for v in node.inputs if v in self.ints)

    def _int_param(self, name: str, array: np.ndarray) -> str:
        return self.b.param(self.b.fresh(name), array)

    def _int_weights(self, value: str, w: np.ndarray, e_w: int) -> str:
        return self._int_param(f"{value}_int8", to_int8(w, e_w))

    @_rule(Op.CONV, Op.QCONV)
    def _conv(self, node: Node) -> bool:
        weights = self._weights(node, 1)
        if weights is None or (len(node.inputs) == 3 and node.inputs[2] not in self.g_params):
            return False
        q_x, e_x = self._int_value(node.inputs[0])
        bias = self.g_params[node.inputs[2]] if len(node.inputs) == 3 else None
        c = node.attrs
        self._weighted(
            node,
            Op.QCONV,
            q_x,
            e_x,
            (node.inputs[1], weights),
            bias,
            lambda shift, lo, hi: QConvAttrs(
                c.strides, c.pads, c.dilations, c.groups, shift, lo, hi
            ),
        )
        return True

    @_rule(Op.GEMM, Op.QDENSE)
    def _gemm(self, node: Node) -> bool:
        a = node.attrs
        weights = self._weights(node, 1)
        bias_is_param = len(node.inputs) < 3 or node.inputs[2] in self.g_params
        if weights is None or a.trans_a or not bias_is_param:
            return False
        w = weights * np.float32(a.alpha)
        w = w if a.trans_b else w.T
        bias = None
        if len(node.inputs) == 3:
            c = self.g_params[node.inputs[2]] * np.float32(a.beta)
            if c.size != w.shape[0] and c.size != 1:
                return False
            bias = np.broadcast_to(c.reshape(-1), (w.shape[0],))
        q_x, e_x = self._int_value(node.inputs[0])
        self._weighted(
            node,
            Op.QDENSE,
            q_x,
            e_x,
            (node.inputs[1], w),
            bias,
            lambda shift, lo, hi: QDenseAttrs(shift, lo, hi),
        )
        return True

    @_rule(Op.MATMUL, Op.QDENSE, Op.QBATCH_MATMUL)
    def _matmul(self, node: Node) -> bool:
        """A product by constant weights as a dense layer (:meth:`_linear`), one of two
        activations as a batched product (:meth:`_batch_matmul`)."""
        if node.inputs[1] in self.g_params:
            return self._linear(node)
        return self._batch_matmul(node)

    def _linear(self, node: Node) -> bool:
        """``x @ W`` with constant 2-D weights (a Linear layer of any rank, as frontends write
        one without a fused bias) as a dense layer over the rows of ``x`` flattened to 2-D; an
        Add of a constant ``[M]`` bias that alone reads the product is folded into it."""
        weights = self._weights(node, 1)
        x_type = self.graph.types[node.inputs[0]]
        if weights is None or weights.ndim != 2 or len(x_type.shape) < 2:
            return False
        w = np.ascontiguousarray(weights.T)  # [M, K]
        out_shape = self.graph.types[node.outputs[0]].shape
        fused, bias = node, None
        added = self.biases.get(node.name)
        if added is not None:
            add = added.root
            bias = self.g_params[added.values["bias"]].reshape(w.shape[0])
            fused = Node(node.name, node.op, node.inputs, add.outputs, node.attrs)
            self.fused.add(add.name)
        q_x, e_x = self._int_value(node.inputs[0])
        rows = int(np.prod(x_type.shape[:-1], dtype=np.int64))
        if node.inputs[0] in self.flat:  # a dense layer's rows, before their unflatten
            q_x = self.flat[node.inputs[0]]
        else:
            q_x = self._reshaped(q_x, (rows, x_type.shape[-1]), f"{node.name}_flatten")
        self._weighted(
            fused,
            Op.QDENSE,
            q_x,
            e_x,
            (node.inputs[1], w),
            bias,
            lambda shift, lo, hi: QDenseAttrs(shift, lo, hi),
            channels=w.shape[0],
            shape=out_shape if len(out_shape) != 2 else None,
        )
        return True

    def _batch_matmul(self, node: Node) -> bool:
        """``a @ b`` of two float activations ``[..., M, K]`` and ``[..., K, N]`` with the same
        batch axes (or a 2-D ``b``: one group) as a :class:`QBatchMatMul` of ``a``'s rows
        ``[G*M, K]`` by ``b``'s matrices ``[G, K, N]``, reshaped back to ``[..., M, N]``."""
        a_type, b_type = (self.graph.types[v] for v in node.inputs)
        if a_type.dtype != "float32" or b_type.dtype != "float32":
            return False
        if len(a_type.shape) < 2 or len(b_type.shape) < 2 or node.inputs[0] in self.g_params:
            return False
        batch = a_type.shape[:-2]
        if b_type.shape[:-2] not in (batch, ()):
            return False
        groups = math.prod(batch) if len(b_type.shape) > 2 else 1
        depth, columns = b_type.shape[-2:]
        rows = math.prod(a_type.shape[:-1])
        q_a, e_a = self._int_value(node.inputs[0])
        q_b, e_b = self._int_value(node.inputs[1])
        q_a = self._reshaped(q_a, (rows, depth), f"{node.name}_rows")
        q_b = self._reshaped(q_b, (groups, depth, columns), f"{node.name}_matrices")
        out_shape = self.graph.types[node.outputs[0]].shape
        self._requantised(
            node,
            Op.QBATCH_MATMUL,
            [q_a, q_b],
            e_a + e_b,
            None,
            lambda shift, lo, hi: QDenseAttrs(shift, lo, hi),
            channels=columns,
            shape=out_shape if len(out_shape) != 2 else None,
        )
        return True

    def _reshaped(self, value: str, shape: tuple[int, ...], name: str) -> str:
        """The int8 ``value`` with ``shape`` (itself where it has it already)."""
        if self.b.type_of(value).shape == shape:
            return value
        return self.b.add1(Op.RESHAPE, [value], ReshapeAttrs(shape), name=self.b.fresh(name))

    @_rule(Op.ADD, Op.QADD)
    def _add(self, node: Node) -> bool:
        a, b = node.inputs
        types = self.graph.types
        if a in self.g_params or b in self.g_params or types[a].shape != types[b].shape:
            return False
        qa, e_a = self._int_value(a)
        qb, e_b = self._int_value(b)
        act, lo, hi_float = self._activation(node)
        value, e_y = self._finish(node, act)
        e = max(e_a, e_b)
        e_y = min(e_y, e)
        out = self._int_name(value)
        attrs = QAddAttrs(e - e_a, e - e_b, e - e_y, lo, _high(hi_float, e_y))
        self.b.add(Op.QADD, [qa, qb], attrs, name=node.name, outputs=[out])
        self.ints[value] = (out, e_y)
        self.chosen.add(value)
        self.operands[value] = (a, b)
        return True

    @_rule(Op.MAX_POOL, Op.QMAX_POOL)
    def _max_pool(self, node: Node) -> bool:
        """A 2-D, undilated max pooling keeps its input's scale (others stay in float)."""
        a = node.attrs
        if len(a.kernel) != 2 or any(d != 1 for d in a.dilations):
            return False
        q, e = self._int_value(node.inputs[0])
        out = self._int_name(node.outputs[0])
        self.b.add(Op.QMAX_POOL, [q], node.attrs, name=node.name, outputs=[out])
        self.ints[node.outputs[0]] = (out, e)
        return True

    @_rule(Op.GLOBAL_AVERAGE_POOL, Op.QGLOBAL_AVG_POOL)
    def _global_avg(self, node: Node) -> bool:
        q, e = self._int_value(node.inputs[0])
        h, w = self.graph.types[node.inputs[0]].shape[2:]
        multiplier, shift = average_divisor(h * w, self.mul_bits)
        out = self._int_name(node.outputs[0])
        attrs = QAvgPoolAttrs(multiplier, shift)
        self.b.add(Op.QGLOBAL_AVG_POOL, [q], attrs, name=node.name, outputs=[out])
        self.ints[node.outputs[0]] = (out, e)
        return True
